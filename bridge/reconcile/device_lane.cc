// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/device_lane.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>

#include "bridge/logging.h"
#include "k8s/api_error.h"
#include "k8s/field_reader.h"
#include "k8s/resource.h"
#include "k8s/time_format.h"
#include "src/base/overloaded.h"
#include "src/base/retry.h"
#include "src/base/strings.h"
#include "src/devices/give_backoff.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/mode_switch.h"
#include "src/devices/placeholder_record.h"

namespace skb::bridge {
namespace {

using devices::DeviceAction;

using devices::kHoldSettle;

const devices::Device* FindDevice(const devices::NodeDevices& node, const std::string& name) {
  for (const devices::Device& d : node.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// "ns/name" -> {ns, name}.
std::pair<std::string, std::string> SplitPod(const std::string& pod) {
  const size_t slash = pod.find('/');
  if (slash == std::string::npos) return {"", pod};
  return {pod.substr(0, slash), pod.substr(slash + 1)};
}

// Deletes the bridge's hold rules on `devices` of `k8s_node`; those already gone are fine.
StatusOr<Effect> DeleteHoldRules(k8s::KubeClient* kube, const std::vector<std::string>& devices,
                                 const std::string& k8s_node) {
  Effect effect = Effect::kUnchanged;
  for (const std::string& d : devices) {
    k8s::DeleteOptions opts;
    auto deleted = kube->Delete(k8s::Resource::DeviceTaintRules(), "",
                                devices::HoldRuleName(k8s_node, d), opts);
    if (deleted.ok()) {
      effect = Effect::kChanged;
    } else if (deleted.status().code() != StatusCode::kNotFound) {
      return deleted.status();
    }
  }
  return effect;
}

}  // namespace

DeviceExecutorImpl::DeviceExecutorImpl(slurm::SlurmClient* slurm, k8s::KubeClient* kube,
                                       k8s::EventRecorder* events, ActionExecutor* node_actions,
                                       const config::Config& cfg, const Clock* clock)
    : slurm_(slurm),
      kube_(kube),
      events_(events),
      node_actions_(node_actions),
      cfg_(cfg),
      clock_(clock) {}

StatusOr<Effect> DeviceExecutorImpl::Execute(const DeviceAction& a,
                                             const devices::NodeDevices& node,
                                             const std::string& k8s_node) {
  const Target t{node, k8s_node};
  return std::visit([&](const auto& o) { return Run(a, o, t); }, a.op);
}

// The Event says what changed: a repeat that found its work done records none.
Effect DeviceExecutorImpl::Recorded(const DeviceAction& a, Effect effect, const Target& t,
                                    const std::string& pod) {
  if (effect != Effect::kChanged || a.quiet || a.event_reason.empty()) return effect;
  const k8s::EventType type = ToK8sEventType(a.event_type);
  events_->Record(k8s::NodeRef(t.k8s_node), type, a.event_reason, a.event_message);
  if (!pod.empty()) {
    auto [ns, name] = SplitPod(pod);
    events_->Record(k8s::PodRef(ns, name, uid_of_ ? uid_of_(pod) : ""), type, a.event_reason,
                    StrCat(a.event_message, " (node ", t.k8s_node, ")"));
  }
  return effect;
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::AddDeviceHold& o,
                                         const Target& t) {
  Effect effect = Effect::kUnchanged;
  for (const std::string& d : o.devices) {
    const nlohmann::json rule = devices::HoldRule(t.k8s_node, d, cfg_.gpu_sharing.driver);
    const std::string name = rule["metadata"]["name"].get<std::string>();
    auto created = kube_->Create(k8s::Resource::DeviceTaintRules(), "", rule);
    if (created.ok()) {
      holds_made_[name] = {k8s::MetadataString(*created, "uid"), clock_->Now()};
      effect = Effect::kChanged;
      continue;
    }
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
    // A rule of that name exists: read what it says. Edited by someone else (another
    // effect or key, a selector naming another device), it is made the hold again.
    auto existing = kube_->Get(k8s::Resource::DeviceTaintRules(), "", name);
    if (!existing.ok()) return existing.status();
    // The selector, compared whole, also says the rule is this device's (driver, pool, name).
    std::string pool, device;
    if (devices::IsHoldRule(*existing, &pool, &device) &&
        (*existing)["spec"]["deviceSelector"] == rule["spec"]["deviceSelector"]) {
      continue;
    }
    nlohmann::json restored = *existing;
    restored["spec"] = rule["spec"];
    restored["metadata"]["labels"] = rule["metadata"]["labels"];
    auto updated = kube_->Update(k8s::Resource::DeviceTaintRules(), "", restored);
    if (!updated.ok()) return updated.status();
    // The hold as it is now dates from this write, not from the rule's creation.
    holds_made_[name] = {k8s::MetadataString(*updated, "uid"), clock_->Now()};
    Logger("devices")->warn("hold_restored node={} device={} was=\"{}\"", t.k8s_node, d,
                            existing->value("spec", nlohmann::json::object()).dump());
    effect = Effect::kChanged;
  }
  return Recorded(a, effect, t);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::RemoveDeviceHold& o,
                                         const Target& t) {
  // Only while the placeholder runs on exactly these devices: Slurm holds them now.
  auto job = slurm_->LoadJob(o.placeholder_job);
  if (!job.ok()) return job.status();
  if (job->state != skb::slurm::JobState::kRunning) {
    return AbortedError(StrCat("placeholder ", o.placeholder_job, " is ",
                               skb::slurm::JobStateName(job->state), ", not running"));
  }
  // A pass planned on a Slurm poll from before a return was recorded would lift the holds
  // that return has just put back: Slurm's own record says which move is under way.
  if (auto r = devices::ParsePlaceholderRecord(job->admin_comment); r && r->returning) {
    return AbortedError(StrCat("placeholder ", o.placeholder_job,
                               " is returning its GPUs to Slurm: its holds stay"));
  }
  const auto idx = job->gpu_indices.find(a.node);
  for (const std::string& d : o.devices) {
    const devices::Device* dev = FindDevice(t.node, d);
    if (dev == nullptr || idx == job->gpu_indices.end() ||
        std::find(idx->second.begin(), idx->second.end(), dev->index) == idx->second.end()) {
      return AbortedError(StrCat("placeholder ", o.placeholder_job, " does not hold ", d, " on ",
                                 a.node, " (Slurm's view moved: plan again)"));
    }
  }
  ASSIGN_OR_RETURN(const Effect effect, DeleteHoldRules(kube_, o.devices, t.k8s_node));
  return Recorded(a, effect, t, o.pod);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::SubmitPlaceholder& o,
                                         const Target& t) {
  const devices::PlaceholderRecord r{.node = a.node,
                                     .pod = o.pod,
                                     .gpus = o.gpus,
                                     .victims = o.victims,
                                     .profile = o.profile,
                                     .health = o.health,
                                     .slot = o.slot,
                                     .under_job = o.under_job};
  const slurm::PlaceholderSpec spec{.node = a.node,
                                    .gpus = o.gpus,
                                    .gres_type = o.gres_type,
                                    .partition = cfg_.gpu_sharing.placeholder.partition,
                                    .qos = cfg_.gpu_sharing.placeholder.qos,
                                    .account = cfg_.gpu_sharing.placeholder.account,
                                    .admin_comment = devices::FormatPlaceholderRecord(r)};
  if (o.taken_job != 0) {
    // The earlier placeholder serves the pod that took its GPUs from now on (first, so that
    // the submission below is not read as the pod's existing one).
    // (Gone meanwhile: nothing to hand over.)
    auto handed = UpdateRecord(o.taken_job, [&](devices::PlaceholderRecord* rec) {
      if (rec->pod == o.pod) rec->pod = o.taken_by;
    });
    if (!handed.ok() && handed.status().code() != StatusCode::kNotFound) return handed.status();
    if (handed.ok() && *handed == Effect::kChanged) {
      Logger("devices")->info("placeholder_taken job={} node={} from={} to={}", o.taken_job, a.node,
                              o.pod, o.taken_by);
    }
  }
  auto submitted = slurm_->SubmitPlaceholder(spec);
  if (!submitted.ok()) return submitted.status();
  if (submitted->outcome == slurm::WriteOutcome::kUnchanged) return Effect::kUnchanged;
  if (!o.health.empty()) {
    Logger("devices")->info(
        "health_hold_submitted job={} node={} device={} slot={} gpus={} gres_type={} under_job={} "
        "victims={}",
        submitted->job_id, a.node, o.health, o.slot, o.gpus, o.gres_type, o.under_job,
        o.victims.size());
    return Recorded(a, Effect::kChanged, t, "");
  }
  Logger("devices")->info(
      "placeholder_submitted job={} node={} gpus={} gres_type={} pod={} victims={}",
      submitted->job_id, a.node, o.gpus, o.gres_type, o.pod, o.victims.size());
  return Recorded(a, Effect::kChanged, t, o.pod);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::SignalJobs& o,
                                         const Target& t) {
  ASSIGN_OR_RETURN(const Effect signalled, RunOnNodeLane(a, o.jobs, t));
  ASSIGN_OR_RETURN(const Effect recorded,
                   UpdateRecord(o.placeholder_job, [&](devices::PlaceholderRecord* r) {
                     if (r->signalled_at == 0) {
                       r->signalled_at = o.at_ms / 1000;
                       r->signalled_at_ms = o.at_ms;
                     }
                   }));
  // The node lane's executor recorded the Event.
  return signalled == Effect::kChanged ? signalled : recorded;
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const plan::PreemptSlurmJobs& o,
                                         const Target& t) {
  return RunOnNodeLane(a, o, t);
}

// Through the node lane's executor (the Eviction API, PodDisruptionBudgets honoured), for
// the pod as the device lane's cache knows it (its uid: a pod of the same name made since is
// not the one).
StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const plan::EvictPod& o,
                                         const Target& t) {
  plan::EvictPod op = o;
  if (op.pod.uid.empty() && uid_of_) {
    op.pod.uid = uid_of_(StrCat(op.pod.namespace_name, "/", op.pod.name));
  }
  return RunOnNodeLane(a, op, t);
}

// The node's GPU health condition, through the node lane's executor (a strategic merge of
// the node's status: other controllers' conditions stay).
StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const plan::SetNodeCondition& o,
                                         const Target& t) {
  return RunOnNodeLane(a, o, t);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::RecordIdleSince& o,
                                         const Target& t) {
  ASSIGN_OR_RETURN(const Effect effect,
                   UpdateRecord(o.placeholder_job, [&](devices::PlaceholderRecord* r) {
                     r->idle_since = o.at_ms / 1000;
                     r->idle_since_ms = o.at_ms;
                   }));
  return Recorded(a, effect, t);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::MarkReturning& o,
                                         const Target& t) {
  ASSIGN_OR_RETURN(
      const Effect effect,
      UpdateRecord(o.placeholder_job, [&](devices::PlaceholderRecord* r) { r->returning = true; }));
  return Recorded(a, effect, t);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::EndPlaceholder& o,
                                         const Target& t) {
  auto job = slurm_->LoadJob(o.placeholder_job);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return job.status();
  }
  if (job->state == skb::slurm::JobState::kRunning) {
    // A return: every device held again for long enough that kube-scheduler has seen the
    // holds (an allocation it decided before a hold appeared may still be written after
    // it: wait out kHoldSettle from the hold's creation), and then no claim allocated on
    // any of them. The cache the pass used can lag: ask the apiserver.
    std::set<std::string> mine;
    size_t listed = 0;
    if (auto idx = job->gpu_indices.find(a.node); idx != job->gpu_indices.end()) {
      listed = idx->second.size();
      for (const devices::Device& d : t.node.devices) {
        if (std::find(idx->second.begin(), idx->second.end(), d.index) != idx->second.end()) {
          mine.insert(d.name);
        }
      }
    }
    // Indices that map to no device (a node leaving GPU sharing because its mapping went,
    // GRES Slurm did not list): which devices the pod may use is unknown, so every device of
    // the node counts, as the leave plans it; an empty set would check nothing.
    if (listed == 0 || mine.size() < listed) {
      for (const devices::Device& d : t.node.devices) mine.insert(d.name);
    }
    std::optional<Clock::TimePoint> settled;  // when the youngest hold has settled
    std::string youngest;
    for (const std::string& d : mine) {
      const std::string name = devices::HoldRuleName(t.k8s_node, d);
      auto rule = kube_->Get(k8s::Resource::DeviceTaintRules(), "", name);
      if (!rule.ok()) {
        return rule.status().code() == StatusCode::kNotFound
                   ? AbortedError(StrCat(d, " is not held again yet: placeholder ",
                                         o.placeholder_job, " stays"))
                   : rule.status();
      }
      // The rule this executor wrote: since its write returned. Any other (made before a
      // restart, or deleted and made again by someone else): creationTimestamp keeps whole
      // seconds, so the hold may be up to a second younger than it says.
      std::optional<Clock::TimePoint> since;
      if (auto made = holds_made_.find(name);
          made != holds_made_.end() && !made->second.uid.empty() &&
          made->second.uid == k8s::MetadataString(*rule, "uid")) {
        since = made->second.at;
      } else if (auto created = k8s::ParseTime((*rule)["metadata"].value("creationTimestamp", ""));
                 created.ok()) {
        since = *created + std::chrono::seconds(1);
      }
      if (!since) {
        return AbortedError(StrCat("the hold on ", d, " has no creation time: placeholder ",
                                   o.placeholder_job, " stays"));
      }
      if (!settled || *since + kHoldSettle > *settled) {
        settled = *since + kHoldSettle;
        youngest = d;
      }
    }
    if (settled && clock_->Now() < *settled) {
      KeepEarliest(&retry_at_, *settled);
      return AbortedError(
          StrCat("the hold on ", youngest, " is younger than ",
                 std::chrono::duration_cast<std::chrono::seconds>(kHoldSettle).count(),
                 " s: placeholder ", o.placeholder_job, " stays"));
    }
    // A pod kube-scheduler is binding to the node: it names the node in
    // status.nominatedNodeName before it writes the claim's allocation (PreBind; Kubernetes
    // 1.35+, NominatedNodeNameForExpectation), so an allocation decided before the hold may
    // still be on its way, however long its binding takes (an apiserver restart, say).
    // Pods first, then claims: a nomination gone by then has its claim written.
    k8s::ListOptions unbound;
    unbound.field_selector = "spec.nodeName=";
    auto pods = kube_->List(k8s::Resource::Pods(), "", unbound);
    if (!pods.ok()) return pods.status();
    for (const nlohmann::json& p : pods->items) {
      // Read with value(): a const json's operator[] on a missing key is undefined.
      const nlohmann::json status = p.value("status", nlohmann::json::object());
      const nlohmann::json meta = p.value("metadata", nlohmann::json::object());
      if (!status.is_object() || !meta.is_object() ||
          status.value("nominatedNodeName", std::string()) != t.k8s_node ||
          meta.contains("deletionTimestamp") ||
          !devices::MayUseGpus(p, cfg_.gpu_sharing.extended_resource,
                               cfg_.gpu_sharing.mig_extended_resource_prefix)) {
        continue;
      }
      return AbortedError(
          StrCat("pod ", meta.value("namespace", std::string()), "/",
                 meta.value("name", std::string()), " is being bound to ", t.k8s_node,
                 " (nominated): its claim may still be allocated there; placeholder ",
                 o.placeholder_job, " stays"));
    }
    auto list = kube_->List(k8s::Resource::ResourceClaims(), "", k8s::ListOptions{});
    if (!list.ok()) return list.status();
    const auto by_node = devices::ClaimsByNode(list->items, cfg_.gpu_sharing.driver);
    if (auto c = by_node.find(t.k8s_node); c != by_node.end()) {
      for (const devices::Claim& claim : c->second) {
        for (const std::string& d : claim.devices) {
          if (mine.count(d)) {
            return AbortedError(StrCat("claim of ", claim.pod, " is still allocated on ", d,
                                       ": placeholder ", o.placeholder_job, " stays"));
          }
        }
      }
    }
  }
  auto ended = slurm_->CancelJob(o.placeholder_job);
  if (!ended.ok()) {
    if (ended.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return ended.status();
  }
  return Recorded(
      a, *ended == slurm::WriteOutcome::kChanged ? Effect::kChanged : Effect::kUnchanged, t);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::RecordUnusedGive& o,
                                         const Target& t) {
  auto node = kube_->Get(k8s::Resource::Nodes(), "", t.k8s_node);
  if (!node.ok()) return node.status();
  // A value that is not a string (anyone who may edit the node may write it) reads as none.
  const std::string current =
      k8s::StringAt((*node)["metadata"]["annotations"], devices::kUnusedGivesAnnotation);
  const int64_t keep_after =
      o.at_unix -
      std::chrono::duration_cast<std::chrono::seconds>(cfg_.gpu_sharing.give_backoff_max).count();
  std::optional<std::vector<devices::UnusedGive>> gives = devices::AddUnusedGive(
      devices::ParseUnusedGives(current),
      {.pod = o.pod, .placeholder = o.placeholder_job, .at_unix = o.at_unix}, keep_after);
  if (!gives) return Effect::kUnchanged;  // recorded already
  // Against the node as read: a concurrent write of the node is a conflict, retried on the
  // next pass, so no record is lost to a lost update.
  const nlohmann::json patch = {
      {"metadata",
       {{"resourceVersion", k8s::MetadataString(*node, "resourceVersion")},
        {"annotations", {{devices::kUnusedGivesAnnotation, devices::FormatUnusedGives(*gives)}}}}}};
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", t.k8s_node, k8s::PatchType::kJsonMerge, patch);
  if (!r.ok()) return r.status();
  Logger("devices")->info("give_unused node={} pod={} placeholder={} records={}", a.node, o.pod,
                          o.placeholder_job, gives->size());
  return Recorded(a, Effect::kChanged, t, o.pod);
}

StatusOr<Effect> DeviceExecutorImpl::Run(const DeviceAction& a, const devices::DropDeviceHold& o,
                                         const Target& t) {
  ASSIGN_OR_RETURN(const Effect effect, DeleteHoldRules(kube_, o.devices, t.k8s_node));
  return Recorded(a, effect, t);
}

StatusOr<Effect> DeviceExecutorImpl::UpdateRecord(
    uint32_t job_id, const std::function<void(devices::PlaceholderRecord*)>& change) {
  auto job = slurm_->LoadJob(job_id);
  if (!job.ok()) return job.status();
  auto r = devices::ParsePlaceholderRecord(job->admin_comment);
  if (!r) {
    return FailedPreconditionError(
        StrCat("job ", job_id, " carries no placeholder record: not updated"));
  }
  devices::PlaceholderRecord updated = *r;
  change(&updated);
  if (updated == *r) return Effect::kUnchanged;
  auto o =
      slurm_->SetAdminComment(job_id, devices::MergePlaceholderRecord(job->admin_comment, updated));
  if (!o.ok()) return o.status();
  return Effect::kChanged;
}

std::optional<Clock::TimePoint> DeviceExecutorImpl::TakeRetryAt() {
  return std::exchange(retry_at_, std::nullopt);
}

StatusOr<Effect> DeviceExecutorImpl::RunOnNodeLane(const DeviceAction& a, plan::Operation op,
                                                   const Target& t) {
  plan::Action node_action{a, std::move(op)};
  node_action.k8s_node = t.k8s_node;
  return node_actions_->Execute(node_action);
}

DeviceLane::DeviceLane(const config::Config& cfg, DeviceExecutor* executor,
                       k8s::EventRecorder* events, const Clock* clock)
    : cfg_(cfg), executor_(executor), events_(events), clock_(clock) {}

DeviceLane::Result DeviceLane::RunPass(const devices::World& world, bool acting) {
  Result r;
  const Clock::TimePoint now = clock_->Now();
  r.observation = devices::Observe(world, cfg_, now);
  // With gpu_sharing off the lane only winds down what an earlier run left: no gives.
  r.plan = devices::PlanPass(r.observation.nodes,
                             cfg_.gpu_sharing.enabled
                                 ? std::span<const devices::PendingPod>(world.pending)
                                 : std::span<const devices::PendingPod>(),
                             cfg_, now);
  devices::PlanModeSwitches(r.observation, &r.plan);
  if (acting) {
    for (const auto& entry : r.plan.actions) {
      const std::string& node = entry.first;  // (clang: a lambda may not capture a binding)
      const std::vector<DeviceAction>& actions = entry.second;
      const devices::NodeDevices* n = devices::FindNode(r.observation, node);
      if (n == nullptr) continue;
      const std::string& k8s_node = devices::K8sNameOf(world, node);
      for (const DeviceAction& a : actions) {
        if (!r.deposed && may_act_ && !may_act_()) {
          r.deposed = true;
          Logger("devices")->warn(
              "device_pass_stopped node={} action=\"{}\": this replica may no longer hold the "
              "Lease; the actions left are the next leader's",
              node, devices::ToString(a));
        }
        if (r.deposed) break;
        StatusOr<Effect> effect = executor_->Execute(a, *n, k8s_node);
        if (effect.ok() && after_action_) {
          plan::Action fields;
          static_cast<plan::ActionFields&>(fields) = a;
          after_action_(fields);
        }
        r.outcomes.emplace_back(a, effect);
        if (!effect.ok()) {
          const Status& s = effect.status();
          ++r.failed;
          Logger("devices")->log(IsRetryable(s) || s.code() == StatusCode::kAborted
                                     ? spdlog::level::info
                                     : spdlog::level::warn,
                                 "device_action_failed node={} action=\"{}\" error=\"{}\"", node,
                                 devices::ToString(a), s.message());
          break;  // the rest of this node's sequence depends on this step
        }
        ++r.executed;
        Logger("devices")->info("device_action node={} action=\"{}\" effect={}", node,
                                devices::ToString(a), EffectName(*effect));
      }
    }
    if (!r.deposed) Report(world, r);  // a deposed leader records no Event
  }
  r.retry_at = executor_->TakeRetryAt();
  MutexLock lock(&mu_);
  nodes_ = r.observation.nodes;
  sharing_ = r.observation.sharing;
  return r;
}

void DeviceLane::Report(const devices::World& world, const Result& r) {
  MutexLock lock(&mu_);
  // A device both sides claim: one Warning per device and finding, again if it changes.
  std::set<std::string> now_violations;
  for (const auto& [node, list] : r.plan.violations) {
    const std::string& k8s_node = devices::K8sNameOf(world, node);
    for (const devices::Violation& v : list) {
      const std::string key = StrCat(node, "/", v.device, ": ", v.what);
      now_violations.insert(key);
      if (reported_violations_.count(key)) continue;
      Logger("devices")->error("device_violation node={} device={} what=\"{}\"", node, v.device,
                               v.what);
      events_->Record(k8s::NodeRef(k8s_node), k8s::EventType::kWarning, "GpuDoubleBooked",
                      StrCat(v.device, ": ", v.what,
                             " (no move is planned on this node until "
                             "it is resolved)"));
    }
  }
  reported_violations_ = std::move(now_violations);
  // A pod no give serves: say why on the pod, once per reason.
  std::map<std::string, std::string> waiting = world.not_counted;
  for (const auto& [pod, why] : r.plan.waiting) {
    if (why.rfind("a placeholder already serves", 0) != 0) waiting[pod] = why;
  }
  for (const auto& [pod, why] : waiting) {
    auto it = reported_waiting_.find(pod);
    if (it != reported_waiting_.end() && it->second == why) continue;
    auto [ns, name] = SplitPod(pod);
    auto uid = world.pod_uid.find(pod);
    events_->Record(k8s::PodRef(ns, name, uid != world.pod_uid.end() ? uid->second : ""),
                    k8s::EventType::kNormal, "GpusNotFreed",
                    StrCat("slurm-k8s-bridge frees no GPUs for this pod yet: ", why));
  }
  reported_waiting_ = std::move(waiting);
  for (const auto& [job, why] : r.observation.suspicious) {
    if (!reported_suspicious_.insert(job).second) continue;
    Logger("devices")->warn("placeholder_untrusted job={} why=\"{}\"", job, why);
  }
  for (const auto& [job, why] : r.observation.misplaced) {
    if (!reported_misplaced_.insert(job).second) continue;
    Logger("devices")->warn("placeholder_misplaced job={} why=\"{}\"", job, why);
  }
  // A node whose GPUs cannot be read (the driver's pool, a job's indices), and one where no
  // give may start (the placeholder partition could end or preempt a placeholder).
  ReportNodeStates(world, r.observation.unreadable, &reported_unreadable_,
                   {.warning = "GpusUnreadable",
                    .normal = "GpusReadable",
                    .normal_message = "which GPU each side uses reads again: the device lane "
                                      "plans the node",
                    .log = "gpus_unreadable"});
  std::map<std::string, std::string> no_gives;
  for (const devices::NodeDevices& n : r.observation.nodes) {
    if (!n.no_gives.empty())
      no_gives[n.node] = "no GPU is given to a pod on this node: " + n.no_gives;
  }
  ReportNodeStates(world, no_gives, &reported_no_gives_,
                   {.warning = "GivesRefused",
                    .normal = "GivesAllowed",
                    .normal_message = "the placeholder partition can hold GPUs here again",
                    .log = "gives_refused"});
}

// One Warning when a node enters the state (or its reason changes), one Normal when it
// leaves it; `reported` is what was said last.
void DeviceLane::ReportNodeStates(const devices::World& world,
                                  const std::map<std::string, std::string>& now,
                                  std::map<std::string, std::string>* reported,
                                  const NodeStateEvents& e) {
  for (const auto& [node, why] : now) {
    auto it = reported->find(node);
    if (it != reported->end() && it->second == why) continue;
    Logger("devices")->warn("{} node={} why=\"{}\"", e.log, node, why);
    events_->Record(k8s::NodeRef(devices::K8sNameOf(world, node)), k8s::EventType::kWarning,
                    std::string(e.warning), why);
  }
  for (const auto& [node, why] : *reported) {
    if (now.count(node)) continue;
    Logger("devices")->info("{}_ended node={}", e.log, node);
    events_->Record(k8s::NodeRef(devices::K8sNameOf(world, node)), k8s::EventType::kNormal,
                    std::string(e.normal), std::string(e.normal_message));
  }
  *reported = now;
}

std::set<std::string> DeviceLane::GranularNodes() const {
  MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const devices::NodeDevices& n : nodes_) out.insert(n.node);
  return out;
}

std::map<std::string, inventory::GpuSharingView> DeviceLane::SharingViews() const {
  MutexLock lock(&mu_);
  return sharing_;
}

std::vector<devices::NodeDevices> DeviceLane::Nodes() const {
  MutexLock lock(&mu_);
  return nodes_;
}

void RecordDeviceMetrics(const DeviceLane::Result& r, int64_t now_unix,
                         observability::BridgeMetrics* m) {
  // Durations the planner dated (Unix seconds, 0 = unknown); whole seconds, as Slurm and the
  // records keep them.
  auto since = [&](int64_t since_unix) -> std::optional<double> {
    if (since_unix <= 0 || now_unix < since_unix) return std::nullopt;
    return static_cast<double>(now_unix - since_unix);
  };
  for (const auto& [a, effect] : r.outcomes) {
    m->Action(a.Kind(), observability::OutcomeOf(effect.status())).Increment();
    if (!effect.ok() || *effect != Effect::kChanged) continue;
    const plan::Cause cause = a.cause;  // (clang: a lambda may not capture a binding)
    std::visit(Overloaded{
                   [&](const devices::RemoveDeviceHold& o) {
                     m->shared_gpu_moves.WithLabels({"to-k8s"})
                         .Increment(static_cast<double>(o.devices.size()));
                     if (auto s = since(o.since_unix)) m->shared_gpu_give_duration.Observe(*s);
                   },
                   [&](const devices::EndPlaceholder& o) {
                     if (cause != plan::Cause::kReturn) return;  // a give cancelled: nothing moved
                     m->shared_gpu_moves.WithLabels({"to-slurm"})
                         .Increment(static_cast<double>(o.devices.size()));
                     if (auto s = since(o.since_unix)) m->shared_gpu_return_duration.Observe(*s);
                   },
                   [&](const plan::PreemptSlurmJobs& o) {
                     m->preemptions.WithLabels({plan::PreemptionModeLabel(o.mode)})
                         .Increment(static_cast<double>(o.job_ids.size()));
                     if (auto s = since(o.since_unix)) {
                       for (size_t i = 0; i < o.job_ids.size(); ++i)
                         m->preemption_grace.Observe(*s);
                     }
                   },
                   // The other kinds move no GPU and preempt no job.
                   [](const devices::AddDeviceHold&) {},
                   [](const devices::SubmitPlaceholder&) {},
                   [](const devices::SignalJobs&) {},
                   [](const devices::RecordIdleSince&) {},
                   [](const devices::MarkReturning&) {},
                   [](const devices::RecordUnusedGive&) {},
                   // Holds dropped on a node leaving GPU sharing: no placeholder is left, no
                   // GPU moves between the lanes.
                   [](const devices::DropDeviceHold&) {},
                   // A pod evicted off a lost give's GPUs: the job there keeps them.
                   [](const plan::EvictPod&) {},
                   [](const plan::SetNodeCondition&) {},
               },
               a.op);
  }
}

void ExportDeviceMetrics(const devices::Observation& o, observability::BridgeMetrics* m) {
  std::map<std::string_view, int64_t> owners;
  for (std::string_view owner : observability::kDeviceOwners) owners[owner] = 0;
  int64_t violations = 0;
  for (const devices::NodeDevices& node : o.nodes) {
    for (const devices::DeviceView& v : devices::Owners(node)) {
      ++owners[devices::OwnerName(v.owner)];
    }
    violations += static_cast<int64_t>(devices::Violations(node).size());
  }
  for (const auto& [owner, gpus] : owners) {
    m->shared_gpus.WithLabels({owner}).Set(static_cast<double>(gpus));
  }
  m->shared_nodes.WithLabels({"shared"}).Set(static_cast<double>(o.nodes.size()));
  m->shared_nodes.WithLabels({"whole"}).Set(static_cast<double>(o.node_granular.size()));
  m->shared_gpu_violations.Set(static_cast<double>(violations));
}

}  // namespace skb::bridge

#include "bridge/reconcile/device_lane.h"

#include <algorithm>

#include "bridge/logging.h"
#include "k8s/api_error.h"
#include "k8s/field_reader.h"
#include "k8s/resource.h"
#include "k8s/time_format.h"
#include "src/base/retry.h"
#include "src/base/strings.h"
#include "src/devices/give_backoff.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/placeholder_record.h"

namespace skb::bridge {
namespace {

using devices::DeviceAction;

// How long a hold exists before a return trusts that kube-scheduler allocates nothing new
// on its device (its informer has seen the rule; an allocation decided earlier has been
// written by then).
constexpr Clock::Duration kHoldSettle = std::chrono::seconds(5);
using devices::DeviceActionKind;

const devices::Device* FindDevice(const devices::NodeDevices& node, const std::string& name) {
  for (const devices::Device& d : node.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

bool GiveRelated(DeviceActionKind k) {
  return k == DeviceActionKind::kSubmitPlaceholder || k == DeviceActionKind::kRemoveDeviceHold ||
         k == DeviceActionKind::kSignalJobs || k == DeviceActionKind::kPreemptJobs ||
         k == DeviceActionKind::kRecordUnusedGive;
}

// "ns/name" -> {ns, name}.
std::pair<std::string, std::string> SplitPod(const std::string& pod) {
  const size_t slash = pod.find('/');
  if (slash == std::string::npos) return {"", pod};
  return {pod.substr(0, slash), pod.substr(slash + 1)};
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
  StatusOr<Effect> s = Effect::kUnchanged;
  switch (a.kind) {
    case DeviceActionKind::kAddDeviceHold:
      s = AddHolds(a, k8s_node);
      break;
    case DeviceActionKind::kRemoveDeviceHold:
      s = RemoveHolds(a, node, k8s_node);
      break;
    case DeviceActionKind::kSubmitPlaceholder:
      s = Submit(a);
      break;
    case DeviceActionKind::kSignalJobs: {
      s = NodeLaneAction(a, k8s_node);
      if (!s.ok()) return s;
      StatusOr<Effect> recorded =
          UpdateRecord(a.placeholder_job, [&](devices::PlaceholderRecord* r) {
            if (r->signalled_at == 0) r->signalled_at = a.at_unix;
          });
      if (!recorded.ok()) return recorded.status();
      return *s == Effect::kChanged ? *s
                                    : *recorded;  // the node lane's executor recorded the Event
    }
    case DeviceActionKind::kPreemptJobs:
      return NodeLaneAction(a, k8s_node);
    case DeviceActionKind::kRecordIdleSince:
      s = UpdateRecord(a.placeholder_job,
                       [&](devices::PlaceholderRecord* r) { r->idle_since = a.at_unix; });
      break;
    case DeviceActionKind::kMarkReturning:
      s = UpdateRecord(a.placeholder_job,
                       [&](devices::PlaceholderRecord* r) { r->returning = true; });
      break;
    case DeviceActionKind::kEndPlaceholder:
      s = EndPlaceholder(a, node, k8s_node);
      break;
    case DeviceActionKind::kRecordUnusedGive:
      s = RecordUnusedGive(a, k8s_node);
      break;
  }
  // The Event says what changed: a repeat that found its work done records none.
  if (s.ok() && *s == Effect::kChanged && !a.quiet && !a.event_reason.empty()) {
    const k8s::EventType type = ToK8sEventType(a.event_type);
    events_->Record(k8s::NodeRef(k8s_node), type, a.event_reason, a.event_message);
    if (!a.pod.empty() && GiveRelated(a.kind)) {
      auto [ns, name] = SplitPod(a.pod);
      events_->Record(k8s::PodRef(ns, name), type, a.event_reason,
                      StrCat(a.event_message, " (node ", k8s_node, ")"));
    }
  }
  return s;
}

StatusOr<Effect> DeviceExecutorImpl::AddHolds(const DeviceAction& a, const std::string& k8s_node) {
  Effect effect = Effect::kUnchanged;
  for (const std::string& d : a.devices) {
    auto created = kube_->Create(k8s::Resource::DeviceTaintRules(), "",
                                 devices::HoldRule(k8s_node, d, cfg_.gpu_sharing.driver));
    if (created.ok()) {
      effect = Effect::kChanged;
    } else if (created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
  }
  return effect;
}

StatusOr<Effect> DeviceExecutorImpl::RemoveHolds(const DeviceAction& a,
                                                 const devices::NodeDevices& node,
                                                 const std::string& k8s_node) {
  // Only while the placeholder runs on exactly these devices: Slurm holds them now.
  auto job = slurm_->LoadJob(a.placeholder_job);
  if (!job.ok()) return job.status();
  if (job->state != skb::slurm::JobState::kRunning) {
    return AbortedError(StrCat("placeholder ", a.placeholder_job, " is ",
                               skb::slurm::JobStateName(job->state), ", not running"));
  }
  const auto idx = job->gpu_indices.find(a.node);
  for (const std::string& d : a.devices) {
    const devices::Device* dev = FindDevice(node, d);
    if (dev == nullptr || idx == job->gpu_indices.end() ||
        std::find(idx->second.begin(), idx->second.end(), dev->index) == idx->second.end()) {
      return AbortedError(StrCat("placeholder ", a.placeholder_job, " does not hold ", d, " on ",
                                 a.node, " (Slurm's view moved: plan again)"));
    }
  }
  Effect effect = Effect::kUnchanged;
  for (const std::string& d : a.devices) {
    k8s::DeleteOptions opts;
    auto deleted = kube_->Delete(k8s::Resource::DeviceTaintRules(), "",
                                 devices::HoldRuleName(k8s_node, d), opts);
    if (deleted.ok()) {
      effect = Effect::kChanged;
    } else if (deleted.status().code() != StatusCode::kNotFound) {
      return deleted.status();
    }
  }
  return effect;
}

StatusOr<Effect> DeviceExecutorImpl::Submit(const DeviceAction& a) {
  const devices::PlaceholderRecord r{
      .node = a.node, .pod = a.pod, .gpus = a.gpus, .victims = a.job_ids};
  const slurm::PlaceholderSpec spec{.node = a.node,
                                    .gpus = a.gpus,
                                    .partition = cfg_.gpu_sharing.placeholder.partition,
                                    .qos = cfg_.gpu_sharing.placeholder.qos,
                                    .account = cfg_.gpu_sharing.placeholder.account,
                                    .admin_comment = devices::FormatPlaceholderRecord(r)};
  auto submitted = slurm_->SubmitPlaceholder(spec);
  if (!submitted.ok()) return submitted.status();
  if (submitted->outcome == slurm::WriteOutcome::kUnchanged) return Effect::kUnchanged;
  Logger("devices")->info("placeholder_submitted job={} node={} gpus={} pod={} victims={}",
                          submitted->job_id, a.node, a.gpus, a.pod, a.job_ids.size());
  return Effect::kChanged;
}

StatusOr<Effect> DeviceExecutorImpl::EndPlaceholder(const DeviceAction& a,
                                                    const devices::NodeDevices& node,
                                                    const std::string& k8s_node) {
  auto job = slurm_->LoadJob(a.placeholder_job);
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
    if (auto idx = job->gpu_indices.find(a.node); idx != job->gpu_indices.end()) {
      for (const devices::Device& d : node.devices) {
        if (std::find(idx->second.begin(), idx->second.end(), d.index) != idx->second.end()) {
          mine.insert(d.name);
        }
      }
    }
    for (const std::string& d : mine) {
      auto rule =
          kube_->Get(k8s::Resource::DeviceTaintRules(), "", devices::HoldRuleName(k8s_node, d));
      if (!rule.ok()) {
        return rule.status().code() == StatusCode::kNotFound
                   ? AbortedError(StrCat(d, " is not held again yet: placeholder ",
                                         a.placeholder_job, " stays"))
                   : rule.status();
      }
      auto created = k8s::ParseTime((*rule)["metadata"].value("creationTimestamp", ""));
      if (!created.ok() || clock_->Now() < *created + kHoldSettle) {
        return AbortedError(
            StrCat("the hold on ", d, " is younger than ",
                   std::chrono::duration_cast<std::chrono::seconds>(kHoldSettle).count(),
                   " s: placeholder ", a.placeholder_job, " stays"));
      }
    }
    auto list = kube_->List(k8s::Resource::ResourceClaims(), "", k8s::ListOptions{});
    if (!list.ok()) return list.status();
    const auto by_node = devices::ClaimsByNode(list->items, cfg_.gpu_sharing.driver);
    if (auto c = by_node.find(k8s_node); c != by_node.end()) {
      for (const devices::Claim& claim : c->second) {
        for (const std::string& d : claim.devices) {
          if (mine.count(d)) {
            return AbortedError(StrCat("claim of ", claim.pod, " is still allocated on ", d,
                                       ": placeholder ", a.placeholder_job, " stays"));
          }
        }
      }
    }
  }
  auto o = slurm_->CancelJob(a.placeholder_job);
  if (!o.ok()) {
    if (o.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return o.status();
  }
  return *o == slurm::WriteOutcome::kChanged ? Effect::kChanged : Effect::kUnchanged;
}

StatusOr<Effect> DeviceExecutorImpl::RecordUnusedGive(const DeviceAction& a,
                                                      const std::string& k8s_node) {
  auto node = kube_->Get(k8s::Resource::Nodes(), "", k8s_node);
  if (!node.ok()) return node.status();
  std::string current;
  if (const auto& meta = (*node)["metadata"];
      meta.contains("annotations") && meta["annotations"].is_object()) {
    current = meta["annotations"].value(devices::kUnusedGivesAnnotation, "");
  }
  const int64_t keep_after =
      a.at_unix -
      std::chrono::duration_cast<std::chrono::seconds>(cfg_.gpu_sharing.give_backoff_max).count();
  std::optional<std::vector<devices::UnusedGive>> gives = devices::AddUnusedGive(
      devices::ParseUnusedGives(current),
      {.pod = a.pod, .placeholder = a.placeholder_job, .at_unix = a.at_unix}, keep_after);
  if (!gives) return Effect::kUnchanged;  // recorded already
  // Against the node as read: a concurrent write of the node is a conflict, retried on the
  // next pass, so no record is lost to a lost update.
  const nlohmann::json patch = {
      {"metadata",
       {{"resourceVersion", k8s::MetadataString(*node, "resourceVersion")},
        {"annotations", {{devices::kUnusedGivesAnnotation, devices::FormatUnusedGives(*gives)}}}}}};
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", k8s_node, k8s::PatchType::kJsonMerge, patch);
  if (!r.ok()) return r.status();
  Logger("devices")->info("give_unused node={} pod={} placeholder={} records={}", a.node, a.pod,
                          a.placeholder_job, gives->size());
  return Effect::kChanged;
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

StatusOr<Effect> DeviceExecutorImpl::NodeLaneAction(const DeviceAction& a,
                                                    const std::string& k8s_node) {
  plan::Action na;
  if (a.kind == DeviceActionKind::kSignalJobs) {
    na.op =
        plan::SignalSlurmJobs{.job_ids = a.job_ids, .signal = a.signal, .scope = a.signal_scope};
  } else {
    na.op = plan::PreemptSlurmJobs{.job_ids = a.job_ids,
                                   .mode = a.preempt_mode,
                                   .preemptor = a.pod,
                                   .at_unix = a.at_unix,
                                   .ended_after_signal = a.ended_after_signal,
                                   .since_unix = a.since_unix};
  }
  na.node = a.node;
  na.k8s_node = k8s_node;
  na.cause = a.cause;
  na.event_type = a.event_type;
  na.event_reason = a.event_reason;
  na.event_message = a.event_message;
  return node_actions_->Execute(na);
}

DeviceLane::DeviceLane(const config::Config& cfg, DeviceExecutor* executor,
                       k8s::EventRecorder* events, const Clock* clock)
    : cfg_(cfg), executor_(executor), events_(events), clock_(clock) {}

DeviceLane::Result DeviceLane::RunPass(const devices::World& world, bool acting) {
  Result r;
  const Clock::TimePoint now = clock_->Now();
  r.observation = devices::Observe(world, cfg_, now);
  r.plan = devices::PlanPass(r.observation.nodes, world.pending, cfg_, now);
  if (acting) {
    for (const auto& entry : r.plan.actions) {
      const std::string& node = entry.first;  // (clang: a lambda may not capture a binding)
      const std::vector<DeviceAction>& actions = entry.second;
      auto n = std::find_if(r.observation.nodes.begin(), r.observation.nodes.end(),
                            [&](const devices::NodeDevices& x) { return x.node == node; });
      if (n == r.observation.nodes.end()) continue;
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
  MutexLock lock(&mu_);
  nodes_ = r.observation.nodes;
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
  std::map<std::string, std::string> waiting;
  for (const auto& [pod, why] : r.plan.waiting) {
    if (why.rfind("a placeholder already serves", 0) == 0) continue;
    waiting[pod] = why;
    auto it = reported_waiting_.find(pod);
    if (it != reported_waiting_.end() && it->second == why) continue;
    auto [ns, name] = SplitPod(pod);
    events_->Record(k8s::PodRef(ns, name), k8s::EventType::kNormal, "GpusNotFreed",
                    StrCat("slurm-k8s-bridge frees no GPUs for this pod yet: ", why));
  }
  reported_waiting_ = std::move(waiting);
  for (const auto& [job, why] : r.observation.suspicious) {
    if (!reported_suspicious_.insert(job).second) continue;
    Logger("devices")->warn("placeholder_untrusted job={} why=\"{}\"", job, why);
  }
}

std::set<std::string> DeviceLane::GranularNodes() const {
  MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const devices::NodeDevices& n : nodes_) out.insert(n.node);
  return out;
}

std::vector<devices::NodeDevices> DeviceLane::Nodes() const {
  MutexLock lock(&mu_);
  return nodes_;
}

void RecordDeviceMetrics(const DeviceLane::Result& r, int64_t now_unix,
                         observability::BridgeMetrics* m) {
  for (const auto& [a, effect] : r.outcomes) {
    m->Action(devices::DeviceActionKindName(a.kind), observability::OutcomeOf(effect.status()))
        .Increment();
    if (!effect.ok() || *effect != Effect::kChanged) continue;
    // Durations the planner dated; whole seconds, as Slurm and the records keep them.
    const double since = a.since_unix > 0 && now_unix >= a.since_unix
                             ? static_cast<double>(now_unix - a.since_unix)
                             : -1;
    switch (a.kind) {
      case DeviceActionKind::kRemoveDeviceHold:
        m->shared_gpu_moves.WithLabels({"to-k8s"}).Increment(static_cast<double>(a.devices.size()));
        if (since >= 0) m->shared_gpu_give_duration.Observe(since);
        break;
      case DeviceActionKind::kEndPlaceholder:
        if (a.cause != plan::Cause::kReturn) break;  // a give cancelled: nothing moved
        m->shared_gpu_moves.WithLabels({"to-slurm"})
            .Increment(static_cast<double>(a.devices.size()));
        if (since >= 0) m->shared_gpu_return_duration.Observe(since);
        break;
      case DeviceActionKind::kPreemptJobs:
        m->preemptions.WithLabels({plan::PreemptionModeLabel(a.preempt_mode)})
            .Increment(static_cast<double>(a.job_ids.size()));
        if (since >= 0) {
          for (size_t i = 0; i < a.job_ids.size(); ++i) m->preemption_grace.Observe(since);
        }
        break;
      default:
        break;
    }
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

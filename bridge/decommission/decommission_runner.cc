// SPDX-License-Identifier: Apache-2.0
#include "bridge/decommission/decommission_runner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "bridge/reconcile/k8s_convert.h"
#include "bridge/slurm/libslurm_client.h"
#include "k8s/api_error.h"
#include "k8s/api_event_recorder.h"
#include "k8s/field_reader.h"
#include "k8s/kubeconfig.h"
#include "k8s/lease_info.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/overloaded.h"
#include "src/base/strings.h"
#include "src/devices/give_backoff.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/placeholder_record.h"
#include "src/health/health_config.h"
#include "src/health/maintenance.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/schema.h"

namespace skb::bridge::decommission {
namespace {

namespace dc = skb::decommission;
using slurm::WriteOutcome;

constexpr int kConflictRetries = 5;

// What the bridge writes on a Node, by name: the prefix alone is not the bridge's (a site
// labels its nodes slurm-k8s-bridge.io/managed for the node selector, the testbed
// slurm-k8s-bridge.io/rack for a feature), and only what the bridge wrote goes.
constexpr std::string_view kNodeAnnotations[] = {
    ownership::kLentAtAnnotation,        ownership::kLentToAnnotation,
    ownership::kSignalledAtAnnotation,   ownership::kLendBlockedAnnotation,
    ownership::kReturnBlockedAnnotation, ownership::kLendRefusedAtAnnotation,
    ownership::kIdleSinceAnnotation,     ownership::kGpuSharedSinceAnnotation,
    devices::kUnusedGivesAnnotation};
constexpr std::string_view kNodeLabels[] = {ownership::kSwapGuardLabel};
constexpr std::string_view kNodeTaints[] = {ownership::kSwapTaintKey, ownership::kBusyTaintKey,
                                            ownership::kReclaimTaintKey,
                                            health::kMaintenanceTaintKey};

template <size_t N>
bool OneOf(const std::string_view (&keys)[N], std::string_view key) {
  return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
}

std::string ManagedBySelector() {
  return StrCat(ownership::kManagedByLabel, "=", devices::kManagedByValue);
}

bool IsReservation(const k8s::PodInfo& p) {
  auto it = p.meta.labels.find(ownership::kRoleLabel);
  return it != p.meta.labels.end() && it->second == ownership::kReservationRole;
}

bool IsBridgePod(const k8s::PodInfo& p) { return p.meta.labels.contains(ownership::kRoleLabel); }

bool IsManaged(const nlohmann::json& obj) {
  const nlohmann::json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  return meta != nullptr && meta->contains("labels") &&
         k8s::StringAt((*meta)["labels"], ownership::kManagedByLabel) == devices::kManagedByValue;
}

bool IsLive(const slurm::JobView& j) {
  return j.state == skb::slurm::JobState::kPending || j.state == skb::slurm::JobState::kRunning ||
         j.state == skb::slurm::JobState::kSuspended || j.completing;
}

// Runs `attempt` again while it answers Aborted (a resourceVersion that moved under it).
StatusOr<WriteOutcome> RetryConflicts(const std::function<StatusOr<WriteOutcome>()>& attempt) {
  StatusOr<WriteOutcome> r = attempt();
  for (int i = 1; i < kConflictRetries && !r.ok() &&
                  (r.status().code() == StatusCode::kAborted || k8s::IsConflict(r.status()));
       ++i) {
    r = attempt();
  }
  return r;
}

// The patch's outcome, a JSON Patch "test" that failed (InvalidArgument) read as Aborted:
// the object changed between the read and the write.
Status PatchStatus(const Status& s, std::string_view what) {
  if (s.code() == StatusCode::kInvalidArgument || k8s::IsConflict(s)) {
    return AbortedError(StrCat(what, " changed while it was written: ", s.message()));
  }
  return s;
}

// Deletes the object when it carries the bridge's managed-by label (uid precondition: the
// one read, not one made since); gone already is kUnchanged.
StatusOr<WriteOutcome> DeleteManaged(k8s::KubeClient& kube, const k8s::Resource& r,
                                     const std::string& ns, const std::string& name,
                                     std::string_view kind) {
  auto obj = kube.Get(r, ns, name);
  if (!obj.ok()) {
    if (k8s::IsNotFound(obj.status())) return WriteOutcome::kUnchanged;
    return obj.status();
  }
  if (!IsManaged(*obj)) {
    return FailedPreconditionError(
        StrCat(kind, " ", ns.empty() ? "" : ns + "/", name, " is not the bridge's: left alone"));
  }
  k8s::DeleteOptions del;
  del.precondition_uid = k8s::MetadataString(*obj, "uid");
  auto deleted = kube.Delete(r, ns, name, del);
  if (!deleted.ok() && !k8s::IsNotFound(deleted.status())) return deleted.status();
  return WriteOutcome::kChanged;
}

}  // namespace

Decommissioner::Decommissioner(Options options) : opts_(std::move(options)) {}

Status Decommissioner::CheckNoBridgeActs() {
  const config::Config& cfg = *opts_.config;
  auto lease = opts_.kube->Get(k8s::Resource::Leases(), cfg.kubernetes.namespace_name,
                               cfg.leader_election.lease_name);
  if (!lease.ok()) {
    if (k8s::IsNotFound(lease.status())) return OkStatus();
    return lease.status();
  }
  ASSIGN_OR_RETURN(k8s::LeaseInfo info, k8s::ParseLease(*lease));
  if (info.holder_identity.empty() || info.renew_time.empty()) return OkStatus();
  auto renewed = k8s::ParseTime(info.renew_time);
  if (!renewed.ok()) return OkStatus();
  const auto duration = std::chrono::seconds(info.lease_duration_seconds.value_or(15));
  const auto now = opts_.clock->Now();
  if (now - *renewed > duration) return OkStatus();
  const auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - *renewed).count();
  const std::string what = StrCat("a bridge is running: the Lease ", cfg.kubernetes.namespace_name,
                                  "/", cfg.leader_election.lease_name, " is held by '",
                                  info.holder_identity, "', renewed ", ago,
                                  " s ago; stop it first (it would make again what the "
                                  "decommission removes)");
  if (opts_.force) return OkStatus();
  return FailedPreconditionError(
      StrCat(what, ", or pass --force once it is stopped and its Lease is stale"));
}

StatusOr<Facts> Decommissioner::ReadFacts() {
  const config::Config& cfg = *opts_.config;
  k8s::KubeClient& kube = *opts_.kube;
  Facts facts;

  // Kubernetes nodes, keyed by name, with the Slurm name each pairs with.
  ASSIGN_OR_RETURN(k8s::ListResult nodes, k8s::ListAll(kube, k8s::Resource::Nodes(), "", {}));
  std::map<std::string, dc::NodeFacts> by_k8s;
  std::map<std::string, std::string> k8s_of_slurm;
  for (const nlohmann::json& obj : nodes.items) {
    auto node = k8s::ParseNode(obj);
    if (!node.ok()) continue;
    dc::NodeFacts n;
    n.k8s_name = node->meta.name;
    n.slurm_name = cfg.kubernetes.node_names.SlurmName(ToK8sNode(*node)).value_or("");
    n.cordoned = node->unschedulable;
    for (const auto& [key, value] : node->meta.annotations) {
      if (OneOf(kNodeAnnotations, key)) n.bridge_annotations.push_back(key);
    }
    for (const auto& [key, value] : node->meta.labels) {
      if (OneOf(kNodeLabels, key)) n.bridge_labels.push_back(key);
    }
    for (const k8s::Taint& t : node->taints) {
      if (OneOf(kNodeTaints, t.key)) n.bridge_taints.push_back(t.key);
    }
    for (const k8s::Condition& c : node->conditions) {
      if (health::IsBridgeCondition(c.type)) n.bridge_conditions.push_back(c.type);
    }
    if (!n.slurm_name.empty()) k8s_of_slurm[n.slurm_name] = n.k8s_name;
    by_k8s.emplace(n.k8s_name, std::move(n));
  }

  // Pods that are not finished: the reservations, and the GPU pods per node.
  k8s::ListOptions live;
  live.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  ASSIGN_OR_RETURN(k8s::ListResult pods, k8s::ListAll(kube, k8s::Resource::Pods(), "", live));
  for (const nlohmann::json& obj : pods.items) {
    auto pod = k8s::ParsePod(obj);
    if (!pod.ok() || pod->Terminal()) continue;
    dc::NamespacedName name{pod->meta.namespace_, pod->meta.name};
    auto node = by_k8s.find(pod->node_name);
    if (IsReservation(*pod)) {
      if (node == by_k8s.end()) {
        facts.unbound_reservations.push_back(std::move(name));
        continue;
      }
      node->second.reservations.push_back(std::move(name));
      if (!pod->meta.deleting()) node->second.live_reservation = true;
      continue;
    }
    if (IsBridgePod(*pod) || node == by_k8s.end()) continue;
    const bool claims = obj.contains("spec") && obj["spec"].contains("resourceClaims") &&
                        obj["spec"]["resourceClaims"].is_array() &&
                        !obj["spec"]["resourceClaims"].empty();
    if (pod->GpuRequest() > 0 || claims) node->second.gpu_pods.push_back(std::move(name));
  }

  // The bridge's DeviceTaintRules (none where the DRA API is not served).
  k8s::ListOptions managed;
  managed.label_selector = ManagedBySelector();
  auto rules = k8s::ListAll(kube, k8s::Resource::DeviceTaintRules(), "", managed);
  if (!rules.ok() && !k8s::IsNotFound(rules.status()) &&
      !(k8s::IsForbidden(rules.status()) && !cfg.gpu_sharing.enabled)) {
    return rules.status();
  }
  if (rules.ok()) {
    for (const nlohmann::json& rule : rules->items) {
      const std::string name = k8s::MetadataString(rule, "name");
      const nlohmann::json& labels = rule["metadata"].value("labels", nlohmann::json::object());
      auto node = by_k8s.find(k8s::StringAt(labels, devices::kHoldNodeLabel));
      const bool drain = !k8s::StringAt(labels, devices::kDrainedByLabel).empty();
      if (node == by_k8s.end()) {
        facts.other_rules.push_back(name);
      } else if (drain) {
        const nlohmann::json& annotations =
            rule["metadata"].value("annotations", nlohmann::json::object());
        std::string device;
        if (rule.contains("spec") && rule["spec"].contains("deviceSelector")) {
          device = k8s::StringAt(rule["spec"]["deviceSelector"], "device");
        }
        node->second.drain_rules.emplace_back(
            name, StrCat(device.empty() ? name : device, " (",
                         k8s::StringAt(annotations, devices::kDrainReasonAnnotation), ")"));
      } else {
        node->second.hold_rules.push_back(name);
      }
    }
  }

  // The guarantee ResourceQuotas, in every namespace.
  // Where the account may not list them, the feature was off (the chart grants each
  // feature's rights only with it): none were made. With the feature on, not seeing them
  // is an error.
  auto quotas = k8s::ListAll(kube, k8s::Resource::ResourceQuotas(), "", managed);
  if (!quotas.ok() && !(k8s::IsForbidden(quotas.status()) && !cfg.quotas.enabled())) {
    return quotas.status();
  }
  for (const nlohmann::json& q : quotas.ok() ? quotas->items : std::vector<nlohmann::json>{}) {
    if (k8s::MetadataString(q, "name") != ownership::kGuaranteeQuotaName) continue;
    facts.quotas.push_back({k8s::MetadataString(q, "namespace"), ownership::kGuaranteeQuotaName});
  }

  // The PriorityClasses the daemon made where none were (EnsurePriorityClasses).
  // The chart, which makes them itself, grants no read of them.
  auto classes = k8s::ListAll(kube, k8s::Resource::PriorityClasses(), "", managed);
  if (!classes.ok() && !k8s::IsForbidden(classes.status())) return classes.status();
  for (const nlohmann::json& pc : classes.ok() ? classes->items : std::vector<nlohmann::json>{}) {
    facts.priority_classes.push_back(k8s::MetadataString(pc, "name"));
  }

  // Slurm: every node's drain, the jobs on it, the placeholders and the job records.
  ASSIGN_OR_RETURN(auto slurm_nodes, opts_.slurm->LoadNodes(0));
  ASSIGN_OR_RETURN(auto jobs, opts_.slurm->LoadJobs(0));
  std::map<std::string, dc::NodeFacts> slurm_only;
  auto facts_of = [&](const std::string& slurm_name) -> dc::NodeFacts* {
    if (auto k = k8s_of_slurm.find(slurm_name); k != k8s_of_slurm.end()) {
      return &by_k8s.at(k->second);
    }
    auto [it, added] = slurm_only.try_emplace(slurm_name);
    if (added) it->second.slurm_name = slurm_name;
    return &it->second;
  };
  for (const slurm::NodeView& v : slurm_nodes.items) {
    dc::NodeFacts* n = facts_of(v.name);
    n->drain = v.DrainedBy();
    n->drain_reason = v.reason;
  }
  for (const slurm::JobView& j : jobs.items) {
    if (!IsLive(j)) continue;
    const bool placeholder = j.name == devices::kPlaceholderJobName;
    if (j.HoldsNodes() && !j.nodes.empty()) {
      for (const std::string& node : j.nodes) {
        dc::NodeFacts* n = facts_of(node);
        (placeholder ? n->placeholders : n->slurm_jobs).push_back(j.job_id);
      }
    } else if (placeholder) {
      facts.unplaced_placeholders.push_back(j.job_id);
    }
    if (!placeholder && j.admin_comment.find(ownership::kPreemptedToken) != std::string::npos) {
      facts.job_records.push_back({j.job_id, j.admin_comment});
    }
  }
  for (auto& [name, n] : by_k8s) facts.nodes.push_back(std::move(n));
  for (auto& [name, n] : slurm_only) facts.nodes.push_back(std::move(n));
  return facts;
}

StatusOr<WriteOutcome> Decommissioner::RunStep(const Step& step) {
  k8s::KubeClient& kube = *opts_.kube;
  slurm::SlurmClient& slurm = *opts_.slurm;
  return std::visit(
      Overloaded{
          [&](const dc::Cordon& c) -> StatusOr<WriteOutcome> {
            ASSIGN_OR_RETURN(nlohmann::json node, kube.Get(k8s::Resource::Nodes(), "", c.node));
            if (node.contains("spec") && node["spec"].value("unschedulable", false)) {
              return WriteOutcome::kUnchanged;
            }
            RETURN_IF_ERROR(kube.Patch(k8s::Resource::Nodes(), "", c.node,
                                       k8s::PatchType::kJsonMerge,
                                       {{"spec", {{"unschedulable", true}}}})
                                .status());
            return WriteOutcome::kChanged;
          },
          [&](const dc::DrainAs& d) { return slurm.HandOverDrain(d.node, d.reason); },
          [&](const dc::Resume& r) -> StatusOr<WriteOutcome> {
            ASSIGN_OR_RETURN(slurm::NodeView v, slurm.LoadNode(r.node));
            // Only a lending drain: one the bridge made for health stays (the plan said so
            // from an older read; a node drained for health since is not resumed).
            if (v.DrainedBy() != skb::slurm::DrainOrigin::kBridgeLend)
              return WriteOutcome::kUnchanged;
            return slurm.ResumeNode(r.node);
          },
          [&](const dc::ReleaseReservation& r) -> StatusOr<WriteOutcome> {
            const std::string& ns = r.pod.namespace_name;
            auto pod = kube.Get(k8s::Resource::Pods(), ns, r.pod.name);
            if (!pod.ok()) {
              if (k8s::IsNotFound(pod.status())) return WriteOutcome::kUnchanged;
              return pod.status();
            }
            auto info = k8s::ParsePod(*pod);
            if (!info.ok() || !IsReservation(*info)) {
              return FailedPreconditionError(
                  StrCat("pod ", r.pod.Key(), " is not the bridge's reservation: left alone"));
            }
            nlohmann::json ops = nlohmann::json::array(
                {{{"op", "test"}, {"path", "/metadata/uid"}, {"value", info->meta.uid}}});
            if (info->meta.annotations.empty()) {
              ops.push_back({{"op", "add"},
                             {"path", "/metadata/annotations"},
                             {"value", {{ownership::kReleasedAnnotation, "true"}}}});
            } else {
              ops.push_back(
                  {{"op", "add"},
                   {"path", StrCat("/metadata/annotations/",
                                   k8s::JsonPointerSegment(ownership::kReleasedAnnotation))},
                   {"value", "true"}});
            }
            const auto& fin = info->meta.finalizers;
            if (auto it = std::find(fin.begin(), fin.end(), ownership::kFinalizer);
                it != fin.end()) {
              const std::string path = StrCat("/metadata/finalizers/", it - fin.begin());
              ops.push_back({{"op", "test"}, {"path", path}, {"value", ownership::kFinalizer}});
              ops.push_back({{"op", "remove"}, {"path", path}});
            }
            auto patched =
                kube.Patch(k8s::Resource::Pods(), ns, r.pod.name, k8s::PatchType::kJsonPatch, ops);
            if (!patched.ok()) {
              if (k8s::IsNotFound(patched.status())) return WriteOutcome::kUnchanged;
              return PatchStatus(patched.status(), StrCat("pod ", r.pod.Key()));
            }
            k8s::DeleteOptions del;
            del.precondition_uid = info->meta.uid;
            del.grace_period_seconds = 1;
            auto deleted = kube.Delete(k8s::Resource::Pods(), ns, r.pod.name, del);
            if (!deleted.ok() && !k8s::IsNotFound(deleted.status())) return deleted.status();
            return WriteOutcome::kChanged;
          },
          [&](const dc::CancelPlaceholder& c) -> StatusOr<WriteOutcome> {
            auto job = slurm.LoadJob(c.job_id);
            if (!job.ok()) {
              if (job.status().code() == StatusCode::kNotFound) return WriteOutcome::kUnchanged;
              return job.status();
            }
            if (job->name != devices::kPlaceholderJobName) {
              return FailedPreconditionError(
                  StrCat("job ", c.job_id, " is '", job->name, "', not a placeholder: left alone"));
            }
            return slurm.CancelJob(c.job_id);
          },
          [&](const dc::DeleteRule& r) {
            return DeleteManaged(kube, k8s::Resource::DeviceTaintRules(), "", r.name,
                                 "DeviceTaintRule");
          },
          [&](const dc::DeleteQuota& q) {
            return DeleteManaged(kube, k8s::Resource::ResourceQuotas(), q.quota.namespace_name,
                                 q.quota.name, "ResourceQuota");
          },
          [&](const dc::DeletePriorityClass& p) {
            return DeleteManaged(kube, k8s::Resource::PriorityClasses(), "", p.name,
                                 "PriorityClass");
          },
          [&](const dc::CleanNode& c) -> StatusOr<WriteOutcome> {
            return RetryConflicts([&]() -> StatusOr<WriteOutcome> {
              auto node = kube.Get(k8s::Resource::Nodes(), "", c.node);
              if (!node.ok()) {
                if (k8s::IsNotFound(node.status())) return WriteOutcome::kUnchanged;
                return node.status();
              }
              const nlohmann::json& meta = (*node)["metadata"];
              nlohmann::json ops =
                  nlohmann::json::array({{{"op", "test"},
                                          {"path", "/metadata/resourceVersion"},
                                          {"value", k8s::StringAt(meta, "resourceVersion")}}});
              const size_t base = ops.size();
              auto drop = [&](const char* field, const std::vector<std::string>& keys) {
                if (!meta.contains(field) || !meta[field].is_object()) return;
                for (const std::string& k : keys) {
                  if (!meta[field].contains(k)) continue;
                  ops.push_back(
                      {{"op", "remove"},
                       {"path", StrCat("/metadata/", field, "/", k8s::JsonPointerSegment(k))}});
                }
              };
              drop("annotations", c.annotations);
              drop("labels", c.labels);
              if (node->contains("spec") && (*node)["spec"].contains("taints") &&
                  (*node)["spec"]["taints"].is_array()) {
                nlohmann::json kept = nlohmann::json::array();
                for (const nlohmann::json& t : (*node)["spec"]["taints"]) {
                  if (!OneOf(kNodeTaints, k8s::StringAt(t, "key"))) kept.push_back(t);
                }
                if (kept.size() != (*node)["spec"]["taints"].size()) {
                  ops.push_back({{"op", "replace"}, {"path", "/spec/taints"}, {"value", kept}});
                }
              }
              bool changed = false;
              if (ops.size() > base) {
                auto r =
                    kube.Patch(k8s::Resource::Nodes(), "", c.node, k8s::PatchType::kJsonPatch, ops);
                if (!r.ok()) return PatchStatus(r.status(), StrCat("node ", c.node));
                changed = true;
                node = *std::move(r);
              }
              // The conditions, through the status subresource, by index with a test of the
              // type at each (from the last, so the indices hold).
              nlohmann::json cond_ops = nlohmann::json::array();
              if (node->contains("status") && (*node)["status"].contains("conditions") &&
                  (*node)["status"]["conditions"].is_array()) {
                const nlohmann::json& conds = (*node)["status"]["conditions"];
                for (size_t i = conds.size(); i-- > 0;) {
                  const std::string type = k8s::StringAt(conds[i], "type");
                  if (!health::IsBridgeCondition(type)) continue;
                  const std::string path = StrCat("/status/conditions/", i);
                  cond_ops.push_back({{"op", "test"}, {"path", path + "/type"}, {"value", type}});
                  cond_ops.push_back({{"op", "remove"}, {"path", path}});
                }
              }
              if (!cond_ops.empty()) {
                auto r = kube.Patch(k8s::Resource::Nodes(), "", c.node, k8s::PatchType::kJsonPatch,
                                    cond_ops, {}, "status");
                if (!r.ok()) return PatchStatus(r.status(), StrCat("node ", c.node, "'s status"));
                changed = true;
              }
              return changed ? WriteOutcome::kChanged : WriteOutcome::kUnchanged;
            });
          },
          [&](const dc::SetAdminComment& c) -> StatusOr<WriteOutcome> {
            auto job = slurm.LoadJob(c.job_id);
            if (!job.ok()) {
              if (job.status().code() == StatusCode::kNotFound) return WriteOutcome::kUnchanged;
              return job.status();
            }
            // From the comment as it is now, not as planned: a user's change since is kept.
            const std::string want = dc::WithoutPreemptionRecord(job->admin_comment);
            if (want == job->admin_comment || !IsLive(*job)) return WriteOutcome::kUnchanged;
            return slurm.SetAdminComment(c.job_id, want);
          },
      },
      step);
}

StatusOr<Outcome> Decommissioner::Run(bool dry_run,
                                      const std::function<void(std::string_view)>& say) {
  if (!dry_run) RETURN_IF_ERROR(CheckNoBridgeActs());
  ASSIGN_OR_RETURN(Facts facts, ReadFacts());
  Outcome out;
  out.plan = dc::PlanDecommission(facts);
  for (const dc::NodeOutcome& o : out.plan.nodes) {
    say(StrCat(o.node, ": ", dc::HolderName(o.holder), " (", o.why, ")"));
  }
  if (out.plan.steps.empty()) say("nothing of the bridge is left");
  if (dry_run) {
    for (const Step& s : out.plan.steps) say(StrCat("would ", dc::DescribeStep(s)));
    for (const std::string& w : out.plan.warnings) say(StrCat("warning: ", w));
    return out;
  }
  bool protect_failed = false;
  for (const Step& s : out.plan.steps) {
    const bool protects =
        std::holds_alternative<dc::Cordon>(s) || std::holds_alternative<dc::DrainAs>(s);
    const std::string text = dc::DescribeStep(s);
    if (protect_failed && !protects) {
      say(StrCat("skipped: ", text, " (a cordon or drain before it failed)"));
      out.failed.emplace_back(text, AbortedError("not run: a protecting step failed"));
      continue;
    }
    StatusOr<WriteOutcome> r = RunStep(s);
    if (!r.ok()) {
      say(StrCat("failed: ", text, ": ", r.status().message()));
      out.failed.emplace_back(text, r.status());
      if (protects) protect_failed = true;
      continue;
    }
    if (*r == WriteOutcome::kChanged) ++out.changed;
    say(StrCat(*r == WriteOutcome::kChanged ? "done: " : "already so: ", text));
  }
  WaitForReleasedPods(out, say);
  for (const std::string& w : out.plan.warnings) say(StrCat("warning: ", w));
  RecordOutcomes(out);
  return out;
}

void Decommissioner::WaitForReleasedPods(Outcome& out,
                                         const std::function<void(std::string_view)>& say) {
  std::set<std::string> failed;
  for (const auto& [step, why] : out.failed) failed.insert(step);
  std::vector<dc::NamespacedName> pods;
  for (const Step& s : out.plan.steps) {
    const auto* r = std::get_if<dc::ReleaseReservation>(&s);
    if (r != nullptr && !failed.contains(dc::DescribeStep(s))) pods.push_back(r->pod);
  }
  auto present = [&] {
    std::vector<dc::NamespacedName> left;
    for (const dc::NamespacedName& p : pods) {
      auto got = opts_.kube->Get(k8s::Resource::Pods(), p.namespace_name, p.name);
      if (got.ok() || !k8s::IsNotFound(got.status())) left.push_back(p);
    }
    return left;
  };
  std::vector<dc::NamespacedName> left = present();
  if (left.empty()) return;
  say(StrCat("waiting up to ", opts_.release_wait.count() / 1000, " s for ", left.size(),
             " released reservation pod", left.size() == 1 ? "" : "s", " to end"));
  const auto deadline = std::chrono::steady_clock::now() + opts_.release_wait;
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    left = present();
  }
  for (const dc::NamespacedName& p : left) {
    const std::string text = StrCat("release reservation ", p.Key());
    say(StrCat("failed: ", text, ": the pod is still there after ",
               opts_.release_wait.count() / 1000, " s"));
    out.failed.emplace_back(text, DeadlineExceededError("the released pod is still there"));
  }
  if (left.empty()) say("every released reservation pod has ended");
}

void Decommissioner::RecordOutcomes(const Outcome& out) {
  if (opts_.events == nullptr) return;
  // A step names the node as the side it acts on does ("cordon node3 in Kubernetes",
  // "drain gpu3 in Slurm: ...").
  auto names = [](const std::string& step, const std::string& node) {
    return !node.empty() && (step.find(StrCat(" ", node, " ")) != std::string::npos ||
                             step.ends_with(StrCat(" ", node)) ||
                             step.find(StrCat(" ", node, ":")) != std::string::npos);
  };
  for (const dc::NodeOutcome& o : out.plan.nodes) {
    if (o.k8s_name.empty()) continue;  // no Node to record on
    std::string failed;
    for (const auto& [step, why] : out.failed) {
      if (!names(step, o.k8s_name) && !names(step, o.slurm_name)) continue;
      StrAppend(&failed, failed.empty() ? "" : "; ", step, ": ", why.message());
    }
    const std::string holder = StrCat(dc::HolderName(o.holder), " (", o.why, ")");
    if (failed.empty()) {
      opts_.events->Record(k8s::NodeRef(o.k8s_name), k8s::EventType::kNormal,
                           "BridgeDecommissioned",
                           StrCat("slurm-k8s-bridge decommissioned: the node is ", holder));
    } else {
      opts_.events->Record(
          k8s::NodeRef(o.k8s_name), k8s::EventType::kWarning, "DecommissionIncomplete",
          StrCat("the node is ", holder, "; failed: ", failed, " (run the decommission again)"));
    }
  }
}

int DecommissionMain(const config::Config& cfg, bool dry_run, bool force) {
  auto fail = [](std::string_view why) {
    std::fprintf(stderr, "slurm-k8s-bridge: decommission: %.*s\n", static_cast<int>(why.size()),
                 why.data());
    return 2;
  };
  auto rest = cfg.kubernetes.kubeconfig.empty()
                  ? k8s::DefaultRestConfig("")
                  : k8s::LoadKubeconfig(cfg.kubernetes.kubeconfig, "");
  if (!rest.ok()) return fail(StrCat("kubernetes configuration: ", rest.status().message()));
  rest->qps = cfg.kubernetes.qps;
  rest->burst = static_cast<int>(cfg.kubernetes.burst);
  auto kube = k8s::NewRestClient(*rest);
  if (!kube.ok()) return fail(StrCat("kubernetes client: ", kube.status().message()));
  slurm::LibSlurmClient slurm(slurm::LibSlurmClient::Options{
      .conf = cfg.slurm.conf, .call_timeout = cfg.slurm.call_timeout});
  k8s::ApiEventRecorder events(kube->get(), {.component = "slurm-k8s-bridge-decommission"});
  if (!dry_run) events.Start();
  Decommissioner d({.config = &cfg,
                    .kube = kube->get(),
                    .slurm = &slurm,
                    .clock = k8s::SystemClock::Get(),
                    .force = force,
                    .events = dry_run ? nullptr : &events});
  auto out = d.Run(dry_run, [&](std::string_view line) {
    std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
    std::fflush(stdout);
  });
  events.Stop();  // writes what is queued
  if (!out.ok()) return fail(out.status().ToString());
  if (out->failed.empty()) return 0;
  std::fprintf(stderr, "slurm-k8s-bridge: decommission: %zu of %zu steps failed; run it again\n",
               out->failed.size(), out->plan.steps.size());
  return 1;
}

}  // namespace skb::bridge::decommission

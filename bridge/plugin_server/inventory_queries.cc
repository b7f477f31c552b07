// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/inventory_queries.h"

#include <algorithm>
#include <set>

#include "bridge/api/frame.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/ownership.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/time_codec.h"
#include "src/plan/planner.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;

// Room left for the rest of a list_jobs answer (leader, frame, protobuf overhead).
constexpr size_t kJobsAnswerBudget = api::kMaxQueryResponseSize - 64 * 1024;

std::string DisplayId(const slurm::JobView& j) {
  if (j.het_job_id != 0) return StrCat(j.het_job_id, "+", j.het_job_offset);
  if (j.array_job_id != 0 && !j.array_task_str.empty()) {
    return StrCat(j.array_job_id, "_[", j.array_task_str, "]");
  }
  if (j.array_job_id != 0) return StrCat(j.array_job_id, "_", j.array_task_id);
  return StrCat(j.job_id);
}

// What bridgectl get jobs lists without --all: work that is queued or holds a node.
bool Live(const slurm::JobView& j) {
  return j.state == slurm::JobState::kPending || j.requeue_pending || j.HoldsNodes();
}

std::string GpuOwnerName(const devices::DeviceView& d) {
  switch (d.owner) {
    case devices::Owner::kSlurm:
      return d.job != 0 ? "slurm" : "idle";
    case devices::Owner::kKubernetes:
      return d.pods.empty() ? "held-for-k8s" : "k8s";
    default:
      return std::string(devices::OwnerName(d.owner));
  }
}

}  // namespace

void SummarizeGpus(const devices::Observation* obs, v1::NodeSummary* out) {
  if (obs == nullptr) {
    out->set_gpu_mode("node");
    out->set_gpu_mode_reason("gpu_sharing is off");
    return;
  }
  auto node = std::find_if(obs->nodes.begin(), obs->nodes.end(),
                           [&](const devices::NodeDevices& n) { return n.node == out->name(); });
  if (node == obs->nodes.end()) {
    out->set_gpu_mode("node");
    auto why = obs->node_granular.find(out->name());
    out->set_gpu_mode_reason(why != obs->node_granular.end()
                                 ? why->second
                                 : "not observed by the GPU-granular lane (not a paired node)");
    return;
  }
  out->set_gpu_mode("gpu");
  if (out->gpus() == 0) out->set_gpus(static_cast<int64_t>(node->devices.size()));
  if (out->gpu_model().empty()) out->set_gpu_model(node->model);
  const std::vector<devices::DeviceView> views = devices::Owners(*node);
  for (size_t i = 0; i < views.size(); ++i) {
    const devices::DeviceView& d = views[i];
    v1::GpuOwner* g = out->add_gpu_owners();
    g->set_index(node->devices[i].index);
    g->set_device(d.name);
    g->set_owner(GpuOwnerName(d));
    g->set_health(node->devices[i].OutWhy());
    for (const auto& p : d.pods) g->add_pods(p);
    if (d.placeholder != 0) {
      g->set_job_id(d.placeholder);
      for (const devices::Placeholder& p : node->placeholders) {
        if (p.job_id == d.placeholder) g->set_since_unix(ownership::ToUnix(p.start));
      }
    } else if (d.job != 0) {
      g->set_job_id(d.job);
      for (const devices::NodeJob& j : node->jobs) {
        if (j.view.job_id == d.job) g->set_since_unix(j.view.start_time);
      }
    }
  }
}

v1::NodeSummary Summarize(const inventory::ManagedNode& node, const config::Config& cfg,
                          Clock::TimePoint now) {
  v1::NodeSummary out;
  out.set_name(node.name);
  out.set_in_kubernetes(node.k8s.has_value());
  out.set_in_slurm(node.slurm.has_value());
  health::HealthVerdict verdict;
  if (node.k8s) {
    const inventory::K8sNode& k = *node.k8s;
    out.set_k8s_name(k.name);
    if (auto model = k.Label(kGpuProductLabel)) out.set_gpu_model(*model);
    verdict = health::AssessHealth(k, cfg.health, now);
    std::string h;
    for (const auto& sig : verdict.firing) StrAppend(&h, h.empty() ? "" : "; ", sig.description);
    if (h.empty()) {
      const auto* ready = k.FindCondition("Ready");
      h = ready == nullptr ? "Ready?" : (ready->status == "True" ? "Ready" : "NotReady");
      if (!verdict.pending.empty()) StrAppend(&h, " (", verdict.pending.size(), " pending)");
    }
    if (verdict.maintenance) StrAppend(&h, ", maintenance");
    out.set_k8s_health(h);
  } else {
    out.set_k8s_health("not in Kubernetes");
  }
  if (node.slurm) {
    const slurm::NodeView& s = *node.slurm;
    out.set_slurm_state(s.StateString());
    out.set_slurm_reason(s.reason);
    for (const auto& f : s.active_features) out.add_features(f);
  } else {
    out.set_slurm_state("not in Slurm");
  }
  out.set_gpus(node.Gpus());
  out.set_owner(std::string(plan::NodeOwnerName(plan::PlanOwner(node, cfg, now))));
  for (const auto& j : node.jobs) out.add_jobs(j.job_id);
  for (const auto& p : node.pods) out.add_pods(StrCat(p.namespace_name, "/", p.name));
  return out;
}

v1::JobSummary SummarizeJob(const slurm::JobView& j,
                            const std::map<std::string, std::string, std::less<>>& owners,
                            const config::Config& cfg, Clock::TimePoint now,
                            const ownership::GuaranteedJobs& guaranteed) {
  v1::JobSummary out;
  out.set_job_id(j.job_id);
  out.set_display_id(DisplayId(j));
  out.set_user(j.user_name);
  out.set_user_id(j.user_id);
  out.set_account(j.account);
  out.set_partition(j.partition);
  out.set_qos(j.qos);
  std::string state(slurm::JobStateName(j.state));
  if (j.completing) state += "+COMPLETING";
  if (j.requeue_pending) state += "+REQUEUING";
  out.set_state(state);
  out.set_state_reason(j.state_reason);
  std::set<std::string> seen;
  std::string owner;
  for (const auto& n : j.nodes) {
    out.add_nodes(n);
    // A job on a node the bridge does not see (not in the inventory): no owner to show.
    auto it = owners.find(n);
    const std::string o = it == owners.end() ? "-" : it->second;
    if (seen.insert(o).second) StrAppend(&owner, owner.empty() ? "" : ",", o);
  }
  out.set_owner(owner);
  out.set_gpus_per_node(j.gpus_per_node);
  const slurm::JobView* const self[] = {&j};
  const ownership::JobPolicy p = ownership::PolicyForWhole(self, cfg, now, guaranteed);
  if (cfg.lending.enabled) {
    out.set_preemptible(p.preemptible);
    out.set_preemptible_why(p.why);
  } else {
    out.set_preemptible(false);
    out.set_preemptible_why(
        StrCat("lending is off: the bridge preempts nothing (policy: ", p.why, ")"));
  }
  const std::vector<slurm::UnixTime> times = ownership::PreemptionTimes(j.admin_comment);
  out.set_preemptions(static_cast<uint32_t>(times.size()));
  out.set_preemptions_in_window(
      static_cast<uint32_t>(ownership::PreemptionsInWindow(j, cfg.lending, now)));
  if (!times.empty()) out.set_last_preempted_unix(times.back());
  out.set_restart_count(j.restart_count);
  out.set_start_time_unix(j.start_time);
  return out;
}

InventoryQueries::InventoryQueries(InventorySource source, const config::Config* cfg)
    : source_(std::move(source)), cfg_(*cfg) {}

bool InventoryQueries::Handle(const v1::Request& req, v1::Response* resp) const {
  if (req.has_list_nodes()) {
    ListNodes(resp->mutable_list_nodes());
    return true;
  }
  if (req.has_describe_node()) {
    DescribeNode(req.describe_node().name(), resp);
    return true;
  }
  if (req.has_list_jobs()) {
    ListJobs(req.list_jobs(), resp->mutable_list_jobs());
    return true;
  }
  return false;
}

void InventoryQueries::ListNodes(v1::ListNodesResponse* out) const {
  const Clock::TimePoint now = source_.clock->Now();
  inventory::Inventory inv = source_.snapshot();
  const std::optional<devices::Observation> obs =
      source_.devices ? source_.devices() : std::nullopt;
  for (const auto& n : inv.nodes()) {
    v1::NodeSummary* s = out->add_nodes();
    *s = Summarize(n, cfg_, now);
    SummarizeGpus(obs ? &*obs : nullptr, s);
  }
  out->set_leader(source_.leader());
  std::string why;
  out->set_ready(source_.ready(&why));
  out->set_ready_reason(why);
}

void InventoryQueries::ListJobs(const v1::ListJobsRequest& req, v1::ListJobsResponse* out) const {
  const Clock::TimePoint now = source_.clock->Now();
  inventory::Inventory inv = source_.snapshot();
  std::map<std::string, std::string, std::less<>> owners;
  for (const auto& n : inv.nodes()) owners[n.name] = Summarize(n, cfg_, now).owner();
  std::vector<const slurm::JobView*> jobs;
  std::shared_ptr<const std::vector<slurm::JobView>> all;
  if (source_.jobs) all = source_.jobs();
  if (all) {
    for (const auto& j : *all) jobs.push_back(&j);
  } else {
    std::set<uint32_t> seen;
    for (const auto& n : inv.nodes()) {
      for (const auto& j : n.jobs) {
        if (seen.insert(j.job_id).second) jobs.push_back(&j);
      }
    }
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const slurm::JobView* a, const slurm::JobView* b) { return a->job_id < b->job_id; });
  const ownership::GuaranteedJobs guaranteed =
      source_.guaranteed_jobs ? source_.guaranteed_jobs() : ownership::GuaranteedJobs{};
  size_t bytes = 0;
  uint32_t omitted = 0;
  for (const slurm::JobView* j : jobs) {
    if (!req.all() && !Live(*j)) continue;
    if (bytes > kJobsAnswerBudget) {
      ++omitted;
      continue;
    }
    v1::JobSummary* s = out->add_jobs();
    *s = SummarizeJob(*j, owners, cfg_, now, guaranteed);
    bytes += s->ByteSizeLong() + 8;
  }
  out->set_omitted(omitted);
  out->set_leader(source_.leader());
  std::string why;
  out->set_ready(source_.ready(&why));
  out->set_ready_reason(why);
}

void InventoryQueries::DescribeNode(const std::string& name, v1::Response* resp) const {
  const Clock::TimePoint now = source_.clock->Now();
  inventory::Inventory inv = source_.snapshot();
  const inventory::ManagedNode* node = inv.Find(name);
  if (node == nullptr) {
    for (const auto& n : inv.nodes()) {
      if (n.k8s && n.k8s->name == name) node = &n;
    }
  }
  if (node == nullptr) {
    resp->mutable_error()->set_code(v1::Error::NOT_FOUND);
    resp->mutable_error()->set_message(
        StrCat("node '", name, "' is neither a managed Kubernetes node (selector '",
               cfg_.kubernetes.node_selector, "') nor a Slurm node"));
    return;
  }
  v1::DescribeNodeResponse* out = resp->mutable_describe_node();
  *out->mutable_node() = Summarize(*node, cfg_, now);
  const std::optional<devices::Observation> obs =
      source_.devices ? source_.devices() : std::nullopt;
  SummarizeGpus(obs ? &*obs : nullptr, out->mutable_node());
  health::NodePlan plan = source_.plan(node->name);
  for (auto& line : plan.explanation) out->add_explanation(std::move(line));
  for (const auto& a : plan.actions) out->add_planned_actions(plan::ToString(a));
  if (plan.recheck_at) out->set_recheck_at(k8s::FormatTime(*plan.recheck_at));
  if (node->k8s) {
    for (const auto& c : node->k8s->conditions) {
      v1::ConditionView* v = out->add_conditions();
      v->set_type(c.type);
      v->set_status(c.status);
      v->set_reason(c.reason);
      v->set_message(c.message);
      v->set_last_transition_time(k8s::FormatTime(c.last_transition));
    }
    for (const auto& t : node->k8s->taints) {
      out->add_taints(inventory::TaintString(t));
    }
    out->set_unschedulable(node->k8s->unschedulable);
  }
}

}  // namespace skb::bridge

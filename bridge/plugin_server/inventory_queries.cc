#include "bridge/plugin_server/inventory_queries.h"

#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/ownership/ownership.h"
#include "src/plan/action.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string DisplayOwner(const inventory::ManagedNode& node, const health::HealthVerdict& verdict) {
  if (!node.k8s || !node.slurm) return "unknown";
  const slurm::NodeView& s = *node.slurm;
  if (s.drain && StartsWith(s.reason, plan::kLendReasonPrefix)) return "k8s";
  if (!verdict.firing.empty() || verdict.maintenance) return "unhealthy";
  if (s.DrainedByBridge()) return "unhealthy";
  if (s.base_state == skb::slurm::NodeBaseState::kDown || s.fail) return "unhealthy";
  return "slurm";
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
    out.set_gpus(k.gpu_allocatable > 0 ? k.gpu_allocatable : k.gpu_capacity);
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
    if (out.gpus() == 0) out.set_gpus(s.TotalGpus());
    for (const auto& f : s.active_features) out.add_features(f);
  } else {
    out.set_slurm_state("not in Slurm");
  }
  out.set_owner(cfg.lending.enabled && node.k8s && node.slurm
                    ? std::string(ownership::OwnerStateName(
                          ownership::PlanOwnership(node, cfg, now).state))
                    : DisplayOwner(node, verdict));
  if (out.owner() == "slurm" && !verdict.firing.empty()) out.set_owner("unhealthy");
  for (const auto& j : node.jobs) out.add_jobs(j.job_id);
  for (const auto& p : node.pods) out.add_pods(StrCat(p.namespace_name, "/", p.name));
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
  return false;
}

void InventoryQueries::ListNodes(v1::ListNodesResponse* out) const {
  const Clock::TimePoint now = source_.clock->Now();
  inventory::Inventory inv = source_.snapshot();
  for (const auto& n : inv.nodes()) *out->add_nodes() = Summarize(n, cfg_, now);
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
      out->add_taints(StrCat(t.key, t.value.empty() ? "" : "=", t.value, ":", t.effect));
    }
    out->set_unschedulable(node->k8s->unschedulable);
  }
}

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "src/plan/planner.h"

#include <algorithm>
#include <utility>

#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/ownership.h"
#include "src/plan/features.h"

namespace skb::plan {
namespace {

// The owner of a node the ownership planner does not manage (lending off, or one side
// missing): Slurm's, unless something keeps Slurm off it.
NodeOwner HealthOwner(const inventory::ManagedNode& node, const config::Config& cfg,
                      Clock::TimePoint now) {
  if (!node.k8s || !node.slurm) return NodeOwner::kUnknown;
  const slurm::NodeView& s = *node.slurm;
  if (s.DrainedBy() == slurm::DrainOrigin::kBridgeLend) return NodeOwner::kKubernetes;
  const health::HealthVerdict verdict = health::AssessHealth(*node.k8s, cfg.health, now);
  if (!verdict.firing.empty() || verdict.maintenance) return NodeOwner::kUnhealthy;
  if (s.DrainedByBridge()) return NodeOwner::kUnhealthy;
  if (s.base_state == slurm::NodeBaseState::kDown || s.fail) return NodeOwner::kUnhealthy;
  return NodeOwner::kSlurm;
}

// The ownership state machine's state as the node's owner; a Slurm-owned node with a firing
// health signal shows as unhealthy.
NodeOwner Owner(const inventory::ManagedNode& node, const config::Config& cfg, Clock::TimePoint now,
                ownership::OwnerState state) {
  switch (state) {
    case ownership::OwnerState::kDisabled:
    case ownership::OwnerState::kUnknown:
      return NodeOwner::kUnknown;
    case ownership::OwnerState::kSlurm:
      return health::AssessHealth(*node.k8s, cfg.health, now).firing.empty()
                 ? NodeOwner::kSlurm
                 : NodeOwner::kUnhealthy;
    case ownership::OwnerState::kLending:
      return NodeOwner::kLending;
    case ownership::OwnerState::kKubernetes:
      return NodeOwner::kKubernetes;
    case ownership::OwnerState::kReturning:
      return NodeOwner::kReturning;
    case ownership::OwnerState::kSwapping:
      return NodeOwner::kSwapping;
    case ownership::OwnerState::kGpuShared:
      return NodeOwner::kGpuShared;
  }
  return NodeOwner::kUnknown;
}

bool Managed(const inventory::ManagedNode& node, const config::Config& cfg) {
  return cfg.lending.enabled && node.k8s && node.slurm;
}

}  // namespace

std::string_view HandoverName(Handover h) {
  switch (h) {
    case Handover::kNodeLane:
      return "node-lane";
    case Handover::kWinding:
      return "winding";
    case Handover::kHoldsWanted:
      return "holds-wanted";
    case Handover::kHandedOver:
      return "handed-over";
  }
  return "node-lane";
}

NodePlan PlanNode(const inventory::ManagedNode& node, const config::Config& cfg,
                  Clock::TimePoint now, PlanOptions options) {
  NodePlan health = health::PlanNodeHealth(node, cfg.health, now);
  for (Action& a : health.actions) {
    a.chain = IsStatusLaneCondition(a) ? Chain::kStatus : Chain::kHealth;
  }
  std::optional<Action> features = PlanFeatures(node, cfg.features);
  if (features) features->chain = Chain::kFeatures;
  if (!cfg.lending.enabled) {
    if (features) health.actions.push_back(std::move(*features));
    health.owner = HealthOwner(node, cfg, now);
    return health;
  }
  ownership::OwnershipPlan own =
      ownership::PlanOwnership(node, cfg, now, options.min_reservation_update_interval);
  NodePlan plan;
  plan.owner = Managed(node, cfg) ? Owner(node, cfg, now, own.state) : HealthOwner(node, cfg, now);
  plan.handover = own.handover;
  plan.handover_why = std::move(own.handover_why);
  plan.explanation.push_back(StrCat("owner: ", ownership::OwnerStateName(own.state)));
  for (auto& line : own.explanation) plan.explanation.push_back(std::move(line));
  for (auto& line : health.explanation) plan.explanation.push_back(std::move(line));
  // A lend drain replaces a health drain, never the other way round: when ownership drains,
  // health neither drains nor resumes (a resume first would open the node to Slurm between
  // the two). Otherwise the health chain runs first: a GPU fault drains the node before
  // anything ownership does, and nothing ownership fails at holds it back (RunChains).
  const bool own_drains = std::any_of(own.actions.begin(), own.actions.end(),
                                      [](const Action& a) { return a.Is<plan::DrainSlurmNode>(); });
  for (auto& a : health.actions) {
    if (a.chain != Chain::kHealth) continue;
    if (own_drains && (a.Is<plan::DrainSlurmNode>() || a.Is<plan::ResumeSlurmNode>())) {
      continue;
    }
    plan.actions.push_back(std::move(a));
  }
  for (auto& a : own.actions) {
    a.chain = Chain::kOwnership;
    plan.actions.push_back(std::move(a));
  }
  for (auto& a : health.actions) {
    if (a.chain == Chain::kStatus) plan.actions.push_back(std::move(a));
  }
  if (features) plan.actions.push_back(std::move(*features));
  plan.recheck_at = own.recheck_at;
  plan.RecheckBy(health.recheck_at);
  return plan;
}

NodeOwner PlanOwner(const inventory::ManagedNode& node, const config::Config& cfg,
                    Clock::TimePoint now) {
  if (!Managed(node, cfg)) return HealthOwner(node, cfg, now);
  return Owner(node, cfg, now, ownership::PlanOwnership(node, cfg, now).state);
}

std::string_view NodeOwnerName(NodeOwner o) {
  switch (o) {
    case NodeOwner::kUnknown:
      return "unknown";
    case NodeOwner::kSlurm:
      return "slurm";
    case NodeOwner::kKubernetes:
      return "k8s";
    case NodeOwner::kLending:
      return "lending";
    case NodeOwner::kReturning:
      return "returning";
    case NodeOwner::kSwapping:
      return "swapping";
    case NodeOwner::kGpuShared:
      return "gpu-shared";
    case NodeOwner::kUnhealthy:
      return "unhealthy";
  }
  return "unknown";
}

NodeOwner CountedOwner(NodeOwner o) { return o == NodeOwner::kSwapping ? NodeOwner::kSlurm : o; }

}  // namespace skb::plan

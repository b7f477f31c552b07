// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/ownership.h"

#include "src/base/strings.h"
#include "src/ownership/internal/facts.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"

namespace skb::ownership {
namespace {

using internal::HasFinalizer;
using internal::IsOurReservation;
using internal::PodName;
using internal::Ref;
using internal::ReservationNamespace;
using inventory::GpuPod;
using inventory::ManagedNode;
using plan::EventType;

// The Kubernetes node was deleted (or is no longer selected): the garbage collector
// deletes its reservation (owner reference), and our finalizer would keep that pod
// forever. Its GPUs count nowhere now, so it is released -- once the executor has seen
// at the source that the node is really gone (not merely unselected).
void ReleaseReservationsOfDeletedNode(const ManagedNode& node, const config::Config& cfg,
                                      OwnershipPlan* plan) {
  const std::string& ns = ReservationNamespace(cfg);
  for (const GpuPod& p : node.pods) {
    if (!IsOurReservation(p, ns) || !p.terminating || !HasFinalizer(p)) continue;
    plan::Action a;
    a.op = plan::ReleaseReservationPod{.pod = Ref(p), .check = plan::ReleaseCheck::kNodeGone};
    a.node = node.name;
    if (p.node_name != node.name) a.k8s_node = p.node_name;  // the node object is gone
    a.event_type = EventType::kNormal;
    a.event_reason = "ReservationReleased";
    a.event_message = StrCat("Released reservation ", PodName(p), ": its Kubernetes node ",
                             node.name, " no longer exists");
    plan->explanation.push_back(
        StrCat("reservation ", PodName(p), " is being deleted and its node is gone: released"));
    plan->actions.push_back(std::move(a));
  }
}

}  // namespace

std::string_view OwnerStateName(OwnerState s) {
  switch (s) {
    case OwnerState::kDisabled:
      return "disabled";
    case OwnerState::kUnknown:
      return "unknown";
    case OwnerState::kSlurm:
      return "slurm";
    case OwnerState::kLending:
      return "lending";
    case OwnerState::kKubernetes:
      return "k8s";
    case OwnerState::kReturning:
      return "returning";
    case OwnerState::kSwapping:
      return "swapping";
    case OwnerState::kGpuShared:
      return "gpu-shared";
  }
  return "unknown";
}

OwnershipPlan PlanOwnership(const ManagedNode& node, const config::Config& cfg,
                            Clock::TimePoint now, Clock::Duration min_update_interval) {
  OwnershipPlan plan;
  if (!cfg.lending.enabled) {
    plan.state = OwnerState::kDisabled;
    plan.explanation.push_back("lending is disabled (lending.enabled): Slurm keeps every node");
    return plan;
  }
  if (node.gpu_sharing.leaving) {
    // Still the device lane's: its placeholders and holds go before a reservation may come
    // (kube-scheduler would not allocate held devices to it).
    plan.state = OwnerState::kGpuShared;
    plan.handover = plan::Handover::kHandedOver;
    plan.explanation.push_back(StrCat("leaving GPU sharing: the device lane winds down first (",
                                      node.gpu_sharing.why, ")"));
    return plan;
  }
  if (!node.k8s) {
    plan.explanation.push_back("not a Kubernetes node (or not selected): nothing to do");
    ReleaseReservationsOfDeletedNode(node, cfg, &plan);
    return plan;
  }
  if (!node.slurm) {
    plan.explanation.push_back("Slurm has no node of this name: nothing to do");
    return plan;
  }
  internal::Facts f = internal::Observe(node, cfg, now, min_update_interval);
  internal::Planner(f, &plan).Run();
  return plan;
}

}  // namespace skb::ownership

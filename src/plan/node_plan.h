// SPDX-License-Identifier: Apache-2.0
// What the planner decided for one node: the owner it shows, the actions that get the node
// there, when to look again, and why (one line per fact or rule considered).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/plan/action.h"

namespace skb::plan {

// Who holds a node, as bridgectl and the metrics show it (NodeOwnerName): Slurm, Kubernetes
// (lent), a lend or a return under way, a reservation being swapped, the device lane's
// (shared GPU by GPU), kept from both by a health signal or a drain, or unknown (one side
// does not know the node).
enum class NodeOwner {
  kUnknown,
  kSlurm,
  kKubernetes,
  kLending,
  kReturning,
  kSwapping,
  kGpuShared,
  kUnhealthy,
};
// "unknown", "slurm", "k8s", "lending", "returning", "swapping", "gpu-shared", "unhealthy".
std::string_view NodeOwnerName(NodeOwner o);
// The owner a node counts under in the per-owner totals (skb_nodes, skb_gpus): a node whose
// reservation is being swapped stays Slurm's.
NodeOwner CountedOwner(NodeOwner o);

// Which lane manages a node of gpu_sharing (docs/gpu-granular.md "Switching modes"): the
// node lane (ownership) lends it whole, the device lane shares it GPU by GPU, and a node
// passes from one to the other only once the lane that had it holds nothing there.
enum class Handover {
  kNodeLane,     // not eligible for GPU sharing: the node lane's
  kWinding,      // eligible: the node lane finishes what it has in flight (a lend, a return)
  kHoldsWanted,  // eligible: the node lane waits for the device lane to hold every GPU,
                 // then retires its reservation
  kHandedOver,   // the device lane's: the node lane does nothing there
};
std::string_view HandoverName(Handover h);  // "node-lane", "winding", "holds-wanted", ...

struct NodePlan {
  // Who holds the node. Set by PlanNode (src/plan/planner.h); kUnknown in a planner's
  // partial plan.
  NodeOwner owner = NodeOwner::kUnknown;
  std::vector<Action> actions;
  // Plan this node again at this time even if nothing changes (a grace period or a
  // deadline ends).
  std::optional<Clock::TimePoint> recheck_at;
  // Asks for a recheck by `t` (nullopt: none): recheck_at becomes the earlier of the two.
  void RecheckBy(std::optional<Clock::TimePoint> t) { KeepEarliest(&recheck_at, t); }
  // Why the node is in its state: one line per fact or rule considered (bridgectl describe).
  std::vector<std::string> explanation;
  // gpu_sharing: which lane has the node, and while it is not handed over yet, why.
  Handover handover = Handover::kNodeLane;
  std::string handover_why;
};

}  // namespace skb::plan

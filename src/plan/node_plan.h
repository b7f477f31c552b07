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
  // Who holds the node, as bridgectl and the metrics show it: "slurm", "k8s", "lending",
  // "returning", "swapping", "gpu-shared" (the device lane's), "unhealthy" or "unknown" (one
  // side does not know the node).
  // Set by PlanNode (src/plan/planner.h); empty in a planner's partial plan.
  std::string owner;
  std::vector<Action> actions;
  // Plan this node again at this time even if nothing changes (a grace period or a
  // deadline ends).
  std::optional<Clock::TimePoint> recheck_at;
  // Why the node is in its state: one line per fact or rule considered (bridgectl describe).
  std::vector<std::string> explanation;
  // gpu_sharing: which lane has the node, and while it is not handed over yet, why.
  Handover handover = Handover::kNodeLane;
  std::string handover_why;
};

}  // namespace skb::plan

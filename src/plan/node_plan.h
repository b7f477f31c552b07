// What the planner decided for one node: the owner it shows, the actions that get the node
// there, when to look again, and why (one line per fact or rule considered).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/plan/action.h"

namespace skb::plan {

struct NodePlan {
  // Who holds the node, as bridgectl and the metrics show it: "slurm", "k8s", "lending",
  // "returning", "swapping", "unhealthy" or "unknown" (one side does not know the node).
  // Set by PlanNode (src/plan/planner.h); empty in a planner's partial plan.
  std::string owner;
  std::vector<Action> actions;
  // Plan this node again at this time even if nothing changes (a grace period or a
  // deadline ends).
  std::optional<Clock::TimePoint> recheck_at;
  // Why the node is in its state: one line per fact or rule considered (bridgectl describe).
  std::vector<std::string> explanation;
};

}  // namespace skb::plan

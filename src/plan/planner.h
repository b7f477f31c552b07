// SPDX-License-Identifier: Apache-2.0
// The planner of one node: composes the node-ownership (src/ownership), health
// (src/health) and feature (src/plan/features.h) planners into one plan. Pure: a function
// of (node, config, now); the daemon executes the plan, bridgectl shows it, the metrics
// count its owner. The status lane asks for the conditions alone:
// health::PlanNodeConditions.
//
//   plan::NodePlan p = plan::PlanNode(node, cfg, clock.Now());
//   for (const plan::Action& a : p.actions) executor.Execute(a);
//   if (p.recheck_at) queue.AddAt(node.name, *p.recheck_at);
#pragma once

#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/plan/action.h"
#include "src/plan/node_plan.h"

namespace skb::plan {

struct PlanOptions {
  // A floor under lending.reservation_update_interval that the caller derives from the
  // cluster's size (see ownership::PlanOwnership).
  Clock::Duration min_reservation_update_interval{};
};

// Ownership first (a lend's drain replaces a health drain, never the other way round),
// then health, then features; `recheck_at` is the earliest any of them asks for.
NodePlan PlanNode(const inventory::ManagedNode& node, const config::Config& cfg,
                  Clock::TimePoint now, PlanOptions options = {});

// The node's owner alone (bridgectl's inventory): as PlanNode's `owner`, without planning
// the actions.
NodeOwner PlanOwner(const inventory::ManagedNode& node, const config::Config& cfg,
                    Clock::TimePoint now);

}  // namespace skb::plan

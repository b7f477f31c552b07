// SPDX-License-Identifier: Apache-2.0
// One pass of the GPU-granular lane over every shared node: continue every move in flight
// and restore missing holds (PlanNode), then start a give for each unschedulable GPU pod
// that no move serves yet (ChooseNode, PlanGive), highest priority first. Pure.
//
//   PassPlan p = PlanPass(observation.nodes, world.pending, cfg, now);
//   for (auto& [node, actions] : p.actions) execute in order, stop at the first error;
//
// The actions are DeviceActions (device_plan.h: one struct per kind, in a std::variant),
// carried out by the device lane's executor (bridge/reconcile/device_lane.h).
//
// At most one give starts per node per pass (a node with a give in flight is not chosen
// again until its placeholder runs), so two pods never count the same idle GPUs.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/devices/device_plan.h"

namespace skb::devices {

struct PassPlan {
  std::map<std::string, std::vector<DeviceAction>> actions;  // Slurm node -> in order
  std::map<std::string, std::vector<Violation>> violations;  // Slurm node -> devices
  std::map<std::string, std::string> gives;                  // pod -> node a give started on
  std::map<std::string, std::string> waiting;                // pod -> why no give (yet)
  // The earliest of the nodes' NodePlan::recheck_at: plan again then.
  std::optional<Clock::TimePoint> recheck_at;
};

PassPlan PlanPass(std::vector<NodeDevices> nodes, std::span<const PendingPod> pending,
                  const config::Config& cfg, Clock::TimePoint now);

}  // namespace skb::devices

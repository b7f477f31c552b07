// SPDX-License-Identifier: Apache-2.0
// What the GPU-granular lane does on a node switching modes (docs/gpu-granular.md "Switching
// modes"); the node lane's half is in src/ownership (ownership.h). Pure.
//
//   entering  the node lane asks for holds (plan::Handover::kHoldsWanted) before it retires
//             its reservation: every GPU of the node gets the bridge's hold, whatever runs
//             on it (a hold keeps only new allocations off). Nothing else is planned there
//             until the node is handed over.
//   leaving   the node is no longer eligible but the lane has placeholders or holds there:
//             gives in flight are cancelled; GPUs lent to Kubernetes are held again, and once
//             no allocated claim is left on the node, their placeholders end; with no
//             placeholder left and no device of it published any more, every hold goes
//             and the node lane takes the node. While the driver still publishes a device
//             (a GPU lost from a slice: the mapping fails, the rest is still allocatable)
//             every hold stays: the node is Slurm's alone until it maps again.
//
//   PassPlan p = PlanPass(o.nodes, w.pending, cfg, now);
//   PlanModeSwitches(o, &p);
#pragma once

#include <vector>

#include "src/devices/device_plan.h"
#include "src/devices/observe.h"
#include "src/devices/pass.h"

namespace skb::devices {

// A node being handed over: a hold on each of its GPUs that has none.
std::vector<DeviceAction> PlanHoldAll(const NodeDevices& node);

// A node leaving GPU sharing (Observation::leaving): the next steps of its wind-down, in
// order; empty while it waits for the pods on its lent GPUs to end.
std::vector<DeviceAction> PlanLeave(const NodeDevices& node);

// Adds the actions of the observation's handing_over and leaving nodes to `plan`.
void PlanModeSwitches(const Observation& o, PassPlan* plan);

}  // namespace skb::devices

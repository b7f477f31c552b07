// SPDX-License-Identifier: Apache-2.0
// From the k8s client's typed views (k8s/node_info.h, pod_info.h) to the core's plain
// values (src/inventory): the boundary between "what the apiserver said" and "what the
// planner decides on". Pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/inventory/managed_node.h"

namespace skb::bridge {

// The label marking the bridge's reservation pods is ownership::kRoleLabel.

// A condition whose lastTransitionTime cannot be parsed gets the epoch (its grace, if any,
// counts as long over: a bad signal with a broken timestamp is not ignored).
inventory::K8sNode ToK8sNode(const k8s::NodeInfo& node);

// The pod as the inventory keeps it, or nullopt when it requests no GPU.
std::optional<inventory::GpuPod> ToGpuPod(const k8s::PodInfo& pod);
// The same view whatever it requests (gpus 0 for none): a pod asking GPUs through
// ResourceClaims alone, which quotas count.
inventory::GpuPod ToPod(const k8s::PodInfo& pod);

}  // namespace skb::bridge

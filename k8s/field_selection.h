// SPDX-License-Identifier: Apache-2.0
// Transform functions for informers (InformerOptions::transform): keep only the fields the
// bridge reads through node_info.h / pod_info.h, so the cache holds a fraction of each
// object. Safe because the bridge writes objects it does not own only through patches,
// never by sending a cached (trimmed) object back.
#pragma once

#include <nlohmann/json.hpp>

namespace skb::k8s {

// metadata (name, namespace, uid, resourceVersion, creation/deletionTimestamp, labels,
// annotations except kubectl's last-applied-configuration, finalizers), spec
// (unschedulable, taints), status (conditions without heartbeat times; capacity and
// allocatable of cpu, memory, pods and extended resources such as nvidia.com/gpu). Anything
// else, managedFields and images included, is dropped.
nlohmann::json SelectNodeFields(nlohmann::json&& node);

// metadata as for nodes plus ownerReferences; spec (nodeName, schedulerName, priority,
// priorityClassName, terminationGracePeriodSeconds, nodeSelector, affinity.nodeAffinity,
// tolerations without tolerationSeconds, containers and initContainers reduced to name +
// resources + restartPolicy: a restartable init container is a sidecar, counted with the
// containers; resourceClaims: name, resourceClaimName, resourceClaimTemplateName); status
// (phase, conditions without probe times, resourceClaimStatuses).
nlohmann::json SelectPodFields(nlohmann::json&& pod);

// Dynamic Resource Allocation (resource.k8s.io/v1), for GPU-granular sharing
// (src/devices/k8s_devices.h reads the results):
// ResourceSlice: metadata as for nodes; spec (driver, nodeName, pool, devices reduced to
// name + attributes). Capacities, counters and node selection are dropped.
nlohmann::json SelectResourceSliceFields(nlohmann::json&& slice);
// ResourceClaim: metadata as for pods; spec.devices.requests (name, exactly,
// firstAvailable: what a pending claim asks for); status (allocation.devices.results
// reduced to request, driver, pool, device, adminAccess; reservedFor). The spec's
// constraints and configuration, the allocation's node selector and device configuration,
// and status.devices are dropped.
nlohmann::json SelectResourceClaimFields(nlohmann::json&& claim);
// DeviceTaintRule: metadata as for nodes; spec (deviceSelector, taint). The status (the
// eviction controller's condition) is dropped.
nlohmann::json SelectDeviceTaintRuleFields(nlohmann::json&& rule);

}  // namespace skb::k8s

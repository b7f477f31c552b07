// SPDX-License-Identifier: Apache-2.0
// The informers of GPU-granular sharing (DRA nodes), run by the controller when
// gpu_sharing.enabled: the GPU driver's ResourceSlices, every ResourceClaim, and the bridge's
// own DeviceTaintRules, each trimmed to what src/devices/k8s_devices.h reads.
//
//   k8s::Informer slices(kube, ResourceSliceInformerOptions(cfg));
//   auto by_node = devices::SlicesByNode(Objects(slices.List()), cfg.gpu_sharing.driver);
#pragma once

#include <string>
#include <vector>

#include "k8s/informer.h"
#include "k8s/kube_client.h"
#include "src/base/status.h"
#include "src/config/config.h"

namespace skb::bridge {

// ResourceSlices of gpu_sharing.driver only (field selector spec.driver).
k8s::InformerOptions ResourceSliceInformerOptions(const config::Config& cfg);
// All ResourceClaims, every namespace: the apiserver offers no field selector on the
// allocation or the driver, and a claim names its devices' driver only once allocated.
k8s::InformerOptions ResourceClaimInformerOptions();
// The bridge's DeviceTaintRules (label app.kubernetes.io/managed-by=slurm-k8s-bridge).
k8s::InformerOptions DeviceTaintRuleInformerOptions();

// What GPU-granular sharing needs and this apiserver does not serve ("resourceslices",
// "resourceclaims", "devicetaintrules" of resource.k8s.io/v1): one list of each, limit 1; a
// resource not served answers 404. Empty when all are served. Other failures (apiserver
// down, RBAC) are returned: they say nothing about what is served.
StatusOr<std::vector<std::string>> UnservedDeviceResources(k8s::KubeClient* kube);

}  // namespace skb::bridge

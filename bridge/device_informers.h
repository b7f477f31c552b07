// The informers of GPU-granular sharing (DRA nodes), run by the controller when
// gpu_sharing.enabled: the GPU driver's ResourceSlices, every ResourceClaim, and the bridge's
// own DeviceTaintRules, each trimmed to what src/devices/k8s_devices.h reads.
//
//   k8s::Informer slices(kube, ResourceSliceInformerOptions(cfg));
//   auto by_node = devices::SlicesByNode(Objects(slices.List()), cfg.gpu_sharing.driver);
#pragma once

#include "k8s/informer.h"
#include "src/config/config.h"

namespace skb::bridge {

// ResourceSlices of gpu_sharing.driver only (field selector spec.driver).
k8s::InformerOptions ResourceSliceInformerOptions(const config::Config& cfg);
// All ResourceClaims, every namespace: the apiserver offers no field selector on the
// allocation or the driver, and a claim names its devices' driver only once allocated.
k8s::InformerOptions ResourceClaimInformerOptions();
// The bridge's DeviceTaintRules (label app.kubernetes.io/managed-by=slurm-k8s-bridge).
k8s::InformerOptions DeviceTaintRuleInformerOptions();

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "bridge/device_informers.h"

#include "k8s/field_selection.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "src/ownership/schema.h"

namespace skb::bridge {

k8s::InformerOptions ResourceSliceInformerOptions(const config::Config& cfg) {
  return {.resource = k8s::Resource::ResourceSlices(),
          .field_selector = StrCat("spec.driver=", cfg.gpu_sharing.driver),
          .transform = k8s::SelectResourceSliceFields};
}

k8s::InformerOptions ResourceClaimInformerOptions() {
  return {.resource = k8s::Resource::ResourceClaims(), .transform = k8s::SelectResourceClaimFields};
}

k8s::InformerOptions DeviceTaintRuleInformerOptions() {
  return {.resource = k8s::Resource::DeviceTaintRules(),
          .label_selector = StrCat(ownership::kManagedByLabel, "=", devices::kManagedByValue),
          .transform = k8s::SelectDeviceTaintRuleFields};
}

StatusOr<std::vector<std::string>> UnservedDeviceResources(k8s::KubeClient* kube) {
  std::vector<std::string> unserved;
  for (const k8s::Resource& r : {k8s::Resource::ResourceSlices(), k8s::Resource::ResourceClaims(),
                                 k8s::Resource::DeviceTaintRules()}) {
    k8s::ListOptions one;
    one.limit = 1;
    auto list = kube->List(r, "", one);
    if (list.ok()) continue;
    if (list.status().code() != StatusCode::kNotFound) return list.status();
    unserved.push_back(r.Name());
  }
  return unserved;
}

}  // namespace skb::bridge

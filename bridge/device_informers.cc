#include "bridge/device_informers.h"

#include "k8s/field_selection.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"

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

}  // namespace skb::bridge

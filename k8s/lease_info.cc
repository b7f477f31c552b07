// SPDX-License-Identifier: Apache-2.0
#include "k8s/lease_info.h"

namespace skb::k8s {

StatusOr<LeaseInfo> ParseLease(const nlohmann::json& obj) {
  LeaseInfo l;
  ASSIGN_OR_RETURN(l.meta, ReadObjectMeta(obj, "lease", &l.issues));
  FieldReader spec = FieldReader(obj, "", &l.issues).Sub("spec");
  l.holder_identity = spec.String("holderIdentity");
  l.lease_duration_seconds = spec.Int("leaseDurationSeconds");
  l.acquire_time = spec.String("acquireTime");
  l.renew_time = spec.String("renewTime");
  l.lease_transitions = spec.Int("leaseTransitions").value_or(0);
  return l;
}

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// A typed view of a coordination.k8s.io/v1 Lease (leader election).
#pragma once

#include <optional>
#include <string>

#include "k8s/object_meta.h"

namespace skb::k8s {

struct LeaseInfo {
  ObjectMeta meta;
  std::string holder_identity;
  std::optional<int64_t> lease_duration_seconds;
  std::string acquire_time;  // MicroTime, "2026-01-01T00:00:00.000000Z"
  std::string renew_time;
  int64_t lease_transitions = 0;
  std::vector<FieldIssue> issues;
};

StatusOr<LeaseInfo> ParseLease(const nlohmann::json& obj);

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// What the src/devices tests share: one fixed "now", a config with GPU sharing on, and a
// written condition as read back.
#pragma once

#include "src/config/config.h"
#include "src/inventory/k8s_node.h"
#include "src/ownership/time_codec.h"
#include "src/plan/action.h"

namespace skb::devices::test_support {

inline const Clock::TimePoint kNow = ownership::FromUnix(1'700'000'000);

// The condition a SetNodeCondition of `s` leaves on the node, as the next pass reads it.
inline inventory::NodeCondition AsWritten(const plan::ConditionSpec& s) {
  return {.type = s.type, .status = s.status, .reason = s.reason, .message = s.message};
}

inline config::Config SharingOn() {
  config::Config cfg;
  cfg.gpu_sharing.enabled = true;
  return cfg;
}

}  // namespace skb::devices::test_support

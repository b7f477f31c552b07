// SPDX-License-Identifier: Apache-2.0
// What the src/devices tests share: one fixed "now" and a config with GPU sharing on.
#pragma once

#include "src/config/config.h"
#include "src/ownership/time_codec.h"

namespace skb::devices::test_support {

inline const Clock::TimePoint kNow = ownership::FromUnix(1'700'000'000);

inline config::Config SharingOn() {
  config::Config cfg;
  cfg.gpu_sharing.enabled = true;
  return cfg;
}

}  // namespace skb::devices::test_support

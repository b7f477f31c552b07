// SPDX-License-Identifier: Apache-2.0
// When a node lent to Kubernetes goes back to Slurm: once no Kubernetes GPU pod has used it
// for lending.cooldown, it has been lent for lending.min_lend_time, and it is healthy. The
// node planner's return flow (return.cc), the device planner (a lent GPU, devices/) and the
// trace simulator (bench/sim) ask this; a reclaim for guaranteed quotas returns a node
// without it.
//
//   ReturnDecision d = ShouldReturn(lent_at, idle_since, gpu_pods, healthy, cfg.lending, now);
//   // d.now: return it now; else d.at, when set: plan again then. d.why says which:
//   // "returns to Slurm in 60s (cool-down)"
#pragma once

#include <optional>
#include <string>

#include "src/base/clock.h"
#include "src/ownership/lending_config.h"

namespace skb::ownership {

struct ReturnDecision {
  bool now = false;
  // When it may return if nothing changes (set when !now and a time is the only obstacle).
  std::optional<Clock::TimePoint> at;
  std::string why;
};

// A lent node returns when no Kubernetes GPU pod has been on it for `cooldown` (counted
// from `idle_since`), it has been lent for `min_lend_time`, and it is healthy.
ReturnDecision ShouldReturn(Clock::TimePoint lent_at, std::optional<Clock::TimePoint> idle_since,
                            bool gpu_pods_present, bool healthy, const LendingConfig& cfg,
                            Clock::TimePoint now);

}  // namespace skb::ownership

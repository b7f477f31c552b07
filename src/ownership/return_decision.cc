// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/return_decision.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {

Clock::TimePoint ReturnDue(Clock::TimePoint lent_at, Clock::TimePoint idle_since,
                           const LendingConfig& cfg) {
  return std::max(idle_since + cfg.cooldown, lent_at + cfg.min_lend_time);
}

ReturnDecision ShouldReturn(Clock::TimePoint lent_at, std::optional<Clock::TimePoint> idle_since,
                            bool gpu_pods_present, bool healthy, const LendingConfig& cfg,
                            Clock::TimePoint now, Clock::Duration lead) {
  ReturnDecision d;
  if (gpu_pods_present) {
    d.why = "Kubernetes GPU pods use the node";
    return d;
  }
  if (!healthy) {
    d.why = "the node is unhealthy: it returns to Slurm once healthy";
    return d;
  }
  if (!idle_since) {
    d.why = "the cool-down has not started";
    return d;
  }
  const Clock::TimePoint due = ReturnDue(lent_at, *idle_since, cfg);
  const Clock::TimePoint begins = std::max({due - lead, *idle_since, lent_at});
  if (now < begins) {
    d.at = begins;
    d.why =
        StrCat("returns to Slurm in ", FormatSeconds(due - now),
               *idle_since + cfg.cooldown >= lent_at + cfg.min_lend_time ? " (cool-down)"
                                                                         : " (minimum lend time)");
    return d;
  }
  d.now = true;
  d.why = StrCat("no Kubernetes GPU pod for ", FormatSeconds(now - *idle_since), ", lent for ",
                 FormatSeconds(now - lent_at));
  if (now < due) StrAppend(&d.why, "; Slurm's in ", FormatSeconds(due - now));
  return d;
}

}  // namespace skb::ownership

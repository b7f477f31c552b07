// SPDX-License-Identifier: Apache-2.0
// When a node lent to Kubernetes goes back to Slurm: once no Kubernetes GPU pod has used it
// for lending.cooldown, it has been lent for lending.min_lend_time, and it is healthy. The
// node planner's return flow (return.cc), the device planner (a lent GPU, devices/) and the
// trace simulator (bench/sim) ask this; a reclaim for guaranteed quotas returns a node
// without it.
//
// A return takes steps before the resources are Slurm's (a reservation that must run, holds
// that must settle): with a `lead`, the return begins that long before it is due, so that
// they are Slurm's when the cool-down ends, not a lead later. ReturnDue says when that is.
//
//   ReturnDecision d = ShouldReturn(lent_at, idle_since, gpu_pods, healthy, cfg.lending, now,
//                                   /*lead=*/std::chrono::seconds(5));
//   // d.now: begin the return now (Slurm's at ReturnDue); else d.at, when set: plan again then.
//   // d.why says which: "returns to Slurm in 60s (cool-down)"
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "src/base/clock.h"
#include "src/ownership/lending_config.h"

namespace skb::ownership {

// How long before a lent node's return is due its reservation pod is created: a kubelet
// starts it meanwhile (Slurm resumes the node once it runs). Until the return is due the
// node stays Kubernetes': a GPU pod preempts the new reservation as it would the old one,
// and the return is abandoned.
inline constexpr Clock::Duration kReservationLead = std::chrono::seconds(5);

struct ReturnDecision {
  bool now = false;
  // When it may begin if nothing changes (set when !now and a time is the only obstacle).
  std::optional<Clock::TimePoint> at;
  std::string why;
};

// When the cool-down (counted from `idle_since`) and the minimum lend time have both passed:
// the instant a return is due.
Clock::TimePoint ReturnDue(Clock::TimePoint lent_at, Clock::TimePoint idle_since,
                           const LendingConfig& cfg);

// A lent node returns when no Kubernetes GPU pod has been on it for `cooldown` (counted
// from `idle_since`), it has been lent for `min_lend_time`, and it is healthy; its return
// begins `lead` before then, but never before it is idle or lent.
ReturnDecision ShouldReturn(Clock::TimePoint lent_at, std::optional<Clock::TimePoint> idle_since,
                            bool gpu_pods_present, bool healthy, const LendingConfig& cfg,
                            Clock::TimePoint now, Clock::Duration lead = Clock::Duration{});

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
// The bridge's anti-thrash record of a Slurm job: when it was preempted for Kubernetes and
// by whom, kept in the job's admin comment (Slurm keeps it across requeues; the bridge keeps
// nothing). The executor records each preemption (kPreemptSlurmJobs) and the job policy
// (job_policy.h) counts them: a job preempted more than lending.max_preemptions times in
// lending.preemption_window is not preempted again.
//
//   comment = RecordPreemption(comment, ToUnix(now), "ml/infer-1", cfg.lending);
//   // "k8s-bridge:preemptible=true k8s-bridge-preempted=1700000000@ml/infer-1"
//   PreemptionsInWindow(job, cfg.lending, now);  // 1 once the comment is the job's
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/ownership/lending_config.h"
#include "src/slurm/types.h"

namespace skb::ownership {

// The record: one whitespace-free token in the admin comment,
// "k8s-bridge-preempted=<unix>,<unix>...@<ns/pod>" (the latest preemptions, oldest first,
// and the latest preemptor). Distinct from the admission token "k8s-bridge:..." so
// neither overwrites the other.
inline constexpr std::string_view kPreemptedToken = "k8s-bridge-preempted=";

// Preemption times recorded in `admin_comment` (oldest first); empty when none.
std::vector<slurm::UnixTime> PreemptionTimes(std::string_view admin_comment);
// `admin_comment` with this preemption recorded: keeps the latest max_preemptions + 1
// times and everything else in the comment. The executor applies it to the comment it
// reads from Slurm when it preempts (kPreemptSlurmJobs).
std::string RecordPreemption(std::string_view admin_comment, slurm::UnixTime at,
                             std::string_view preemptor, const LendingConfig& cfg);
// Preemptions within the anti-thrash window before `now`.
int64_t PreemptionsInWindow(const slurm::JobView& job, const LendingConfig& cfg,
                            Clock::TimePoint now);

}  // namespace skb::ownership

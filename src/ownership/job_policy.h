// SPDX-License-Identifier: Apache-2.0
// The lending policy of one Slurm job: whether a lend may preempt it and how (signal, scope,
// grace, requeue/hold/cancel), and why, in the words bridgectl, the Events and the plugin's
// submit message show. A heterogeneous job is judged as a whole (PolicyForWhole; hetjob.h
// finds its components), and a job within its tenant's guarantee (quota_facts.h) is never
// preempted. Shared by the node and the device planners, the quota ledger, the plugin
// server and the trace simulator (bench/sim).
//
//   JobPolicy p = PolicyForWhole(WholeJob(job, node.het_jobs), cfg, now, node.guaranteed_jobs);
//   p.preemptible;          // true: p.why == "QOS scavenger is preemptible"
//   DescribePreemption(p);  // "it gets SIGUSR1 60s before it is requeued (it runs again later)"
#pragma once

#include <span>
#include <string>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/quota_facts.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership {

// How preemption treats one job.
struct JobPolicy {
  // May be signalled and preempted when its node is lent. False for a job annotated
  // preemptible=false (or not annotated and in no preemptible partition/QOS), one that
  // cannot be requeued (--no-requeue) when its mode requeues, and one protected by
  // anti-thrash.
  bool preemptible = false;
  // "QOS scavenger is preemptible", "preempted 4 times in 21600s (anti-thrash limit 3)"
  std::string why;
  int signal = 10;
  plan::SignalScope scope = plan::SignalScope::kFull;
  Clock::Duration grace{};
  plan::JobPreemptMode mode = plan::JobPreemptMode::kRequeue;
};

// The job's grace: its own --signal lead time (SIG@SECS) if it gave one, else the
// configured default; capped by max_grace.
Clock::Duration GraceFor(const slurm::JobView& job, const LendingConfig& cfg);
// Its mode: QOS map, then partition map, then the default.
plan::JobPreemptMode PreemptModeFor(const slurm::JobView& job, const LendingConfig& cfg);
// Everything at once. `cfg.admission` decides preemptibility of jobs without the bridge's
// admission annotation (submitted before the plugin was installed, or failed open).
// Anti-thrash counts the job's preemption record (preemption_record.h).
JobPolicy PolicyFor(const slurm::JobView& job, const config::Config& cfg, Clock::TimePoint now);
// What a lend does to a preemptible job, in the words a researcher reads at submit:
// "it gets SIGUSR1 60s before it is requeued (it runs again later)"; the batch shell only
// or the steps only when its scope says so.
std::string DescribePreemption(const JobPolicy& p);

// PolicyFor the job as Slurm preempts it (hetjob.h): preemptible only if every component is
// (the first that is not says why, naming it) and no component runs within its tenant's
// guarantee (`guaranteed`); the longest grace of any component; the signal, scope and mode
// of the leader (one call signals and requeues them all). A plain job: its own PolicyFor,
// then the guarantee.
JobPolicy PolicyForWhole(std::span<const slurm::JobView* const> components,
                         const config::Config& cfg, Clock::TimePoint now,
                         const GuaranteedJobs& guaranteed = {});

// A job the lend flow acts on (signal, preempt): running or suspended, not completing and
// not already on its way back to pending.
bool Actionable(const slurm::JobView& job);

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/job_policy.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "src/base/strings.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/time_codec.h"
#include "src/slurm/syntax.h"

namespace skb::ownership {
namespace {

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Why the bridge's note no longer describes where `job` is ("" when it still does): an admin
// moved it (`scontrol update partition=/qos=`) after admission. A note without the record
// (written before it existed) is taken as it is.
std::string MovedSinceAdmission(const slurm::JobView& job, const slurm::Annotation& a,
                                const config::Config& cfg) {
  if (a.partitions) {
    for (std::string_view p : StrSplit(job.partition, ',', /*skip_empty=*/true)) {
      if (!Contains(*a.partitions, p)) {
        return StrCat("moved to partition ", p, " after admission in ",
                      StrJoin(*a.partitions, ","));
      }
    }
  }
  if (a.qos && !job.qos.empty() && job.qos != *a.qos) {
    // Admitted with the default QOS (""): its name is not known here, so only a move into a
    // preemptible QOS is told apart from the default itself; any other QOS judges the same.
    if (!a.qos->empty()) {
      return StrCat("moved to QOS ", job.qos, " after admission in QOS ", *a.qos);
    }
    if (Contains(cfg.admission.preemptible_qos, job.qos)) {
      return StrCat("in QOS ", job.qos, ", not the one it was admitted with");
    }
  }
  return "";
}

}  // namespace

std::string DescribePreemption(const JobPolicy& p) {
  std::string_view to;
  switch (p.scope) {
    case plan::SignalScope::kFull:
      to = "";
      break;
    case plan::SignalScope::kBatchOnly:
      to = " (its batch shell only)";
      break;
    case plan::SignalScope::kSteps:
      to = " (its steps, not the batch shell)";
      break;
  }
  std::string_view then = "requeued (it runs again later)";
  if (p.mode == plan::JobPreemptMode::kRequeueHold) then = "requeued and held (until released)";
  if (p.mode == plan::JobPreemptMode::kCancel) then = "cancelled";
  return StrCat("it gets ", SignalName(p.signal), to, " ", FormatSeconds(p.grace), " before it is ",
                then);
}

Clock::Duration GraceFor(const slurm::JobView& job, const LendingConfig& cfg) {
  Clock::Duration grace = cfg.default_grace;
  if (job.signal && job.signal->signal > 0) grace = std::chrono::seconds(job.signal->seconds);
  return std::min<Clock::Duration>(grace, cfg.max_grace);
}

plan::JobPreemptMode PreemptModeFor(const slurm::JobView& job, const LendingConfig& cfg) {
  if (auto it = cfg.qos_modes.find(job.qos); it != cfg.qos_modes.end()) return it->second;
  if (auto it = cfg.partition_modes.find(job.partition); it != cfg.partition_modes.end()) {
    return it->second;
  }
  return cfg.default_mode;
}

JobPolicy PolicyFor(const slurm::JobView& job, const config::Config& cfg, Clock::TimePoint now) {
  const LendingConfig& l = cfg.lending;
  JobPolicy p;
  p.grace = GraceFor(job, l);
  p.mode = PreemptModeFor(job, l);
  if (job.signal && job.signal->signal > 0) {
    p.signal = job.signal->signal;
    p.scope = job.signal->batch_only ? plan::SignalScope::kBatchOnly : plan::SignalScope::kFull;
  } else {
    p.signal = l.checkpoint_signal;
    p.scope = plan::SignalScope::kFull;
  }

  const std::optional<slurm::Annotation> a = slurm::ParseAnnotation(job.admin_comment);
  const std::string moved = a ? MovedSinceAdmission(job, *a, cfg) : "";
  if (a && moved.empty()) {
    p.preemptible = a->preemptible;
    p.why = a->preemptible ? "admitted as preemptible" : "admitted as not preemptible";
    // Where it was decided, in the words of the admission policy's lists.
    if (a->partitions && !a->partitions->empty()) {
      StrAppend(&p.why, a->partitions->size() == 1 ? " in partition " : " in partitions ",
                StrJoin(*a->partitions, ", "));
    }
    if (a->qos && !a->qos->empty()) StrAppend(&p.why, ", QOS ", *a->qos);
  } else {
    // Not admitted by the bridge, or moved since: judged by where it is now.
    const std::string prefix = moved.empty() ? "" : StrCat(moved, ": ");
    if (!job.qos.empty() && Contains(cfg.admission.preemptible_qos, job.qos)) {
      p.preemptible = true;
      p.why = StrCat(prefix, "QOS ", job.qos, " is preemptible");
    } else if (!job.partition.empty() &&
               Contains(cfg.admission.preemptible_partitions, job.partition)) {
      p.preemptible = true;
      p.why = StrCat(prefix, "partition ", job.partition, " is preemptible");
    } else {
      p.preemptible = false;
      p.why = moved.empty() ? "not admitted by the bridge and in no preemptible partition or QOS"
                            : StrCat(prefix, "in no preemptible partition or QOS");
    }
  }
  if (!p.preemptible) return p;
  if (p.mode != plan::JobPreemptMode::kCancel && !job.requeue) {
    p.preemptible = false;
    p.why = "cannot be requeued (--no-requeue)";
    return p;
  }
  if (p.mode != plan::JobPreemptMode::kCancel && !job.batch) {
    // Slurm requeues batch jobs only; preempting an interactive one would mean killing it.
    p.preemptible = false;
    p.why = "an interactive job (srun/salloc), which Slurm cannot requeue";
    return p;
  }
  if (int64_t n = PreemptionsInWindow(job, l, now); n > l.max_preemptions) {
    p.preemptible = false;
    p.why = StrCat("preempted ", n, " times in ", FormatSeconds(l.preemption_window),
                   " (anti-thrash limit ", l.max_preemptions, ")");
  }
  return p;
}

JobPolicy PolicyForWhole(std::span<const slurm::JobView* const> components,
                         const config::Config& cfg, Clock::TimePoint now,
                         const GuaranteedJobs& guaranteed) {
  if (components.empty()) return JobPolicy{};
  const slurm::JobView* leader = components.front();
  for (const slurm::JobView* c : components) {
    if (c->het_job_id != 0 && c->job_id == c->het_job_id) leader = c;
  }
  JobPolicy whole = PolicyFor(*leader, cfg, now);
  auto component = [&](const slurm::JobView& c, std::string_view why) {
    if (components.size() == 1) return std::string(why);
    return StrCat("component ", c.job_id, " of heterogeneous job ", c.het_job_id,
                  " (preempted as a whole): ", why);
  };
  if (!whole.preemptible) whole.why = component(*leader, whole.why);
  for (const slurm::JobView* c : components) {
    if (c == leader) continue;
    JobPolicy p = PolicyFor(*c, cfg, now);
    whole.grace = std::max(whole.grace, p.grace);
    if (!p.preemptible && whole.preemptible) {
      whole.preemptible = false;
      whole.why = component(*c, p.why);
    }
  }
  // The lending policy may take it; a guarantee still keeps it from another tenant's demand.
  for (const slurm::JobView* c : components) {
    if (!whole.preemptible) break;
    auto g = guaranteed.find(c->job_id);
    if (g == guaranteed.end()) continue;
    whole.preemptible = false;
    whole.why = component(*c, StrCat("runs within tenant ", g->second, "'s guarantee (quotas)"));
  }
  return whole;
}

bool Actionable(const slurm::JobView& job) {
  return (job.state == slurm::JobState::kRunning || job.state == slurm::JobState::kSuspended) &&
         !job.completing && !job.requeue_pending;
}

}  // namespace skb::ownership

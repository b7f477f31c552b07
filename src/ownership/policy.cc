#include "src/ownership/policy.h"

#include <algorithm>
#include <charconv>

#include "src/base/strings.h"
#include "src/slurm/syntax.h"

namespace skb::ownership {
namespace {

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The bridge's preemption token in `admin_comment`: [begin, end) or npos.
std::pair<size_t, size_t> FindPreemptedToken(std::string_view comment) {
  size_t pos = 0;
  while ((pos = comment.find(kPreemptedToken, pos)) != std::string_view::npos) {
    if (pos == 0 || comment[pos - 1] == ' ') {
      size_t end = comment.find(' ', pos);
      return {pos, end == std::string_view::npos ? comment.size() : end};
    }
    pos += kPreemptedToken.size();
  }
  return {std::string_view::npos, std::string_view::npos};
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

Clock::TimePoint FromUnix(slurm::UnixTime t) {
  return Clock::TimePoint{} + std::chrono::seconds(t);
}

slurm::UnixTime ToUnix(Clock::TimePoint t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::optional<slurm::UnixTime> ParseUnix(std::string_view text) {
  slurm::UnixTime v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

Clock::TimePoint GraceEnds(Clock::TimePoint signalled, Clock::Duration grace) {
  return signalled + std::chrono::seconds(1) + grace;
}

std::string FormatSeconds(Clock::Duration d) {
  return StrCat(std::chrono::duration_cast<std::chrono::seconds>(d).count(), "s");
}

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

std::vector<slurm::UnixTime> PreemptionTimes(std::string_view admin_comment) {
  std::vector<slurm::UnixTime> out;
  auto [begin, end] = FindPreemptedToken(admin_comment);
  if (begin == std::string_view::npos) return out;
  std::string_view value =
      admin_comment.substr(begin + kPreemptedToken.size(), end - begin - kPreemptedToken.size());
  value = value.substr(0, value.find('@'));
  for (std::string_view t : StrSplit(value, ',', /*skip_empty=*/true)) {
    if (auto v = ParseUnix(t)) out.push_back(*v);
    if (out.size() > 1000) break;  // garbage guard: nobody is preempted this often
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RecordPreemption(std::string_view admin_comment, slurm::UnixTime at,
                             std::string_view preemptor, const LendingConfig& cfg) {
  std::vector<slurm::UnixTime> times = PreemptionTimes(admin_comment);
  if (std::find(times.begin(), times.end(), at) == times.end()) times.push_back(at);
  std::sort(times.begin(), times.end());
  const size_t keep = static_cast<size_t>(std::max<int64_t>(cfg.max_preemptions, 0)) + 1;
  if (times.size() > keep) times.erase(times.begin(), times.end() - static_cast<long>(keep));
  std::string token(kPreemptedToken);
  for (size_t i = 0; i < times.size(); ++i) StrAppend(&token, i ? "," : "", times[i]);
  std::string who(preemptor);
  std::replace_if(
      who.begin(), who.end(), [](char c) { return c == ' ' || c < 0x20; }, '_');
  StrAppend(&token, "@", who);

  std::string out(admin_comment);
  auto [begin, end] = FindPreemptedToken(out);
  if (begin != std::string::npos) {
    out.replace(begin, end - begin, token);
    return out;
  }
  if (!out.empty() && out.back() != ' ') out += ' ';
  out += token;
  return out;
}

int64_t PreemptionsInWindow(const slurm::JobView& job, const LendingConfig& cfg,
                            Clock::TimePoint now) {
  const slurm::UnixTime since = ToUnix(now - cfg.preemption_window);
  // A time after now (beyond the clock skew) is garbage, not a preemption that never ages.
  const slurm::UnixTime until = ToUnix(now + kClockSkewAllowance);
  int64_t n = 0;
  for (slurm::UnixTime t : PreemptionTimes(job.admin_comment)) {
    n += t >= since && t <= until ? 1 : 0;
  }
  return n;
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

std::vector<const slurm::JobView*> WholeJob(const slurm::JobView& job,
                                            std::span<const slurm::JobView> more) {
  std::vector<const slurm::JobView*> out = {&job};
  if (job.het_job_id == 0) return out;
  for (const slurm::JobView& j : more) {
    if (j.het_job_id != job.het_job_id) continue;
    if (std::none_of(out.begin(), out.end(),
                     [&](const slurm::JobView* o) { return o->job_id == j.job_id; })) {
      out.push_back(&j);
    }
  }
  std::sort(out.begin() + 1, out.end(), [](const slurm::JobView* a, const slurm::JobView* b) {
    return a->het_job_offset < b->het_job_offset;
  });
  return out;
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

std::string DescribeWhole(std::span<const slurm::JobView* const> components) {
  if (components.empty() || components.front()->het_job_id == 0) return "";
  std::vector<const slurm::JobView*> by_offset(components.begin(), components.end());
  std::sort(by_offset.begin(), by_offset.end(),
            [](const slurm::JobView* a, const slurm::JobView* b) {
              return a->het_job_offset < b->het_job_offset;
            });
  std::string out = StrCat("heterogeneous job ", by_offset.front()->het_job_id, " (components ");
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const slurm::JobView& c = *by_offset[i];
    StrAppend(&out, i ? ", " : "", c.job_id, " on ",
              c.nodes.empty() ? std::string("no node") : StrJoin(c.nodes, ","));
  }
  return StrCat(out, ")");
}

int64_t WholeJobGpus(std::span<const slurm::JobView* const> components) {
  int64_t total = 0;
  for (const slurm::JobView* c : components) {
    if (!c->gpu_indices.empty()) {
      for (const auto& [node, idx] : c->gpu_indices) total += static_cast<int64_t>(idx.size());
    } else {
      total += c->gpus_per_node * static_cast<int64_t>(c->nodes.size());
    }
  }
  return total;
}

bool HoldsNode(const slurm::JobView& job) {
  return job.state == slurm::JobState::kRunning || job.state == slurm::JobState::kSuspended ||
         job.completing;
}

bool Actionable(const slurm::JobView& job) {
  return (job.state == slurm::JobState::kRunning || job.state == slurm::JobState::kSuspended) &&
         !job.completing && !job.requeue_pending;
}

std::string_view ReservationClassName(ReservationClass c) {
  switch (c) {
    case ReservationClass::kIdle:
      return "idle";
    case ReservationClass::kPreemptible:
      return "preemptible";
    case ReservationClass::kProtected:
      return "protected";
  }
  return "idle";
}

std::optional<ReservationClass> ClassByName(std::string_view name) {
  for (ReservationClass c :
       {ReservationClass::kIdle, ReservationClass::kPreemptible, ReservationClass::kProtected}) {
    if (ReservationClassName(c) == name) return c;
  }
  return std::nullopt;
}

const PriorityClassRef& ClassRef(ReservationClass c, const LendingConfig& cfg) {
  switch (c) {
    case ReservationClass::kIdle:
      return cfg.idle_class;
    case ReservationClass::kPreemptible:
      return cfg.preemptible_class;
    case ReservationClass::kProtected:
      return cfg.protected_class;
  }
  return cfg.idle_class;
}

std::optional<ReservationClass> ClassByPriorityClassName(std::string_view name,
                                                         const LendingConfig& cfg) {
  for (ReservationClass c :
       {ReservationClass::kIdle, ReservationClass::kPreemptible, ReservationClass::kProtected}) {
    if (ClassRef(c, cfg).name == name) return c;
  }
  return std::nullopt;
}

ReservationClass ClassFor(const std::vector<slurm::JobView>& jobs, const config::Config& cfg,
                          Clock::TimePoint now, std::string* why,
                          std::span<const slurm::JobView> het_jobs,
                          const GuaranteedJobs& guaranteed) {
  ReservationClass c = ReservationClass::kIdle;
  std::string reason = "no Slurm job on the node";
  for (const slurm::JobView& j : jobs) {
    if (!HoldsNode(j)) continue;
    JobPolicy p =
        PolicyForWhole(WholeJob(j, het_jobs.empty() ? jobs : het_jobs), cfg, now, guaranteed);
    if (!p.preemptible) {
      if (why) *why = StrCat("job ", j.job_id, ": ", p.why);
      return ReservationClass::kProtected;
    }
    if (c == ReservationClass::kIdle) reason = StrCat("job ", j.job_id, ": ", p.why);
    c = ReservationClass::kPreemptible;
  }
  if (why) *why = reason;
  return c;
}

double WorkLost(const VictimCandidate& c, Clock::TimePoint now) {
  double total = 0;
  for (const JobCost& j : c.jobs) {
    double secs = std::chrono::duration<double>(now - j.start).count();
    if (secs > 0) total += secs * static_cast<double>(j.gpus);
  }
  return total;
}

std::vector<size_t> PickVictims(std::span<const VictimCandidate> candidates, const Demand& demand,
                                Clock::TimePoint now, VictimOrder order) {
  std::vector<size_t> eligible;
  std::vector<double> work(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const VictimCandidate& c = candidates[i];
    if (c.gpus < demand.gpus_per_pod || c.priority >= demand.priority) continue;
    eligible.push_back(i);
    work[i] = WorkLost(c, now);
  }
  auto less = [&](size_t a, size_t b) {
    const VictimCandidate& x = candidates[a];
    const VictimCandidate& y = candidates[b];
    if (x.priority != y.priority) return x.priority < y.priority;
    if (order == VictimOrder::kLeastWorkLost) {
      if (x.gpus != y.gpus) return x.gpus < y.gpus;
      if (work[a] != work[b]) return work[a] < work[b];
    }
    if (x.reservation_start != y.reservation_start) {
      return x.reservation_start > y.reservation_start;
    }
    return x.node < y.node;
  };
  const size_t n = static_cast<size_t>(std::clamp<int64_t>(demand.pods, 0, INT32_MAX));
  if (n < eligible.size()) {
    std::partial_sort(eligible.begin(), eligible.begin() + static_cast<long>(n), eligible.end(),
                      less);
    eligible.resize(n);
  } else {
    std::sort(eligible.begin(), eligible.end(), less);
  }
  return eligible;
}

ReturnDecision ShouldReturn(Clock::TimePoint lent_at, std::optional<Clock::TimePoint> idle_since,
                            bool gpu_pods_present, bool healthy, const LendingConfig& cfg,
                            Clock::TimePoint now) {
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
  const Clock::TimePoint at = std::max(*idle_since + cfg.cooldown, lent_at + cfg.min_lend_time);
  if (now < at) {
    d.at = at;
    d.why =
        StrCat("returns to Slurm in ", FormatSeconds(at - now),
               *idle_since + cfg.cooldown >= lent_at + cfg.min_lend_time ? " (cool-down)"
                                                                         : " (minimum lend time)");
    return d;
  }
  d.now = true;
  d.why = StrCat("no Kubernetes GPU pod for ", FormatSeconds(now - *idle_since), ", lent for ",
                 FormatSeconds(now - lent_at));
  return d;
}

}  // namespace skb::ownership

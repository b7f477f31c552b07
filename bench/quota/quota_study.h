// The guaranteed-quota study: replays a team-labelled GPU job trace (Microsoft Philly,
// ../data/philly-vc in the shared data set; bench/quota/README.md says where it comes
// from) on clusters of several sizes and compares three ways to share them:
//   static  each team owns whole nodes in proportion to its share of the trace's
//           GPU-hours, and runs FIFO with backfill on them (nobody borrows);
//   pool    one FIFO pool with backfill, no guarantees (the best case for throughput,
//           the worst for a small team behind a large one);
//   quotas  one pool under the bridge's quota policy (src/quota): each team guaranteed
//           its share of the GPUs; work beyond it borrows idle GPUs; a team below its
//           guarantee with pending work reclaims borrowed work of the most over-quota
//           team (Classify + PlanStart decide, exactly as the daemon calls them).
// The figure: the smallest cluster at which every team's p99 wait is within a bound
// (24 h, 4 h), per mode, and the ratio quotas / static ("the same service with fewer
// GPUs").
//
// Models (deliberately simple, said in the README): nodes of 8 GPUs; a job of up to 8
// GPUs runs on one node (best fit), a larger one on ceil(g / 8) whole nodes; a reclaimed
// job gets its grace, then is requeued at its place in the queue and resumes from its
// last checkpoint (every `checkpoint_interval_s` of its own run time), so the run time
// since then is lost work; a job is not reclaimed before it ran `min_run_time_s`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace skb::quota_study {

struct Job {
  int64_t submit_s = 0;  // from the trace's first submit
  int64_t duration_s = 0;
  int gpus = 0;
  std::string team;
};

// Reads philly_vc_sep_oct.csv (timestamp,duration,num_gpus,gpu_time,cluster). Rows with
// no GPUs or no run time, and the jobs of teams with fewer than `min_team_jobs` jobs, are
// skipped; the result is sorted by submit time.
StatusOr<std::vector<Job>> ReadPhilly(const std::string& path, int min_team_jobs = 10);

enum class Mode { kStatic, kPool, kQuotas };
const char* ModeName(Mode m);

struct Options {
  int gpus_per_node = 8;
  int64_t grace_s = 60;
  int64_t checkpoint_interval_s = 3600;
  int64_t min_run_time_s = 600;
  // Within-guarantee service target: such a job should start within this.
  int64_t guarantee_wait_s = 600;
};

struct TeamResult {
  std::string team;
  int guaranteed = 0;  // GPUs (quotas) or the team's nodes x GPUs (static)
  int jobs = 0;
  int never_started = 0;  // could never run (a static pool smaller than the job)
  double wait_p50_s = 0, wait_p99_s = 0;
  int within_guarantee_jobs = 0;     // jobs that were within the guarantee at submit
  int within_guarantee_on_time = 0;  // ... and started within guarantee_wait_s
  double preempted_gpu_h = 0;        // run time lost to reclaims, in GPU-hours
  int preemptions = 0;
};

struct Result {
  Mode mode = Mode::kQuotas;
  int cluster_gpus = 0;
  std::vector<TeamResult> teams;
  double worst_p99_s = 0;
  double gpu_h_served = 0, gpu_h_capacity = 0;
  double makespan_s = 0;
};

// Guarantees (quotas) and static pools are sized from each team's share of the trace's
// GPU-hours: floor(share x cluster GPUs), and for static whole nodes by largest remainder.
std::map<std::string, double> Shares(const std::vector<Job>& jobs);

Result Simulate(const std::vector<Job>& jobs, int cluster_gpus, Mode mode, const Options& options);

}  // namespace skb::quota_study

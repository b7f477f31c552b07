// SPDX-License-Identifier: Apache-2.0
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
//
// The mixed case (issue 19): the Alibaba GPU trace's inference pods (LS tasks, read by
// bench/sim's reader) become one more tenant, "inference", on the Kubernetes side, beside
// the Philly teams. How they are mapped, and why (MapInference):
//   * time: the last `window` seconds of the Alibaba trace (the Philly trace's span of
//     submit times, 62.6 days) up to its last creation, laid onto the Philly window, not
//     stretched: arrival rates and run times stay as recorded (a linear map of its 149
//     days onto 62.6 would pack 2.4x the pods into each hour, or shorten every run), and
//     99.6% of the inference pods that ran were created in its last 40 days anyway. A pod
//     created before the window and still running at its start arrives at 0 with the rest
//     of its run (a service already deployed): what the window leaves out is the first
//     months of a few long services;
//   * run time: deletion - scheduled (the recorded wait is what the replay decides); a pod
//     never scheduled is dropped (it has no run time), one with no deletion runs to the
//     trace's last recorded time (bench/sim does the same);
//   * fractional pods (gpu_milli < 1000) take one whole GPU: the study places and the
//     quota policy counts whole GPUs (Work::gpus), so packing shares onto one GPU would be
//     a model of GPU sharing the policy does not see; rounding up overstates inference
//     (the report says by how many GPU-hours);
//   * the guarantee: the pods' peak concurrent GPUs had each started on arrival, whatever
//     the cluster size. Inference pods sit at or above the protected class, so they cannot
//     be preempted and the policy lets them start only within their tenant's guarantee
//     (PlanStart refuses kNotPreemptibleBeyondFloor): a guarantee below the peak, such as
//     one sized from GPU-hours (the mean), would queue them whenever demand is above it.
//     What they leave idle the training teams borrow. The training teams share the rest
//     of the cluster by GPU-hours as before; in the static split the inference tenant
//     owns ceil(peak / 8) nodes of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/sim/trace.h"
#include "src/base/status.h"

namespace skb::quota_study {

struct Job {
  int64_t submit_s = 0;  // from the trace's first submit
  int64_t duration_s = 0;
  int gpus = 0;
  std::string team;
  // An inference pod (the mixed case): Kubernetes work at or above the protected class,
  // so not preemptible: the policy lets it start only within its tenant's guarantee.
  bool inference = false;
};

// Reads philly_vc_sep_oct.csv (timestamp,duration,num_gpus,gpu_time,cluster). Rows with
// no GPUs or no run time, and the jobs of teams with fewer than `min_team_jobs` jobs, are
// skipped; the result is sorted by submit time.
StatusOr<std::vector<Job>> ReadPhilly(const std::string& path, int min_team_jobs = 10);

// The mixed case's Kubernetes tenant.
inline constexpr char kInferenceTenant[] = "inference";

// The Alibaba trace's inference pods as jobs of kInferenceTenant (the header comment says
// how and why), and what was done to get there.
struct InferenceTrace {
  std::vector<Job> jobs;              // sorted by submit time; 0 is the window's start
  int64_t window_start_s = 0;         // the Alibaba time laid onto the replay's 0
  int inference_gpu_tasks = 0;        // LS tasks that use a GPU
  int never_scheduled = 0;            // dropped: never ran in the recorded cluster
  int ended_before_window = 0;        // dropped
  int no_run_time = 0;                // dropped: deleted the second they were scheduled
  int running_at_start = 0;           // started before the window, arrive at 0 with the rest
  int no_deletion = 0;                // run to the trace's last recorded time
  int fractional = 0;                 // gpu_milli < 1000: rounded up to one GPU
  double fractional_gpu_h_added = 0;  // GPU-hours the rounding adds
};
// Maps `tasks` (sim::ParseTasks) onto a replay window of `window_s` seconds: the last
// `window_s` seconds up to the trace's last creation time.
InferenceTrace MapInference(const std::vector<sim::Task>& tasks, int64_t window_s);
// Reads openb_pod_list_default.csv (or any task CSV of that format) and maps it.
StatusOr<InferenceTrace> ReadInference(const std::string& path, int64_t window_s);
// The most GPUs `jobs` hold at once had each run from its submit time: the guarantee the
// mixed case gives the inference tenant.
int PeakConcurrentGpus(const std::vector<Job>& jobs);
// Both traces as one, sorted by submit time (stable: a tie keeps `training` first).
std::vector<Job> Merge(const std::vector<Job>& training, const std::vector<Job>& inference);

enum class Mode { kStatic, kPool, kQuotas };
const char* ModeName(Mode m);

struct Options {
  int gpus_per_node = 8;
  int64_t grace_s = 60;
  int64_t checkpoint_interval_s = 3600;
  int64_t min_run_time_s = 600;
  // Within-guarantee service target: such a job should start within this.
  int64_t guarantee_wait_s = 600;
  // Tenants guaranteed a fixed number of GPUs whatever the cluster size (the mixed case's
  // inference tenant: its peak demand), at most the cluster; the static split gives them
  // ceil(GPUs / gpus_per_node) whole nodes. The other teams share the rest by GPU-hours.
  std::map<std::string, int> fixed_guarantees;
};

struct TeamResult {
  std::string team;
  int guaranteed = 0;  // GPUs (quotas) or the team's nodes x GPUs (static)
  int jobs = 0;
  int never_started = 0;  // could never run (a static pool smaller than the job)
  double wait_p50_s = 0, wait_p99_s = 0;
  double wait_max_s = 0;             // the longest wait (infinity: a job never started)
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
// GPU-hours: floor(share x cluster GPUs), and for static whole nodes by largest remainder
// (of what the fixed guarantees leave: Shares of the other teams' jobs).
std::map<std::string, double> Shares(const std::vector<Job>& jobs);

Result Simulate(const std::vector<Job>& jobs, int cluster_gpus, Mode mode, const Options& options);

}  // namespace skb::quota_study

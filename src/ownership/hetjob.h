// SPDX-License-Identifier: Apache-2.0
// Heterogeneous jobs as Slurm preempts them. Slurm signals, requeues and cancels a
// heterogeneous job as a whole, by its leader's id (het_job_id; a component's own id is
// refused: "not heterogeneous job leader"), so preempting one component preempts every
// component, on every node they run on. These find the whole job, name it and count what
// preempting it gives up; job_policy.h PolicyForWhole judges it.
//
//   std::vector<const slurm::JobView*> whole = WholeJob(job, node.het_jobs);
//   DescribeWhole(whole);  // "heterogeneous job 11 (components 11 on node1, 12 on node2)"
//   WholeJobGpus(whole);   // every component's GPUs on every node
//   WholeJobId(job);       // 11: the id to signal and requeue
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/slurm/types.h"

namespace skb::ownership {

// The id Slurm preempts as a whole: the leader of a heterogeneous job, else the job's own.
inline uint32_t WholeJobId(const slurm::JobView& j) {
  return j.het_job_id != 0 ? j.het_job_id : j.job_id;
}
// `job` and the other components of its heterogeneous job found in `more` (each once, by
// job id, `job` first, then by offset); `job` alone when it is not one.
std::vector<const slurm::JobView*> WholeJob(const slurm::JobView& job,
                                            std::span<const slurm::JobView> more);
// "heterogeneous job 11 (components 11 on node1, 12 on node2)", by offset; "" for a plain
// job.
std::string DescribeWhole(std::span<const slurm::JobView* const> components);
// GPUs the whole job holds on every node it runs on (JobView::AllocatedGpus of each
// component): what preempting it gives up.
int64_t WholeJobGpus(std::span<const slurm::JobView* const> components);

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
// What guaranteed quotas (src/quota) tell the planners, as plain data: which running jobs sit
// within their tenant's guarantee (never taken for anyone else's demand), which pending pods
// would borrow beyond theirs (idle GPUs only), and which lent nodes are taken back for Slurm.
// The daemon's quota ledger classifies every job and pod once and hands the result on; the
// inventory store lays it over the merged nodes (ManagedNode::guaranteed_jobs,
// borrowing_nominated, reclaim), and the job policy (ownership/job_policy.h PolicyForWhole),
// the reservation class and the lend read it. All empty when quotas are off.
//
//   QuotaFacts q;
//   q.guaranteed_jobs[42] = "team-a";   // job 42 runs within team-a's guarantee
//   PolicyForWhole(WholeJob(job, jobs), cfg, now, q.guaranteed_jobs).preemptible;  // false
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "src/inventory/managed_node.h"

namespace skb::inventory {

// The running jobs that sit within their tenant's guarantee, by job id (each component of a
// heterogeneous job by its own id) -> the tenant. Such a job is never taken for anyone
// else's demand: the lend and the reservation class treat it as not preemptible.
using GuaranteedJobs = std::map<uint32_t, std::string>;

// What guaranteed quotas tell the planners, from one classification of every job and pod.
struct QuotaFacts {
  GuaranteedJobs guaranteed_jobs;
  // Pending GPU pods ("ns/name") that would run beyond their tenant's guarantee if they
  // started now (a pod of no tenant always would) -> why. Such a pod may take idle GPUs
  // only: a lend of a node with Slurm jobs for it is refused.
  std::map<std::string, std::string> borrowing_pods;
  // Lent nodes taken back for a Slurm tenant below its guarantee, by Kubernetes node name
  // (quota::PlanReclaims): tainted, their pods evicted, returned without the cool-down.
  std::map<std::string, NodeReclaim> reclaims;
  bool operator==(const QuotaFacts&) const = default;
};

}  // namespace skb::inventory

// SPDX-License-Identifier: Apache-2.0
// Guaranteed quotas' facts as the ownership planners name them: the inventory's
// (src/inventory/quota_facts.h), which the store lays over the merged nodes and the job
// policy (job_policy.h PolicyForWhole), the reservation class and the lend read.
//
//   QuotaFacts q;
//   q.guaranteed_jobs[42] = "team-a";   // job 42 runs within team-a's guarantee
//   PolicyForWhole(WholeJob(job, jobs), cfg, now, q.guaranteed_jobs).preemptible;  // false
#pragma once

#include "src/inventory/quota_facts.h"

namespace skb::ownership {

using GuaranteedJobs = inventory::GuaranteedJobs;
using QuotaFacts = inventory::QuotaFacts;

}  // namespace skb::ownership

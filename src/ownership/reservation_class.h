// SPDX-License-Identifier: Apache-2.0
// The class of a Slurm-owned node's reservation pod: which PriorityClass it runs at, so that
// kube-scheduler's preemption takes the cheapest node first and never protected work. A node
// without Slurm jobs is idle (the cheapest victim); one whose jobs may all be preempted
// (job_policy.h) is preemptible (below inference priority); one with any job that may not
// is protected (above every inference pod). The bridge reads a reservation's class back
// from its PriorityClass name (ClassByPriorityClassName).
//
//   std::string why;
//   ReservationClass c = ClassFor(node.jobs, cfg, now, &why, node.het_jobs, node.guaranteed_jobs);
//   ClassRef(c, cfg.lending).name;  // "slurm-protected"; why: "job 7: admitted as not ..."
//   ReservationClassName(c);        // "protected", the kClassLabel value (schema.h)
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/quota_facts.h"
#include "src/slurm/types.h"

namespace skb::ownership {

enum class ReservationClass { kIdle = 0, kPreemptible = 1, kProtected = 2 };

std::string_view ReservationClassName(ReservationClass c);  // "idle", "preemptible", ...
const PriorityClassRef& ClassRef(ReservationClass c, const LendingConfig& cfg);
// The class whose PriorityClass name is `name`; nullopt for an unknown name.
std::optional<ReservationClass> ClassByPriorityClassName(std::string_view name,
                                                         const LendingConfig& cfg);
std::optional<ReservationClass> ClassByName(std::string_view name);

// The class a node's jobs call for: no job holding the node -> idle; any job not
// preemptible (PolicyForWhole: the lending policy, or within its tenant's guarantee) ->
// protected; else preemptible. `why` (optional) gets the deciding fact.
// `het_jobs`: every component (on any node) of the heterogeneous jobs among `jobs`
// (ManagedNode::het_jobs; empty: only those in `jobs`): a job is judged as a whole.
// `guaranteed`: ManagedNode::guaranteed_jobs.
ReservationClass ClassFor(const std::vector<slurm::JobView>& jobs, const config::Config& cfg,
                          Clock::TimePoint now, std::string* why = nullptr,
                          std::span<const slurm::JobView> het_jobs = {},
                          const GuaranteedJobs& guaranteed = {});

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
// The whole answer to a job at submit time, from the pure core: the admission decision
// (admission.h's Decide), then what an accepted job is told from the daemon's config:
//  - with lending on, a job the bridge may preempt is told so, why, and what a lend does to
//    it: the signal, its lead time, requeue or cancel (ownership::PolicyFor);
//  - with quotas configured and their classification known, a GPU job is told whether it
//    would run within its tenant's guarantee or borrowed (and so preemptible), and one that
//    cannot be preempted beyond its tenant's floor is refused (quota::AdviseSubmit).
// The plugin server (bridge/plugin_server) only maps the protocol's messages to and from
// these types.
//
//   Decision d = Admit(request, inventory, policy, {.config = &cfg, .quotas = &c});
#pragma once

#include <cstdint>
#include <string>

#include "src/admission/admission.h"
#include "src/config/config.h"
#include "src/quota/quota.h"
#include "src/slurm/types.h"

namespace skb::admission {

// What Admit knows beyond the job and the inventory; each may be null.
struct SubmitContext {
  const config::Config* config = nullptr;  // null: Decide alone
  // The tenants' standing now (quota::Observe's classification); null while it is not
  // known yet: nothing is said of quotas.
  const quota::Classification* quotas = nullptr;
};

Decision Admit(const JobRequest& job, const Inventory& inventory, const Policy& policy,
               const SubmitContext& context);

// GPUs the job asks for in all: per job as given, else per node (or, without one, per task or
// per socket, counted once per node: the task count is not known at submit) times its
// minimum node count; at most 1,000,000. Unreadable TRES count 0.
int64_t RequestedGpus(const JobRequest& job);
// The GPU type it asks for: its first typed gpu GRES in the order Slurm reads the requests
// (per job, node, task, socket); "" for any.
std::string RequestedGpuType(const JobRequest& job);
// The account Slurm will charge: the job's, else the submitting user's default.
std::string EffectiveAccount(const JobRequest& job);
// The job as the lending policy will judge it once it runs: the admission annotation `d`
// made, its --signal, --no-requeue, batch or srun/salloc.
slurm::JobView AsRunning(const JobRequest& job, const Decision& d);

}  // namespace skb::admission

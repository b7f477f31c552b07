// SPDX-License-Identifier: Apache-2.0
// Quotas as the daemon sees them: its caches (the Slurm poll's jobs, the GPU pods) turned
// into quota::Work, classified (guaranteed or borrowed), and explained for bridgectl and for
// the researcher at submit time.
//
//   Observation o = Observe(cfg, jobs, pods, managed_k8s_nodes, now);
//   for (const TenantRow& r : TenantRows(cfg.quotas, o)) ...       // bridgectl get quotas
//   std::string why = WhyStanding(cfg.quotas, o, o.work[i]);        // describe tenant
//   SubmitAdvice a = AdviseSubmit(cfg.quotas, o.classification, facts);  // the plugin
//
// Pure: the caller passes `now` and copies of its caches. A running job counts the GPUs it
// holds on each of its nodes (JobView::AllocatedGpus), a pending one its whole request
// (JobView::requested_gpus), a pod its GPU request on the node it is bound to.
// GPU types: running work is of its node's type (the caller's map of node name -> GPU
// type), pending work of the type it asks for (a job's GRES type, a pod's
// nvidia.com/gpu.product selector).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/inventory/managed_node.h"
#include "src/quota/quota.h"
#include "src/slurm/types.h"

namespace skb::config {
struct Config;
}

namespace skb::quota {

// One job or pod with what bridgectl shows about it.
struct ObservedWork {
  Work work;
  uint32_t job_id = 0;          // a Slurm job's id; 0 for a pod
  std::string pod;              // a pod's "namespace/name"; "" for a job
  bool running = false;         // holds GPUs now; else pending demand
  std::string where;            // its nodes ("node1,node2"); "" while pending
  std::string account;          // Slurm account, or the pod's namespace
  std::string preemptible_why;  // the fact that decided work.preemptible
  // A pending job Slurm keeps waiting for resources (reason Resources or ReqNodeNotAvail...),
  // not for its begin time, a dependency or a hold: what a reclaim may serve.
  bool waits_for_resources = false;
  // A pod whose ResourceClaims' GPUs are not all in work.gpus: why (GpuPod::uncounted).
  std::string uncounted;
};

// A node lent to Kubernetes, as a reclaim sees it.
struct LentNode {
  std::string name;         // Kubernetes name
  int64_t gpus = 0;         // its GPUs
  bool reclaiming = false;  // already carries the reclaim taint (kept first: no flip-flop)
  std::string gpu_type;     // its GPUs' type ("" when not known)
  friend bool operator==(const LentNode&, const LentNode&) = default;
};

// `node` as a reclaim sees it when it is lent to Kubernetes (its lent-at annotation) or being
// reclaimed (the reclaim taint, kept first so a reclaim does not flip-flop); nullopt for a
// node Slurm has.
std::optional<LentNode> LentNodeOf(const inventory::K8sNode& node);

// Borrowed GPUs taken back from Kubernetes for a Slurm tenant below its guarantee: the
// node, returned to Slurm once its pods (`victims`, "ns/name") are evicted.
struct Reclaim {
  std::string node;
  std::string tenant;   // for whom
  uint32_t job_id = 0;  // the pending job it serves
  int64_t gpus = 0;     // what that job asks of the node
  std::vector<std::string> victims;
  std::vector<std::string> victim_tenants;  // the victims' tenants ("(none)" for no tenant)
  int64_t victim_gpus = 0;
  std::string why;  // for the Events and bridgectl
};

struct Observation {
  std::vector<ObservedWork> work;           // jobs (by id), then pods (by namespace/name)
  Classification classification;            // of the running work only
  std::map<std::string, int> pending_gpus;  // tenant ("" for none) -> GPUs asked by pending work
  // The same by the GPU type asked for ("" for any): tenant -> type -> GPUs.
  std::map<std::string, std::map<std::string, int>> pending_by_type;
  // Set by the caller from PlanReclaims (Observe leaves it empty): what bridgectl shows.
  std::vector<Reclaim> reclaims;
  Clock::TimePoint at{};
};

// Builds the work lists and classifies the running work. A job counts when it holds its
// nodes (running, suspended, completing: JobView::HoldsNodes) with GPUs, or is pending
// (not held) with GPUs (one node's worth: a pending job's node count is not known here); its
// preemptibility is the lending policy's (ownership::PolicyFor). A pod counts when it asks
// for GPUs, is not the bridge's reservation, and is bound to a managed node (`managed_nodes`:
// Kubernetes names) or pending unbound; it is preemptible below lending.protected_class.
// `gpu_types`: node name (Slurm's and Kubernetes') -> the type of its GPUs. A running job is
// of its first node's type (else of the type Slurm allocated it), a running pod of its
// node's (else of the model it selected); pending work of the type it asks for.
Observation Observe(const config::Config& cfg, const std::vector<slurm::JobView>& jobs,
                    const std::vector<inventory::GpuPod>& pods,
                    const std::set<std::string, std::less<>>& managed_nodes, Clock::TimePoint now,
                    const std::map<std::string, std::string, std::less<>>& gpu_types = {});

// The running Slurm jobs that sit within their tenant's guarantee, by job id -> tenant: what
// the lend and the reservation class keep from other tenants' demand
// (ownership::GuaranteedJobs). Empty when quotas are off.
std::map<uint32_t, std::string> GuaranteedJobs(const Observation& o);
// The pending GPU pods that would run beyond their tenant's guarantee if they started now,
// by "ns/name" -> why (a pod of no tenant always borrows): they may take idle GPUs only,
// never a Slurm job's (ownership::QuotaFacts::borrowing_pods). Each pod is judged alone
// against its tenant's running work; a pod whose claims' GPUs are not all counted borrows
// too (whether it stays within the guarantee is not known). Empty when quotas are off.
std::map<std::string, std::string> BorrowingPendingPods(const QuotaConfig& config,
                                                        const Observation& o);

// The reclaims from Kubernetes that Slurm's pending demand calls for (node granularity):
// for each tenant below its guarantee, its pending jobs that Slurm keeps waiting for
// resources and that fit within the guarantee (oldest first, as OrderPending ranks them),
// one lent node each whose GPU pods are all borrowed work of other tenants that may be
// preempted and has run options.min_run_time_s (since its status.startTime; a pod without
// one counts as just started). GPU types: a job asking a type takes only a node of that
// type; the guarantee it must fit is its tenant's floor for the node's type (per-type
// floors: a node of a type not known, or of one with no floor, is never taken) or its whole
// floor (a number). Nodes already reclaiming first, then nodes with no
// pod, then the victims' tenants most over their guarantee per weight, then the fewest
// victim GPUs, then by name. Empty when quotas are off.
std::vector<Reclaim> PlanReclaims(const QuotaConfig& config, const Observation& o,
                                  const std::vector<LentNode>& lent, int64_t now,
                                  const ReclaimOptions& options);

// One line of `bridgectl get quotas`.
struct TypeRow {
  std::string type;          // "" for work of a type not known
  int guaranteed = 0;        // the floor for the type (per-type floors)
  std::optional<int> limit;  // the limit for the type, if named
  int in_use = 0;
  int borrowed = 0;
  int pending = 0;  // GPUs pending work asks of this type ("" : of any type)
  friend bool operator==(const TypeRow&, const TypeRow&) = default;
};
struct TenantRow {
  std::string name;  // "" for work of no tenant (listed only when there is some)
  int guaranteed = 0;
  std::optional<int> limit;
  int in_use_slurm = 0;
  int in_use_kubernetes = 0;
  int borrowed = 0;
  int pending = 0;
  int reclaiming = 0;     // GPUs of the nodes being taken back for it (Observation::reclaims)
  bool per_type = false;  // its floors are per GPU type
  // By GPU type, by name: the types it names floors or limits for, of its running work and
  // of its pending work.
  std::vector<TypeRow> types;
};
std::vector<TenantRow> TenantRows(const QuotaConfig& config, const Observation& o);

// Why `w` is guaranteed or borrowed (running work), or what it would be (pending work), in
// the words bridgectl describe tenant prints.
std::string WhyStanding(const QuotaConfig& config, const Observation& o, const ObservedWork& w);

// A job at submit time.
struct SubmitFacts {
  // The job's account: the one it names, else the submitting user's default account
  // (account_is_default); "" when neither is known (no accounting).
  std::string account;
  bool account_is_default = false;
  int gpus = 0;          // GPUs it asks for in all
  std::string gpu_type;  // the GRES type it asks for ("" for any)
  bool preemptible = true;
  std::string preemptible_why;
  // Whether the bridge takes GPUs back from Slurm for other tenants at all (lending.enabled).
  // Without it nothing a job borrows is ever preempted by the bridge, so the advice says so
  // and refuses nothing: a floor is then reported (bridgectl, metrics), not enforced.
  bool bridge_preempts = true;
};

struct SubmitAdvice {
  bool refuse = false;
  Rule rule = Rule::kNoQuotas;
  std::string message;  // for Slurm's user-message channel; "" = nothing to say
};

// What the researcher is told: within the tenant's guarantee, or borrowed (and so
// preemptible); refused when it cannot be preempted and would run beyond the floor
// (Rule::kNotPreemptibleBeyondFloor) while the bridge enforces floors (bridge_preempts).
// Judged against the tenant's usage now.
SubmitAdvice AdviseSubmit(const QuotaConfig& config, const Classification& c,
                          const SubmitFacts& job);

}  // namespace skb::quota

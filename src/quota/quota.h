// SPDX-License-Identifier: Apache-2.0
// Guaranteed GPU quotas across both schedulers: who a job or pod belongs to, which of a
// tenant's running work sits inside its guarantee and which is borrowed, whether new work
// may start, and which borrowed work is reclaimed for a tenant below its guarantee.
//
// A tenant is a team: a set of Slurm accounts and Kubernetes namespaces. Its usage is the
// GPUs of its running jobs plus the GPUs of its running pods on managed nodes. It has a
// guaranteed number of GPUs (its floor), an optional limit and a borrowing weight. The
// floor (and the limit) is one number of GPUs of any type, or a number per GPU type
// ({"a100": 8, "h100": 4}): then work on type T counts against the floor for T only, work
// on a type the tenant names no floor for (or whose type is not known) borrows, and a
// reclaim for demand of type T takes only work on GPUs of type T.
//   * Work inside the floor is never taken by another tenant's demand.
//   * Work beyond it is borrowed: it runs while GPUs are idle and is what gets reclaimed,
//     in either direction (a Slurm job for a pod, a pod for a Slurm job).
//   * A tenant reclaims only for demand that keeps it within its floor.
//   * Work that cannot be preempted (an interactive srun, --no-requeue, a pod at or above
//     the protected class) may start only inside its tenant's floor.
// Within one scheduler that scheduler's own fairness still orders the work; this module
// governs the boundary, and each decision names the rule that made it.
//
// Pure: no I/O, no clock (callers pass `now`). The daemon and the trace-replay study
// (bench/quota) call the same functions.
//
//   ASSIGN_OR_RETURN(QuotaConfig quotas, ParseQuotaConfig(config_json["quotas"]));
//   Classification c = Classify(quotas, running);
//   Decision d = PlanStart(quotas, c, pending_job, free_gpus_on_node, running_on_node,
//                          now, options);
//   if (d.start) { preempt d.victims (signal, grace, requeue / evict), then start }
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/config/json_reader.h"

namespace skb::quota {

// GPU types are named as Slurm's GRES types name them ("gpu:h100:8" -> h100), which the
// bridge also compares with the nodes' nvidia.com/gpu.product label (src/devices): one
// vocabulary for both sides. "" is a type not known (untyped GRES, no label) or, for
// pending work, any type.
struct Tenant {
  std::string name;
  std::vector<std::string> slurm_accounts;
  std::vector<std::string> kubernetes_namespaces;
  int guaranteed = 0;        // GPUs: the floor (with per-type floors, their sum)
  std::optional<int> limit;  // GPUs: never more than this in all, idle or not
  double weight = 1.0;       // share of idle GPUs when tenants borrow at once
  // "guaranteed": {"TYPE": GPUs}: a floor per GPU type (empty: `guaranteed` is of any type).
  std::map<std::string, int> guaranteed_by_type;
  // "limit": {"TYPE": GPUs}: a limit per GPU type; a type not named has none.
  std::map<std::string, int> limit_by_type;

  bool per_type() const { return !guaranteed_by_type.empty(); }
  // The floor work on GPUs of `type` counts against: with per-type floors that type's (0
  // for a type not named and for ""), else `guaranteed`.
  int FloorFor(std::string_view type) const;
};

struct QuotaConfig {
  std::vector<Tenant> tenants;
  // Anti-thrash: borrowed work that has run less than this is not reclaimed.
  std::chrono::milliseconds reclaim_min_run_time{std::chrono::minutes(10)};
  // How the Kubernetes side keeps work that cannot be preempted within its tenant's floor
  // ("kubernetes_enforcement"): kResourceQuota, a ResourceQuota per tenant namespace that the
  // bridge keeps in step (src/quota/guarantee_quota.h; only while lending is on), or kOff.
  enum class KubernetesEnforcement { kResourceQuota, kOff };
  KubernetesEnforcement kubernetes_enforcement = KubernetesEnforcement::kResourceQuota;

  bool enabled() const { return !tenants.empty(); }
  const Tenant* Find(std::string_view name) const;
  // The tenant of a Slurm account / a Kubernetes namespace, or nullptr (work outside every
  // tenant: it borrows, like a tenant with a floor of 0).
  const Tenant* ForAccount(std::string_view account) const;
  const Tenant* ForNamespace(std::string_view ns) const;
};

// Parses the `quotas` section: {"tenants": [{"name", "slurm_accounts", "kubernetes_namespaces",
// "guaranteed", "limit", "weight"}], "reclaim_min_run_time", "kubernetes_enforcement":
// "resource_quota" | "off"}; "guaranteed" and "limit" are a number or an object of
// GPU type -> number. Strict like the rest of the config: unknown keys, a name used twice,
// an account or namespace in two tenants, a negative floor, a limit below the floor (a
// type's limit below its floor, a number limit below the sum of the floors), an empty type
// name or "any" (a floor of any type is a plain number), a weight <= 0 are InvalidArgument
// naming the field ("quotas.tenants[0].guaranteed.h100"). A null or absent section is
// quotas off.
StatusOr<QuotaConfig> ParseQuotaConfig(const nlohmann::json& section);
// The same, as the config parser reads every section (errors name "quotas.tenants[i].key").
Status ReadQuotaConfig(config::JsonReader r, QuotaConfig* out);
// What --check-config prints: one line per tenant (its accounts, namespaces, floor, limit,
// weight; per-type ones as "a100:8,h100:4"), or "quotas: off".
std::vector<std::string> DescribeQuotaConfig(const QuotaConfig& config);

enum class Side { kSlurm, kKubernetes };

// A running or pending job (Slurm) or pod (Kubernetes), as quotas see it.
struct Work {
  std::string id;      // "slurm/1234", "k8s/ns/pod"
  std::string tenant;  // "" when no tenant claims it
  Side side = Side::kSlurm;
  int gpus = 0;
  int64_t priority = 0;     // its own scheduler's priority: higher first
  bool preemptible = true;  // may be taken at all (requeueable job, pod below protected)
  int64_t started_at = 0;   // seconds (running work); submit time for pending work
  int64_t work_lost_s = 0;  // run time a preemption would throw away (since checkpoint)
  // The GPU type: running work's is the type of the GPUs it runs on (its node's); pending
  // work's the type it asks for, "" for any. "" for running work: not known.
  std::string gpu_type;
};

// "1 GPU", "4 GPUs", "4 h100 GPUs": a count of GPUs of a type ("" for none named).
std::string GpusOfType(int64_t n, std::string_view type);

enum class Standing { kGuaranteed, kBorrowed };
std::string_view StandingName(Standing s);  // "guaranteed", "borrowed"

// A tenant's usage of one GPU type.
struct TypeUsage {
  int guaranteed = 0;        // its floor for the type (per-type floors; else 0)
  std::optional<int> limit;  // its limit for the type, if it names one
  int in_use = 0;
  int borrowed = 0;
  // Beyond the type's floor per unit of weight (per-type floors), else the tenant's whole
  // over_per_weight: who gives back GPUs of this type first.
  double over_per_weight = 0;
};

struct TenantUsage {
  int guaranteed = 0;
  std::optional<int> limit;
  int in_use_slurm = 0;
  int in_use_kubernetes = 0;
  int borrowed = 0;  // GPUs of its running work beyond the floor

  int in_use() const { return in_use_slurm + in_use_kubernetes; }
  // How far beyond its floor, per unit of weight: who gives back first.
  double over_per_weight = 0;
  bool per_type = false;  // its floors are per GPU type
  // By GPU type: every type of its running work ("" for work of unknown type) and every
  // type it names a floor or a limit for.
  std::map<std::string, TypeUsage> by_type;
};

struct Classification {
  std::map<std::string, Standing> standing;      // work id -> standing
  std::map<std::string, TenantUsage> usage;      // tenant -> usage (every configured one)
  std::map<std::string, std::string> tenant_of;  // work id -> tenant ("" for none)
};

// Ranks each tenant's running work for its floor: work that cannot be preempted first,
// then higher priority, then the longest running (earliest start), then id; whole items
// fill the floor in that order, and the first that does not fit whole and everything
// after it is borrowed. With per-type floors each type's work fills that type's floor so
// (work on a type with no floor, or of unknown type, borrows). Work of no tenant is
// borrowed.
Classification Classify(const QuotaConfig& config, const std::vector<Work>& running);
// That order: true when `a` takes its share of the floor before `b`.
bool RanksBefore(const Work& a, const Work& b);

// The rule that decided, as bridgectl and Events name it.
enum class Rule {
  kNoQuotas,                   // quotas off: nothing to decide here
  kWithinGuarantee,            // fits idle GPUs and stays within the floor
  kBorrowIdle,                 // fits idle GPUs beyond the floor: runs borrowed
  kReclaim,                    // within the floor: borrowed work of others is taken
  kAtLimit,                    // would pass the tenant's limit
  kNotPreemptibleBeyondFloor,  // cannot be preempted and would run borrowed
  kWaitForIdle,                // beyond the floor and no idle GPUs: waits, takes nothing
  kNothingToReclaim,           // within the floor, but not enough borrowed work here
};
std::string_view RuleName(Rule rule);

struct ReclaimOptions {
  // Anti-thrash: borrowed work younger than this is not taken (0: any).
  int64_t min_run_time_s = 600;
};

struct Decision {
  bool start = false;
  Rule rule = Rule::kNoQuotas;
  Standing standing = Standing::kBorrowed;  // what the work would be once it runs
  std::vector<std::string> victims;         // preempt/evict these first (kReclaim)
  int victim_gpus = 0;
  std::string explanation;
};

// Whether running work `w` may be taken for `for_tenant`'s demand (a configured tenant's
// name, or "" for work of no tenant): borrowed, preemptible, not the tenant's own, and
// running for at least options.min_run_time_s. (Callers also match GPU types: demand of
// type T takes only work on type T, see PlanStart.)
bool Reclaimable(const QuotaConfig& config, const Classification& c, const std::string& for_tenant,
                 const Work& w, int64_t now, const ReclaimOptions& options);
// How far `w`'s tenant is beyond its floor per unit of weight (infinity for work of no
// tenant): the most over gives back first. With per-type floors, beyond the floor of `w`'s
// type.
double OverPerWeight(const Classification& c, const Work& w);

// Where work stands against its tenant's floor: which floor it counts against and how much
// of it the tenant's running work fills.
struct FloorShare {
  // The GPU type decided on: the work's own; for pending work asking any type under
  // per-type floors, the type whose floor has the most room left (ties: by name). "" for
  // any type.
  std::string type;
  bool per_type = false;  // `floor`, `in_use` and `limit` are of `type` only
  int floor = 0;          // 0 for work of no tenant
  int in_use = 0;         // the tenant's running GPUs counted against `floor`
};
FloorShare FloorOf(const QuotaConfig& config, const Classification& c, const Work& w);

// Whether `pending` may start where `free_gpus` GPUs are idle and `candidates` run (the
// work on one node, or a set of nodes the caller can place on). `c` classifies all
// running work of the cluster. Victims are borrowed work of other tenants only: the most
// over-floor tenant (per weight) first, then the lowest priority, then the least work
// lost, then the youngest; never work that cannot be preempted, never work younger than
// min_run_time_s, never more than needed.
// GPU types: the decision is made for FloorOf(pending).type, T. Within-guarantee is judged
// against the tenant's floor for T (per-type floors) or its whole floor (a number); the
// limit against its whole usage and, when it names one, its limit for T; victims are only
// work on GPUs of type T (any type when T is ""; work of unknown type only then). A caller
// placing pending work that asks any type on a node of a known type passes that type in
// `pending.gpu_type`; `free_gpus` are GPUs the pending work can use.
Decision PlanStart(const QuotaConfig& config, const Classification& c, const Work& pending,
                   int free_gpus, const std::vector<Work>& candidates, int64_t now,
                   const ReclaimOptions& options);

// Orders pending work for one pass: work that would run within its tenant's floor first
// (oldest first; per type with per-type floors), then borrowers by how much they already
// borrow per weight (least first), then by submit time. Returns indexes into `pending`.
std::vector<size_t> OrderPending(const QuotaConfig& config, const Classification& c,
                                 const std::vector<Work>& pending);

}  // namespace skb::quota

// Guaranteed GPU quotas across both schedulers: who a job or pod belongs to, which of a
// tenant's running work sits inside its guarantee and which is borrowed, whether new work
// may start, and which borrowed work is reclaimed for a tenant below its guarantee.
//
// A tenant is a team: a set of Slurm accounts and Kubernetes namespaces. Its usage is the
// GPUs of its running jobs plus the GPUs of its running pods on managed nodes. It has a
// guaranteed number of GPUs (its floor), an optional limit and a borrowing weight.
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

struct Tenant {
  std::string name;
  std::vector<std::string> slurm_accounts;
  std::vector<std::string> kubernetes_namespaces;
  int guaranteed = 0;        // GPUs: the floor
  std::optional<int> limit;  // GPUs: never more than this, idle or not
  double weight = 1.0;       // share of idle GPUs when tenants borrow at once
};

struct QuotaConfig {
  std::vector<Tenant> tenants;
  // Anti-thrash: borrowed work that has run less than this is not reclaimed.
  std::chrono::milliseconds reclaim_min_run_time{std::chrono::minutes(10)};

  bool enabled() const { return !tenants.empty(); }
  const Tenant* Find(std::string_view name) const;
  // The tenant of a Slurm account / a Kubernetes namespace, or nullptr (work outside every
  // tenant: it borrows, like a tenant with a floor of 0).
  const Tenant* ForAccount(std::string_view account) const;
  const Tenant* ForNamespace(std::string_view ns) const;
};

// Parses the `quotas` section: {"tenants": [{"name", "slurm_accounts", "kubernetes_namespaces",
// "guaranteed", "limit", "weight"}]}. Strict like the rest of the config: unknown keys,
// a name used twice, an account or namespace in two tenants, a negative floor, a limit
// below the floor, a weight <= 0 are InvalidArgument naming the field. A null or absent
// section is quotas off.
StatusOr<QuotaConfig> ParseQuotaConfig(const nlohmann::json& section);
// The same, as the config parser reads every section (errors name "quotas.tenants[i].key").
Status ReadQuotaConfig(config::JsonReader r, QuotaConfig* out);
// What --check-config prints: one line per tenant (its accounts, namespaces, floor, limit,
// weight), or "quotas: off".
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
};

enum class Standing { kGuaranteed, kBorrowed };
std::string_view StandingName(Standing s);  // "guaranteed", "borrowed"

struct TenantUsage {
  int guaranteed = 0;
  std::optional<int> limit;
  int in_use_slurm = 0;
  int in_use_kubernetes = 0;
  int borrowed = 0;  // GPUs of its running work beyond the floor

  int in_use() const { return in_use_slurm + in_use_kubernetes; }
  // How far beyond its floor, per unit of weight: who gives back first.
  double over_per_weight = 0;
};

struct Classification {
  std::map<std::string, Standing> standing;      // work id -> standing
  std::map<std::string, TenantUsage> usage;      // tenant -> usage (every configured one)
  std::map<std::string, std::string> tenant_of;  // work id -> tenant ("" for none)
};

// Ranks each tenant's running work for its floor: work that cannot be preempted first,
// then higher priority, then the longest running (earliest start), then id; whole items
// fill the floor in that order, and the first that does not fit whole and everything
// after it is borrowed. Work of no tenant is borrowed.
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
// running for at least options.min_run_time_s.
bool Reclaimable(const QuotaConfig& config, const Classification& c, const std::string& for_tenant,
                 const Work& w, int64_t now, const ReclaimOptions& options);
// How far `w`'s tenant is beyond its floor per unit of weight (infinity for work of no
// tenant): the most over gives back first.
double OverPerWeight(const Classification& c, const Work& w);

// Whether `pending` may start where `free_gpus` GPUs are idle and `candidates` run (the
// work on one node, or a set of nodes the caller can place on). `c` classifies all
// running work of the cluster. Victims are borrowed work of other tenants only: the most
// over-floor tenant (per weight) first, then the lowest priority, then the least work
// lost, then the youngest; never work that cannot be preempted, never work younger than
// min_run_time_s, never more than needed.
Decision PlanStart(const QuotaConfig& config, const Classification& c, const Work& pending,
                   int free_gpus, const std::vector<Work>& candidates, int64_t now,
                   const ReclaimOptions& options);

// Orders pending work for one pass: work that would run within its tenant's floor first
// (oldest first), then borrowers by how much they already borrow per weight (least
// first), then by submit time. Returns indexes into `pending`.
std::vector<size_t> OrderPending(const QuotaConfig& config, const Classification& c,
                                 const std::vector<Work>& pending);

}  // namespace skb::quota

// Preemption and return policy of the node-ownership state machine, as pure functions the
// planner (ownership.h), the trace simulator (bench/) and `bridgectl` share: which jobs may
// be preempted and how, which reservation class a node gets, which nodes kube-scheduler's
// preemption would take for a demand, and when a lent node goes back to Slurm.
//
//   JobPolicy p = PolicyFor(job, cfg, now);   // preemptible? signal, grace, mode
//   ReservationClass c = ClassFor(node.jobs, cfg, now);
//   std::vector<size_t> picked = PickVictims(candidates, demand, now);
//
// Also the names (labels, annotations, taints, finalizer) the bridge writes: the state the
// daemon reads back after a restart, since it keeps none of its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/lending_config.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership {

// The finalizer that holds a deleted reservation pod until Slurm has vacated the node.
inline constexpr char kFinalizer[] = "slurm-k8s-bridge.io/reservation";
// Labels of a reservation pod. The role label marks the pod as the bridge's (a pod with the
// reservation's name but without it is someone else's and is never touched).
inline constexpr char kRoleLabel[] = "slurm-k8s-bridge.io/role";
inline constexpr char kReservationRole[] = "reservation";
inline constexpr char kClassLabel[] = "slurm-k8s-bridge.io/class";
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";

// Annotations on the reservation pod.
//   jobs: the Slurm jobs on the node, "id user account gpus start;..." (batched).
inline constexpr char kJobsAnnotation[] = "slurm-k8s-bridge.io/jobs";
inline constexpr char kJobsUpdatedAtAnnotation[] = "slurm-k8s-bridge.io/jobs-updated-at";
inline constexpr char kSlurmNodeAnnotation[] = "slurm-k8s-bridge.io/slurm-node";
//   class-wanted: "<class>@<unix>": a lazy class change wanted since then (hysteresis).
inline constexpr char kClassWantedAnnotation[] = "slurm-k8s-bridge.io/class-wanted";
//   replacing=true: the bridge deletes this pod to replace it (a class change), not to
//   lend the node. Set before the delete.
inline constexpr char kReplacingAnnotation[] = "slurm-k8s-bridge.io/replacing";
//   released=true: the pod's container may exit (it reads this through the downward API).
inline constexpr char kReleasedAnnotation[] = "slurm-k8s-bridge.io/released";

// Annotations on the Kubernetes node (they outlive the reservation pod).
//   lent-at: Unix seconds the lend started; its presence marks the node Kubernetes-owned.
inline constexpr char kLentAtAnnotation[] = "slurm-k8s-bridge.io/lent-at";
//   lent-to: "ns/pod" of the preemptor, or "kubernetes".
inline constexpr char kLentToAnnotation[] = "slurm-k8s-bridge.io/lent-to";
//   signalled-at: "jobid:unix,...": when each job got its checkpoint signal.
inline constexpr char kSignalledAtAnnotation[] = "slurm-k8s-bridge.io/signalled-at";
//   lend-blocked: "jobid,...": non-preemptible jobs a lend waits for (with a Warning).
inline constexpr char kLendBlockedAnnotation[] = "slurm-k8s-bridge.io/lend-blocked";
//   return-blocked: "ns/name" of a pod that is not the bridge's but has the reservation's
//   name, which keeps the lent node from returning (with a Warning).
inline constexpr char kReturnBlockedAnnotation[] = "slurm-k8s-bridge.io/return-blocked";
//   lend-refused-at: Unix seconds a preemption of the reservation was refused (LendRefused):
//   the swap taint stays on until lending.cooldown later, so the preemptor does not preempt
//   every new reservation at once again.
inline constexpr char kLendRefusedAtAnnotation[] = "slurm-k8s-bridge.io/lend-refused-at";
//   idle-since: Unix seconds since when no Kubernetes GPU pod is on the lent node.
inline constexpr char kIdleSinceAnnotation[] = "slurm-k8s-bridge.io/idle-since";

// NoSchedule taints the bridge sets on the node.
//   reservation-swap: while a reservation is replaced (its GPUs are briefly uncounted).
inline constexpr char kSwapTaintKey[] = "slurm-k8s-bridge.io/reservation-swap";
// The label that goes on and off with the swap taint, in the same write: the selector of
// the chart's swap-guard ValidatingAdmissionPolicy. While a node carries it, the apiserver
// refuses to bind any pod to it (kube-scheduler's pods/binding, whatever the pod
// tolerates) and to create a GPU pod with spec.nodeName on it, except for the bridge
// itself: the two ways around a NoSchedule taint during the swap's uncounted window.
inline constexpr char kSwapGuardLabel[] = "slurm-k8s-bridge.io/swap-guard";
//   slurm-busy: Slurm work remains on a lent node whose reservation no longer (or soon no
//   longer) holds the GPUs in Kubernetes' count, or whose signalled jobs outlived their grace.
inline constexpr char kBusyTaintKey[] = "slurm-k8s-bridge.io/slurm-busy";
// NoSchedule on a lent node taken back for Slurm (quotas): no new pod lands while its pods
// are evicted. Removed once Slurm runs there and the reclaim is over.
inline constexpr char kReclaimTaintKey[] = "slurm-k8s-bridge.io/reclaiming";
// The busy taint goes on this long before the kubelet's kill deadline of the reservation.
inline constexpr Clock::Duration kBusyTaintLead = std::chrono::seconds(30);
// How long a lend waits after its reservation's deletion for the pod that preempted it to
// show (its nominated node), so the lend can name it.
inline constexpr Clock::Duration kPreemptorWait = std::chrono::seconds(2);
// No time the bridge records (node annotations, a job's preemption record) is in the future
// by more than the clock skew between two hosts. One that is, like one that does not parse,
// is garbled: read as "now" and written again. Kept as written it would never pass, and the
// node would stay lent, guarded or unpreempted for ever.
inline constexpr Clock::Duration kClockSkewAllowance = std::chrono::minutes(5);

// The downward-API file the reservation container watches for the released annotation.
inline constexpr char kAnnotationsMountPath[] = "/etc/reservation";
inline constexpr char kAnnotationsFile[] = "/etc/reservation/annotations";

// The bridge's anti-thrash record in a job's admin comment: one whitespace-free token,
// "k8s-bridge-preempted=<unix>,<unix>...@<ns/pod>" (the latest preemptions, oldest first,
// and the latest preemptor). Distinct from the admission token "k8s-bridge:..." so
// neither overwrites the other.
inline constexpr std::string_view kPreemptedToken = "k8s-bridge-preempted=";

// Unix seconds <-> the core's time points.
Clock::TimePoint FromUnix(slurm::UnixTime t);
slurm::UnixTime ToUnix(Clock::TimePoint t);
// Unix seconds as the bridge writes them in annotations ("1700000000"); nullopt for
// anything else (annotations are user-editable input).
std::optional<slurm::UnixTime> ParseUnix(std::string_view text);
// "42s": a duration for messages.
std::string FormatSeconds(Clock::Duration d);

// When the grace of a job signalled at `signalled` (whole unix seconds, as recorded) ends.
// The stamp is the signal's second rounded down, so the grace is counted from the second
// after it: a job always gets at least its whole grace (up to a second more), never up to a
// second less, as it did when counted from the stamp.
Clock::TimePoint GraceEnds(Clock::TimePoint signalled, Clock::Duration grace);

// ---- Jobs ---------------------------------------------------------------------------

// Preemption times recorded in `admin_comment` (oldest first); empty when none.
std::vector<slurm::UnixTime> PreemptionTimes(std::string_view admin_comment);
// `admin_comment` with this preemption recorded: keeps the latest max_preemptions + 1
// times and everything else in the comment. The executor applies it to the comment it
// reads from Slurm when it preempts (kPreemptSlurmJobs).
std::string RecordPreemption(std::string_view admin_comment, slurm::UnixTime at,
                             std::string_view preemptor, const LendingConfig& cfg);
// Preemptions within the anti-thrash window before `now`.
int64_t PreemptionsInWindow(const slurm::JobView& job, const LendingConfig& cfg,
                            Clock::TimePoint now);

// How preemption treats one job.
struct JobPolicy {
  // May be signalled and preempted when its node is lent. False for a job annotated
  // preemptible=false (or not annotated and in no preemptible partition/QOS), one that
  // cannot be requeued (--no-requeue) when its mode requeues, and one protected by
  // anti-thrash.
  bool preemptible = false;
  // "QOS scavenger is preemptible", "preempted 4 times in 21600s (anti-thrash limit 3)"
  std::string why;
  int signal = 10;
  plan::SignalScope scope = plan::SignalScope::kFull;
  Clock::Duration grace{};
  plan::JobPreemptMode mode = plan::JobPreemptMode::kRequeue;
};

// The job's grace: its own --signal lead time (SIG@SECS) if it gave one, else the
// configured default; capped by max_grace.
Clock::Duration GraceFor(const slurm::JobView& job, const LendingConfig& cfg);
// Its mode: QOS map, then partition map, then the default.
plan::JobPreemptMode PreemptModeFor(const slurm::JobView& job, const LendingConfig& cfg);
// Everything at once. `cfg.admission` decides preemptibility of jobs without the bridge's
// admission annotation (submitted before the plugin was installed, or failed open).
JobPolicy PolicyFor(const slurm::JobView& job, const config::Config& cfg, Clock::TimePoint now);
// What a lend does to a preemptible job, in the words a researcher reads at submit:
// "it gets SIGUSR1 60s before it is requeued (it runs again later)"; the batch shell only
// or the steps only when its scope says so.
std::string DescribePreemption(const JobPolicy& p);

// ---- Heterogeneous jobs -------------------------------------------------------------
// Slurm signals, requeues and cancels a heterogeneous job as a whole, by its leader's id
// (het_job_id; a component's own id is refused: "not heterogeneous job leader"), so
// preempting one component preempts every component, on every node they run on.

// The id Slurm preempts as a whole: the leader of a heterogeneous job, else the job's own.
inline uint32_t WholeJobId(const slurm::JobView& j) {
  return j.het_job_id != 0 ? j.het_job_id : j.job_id;
}
// `job` and the other components of its heterogeneous job found in `more` (each once, by
// job id, `job` first, then by offset); `job` alone when it is not one.
std::vector<const slurm::JobView*> WholeJob(const slurm::JobView& job,
                                            std::span<const slurm::JobView> more);
// Guaranteed quotas (src/quota): the running jobs that sit within their tenant's guarantee,
// by job id (each component of a heterogeneous job by its own id) -> the tenant. Such a job
// is never taken for anyone else's demand: the lend and the reservation class treat it as
// not preemptible. Empty when quotas are off.
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
  std::map<std::string, inventory::NodeReclaim> reclaims;
  bool operator==(const QuotaFacts&) const = default;
};

// PolicyFor the job as Slurm preempts it: preemptible only if every component is (the
// first that is not says why, naming it) and no component runs within its tenant's
// guarantee (`guaranteed`); the longest grace of any component; the signal, scope and mode
// of the leader (one call signals and requeues them all). A plain job: its own PolicyFor,
// then the guarantee.
JobPolicy PolicyForWhole(std::span<const slurm::JobView* const> components,
                         const config::Config& cfg, Clock::TimePoint now,
                         const GuaranteedJobs& guaranteed = {});
// "heterogeneous job 11 (components 11 on node1, 12 on node2)", by offset; "" for a plain
// job.
std::string DescribeWhole(std::span<const slurm::JobView* const> components);
// GPUs the whole job holds on every node it runs on (each component's GRES indices, else
// gpus_per_node on each of its nodes): what preempting it gives up.
int64_t WholeJobGpus(std::span<const slurm::JobView* const> components);

// A job that holds its node: running, suspended or completing.
bool HoldsNode(const slurm::JobView& job);
// A job the lend flow acts on (signal, preempt): running or suspended, not completing and
// not already on its way back to pending.
bool Actionable(const slurm::JobView& job);

// ---- Reservation classes ------------------------------------------------------------

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

// ---- Victim ranking (kube-scheduler's preemption, for the simulator and bridgectl) -----

struct JobCost {
  int64_t gpus = 0;
  Clock::TimePoint start{};
};

// A Slurm-owned node as a preemption candidate.
struct VictimCandidate {
  std::string node;
  int64_t gpus = 0;      // GPUs the reservation holds (what a preemptor gets)
  int32_t priority = 0;  // the reservation pod's priority (its class's value)
  Clock::TimePoint reservation_start{};
  std::vector<JobCost> jobs;
};

struct Demand {
  int64_t gpus_per_pod = 1;
  int64_t pods = 1;
  int32_t priority = 0;  // the preemptor's priority: only lower-priority reservations yield
};

enum class VictimOrder {
  // What kube-scheduler does with one victim per node: lowest victim priority first, then
  // the newest victim (latest start). It does not weigh GPUs or work.
  kKubeScheduler,
  // What the bridge would prefer: lowest priority, then fewest GPUs beyond the demand,
  // then least work lost (GPU-seconds of the jobs), then newest.
  kLeastWorkLost,
};

// GPU-seconds the jobs on `c` have run by `now` (what a preemption throws away at worst).
double WorkLost(const VictimCandidate& c, Clock::TimePoint now);

// Indices into `candidates` of the nodes preemption takes for `demand`, one per pod, in
// order; fewer than demand.pods when not enough nodes qualify (GPUs >= gpus_per_pod and
// priority < demand.priority). Ties end on the node name, so the result is deterministic.
std::vector<size_t> PickVictims(std::span<const VictimCandidate> candidates, const Demand& demand,
                                Clock::TimePoint now,
                                VictimOrder order = VictimOrder::kKubeScheduler);

// ---- Return to Slurm ----------------------------------------------------------------

struct ReturnDecision {
  bool now = false;
  // When it may return if nothing changes (set when !now and a time is the only obstacle).
  std::optional<Clock::TimePoint> at;
  std::string why;
};

// A lent node returns when no Kubernetes GPU pod has been on it for `cooldown` (counted
// from `idle_since`), it has been lent for `min_lend_time`, and it is healthy.
ReturnDecision ShouldReturn(Clock::TimePoint lent_at, std::optional<Clock::TimePoint> idle_since,
                            bool gpu_pods_present, bool healthy, const LendingConfig& cfg,
                            Clock::TimePoint now);

}  // namespace skb::ownership

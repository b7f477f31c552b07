// GPU-granular ownership of one node (DRA clusters): every GPU device is owned by exactly
// one side at every instant, and a node runs Slurm jobs and Kubernetes pods side by side on
// disjoint GPUs. Pure: the daemon observes, this plans, the executor acts.
//
// Each side's hold on a device is an object the other scheduler honours, so the owner is
// read back from the cluster after a restart (the bridge keeps no state of its own):
//   held for Slurm       a DeviceTaintRule (NoSchedule) keeps the device out of new
//                        Kubernetes allocations ("k8s hold");
//   held for Kubernetes  the bridge's placeholder Slurm job runs on the GPU index.
//   owner = Slurm       k8s hold, no placeholder
//           Kubernetes  placeholder, no k8s hold
//           moving      both (a give before the hold is lifted, a return before the
//                       placeholder ends: nobody can newly allocate the device)
//           unguarded   neither (a node entering GPU granularity; a hold deleted by hand)
// A move is a sequence in which the giving side keeps its hold until the receiving side
// holds the device:
//   give   (pending pod) submit a placeholder for k GPUs -> checkpoint-signal the victims,
//          grace, preempt -> Slurm starts the placeholder on indices it picks -> lift the
//          k8s hold of exactly those devices ("Slurm picks, Kubernetes follows").
//   return (cool-down)   record the return on the placeholder -> k8s hold on its devices ->
//          wait until no *allocated* claim uses them -> end the placeholder.
//
//   std::optional<Selection> s = ChooseNode(nodes, pod, cfg, now, &why);
//   if (s) actions = PlanGive(*s, pod, cfg);      // then, every pass:
//   NodePlan p = PlanNode(node, cfg, now);          // continues every move, reports violations
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/devices/give_backoff.h"
#include "src/devices/placement.h"
#include "src/inventory/k8s_node.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::devices {

// A Slurm job (not a placeholder) holding GPUs of the node.
struct NodeJob {
  slurm::JobView view;           // policy input: QOS, partition, admin comment, state
  std::vector<int64_t> indices;  // its GRES indices on this node (ParseGpuIndices)
  // When the bridge sent it the checkpoint signal for a give (recorded with the move).
  std::optional<Clock::TimePoint> signalled_at;
  // Every component of its heterogeneous job, on any node (itself included; empty for a
  // plain job): Slurm preempts them together, so they decide its policy and its cost.
  std::vector<slurm::JobView> het_components;
};

// The bridge's placeholder Slurm job: holds GPUs in Slurm for Kubernetes. Everything
// below is recorded on the job itself (name, comment, Slurm's own fields).
struct Placeholder {
  uint32_t job_id = 0;
  std::string pod;                // "ns/name" it was submitted for
  int64_t gpus = 0;               // what it asked for
  std::vector<uint32_t> victims;  // the jobs the give preempts for it
  bool running = false;
  std::vector<int64_t> indices;  // running: the GRES indices Slurm gave it
  Clock::TimePoint start{};      // running: since when
  bool returning = false;        // a return was recorded: its devices go back to Slurm
  // Since when no allocated claim uses its devices (recorded by kRecordIdleSince).
  std::optional<Clock::TimePoint> idle_since;
  // The pod it was submitted for still waits for it. False once the pod is gone or placed
  // elsewhere: a give still pending is then cancelled (no victim is preempted for nobody).
  bool wanted = true;
  // When the bridge submitted it (the give began); nullopt when Slurm does not say.
  std::optional<Clock::TimePoint> submitted;
  // Its pod exists and is still unscheduled: a give that ends now went unused.
  bool pod_waiting = false;
  // Pending for longer than gpu_sharing.give_timeout (then also not `wanted`).
  bool timed_out = false;
};

struct Device {
  int64_t index = 0;      // Slurm's GRES index
  std::string name;       // the DRA device (MapGresFiles)
  bool k8s_hold = false;  // the bridge's DeviceTaintRule covers it
};

// A ResourceClaim naming devices of this node.
struct Claim {
  std::string pod;  // "ns/name" of a pod using it (or the claim's name)
  std::vector<std::string> devices;
  bool allocated = true;  // status.allocation is set (running or not)
};

// A give's victim that ended after its checkpoint signal instead of waiting for the grace
// (died of the signal, or checkpointed and exited): requeued like a preempted job, as on
// whole nodes.
struct EndedVictim {
  slurm::JobView view;
  Clock::TimePoint signalled_at{};
  std::string pod;  // the give's pod
  // False when the placeholder records no signal time (the daemon died between sending the
  // signal and recording it): `signalled_at` is then the placeholder's submission, and only a
  // job the checkpoint signal itself ended (its exit signal) counts.
  bool recorded = true;
};

struct NodeDevices {
  std::string node;
  std::string k8s_node;                       // its Kubernetes name
  std::map<std::string, std::string> labels;  // the Kubernetes node's (a pod's placement)
  std::vector<inventory::Taint> taints;       // the Kubernetes node's (a pod's tolerations)
  std::vector<UnusedGive> unused_gives;       // gives here that went unused (back-offs)
  std::string model;                          // GPU model, for pods that name one
  std::vector<Device> devices;                // indexed by GRES index
  std::vector<NodeJob> jobs;
  std::vector<Placeholder> placeholders;
  std::vector<Claim> claims;
  std::vector<EndedVictim> ended_victims;
  bool healthy = true;
  // Jobs here (any component) within their tenant's guarantee: never a give's victims.
  std::map<uint32_t, std::string> guaranteed_jobs;
};

// An unschedulable GPU pod at or above the inference threshold.
struct PendingPod {
  std::string pod;  // "ns/name"
  int64_t gpus = 1;
  int32_t priority = 0;
  std::string model;  // "" = any
  // Where it may run (nodeSelector, required node affinity, tolerations): a give frees GPUs
  // only on a node it may use.
  NodePlacement placement;
  // Guaranteed quotas: why it would run beyond its tenant's guarantee ("" = within it, or
  // quotas off). A borrowing pod gets idle GPUs only, never a job's.
  std::string borrowing;
};

enum class Owner { kSlurm, kToKubernetes, kKubernetes, kToSlurm, kUnguarded };
std::string_view OwnerName(Owner o);  // "slurm", "to-k8s", "k8s", "to-slurm", "unguarded"

struct DeviceView {
  std::string name;
  Owner owner = Owner::kUnguarded;
  uint32_t job = 0;               // a Slurm job (not a placeholder) on it, or 0
  uint32_t placeholder = 0;       // the placeholder holding it, or 0
  std::vector<std::string> pods;  // allocated claims' pods using it
};
std::vector<DeviceView> Owners(const NodeDevices& node);

// A device both sides claim: never planned around, reported (a Warning Event, the
// invariant sampler's finding).
struct Violation {
  std::string device;
  std::string what;
  friend bool operator==(const Violation&, const Violation&) = default;
};
// The node's violations now (what PlanNode reports): skb_shared_gpu_violations.
std::vector<Violation> Violations(const NodeDevices& node);

enum class DeviceActionKind {
  kAddDeviceHold,      // create/extend the DeviceTaintRule over `devices`
  kRemoveDeviceHold,   // lift the hold on `devices`; the executor first checks that
                       // `placeholder_job` runs holding exactly those indices
  kSubmitPlaceholder,  // sbatch a placeholder for `gpus` GPUs on `node` for `pod`,
                       // recording `job_ids` (the victims) in its comment
  kSignalJobs,         // checkpoint signal `signal` (`signal_scope`) to `job_ids`
  kPreemptJobs,        // requeue/cancel `job_ids` (`preempt_mode`), grace over
  kRecordIdleSince,    // record `at_unix` (0: clear) as the placeholder's idle-since
  kMarkReturning,      // record on `placeholder_job` that its devices return to Slurm
  kEndPlaceholder,     // scancel `placeholder_job`: its GPUs are Slurm's again (a return,
                       // `devices` those it held; or a pending give whose pod no longer
                       // waits)
  kRecordUnusedGive,   // record on the node that the give of `placeholder_job` for `pod`
                       // went unused (`at_unix`): its kUnusedGivesAnnotation, once per
                       // placeholder
};
std::string_view DeviceActionKindName(DeviceActionKind k);

// One step, in plan::Action's conventions: plain values, the cause decided here, the Event
// that records it once it changed something.
struct DeviceAction {
  DeviceActionKind kind = DeviceActionKind::kAddDeviceHold;
  std::string node;
  std::vector<std::string> devices;  // kAddDeviceHold, kRemoveDeviceHold, kEndPlaceholder
  uint32_t placeholder_job = 0;      // kRemoveDeviceHold, kRecordIdleSince, kMark.., kEnd..,
                                     // kRecordUnusedGive, kSignalJobs (records the signal
                                     // time on it)
  std::string pod;                   // kSubmitPlaceholder, kPreemptJobs (the preemptor),
                                     // kRecordUnusedGive
  int64_t gpus = 0;                  // kSubmitPlaceholder
  std::vector<uint32_t> job_ids;     // kSubmitPlaceholder (victims), kSignalJobs, kPreemptJobs
  int signal = 0;
  plan::SignalScope signal_scope = plan::SignalScope::kFull;
  plan::JobPreemptMode preempt_mode = plan::JobPreemptMode::kRequeue;
  int64_t at_unix = 0;  // kRecordIdleSince; kSignalJobs/kPreemptJobs/kRecordUnusedGive: now
  // Unix seconds the move this step completes began, 0 when unknown (the metrics' durations,
  // as plan::Action::since_unix): kRemoveDeviceHold the placeholder's submission, kPreemptJobs
  // the checkpoint signal, kEndPlaceholder of a return the devices' idle-since.
  int64_t since_unix = 0;
  plan::Cause cause = plan::Cause::kLend;
  plan::EventType event_type = plan::EventType::kNormal;
  std::string event_reason;
  std::string event_message;
  bool quiet = false;  // bookkeeping (kRecordIdleSince): logged, no Event
  // kPreemptJobs of a victim that ended after the signal: requeue the finished run that
  // started before `at_unix` (plan::Action::ended_after_signal).
  bool ended_after_signal = false;
  friend bool operator==(const DeviceAction&, const DeviceAction&) = default;
};
std::string ToString(const DeviceAction& a);

// Which devices a give frees on one node: idle devices first, then the GPUs of preemptible
// jobs, never a non-preemptible job's.
struct Selection {
  std::string node;
  // Devices already Kubernetes' that no claim uses: they count toward the pod, so the give
  // moves only what is missing (kube-scheduler places the pod on both).
  std::vector<std::string> lent_idle;
  int64_t gpus = 0;               // what the placeholder asks for: the pod's GPUs - lent_idle
  std::vector<std::string> idle;  // Slurm's devices no job and no claim uses
  int64_t idle_left = 0;          // Slurm's idle devices left on the node after the give
  std::vector<uint32_t> victims;  // jobs to preempt (empty when idle devices suffice)
  int64_t victim_gpus = 0;        // GPUs the victims hold (>= what is missing)
  double work_lost = 0;           // GPU-seconds the victims have run (the worst case lost)
  std::string why;
};

// The cheapest way to free `pod.gpus` devices on `node`, or nullopt (with `why`): no move
// may be in flight on the node (a pending placeholder), no device may be in violation, the
// model must match, the pod must be allowed there (placement.h) and the node not backed
// off for the pod (give_backoff.h). Victims: least work lost (GPU-seconds run, on every node the
// job holds), then fewest jobs, then fewest GPUs, then lowest job ids; preemptible per
// ownership::PolicyForWhole (admission, --no-requeue, anti-thrash; a heterogeneous job only
// if every component is), running and not completing. A heterogeneous job is one victim:
// its components here are freed together.
std::optional<Selection> SelectOnNode(const NodeDevices& node, const PendingPod& pod,
                                      const config::Config& cfg, Clock::TimePoint now,
                                      std::string* why = nullptr);
// The node for `pod`: no preemption first, then least work lost, fewest victims, fewest
// victim GPUs; then best fit (fewest idle devices left over: whole free nodes stay whole for
// large jobs and pods), then the node name. Nullopt when the pod is already served (a
// placeholder names it) or no node can free enough devices; `why` then names the nodes that
// came nearest (backed off for the pod, then busy with a move, then short of GPUs,
// unhealthy, not allowed), at most three.
std::optional<Selection> ChooseNode(std::span<const NodeDevices> nodes, const PendingPod& pod,
                                    const config::Config& cfg, Clock::TimePoint now,
                                    std::string* why = nullptr);
// The first step of a give: the placeholder submission (the rest follows from PlanNode).
std::vector<DeviceAction> PlanGive(const Selection& s, const PendingPod& pod);

struct NodePlan {
  std::vector<DeviceAction> actions;  // in order; each idempotent
  std::vector<Violation> violations;
};

// Continues every move on the node and restores missing holds; level-triggered and
// idempotent: planning again on the state the actions produce asks for nothing new.
NodePlan PlanNode(const NodeDevices& node, const config::Config& cfg, Clock::TimePoint now);

}  // namespace skb::devices

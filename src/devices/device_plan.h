// SPDX-License-Identifier: Apache-2.0
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
//           out         both, the placeholder a health hold: a GPU the driver tainted for
//                       its health, kept from both schedulers until it clears
// A move is a sequence in which the giving side keeps its hold until the receiving side
// holds the device:
//   give   (pending pod) submit a placeholder for k GPUs -> checkpoint-signal the victims,
//          grace, preempt -> Slurm starts the placeholder on indices it picks -> lift the
//          k8s hold of exactly those devices ("Slurm picks, Kubernetes follows").
//   return (cool-down)   record the return on the placeholder -> k8s hold on its devices ->
//          wait until no *allocated* claim uses them -> end the placeholder.
//   health (a device the driver taints, free in Slurm) one 1-GPU health hold per free
//          device of its kind, submitted together -> Slurm places them, one on the bad
//          GPU -> the others end; the bad GPU's ends when the driver clears it. Slurm
//          cannot be asked for one GRES index: it picks, the bridge keeps what it needs.
// Each step is a DeviceAction: plan::Action's common fields and one struct per kind of step
// (AddDeviceHold, ..., each with its executor contract; the preemption is the node lane's
// plan::PreemptSlurmJobs), visited by the executor (bridge/reconcile/device_lane.h).
//
//   std::optional<Selection> s = ChooseNode(nodes, pod, cfg, now, &why);
//   if (s) actions = PlanGive(*s, pod);            // then, every pass:
//   NodePlan p = PlanNode(node, cfg, now);          // continues every move, reports violations
//   if (auto* lift = p.actions[0].Get<RemoveDeviceHold>()) ...
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/devices/give_backoff.h"
#include "src/devices/placement.h"
#include "src/inventory/k8s_node.h"
#include "src/ownership/return_decision.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::devices {

// A Slurm job (not a placeholder) holding GPUs of the node.
struct NodeJob {
  slurm::JobView view;           // policy input: QOS, partition, admin comment, state
  std::vector<int64_t> indices;  // its GRES indices on this node (ParseGpuIndices)
  // When the bridge sent it the checkpoint signal for a give (recorded with the move), and
  // whether the record kept the millisecond: its grace then ends exactly `grace` later;
  // otherwise the stamp is the second rounded down and the grace counts from the second
  // after it (ownership::GraceEnds).
  std::optional<Clock::TimePoint> signalled_at;
  bool signalled_exactly = false;
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
  // Since when no allocated claim uses its devices (recorded by RecordIdleSince).
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
  std::string profile;  // the MIG profile of the slices it asked for ("" = whole GPUs)
  // A health hold (PlanNode keeps a GPU the driver tainted from Slurm with it): the device it
  // was submitted for, and its slot among those submitted together; "" and 0 for a give
  // (`pod` is then empty and every pod field above unused).
  std::string health;
  int64_t slot = 0;
  // A health hold submitted while a Slurm job ran on the bad GPU: that job; it pends until
  // the job ends (preempted as a give's victim is when its policy allows) and then starts
  // on every GPU the job freed. 0 for a 1-GPU health hold and a give.
  uint32_t under_job = 0;
};

struct Device {
  int64_t index = 0;      // Slurm's GRES index
  std::string name;       // the DRA device (MapGresFiles)
  bool k8s_hold = false;  // the bridge's DeviceTaintRule covers it
  // The driver's own taint on it (SliceDevice::taint: a GPU's health): kube-scheduler gives
  // it to no new claim, so a give must not free it ("" when none).
  std::string driver_taint;
  // An admin's drain of this one GPU (k8s_devices.h kDrainTaintKey: `bridgectl drain NODE
  // --gpu DEVICE`): the admin's reason ("" when not drained). Read like a driver's taint (out
  // of both schedulers once free), but the job on it is left to finish.
  std::string drained;
  // The driver tainted it or an admin drained it: kept from both schedulers.
  bool Out() const { return !driver_taint.empty() || !drained.empty(); }
  // Why, for Events and bridgectl: the driver's taint, or "drained: <reason>".
  std::string OutWhy() const;
  // The driver publishes it (a node leaving GPU sharing may hold devices no longer
  // published, and publish devices it cannot map).
  bool published = true;
  // A MIG slice's profile ("1g.10gb", gres.conf's Type of its index); "" for a whole GPU. A
  // give moves only devices of the kind its pod asks for.
  std::string profile;
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
  std::string pod;  // the give's pod ("health:NODE:DEVICE" for a health hold's victim)
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
  // Slurm's GRES type of the node's whole GPUs when it also has MIG slices: a whole-GPU
  // placeholder asks for that type, so Slurm cannot give it a slice ("" when untyped or
  // when the node has no slices).
  std::string whole_gres_type;
  std::vector<Device> devices;  // indexed by GRES index
  std::vector<NodeJob> jobs;
  std::vector<Placeholder> placeholders;
  std::vector<Claim> claims;
  std::vector<EndedVictim> ended_victims;
  bool healthy = true;
  // Why no new give may start here ("" when one may): the placeholder partition could end
  // or preempt a placeholder on this node (PlaceholderPartitionProblem).
  std::string no_gives;
  // Jobs here (any component) within their tenant's guarantee: never a give's victims.
  std::map<uint32_t, std::string> guaranteed_jobs;
  // The node's health::kGpuDevicesHealthyCondition as last read (nullopt: none yet).
  std::optional<inventory::NodeCondition> devices_condition;
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
  // Of `gpus`, those asked through ResourceClaims (devices::CountGpus).
  int64_t claim_gpus = 0;
  // The MIG profile of the slices it asks for ("" = whole GPUs): `gpus` counts slices then.
  std::string profile;
};

enum class Owner { kSlurm, kToKubernetes, kKubernetes, kToSlurm, kUnguarded, kOut };
// "slurm", "to-k8s", "k8s", "to-slurm", "unguarded", "out"
std::string_view OwnerName(Owner o);

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

// --- The device lane's action kinds: one struct each, with its executor contract
// (DeviceExecutorImpl, bridge/reconcile/device_lane.h, has one handler per kind). A
// DeviceAction carries plan::Action's common fields (plan::ActionFields: the node, the
// cause decided here, the Event that records it once it changed something) and one of
// these. The preemption is the node lane's own kind (plan::PreemptSlurmJobs) and the
// checkpoint signal wraps the node lane's, both run by the node lane's executor. Every kind
// is idempotent and re-checks at the source what it depends on.

// Hold `devices` for Slurm: create (or keep) the DeviceTaintRule of each.
struct AddDeviceHold {
  static constexpr std::string_view kName = "AddDeviceHold";
  std::vector<std::string> devices;
  uint32_t placeholder_job = 0;  // a return's placeholder (the log line), 0 for none
  friend bool operator==(const AddDeviceHold&, const AddDeviceHold&) = default;
};

// Lift the hold on `devices` for `pod`, only while placeholder `placeholder_job` runs on
// the node holding every device's GRES index (Aborted otherwise: plan again).
struct RemoveDeviceHold {
  static constexpr std::string_view kName = "RemoveDeviceHold";
  std::vector<std::string> devices;
  uint32_t placeholder_job = 0;
  std::string pod;  // "ns/name" the give is for (an Event on the pod too)
  // The placeholder's submission (Unix seconds, 0 = unknown): the give's duration metric.
  int64_t since_unix = 0;
  friend bool operator==(const RemoveDeviceHold&, const RemoveDeviceHold&) = default;
};

// sbatch a placeholder for `gpus` GPUs on the node for `pod`, recording `victims` in its
// record (idempotent per pod: SlurmClient::SubmitPlaceholder).
struct SubmitPlaceholder {
  static constexpr std::string_view kName = "SubmitPlaceholder";
  std::string pod;
  int64_t gpus = 0;
  std::vector<uint32_t> victims;
  // The GRES type it asks for ("gpu:<type>:<gpus>"; "" = any GPU): a MIG profile, or the
  // whole GPUs' type on a node with slices.
  std::string gres_type;
  std::string profile;  // the pod's MIG profile ("" = whole GPUs), kept in its record
  // The pod's earlier placeholder whose lifted GPUs kube-scheduler gave to `taken_by`
  // (0: none): its record names `taken_by` first, so each placeholder serves the pod that
  // uses it and the pod gets this new one (one placeholder per pod).
  uint32_t taken_job = 0;
  std::string taken_by;
  // A health hold (`pod` empty): the device the driver tainted and its slot, and the job
  // running on that device it follows (PlaceholderRecord::health, ::slot, ::under_job).
  std::string health;
  int64_t slot = 0;
  uint32_t under_job = 0;
  friend bool operator==(const SubmitPlaceholder&, const SubmitPlaceholder&) = default;
};

// The checkpoint signal of a give's victims: `jobs` as the node lane signals them, then
// `at_ms` (unix milliseconds) recorded as the signal time on placeholder `placeholder_job`
// (a time recorded already is kept).
struct SignalJobs {
  static constexpr std::string_view kName = "SignalJobs";
  plan::SignalSlurmJobs jobs;
  uint32_t placeholder_job = 0;
  std::string pod;  // the give's (the log line)
  int64_t at_ms = 0;
  friend bool operator==(const SignalJobs&, const SignalJobs&) = default;
};

// Record `at_ms` (unix milliseconds; 0: clear) as the idle-since of placeholder
// `placeholder_job`.
struct RecordIdleSince {
  static constexpr std::string_view kName = "RecordIdleSince";
  uint32_t placeholder_job = 0;
  int64_t at_ms = 0;
  friend bool operator==(const RecordIdleSince&, const RecordIdleSince&) = default;
};

// Record on placeholder `placeholder_job` that its devices return to Slurm.
struct MarkReturning {
  static constexpr std::string_view kName = "MarkReturning";
  uint32_t placeholder_job = 0;
  friend bool operator==(const MarkReturning&, const MarkReturning&) = default;
};

// scancel placeholder `placeholder_job`: its GPUs are Slurm's again. A running one (a
// return, `devices` those it held) only once each of its devices has been held again for a
// few seconds and no claim is allocated on them (Aborted otherwise); a pending one (a give
// whose pod no longer waits) at once. Gone: kUnchanged.
struct EndPlaceholder {
  static constexpr std::string_view kName = "EndPlaceholder";
  uint32_t placeholder_job = 0;
  std::vector<std::string> devices;
  // A return: the devices' idle-since (Unix seconds, 0 = unknown), for the return's
  // duration metric.
  int64_t since_unix = 0;
  friend bool operator==(const EndPlaceholder&, const EndPlaceholder&) = default;
};

// Record on the Kubernetes node that the give of placeholder `placeholder_job` for `pod`
// went unused (`at_unix`): its kUnusedGivesAnnotation, once per placeholder, written
// conditional on the node's resourceVersion.
struct RecordUnusedGive {
  static constexpr std::string_view kName = "RecordUnusedGive";
  uint32_t placeholder_job = 0;
  std::string pod;
  int64_t at_unix = 0;
  friend bool operator==(const RecordUnusedGive&, const RecordUnusedGive&) = default;
};

// Delete the holds on `devices` of a node leaving GPU sharing, on which no placeholder is
// left (mode_switch.h): the DeviceTaintRule of each, one already gone being fine. Unlike
// RemoveDeviceHold it checks no placeholder: the node lane takes the node whole next.
struct DropDeviceHold {
  static constexpr std::string_view kName = "DropDeviceHold";
  std::vector<std::string> devices;
  friend bool operator==(const DropDeviceHold&, const DropDeviceHold&) = default;
};

// plan::EvictPod: a pod on a lost give's GPUs where Slurm started a job that may not be
// preempted (RepairLostGives): one of the two must go, and the job may not.
// plan::SetNodeCondition: health::kGpuDevicesHealthyCondition, the node's GPU health in one
// condition; run by the node lane's executor.
using DeviceOperation =
    std::variant<AddDeviceHold, RemoveDeviceHold, SubmitPlaceholder, SignalJobs,
                 plan::PreemptSlurmJobs, RecordIdleSince, MarkReturning, EndPlaceholder,
                 RecordUnusedGive, DropDeviceHold, plan::EvictPod, plan::SetNodeCondition>;

// One step of a move: plan::Action's fields and a device kind.
using DeviceAction = plan::BasicAction<DeviceOperation>;
// "RemoveDeviceHold node1 devices=gpu-1 placeholder=900 pod=ml/infer-0" (logs, tests).
std::string ToString(const DeviceAction& a);

// The node's GPU health in one condition, for tools that read only nodes
// (health::kGpuDevicesHealthyCondition): False while the driver taints any GPU, counting and
// naming them, True otherwise. A SetNodeCondition only when it differs from what the node
// has (NodeDevices::devices_condition); quiet: the per-GPU Events say what changed.
// PlanPass puts it last in the node's actions (a failed write stops nothing before it).
std::optional<DeviceAction> PlanDevicesCondition(const NodeDevices& node);

// Which devices a give frees on one node: idle devices first, then the GPUs of preemptible
// jobs, never a non-preemptible job's.
struct Selection {
  std::string node;
  // Devices already Kubernetes' that no claim uses: they count toward the pod, so the give
  // moves only what is missing (kube-scheduler places the pod on both).
  std::vector<std::string> lent_idle;
  int64_t gpus = 0;               // what the placeholder asks for: the pod's GPUs - lent_idle
  std::string gres_type;          // ... of this GRES type ("" = any GPU)
  std::string profile;            // the pod's MIG profile ("" = whole GPUs)
  std::vector<std::string> idle;  // Slurm's devices no job and no claim uses
  int64_t idle_left = 0;          // Slurm's idle devices left on the node after the give
  std::vector<uint32_t> victims;  // jobs to preempt (empty when idle devices suffice)
  int64_t victim_gpus = 0;        // GPUs the victims hold (>= what is missing)
  double work_lost = 0;           // GPU-seconds the victims have run (the worst case lost)
  std::string why;
  uint32_t taken_job = 0;  // the pod's placeholder other pods took (SubmitPlaceholder)
  std::string taken_by;
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
// victim GPUs; then, for a pod that names no GPU model, the model with the most GPUs among
// `nodes` (pods that name a scarcer model can run nowhere else); then best fit (fewest idle
// devices left over: whole free nodes stay whole for large jobs and pods), then the node
// name. Nullopt when the pod is already served (a
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
  // The earliest time the plan changes with nothing else changing (a victim's grace ends, a
  // return is due to start); nullopt: no time the plan knows of changes it. (When holds
  // have settled is the executor's: DeviceExecutor::TakeRetryAt.)
  std::optional<Clock::TimePoint> recheck_at;
};

// Continues every move on the node and restores missing holds; level-triggered and
// idempotent: planning again on the state the actions produce asks for nothing new.
NodePlan PlanNode(const NodeDevices& node, const config::Config& cfg, Clock::TimePoint now);

// How long a device is held again before its return ends the placeholder (EndPlaceholder's
// executor waits it out from the hold's creation): kube-scheduler's informer has seen the
// hold by then, and an allocation it decided before has been written.
inline constexpr Clock::Duration kHoldSettle = std::chrono::seconds(5);

// Whether the lent devices of a give start to go back to Slurm (ownership::ShouldReturn's
// rule: no claim on them for lending.cooldown, lent for lending.min_lend_time, healthy), with
// the return begun kHoldSettle before the cool-down or the minimum lend time ends: the holds
// go up then, so that the devices are Slurm's when it ends rather than a settle later. What
// the devices are open to Kubernetes for after their last claim is the cool-down less that
// (none, for a cool-down of kHoldSettle or less).
ownership::ReturnDecision ReturnStarts(Clock::TimePoint lent_at,
                                       std::optional<Clock::TimePoint> idle_since, bool in_use,
                                       bool healthy, const ownership::LendingConfig& lending,
                                       Clock::TimePoint now);

}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
// What the planner asks the bridge to do. Plain values: one struct per kind of action (a
// std::variant in `Action::op`), with the cause, chain and Event every action carries
// (ActionFields, which the device lane's actions share). The executor in bridge/ carries
// them out idempotently (re-reading state first) and records each as a Kubernetes Event
// with `event_reason` and `event_message` on the node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/slurm/types.h"

namespace skb::plan {

// Every Slurm reason the bridge writes starts with this; the bridge only ever undoes a
// drain whose reason carries it (an admin's drain is never touched: slurm::DrainOrigin).
inline constexpr std::string_view kReasonPrefix = slurm::kBridgeMessagePrefix;

// The actions of one node's plan form independent chains. Within a chain an action may
// depend on the ones before it (drain before requeue; lend drain before preempt before
// release), so a failure stops the rest of its chain; it never holds back another chain (a
// reservation create refused for minutes must not delay a GPU-fault drain).
enum class Chain {
  kHealth,     // health drains, resumes and requeues (run first)
  kOwnership,  // the ownership state machine (src/ownership)
  kStatus,     // node conditions mirroring Slurm's view
  kFeatures,   // Slurm features from Kubernetes labels
};

struct ConditionSpec {
  std::string type;
  std::string status;  // True, False, Unknown
  std::string reason;  // CamelCase
  std::string message;
  // lastTransitionTime as the planner's cache knows it, so that the executor need not read
  // the node first (a GET per write).
  // kUnknown: read the node; kNow: the status flips now; kKeep: the status stays: keep `since`.
  // The bridge is the only writer of its conditions, so the cache can only lag its own
  // writes: a lagging cache repeats a write with a transition time late by that lag.
  enum class Transition { kUnknown, kNow, kKeep };
  Transition transition = Transition::kUnknown;
  Clock::TimePoint since{};  // kKeep
  friend bool operator==(const ConditionSpec&, const ConditionSpec&) = default;
};

// Severity of the Event recording an action (Kubernetes Event type).
enum class EventType { kNormal, kWarning };

// Why the planner asked for an action. Decided by the planner that made it, so nothing
// downstream (executor guards, metrics, bridgectl) recovers it from a reason string.
enum class Cause {
  kHealth,       // a bad condition, taint or cordon on the Kubernetes node (src/health)
  kMaintenance,  // the maintenance condition (src/health)
  kSlurmState,   // publishing Slurm's view of the node as Kubernetes conditions
  kLend,         // lending the node to Kubernetes (src/ownership)
  kReturn,       // taking a lent node back for Slurm
  kSwap,         // replacing the reservation pod (a class change, a failed pod)
  kReservation,  // keeping a Slurm-owned node's reservation pod in shape
  kFeatures,     // Slurm node features from Kubernetes labels (src/plan/features)
};
std::string_view CauseName(Cause c);
// The `cause` label of skb_slurm_node_drains_total / _resumes_total: "lending" (a lend or
// a return), "maintenance" or "health".
std::string_view DrainCauseLabel(Cause c);

// A pod the action applies to; `uid` is a precondition (the action must not touch a
// different pod that took the same name).
struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

struct TaintSpec {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const TaintSpec&, const TaintSpec&) = default;
};

// A pod toleration; {"", "Exists", "", ""} tolerates every taint.
struct TolerationSpec {
  std::string key;
  std::string op = "Exists";  // Exists or Equal
  std::string value;
  std::string effect;  // empty = every effect
  friend bool operator==(const TolerationSpec&, const TolerationSpec&) = default;
};

// The bridge's reservation pod for one Slurm-owned node, as plain data: the executor maps
// it 1:1 onto a core/v1 Pod (see src/ownership/ownership.h for the exact shape).
struct ReservationSpec {
  std::string namespace_name;
  std::string name;
  std::string node;          // spec.nodeName (bound directly, no scheduler)
  std::string node_uid;      // its uid for the owner reference ("": read the node)
  std::string gpu_resource;  // "nvidia.com/gpu": requests = limits = `gpus`
  int64_t gpus = 0;
  // MIG slice resources held too ("nvidia.com/mig-1g.10gb" -> 7): requests = limits.
  std::map<std::string, int64_t> slices;
  std::string priority_class_name;  // spec.priorityClassName
  int32_t priority = 0;             // the class's value (informative: admission sets it)
  std::string image;
  std::vector<std::string> command;  // the container's command (exits once released)
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  int64_t termination_grace_seconds = 0;
  std::vector<TolerationSpec> tolerations;
  friend bool operator==(const ReservationSpec&, const ReservationSpec&) = default;
};

// A metadata merge patch: keys to set and keys to remove.
struct AnnotationPatch {
  std::map<std::string, std::string> set;
  std::vector<std::string> remove;
  bool empty() const { return set.empty() && remove.empty(); }
  friend bool operator==(const AnnotationPatch&, const AnnotationPatch&) = default;
};

// What ReleaseReservationPod verifies at the source before releasing.
enum class ReleaseCheck {
  kNoSlurmJobs,  // a lend: Slurm (queried now) shows no job holding the node
  kSwapTaint,    // a swap: the node carries the reservation-swap NoSchedule taint
  kNodeGone,     // the Kubernetes node no longer exists (its GPUs count nowhere)
};

// Which processes of a job get a signal (scancel --signal: --full, --batch, steps only).
enum class SignalScope { kFull, kBatchOnly, kSteps };

// What preemption does to a job (per partition / QOS, src/ownership/lending_config.h).
enum class JobPreemptMode {
  kRequeue,      // scontrol requeue: back to pending, starts again when resources allow
  kRequeueHold,  // scontrol requeuehold: back to pending, held until released
  kCancel,       // scancel: the job ends (CANCELLED); only when an admin asked for it
};

std::string_view EventTypeName(EventType t);
std::string_view SignalScopeName(SignalScope s);
std::string_view JobPreemptModeName(JobPreemptMode m);
// The `mode` label of skb_preemptions_total: "cancel", else "requeue" (a requeue-hold is a
// requeue).
std::string_view PreemptionModeLabel(JobPreemptMode m);

// --- The action kinds: one struct each, with its executor contract. The executor
// (bridge/reconcile/action_executor.h) has one handler per struct; a new kind is a struct
// here, an entry in `Operation`, its handler and its tests. Every kind is idempotent and
// re-checks at the source what it depends on. Node names are Slurm names (`Action::node`);
// Kubernetes objects of the node are addressed by `Action::K8sNode()`.

// Drain the Slurm node with `reason` (or re-word the bridge's own drain). A lend
// (Cause::kLend) never takes over an admin's drain: Aborted.
struct DrainSlurmNode {
  static constexpr std::string_view kName = "DrainSlurmNode";
  std::string reason;
  friend bool operator==(const DrainSlurmNode&, const DrainSlurmNode&) = default;
};

// Resume the Slurm node, only if its drain reason is still `expected_reason` (Aborted
// otherwise: an admin may have taken the node over); not drained: kUnchanged. With
// `down_too`, a node that is DOWN with that reason is resumed as well (the maintenance
// cycle's node after its reboot: Slurm brings it back DOWN).
struct ResumeSlurmNode {
  static constexpr std::string_view kName = "ResumeSlurmNode";
  std::string expected_reason;
  bool down_too = false;
  // A return: when the last Kubernetes GPU pod left (Unix seconds, 0 = not tracked), for
  // the duration metrics.
  int64_t since_unix = 0;
  friend bool operator==(const ResumeSlurmNode&, const ResumeSlurmNode&) = default;
};

// Requeue `job_ids` (running work that must leave the node now); a job already gone is
// skipped.
struct RequeueSlurmJobs {
  static constexpr std::string_view kName = "RequeueSlurmJobs";
  std::vector<uint32_t> job_ids;
  friend bool operator==(const RequeueSlurmJobs&, const RequeueSlurmJobs&) = default;
};

// Set `condition` on the Kubernetes node (status subresource, merged by type).
struct SetNodeCondition {
  static constexpr std::string_view kName = "SetNodeCondition";
  ConditionSpec condition;
  friend bool operator==(const SetNodeCondition&, const SetNodeCondition&) = default;
};

// Set the Slurm node's available and active features to `features`.
struct SetSlurmFeatures {
  static constexpr std::string_view kName = "SetSlurmFeatures";
  std::vector<std::string> features;
  friend bool operator==(const SetSlurmFeatures&, const SetSlurmFeatures&) = default;
};

// Node ownership (src/ownership): lending a node to Kubernetes and taking it back. The
// exact contract of each of these kinds is spelled out in src/ownership/ownership.h.

// Create the reservation pod `reservation` describes (already there: kUnchanged).
struct CreateReservationPod {
  static constexpr std::string_view kName = "CreateReservationPod";
  ReservationSpec reservation;
  friend bool operator==(const CreateReservationPod&, const CreateReservationPod&) = default;
};

// Delete `pod` (uid precondition); the bridge's finalizer holds it until released.
struct DeleteReservationPod {
  static constexpr std::string_view kName = "DeleteReservationPod";
  PodRef pod;
  friend bool operator==(const DeleteReservationPod&, const DeleteReservationPod&) = default;
};

// Merge-patch `annotations` into `pod`'s metadata.
struct PatchPodAnnotations {
  static constexpr std::string_view kName = "PatchPodAnnotations";
  PodRef pod;
  AnnotationPatch annotations;
  friend bool operator==(const PatchPodAnnotations&, const PatchPodAnnotations&) = default;
};

// After verifying `check` at the source: annotate `pod` released and drop the finalizer.
struct ReleaseReservationPod {
  static constexpr std::string_view kName = "ReleaseReservationPod";
  PodRef pod;
  ReleaseCheck check = ReleaseCheck::kNoSlurmJobs;
  // A lend: when it began (Unix seconds, 0 = not tracked), for the duration metrics.
  int64_t since_unix = 0;
  friend bool operator==(const ReleaseReservationPod&, const ReleaseReservationPod&) = default;
};

// Send `signal` to `job_ids` (`scope`), at most once per job and signal in a short window.
struct SignalSlurmJobs {
  static constexpr std::string_view kName = "SignalSlurmJobs";
  std::vector<uint32_t> job_ids;
  int signal = 0;  // the signal number
  SignalScope scope = SignalScope::kFull;
  friend bool operator==(const SignalSlurmJobs&, const SignalSlurmJobs&) = default;
};

// Requeue / requeue-hold / cancel `job_ids` (`mode`), recording for whom (`preemptor`:
// "ns/pod" or "kubernetes") and when (`at_unix`) in each job's admin comment
// (ownership::RecordPreemption), which is what anti-thrash reads.
struct PreemptSlurmJobs {
  static constexpr std::string_view kName = "PreemptSlurmJobs";
  std::vector<uint32_t> job_ids;
  JobPreemptMode mode = JobPreemptMode::kRequeue;
  std::string preemptor;
  int64_t at_unix = 0;
  // The jobs already ended after the checkpoint signal sent at `at_unix` (died of it, or
  // checkpointed and exited): requeue the finished run that started before `at_unix`,
  // best effort -- Slurm refusing is a Warning Event, not an error.
  bool ended_after_signal = false;
  // When the checkpoint signal was sent (Unix seconds, 0 = not tracked), for the metrics.
  int64_t since_unix = 0;
  friend bool operator==(const PreemptSlurmJobs&, const PreemptSlurmJobs&) = default;
};

// Add `taint` to the Kubernetes node (present: kUnchanged).
struct SetNodeTaint {
  static constexpr std::string_view kName = "SetNodeTaint";
  TaintSpec taint;
  friend bool operator==(const SetNodeTaint&, const SetNodeTaint&) = default;
};

// Remove the node's taint with `taint.key` and `taint.effect` (absent: kUnchanged).
struct RemoveNodeTaint {
  static constexpr std::string_view kName = "RemoveNodeTaint";
  TaintSpec taint;
  friend bool operator==(const RemoveNodeTaint&, const RemoveNodeTaint&) = default;
};

// Merge-patch `annotations` and `labels` into the Kubernetes node's metadata.
struct PatchNodeAnnotations {
  static constexpr std::string_view kName = "PatchNodeAnnotations";
  AnnotationPatch annotations;
  AnnotationPatch labels;
  friend bool operator==(const PatchNodeAnnotations&, const PatchNodeAnnotations&) = default;
};

// Put the bridge's finalizer back on `pod` (someone removed it by hand).
struct RestoreFinalizer {
  static constexpr std::string_view kName = "RestoreFinalizer";
  PodRef pod;
  friend bool operator==(const RestoreFinalizer&, const RestoreFinalizer&) = default;
};

// Evict `pod` through the Eviction API, which honours PodDisruptionBudgets (quota reclaim).
struct EvictPod {
  static constexpr std::string_view kName = "EvictPod";
  PodRef pod;
  friend bool operator==(const EvictPod&, const EvictPod&) = default;
};

// The maintenance cycle (src/health/maintenance.h).

// Ask Slurm to reboot the node as soon as it is idle, through the site's RebootProgram
// (SlurmClient::RebootNode: ASAP, nextstate DOWN); a reboot already asked for: kUnchanged.
struct RebootSlurmNode {
  static constexpr std::string_view kName = "RebootSlurmNode";
  std::string reason;  // starts with kReasonPrefix
  friend bool operator==(const RebootSlurmNode&, const RebootSlurmNode&) = default;
};

// Create the maintenance reservation `name` on the node, for the bridge's user only, from
// now for `minutes` (there already: kUnchanged).
struct CreateSlurmReservation {
  static constexpr std::string_view kName = "CreateSlurmReservation";
  std::string name;
  int64_t minutes = 0;
  friend bool operator==(const CreateSlurmReservation&, const CreateSlurmReservation&) = default;
};

// Delete the Slurm reservation `name` (none: kUnchanged).
struct DeleteSlurmReservation {
  static constexpr std::string_view kName = "DeleteSlurmReservation";
  std::string name;
  friend bool operator==(const DeleteSlurmReservation&, const DeleteSlurmReservation&) = default;
};

// Submit the check job on the node inside `reservation` (SlurmClient::SubmitCheckJob; one
// pending or running already: kUnchanged).
struct SubmitCheckJob {
  static constexpr std::string_view kName = "SubmitCheckJob";
  std::string reservation;
  std::string command;
  int64_t gpus = 0;
  int64_t minutes = 0;
  // A check job of the node submitted at or after this Unix time counts as submitted
  // whatever its state (one that already ended too); 0: only a pending or running one.
  int64_t submitted_since = 0;
  friend bool operator==(const SubmitCheckJob&, const SubmitCheckJob&) = default;
};

using Operation =
    std::variant<DrainSlurmNode, ResumeSlurmNode, RequeueSlurmJobs, SetNodeCondition,
                 SetSlurmFeatures, CreateReservationPod, DeleteReservationPod, PatchPodAnnotations,
                 ReleaseReservationPod, SignalSlurmJobs, PreemptSlurmJobs, SetNodeTaint,
                 RemoveNodeTaint, PatchNodeAnnotations, RestoreFinalizer, EvictPod, RebootSlurmNode,
                 CreateSlurmReservation, DeleteSlurmReservation, SubmitCheckJob>;

// The fields every action carries, whatever its lane: on which node, why, and the Event
// that records it. Both lanes' actions are a BasicAction (these fields and one operation):
// plan::Action here, devices::DeviceAction (src/devices/device_plan.h) for GPU-granular
// nodes.
struct ActionFields {
  std::string node;      // the node's Slurm name (the reconcile key)
  std::string k8s_node;  // its Kubernetes name when kubernetes.node_names makes it differ
  Cause cause = Cause::kHealth;
  // The Event recording this action once it changed something: its type, reason and text.
  EventType event_type = EventType::kNormal;
  std::string event_reason;   // CamelCase reason of the Event recording this action
  std::string event_message;  // what a human reads in `kubectl describe node`
  // Routine bookkeeping (a reservation's job-list refresh, a healthy node condition's first
  // publication): logged, no Event. The record is the object itself, and an Event per
  // refresh would double the bridge's write rate.
  bool quiet = false;
  // Which chain of its plan the action belongs to (see Chain). The device lane runs a
  // node's actions as one chain: its actions keep the default.
  Chain chain = Chain::kOwnership;

  // The name to use with the Kubernetes API (node objects, Events on the node).
  const std::string& K8sNode() const { return k8s_node.empty() ? node : k8s_node; }

  friend bool operator==(const ActionFields&, const ActionFields&) = default;
};

// One planned action: what to do (`op`, one alternative of `Op`) and the common fields.
// `Op` is a std::variant of exactly the kinds one executor runs: that executor visits it
// with one handler per alternative, so a kind it has no handler for does not build, and a
// kind of another lane cannot be put in its actions.
template <class Op>
struct BasicAction : ActionFields {
  Op op;

  // The kind's name ("DrainSlurmNode"): logs, metric labels, Event reasons.
  std::string_view Kind() const {
    return std::visit([](const auto& o) { return std::decay_t<decltype(o)>::kName; }, op);
  }
  template <class T>
  bool Is() const {
    return std::holds_alternative<T>(op);
  }
  // The operation as `T`, or null when it is another kind.
  template <class T>
  const T* Get() const {
    return std::get_if<T>(&op);
  }
  template <class T>
  T* Get() {
    return std::get_if<T>(&op);
  }
  // The operation as `T`, which it must be (std::bad_variant_access otherwise): for code,
  // such as tests, that has checked the kind.
  template <class T>
  const T& As() const {
    return std::get<T>(op);
  }
  template <class T>
  T& As() {
    return std::get<T>(op);
  }

  friend bool operator==(const BasicAction&, const BasicAction&) = default;
};

// The node lane's action (src/health, src/ownership, src/plan/features), run by
// bridge/reconcile/action_executor.h.
using Action = BasicAction<Operation>;

// Whether the status lane writes `a` (the reconciler's condition writes, from the state it
// sees when it writes): a node condition mirroring Slurm's view. The maintenance cycle's
// record (SlurmMaintenance) and its closing of the request are not: each is a step of the
// cycle's chain, written in order with the others (the phase before the reboot it starts).
bool IsStatusLaneCondition(const Action& a);

// Runs `actions` in order through `execute`, except that an action whose chain already
// failed in this pass is skipped (the next pass plans it again from what it then observes).
void RunChains(const std::vector<Action>& actions,
               const std::function<Status(const Action&)>& execute);

// "DrainSlurmNode node3 reason='k8s-bridge: GPUHealthy=False: XID 79'" (logs, test output).
std::string ToString(const Action& a);

}  // namespace skb::plan

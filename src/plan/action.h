// What the planner asks the bridge to do. Plain values: the executor in bridge/ carries
// them out idempotently (re-reading state first) and records each as a Kubernetes Event
// with `event_reason` and `event_message` on the node.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/base/status.h"

namespace skb::plan {

// Every Slurm reason the bridge writes starts with this; the bridge only ever undoes a
// drain whose reason carries it (an admin's drain is never touched).
inline constexpr std::string_view kReasonPrefix = "k8s-bridge: ";
// Drains made for lending a node to Kubernetes (the ownership state machine) rather than
// for health: the health planner leaves them alone.
inline constexpr std::string_view kLendReasonPrefix = "k8s-bridge: lent to ";

enum class ActionKind {
  kDrainSlurmNode,    // drain (or re-word the bridge's drain) with `slurm_reason`
  kResumeSlurmNode,   // resume, only if the drain reason is still `expected_reason`
  kRequeueSlurmJobs,  // requeue `job_ids` (running work that must leave the node now)
  kSetNodeCondition,  // set `condition` on the Kubernetes node (status subresource)
  kSetSlurmFeatures,  // set the Slurm node's available and active features to `features`
  // Node ownership (src/ownership): lending a node to Kubernetes and taking it back. The
  // executor contract of each kind is spelled out in src/ownership/ownership.h.
  kCreateReservationPod,   // create the pod `reservation` describes
  kDeleteReservationPod,   // delete `pod` (uid precondition); the bridge's finalizer holds it
  kPatchPodAnnotations,    // merge-patch `annotations` into `pod`'s metadata
  kReleaseReservationPod,  // after `release_check`: annotate `pod` released, drop the finalizer
  kSignalSlurmJobs,        // send `signal` to `job_ids` (`signal_scope`)
  kPreemptSlurmJobs,       // requeue / requeue-hold / cancel `job_ids` (`preempt_mode`)
  kSetNodeTaint,           // add `taint` to the Kubernetes node (no-op when present)
  kRemoveNodeTaint,        // remove the taint with `taint.key` and `taint.effect`
  kPatchNodeAnnotations,   // merge-patch `annotations` and `labels` into the node's metadata
  kRestoreFinalizer,       // put the bridge's finalizer back on `pod` (removed by hand)
  kEvictPod,               // evict `pod` through the Eviction API (quota reclaim)
};

std::string_view ActionKindName(ActionKind k);

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

// What kReleaseReservationPod verifies at the source before releasing.
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

struct Action {
  ActionKind kind = ActionKind::kDrainSlurmNode;
  std::string node;               // the node's Slurm name (the reconcile key)
  std::string k8s_node;           // its Kubernetes name when kubernetes.node_names makes it differ
  std::string slurm_reason;       // kDrainSlurmNode
  std::string expected_reason;    // kResumeSlurmNode
  std::vector<uint32_t> job_ids;  // kRequeueSlurmJobs
  ConditionSpec condition;        // kSetNodeCondition
  std::vector<std::string> features;  // kSetSlurmFeatures
  ReservationSpec reservation;        // kCreateReservationPod
  PodRef pod;  // kDeleteReservationPod, kPatchPodAnnotations, kReleaseReservationPod
  AnnotationPatch annotations;  // kPatchPodAnnotations, kPatchNodeAnnotations
  AnnotationPatch labels;       // kPatchNodeAnnotations (the same merge patch)
  ReleaseCheck release_check = ReleaseCheck::kNoSlurmJobs;  // kReleaseReservationPod
  int signal = 0;                                           // kSignalSlurmJobs (signal number)
  SignalScope signal_scope = SignalScope::kFull;            // kSignalSlurmJobs
  JobPreemptMode preempt_mode = JobPreemptMode::kRequeue;   // kPreemptSlurmJobs
  // kPreemptSlurmJobs: why, for humans ("preempted by k8s-bridge for ns/pod"); for whom
  // ("ns/pod" or "kubernetes"); and when (Unix seconds). The executor records the last two
  // in each job's admin comment (ownership::RecordPreemption) for anti-thrash.
  std::string job_comment;
  std::string preemptor;
  int64_t at_unix = 0;
  // kPreemptSlurmJobs: the jobs already ended after the checkpoint signal sent at `at_unix`
  // (died of it, or checkpointed and exited): requeue the finished run that started before
  // `at_unix`, best effort -- Slurm refusing is a Warning Event, not an error.
  bool ended_after_signal = false;
  // When what this action ends began (Unix seconds, 0 = not tracked), for the duration
  // metrics: kPreemptSlurmJobs the checkpoint signal; kReleaseReservationPod (a lend) the
  // start of the lend; kResumeSlurmNode (a return) the last Kubernetes GPU pod leaving.
  int64_t since_unix = 0;
  TaintSpec taint;  // kSetNodeTaint, kRemoveNodeTaint
  Cause cause = Cause::kHealth;
  // The Event recording this action once it changed something: its type, reason and text.
  EventType event_type = EventType::kNormal;
  std::string event_reason;   // CamelCase reason of the Event recording this action
  std::string event_message;  // what a human reads in `kubectl describe node`
  // Routine bookkeeping (a reservation's job-list refresh, a healthy node condition's first
  // publication): logged, no Event. The record is the object itself, and an Event per
  // refresh would double the bridge's write rate.
  bool quiet = false;
  // Which chain of its plan the action belongs to (see Chain).
  Chain chain = Chain::kOwnership;

  // The name to use with the Kubernetes API (node objects, Events on the node).
  const std::string& K8sNode() const { return k8s_node.empty() ? node : k8s_node; }

  friend bool operator==(const Action&, const Action&) = default;
};

// Runs `actions` in order through `execute`, except that an action whose chain already
// failed in this pass is skipped (the next pass plans it again from what it then observes).
void RunChains(const std::vector<Action>& actions,
               const std::function<Status(const Action&)>& execute);

// "DrainSlurmNode node3 reason='k8s-bridge: GPUHealthy=False: XID 79'" (logs, test output).
std::string ToString(const Action& a);

}  // namespace skb::plan

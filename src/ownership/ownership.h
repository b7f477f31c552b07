// SPDX-License-Identifier: Apache-2.0
// Node ownership: which scheduler owns a managed GPU node, and the actions that move it
// between Slurm and Kubernetes (docs/architecture.md "Node ownership"). Pure: a function of
// (node, config, now). The daemon keeps no state: everything a lend must remember is read
// back from the reservation pod, the Kubernetes node's annotations and taints, and the
// Slurm node's drain reason, so planning again after a crash resumes the step it was at.
//
//   OwnershipPlan p = PlanOwnership(node, cfg, clock.Now());
//   for (const plan::Action& a : p.actions) RETURN_IF_ERROR(executor.Execute(a));
//   if (p.recheck_at) queue.AddAt(node.name, *p.recheck_at);
//
// Actions are listed in the order they must run; a failure stops the rest of the plan's
// ownership actions (plan::Chain: health actions are not held back by it) and the next
// plan starts over from the state it then observes. Carried out, a plan
// converges: planning again on the resulting state (same `now`) asks for nothing more.
//
// States (derived, never stored):
//   slurm      our reservation pod exists and is not being deleted; the node is not lent.
//              Keep its class (PriorityClass) in step with the jobs -- a change is a
//              replacement ("swap", below) -- and its job-list annotation (batched).
//   lending    our reservation is being deleted (not by a swap). Steps, each idempotent:
//              node annotated lent-at/lent-to -> Slurm node drained "k8s-bridge: lent to
//              <ns/pod>" -> each job signalled (signalled-at recorded) -> after its grace,
//              preempted (requeue by default) -> once Slurm shows no job on the node, the
//              reservation released (annotation released=true, finalizer removed).
//              A non-preemptible job is never signalled or preempted: the lend waits for
//              it (Warning Event, node tainted slurm-busy so the preemptor goes elsewhere).
//   k8s        no reservation; the node is lent (lent-at annotation or lend drain). The
//              drain is kept. Without a Kubernetes GPU pod for `cooldown` (idle-since
//              annotation) and after `min_lend_time`, and healthy, a new reservation is
//              created (returning).
//   returning  our reservation exists, not being deleted, and the node is lent: once the
//              reservation runs the Slurm node is resumed and the lend annotations removed.
//              If a Kubernetes GPU pod took the node first, the reservation is deleted and
//              the node stays lent.
//   swapping   a reservation replacement: node tainted reservation-swap (NoSchedule) ->
//              old pod annotated replacing=true -> deleted -> released (the taint, not an
//              empty node, makes that safe) -> new pod created -> taint removed once it
//              runs.
//
// Switching modes (gpu_sharing, docs/gpu-granular.md): a node the device lane finds eligible
// (ManagedNode::gpu_sharing) is handed over to it once the node lane holds nothing there.
// Until then no new lend starts, and what is in flight ends as it would:
//   slurm      waits until the device lane holds every GPU (Handover::kHoldsWanted), then
//              retires the reservation as a swap without a successor: swap taint and guard,
//              marked replacing, deleted, released under the taint; then the taint, the
//              guard and the lend bookkeeping go (retiring).
//   lending    started (lent-at or the lend drain): completes; the node is then lent.
//              Not started yet (a preemption, a deletion): refused, the reservation retired.
//   k8s        stays lent and returns on its cool-down (or a reclaim) through returning.
//   returning  completes; the node is then slurm.
//   swapping   the old reservation is released; no new one is created: retiring.
// A node with none of the node lane's objects or records left is handed over (kGpuShared,
// Handover::kHandedOver; kGpuSharedSinceAnnotation records it, Event GpuSharingStarted). A
// node no longer eligible stays the device lane's while it still has placeholders or holds
// there (GpuSharingView::leaving); then the node lane takes it as a new node (Event
// GpuSharingEnded when it removes the record).
//
// Safety (checked here and again at the source by the executor):
//   - a reservation is released for a lend only when Slurm shows no job on the node;
//   - a lent node is resumed only while our reservation runs and no other GPU pod is on it;
//   - Slurm work left on a node whose reservation no longer holds (or is about to stop
//     holding) the GPUs in Kubernetes' count, or a signalled job that outlived its grace,
//     gets the slurm-busy NoSchedule taint (the kill deadline: lending_config.h
//     ReservationGrace).
//
// Bad input: a pod with the reservation's name but without the bridge's role label is
// someone else's: never touched, counted as a Kubernetes GPU pod, Warning; on a lent node
// it blocks the return (return-blocked annotation, Warning). A live reservation whose
// finalizer was removed by hand gets it back (Warning) before anything else is done with
// it. A reservation that vanished (finalizer removed by hand, then deleted) while Slurm
// still runs jobs: if the node was lent, the lend carries on (busy taint); if not, it is
// recreated at once. Deleting the namespace deletes every reservation: every node is lent
// (protected work still waits) and none returns until the namespace exists again (creates
// fail; the executor says so).
//
// Executor contract (bridge/; the names are schema.h's): each kind re-checks at the
// source, is idempotent, and records event_type/event_reason/event_message as an Event on
// the node (and on the pod for pod actions) only when it changed something. Aborted = state
// moved, plan again; FailedPrecondition = Warning Event, wait for a change.
//   kCreateReservationPod  Pod from `reservation` (reservation.h): labels, annotations, finalizers,
//       spec.nodeName, priorityClassName (not priority), restartPolicy Always,
//       terminationGracePeriodSeconds, tolerations, one container (image, command,
//       requests = limits = {gpu_resource: gpus}, tiny cpu/memory, non-root, read-only root)
//       with a downward-API volume at kAnnotationsMountPath (item "annotations" <-
//       metadata.annotations). AlreadyExists: OK if the pod there carries kRoleLabel,
//       else FailedPrecondition (someone else's pod). Forbidden (namespace terminating)
//       or NotFound (namespace gone): FailedPrecondition.
//   kDeleteReservationPod  GET; NotFound or already deleting: OK; other uid: Aborted; no
//       kRoleLabel: FailedPrecondition (never delete a pod that is not ours). DELETE with
//       preconditions.uid, the pod's own grace period.
//   kPatchPodAnnotations   merge patch of metadata.annotations (remove = null) carrying
//       metadata.uid, so a pod re-created under the name is not patched. NotFound: Aborted.
//   kReleaseReservationPod verify first: kNoSlurmJobs -> Slurm, queried now (not the
//       snapshot), shows the node drained (any reason: an admin's resume mid-lend is
//       undone by the next plan's drain) and then no running/suspended/completing job on
//       it; kSwapTaint ->
//       the node (GET) carries kSwapTaintKey:NoSchedule; kNodeGone -> the node (GET) is
//       NotFound (it exists but is not selected: FailedPrecondition). Else Aborted. Then
//       ONE JSON patch: test uid, add kReleasedAnnotation "true", test+remove kFinalizer by index.
//       Then DELETE again with gracePeriodSeconds=1 (shortening a pending deletion is allowed): the
//       pod's GPUs count in Kubernetes until the pod is gone, and waiting for the kubelet to
//       refresh the downward-API file would add up to a minute to every lend. NotFound: OK.
//   kSignalSlurmJobs       slurm_kill_job2(id, signal, KILL_FULL_JOB | KILL_JOB_BATCH | 0
//       for kFull | kBatchOnly | kSteps); a job no longer running: skipped, OK.
//   kPreemptSlurmJobs      per job, re-read: not running/suspended on this node -> skip.
//       First admin_comment = RecordPreemption(current, at_unix, preemptor, cfg.lending)
//       (idempotent for the same at_unix), then slurm_requeue(id, 0) | slurm_requeue(id,
//       JOB_REQUEUE_HOLD) | slurm_kill_job(id, SIGKILL, 0). Slurm refusing:
//       FailedPrecondition (the planner asks again; the busy taint keeps the node safe).
//   kSetNodeTaint / kRemoveNodeTaint  read-modify-write of spec.taints with
//       resourceVersion (Conflict: Aborted); already so: no change, no Event.
//   kPatchNodeAnnotations  merge patch of the node's metadata.annotations (remove = null).
//   kRestoreFinalizer      ONE JSON patch: test uid, test deletionTimestamp absent, add
//       kFinalizer. Already there: no change, no Event. NotFound or a failed test: Aborted
//       (the pod went or is going; plan again).
//   kDrainSlurmNode (lend)  as for health, but never over a drain whose reason lacks the
//       bridge prefix (an admin's): Aborted.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/plan/action.h"
#include "src/plan/node_plan.h"

namespace skb::ownership {

enum class OwnerState {
  kDisabled,
  kUnknown,
  kSlurm,
  kLending,
  kKubernetes,
  kReturning,
  kSwapping,
  kGpuShared,  // the device lane's (gpu_sharing): the node lane does nothing there
};

std::string_view OwnerStateName(OwnerState s);  // "slurm", "lending", "k8s", "gpu-shared", ...

struct OwnershipPlan {
  OwnerState state = OwnerState::kUnknown;
  std::vector<plan::Action> actions;
  // Plan this node again at this time even if nothing changes (a grace period, the
  // cool-down, a batched annotation update or a class-change delay ends).
  std::optional<Clock::TimePoint> recheck_at;
  // One line per fact or rule considered (bridgectl describe).
  std::vector<std::string> explanation;
  // gpu_sharing: which lane has the node ("Switching modes" above); while an eligible node is
  // not handed over yet, why.
  plan::Handover handover = plan::Handover::kNodeLane;
  std::string handover_why;
};

// The busy taint (kBusyTaintKey) goes on this long before the kubelet's kill deadline of
// the reservation.
inline constexpr Clock::Duration kBusyTaintLead = std::chrono::seconds(30);
// How long a lend waits after its reservation's deletion for the pod that preempted it to
// show (its nominated node), so the lend can name it.
inline constexpr Clock::Duration kPreemptorWait = std::chrono::seconds(2);

// `min_update_interval`: a floor under lending.reservation_update_interval that the caller
// derives from the cluster's size (the job-list refreshes of N nodes are N / interval writes
// per second, which must leave the client's rate limit room for the actions that matter).
OwnershipPlan PlanOwnership(const inventory::ManagedNode& node, const config::Config& cfg,
                            Clock::TimePoint now, Clock::Duration min_update_interval = {});

}  // namespace skb::ownership

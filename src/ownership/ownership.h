// Node ownership: which scheduler owns a managed GPU node, and the actions that move it
// between Slurm and Kubernetes (DESIGN.md "Node ownership"; issue 6). Pure: a function of
// (node, config, now). The daemon keeps no state: everything a lend must remember is read
// back from the reservation pod, the Kubernetes node's annotations and taints, and the
// Slurm node's drain reason, so planning again after a crash resumes the step it was at.
//
//   OwnershipPlan p = PlanOwnership(node, cfg, clock.Now());
//   for (const plan::Action& a : p.actions) RETURN_IF_ERROR(executor.Execute(a));
//   if (p.recheck_at) queue.AddAt(node.name, *p.recheck_at);
//
// Actions are listed in the order they must run; the executor stops at the first error
// and the next plan starts over from the state it then observes. Carried out, a plan
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
// Safety (checked here and again at the source by the executor):
//   - a reservation is released for a lend only when Slurm shows no job on the node;
//   - a lent node is resumed only while our reservation runs and no other GPU pod is on it;
//   - Slurm work left on a node whose reservation no longer holds (or is about to stop
//     holding) the GPUs in Kubernetes' count gets the slurm-busy NoSchedule taint.
//
// Bad input: a pod with the reservation's name but without the bridge's role label is
// someone else's: never touched, counted as a Kubernetes GPU pod, Warning. A reservation
// that vanished (finalizer removed by hand) while Slurm still runs jobs: if the node was
// lent, the lend carries on (busy taint); if not, it is recreated at once. Deleting the
// namespace deletes every reservation: every node is lent (protected work still waits)
// and none returns until the namespace exists again (creates fail; the executor says so).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/policy.h"
#include "src/plan/action.h"

namespace skb::ownership {

enum class OwnerState { kDisabled, kUnknown, kSlurm, kLending, kKubernetes, kReturning, kSwapping };

std::string_view OwnerStateName(OwnerState s);  // "slurm", "lending", "k8s", ...

struct OwnershipPlan {
  OwnerState state = OwnerState::kUnknown;
  std::vector<plan::Action> actions;
  // Plan this node again at this time even if nothing changes (a grace period, the
  // cool-down, a batched annotation update or a class-change delay ends).
  std::optional<Clock::TimePoint> recheck_at;
  // One line per fact or rule considered (bridgectl describe).
  std::vector<std::string> explanation;
};

OwnershipPlan PlanOwnership(const inventory::ManagedNode& node, const config::Config& cfg,
                            Clock::TimePoint now);

// The reservation pod's name for a Kubernetes node name ("reserve-{node}").
std::string ReservationName(const LendingConfig& cfg, std::string_view k8s_node_name);

// The pod spec for `node`'s reservation at class `cls`, listing `node.jobs`.
plan::ReservationSpec BuildReservation(const inventory::ManagedNode& node, ReservationClass cls,
                                       const config::Config& cfg, Clock::TimePoint now);

// "id user account gpus start;..." for the jobs holding the node, by job id; at most
// kMaxListedJobs entries, then ";+N more".
inline constexpr size_t kMaxListedJobs = 64;
std::string FormatJobList(const std::vector<slurm::JobView>& jobs);

}  // namespace skb::ownership

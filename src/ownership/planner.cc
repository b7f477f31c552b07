// SPDX-License-Identifier: Apache-2.0
// The Planner (internal/planner.h): which state a node is in and which flow runs, and the
// building blocks every flow uses.
#include "src/ownership/internal/planner.h"

#include "src/base/strings.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/reservation.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/schema.h"

namespace skb::ownership::internal {
namespace {

// What an action planned in state `s` is for (the state is set before its flow runs).
plan::Cause CauseOf(OwnerState s) {
  switch (s) {
    case OwnerState::kLending:
    case OwnerState::kKubernetes:
      return plan::Cause::kLend;
    case OwnerState::kReturning:
      return plan::Cause::kReturn;
    case OwnerState::kSwapping:
      return plan::Cause::kSwap;
    default:
      return plan::Cause::kReservation;
  }
}

}  // namespace

void Planner::Run() {
  if (!f_.repair.empty()) {
    PatchNode(f_.repair, "BridgeRecordRepaired",
              StrCat("Node ", f_.node->name, " had unreadable or future time records ", f_.garbled,
                     ": read as now and written again"),
              EventType::kWarning);
  }
  if (f_.node->gpu_sharing.eligible) {
    HandOver();
  } else {
    EndGpuSharingRecord();
    RunFlows();
  }
  DropSwapGuardUnlessWanted();
  DropReclaimTaintWhenOver();
}

void Planner::Explain(std::string line) { out_->explanation.push_back(std::move(line)); }

void Planner::Recheck(Clock::TimePoint t) { KeepEarliest(&out_->recheck_at, t); }

Action& Planner::AddAction(plan::Operation op, std::string event_reason, std::string event_message,
                           EventType type) {
  Action a;
  a.op = std::move(op);
  a.node = f_.node->name;
  a.cause = CauseOf(out_->state);
  a.k8s_node = f_.node->K8sNameIfDifferent();
  a.event_type = type;
  a.event_reason = std::move(event_reason);
  a.event_message = std::move(event_message);
  out_->actions.push_back(std::move(a));
  return out_->actions.back();
}

void Planner::PatchNode(plan::AnnotationPatch patch, std::string reason, std::string message,
                        EventType type) {
  if (patch.empty()) return;
  Add(plan::PatchNodeAnnotations{.annotations = std::move(patch)}, std::move(reason),
      std::move(message), type);
}

void Planner::SetTaint(const char* key, std::string reason, std::string message) {
  Add(plan::SetNodeTaint{{key, "", "NoSchedule"}}, std::move(reason), std::move(message));
}

void Planner::RemoveTaint(const char* key, std::string reason, std::string message) {
  Add(plan::RemoveNodeTaint{{key, "", "NoSchedule"}}, std::move(reason), std::move(message));
}

void Planner::RemoveIfPresent(plan::AnnotationPatch* patch,
                              std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (Find(f_.k8s_node->annotations, key) != nullptr) patch->remove.emplace_back(key);
  }
}

ReservationClass Planner::WantedClass(std::string* why) const {
  // It skips jobs not holding the node.
  return ClassFor(f_.node->jobs, *f_.cfg, f_.now, why, f_.node->het_jobs, f_.node->guaranteed_jobs);
}

std::vector<const slurm::JobView*> Planner::Whole(const slurm::JobView& j) const {
  return WholeJob(j, f_.node->het_jobs.empty() ? f_.node->jobs : f_.node->het_jobs);
}

JobPolicy Planner::PolicyOf(const slurm::JobView& j) const {
  return PolicyForWhole(Whole(j), *f_.cfg, f_.now, f_.node->guaranteed_jobs);
}

int64_t Planner::Gpus() const {
  if (const int64_t units = f_.k8s_node->GpuUnits(); units > 0) return units;
  return f_.slurm_node->TotalGpus();
}

void Planner::RunFlows() {
  const GpuPod* r = f_.reservation;
  if (f_.foreign != nullptr) {
    Explain(StrCat("pod ", PodName(*f_.foreign), " has the reservation's name but not the label ",
                   kRoleLabel, "=", kReservationRole,
                   ": not the bridge's, never touched; it counts as a Kubernetes GPU pod"));
  }
  for (const GpuPod* p : f_.extra_ours) {
    Explain(StrCat("another reservation pod ", PodName(*p),
                   " is on the node: handled once the current one is settled"));
  }
  std::string refused;
  if (r != nullptr && r->terminating) {
    if (Replacing(*r)) {
      out_->state = OwnerState::kSwapping;
      SwapRelease();
    } else if (LendRefused(&refused)) {
      RefuseLend(refused);
    } else {
      out_->state = OwnerState::kLending;
      LendDefault(StrCat("reservation ", PodName(*r), " is being deleted"));
    }
  } else if (r != nullptr) {
    if (!HasFinalizer(*r)) {
      // Removed by hand: without it a deletion would free the GPUs in Kubernetes at once,
      // before Slurm has left the node.
      Add(plan::RestoreFinalizer{Ref(*r)}, "FinalizerRestored",
          StrCat("Reservation ", PodName(*r), " had lost the finalizer ", kFinalizer,
                 " (removed by hand?): put back, so that deleting it waits for "
                 "Slurm to leave node ",
                 f_.node->name),
          EventType::kWarning);
    }
    if (Replacing(*r)) {
      out_->state = OwnerState::kSwapping;
      StartSwap("a replacement was started", EventType::kNormal);
    } else if (f_.lent()) {
      out_->state = OwnerState::kReturning;
      Returning();
    } else {
      out_->state = OwnerState::kSlurm;
      SlurmOwned();
    }
  } else if (f_.lent()) {
    out_->state = OwnerState::kKubernetes;
    KubernetesOwned();
  } else if (!f_.k8s_pods.empty() && !f_.jobs.empty() && EvictSwapIntruders()) {
    // Whether or not the node shows a swap's taint and guard: the node cache may not have
    // seen the swap's own writes yet while the pod cache has seen the pod, and without a
    // swap no lend would let such a pod take the jobs either.
    out_->state = OwnerState::kSwapping;
  } else if (!f_.k8s_pods.empty()) {
    // GPU pods on a node with no reservation (its finalizer removed by hand, a pod with
    // the reservation's name, pods from before the bridge): Kubernetes holds the GPUs.
    out_->state = OwnerState::kLending;
    std::string pods;
    for (const GpuPod* p : f_.k8s_pods) StrAppend(&pods, pods.empty() ? "" : ", ", PodName(*p));
    const std::string who = Preemptor();
    Lend("ReservationMissing",
         StrCat("Node ", f_.node->name, " has no reservation pod but Kubernetes GPU pod(s) ", pods,
                ": it is lent to Kubernetes (", who, ")",
                f_.jobs.empty() ? "" : "; its Slurm jobs are preempted at once"),
         EventType::kWarning);
  } else if (f_.swap_taint || f_.swap_guard) {
    out_->state = OwnerState::kSwapping;
    EnsureSwapGuard("its reservation is replaced");
    std::string why;
    ReservationClass cls = WantedClass(&why);
    Create(cls, "ReservationReplaced",
           StrCat("Created reservation ", f_.reservation_namespace, "/", f_.reservation_name,
                  " for node ", f_.node->name, " at class ", ClassRef(cls, *f_.lending).name, " (",
                  why, ")"),
           EventType::kNormal);
  } else if (!f_.nominated.empty() && f_.jobs.empty()) {
    out_->state = OwnerState::kLending;
    LendDefault(StrCat("no reservation and pod ", PodName(*f_.nominated.front()),
                       " is nominated to the node"));
  } else {
    out_->state = OwnerState::kSlurm;
    std::string why;
    ReservationClass cls = WantedClass(&why);
    if (f_.jobs.empty()) {
      Create(cls, "ReservationCreated",
             StrCat("Created reservation ", f_.reservation_namespace, "/", f_.reservation_name,
                    ": node ", f_.node->name, " belongs to Slurm"),
             EventType::kNormal);
    } else {
      Create(
          cls, "ReservationMissing",
          StrCat("Node ", f_.node->name, " runs Slurm jobs but had no reservation pod: recreated ",
                 f_.reservation_namespace, "/", f_.reservation_name, " at class ",
                 ClassRef(cls, *f_.lending).name),
          EventType::kWarning);
    }
  }
}

void Planner::Create(ReservationClass cls, std::string reason, std::string message,
                     EventType type) {
  const int64_t gpus = Gpus();
  if (gpus <= 0) {
    Explain("the node has no GPUs: no reservation needed");
    return;
  }
  Add(plan::CreateReservationPod{BuildReservation(*f_.node, cls, *f_.cfg, f_.now)},
      std::move(reason), std::move(message), type);
  Explain(StrCat("creating reservation ", f_.reservation_namespace, "/", f_.reservation_name, " (",
                 gpus, " GPUs, class ", ClassRef(cls, *f_.lending).name, ")"));
}

}  // namespace skb::ownership::internal

// SPDX-License-Identifier: Apache-2.0
// The Planner's flows of a lent node (internal/planner.h): Kubernetes-owned until it may go
// back to Slurm (cool-down, minimum lend time, health, or a reclaim by quotas), then
// returning until its new reservation runs and Slurm resumes it.
#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/return_decision.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {

void Planner::KubernetesOwned() {
  if (!f_.jobs.empty()) {
    Explain(
        "the node is lent but Slurm jobs hold it (resumed by hand, or the reservation's finalizer "
        "was removed): the lend carries on");
    LendDefault("Slurm jobs found on a lent node");
    return;
  }
  LendDefault(StrCat("its Slurm drain says so ('", f_.slurm_node->reason, "')"));

  const bool pods = !f_.k8s_pods.empty() || !f_.nominated.empty();
  std::optional<Clock::TimePoint> idle = f_.idle_since;
  plan::AnnotationPatch p;
  if (pods) {
    std::string names;
    for (const GpuPod* g : f_.k8s_pods) StrAppend(&names, names.empty() ? "" : ", ", PodName(*g));
    for (const GpuPod* g : f_.nominated) {
      StrAppend(&names, names.empty() ? "" : ", ", PodName(*g), " (nominated)");
    }
    Explain(StrCat("lent to Kubernetes; GPU pods: ", names));
    if (idle) p.remove.emplace_back(kIdleSinceAnnotation);
    idle.reset();
  } else if (!idle) {
    // To the millisecond: in whole seconds the cool-down ended up to a second early
    // (rounded down) or late (rounded up). Rounded down to the millisecond it still counts
    // from after the last pod went: this pass is when the bridge saw it gone.
    p.set[kIdleSinceAnnotation] = FormatUnixMillis(f_.now);
    idle = FromUnixMillis(ToUnixMillis(f_.now));
  }
  PatchNode(std::move(p), pods ? "LentNodeInUse" : "LentNodeIdle",
            pods
                ? StrCat("Kubernetes GPU pods use lent node ", f_.node->name, ": cool-down stopped")
                : StrCat("No Kubernetes GPU pod on lent node ", f_.node->name,
                         ": it returns to Slurm after the cool-down (",
                         FormatSeconds(f_.lending->cooldown), ")"));
  ReturnDecision d =
      ShouldReturn(LentAt(), idle, pods, f_.healthy, *f_.lending, f_.now, kReservationLead);
  if (!f_.healthy) Explain(StrCat("unhealthy: ", f_.unhealthy_why));
  if (f_.node->reclaim) {
    // Taken back for a guarantee: no cool-down, no minimum lend time; health still counts.
    std::string why;
    d = {.now = Reclaim(&why) && f_.healthy, .why = why};
  }
  Explain(d.why);
  if (d.at) Recheck(*d.at);
  if (!d.now) return;
  if (f_.reservation != nullptr) {
    Explain(StrCat("the old reservation ", PodName(*f_.reservation), " is still going away"));
    return;
  }
  if (f_.foreign != nullptr) {
    const std::string name = PodName(*f_.foreign);
    Explain(
        StrCat("pod ", name, " is not the bridge's but has the reservation's name: cannot return"));
    if (f_.return_blocked != name) {
      plan::AnnotationPatch b;
      b.set[kReturnBlockedAnnotation] = name;
      PatchNode(std::move(b), "ReturnBlocked",
                StrCat("Node ", f_.node->name, " cannot return to Slurm: pod ", name,
                       " has its reservation's name but is not the bridge's (no label ", kRoleLabel,
                       "=", kReservationRole,
                       "); the node stays lent to Kubernetes until that pod is renamed or deleted"),
                EventType::kWarning);
    }
    return;
  }
  Create(ReservationClass::kIdle, "ReturningToSlurm",
         StrCat("Node ", f_.node->name, " returns to Slurm (", d.why,
                "): created its reservation; Slurm resumes the node once it runs and the "
                "cool-down has ended"),
         EventType::kNormal);
}

Clock::TimePoint Planner::LentAt() const {
  return f_.lent_at.value_or(f_.lend_drain && f_.slurm_node->reason_time > 0
                                 ? FromUnix(f_.slurm_node->reason_time)
                                 : f_.now);
}

bool Planner::Reclaim(std::string* why) {
  const inventory::NodeReclaim& rc = *f_.node->reclaim;
  const std::string node = f_.node->name;
  if (!HasTaint(*f_.k8s_node, kReclaimTaintKey)) {
    SetTaint(kReclaimTaintKey, "ReclaimStarted",
             StrCat("Node ", node, " is taken back for Slurm (quotas): ", rc.why, "; tainted ",
                    kReclaimTaintKey, " so that no new pod lands on it"));
  }
  std::string waiting;
  for (const GpuPod* p : f_.k8s_pods) {
    const std::string name = PodName(*p);
    StrAppend(&waiting, waiting.empty() ? "" : ", ", name);
    if (p->terminating) continue;
    if (std::find(rc.victims.begin(), rc.victims.end(), name) == rc.victims.end()) {
      Explain(StrCat("pod ", name, " came after the reclaim was planned: the quotas judge again"));
      continue;
    }
    Add(plan::EvictPod{Ref(*p)}, "ReclaimEviction",
        StrCat("Evicted pod ", name, " from node ", node, " for Slurm (quotas): ", rc.why));
  }
  if (!waiting.empty()) {
    *why = StrCat("reclaimed for tenant ", rc.tenant, " (job ", rc.job_id, "): waiting for pod(s) ",
                  waiting, " to leave");
    return false;
  }
  *why = StrCat("reclaimed for tenant ", rc.tenant, " (job ", rc.job_id,
                "): no pod left, it returns without the cool-down");
  return true;
}

void Planner::Returning() {
  const GpuPod& r = *f_.reservation;
  if (!f_.k8s_pods.empty() || Terminal(r)) {
    std::string why = !f_.k8s_pods.empty() ? StrCat("GPU pod ", PodName(*f_.k8s_pods.front()),
                                                    " took the node before the reservation ran")
                                           : StrCat("the reservation pod is ", r.phase,
                                                    " (the kubelet refused it or it exited)");
    Add(plan::DeleteReservationPod{Ref(r)}, "ReturnAbandoned",
        StrCat("Node ", f_.node->name, " stays lent to Kubernetes: ", why, "; deleted reservation ",
               PodName(r)),
        Terminal(r) ? EventType::kWarning : EventType::kNormal);
    plan::AnnotationPatch p;
    RemoveIfPresent(&p, {kIdleSinceAnnotation});
    PatchNode(std::move(p), "LentNodeInUse",
              StrCat("Return of node ", f_.node->name, " abandoned: cool-down starts again"));
    Explain(StrCat("return abandoned: ", why));
    return;
  }
  if (r.phase != "Running") {
    Explain(StrCat("returning: waiting for reservation ", PodName(r), " to run (phase ",
                   r.phase.empty() ? "unknown" : r.phase, ")"));
    return;
  }
  if (!f_.healthy) {
    Explain(StrCat("returning: the node is unhealthy (", f_.unhealthy_why,
                   "): Slurm resumes it once healthy"));
    return;
  }
  // The reservation was created kReservationLead before the return is due: the node is
  // Kubernetes' until then (a reclaim has no cool-down to wait for).
  if (f_.idle_since && !f_.node->reclaim) {
    const Clock::TimePoint due = ReturnDue(LentAt(), *f_.idle_since, *f_.lending);
    if (f_.now < due) {
      Explain(StrCat("returning: reservation ", PodName(r), " runs; Slurm resumes the node in ",
                     FormatSeconds(due - f_.now), ", when the cool-down ends"));
      Recheck(due);
      return;
    }
  }
  if (f_.lend_drain) {
    AddAction(plan::ResumeSlurmNode{.expected_reason = f_.slurm_node->reason,
                                    .since_unix = f_.idle_since ? ToUnix(*f_.idle_since) : 0},
              "SlurmNodeReturned",
              StrCat("Resumed Slurm node ", f_.node->name, ": reservation ", PodName(r),
                     " runs and no Kubernetes GPU pod is on the node"),
              EventType::kNormal)
        .cause = plan::Cause::kReturn;
  } else if (f_.admin_drain) {
    Explain(StrCat("Slurm drain by an admin ('", f_.slurm_node->reason, "'): left as it is"));
  }
  plan::AnnotationPatch p;
  RemoveIfPresent(&p, {kLentAtAnnotation, kLentToAnnotation, kIdleSinceAnnotation,
                       kSignalledAtAnnotation, kLendBlockedAnnotation, kReturnBlockedAnnotation});
  PatchNode(std::move(p), "ReturnedToSlurm",
            StrCat("Node ", f_.node->name, " belongs to Slurm again"));
  for (const char* key : {kBusyTaintKey, kSwapTaintKey}) {
    if (HasTaint(*f_.k8s_node, key)) {
      RemoveTaint(
          key, "ReturnedToSlurm",
          StrCat("Removed taint ", key, " from node ", f_.node->name, ": its reservation runs"));
    }
  }
  Explain("returned to Slurm");
}

void Planner::DropReclaimTaintWhenOver() {
  if (f_.node->reclaim || !HasTaint(*f_.k8s_node, kReclaimTaintKey)) return;
  RemoveTaint(kReclaimTaintKey, "ReclaimOver",
              StrCat("Removed taint ", kReclaimTaintKey, " from node ", f_.node->name,
                     ": no Slurm job waits for it any more (it runs, or no longer needs it)"));
}

}  // namespace skb::ownership::internal

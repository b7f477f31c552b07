// SPDX-License-Identifier: Apache-2.0
// The Planner's swap flow (internal/planner.h): a reservation replaced under the swap taint
// and guard (a class change, a failed reservation), and a preemption of the reservation
// refused as a lend, which the swap then finishes.
#include "src/base/strings.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {

void Planner::StartSwap(std::string why, EventType type) {
  const GpuPod& r = *f_.reservation;
  out_->state = OwnerState::kSwapping;
  // A failed reservation counts no GPU already: guarded before anything else.
  if (Terminal(r)) EnsureSwapGuard("its failed reservation is replaced");
  if (!f_.swap_taint) {
    SetTaint(kSwapTaintKey, "ReservationSwapStarted",
             StrCat("Tainted node ", f_.node->name, " ", kSwapTaintKey,
                    ":NoSchedule while its reservation is replaced: ", why));
  }
  if (!Replacing(r)) {
    Add(plan::PatchPodAnnotations{Ref(r), {.set = {{kReplacingAnnotation, "true"}}}},
        "ReservationReplacing",
        StrCat("Marked reservation ", PodName(r), " as being replaced: ", why));
  }
  Add(plan::DeleteReservationPod{Ref(r)}, "ReservationReplacing",
      StrCat("Deleted reservation ", PodName(r), " of node ", f_.node->name,
             " to replace it: ", why),
      type);
  Explain(StrCat("replacing the reservation: ", why));
}

// A preemption of the reservation that must not become a lend: kube-scheduler preempts by
// priority alone, the bridge's policy also by what the jobs are. Only a preemption by a pod
// (nominated to the node) with Slurm work on the node and no lend started yet; a deletion
// by anyone else (kubectl, the namespace) stays a lend, with protected work waited for.
//   - work that may not be preempted (the protected class) is never taken, whatever the
//     preemptor's priority (system-critical pods, 2e9, are above the protected class);
//   - preemptible work is taken only by a pod at or above lending.inference_threshold.
// The lend rules a GPU pod must pass to take the node's Slurm jobs, whatever the quotas
// say: "" when it may, else why not ("the node runs Slurm work that is never preempted
// (...)"). A nominated preemptor that fails them is refused (LendRefused), a pod bound
// on a node without its reservation that fails them is evicted (EvictSwapIntruders).
std::string Planner::WhyMayNotTakeSlurmWork(const GpuPod& p) const {
  std::string cls_why;
  if (WantedClass(&cls_why) == ReservationClass::kProtected) {
    return StrCat("the node runs Slurm work that is never preempted (", cls_why, ")");
  }
  if (p.priority < f_.lending->inference_threshold) {
    return StrCat("only pods at or above lending.inference_threshold (",
                  f_.lending->inference_threshold, ") may take Slurm's jobs");
  }
  return "";
}

bool Planner::LendRefused(std::string* why) const {
  if (f_.lent_at || f_.lend_drain || f_.jobs.empty() || f_.nominated.empty()) return false;
  const GpuPod* top = f_.nominated.front();
  for (const GpuPod* p : f_.nominated) {
    if (p->priority > top->priority) top = p;
  }
  if (std::string rule = WhyMayNotTakeSlurmWork(*top); !rule.empty()) {
    *why = StrCat("pod ", PodName(*top), " (priority ", top->priority,
                  ") preempted its reservation, but ", rule);
    return true;
  }
  // Guaranteed quotas: beyond its tenant's guarantee a pod borrows, and borrowing takes
  // idle GPUs only (an idle node is lent: no job, no refusal above).
  if (auto b = f_.node->borrowing_nominated.find(PodName(*top));
      b != f_.node->borrowing_nominated.end()) {
    *why = StrCat("pod ", PodName(*top), " (priority ", top->priority,
                  ") preempted its reservation, but ", b->second,
                  ", and borrowed GPUs come only from idle nodes (quotas)");
    return true;
  }
  return false;
}

// Not lent: the node stays Slurm's. Guarded first (the swap taint keeps the preemptor,
// nominated to the node, from binding once the old reservation goes), then the preempted
// reservation is marked as being replaced, which the swap then finishes (SwapRelease, a new
// reservation, the taint removed once it runs).
void Planner::RefuseLend(const std::string& why) {
  const GpuPod& r = *f_.reservation;
  out_->state = OwnerState::kSwapping;
  Explain(StrCat("not lent: ", why));
  if (!f_.swap_taint) {
    SetTaint(kSwapTaintKey, "ReservationSwapStarted",
             StrCat("Tainted node ", f_.node->name, " ", kSwapTaintKey,
                    ":NoSchedule while its preempted reservation is replaced"));
  }
  if (!f_.lend_refused_at) {
    plan::AnnotationPatch p;
    p.set[kLendRefusedAtAnnotation] = StrCat(ToUnix(f_.now));
    PatchNode(std::move(p), "LendRefused",
              StrCat("Node ", f_.node->name, " is not lent: ", why, "; reservation ", PodName(r),
                     " is replaced under the ", kSwapTaintKey, " taint, kept until ",
                     FormatSeconds(f_.lending->cooldown), " after the refusal"),
              EventType::kWarning);
  }
  Add(plan::PatchPodAnnotations{Ref(r), {.set = {{kReplacingAnnotation, "true"}}}},
      "ReservationReplacing",
      StrCat("Marked reservation ", PodName(r), " as being replaced: not lent"));
}

void Planner::SwapRelease() {
  const GpuPod& r = *f_.reservation;
  // On before the release (the executor checks it at the source, too).
  EnsureSwapGuard("its reservation is replaced");
  if (!f_.swap_taint) {
    SetTaint(kSwapTaintKey, "ReservationSwapStarted",
             StrCat("Tainted node ", f_.node->name, " ", kSwapTaintKey,
                    ":NoSchedule while its reservation is replaced"));
  }
  if (Released(r)) {
    Explain(StrCat("swap: old reservation ", PodName(r), " released, waiting for it to go"));
    return;
  }
  Add(plan::ReleaseReservationPod{.pod = Ref(r), .check = plan::ReleaseCheck::kSwapTaint},
      "ReservationReplacing",
      StrCat("Released the old reservation ", PodName(r), " of node ", f_.node->name,
             " (being replaced; the node is tainted ", kSwapTaintKey, ")"));
  Explain("swap: releasing the old reservation");
}

// GPU pods on a node with Slurm jobs and no reservation: bound while its reservation was
// replaced, or after the reservation was removed by hand. The guards are admission policies
// whose parameters the apiserver reads from an informer: a binding can pass in the
// milliseconds before it sees the failed reservation or the swap guard's label (a
// priority-0 pod can bind the moment the kubelet fails the reservation). A pod that a lend would
// not have let take the node's Slurm work (LendRefused's rules: protected work, or a priority below
// lending.inference_threshold) is evicted; the jobs are left alone, the node is guarded, and the
// replacement reservation is created once the pod is gone. True when there was such a pod.
bool Planner::EvictSwapIntruders() {
  bool any = false;
  for (const GpuPod* p : f_.k8s_pods) {
    const std::string why = WhyMayNotTakeSlurmWork(*p);
    if (why.empty()) continue;
    any = true;
    if (p->terminating) {
      Explain(StrCat("pod ", PodName(*p), " (on the node without its reservation) is leaving"));
      continue;
    }
    Add(plan::EvictPod{Ref(*p)}, "SwapGuardBreached",
        StrCat("Evicted pod ", PodName(*p), " (priority ", p->priority, ") from node ",
               f_.node->name,
               ": it was bound while the node had no reservation (being replaced, or "
               "removed), but ",
               why,
               "; the node's Slurm jobs keep running and its reservation is replaced once the "
               "pod is gone"),
        EventType::kWarning);
  }
  if (!any) return false;
  EnsureSwapGuard("a pod got onto it while it had no reservation");  // once a plan
  Explain("waiting for the pods bound without a reservation to go before the new reservation");
  return true;
}

void Planner::EnsureSwapGuard(std::string_view why) {
  swap_guard_wanted_ = true;
  if (f_.swap_guard) return;
  Add(plan::PatchNodeAnnotations{.labels = {.set = {{kSwapGuardLabel, "true"}}}}, "SwapGuardOn",
      StrCat("Labelled node ", f_.node->name, " ", kSwapGuardLabel,
             ": the apiserver admits no pod onto it but the bridge's while ", why));
}

void Planner::DropSwapGuardUnlessWanted() {
  if (swap_guard_wanted_ || !f_.swap_guard) return;
  Add(plan::PatchNodeAnnotations{.labels = {.remove = {kSwapGuardLabel}}}, "SwapGuardOff",
      StrCat("Removed label ", kSwapGuardLabel, " from node ", f_.node->name,
             ": no reservation swap leaves its GPUs uncounted"));
}

}  // namespace skb::ownership::internal

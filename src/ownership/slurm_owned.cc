// SPDX-License-Identifier: Apache-2.0
// The Planner's flow of a Slurm-owned node (internal/planner.h): its reservation kept at the
// class its jobs call for (a change is a swap, swap.cc) and its job list up to date.
#include "src/base/strings.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/reservation.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {

void Planner::SlurmOwned() {
  const GpuPod& r = *f_.reservation;
  const Clock::TimePoint now = f_.now;
  std::string why;
  const ReservationClass want = WantedClass(&why);
  const std::optional<ReservationClass> cur =
      ClassByPriorityClassName(r.priority_class_name, *f_.lending);
  Explain(StrCat("owned by Slurm; reservation ", PodName(r), " class ",
                 r.priority_class_name.empty() ? "(none)" : r.priority_class_name, ", wanted ",
                 ClassRef(want, *f_.lending).name, " (", why, ")"));
  if (Terminal(r)) {
    StartSwap(StrCat("reservation pod ", PodName(r), " is ", r.phase,
                     ": Kubernetes no longer counts its GPUs"),
              EventType::kWarning);
    return;
  }
  if (want == ReservationClass::kProtected && cur != ReservationClass::kProtected) {
    StartSwap(StrCat("class ", r.priority_class_name, " -> ", ClassRef(want, *f_.lending).name,
                     " (", why, ")"),
              EventType::kNormal);
    return;
  }
  for (const GpuPod* p : f_.k8s_pods) {
    Explain(StrCat(
        "Kubernetes GPU pod ", PodName(*p),
        " runs beside the reservation (the node has more GPUs than the reservation holds?)"));
  }
  const int64_t gpus = Gpus();
  if (gpus > r.gpus) {
    // A GPU came back (allocatable grew): a pod would fit beside the reservation while
    // Slurm uses every GPU. Pod requests are immutable: replace it, sized to the node.
    StartSwap(
        StrCat("the reservation holds ", r.gpus, " GPUs, the node has ", gpus, " allocatable"),
        EventType::kWarning);
    return;
  }
  if (gpus > 0 && r.gpus > gpus) {
    Explain(StrCat("the reservation holds ", r.gpus, " GPUs, the node has ", gpus,
                   " allocatable: nothing fits beside it; kept (a swap would only open the "
                   "guard's window)"));
  }
  // After a refused lend the guard stays for a cool-down: without it the refused preemptor
  // would preempt each new reservation as soon as the taint went.
  const bool hold_guard = f_.lend_refused_at && now < *f_.lend_refused_at + f_.lending->cooldown;
  if (hold_guard) {
    Explain(StrCat("a lend was refused: the ", kSwapTaintKey, " taint stays until ",
                   ToUnix(*f_.lend_refused_at + f_.lending->cooldown)));
    Recheck(*f_.lend_refused_at + f_.lending->cooldown);
  } else if (f_.lend_refused_at) {
    plan::AnnotationPatch p;
    p.remove.emplace_back(kLendRefusedAtAnnotation);
    PatchNode(std::move(p), "LendRefusalExpired",
              StrCat("Node ", f_.node->name, ": the guard after a refused lend ends"));
  }
  if (r.phase == "Running" && !hold_guard) {
    for (const char* key : {kSwapTaintKey, kBusyTaintKey}) {
      if (HasTaint(*f_.k8s_node, key)) {
        RemoveTaint(key,
                    key == std::string_view(kSwapTaintKey) ? "ReservationSwapDone" : "SlurmOwned",
                    StrCat("Removed taint ", key, " from node ", f_.node->name,
                           ": its reservation ", PodName(r), " runs"));
      }
    }
  } else if (f_.swap_taint) {
    if (r.phase != "Running") EnsureSwapGuard("its new reservation is not running yet");
    Explain(StrCat("swap: waiting for reservation ", PodName(r), " to run"));
  }

  plan::AnnotationPatch patch;
  const std::string* wanted = Find(r.annotations, kClassWantedAnnotation);
  if (!cur || want != *cur) {
    // A change that only moves this node in Kubernetes' order of preference: hysteresis.
    const std::string wanted_value = StrCat(ReservationClassName(want), "@");
    std::optional<slurm::UnixTime> since;
    if (wanted != nullptr && wanted->rfind(wanted_value, 0) == 0) {
      since = ParseUnix(std::string_view(*wanted).substr(wanted_value.size()));
      // In the future: garbled (the change would never come); the wait starts again now.
      if (since && FromUnix(*since) > now + kClockSkewAllowance) since.reset();
    }
    if (since) {
      const bool upgrade = !cur || want > *cur;
      const Clock::TimePoint at = FromUnix(*since) + (upgrade ? f_.lending->class_upgrade_delay
                                                              : f_.lending->class_downgrade_delay);
      if (now >= at) {
        StartSwap(StrCat("class ", r.priority_class_name, " -> ", ClassRef(want, *f_.lending).name,
                         " (", why, ")"),
                  EventType::kNormal);
        return;
      }
      Recheck(at);
      Explain(StrCat("class change to ", ClassRef(want, *f_.lending).name, " in ",
                     FormatSeconds(at - now)));
    } else {
      patch.set[kClassWantedAnnotation] = StrCat(wanted_value, ToUnix(now));
    }
  } else if (wanted != nullptr) {
    patch.remove.emplace_back(kClassWantedAnnotation);
  }
  const std::string list = FormatJobList(f_.node->jobs);
  const std::string* listed = Find(r.annotations, kJobsAnnotation);
  if (listed == nullptr || *listed != list) patch.set[kJobsAnnotation] = list;
  if (patch.empty()) return;

  // Batched: at most one write per node per interval, whatever the job churn.
  bool garbled = false;
  const std::optional<Clock::TimePoint> updated =
      TimeAnnotation(r.annotations, kJobsUpdatedAtAnnotation, now, &garbled);
  // Garbled: written now (read as `now`, the list would wait for ever).
  if (updated && !garbled && now < *updated + f_.update_interval) {
    Recheck(*updated + f_.update_interval);
    Explain(StrCat("reservation annotations updated at most every ",
                   FormatSeconds(f_.update_interval), ": next in ",
                   FormatSeconds(*updated + f_.update_interval - now)));
    return;
  }
  patch.set[kJobsUpdatedAtAnnotation] = StrCat(ToUnix(now));
  AddAction(plan::PatchPodAnnotations{Ref(r), std::move(patch)}, "ReservationUpdated",
            StrCat("Updated reservation ", PodName(r), " of node ", f_.node->name, ": ",
                   f_.jobs.empty() ? std::string("no Slurm job")
                                   : StrCat(f_.jobs.size(), " Slurm job(s)")),
            EventType::kNormal)
      .quiet = true;
}

}  // namespace skb::ownership::internal

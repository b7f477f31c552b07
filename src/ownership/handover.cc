// SPDX-License-Identifier: Apache-2.0
// The Planner's handover of a node to the device lane (internal/planner.h; ownership.h
// "Switching modes"): an eligible node starts no new lend, finishes the lend or return in
// flight, and once Slurm's, retires its reservation and records; then it is handed over.
#include "src/base/strings.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {
namespace {

// The node lane's records on the Kubernetes node (the handover record aside).
constexpr const char* kLaneAnnotations[] = {
    kLentAtAnnotation,        kLentToAnnotation,        kSignalledAtAnnotation,
    kLendBlockedAnnotation,   kReturnBlockedAnnotation, kIdleSinceAnnotation,
    kLendRefusedAtAnnotation,
};
constexpr const char* kLaneTaints[] = {kSwapTaintKey, kBusyTaintKey, kReclaimTaintKey};

}  // namespace

std::string Planner::Leftovers() const {
  std::string out;
  auto add = [&](std::string_view what) { StrAppend(&out, out.empty() ? "" : ", ", what); };
  if (f_.reservation != nullptr) add(StrCat("reservation ", PodName(*f_.reservation)));
  for (const GpuPod* p : f_.extra_ours) add(StrCat("reservation ", PodName(*p)));
  if (f_.lend_drain) add(StrCat("Slurm drain '", f_.slurm_node->reason, "'"));
  for (const char* key : kLaneAnnotations) {
    if (Find(f_.k8s_node->annotations, key) != nullptr) add(StrCat("annotation ", key));
  }
  for (const char* key : kLaneTaints) {
    if (HasTaint(*f_.k8s_node, key)) add(StrCat("taint ", key));
  }
  if (f_.swap_guard) add(StrCat("label ", kSwapGuardLabel));
  return out;
}

void Planner::WaitForHandover(plan::Handover h, std::string why) {
  out_->handover = h;
  Explain(StrCat("eligible for GPU sharing: handed over to the device lane once ", why));
  out_->handover_why = std::move(why);
}

void Planner::HandOver() {
  const GpuPod* r = f_.reservation;
  const std::string left = Leftovers();
  if (left.empty()) {
    out_->state = OwnerState::kGpuShared;
    out_->handover = plan::Handover::kHandedOver;
    Explain(
        "shared GPU by GPU (gpu_sharing): the device lane moves single GPUs; the node lane has "
        "nothing left on the node and lends it whole no more");
    if (Find(f_.k8s_node->annotations, kGpuSharedSinceAnnotation) == nullptr) {
      plan::AnnotationPatch p;
      p.set[kGpuSharedSinceAnnotation] = StrCat(ToUnix(f_.now));
      PatchNode(std::move(p), "GpuSharingStarted",
                StrCat("Node ", f_.node->name,
                       " is shared GPU by GPU from now on: the node lane handed it over to the "
                       "device lane (gpu_sharing)"));
    }
    return;
  }
  Explain(StrCat("the node lane still has: ", left));
  if (r != nullptr && r->terminating) {
    if (Replacing(*r)) {
      out_->state = OwnerState::kSwapping;
      SwapRelease();
      WaitForHandover(plan::Handover::kHoldsWanted,
                      StrCat("its reservation ", PodName(*r), " is released"));
    } else if (!f_.lent_at && !f_.lend_drain) {
      // No lend started: none starts now. The reservation goes all the same, as a swap
      // that creates no successor; the pod that preempted it waits for the device lane.
      out_->state = OwnerState::kSwapping;
      RetireReservation();
      WaitForHandover(plan::Handover::kHoldsWanted,
                      StrCat("its deleted reservation ", PodName(*r),
                             " is released: not lent, the node is to be shared GPU by GPU"));
    } else {
      out_->state = OwnerState::kLending;
      LendDefault(StrCat("reservation ", PodName(*r), " is being deleted"));
      WaitForHandover(plan::Handover::kWinding,
                      "the lend under way completes and the node returns to Slurm after its "
                      "cool-down");
    }
    return;
  }
  if (r != nullptr && f_.lent() && !Replacing(*r)) {
    out_->state = OwnerState::kReturning;
    Returning();
    WaitForHandover(plan::Handover::kWinding, "its return to Slurm completes");
    return;
  }
  if (r != nullptr) {
    out_->state = OwnerState::kSlurm;
    if (!f_.node->gpu_sharing.all_held) {
      // A swap's new reservation that does not run yet counts no GPU: guarded meanwhile.
      if (f_.swap_taint && r->phase != "Running") EnsureSwapGuard("its reservation does not run");
      WaitForHandover(plan::Handover::kHoldsWanted,
                      StrCat("the device lane holds every GPU; then its reservation ", PodName(*r),
                             " is retired"));
      return;
    }
    RetireReservation();
    WaitForHandover(plan::Handover::kHoldsWanted,
                    StrCat("its reservation ", PodName(*r), " is retired"));
    return;
  }
  if (f_.lent()) {
    out_->state = OwnerState::kKubernetes;
    KubernetesOwned();
    WaitForHandover(plan::Handover::kWinding,
                    "it returns to Slurm: lent to Kubernetes until its cool-down");
    return;
  }
  out_->state = OwnerState::kSwapping;
  RetireRecords();
}

void Planner::RetireReservation() {
  const GpuPod& r = *f_.reservation;
  out_->state = OwnerState::kSwapping;
  if (!HasFinalizer(r) && !r.terminating) {
    // As in RunFlows: without it the deletion would free the GPUs before the taint is on.
    Add(plan::RestoreFinalizer{Ref(r)}, "FinalizerRestored",
        StrCat("Reservation ", PodName(r), " had lost the finalizer ", kFinalizer,
               " (removed by hand?): put back before it is retired"),
        EventType::kWarning);
  }
  EnsureSwapGuard("its reservation is retired");
  if (!f_.swap_taint) {
    SetTaint(kSwapTaintKey, "ReservationSwapStarted",
             StrCat("Tainted node ", f_.node->name, " ", kSwapTaintKey,
                    ":NoSchedule while its reservation is retired (GPU sharing)"));
  }
  if (!Replacing(r)) {
    Add(plan::PatchPodAnnotations{Ref(r), {.set = {{kReplacingAnnotation, "true"}}}},
        "ReservationRetiring",
        StrCat("Marked reservation ", PodName(r),
               " as retired: node is to be shared GPU by GPU, not lent whole"));
  }
  if (!r.terminating) {
    Add(plan::DeleteReservationPod{Ref(r)}, "ReservationRetiring",
        StrCat("Deleted reservation ", PodName(r), " of node ", f_.node->name,
               ": the device lane holds its GPUs for Slurm from now on"));
  }
  Explain("retiring the reservation: no successor, the device lane's holds take its place");
}

void Planner::RetireRecords() {
  const bool guarded = f_.swap_taint || f_.swap_guard;
  if (guarded && !f_.node->gpu_sharing.all_held) {
    // A swap or retirement left the GPUs uncounted in Kubernetes: the guard stays until
    // the device lane's holds keep Kubernetes off them.
    EnsureSwapGuard("the device lane does not hold every GPU yet");
    WaitForHandover(plan::Handover::kHoldsWanted,
                    "the device lane holds every GPU; then the swap guard goes");
    return;
  }
  for (const char* key : kLaneTaints) {
    if (HasTaint(*f_.k8s_node, key)) {
      RemoveTaint(key, "GpuSharingHandover",
                  StrCat("Removed taint ", key, " from node ", f_.node->name,
                         ": the device lane holds its GPUs"));
    }
  }
  plan::AnnotationPatch p;
  for (const char* key : kLaneAnnotations) RemoveIfPresent(&p, {key});
  PatchNode(std::move(p), "GpuSharingHandover",
            StrCat("Node ", f_.node->name,
                   ": the node lane's records cleared before the handover to the device lane"));
  // The swap guard label goes in DropSwapGuardUnlessWanted.
  WaitForHandover(plan::Handover::kHoldsWanted, "the node lane's records are cleared");
}

void Planner::EndGpuSharingRecord() {
  if (Find(f_.k8s_node->annotations, kGpuSharedSinceAnnotation) == nullptr) return;
  plan::AnnotationPatch p;
  p.remove.emplace_back(kGpuSharedSinceAnnotation);
  PatchNode(std::move(p), "GpuSharingEnded",
            StrCat("Node ", f_.node->name,
                   " is no longer shared GPU by GPU (its GPUs no longer map provably to Slurm's, "
                   "and the device lane has wound down): the node lane manages it whole again"));
}

}  // namespace skb::ownership::internal

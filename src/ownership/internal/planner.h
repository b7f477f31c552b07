// SPDX-License-Identifier: Apache-2.0
// The node-ownership planner of one node: from its Facts (internal/facts.h), the actions of
// the state the node is in (ownership.h lists the states). Internal to src/ownership (see
// internal/records.h); PlanOwnership (ownership.cc) is its only user.
//
// One class, its members defined by flow:
//   planner.cc      Run, which state the node is in (RunFlows), and the building blocks
//                   every flow uses (actions, Events, rechecks, the reservation's class)
//   lend.cc         lending: record, drain, signal, grace, preempt, release
//   return.cc       k8s (lent: cool-down, reclaim by quotas) and returning
//   slurm_owned.cc  slurm: the reservation's class and job list kept in step
//   swap.cc         swapping: a reservation replaced under the swap taint and guard, and a
//                   lend refused (which is a swap)
//   handover.cc     an eligible node handed over to the device lane (gpu_sharing), and the
//                   record of it removed once the node is the node lane's again
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/ownership/internal/facts.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/ownership.h"
#include "src/ownership/reservation_class.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership::internal {

// Unqualified in every file of the Planner.
using inventory::GpuPod;
using plan::Action;
using plan::EventType;

// Plans one node; `out` collects the result.
class Planner {
 public:
  Planner(const Facts& f, OwnershipPlan* out) : f_(f), out_(out) {}

  void Run();

 private:
  void RunFlows();

  // --- building blocks (planner.cc)
  void Explain(std::string line);
  void Recheck(Clock::TimePoint t);
  // An action of this node, its cause from the state (set before its flow runs); returns
  // its operation, to fill in.
  template <class Op>
  Op& Add(Op op, std::string event_reason, std::string event_message,
          plan::EventType type = plan::EventType::kNormal) {
    return std::get<Op>(
        AddAction(std::move(op), std::move(event_reason), std::move(event_message), type).op);
  }
  plan::Action& AddAction(plan::Operation op, std::string event_reason, std::string event_message,
                          plan::EventType type);
  void PatchNode(plan::AnnotationPatch patch, std::string reason, std::string message,
                 plan::EventType type = plan::EventType::kNormal);
  void SetTaint(const char* key, std::string reason, std::string message);
  void RemoveTaint(const char* key, std::string reason, std::string message);
  // Removes the lend bookkeeping that is present from `patch`.
  void RemoveIfPresent(plan::AnnotationPatch* patch, std::initializer_list<const char*> keys);
  ReservationClass WantedClass(std::string* why) const;
  // `j` as Slurm preempts it: every component of a heterogeneous job, wherever it runs.
  std::vector<const slurm::JobView*> Whole(const slurm::JobView& j) const;
  JobPolicy PolicyOf(const slurm::JobView& j) const;
  int64_t Gpus() const;
  void Create(ReservationClass cls, std::string reason, std::string message, plan::EventType type);

  // --- lending (lend.cc)
  std::string Preemptor() const;
  void AddWhole(std::vector<uint32_t>* ids, const slurm::JobView& j) const;
  std::string HetNote(const std::vector<uint32_t>& ids, std::string_view what) const;
  void Lend(std::string start_reason, std::string start_message, plan::EventType start_type);
  void LendDefault(std::string_view cause);
  void RemoveGuardTaints();
  void Cleanup();
  std::string OutlivedGrace() const;
  void RequeueJobsEndedBySignal(const std::string& who, Signalled* signalled);

  // --- k8s and returning (return.cc)
  void KubernetesOwned();
  // Since when the node is lent: its record, else its lend drain's time, else now.
  Clock::TimePoint LentAt() const;
  // Quotas take the lent node back: true when it may return now (no pod left on it).
  bool Reclaim(std::string* why);
  // The reclaim taint stays for as long as quotas reclaim the node (through its return, until
  // the job it serves runs or no longer waits); then it goes, whatever the state.
  void DropReclaimTaintWhenOver();
  void Returning();

  // --- slurm (slurm_owned.cc)
  void SlurmOwned();

  // --- switching modes (handover.cc)
  // An eligible node: what is in flight ends, then the node lane's state is retired.
  void HandOver();
  // What the node lane still has on the node ("" when nothing: it may be handed over).
  std::string Leftovers() const;
  // The node is not handed over yet: `h` says what the device lane may do meanwhile.
  void WaitForHandover(plan::Handover h, std::string why);
  // A live reservation of an eligible node goes as a swap without a successor.
  void RetireReservation();
  // No reservation and not lent: the swap guard until every GPU is held, then the rest.
  void RetireRecords();
  // A node the device lane no longer shares: its handover record goes.
  void EndGpuSharingRecord();

  // --- swapping (swap.cc)
  void StartSwap(std::string why, plan::EventType type);
  std::string WhyMayNotTakeSlurmWork(const GpuPod& p) const;
  bool LendRefused(std::string* why) const;
  void RefuseLend(const std::string& why);
  void SwapRelease();
  bool EvictSwapIntruders();
  // The swap guard: the node label that makes the chart's admission policy refuse every
  // binding to the node and every GPU pod created on it by spec.nodeName (except the
  // bridge's), for as long as the node's reservation does not count its GPUs during a swap.
  // On before the old reservation is released; off once the new one runs (Run() drops it
  // in every state that did not ask for it).
  void EnsureSwapGuard(std::string_view why);
  void DropSwapGuardUnlessWanted();

  const Facts& f_;
  OwnershipPlan* out_;
  bool swap_guard_wanted_ = false;  // a flow of this plan keeps the swap guard on
};

}  // namespace skb::ownership::internal

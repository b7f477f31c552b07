// SPDX-License-Identifier: Apache-2.0
// The Planner's lending flow (internal/planner.h): from the lend's record on the node
// through the drain, the checkpoint signal, the grace and the preemption to the release of
// the reservation once Slurm has left.
#include <algorithm>

#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/internal/planner.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/ownership.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {
namespace {

void AddUnique(std::vector<uint32_t>* ids, uint32_t id) {
  if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
}

}  // namespace

std::string Planner::Preemptor() const {
  if (!f_.nominated.empty()) return PodName(*f_.nominated.front());
  for (const GpuPod* p : f_.k8s_pods) {
    if (p->phase == "Running") return PodName(*p);
  }
  if (!f_.k8s_pods.empty()) return PodName(*f_.k8s_pods.front());
  return "kubernetes";
}

// Adds `j` to `ids` unless a component of the same heterogeneous job is there already: the
// executor acts on the whole job (WholeJobId) for any of its components on this node.
void Planner::AddWhole(std::vector<uint32_t>* ids, const slurm::JobView& j) const {
  for (uint32_t id : *ids) {
    for (const slurm::JobView* o : f_.jobs) {
      if (o->job_id == id && WholeJobId(*o) == WholeJobId(j)) return;
    }
  }
  ids->push_back(j.job_id);
}

// "; heterogeneous job 11 (components 11 on node1, 12 on node2) is requeued as a whole" for
// each heterogeneous job among `ids`: the Event says which other nodes the action reaches.
std::string Planner::HetNote(const std::vector<uint32_t>& ids, std::string_view what) const {
  std::string out;
  for (uint32_t id : ids) {
    for (const slurm::JobView* j : f_.jobs) {
      if (j->job_id != id || j->het_job_id == 0) continue;
      StrAppend(&out, "; ", DescribeWhole(Whole(*j)), " is ", what, " as a whole");
      break;
    }
  }
  return out;
}

void Planner::LendDefault(std::string_view cause) {
  const std::string who = f_.lent_to.empty() ? Preemptor() : f_.lent_to;
  Lend("LendingToKubernetes",
       StrCat("Node ", f_.node->name, " is lent to Kubernetes (", who, "): ", cause),
       EventType::kNormal);
}

// The lend steps, from wherever the node is: record -> drain -> (protected: wait) ->
// signal -> grace -> preempt -> (empty) release -> clean up.
void Planner::Lend(std::string start_reason, std::string start_message, EventType start_type) {
  const GpuPod* r =
      f_.reservation != nullptr && f_.reservation->terminating ? f_.reservation : nullptr;
  const std::string who = f_.lent_to.empty() ? Preemptor() : f_.lent_to;
  const Clock::TimePoint now = f_.now;
  // kube-scheduler deletes its victim and records the preemptor's nominated node in two
  // calls that may land in either order (asynchronous preemption): a lend that started
  // between them would name nobody. Until kPreemptorWait after the deletion it waits for
  // the preemptor; the reservation, Terminating behind our finalizer, still holds the GPUs.
  if (!f_.lent_at && r != nullptr && r->deletion_time && who == "kubernetes") {
    // The deletion's start, read back with the grace the reservation was created with.
    const Clock::TimePoint deleted = *r->deletion_time - ReservationGrace(*f_.lending);
    if (deleted <= now && now < deleted + kPreemptorWait) {
      Explain("the reservation is being deleted: waiting briefly for the pod that preempted it");
      Recheck(deleted + kPreemptorWait);
      return;
    }
  }
  Explain(StrCat("lent to Kubernetes (", who, ")", f_.lent_at ? "" : ": lend starts now"));

  // 0. Record the lend on the node first: from here on the node counts as Kubernetes'.
  if (!f_.lent_at || f_.lent_at_garbled) {
    plan::AnnotationPatch p;
    Clock::TimePoint since = now;
    if (f_.lend_drain && f_.slurm_node->reason_time > 0)
      since = FromUnix(f_.slurm_node->reason_time);
    p.set[kLentAtAnnotation] = StrCat(ToUnix(since));
    p.set[kLentToAnnotation] = who;
    if (f_.lent_at_garbled) {
      // Read as "now" on every plan, min_lend_time would never pass: the node would stay
      // lent for ever. Written again from what is known.
      PatchNode(
          std::move(p), "LendRecordRepaired",
          StrCat("Node ", f_.node->name, " had an unreadable or future ", kLentAtAnnotation, " ('",
                 *Find(f_.k8s_node->annotations, kLentAtAnnotation), "'): written again"),
          EventType::kWarning);
    } else {
      PatchNode(std::move(p), std::move(start_reason), std::move(start_message), start_type);
    }
  }
  // 1. No new Slurm work lands here.
  if (f_.admin_drain) {
    Explain(StrCat("Slurm drain by an admin ('", f_.slurm_node->reason, "'): left as it is"));
  } else if (!f_.lend_drain) {
    AddAction(plan::DrainSlurmNode{health::SlurmReason(StrCat("lent to ", who))}, "SlurmNodeLent",
              StrCat("Drained Slurm node ", f_.node->name, ": lent to Kubernetes (", who, ")"),
              EventType::kWarning)
        .cause = plan::Cause::kLend;
  }

  bool k8s_running = false;
  for (const GpuPod* p : f_.k8s_pods) k8s_running |= p->phase == "Running";

  // Protected work is never signalled or preempted: the lend waits for it.
  std::vector<uint32_t> blocked;
  std::string blocked_why;
  for (const slurm::JobView* j : f_.jobs) {
    if (!Actionable(*j)) continue;
    JobPolicy p = PolicyOf(*j);
    if (p.preemptible) continue;
    AddUnique(&blocked, j->job_id);
    StrAppend(&blocked_why, blocked_why.empty() ? "" : "; ", "job ", j->job_id, ": ", p.why);
  }

  // The reservation stops holding the GPUs in Kubernetes' count once it is gone, released,
  // terminal, or past the kubelet's kill deadline: Slurm work still here needs the taint.
  // It goes on earlier, as soon as a signalled job outlives its grace: from then on the
  // lend waits on Slurm (a requeue refused, a slow epilog), and an outage of the bridge
  // must not let the kill deadline come while nothing guards the node.
  if (!f_.jobs.empty()) {
    std::string uncounted;
    if (r == nullptr) {
      uncounted = "the reservation pod is gone";
    } else if (Released(*r)) {
      uncounted = "the reservation is released";
    } else if (Terminal(*r)) {
      uncounted = StrCat("the reservation pod is ", r->phase);
    } else if (r->deletion_time && now >= *r->deletion_time - kBusyTaintLead) {
      uncounted = "the reservation pod's termination deadline is near";
    } else if (r->deletion_time) {
      Recheck(*r->deletion_time - kBusyTaintLead);
    }
    if (uncounted.empty()) uncounted = OutlivedGrace();
    if (!blocked.empty() && uncounted.empty()) uncounted = "non-preemptible Slurm jobs remain";
    if (!uncounted.empty()) {
      if (!f_.busy_taint) {
        SetTaint(kBusyTaintKey, "SlurmWorkRemains",
                 StrCat("Tainted node ", f_.node->name, " ", kBusyTaintKey,
                        ":NoSchedule: Slurm jobs still hold its GPUs and ", uncounted));
      }
      Explain(StrCat("Slurm jobs remain and ", uncounted, ": node tainted ", kBusyTaintKey));
    }
  }

  if (!blocked.empty()) {
    const std::string ids = JoinIds(blocked);
    if (f_.lend_blocked != ids) {
      plan::AnnotationPatch p;
      p.set[kLendBlockedAnnotation] = ids;
      PatchNode(
          std::move(p), "LendBlockedByProtectedJobs",
          StrCat(
              "Node ", f_.node->name, " is being lent to Kubernetes (", who, ") but Slurm job(s) ",
              ids, " may not be preempted (", blocked_why,
              "): the node is drained and nothing is signalled; the lend completes when they end"),
          EventType::kWarning);
    }
    Explain(StrCat("lend waits for non-preemptible job(s): ", blocked_why));
    if (k8s_running) {
      Explain(
          "Kubernetes GPU pods already run beside them: the GPUs are double booked (a reservation "
          "finalizer was removed by hand?); the bridge evicts no pod");
    }
    return;
  }

  // Signal, wait the grace, preempt.
  std::map<std::pair<int, plan::SignalScope>, std::vector<uint32_t>> to_signal;
  std::map<plan::JobPreemptMode, std::vector<uint32_t>> to_preempt;
  Signalled signalled;
  std::map<plan::JobPreemptMode, slurm::UnixTime> signalled_since;  // per preempt group
  bool newly_signalled = false;
  for (const slurm::JobView* j : f_.jobs) {
    if (!Actionable(*j)) {
      Explain(StrCat("job ", j->job_id, " is leaving the node (",
                     j->completing ? "completing" : "requeue pending", ")"));
      continue;
    }
    JobPolicy p = PolicyOf(*j);
    if (k8s_running) {
      AddWhole(&to_preempt[p.mode], *j);
      Explain(StrCat(
          "job ", j->job_id,
          ": a Kubernetes GPU pod already runs on the node, preempted at once without grace"));
      continue;
    }
    if (j->state == slurm::JobState::kSuspended) {
      AddWhole(&to_preempt[p.mode], *j);
      Explain(StrCat("job ", j->job_id, " is suspended (cannot catch a signal): preempted now"));
      continue;
    }
    auto it = f_.signalled.find(j->job_id);
    if (it == f_.signalled.end()) {
      AddWhole(&to_signal[{p.signal, p.scope}], *j);
      // To the millisecond: the grace ends when it should, not up to a second later.
      signalled[j->job_id] = {now, /*exact=*/true};
      newly_signalled = true;
      Recheck(now + p.grace);
      Explain(StrCat("job ", j->job_id, ": checkpoint signal ", SignalName(p.signal), ", ",
                     FormatSeconds(p.grace), " grace"));
      continue;
    }
    signalled[j->job_id] = it->second;
    const Clock::TimePoint deadline = GraceEnds(it->second, p.grace);
    if (now >= deadline) {
      AddWhole(&to_preempt[p.mode], *j);
      auto& since = signalled_since[p.mode];
      const slurm::UnixTime at = ToUnix(it->second.at);
      since = since == 0 ? at : std::min(since, at);
      Explain(StrCat("job ", j->job_id, ": grace of ", FormatSeconds(p.grace),
                     " over: ", plan::JobPreemptModeName(p.mode)));
    } else {
      Recheck(deadline);
      Explain(
          StrCat("job ", j->job_id, ": signalled, grace ends in ", FormatSeconds(deadline - now)));
    }
  }
  RequeueJobsEndedBySignal(who, &signalled);
  for (const auto& [key, ids] : to_signal) {
    Add(plan::SignalSlurmJobs{.job_ids = ids, .signal = key.first, .scope = key.second},
        "SlurmJobsSignalled",
        StrCat("Sent ", SignalName(key.first), " to Slurm job(s) ", JoinIds(ids), " on node ",
               f_.node->name, " to checkpoint: the node is lent to Kubernetes (", who, ")",
               HetNote(ids, "signalled")));
  }
  if (newly_signalled) {
    plan::AnnotationPatch p;
    p.set[kSignalledAtAnnotation] = FormatSignalled(signalled);
    PatchNode(std::move(p), "CheckpointGraceStarted",
              StrCat("Grace period started for Slurm jobs on node ", f_.node->name,
                     ": they are preempted when it ends"));
  }
  for (const auto& [mode, ids] : to_preempt) {
    Add(plan::PreemptSlurmJobs{.job_ids = ids,
                               .mode = mode,
                               .preemptor = who,
                               .at_unix = ToUnix(now),
                               .since_unix = signalled_since[mode]},
        "SlurmJobsPreempted",
        StrCat(mode == plan::JobPreemptMode::kCancel        ? "Cancelled"
               : mode == plan::JobPreemptMode::kRequeueHold ? "Requeued (held)"
                                                            : "Requeued",
               " Slurm job(s) ", JoinIds(ids), " on node ", f_.node->name,
               ": the node is lent to Kubernetes (", who, ")",
               HetNote(ids, mode == plan::JobPreemptMode::kCancel ? "cancelled" : "requeued")),
        k8s_running ? EventType::kWarning : EventType::kNormal);
  }

  if (!f_.jobs.empty()) return;
  // 3. Slurm shows no job on the node: the GPUs are free; hand them over. The guard taints
  // go first, while the reservation still counts the GPUs: after the release they would
  // keep the preemptor off the node (kube-scheduler then preempts elsewhere), and a bridge
  // that died right after the release left them for as long as it was down (seen in
  // CrashAtEveryStepE2E/ReservationReleased: a second job preempted for the same pod).
  RemoveGuardTaints();
  if (r != nullptr && !Released(*r)) {
    Add(plan::ReleaseReservationPod{.pod = Ref(*r),
                                    .check = plan::ReleaseCheck::kNoSlurmJobs,
                                    .since_unix = f_.lent_at ? ToUnix(*f_.lent_at) : 0},
        "ReservationReleased",
        StrCat("Released reservation ", PodName(*r), ": Slurm shows no job on node ", f_.node->name,
               "; its GPUs go to Kubernetes (", who, ")"));
  } else if (r != nullptr) {
    Explain(StrCat("reservation ", PodName(*r), " released: waiting for it to go"));
  }
  Cleanup();
}

// "job(s) 6 outlived their grace after the checkpoint signal" when a job that holds the
// node was signalled (signalled-at) longer than its grace ago; else empty.
std::string Planner::OutlivedGrace() const {
  std::vector<uint32_t> ids;
  for (const slurm::JobView* j : f_.jobs) {
    auto it = f_.signalled.find(j->job_id);
    if (it == f_.signalled.end()) continue;
    if (f_.now >= GraceEnds(it->second, PolicyOf(*j).grace)) {
      AddUnique(&ids, j->job_id);
    }
  }
  if (ids.empty()) return "";
  return StrCat("job(s) ", JoinIds(ids), " outlived their grace after the checkpoint signal");
}

// A signalled job that ended before its grace was over -- it died of the signal (a batch
// script that does not trap it ends FAILED) or checkpointed and exited -- was preempted all
// the same: it is requeued like the others (Slurm's own PreemptMode=REQUEUE treats a job
// that exits during its GraceTime the same way). Only the run we signalled (started before
// the signal, ended after it); a job its user cancelled stays cancelled. A job killed by
// the checkpoint signal during the lend but missing from the signalled-at annotation (the
// daemon died between sending and recording) is requeued too. Kept in `signalled` until
// requeued so the annotation keeps naming it.
void Planner::RequeueJobsEndedBySignal(const std::string& who, Signalled* signalled) {
  for (const slurm::JobView& e : f_.node->ended_jobs) {
    if (signalled->count(e.job_id)) continue;                 // a run of it is on the node again
    if (e.name == slurm::kMaintenanceCheckJobName) continue;  // the maintenance cycle's
    JobPolicy p = PolicyFor(e, *f_.cfg, f_.now);
    SignalledAt signal;
    if (auto it = f_.signalled.find(e.job_id); it != f_.signalled.end()) {
      signal = it->second;
    } else if (f_.lent_at && e.exit_signal != 0 && e.exit_signal == p.signal &&
               e.end_time >= ToUnix(*f_.lent_at)) {
      signal = {FromUnix(ToUnix(*f_.lent_at))};
    } else {
      continue;
    }
    const slurm::UnixTime at = ToUnix(signal.at);  // Slurm's times are whole seconds
    if (e.start_time > at || (e.end_time != 0 && e.end_time < at)) continue;  // another run
    const std::string ended = StrCat("job ", e.job_id, " ended ", slurm::JobStateName(e.state),
                                     " after the checkpoint signal");
    if (e.state == slurm::JobState::kCancelled) {
      Explain(StrCat(ended, ": cancelled by its user, left so"));
      continue;
    }
    if (p.mode == plan::JobPreemptMode::kCancel || !e.requeue) {
      Explain(StrCat(ended, ": its preemption ", e.requeue ? "cancels" : "cannot requeue",
                     ", nothing more to do"));
      continue;
    }
    (*signalled)[e.job_id] = signal;
    Explain(StrCat(ended, ": requeued as a preempted job"));
    // The executor requeues its whole job.
    Add(plan::PreemptSlurmJobs{.job_ids = {e.job_id},
                               .mode = p.mode,
                               .preemptor = who,
                               .at_unix = at,
                               .ended_after_signal = true,
                               .since_unix = at},
        "EndedJobRequeued",
        StrCat("Requeued Slurm job ", WholeJobId(e), ": it ended ", slurm::JobStateName(e.state),
               " after the checkpoint signal (", SignalName(p.signal),
               ") instead of waiting for the grace period; node ", f_.node->name,
               " is lent to Kubernetes (", who, ")"),
        EventType::kWarning);
  }
}

// Bookkeeping of a finished lend step: the busy taint and per-job annotations.
void Planner::RemoveGuardTaints() {
  // A swap taint left from a replacement the lend interrupted goes too: with Slurm gone
  // it would only keep the preemptor off the node.
  for (const char* key : {kBusyTaintKey, kSwapTaintKey}) {
    if (HasTaint(*f_.k8s_node, key)) {
      RemoveTaint(key, "SlurmWorkGone",
                  StrCat("Removed taint ", key, " from node ", f_.node->name,
                         ": no Slurm job holds its GPUs"));
    }
  }
}

void Planner::Cleanup() {
  plan::AnnotationPatch p;
  RemoveIfPresent(&p, {kSignalledAtAnnotation, kLendBlockedAnnotation});
  PatchNode(std::move(p), "LendCompleted",
            StrCat("Slurm left node ", f_.node->name, ": lend bookkeeping cleared"));
}

}  // namespace skb::ownership::internal

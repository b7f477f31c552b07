// SPDX-License-Identifier: Apache-2.0
// The ActionExecutor's Slurm actions: drain, resume, requeue, features, the checkpoint
// signal and preemption of jobs, and the maintenance cycle's reboot, reservation and check
// job (their contract: src/plan/action.h and
// src/ownership/ownership.h). Each re-reads what it depends on from slurmctld.
#include <algorithm>
#include <optional>

#include "bridge/logging.h"
#include "bridge/reconcile/action_executor.h"
#include "src/base/strings.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/preemption_record.h"

namespace skb::bridge {

using plan::Action;
using slurm::WriteOutcome;

namespace {

// Job `listed` of an action, re-read at the source; nullopt when Slurm no longer knows it,
// or when the whole job it belongs to (ownership::WholeJobId: a heterogeneous job's leader)
// is among `done` already: Slurm acts on a heterogeneous job once, by its leader's id.
StatusOr<std::optional<skb::slurm::JobView>> LoadListed(slurm::SlurmClient* slurm, uint32_t listed,
                                                        const std::vector<uint32_t>& done) {
  auto job = slurm->LoadJob(listed);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) return std::optional<skb::slurm::JobView>();
    return job.status();
  }
  if (std::find(done.begin(), done.end(), ownership::WholeJobId(*job)) != done.end()) {
    return std::optional<skb::slurm::JobView>();
  }
  return std::optional<skb::slurm::JobView>(*std::move(job));
}

}  // namespace

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::DrainSlurmNode& op) {
  if (a.cause == plan::Cause::kLend) {
    // A lend never takes over an admin's drain (it would later be resumed as ours): the
    // source re-check of whose drain is in place reads Slurm's reason as it is now.
    ASSIGN_OR_RETURN(slurm::NodeView n, slurm_->LoadNode(a.node));
    if (n.drain && !n.DrainedByBridge()) {
      return AbortedError(StrCat("node ", a.node, " is drained by an admin ('", n.reason,
                                 "'): not re-worded for the lend"));
    }
  }
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->DrainNode(a.node, op.reason));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::ResumeSlurmNode& op) {
  // The plan was made from a snapshot: resume only the drain it saw, never one that
  // changed meanwhile (an admin may have taken over the node).
  ASSIGN_OR_RETURN(slurm::NodeView node, slurm_->LoadNode(a.node));
  const bool down = node.base_state == skb::slurm::NodeBaseState::kDown;
  if (!node.drain && !(op.down_too && down)) return Effect::kUnchanged;
  if (node.reason != op.expected_reason) {
    return AbortedError(StrCat("node ", a.node, " drain reason changed to '", node.reason,
                               "' since it was planned ('", op.expected_reason, "')"));
  }
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->ResumeNode(a.node));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::RequeueSlurmJobs& op) {
  std::string requeued, failed;
  Status first_error;
  for (uint32_t id : op.job_ids) {
    StatusOr<WriteOutcome> o = slurm_->RequeueJob(id, /*hold=*/false);
    if (o.ok()) {
      if (*o == WriteOutcome::kChanged) {
        StrAppend(&requeued, requeued.empty() ? "" : ",", id);
        // As a preemption's requeue: eligible at once for another node, rather than after
        // Slurm's requeue begin time (~2 min). Best effort: the job is safe either way.
        if (auto e = slurm_->MakeEligibleNow(id); !e.ok()) {
          Logger("reconcile")
              ->warn("make_eligible_failed job={} error=\"{}\"", id, e.status().message());
        }
      }
      continue;
    }
    if (o.status().code() == StatusCode::kNotFound) continue;  // gone: nothing to requeue
    StrAppend(&failed, failed.empty() ? "" : "; ", id, ": ", o.status().message());
    if (first_error.ok()) first_error = o.status();
  }
  if (!requeued.empty()) {
    Record(a, StrCat(a.event_message, " (jobs ", requeued, ")"));
  }
  if (!first_error.ok()) {
    return Status(first_error.code(), StrCat("requeue on ", a.node, " failed for ", failed));
  }
  return requeued.empty() ? Effect::kUnchanged : Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::SetSlurmFeatures& op) {
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->SetFeatures(a.node, op.features));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::RebootSlurmNode& op) {
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->RebootNode(a.node, op.reason));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::CreateSlurmReservation& op) {
  ASSIGN_OR_RETURN(WriteOutcome o,
                   slurm_->CreateMaintenanceReservation(
                       {.name = op.name, .node = a.node, .user = "", .minutes = op.minutes}));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::DeleteSlurmReservation& op) {
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->DeleteReservation(op.name));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::SubmitCheckJob& op) {
  ASSIGN_OR_RETURN(slurm::CheckJobSubmission s,
                   slurm_->SubmitCheckJob({.node = a.node,
                                           .reservation = op.reservation,
                                           .command = op.command,
                                           .gpus = op.gpus,
                                           .time_limit_minutes = op.minutes,
                                           .output = "",
                                           .submitted_since = op.submitted_since}));
  if (s.outcome != WriteOutcome::kChanged) return Effect::kUnchanged;
  Record(a, StrCat(a.event_message, " (job ", s.job_id, ")"));
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::SignalSlurmJobs& op) {
  slurm::SignalScope scope = slurm::SignalScope::kFullJob;
  if (op.scope == plan::SignalScope::kBatchOnly) scope = slurm::SignalScope::kBatchStep;
  if (op.scope == plan::SignalScope::kSteps) scope = slurm::SignalScope::kSteps;
  std::string sent;
  const auto now = clock_->Now();
  std::vector<uint32_t> targets;
  for (uint32_t listed : op.job_ids) {
    // A component of a heterogeneous job stands for the whole job: Slurm signals every
    // component through the leader's id (a component's own id reaches none of them).
    ASSIGN_OR_RETURN(std::optional<skb::slurm::JobView> job, LoadListed(slurm_, listed, targets));
    if (!job) continue;
    const uint32_t id = ownership::WholeJobId(*job);
    targets.push_back(id);
    {
      // A signal is not idempotent, and the planner may ask again before the informer
      // shows the signalled-at annotation it recorded: one signal per job per window.
      MutexLock lock(&signalled_mu_);
      auto it = signalled_.find({id, op.signal});
      if (it != signalled_.end() && now - it->second < kSignalDedupWindow) continue;
      std::erase_if(signalled_,
                    [&](const auto& e) { return now - e.second >= kSignalDedupWindow; });
    }
    Status s = slurm_->SignalJob(id, op.signal, scope);
    if (s.ok()) {
      MutexLock lock(&signalled_mu_);
      signalled_[{id, op.signal}] = now;
    }
    if (s.ok()) {
      StrAppend(&sent, sent.empty() ? "" : ",", id);
      continue;
    }
    // No longer running (finished, requeued, gone): nothing to signal.
    if (s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kNotFound) continue;
    return s;
  }
  if (sent.empty()) return Effect::kUnchanged;
  Record(a, StrCat(a.event_message, " (jobs ", sent, ")"));
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::PreemptSlurmJobs& op) {
  std::string done;
  Status first_error;
  std::vector<uint32_t> targets;
  for (uint32_t listed : op.job_ids) {
    // `listed` runs on a.node; Slurm requeues and cancels a heterogeneous job only whole,
    // by its leader's id (a component's own id is refused), wherever the leader runs.
    ASSIGN_OR_RETURN(std::optional<skb::slurm::JobView> job, LoadListed(slurm_, listed, targets));
    if (!job) continue;
    const uint32_t id = ownership::WholeJobId(*job);
    bool here = std::find(job->nodes.begin(), job->nodes.end(), a.node) != job->nodes.end();
    bool active = job->state == skb::slurm::JobState::kRunning ||
                  job->state == skb::slurm::JobState::kSuspended;
    if (op.ended_after_signal) {
      // Only the run that ended after our signal: not one requeued meanwhile (pending, or
      // started again), not one its user cancelled. Requeue first (a finished job's
      // record is what Slurm may refuse to update), then say why in its comment.
      bool finished = !active && job->state != skb::slurm::JobState::kPending &&
                      job->state != skb::slurm::JobState::kCancelled && !job->completing;
      if (!here || !finished || job->requeue_pending || job->start_time > op.at_unix) continue;
      targets.push_back(id);
      auto o = slurm_->RequeueJob(id, op.mode == plan::JobPreemptMode::kRequeueHold);
      if (!o.ok() && o.status().code() == StatusCode::kUnavailable) return o.status();
      if (!o.ok()) {
        // Best effort: the job has left the node already; nothing waits for this.
        Record(a, k8s::EventType::kWarning, "EndedJobRequeueFailed",
               StrCat("Slurm job ", id, " ended ", skb::slurm::JobStateName(job->state),
                      " after the checkpoint signal and Slurm refused to requeue it: ",
                      o.status().message()));
        continue;
      }
      if (auto c = slurm_->SetAdminComment(
              listed,
              ownership::RecordPreemption(job->admin_comment, op.at_unix, op.preemptor, lending_));
          !c.ok()) {
        Logger("reconcile")
            ->warn("admin_comment_failed job={} error=\"{}\"", id, c.status().message());
      }
    } else {
      if (!here || !active || job->requeue_pending) continue;
      targets.push_back(id);
      // The record goes on the component here (its own comment: a write to the leader's id
      // would overwrite every component's); the whole job's policy reads every component.
      std::string comment =
          ownership::RecordPreemption(job->admin_comment, op.at_unix, op.preemptor, lending_);
      if (auto c = slurm_->SetAdminComment(listed, comment); !c.ok()) {
        if (first_error.ok()) first_error = c.status();
        continue;
      }
      StatusOr<WriteOutcome> o =
          op.mode == plan::JobPreemptMode::kCancel
              ? slurm_->CancelJob(id)
              : slurm_->RequeueJob(id, op.mode == plan::JobPreemptMode::kRequeueHold);
      if (!o.ok()) {
        if (first_error.ok()) first_error = o.status();
        continue;
      }
    }
    if (op.mode == plan::JobPreemptMode::kRequeue) {
      // Without this the requeued job waits ~2 min (Slurm's requeue begin time) even when
      // other nodes are free. Best effort: the job is safe either way.
      if (auto e = slurm_->MakeEligibleNow(id); !e.ok()) {
        Logger("reconcile")
            ->warn("make_eligible_failed job={} error=\"{}\"", id, e.status().message());
      }
    }
    StrAppend(&done, done.empty() ? "" : ",", id);
  }
  if (!done.empty()) {
    Record(a, StrCat(a.event_message, " (jobs ", done, ")"));
  }
  if (!first_error.ok()) {
    // Slurm refused (e.g. a job that cannot be requeued): the planner asks again; the
    // busy taint keeps Kubernetes off the node meanwhile.
    if (first_error.code() == StatusCode::kUnavailable) return first_error;
    return FailedPreconditionError(
        StrCat("preempting jobs on ", a.node, ": ", first_error.message()));
  }
  return done.empty() ? Effect::kUnchanged : Effect::kChanged;
}

}  // namespace skb::bridge

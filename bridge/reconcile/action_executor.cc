#include "bridge/reconcile/action_executor.h"

#include "k8s/field_reader.h"
#include "k8s/time_format.h"
#include "src/base/retry.h"
#include "src/base/strings.h"

namespace skb::bridge {

using plan::Action;
using plan::ActionKind;
using slurm::WriteOutcome;

ActionExecutor::ActionExecutor(slurm::SlurmClient* slurm, k8s::KubeClient* kube,
                               k8s::EventRecorder* events, const Clock* clock,
                               ownership::LendingConfig lending)
    : slurm_(slurm), kube_(kube), events_(events), clock_(clock), lending_(std::move(lending)) {}

k8s::EventType ToK8sEventType(plan::EventType t) {
  return t == plan::EventType::kWarning ? k8s::EventType::kWarning : k8s::EventType::kNormal;
}

std::string_view EffectName(Effect e) { return e == Effect::kChanged ? "changed" : "unchanged"; }

void ActionExecutor::Record(const Action& a, k8s::EventType type, const std::string& reason,
                            const std::string& message) {
  events_->Record(k8s::NodeRef(a.K8sNode()), type, reason, message);
}

void ActionExecutor::Record(const Action& a) {
  Record(a, ToK8sEventType(a.event_type), a.event_reason, a.event_message);
}

void ActionExecutor::Record(const Action& a, const std::string& message) {
  Record(a, ToK8sEventType(a.event_type), a.event_reason, message);
}

StatusOr<Effect> ActionExecutor::Execute(const Action& a) {
  StatusOr<Effect> s = Effect::kUnchanged;
  switch (a.kind) {
    case ActionKind::kDrainSlurmNode:
      s = Drain(a);
      break;
    case ActionKind::kResumeSlurmNode:
      s = Resume(a);
      break;
    case ActionKind::kRequeueSlurmJobs:
      s = Requeue(a);
      break;
    case ActionKind::kSetNodeCondition:
      s = SetCondition(a);
      break;
    case ActionKind::kSetSlurmFeatures:
      s = SetFeatures(a);
      break;
    case ActionKind::kCreateReservationPod:
      s = CreateReservation(a);
      break;
    case ActionKind::kDeleteReservationPod:
      s = DeleteReservation(a);
      break;
    case ActionKind::kPatchPodAnnotations:
      s = PatchPodAnnotations(a);
      break;
    case ActionKind::kReleaseReservationPod:
      s = ReleaseReservation(a);
      break;
    case ActionKind::kSignalSlurmJobs:
      s = SignalJobs(a);
      break;
    case ActionKind::kPreemptSlurmJobs:
      s = PreemptJobs(a);
      break;
    case ActionKind::kSetNodeTaint:
      s = ChangeTaint(a, /*add=*/true);
      break;
    case ActionKind::kRemoveNodeTaint:
      s = ChangeTaint(a, /*add=*/false);
      break;
    case ActionKind::kPatchNodeAnnotations:
      s = PatchNodeAnnotations(a);
      break;
    case ActionKind::kRestoreFinalizer:
      s = RestoreFinalizer(a);
      break;
    case ActionKind::kEvictPod:
      s = EvictPod(a);
      break;
  }
  if (!s.ok() && !IsRetryable(s.status())) {
    // Not retryable by itself: tell the humans, on the node, why the bridge is stuck.
    Record(a, k8s::EventType::kWarning, StrCat(ActionKindName(a.kind), "Failed"),
           StrCat(a.event_message, " -- failed: ", s.status().message()));
  }
  return s;
}

Effect ActionExecutor::Recorded(const Action& a, WriteOutcome o) {
  if (o != WriteOutcome::kChanged) return Effect::kUnchanged;
  Record(a);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Drain(const Action& a) {
  if (a.cause == plan::Cause::kLend) {
    // A lend never takes over an admin's drain (it would later be resumed as ours): the
    // source re-check of whose drain is in place reads Slurm's reason as it is now.
    ASSIGN_OR_RETURN(slurm::NodeView n, slurm_->LoadNode(a.node));
    if (n.drain && !n.DrainedByBridge()) {
      return AbortedError(StrCat("node ", a.node, " is drained by an admin ('", n.reason,
                                 "'): not re-worded for the lend"));
    }
  }
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->DrainNode(a.node, a.slurm_reason));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Resume(const Action& a) {
  // The plan was made from a snapshot: resume only the drain it saw, never one that
  // changed meanwhile (an admin may have taken over the node).
  ASSIGN_OR_RETURN(slurm::NodeView node, slurm_->LoadNode(a.node));
  if (!node.drain) return Effect::kUnchanged;
  if (node.reason != a.expected_reason) {
    return AbortedError(StrCat("node ", a.node, " drain reason changed to '", node.reason,
                               "' since it was planned ('", a.expected_reason, "')"));
  }
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->ResumeNode(a.node));
  return Recorded(a, o);
}

StatusOr<Effect> ActionExecutor::Requeue(const Action& a) {
  std::string requeued, failed;
  Status first_error;
  for (uint32_t id : a.job_ids) {
    StatusOr<WriteOutcome> o = slurm_->RequeueJob(id, /*hold=*/false);
    if (o.ok()) {
      if (*o == WriteOutcome::kChanged) StrAppend(&requeued, requeued.empty() ? "" : ",", id);
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

StatusOr<std::string> ActionExecutor::ConditionTransition(const Action& a, const std::string& now) {
  using Transition = plan::ConditionSpec::Transition;
  // lastTransitionTime changes only when the status flips. The planner says which from its
  // cache; only when it could not does the executor read the current condition.
  switch (a.condition.transition) {
    case Transition::kNow:
      return now;
    case Transition::kKeep:
      return k8s::FormatTime(a.condition.since);
    case Transition::kUnknown:
      break;
  }
  ASSIGN_OR_RETURN(nlohmann::json node, kube_->Get(k8s::Resource::Nodes(), "", a.K8sNode()));
  std::string transition = now;
  const nlohmann::json* conditions = nullptr;
  if (auto st = node.find("status"); st != node.end() && st->is_object()) {
    if (auto c = st->find("conditions"); c != st->end() && c->is_array()) conditions = &*c;
  }
  if (conditions != nullptr) {
    for (const auto& c : *conditions) {
      if (k8s::StringAt(c, "type") != a.condition.type) continue;
      if (k8s::StringAt(c, "status") == a.condition.status && c.contains("lastTransitionTime") &&
          c["lastTransitionTime"].is_string()) {
        transition = c["lastTransitionTime"].get<std::string>();
      }
    }
  }
  return transition;
}

StatusOr<Effect> ActionExecutor::SetCondition(const Action& a) {
  const std::string now = k8s::FormatTime(clock_->Now());
  ASSIGN_OR_RETURN(std::string transition, ConditionTransition(a, now));
  // A strategic merge patch merges conditions by type: other controllers' conditions
  // stay exactly as they are.
  nlohmann::json patch = {
      {"status",
       {{"conditions", nlohmann::json::array({{{"type", a.condition.type},
                                               {"status", a.condition.status},
                                               {"reason", a.condition.reason},
                                               {"message", a.condition.message},
                                               {"lastHeartbeatTime", now},
                                               {"lastTransitionTime", transition}}})}}}};
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", a.K8sNode(), k8s::PatchType::kStrategicMerge,
                        patch, {}, "status");
  if (!r.ok()) return r.status();
  // A condition's heartbeat is written each time: always a change.
  if (a.quiet) return Effect::kChanged;  // a healthy state's first publication: no news
  Record(a);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::SetFeatures(const Action& a) {
  ASSIGN_OR_RETURN(WriteOutcome o, slurm_->SetFeatures(a.node, a.features));
  return Recorded(a, o);
}

}  // namespace skb::bridge

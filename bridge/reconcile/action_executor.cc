// SPDX-License-Identifier: Apache-2.0
// The ActionExecutor's dispatch and Event recording. The handlers live by what they touch:
// slurm_actions.cc (Slurm nodes and jobs), node_actions.cc (the Kubernetes node),
// pod_actions.cc (the reservation pod and evictions).
#include "bridge/reconcile/action_executor.h"

#include "src/base/retry.h"
#include "src/base/strings.h"

namespace skb::bridge {

using plan::Action;
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

void ActionExecutor::RecordFailure(const Action& a, const Status& s) {
  // Not retryable by itself: tell the humans, on the node, why the bridge is stuck.
  if (s.ok() || IsRetryable(s)) return;
  Record(a, k8s::EventType::kWarning, StrCat(a.Kind(), "Failed"),
         StrCat(a.event_message, " -- failed: ", s.message()));
}

StatusOr<Effect> ActionExecutor::Execute(const Action& a) {
  StatusOr<Effect> s = std::visit([&](const auto& o) { return Run(a, o); }, a.op);
  RecordFailure(a, s.status());
  return s;
}

StatusOr<Effect> ActionExecutor::ExecuteConditions(std::span<const Action> actions) {
  if (actions.empty()) return Effect::kUnchanged;
  for (const Action& a : actions) {
    if (!a.Is<plan::SetNodeCondition>() || a.K8sNode() != actions.front().K8sNode()) {
      return InvalidArgumentError(StrCat("ExecuteConditions: ", plan::ToString(a),
                                         " is not a condition of node ",
                                         actions.front().K8sNode()));
    }
  }
  StatusOr<Effect> s = WriteConditions(actions);
  for (const Action& a : actions) RecordFailure(a, s.status());
  return s;
}

Effect ActionExecutor::Recorded(const Action& a, WriteOutcome o) {
  if (o != WriteOutcome::kChanged) return Effect::kUnchanged;
  Record(a);
  return Effect::kChanged;
}

}  // namespace skb::bridge

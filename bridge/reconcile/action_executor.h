// SPDX-License-Identifier: Apache-2.0
// Carries out the planner's actions against the real systems ("act" in observe -> merge ->
// plan -> act): Slurm through SlurmClient, Kubernetes through KubeClient, and records each
// action that changed something as a Kubernetes Event on the node.
//
// Every action is idempotent and re-checks the state it depends on at the source, so a
// plan made from a slightly stale snapshot, a duplicate, or a retry after a crash does no
// harm: a resume whose drain reason changed meanwhile is refused (Aborted: plan again); a
// drain already in place is kUnchanged and records nothing.
//
// Errors (src/base/status.h; IsRetryable in src/base/retry.h): Unavailable, DeadlineExceeded
// (slurmctld/apiserver down or slow: retry with back-off), Aborted (state moved: plan
// again), FailedPrecondition/NotFound (will not work until the state changes: a Warning
// Event says why and the reconcile loop waits for a change).
//
// Thread-safe (it keeps no state of its own; the clients are thread-safe): several reconcile
// workers call Execute, never two for the same node (the WorkQueue sees to that).
#pragma once

#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "bridge/slurm/slurm_client.h"
#include "k8s/event_recorder.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/base/thread_annotations.h"
#include "src/ownership/lending_config.h"
#include "src/plan/action.h"

namespace skb::bridge {

k8s::EventType ToK8sEventType(plan::EventType t);

// What an action that succeeded did at the source. The metrics count effects, not
// executions: a re-plan on a cache that has not yet seen the previous write plans the
// same action again, and its second run finds nothing to do.
enum class Effect {
  kChanged,    // it wrote something (and recorded its Event, unless the plan said quiet)
  kUnchanged,  // the source already was as planned, or the object is gone
};
std::string_view EffectName(Effect e);

class ActionExecutor {
 public:
  // All pointers must outlive the executor.
  // `lending` supplies the anti-thrash bookkeeping preemptions write into job comments.
  ActionExecutor(slurm::SlurmClient* slurm, k8s::KubeClient* kube, k8s::EventRecorder* events,
                 const Clock* clock, ownership::LendingConfig lending = {});

  StatusOr<Effect> Execute(const plan::Action& action);
  // Several SetNodeCondition actions of one node in one status patch (the status lane: a
  // node's conditions cost one write, not one each). Each records its Event as Execute
  // would; the effect is all of theirs. InvalidArgument for anything else, or two nodes.
  StatusOr<Effect> ExecuteConditions(std::span<const plan::Action> actions);

 private:
  // One handler per action kind (plan::Operation); Execute visits.
  // Slurm nodes and jobs.
  StatusOr<Effect> Run(const plan::Action& a, const plan::DrainSlurmNode& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::ResumeSlurmNode& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::RequeueSlurmJobs& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::SetSlurmFeatures& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::SignalSlurmJobs& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::PreemptSlurmJobs& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::RebootSlurmNode& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::CreateSlurmReservation& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::DeleteSlurmReservation& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::SubmitCheckJob& o);
  // The Kubernetes node.
  StatusOr<Effect> Run(const plan::Action& a, const plan::SetNodeCondition& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::SetNodeTaint& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::RemoveNodeTaint& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::PatchNodeAnnotations& o);
  // Pods: the reservation pod, and evictions. The contract of each ownership kind is in
  // src/ownership/ownership.h. Node names are Kubernetes names here: the ownership planner
  // assumes the identity mapping.
  StatusOr<Effect> Run(const plan::Action& a, const plan::CreateReservationPod& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::DeleteReservationPod& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::PatchPodAnnotations& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::ReleaseReservationPod& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::RestoreFinalizer& o);
  StatusOr<Effect> Run(const plan::Action& a, const plan::EvictPod& o);

  // The Warning Event of an action that failed for a reason a retry will not mend.
  void RecordFailure(const plan::Action& a, const Status& s);
  // The conditions of `actions` (SetNodeCondition, one node) in one patch.
  StatusOr<Effect> WriteConditions(std::span<const plan::Action> actions);
  // The lastTransitionTime a SetNodeCondition writes (`now` when the status flips).
  StatusOr<std::string> ConditionTransition(const plan::Action& a, const plan::ConditionSpec& c,
                                            const std::string& now);
  StatusOr<Effect> ChangeTaint(const plan::Action& a, const plan::TaintSpec& taint, bool add);
  void Record(const plan::Action& a, k8s::EventType type, const std::string& reason,
              const std::string& message);
  // The Event the planner attached to `a` (its type, reason and message; or `message`).
  void Record(const plan::Action& a);
  void Record(const plan::Action& a, const std::string& message);
  // kChanged with the action's Event when `o` is; kUnchanged otherwise.
  Effect Recorded(const plan::Action& a, slurm::WriteOutcome o);
  void RecordPod(const plan::Action& a, const std::string& ns, const std::string& name,
                 const std::string& uid);

  slurm::SlurmClient* const slurm_;
  k8s::KubeClient* const kube_;
  k8s::EventRecorder* const events_;
  const Clock* const clock_;
  const ownership::LendingConfig lending_;
  // Signals sent recently, by (job, signal): see SignalJobs. In memory only, so a crash
  // right after a signal may repeat it once (documented in ownership.h).
  static constexpr Clock::Duration kSignalDedupWindow = std::chrono::seconds(30);
  Mutex signalled_mu_;
  std::map<std::pair<uint32_t, int>, Clock::TimePoint> signalled_ GUARDED_BY(signalled_mu_);
};

}  // namespace skb::bridge

#include "src/plan/action.h"

#include <algorithm>

#include "src/base/strings.h"

namespace skb::plan {

std::string_view ActionKindName(ActionKind k) {
  switch (k) {
    case ActionKind::kDrainSlurmNode:
      return "DrainSlurmNode";
    case ActionKind::kResumeSlurmNode:
      return "ResumeSlurmNode";
    case ActionKind::kRequeueSlurmJobs:
      return "RequeueSlurmJobs";
    case ActionKind::kSetNodeCondition:
      return "SetNodeCondition";
    case ActionKind::kSetSlurmFeatures:
      return "SetSlurmFeatures";
    case ActionKind::kCreateReservationPod:
      return "CreateReservationPod";
    case ActionKind::kDeleteReservationPod:
      return "DeleteReservationPod";
    case ActionKind::kPatchPodAnnotations:
      return "PatchPodAnnotations";
    case ActionKind::kReleaseReservationPod:
      return "ReleaseReservationPod";
    case ActionKind::kSignalSlurmJobs:
      return "SignalSlurmJobs";
    case ActionKind::kPreemptSlurmJobs:
      return "PreemptSlurmJobs";
    case ActionKind::kSetNodeTaint:
      return "SetNodeTaint";
    case ActionKind::kRemoveNodeTaint:
      return "RemoveNodeTaint";
    case ActionKind::kPatchNodeAnnotations:
      return "PatchNodeAnnotations";
    case ActionKind::kRestoreFinalizer:
      return "RestoreFinalizer";
    case ActionKind::kEvictPod:
      return "EvictPod";
  }
  return "Unknown";
}

void RunChains(const std::vector<Action>& actions,
               const std::function<Status(const Action&)>& execute) {
  std::vector<Chain> failed;
  for (const Action& a : actions) {
    if (std::find(failed.begin(), failed.end(), a.chain) != failed.end()) continue;
    if (!execute(a).ok()) failed.push_back(a.chain);
  }
}

std::string_view EventTypeName(EventType t) {
  return t == EventType::kWarning ? "Warning" : "Normal";
}

std::string_view CauseName(Cause c) {
  switch (c) {
    case Cause::kHealth:
      return "health";
    case Cause::kMaintenance:
      return "maintenance";
    case Cause::kSlurmState:
      return "slurm-state";
    case Cause::kLend:
      return "lend";
    case Cause::kReturn:
      return "return";
    case Cause::kSwap:
      return "swap";
    case Cause::kReservation:
      return "reservation";
    case Cause::kFeatures:
      return "features";
  }
  return "health";
}

std::string_view DrainCauseLabel(Cause c) {
  switch (c) {
    case Cause::kLend:
    case Cause::kReturn:
      return "lending";
    case Cause::kMaintenance:
      return "maintenance";
    default:
      return "health";
  }
}

std::string_view SignalScopeName(SignalScope s) {
  switch (s) {
    case SignalScope::kFull:
      return "full";
    case SignalScope::kBatchOnly:
      return "batch";
    case SignalScope::kSteps:
      return "steps";
  }
  return "full";
}

std::string_view JobPreemptModeName(JobPreemptMode m) {
  switch (m) {
    case JobPreemptMode::kRequeue:
      return "requeue";
    case JobPreemptMode::kRequeueHold:
      return "requeue_hold";
    case JobPreemptMode::kCancel:
      return "cancel";
  }
  return "requeue";
}

std::string_view PreemptionModeLabel(JobPreemptMode m) {
  return m == JobPreemptMode::kCancel ? "cancel" : "requeue";
}

namespace {

std::string Jobs(const std::vector<uint32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) StrAppend(&s, i ? "," : "", ids[i]);
  return s;
}

std::string Patch(const AnnotationPatch& p) {
  std::string s;
  for (const auto& [k, v] : p.set) StrAppend(&s, " ", k, "='", v, "'");
  for (const auto& k : p.remove) StrAppend(&s, " -", k);
  return s;
}

std::string Pod(const PodRef& p) { return StrCat(" pod=", p.namespace_name, "/", p.name); }

}  // namespace

std::string ToString(const Action& a) {
  std::string s = StrCat(ActionKindName(a.kind), " ", a.node);
  switch (a.kind) {
    case ActionKind::kDrainSlurmNode:
      StrAppend(&s, " reason='", a.slurm_reason, "'");
      break;
    case ActionKind::kResumeSlurmNode:
      StrAppend(&s, " expected_reason='", a.expected_reason, "'");
      break;
    case ActionKind::kRequeueSlurmJobs:
      StrAppend(&s, " jobs=", Jobs(a.job_ids));
      break;
    case ActionKind::kSetNodeCondition:
      StrAppend(&s, " ", a.condition.type, "=", a.condition.status, " reason=", a.condition.reason,
                " message='", a.condition.message, "'");
      break;
    case ActionKind::kSetSlurmFeatures:
      StrAppend(&s, " features=");
      for (size_t i = 0; i < a.features.size(); ++i) StrAppend(&s, i ? "," : "", a.features[i]);
      break;
    case ActionKind::kCreateReservationPod:
      StrAppend(&s, " pod=", a.reservation.namespace_name, "/", a.reservation.name,
                " class=", a.reservation.priority_class_name, " gpus=", a.reservation.gpus);
      break;
    case ActionKind::kDeleteReservationPod:
    case ActionKind::kRestoreFinalizer:
    case ActionKind::kEvictPod:
      StrAppend(&s, Pod(a.pod));
      break;
    case ActionKind::kPatchPodAnnotations:
      StrAppend(&s, Pod(a.pod), Patch(a.annotations));
      break;
    case ActionKind::kReleaseReservationPod:
      StrAppend(&s, Pod(a.pod), " check=",
                a.release_check == ReleaseCheck::kSwapTaint  ? "swap-taint"
                : a.release_check == ReleaseCheck::kNodeGone ? "node-gone"
                                                             : "no-slurm-jobs");
      break;
    case ActionKind::kSignalSlurmJobs:
      StrAppend(&s, " jobs=", Jobs(a.job_ids), " signal=", a.signal,
                " scope=", SignalScopeName(a.signal_scope));
      break;
    case ActionKind::kPreemptSlurmJobs:
      StrAppend(&s, " jobs=", Jobs(a.job_ids), " mode=", JobPreemptModeName(a.preempt_mode),
                a.ended_after_signal ? " ended-after-signal" : "", " comment='", a.job_comment,
                "'");
      break;
    case ActionKind::kSetNodeTaint:
    case ActionKind::kRemoveNodeTaint:
      StrAppend(&s, " taint=", a.taint.key, a.taint.value.empty() ? "" : "=", a.taint.value, ":",
                a.taint.effect);
      break;
    case ActionKind::kPatchNodeAnnotations:
      StrAppend(&s, Patch(a.annotations));
      if (!a.labels.empty()) StrAppend(&s, " labels", Patch(a.labels));
      break;
  }
  if (a.event_type == EventType::kWarning) StrAppend(&s, " [Warning]");
  return s;
}

}  // namespace skb::plan

// SPDX-License-Identifier: Apache-2.0
#include "src/plan/action.h"

#include <algorithm>

#include "src/base/strings.h"

namespace skb::plan {

bool IsStatusLaneCondition(const Action& a) {
  return a.Is<SetNodeCondition>() && a.cause != Cause::kMaintenance;
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

std::string Taint(const TaintSpec& t) {
  return StrCat(" taint=", t.key, t.value.empty() ? "" : "=", t.value, ":", t.effect);
}

// What each kind adds to its name in ToString.
std::string Describe(const DrainSlurmNode& o) { return StrCat(" reason='", o.reason, "'"); }
std::string Describe(const ResumeSlurmNode& o) {
  return StrCat(" expected_reason='", o.expected_reason, "'", o.down_too ? " down-too" : "");
}
std::string Describe(const RebootSlurmNode& o) { return StrCat(" reason='", o.reason, "'"); }
std::string Describe(const CreateSlurmReservation& o) {
  return StrCat(" reservation=", o.name, " minutes=", o.minutes);
}
std::string Describe(const DeleteSlurmReservation& o) { return StrCat(" reservation=", o.name); }
std::string Describe(const SubmitCheckJob& o) {
  return StrCat(" reservation=", o.reservation, " gpus=", o.gpus, " minutes=", o.minutes,
                " command='", o.command, "'");
}
std::string Describe(const RequeueSlurmJobs& o) { return StrCat(" jobs=", Jobs(o.job_ids)); }
std::string Describe(const SetNodeCondition& o) {
  return StrCat(" ", o.condition.type, "=", o.condition.status, " reason=", o.condition.reason,
                " message='", o.condition.message, "'");
}
std::string Describe(const SetSlurmFeatures& o) {
  std::string s = " features=";
  for (size_t i = 0; i < o.features.size(); ++i) StrAppend(&s, i ? "," : "", o.features[i]);
  return s;
}
std::string Describe(const CreateReservationPod& o) {
  return StrCat(" pod=", o.reservation.namespace_name, "/", o.reservation.name,
                " class=", o.reservation.priority_class_name, " gpus=", o.reservation.gpus);
}
std::string Describe(const DeleteReservationPod& o) { return Pod(o.pod); }
std::string Describe(const RestoreFinalizer& o) { return Pod(o.pod); }
std::string Describe(const EvictPod& o) { return Pod(o.pod); }
std::string Describe(const PatchPodAnnotations& o) { return Pod(o.pod) + Patch(o.annotations); }
std::string Describe(const ReleaseReservationPod& o) {
  return StrCat(Pod(o.pod), " check=",
                o.check == ReleaseCheck::kSwapTaint  ? "swap-taint"
                : o.check == ReleaseCheck::kNodeGone ? "node-gone"
                                                     : "no-slurm-jobs");
}
std::string Describe(const SignalSlurmJobs& o) {
  return StrCat(" jobs=", Jobs(o.job_ids), " signal=", o.signal,
                " scope=", SignalScopeName(o.scope));
}
std::string Describe(const PreemptSlurmJobs& o) {
  return StrCat(" jobs=", Jobs(o.job_ids), " mode=", JobPreemptModeName(o.mode),
                o.ended_after_signal ? " ended-after-signal" : "", " for=", o.preemptor);
}
std::string Describe(const SetNodeTaint& o) { return Taint(o.taint); }
std::string Describe(const RemoveNodeTaint& o) { return Taint(o.taint); }
std::string Describe(const PatchNodeAnnotations& o) {
  std::string s = Patch(o.annotations);
  if (!o.labels.empty()) StrAppend(&s, " labels", Patch(o.labels));
  return s;
}

}  // namespace

std::string ToString(const Action& a) {
  std::string s = StrCat(a.Kind(), " ", a.node);
  s += std::visit([](const auto& o) { return Describe(o); }, a.op);
  if (a.event_type == EventType::kWarning) StrAppend(&s, " [Warning]");
  return s;
}

}  // namespace skb::plan

#include "src/plan/action.h"

#include "src/base/strings.h"

namespace skb::plan {

std::string_view ActionKindName(ActionKind k) {
  switch (k) {
    case ActionKind::kDrainSlurmNode: return "DrainSlurmNode";
    case ActionKind::kResumeSlurmNode: return "ResumeSlurmNode";
    case ActionKind::kRequeueSlurmJobs: return "RequeueSlurmJobs";
    case ActionKind::kSetNodeCondition: return "SetNodeCondition";
    case ActionKind::kSetSlurmFeatures: return "SetSlurmFeatures";
  }
  return "Unknown";
}

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
      StrAppend(&s, " jobs=");
      for (size_t i = 0; i < a.job_ids.size(); ++i) StrAppend(&s, i ? "," : "", a.job_ids[i]);
      break;
    case ActionKind::kSetNodeCondition:
      StrAppend(&s, " ", a.condition.type, "=", a.condition.status, " reason=",
                a.condition.reason, " message='", a.condition.message, "'");
      break;
    case ActionKind::kSetSlurmFeatures:
      StrAppend(&s, " features=");
      for (size_t i = 0; i < a.features.size(); ++i) StrAppend(&s, i ? "," : "", a.features[i]);
      break;
  }
  return s;
}

}  // namespace skb::plan

// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_maintenance.h"

#include <regex>

#include "bridge/cli/node_conditions.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/health/health_config.h"
#include "src/health/maintenance.h"
#include "src/health/node_health.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;

// SlurmMaintenance's reason while it is True, else "".
std::string RunningPhase(const json& conditions) {
  const int i = ConditionIndex(conditions, health::kMaintenanceCondition);
  if (i < 0 || JsonStr(conditions[i], "status") != "True") return "";
  const std::string phase = JsonStr(conditions[i], "reason");
  return phase.empty() ? "(no reason)" : phase;
}

// "phase Rebooting since 2026-03-02T10:00:00Z: <message>", for messages.
std::string PhaseWords(const json& c) {
  std::string out = StrCat("phase ", JsonStr(c, "reason"));
  if (!JsonStr(c, "lastTransitionTime").empty())
    StrAppend(&out, " since ", JsonStr(c, "lastTransitionTime"));
  if (!JsonStr(c, "message").empty()) StrAppend(&out, ": ", JsonStr(c, "message"));
  return out;
}

}  // namespace

bool IsRunningMaintenancePhase(std::string_view phase) {
  return phase == health::kPhaseDraining || phase == health::kPhaseRebooting ||
         phase == health::kPhaseChecking;
}

bool IsFailedMaintenancePhase(std::string_view phase) {
  return phase == health::kPhaseDrainTimedOut || phase == health::kPhaseRebootTimedOut ||
         phase == health::kPhaseCheckFailed;
}

std::string RequestConditionProblem(std::string_view type) {
  // A qualified name, as Kubernetes' label keys: an optional DNS-subdomain prefix and '/',
  // then up to 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric.
  static const std::regex kQualified(
      "([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
      "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?");
  const std::string t(type);
  if (t.empty()) return "names no condition type";
  if (t.size() > 316 || !std::regex_match(t, kQualified)) {
    return "is not a condition type (letters, digits, '-', '_' and '.', with an optional "
           "prefix/ as example.com/RebootRequested)";
  }
  if (health::IsBridgeCondition(t)) return "is a condition the bridge writes itself";
  if (t == health::kDrainRequestedCondition) return "is bridgectl drain's condition";
  return "";
}

StatusOr<MaintenanceChange> RequestReboot(k8s::KubeClient& kube, const std::string& node,
                                          const std::string& condition, const std::string& reason,
                                          const std::string& who, Clock::TimePoint now) {
  if (reason.empty()) {
    return InvalidArgumentError("a maintenance reboot needs a reason (--reason TEXT)");
  }
  if (const std::string problem = RequestConditionProblem(condition); !problem.empty()) {
    return InvalidArgumentError(StrCat("--condition '", condition, "' ", problem));
  }
  auto got = kube.Get(k8s::Resource::Nodes(), "", node);
  if (!got.ok()) return NodeError(got.status(), node);
  const json conditions = NodeConditions(*got);
  if (const int m = ConditionIndex(conditions, health::kMaintenanceCondition);
      m >= 0 && JsonStr(conditions[m], "status") == "True") {
    const json& c = conditions[m];
    const std::string flag =
        condition == kDefaultRebootCondition ? std::string() : StrCat(" --condition ", condition);
    if (IsFailedMaintenancePhase(JsonStr(c, "reason"))) {
      return FailedPreconditionError(StrCat("node ", node, ": its maintenance cycle failed (",
                                            health::kMaintenanceCondition, " ", PhaseWords(c),
                                            "): `bridgectl maintenance retry ", node,
                                            "` starts it again, `bridgectl maintenance cancel ",
                                            node, flag, "` gives the node back as it is"));
    }
    return FailedPreconditionError(StrCat("node ", node, ": a maintenance cycle is under way (",
                                          health::kMaintenanceCondition, " ", PhaseWords(c),
                                          "): the bridge gives the node back when it is done"));
  }
  const std::string stamp = k8s::FormatTime(now);
  std::string transition = stamp;
  const std::string message =
      health::ConditionMessage(StrCat(reason, " (bridgectl maintenance by ", who, ")"));
  if (const int i = ConditionIndex(conditions, condition);
      i >= 0 && JsonStr(conditions[i], "status") == "True") {
    const json& c = conditions[i];
    if (JsonStr(c, "reason") != kBridgectlMaintenanceReason) {
      return FailedPreconditionError(StrCat("node ", node, " already has ", condition,
                                            "=True from '", JsonStr(c, "reason"), "' (",
                                            JsonStr(c, "message"), "): left alone"));
    }
    if (JsonStr(c, "message") == message) return MaintenanceChange{false, ""};
    if (!JsonStr(c, "lastTransitionTime").empty()) transition = JsonStr(c, "lastTransitionTime");
  }
  RETURN_IF_ERROR(SetCondition(kube, node,
                               {{"type", condition},
                                {"status", "True"},
                                {"reason", kBridgectlMaintenanceReason},
                                {"message", message},
                                {"lastHeartbeatTime", stamp},
                                {"lastTransitionTime", transition}}));
  return MaintenanceChange{true, ""};
}

StatusOr<MaintenanceChange> RetryMaintenance(k8s::KubeClient& kube, const std::string& node,
                                             const std::string& who, Clock::TimePoint now) {
  // The daemon writes SlurmMaintenance at each phase: the patch tests that the entry it
  // replaces is still the failed phase read.
  std::string phase;
  ASSIGN_OR_RETURN(
      const bool patched,
      EditConditions(kube, node, [&](const json& conditions) -> StatusOr<std::optional<json>> {
        const int index = ConditionIndex(conditions, health::kMaintenanceCondition);
        if (index < 0) {
          return FailedPreconditionError(StrCat("node ", node, " has had no maintenance cycle (no ",
                                                health::kMaintenanceCondition,
                                                " condition): nothing to retry"));
        }
        const json& c = conditions[index];
        phase = JsonStr(c, "reason");
        if (JsonStr(c, "status") != "True") {
          return FailedPreconditionError(StrCat(
              "node ", node, " has no maintenance cycle to retry (", health::kMaintenanceCondition,
              "=", JsonStr(c, "status"), ", the last ended ", PhaseWords(c), ")"));
        }
        if (!IsFailedMaintenancePhase(phase)) {
          return FailedPreconditionError(
              StrCat("node ", node, ": its maintenance cycle is still running (",
                     health::kMaintenanceCondition, " ", PhaseWords(c), "): only a failed one (",
                     health::kPhaseDrainTimedOut, ", ", health::kPhaseRebootTimedOut, ", ",
                     health::kPhaseCheckFailed, ") is retried"));
        }
        const std::string stamp = k8s::FormatTime(now);
        json entry = {
            {"type", health::kMaintenanceCondition},
            {"status", "True"},
            {"reason", health::kPhaseDraining},
            {"message", health::ConditionMessage(StrCat("retry by ", who, " after ", phase, ": ",
                                                        JsonStr(c, "message")))},
            {"lastHeartbeatTime", stamp},
            {"lastTransitionTime", stamp}};
        return ReplaceIfUnchanged(index, c, std::move(entry));
      }));
  return MaintenanceChange{patched, phase};
}

StatusOr<MaintenanceChange> CancelReboot(k8s::KubeClient& kube, const std::string& node,
                                         const std::string& condition, const std::string& who,
                                         Clock::TimePoint now) {
  if (const std::string problem = RequestConditionProblem(condition); !problem.empty()) {
    return InvalidArgumentError(StrCat("--condition '", condition, "' ", problem));
  }
  std::string phase;
  ASSIGN_OR_RETURN(
      const bool patched,
      EditConditions(kube, node, [&](const json& conditions) -> StatusOr<std::optional<json>> {
        phase = RunningPhase(conditions);
        const int index = ConditionIndex(conditions, condition);
        if (index < 0 || JsonStr(conditions[index], "status") != "True") return std::nullopt;
        const json& c = conditions[index];
        if (JsonStr(c, "reason") != kBridgectlMaintenanceReason) {
          return FailedPreconditionError(StrCat("node ", node, " has ", condition, "=True from '",
                                                JsonStr(c, "reason"), "' (", JsonStr(c, "message"),
                                                "), not from bridgectl: left alone"));
        }
        const std::string stamp = k8s::FormatTime(now);
        json entry = {{"type", condition},
                      {"status", "False"},
                      {"reason", kBridgectlMaintenanceCancelledReason},
                      {"message", health::ConditionMessage(
                                      StrCat("cancelled by ", who, ": ", JsonStr(c, "message")))},
                      {"lastHeartbeatTime", stamp},
                      {"lastTransitionTime", stamp}};
        return ReplaceIfUnchanged(index, c, std::move(entry));
      }));
  return MaintenanceChange{patched, phase};
}

StatusOr<MaintenanceChange> RunMaintenance(k8s::KubeClient& kube, const Command& c,
                                           const std::string& who, Clock::TimePoint now) {
  switch (c.verb) {
    case Verb::kMaintenanceReboot:
      return RequestReboot(kube, c.name, c.condition, c.reason, who, now);
    case Verb::kMaintenanceRetry:
      return RetryMaintenance(kube, c.name, who, now);
    case Verb::kMaintenanceCancel:
      return CancelReboot(kube, c.name, c.condition, who, now);
    default:
      return InternalError("not a maintenance command");
  }
}

std::string MaintenanceCommandLine(const Command& c) {
  const char* word = c.verb == Verb::kMaintenanceReboot  ? "reboot"
                     : c.verb == Verb::kMaintenanceRetry ? "retry"
                                                         : "cancel";
  return StrCat("maintenance ", word, " ", c.name);
}

std::string MaintenanceOutcome(const Command& c, const MaintenanceChange& change) {
  const std::string& node = c.name;
  switch (c.verb) {
    case Verb::kMaintenanceReboot:
      return StrCat(node, ": ", change.changed ? "set " : "already has ", c.condition,
                    "=True (reason ", kBridgectlMaintenanceReason,
                    "): the bridge drains both schedulers, has the node rebooted, checks it and "
                    "gives it back; the phase is in ",
                    health::kMaintenanceCondition, " (`bridgectl describe node ", node, "`)\n");
    case Verb::kMaintenanceRetry:
      return StrCat(node, ": ", health::kMaintenanceCondition, " set from ", change.phase, " to ",
                    health::kPhaseDraining,
                    ": the bridge starts the cycle again while the request stands (`bridgectl "
                    "describe node ",
                    node, "`)\n");
    case Verb::kMaintenanceCancel: {
      if (!change.changed) {
        return StrCat(node, ": no maintenance request by bridgectl (", c.condition,
                      ") to cancel\n");
      }
      std::string then;
      if (change.phase.empty()) {
        then = "no cycle had begun";
      } else if (change.phase == health::kPhaseDraining) {
        then = "the bridge stops the cycle (Draining) and gives the node back";
      } else if (IsFailedMaintenancePhase(change.phase)) {
        then = StrCat("the bridge gives the node back as it is, after ", change.phase);
      } else if (IsRunningMaintenancePhase(change.phase)) {
        then = StrCat("the cycle is past Draining (", change.phase,
                      "): it runs to its end, the reboot is already asked for");
      } else {
        then = StrCat("the bridge reads it with the cycle's phase ", change.phase);
      }
      return StrCat(node, ": set ", c.condition, "=False (reason ",
                    kBridgectlMaintenanceCancelledReason, "): ", then, "\n");
    }
    default:
      return "";
  }
}

}  // namespace skb::bridge::cli

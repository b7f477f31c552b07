// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_drain.h"

#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/health/health_config.h"
#include "src/health/node_health.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;

// The node's conditions array, or an empty one.
json Conditions(const json& node) {
  auto st = node.find("status");
  if (st == node.end() || !st->is_object()) return json::array();
  auto c = st->find("conditions");
  return c != st->end() && c->is_array() ? *c : json::array();
}

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

Status NodeError(const Status& s, const std::string& node) {
  if (s.code() == StatusCode::kNotFound) {
    return NotFoundError(StrCat("Kubernetes has no node '", node, "' (give its Kubernetes name)"));
  }
  return s;
}

}  // namespace

StatusOr<bool> RequestDrain(k8s::KubeClient& kube, const std::string& node,
                            const std::string& reason, const std::string& who,
                            Clock::TimePoint now) {
  if (reason.empty()) return InvalidArgumentError("a drain needs a reason (--reason TEXT)");
  auto got = kube.Get(k8s::Resource::Nodes(), "", node);
  if (!got.ok()) return NodeError(got.status(), node);
  const std::string stamp = k8s::FormatTime(now);
  std::string transition = stamp;
  const std::string message =
      health::ConditionMessage(StrCat(reason, " (bridgectl drain by ", who, ")"));
  for (const json& c : Conditions(*got)) {
    if (!c.is_object() || Str(c, "type") != health::kDrainRequestedCondition) continue;
    if (Str(c, "status") != "True") continue;
    if (Str(c, "reason") != health::kBridgectlDrainReason) {
      return FailedPreconditionError(
          StrCat("node ", node, " already has ", health::kDrainRequestedCondition, "=True from '",
                 Str(c, "reason"), "' (", Str(c, "message"), "): left alone"));
    }
    if (Str(c, "message") == message) return false;
    transition = Str(c, "lastTransitionTime").empty() ? stamp : Str(c, "lastTransitionTime");
  }
  // A strategic merge patch merges conditions by type, as the daemon's own condition
  // writes do: the kubelet's and other controllers' conditions stay as they are.
  json patch = {{"status",
                 {{"conditions", json::array({{{"type", health::kDrainRequestedCondition},
                                               {"status", "True"},
                                               {"reason", health::kBridgectlDrainReason},
                                               {"message", message},
                                               {"lastHeartbeatTime", stamp},
                                               {"lastTransitionTime", transition}}})}}}};
  auto r = kube.Patch(k8s::Resource::Nodes(), "", node, k8s::PatchType::kStrategicMerge, patch, {},
                      "status");
  if (!r.ok()) return NodeError(r.status(), node);
  return true;
}

StatusOr<bool> ClearDrain(k8s::KubeClient& kube, const std::string& node) {
  // The index of the condition can move (the kubelet rewrites its own): the patch tests
  // that the entry it removes is still ours, and is retried from a fresh read if not.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto got = kube.Get(k8s::Resource::Nodes(), "", node);
    if (!got.ok()) return NodeError(got.status(), node);
    const json conditions = Conditions(*got);
    int index = -1;
    for (size_t i = 0; i < conditions.size(); ++i) {
      const json& c = conditions[i];
      if (!c.is_object() || Str(c, "type") != health::kDrainRequestedCondition) continue;
      if (Str(c, "reason") != health::kBridgectlDrainReason) {
        if (Str(c, "status") != "True") return false;
        return FailedPreconditionError(
            StrCat("node ", node, " has ", health::kDrainRequestedCondition, "=", Str(c, "status"),
                   " from '", Str(c, "reason"), "', not from bridgectl: left alone"));
      }
      index = static_cast<int>(i);
    }
    if (index < 0) return false;
    const std::string path = StrCat("/status/conditions/", index);
    json patch = json::array(
        {{{"op", "test"}, {"path", path + "/type"}, {"value", health::kDrainRequestedCondition}},
         {{"op", "test"}, {"path", path + "/reason"}, {"value", health::kBridgectlDrainReason}},
         {{"op", "remove"}, {"path", path}}});
    auto r = kube.Patch(k8s::Resource::Nodes(), "", node, k8s::PatchType::kJsonPatch, patch, {},
                        "status");
    if (r.ok()) return true;
    if (r.status().code() == StatusCode::kNotFound) return NodeError(r.status(), node);
    // A failed test is 422 (InvalidArgument) or a conflict (Aborted): read again.
    if (r.status().code() != StatusCode::kInvalidArgument &&
        r.status().code() != StatusCode::kAborted) {
      return r.status();
    }
  }
  return AbortedError(StrCat("node ", node, ": its conditions kept changing; try again"));
}

}  // namespace skb::bridge::cli

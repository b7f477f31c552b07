// SPDX-License-Identifier: Apache-2.0
// What bridgectl's node commands (drain, maintenance) share to read and edit a Kubernetes
// node's conditions as JSON, with the admin's own client.
//
//   ASSIGN_OR_RETURN(bool patched, EditConditions(kube, "node3", [&](const json& conditions)
//       -> StatusOr<std::optional<json>> {
//     const int i = ConditionIndex(conditions, "DrainRequested");
//     if (i < 0) return std::nullopt;                  // nothing to do
//     return RemoveIfUnchanged(i, conditions[i]);       // a JSON patch that tests first
//   }));
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "k8s/kube_client.h"
#include "src/base/status.h"

namespace skb::bridge::cli {

// The node's status.conditions array, or an empty one.
nlohmann::json NodeConditions(const nlohmann::json& node);
// obj[key] when it is a string, else "".
std::string JsonStr(const nlohmann::json& obj, const char* key);
// The index of the condition of type `type` in `conditions`, or -1.
int ConditionIndex(const nlohmann::json& conditions, std::string_view type);
// A client error about `node`: NotFound says the name is not a Kubernetes node's.
Status NodeError(const Status& s, const std::string& node);

// JSON patches on the condition at `index` that first test that it still has the type,
// status and reason of `read` (the kubelet and the daemon rewrite the array: an index read
// may have moved): replace it by `entry`, or remove it.
nlohmann::json ReplaceIfUnchanged(int index, const nlohmann::json& read, nlohmann::json entry);
nlohmann::json RemoveIfUnchanged(int index, const nlohmann::json& read);

// Sets the condition `entry` (its type, status, reason, message, lastHeartbeatTime,
// lastTransitionTime) on `node` by a strategic merge patch of the status subresource, which
// merges conditions by type as the daemon's own condition writes do: the kubelet's and other
// controllers' conditions stay as they are.
Status SetCondition(k8s::KubeClient& kube, const std::string& node, nlohmann::json entry);

// One tested edit of `node`'s conditions: reads the node, asks `decide` for the JSON patch
// to apply to its conditions (nullopt: nothing to do; an error is returned as it is), and
// applies it to the status subresource. A patch whose test fails (422, or a conflict) is
// decided again from a fresh read, up to five times, then Aborted ("its conditions kept
// changing"). True when a patch was applied, false when `decide` found nothing to do.
using ConditionDecision =
    std::function<StatusOr<std::optional<nlohmann::json>>(const nlohmann::json& conditions)>;
StatusOr<bool> EditConditions(k8s::KubeClient& kube, const std::string& node,
                              const ConditionDecision& decide);

}  // namespace skb::bridge::cli

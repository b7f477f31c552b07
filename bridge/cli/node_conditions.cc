// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_conditions.h"

#include <utility>

#include "src/base/strings.h"

namespace skb::bridge::cli {

using nlohmann::json;

json NodeConditions(const json& node) {
  auto st = node.find("status");
  if (st == node.end() || !st->is_object()) return json::array();
  auto c = st->find("conditions");
  return c != st->end() && c->is_array() ? *c : json::array();
}

std::string JsonStr(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

int ConditionIndex(const json& conditions, std::string_view type) {
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (conditions[i].is_object() && JsonStr(conditions[i], "type") == type) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Status NodeError(const Status& s, const std::string& node) {
  if (s.code() == StatusCode::kNotFound) {
    return NotFoundError(StrCat("Kubernetes has no node '", node, "' (give its Kubernetes name)"));
  }
  return s;
}

namespace {

json TestsOf(const std::string& path, const json& read) {
  return json::array(
      {{{"op", "test"}, {"path", path + "/type"}, {"value", JsonStr(read, "type")}},
       {{"op", "test"}, {"path", path + "/status"}, {"value", JsonStr(read, "status")}},
       {{"op", "test"}, {"path", path + "/reason"}, {"value", JsonStr(read, "reason")}}});
}

}  // namespace

json ReplaceIfUnchanged(int index, const json& read, json entry) {
  const std::string path = StrCat("/status/conditions/", index);
  json patch = TestsOf(path, read);
  patch.push_back({{"op", "replace"}, {"path", path}, {"value", std::move(entry)}});
  return patch;
}

json RemoveIfUnchanged(int index, const json& read) {
  const std::string path = StrCat("/status/conditions/", index);
  json patch = TestsOf(path, read);
  patch.push_back({{"op", "remove"}, {"path", path}});
  return patch;
}

Status SetCondition(k8s::KubeClient& kube, const std::string& node, json entry) {
  json patch = {{"status", {{"conditions", json::array({std::move(entry)})}}}};
  auto r = kube.Patch(k8s::Resource::Nodes(), "", node, k8s::PatchType::kStrategicMerge, patch, {},
                      "status");
  if (!r.ok()) return NodeError(r.status(), node);
  return OkStatus();
}

StatusOr<bool> EditConditions(k8s::KubeClient& kube, const std::string& node,
                              const ConditionDecision& decide) {
  constexpr int kAttempts = 5;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto got = kube.Get(k8s::Resource::Nodes(), "", node);
    if (!got.ok()) return NodeError(got.status(), node);
    ASSIGN_OR_RETURN(std::optional<json> patch, decide(NodeConditions(*got)));
    if (!patch) return false;
    auto r = kube.Patch(k8s::Resource::Nodes(), "", node, k8s::PatchType::kJsonPatch, *patch, {},
                        "status");
    if (r.ok()) return true;
    if (r.status().code() == StatusCode::kNotFound) return NodeError(r.status(), node);
    // A failed test is 422 (InvalidArgument) or a conflict (Aborted): decide again.
    if (r.status().code() != StatusCode::kInvalidArgument &&
        r.status().code() != StatusCode::kAborted) {
      return r.status();
    }
  }
  return AbortedError(StrCat("node ", node, ": its conditions kept changing; try again"));
}

}  // namespace skb::bridge::cli

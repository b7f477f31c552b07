// SPDX-License-Identifier: Apache-2.0
// The ActionExecutor's Kubernetes node actions: conditions (status subresource), taints and
// metadata. Each is a patch that leaves other controllers' fields alone.
#include <span>
#include <variant>

#include "bridge/reconcile/action_executor.h"
#include "k8s/field_reader.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::bridge {

using plan::Action;

StatusOr<std::string> ActionExecutor::ConditionTransition(const Action& a,
                                                          const plan::ConditionSpec& want,
                                                          const std::string& now) {
  using Transition = plan::ConditionSpec::Transition;
  // lastTransitionTime changes only when the status flips. The planner says which from its
  // cache; only when it could not does the executor read the current condition.
  switch (want.transition) {
    case Transition::kNow:
      return now;
    case Transition::kKeep:
      return k8s::FormatTime(want.since);
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
      if (k8s::StringAt(c, "type") != want.type) continue;
      if (k8s::StringAt(c, "status") == want.status && c.contains("lastTransitionTime") &&
          c["lastTransitionTime"].is_string()) {
        transition = c["lastTransitionTime"].get<std::string>();
      }
    }
  }
  return transition;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::SetNodeCondition&) {
  return WriteConditions(std::span<const Action>(&a, 1));
}

StatusOr<Effect> ActionExecutor::WriteConditions(std::span<const Action> actions) {
  const std::string now = k8s::FormatTime(clock_->Now());
  // A strategic merge patch merges conditions by type: other controllers' conditions
  // stay exactly as they are, and one patch carries all of a node's.
  nlohmann::json conditions = nlohmann::json::array();
  for (const Action& a : actions) {
    const plan::ConditionSpec& c = std::get<plan::SetNodeCondition>(a.op).condition;
    ASSIGN_OR_RETURN(std::string transition, ConditionTransition(a, c, now));
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastHeartbeatTime", now},
                          {"lastTransitionTime", std::move(transition)}});
  }
  nlohmann::json patch = {{"status", {{"conditions", std::move(conditions)}}}};
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", actions.front().K8sNode(),
                        k8s::PatchType::kStrategicMerge, patch, {}, "status");
  if (!r.ok()) return r.status();
  // A condition's heartbeat is written each time: always a change. A quiet one is a
  // healthy state's first publication: no news.
  for (const Action& a : actions) {
    if (!a.quiet) Record(a);
  }
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::SetNodeTaint& op) {
  return ChangeTaint(a, op.taint, /*add=*/true);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::RemoveNodeTaint& op) {
  return ChangeTaint(a, op.taint, /*add=*/false);
}

StatusOr<Effect> ActionExecutor::ChangeTaint(const Action& a, const plan::TaintSpec& taint,
                                             bool add) {
  const std::string node_name = a.K8sNode();
  ASSIGN_OR_RETURN(nlohmann::json node, kube_->Get(k8s::Resource::Nodes(), "", node_name));
  nlohmann::json taints = nlohmann::json::array();
  bool present = false;
  if (node.contains("spec") && node["spec"].contains("taints") &&
      node["spec"]["taints"].is_array()) {
    for (const auto& t : node["spec"]["taints"]) {
      bool same =
          k8s::StringAt(t, "key") == taint.key && k8s::StringAt(t, "effect") == taint.effect;
      if (same) {
        present = true;
        if (!add) continue;  // removing it
      }
      taints.push_back(t);
    }
  }
  if (add == present) return Effect::kUnchanged;  // already so
  if (add) {
    nlohmann::json t = {{"key", taint.key}, {"effect", taint.effect}};
    if (!taint.value.empty()) t["value"] = taint.value;
    taints.push_back(std::move(t));
  }
  nlohmann::json ops = nlohmann::json::array(
      {{{"op", "test"},
        {"path", "/metadata/resourceVersion"},
        {"value", k8s::MetadataString(node, "resourceVersion")}},
       {{"op", "add"}, {"path", "/spec/taints"}, {"value", std::move(taints)}}});
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", node_name, k8s::PatchType::kJsonPatch, ops);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kInvalidArgument) {
      return AbortedError(StrCat("node ", node_name, " changed meanwhile"));
    }
    return r.status();
  }
  Record(a);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::PatchNodeAnnotations& op) {
  const std::string node_name = a.K8sNode();
  const auto merge = [](const plan::AnnotationPatch& p) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [k, v] : p.set) m[k] = v;
    for (const auto& k : p.remove) m[k] = nullptr;
    return m;
  };
  // A plan made from a cache that has not seen this patch yet repeats it: a node that
  // already reads as asked is left alone, with no second Event and kUnchanged.
  if (auto current = kube_->Get(k8s::Resource::Nodes(), "", node_name); current.ok()) {
    const nlohmann::json& m = (*current)["metadata"];
    const auto holds = [&](std::string_view field, const plan::AnnotationPatch& p) {
      const nlohmann::json empty = nlohmann::json::object();
      const nlohmann::json& have = m.contains(field) ? m[std::string(field)] : empty;
      for (const auto& [k, v] : p.set) {
        if (!have.contains(k) || have[k] != v) return false;
      }
      for (const auto& k : p.remove) {
        if (have.contains(k)) return false;
      }
      return true;
    };
    if (holds("annotations", op.annotations) && holds("labels", op.labels)) {
      return Effect::kUnchanged;
    }
  }
  nlohmann::json meta = nlohmann::json::object();
  if (!op.annotations.empty()) meta["annotations"] = merge(op.annotations);
  if (!op.labels.empty()) meta["labels"] = merge(op.labels);
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", node_name, k8s::PatchType::kJsonMerge,
                        {{"metadata", std::move(meta)}});
  if (!r.ok()) return r.status();
  if (!a.event_reason.empty()) Record(a);
  return Effect::kChanged;
}

}  // namespace skb::bridge

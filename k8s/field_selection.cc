#include "k8s/field_selection.h"

#include <initializer_list>
#include <string>

namespace skb::k8s {
namespace {

using nlohmann::json;

// Moves the listed keys of `from` (when present) into a new object.
json Keep(json& from, std::initializer_list<const char*> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* k : keys) {
    auto it = from.find(k);
    if (it != from.end()) out[k] = std::move(*it);
  }
  return out;
}

json Meta(json& obj, bool owners) {
  auto md = obj.find("metadata");
  if (md == obj.end()) return json::object();
  json out = Keep(*md, {"name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                        "deletionTimestamp", "labels", "annotations", "finalizers"});
  // kubectl apply's copy of the whole object: often the largest field, never needed.
  if (out.contains("annotations") && out["annotations"].is_object()) {
    out["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  }
  if (owners && md->is_object() && md->contains("ownerReferences")) {
    out["ownerReferences"] = std::move((*md)["ownerReferences"]);
  }
  return out;
}

// cpu, memory, pods and extended resources (nvidia.com/gpu, ...); not storage or hugepages.
json Resources(json& list) {
  json out = json::object();
  if (!list.is_object()) return out;
  for (auto it = list.begin(); it != list.end(); ++it) {
    const std::string& k = it.key();
    if (k == "cpu" || k == "memory" || k == "pods" || k.find('/') != std::string::npos)
      out[k] = std::move(*it);
  }
  return out;
}

json Conditions(json& status) {
  json out = json::array();
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array())
    return out;
  for (json& c : status["conditions"]) {
    out.push_back(Keep(c, {"type", "status", "reason", "message", "lastTransitionTime"}));
  }
  return out;
}

json Containers(json& spec, const char* key) {
  json out = json::array();
  if (!spec.is_object() || !spec.contains(key) || !spec[key].is_array()) return out;
  for (json& c : spec[key]) out.push_back(Keep(c, {"name", "resources"}));
  return out;
}

}  // namespace

json SelectNodeFields(json&& node) {
  if (!node.is_object()) return std::move(node);
  json out = {{"metadata", Meta(node, false)}};
  if (node.contains("spec")) out["spec"] = Keep(node["spec"], {"unschedulable", "taints"});
  if (node.contains("status")) {
    json& status = node["status"];
    json s = json::object();
    if (status.is_object() && status.contains("capacity"))
      s["capacity"] = Resources(status["capacity"]);
    if (status.is_object() && status.contains("allocatable"))
      s["allocatable"] = Resources(status["allocatable"]);
    json conds = Conditions(status);
    if (!conds.empty()) s["conditions"] = std::move(conds);
    out["status"] = std::move(s);
  }
  return out;
}

json SelectPodFields(json&& pod) {
  if (!pod.is_object()) return std::move(pod);
  json out = {{"metadata", Meta(pod, true)}};
  if (pod.contains("spec")) {
    json& spec = pod["spec"];
    json s = Keep(spec, {"nodeName", "schedulerName", "priority", "priorityClassName",
                         "terminationGracePeriodSeconds"});
    s["containers"] = Containers(spec, "containers");
    json init = Containers(spec, "initContainers");
    if (!init.empty()) s["initContainers"] = std::move(init);
    out["spec"] = std::move(s);
  }
  if (pod.contains("status")) {
    json& status = pod["status"];
    json s = Keep(status, {"phase", "nominatedNodeName"});
    json conds = Conditions(status);
    if (!conds.empty()) s["conditions"] = std::move(conds);
    out["status"] = std::move(s);
  }
  return out;
}

}  // namespace skb::k8s

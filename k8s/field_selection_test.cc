// SPDX-License-Identifier: Apache-2.0
#include "k8s/field_selection.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/testdata.h"

namespace skb::k8s {
namespace {

// The first, straightforward implementation (rebuilds every kept value into new objects):
// the in-place one must produce exactly the same objects.
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

// The list at `key` of `spec`, each element reduced to `fields` ([] when there is none).
json List(json& spec, const char* key, std::initializer_list<const char*> fields) {
  json out = json::array();
  if (!spec.is_object() || !spec.contains(key) || !spec[key].is_array()) return out;
  for (json& c : spec[key]) out.push_back(Keep(c, fields));
  return out;
}

json ReferenceSelectNodeFields(json&& node) {
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

json ReferenceSelectPodFields(json&& pod) {
  if (!pod.is_object()) return std::move(pod);
  json out = {{"metadata", Meta(pod, true)}};
  if (pod.contains("spec")) {
    json& spec = pod["spec"];
    json s = Keep(spec, {"nodeName", "schedulerName", "priority", "priorityClassName",
                         "terminationGracePeriodSeconds", "nodeSelector"});
    if (spec.is_object() && spec.contains("affinity"))
      s["affinity"] = Keep(spec["affinity"], {"nodeAffinity"});
    s["containers"] = List(spec, "containers", {"name", "resources", "restartPolicy"});
    json init = List(spec, "initContainers", {"name", "resources", "restartPolicy"});
    if (!init.empty()) s["initContainers"] = std::move(init);
    json tolerations = List(spec, "tolerations", {"key", "operator", "value", "effect"});
    if (!tolerations.empty()) s["tolerations"] = std::move(tolerations);
    json claims =
        List(spec, "resourceClaims", {"name", "resourceClaimName", "resourceClaimTemplateName"});
    if (!claims.empty()) s["resourceClaims"] = std::move(claims);
    out["spec"] = std::move(s);
  }
  if (pod.contains("status")) {
    json& status = pod["status"];
    json s = Keep(status, {"phase", "nominatedNodeName", "startTime"});
    json conds = Conditions(status);
    if (!conds.empty()) s["conditions"] = std::move(conds);
    json claims = List(status, "resourceClaimStatuses", {"name", "resourceClaimName"});
    if (!claims.empty()) s["resourceClaimStatuses"] = std::move(claims);
    out["status"] = std::move(s);
  }
  return out;
}

// The trimmed object must read exactly like the full one through the views: the selection
// keeps everything the bridge uses.
TEST(FieldSelection, NodeViewUnchangedAndObjectSmaller) {
  nlohmann::json full = testdata::RealisticNode();
  nlohmann::json trimmed = SelectNodeFields(nlohmann::json(full));
  EXPECT_LT(trimmed.dump().size() * 2, full.dump().size());
  EXPECT_FALSE(trimmed["metadata"].contains("managedFields"));
  EXPECT_FALSE(trimmed["status"].contains("images"));
  auto a = ParseNode(full);
  auto b = ParseNode(trimmed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->meta.labels, b->meta.labels);
  EXPECT_EQ(a->meta.resource_version, b->meta.resource_version);
  EXPECT_EQ(a->AllocatableGpus(), b->AllocatableGpus());
  EXPECT_EQ(a->allocatable.at("cpu"), b->allocatable.at("cpu"));
  EXPECT_EQ(a->allocatable.at("memory"), b->allocatable.at("memory"));
  EXPECT_FALSE(b->allocatable.count("hugepages-2Mi"));
  EXPECT_EQ(a->conditions.size(), b->conditions.size());
  EXPECT_EQ(a->taints.size(), b->taints.size());
  EXPECT_EQ(a->Ready(), b->Ready());
}

TEST(FieldSelection, PodViewUnchangedAndObjectSmaller) {
  nlohmann::json full = testdata::RealisticPod();
  nlohmann::json trimmed = SelectPodFields(nlohmann::json(full));
  EXPECT_LT(trimmed.dump().size() * 2, full.dump().size());
  auto a = ParsePod(full);
  auto b = ParsePod(trimmed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->node_name, b->node_name);
  EXPECT_EQ(a->priority, b->priority);
  EXPECT_EQ(a->GpuRequest(), b->GpuRequest());
  EXPECT_EQ(a->phase, b->phase);
  EXPECT_EQ(a->conditions.size(), b->conditions.size());
  EXPECT_TRUE(trimmed["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(trimmed["spec"]["containers"][0].contains("env"));

  // What GPU sharing reads of a pending pod (src/devices/k8s_devices.h) is kept: the
  // model it selects, which init containers are sidecars, the taints it tolerates.
  full["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100"}};
  full["spec"]["affinity"] = {{"nodeAffinity", {{"x", 1}}}, {"podAffinity", {{"y", 2}}}};
  full["spec"]["initContainers"] = {{{"name", "s"}, {"restartPolicy", "Always"}, {"image", "i"}}};
  full["spec"]["tolerations"] = nlohmann::json::parse(
      R"([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 300},
          {"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}])");
  trimmed = SelectPodFields(nlohmann::json(full));
  EXPECT_EQ(trimmed["spec"]["nodeSelector"], full["spec"]["nodeSelector"]);
  EXPECT_EQ(trimmed["spec"]["affinity"], nlohmann::json({{"nodeAffinity", {{"x", 1}}}}));
  EXPECT_EQ(trimmed["spec"]["initContainers"][0],
            nlohmann::json({{"name", "s"}, {"restartPolicy", "Always"}}));
  EXPECT_EQ(trimmed["spec"]["tolerations"][0],
            nlohmann::json({{"key", "node.kubernetes.io/not-ready"},
                            {"operator", "Exists"},
                            {"effect", "NoExecute"}}));
  EXPECT_EQ(trimmed["spec"]["tolerations"][1], full["spec"]["tolerations"][1]);

  // And the ResourceClaims it asks its GPUs through, with the claims generated for them.
  full["spec"]["resourceClaims"] = nlohmann::json::parse(
      R"([{"name": "gpu", "resourceClaimTemplateName": "two-gpus", "x": 1},
          {"name": "shared", "resourceClaimName": "team-gpus"}])");
  full["status"]["resourceClaimStatuses"] =
      nlohmann::json::parse(R"([{"name": "gpu", "resourceClaimName": "p-gpu-x7k2p", "y": 2}])");
  trimmed = SelectPodFields(nlohmann::json(full));
  EXPECT_EQ(trimmed["spec"]["resourceClaims"],
            nlohmann::json::parse(R"([{"name": "gpu", "resourceClaimTemplateName": "two-gpus"},
                                      {"name": "shared", "resourceClaimName": "team-gpus"}])"));
  EXPECT_EQ(trimmed["status"]["resourceClaimStatuses"],
            nlohmann::json::parse(R"([{"name": "gpu", "resourceClaimName": "p-gpu-x7k2p"}])"));
}

// What a pending claim asks for is kept (devices::GpuDemandOf reads it); its configuration
// and constraints are not.
TEST(FieldSelection, ResourceClaimKeepsItsRequests) {
  nlohmann::json claim = nlohmann::json::parse(R"({
    "metadata": {"name": "c", "namespace": "ns", "managedFields": [{}]},
    "spec": {"devices": {
      "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
                   {"name": "alt", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}],
      "constraints": [{"matchAttribute": "a"}], "config": [{"opaque": {}}]}},
    "status": {"allocation": {"devices": {"results": [], "config": [{}]}}, "devices": [{}]}})");
  nlohmann::json trimmed = SelectResourceClaimFields(nlohmann::json(claim));
  EXPECT_EQ(trimmed["spec"],
            nlohmann::json({{"devices", {{"requests", claim["spec"]["devices"]["requests"]}}}}));
  EXPECT_FALSE(trimmed["metadata"].contains("managedFields"));
  EXPECT_EQ(trimmed["status"],
            nlohmann::json::parse(R"({"allocation": {"devices": {"results": []}}})"));
}

TEST(FieldSelection, NonObjectsPassThrough) {
  EXPECT_EQ(SelectPodFields(nlohmann::json(5)), nlohmann::json(5));
  EXPECT_EQ(SelectNodeFields({{"metadata", "x"}})["metadata"], nlohmann::json::object());
}

TEST(FieldSelection, InPlaceTrimEqualsTheReferenceOnOddShapes) {
  std::vector<nlohmann::json> inputs = {testdata::RealisticPod(), testdata::RealisticNode()};
  for (
      const char* text : {
          R"({})",
          R"({"metadata":"x","spec":5,"status":[1]})",
          R"({"metadata":{"annotations":"a","labels":{"a":"b"}},"spec":{"containers":{}}})",
          R"({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","k":"v"}}})",
          R"({"spec":{"containers":[1,{"name":"a","env":[]}],"initContainers":[]}})",
          R"({"spec":{"initContainers":[{"name":"i","resources":{},"image":"x"}],"taints":[]}})",
          R"({"status":{"conditions":[],"phase":"Running","hostIP":"1"}})",
          R"({"spec":{"resourceClaims":[{"name":"a","x":1},2]},"status":{"resourceClaimStatuses":[]}})",
          R"({"spec":{"resourceClaims":[]},"status":{"resourceClaimStatuses":[{"name":"a","z":[]}]}})",
          R"({"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"t"},"x"]}})",
          R"({"status":{"capacity":{"cpu":"1","hugepages-2Mi":"0","a/b":"2"},"allocatable":7}})",
          R"({"kind":"Pod","metadata":{"ownerReferences":[{"kind":"ReplicaSet"}]}})",
          R"({"spec":{"affinity":{"podAntiAffinity":{},"nodeAffinity":{"x":1}},"nodeSelector":{}}})",
          R"({"spec":{"affinity":7,"initContainers":[{"name":"s","restartPolicy":"Always"}]}})",
          R"({"spec":{"tolerations":[{"operator":"Exists","tolerationSeconds":5},"x"]}})",
          R"({"spec":{"tolerations":[]}})",
          R"({"spec":{"tolerations":{"key":"k"}}})",
      }) {
    inputs.push_back(nlohmann::json::parse(text));
  }
  for (const nlohmann::json& in : inputs) {
    EXPECT_EQ(SelectPodFields(nlohmann::json(in)), ReferenceSelectPodFields(nlohmann::json(in)))
        << in.dump();
    EXPECT_EQ(SelectNodeFields(nlohmann::json(in)), ReferenceSelectNodeFields(nlohmann::json(in)))
        << in.dump();
  }
}

}  // namespace
}  // namespace skb::k8s

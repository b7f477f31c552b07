// SPDX-License-Identifier: Apache-2.0
#include "k8s/field_selection.h"

#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>

namespace skb::k8s {
namespace {

using nlohmann::json;

bool OneOf(std::string_view key, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys) {
    if (k == key) return true;
  }
  return false;
}

// Erases every key of `obj` not in `keys`; anything but an object becomes {}. In place: the
// kept values are neither copied nor moved (after a selective decode almost all are kept).
void KeepOnly(json& obj, std::initializer_list<std::string_view> keys) {
  if (!obj.is_object()) {
    obj = json::object();
    return;
  }
  auto& m = obj.get_ref<json::object_t&>();
  for (auto it = m.begin(); it != m.end();) {
    it = OneOf(it->first, keys) ? std::next(it) : m.erase(it);
  }
}

void Meta(json& obj, bool owners) {
  json& md = obj["metadata"];
  if (owners) {
    KeepOnly(md, {"name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                  "deletionTimestamp", "labels", "annotations", "finalizers", "ownerReferences"});
  } else {
    KeepOnly(md, {"name", "namespace", "uid", "resourceVersion", "creationTimestamp",
                  "deletionTimestamp", "labels", "annotations", "finalizers"});
  }
  // kubectl apply's copy of the whole object: often the largest field, never needed.
  auto ann = md.find("annotations");
  if (ann != md.end() && ann->is_object())
    ann->erase("kubectl.kubernetes.io/last-applied-configuration");
}

// cpu, memory, pods and extended resources (nvidia.com/gpu, ...); not storage or hugepages.
void Resources(json& list) {
  if (!list.is_object()) {
    list = json::object();
    return;
  }
  auto& m = list.get_ref<json::object_t&>();
  for (auto it = m.begin(); it != m.end();) {
    const std::string& k = it->first;
    const bool keep =
        k == "cpu" || k == "memory" || k == "pods" || k.find('/') != std::string::npos;
    it = keep ? std::next(it) : m.erase(it);
  }
}

// Trims each element of the list at `key` of `obj` (an object) to `fields`. A missing or
// non-list entry becomes [] when `keep_empty`, and an empty list is dropped unless it is.
void TrimList(json& obj, const char* key, std::initializer_list<std::string_view> fields,
              bool keep_empty) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array() || it->empty()) {
    if (keep_empty) {
      obj[key] = json::array();
    } else if (it != obj.end()) {
      obj.erase(it);
    }
    return;
  }
  for (json& e : *it) KeepOnly(e, fields);
}

void Conditions(json& status) {
  TrimList(status, "conditions", {"type", "status", "reason", "message", "lastTransitionTime"},
           /*keep_empty=*/false);
}

}  // namespace

json SelectNodeFields(json&& node) {
  if (!node.is_object()) return std::move(node);
  KeepOnly(node, {"metadata", "spec", "status"});
  Meta(node, false);
  if (auto spec = node.find("spec"); spec != node.end())
    KeepOnly(*spec, {"unschedulable", "taints"});
  if (auto status = node.find("status"); status != node.end()) {
    KeepOnly(*status, {"capacity", "allocatable", "conditions"});
    if (auto c = status->find("capacity"); c != status->end()) Resources(*c);
    if (auto a = status->find("allocatable"); a != status->end()) Resources(*a);
    Conditions(*status);
  }
  return std::move(node);
}

json SelectPodFields(json&& pod) {
  if (!pod.is_object()) return std::move(pod);
  KeepOnly(pod, {"metadata", "spec", "status"});
  Meta(pod, true);
  if (auto spec = pod.find("spec"); spec != pod.end()) {
    KeepOnly(*spec, {"nodeName", "schedulerName", "priority", "priorityClassName",
                     "terminationGracePeriodSeconds", "containers", "initContainers",
                     "nodeSelector", "affinity", "tolerations", "resourceClaims"});
    TrimList(*spec, "containers", {"name", "resources", "restartPolicy"}, /*keep_empty=*/true);
    TrimList(*spec, "initContainers", {"name", "resources", "restartPolicy"},
             /*keep_empty=*/false);
    TrimList(*spec, "tolerations", {"key", "operator", "value", "effect"},
             /*keep_empty=*/false);
    TrimList(*spec, "resourceClaims", {"name", "resourceClaimName", "resourceClaimTemplateName"},
             /*keep_empty=*/false);
    if (auto a = spec->find("affinity"); a != spec->end()) KeepOnly(*a, {"nodeAffinity"});
  }
  if (auto status = pod.find("status"); status != pod.end()) {
    KeepOnly(*status,
             {"phase", "nominatedNodeName", "conditions", "startTime", "resourceClaimStatuses"});
    Conditions(*status);
    TrimList(*status, "resourceClaimStatuses", {"name", "resourceClaimName"}, /*keep_empty=*/false);
  }
  return std::move(pod);
}

json SelectResourceSliceFields(json&& slice) {
  if (!slice.is_object()) return std::move(slice);
  KeepOnly(slice, {"metadata", "spec"});
  Meta(slice, false);
  if (auto spec = slice.find("spec"); spec != slice.end()) {
    KeepOnly(*spec, {"driver", "nodeName", "pool", "devices"});
    TrimList(*spec, "devices", {"name", "attributes", "taints"}, /*keep_empty=*/true);
  }
  return std::move(slice);
}

json SelectResourceClaimFields(json&& claim) {
  if (!claim.is_object()) return std::move(claim);
  KeepOnly(claim, {"metadata", "spec", "status"});
  Meta(claim, true);
  if (auto spec = claim.find("spec"); spec != claim.end()) {
    KeepOnly(*spec, {"devices"});
    if (auto devices = spec->find("devices"); devices != spec->end()) {
      KeepOnly(*devices, {"requests"});
      TrimList(*devices, "requests", {"name", "exactly", "firstAvailable"}, /*keep_empty=*/true);
    }
  }
  if (auto status = claim.find("status"); status != claim.end()) {
    KeepOnly(*status, {"allocation", "reservedFor"});
    if (auto alloc = status->find("allocation"); alloc != status->end()) {
      KeepOnly(*alloc, {"devices"});
      if (auto devices = alloc->find("devices"); devices != alloc->end()) {
        KeepOnly(*devices, {"results"});
        TrimList(*devices, "results", {"request", "driver", "pool", "device", "adminAccess"},
                 /*keep_empty=*/true);
      }
    }
  }
  return std::move(claim);
}

json SelectDeviceTaintRuleFields(json&& rule) {
  if (!rule.is_object()) return std::move(rule);
  KeepOnly(rule, {"metadata", "spec"});
  Meta(rule, false);
  if (auto spec = rule.find("spec"); spec != rule.end())
    KeepOnly(*spec, {"deviceSelector", "taint"});
  return std::move(rule);
}

}  // namespace skb::k8s

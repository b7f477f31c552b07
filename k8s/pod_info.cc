// SPDX-License-Identifier: Apache-2.0
#include "k8s/pod_info.h"

#include <algorithm>
#include <set>

#include "k8s/node_info.h"

namespace skb::k8s {
namespace {

std::vector<ContainerResources> ReadContainers(const FieldReader& spec, std::string_view key) {
  std::vector<ContainerResources> out;
  for (const FieldReader& c : spec.ObjectList(key)) {
    FieldReader res = c.Sub("resources");
    out.push_back({c.String("name"), res.QuantityMap("requests"), res.QuantityMap("limits")});
  }
  return out;
}

int64_t RequestOf(const ContainerResources& c, const std::string& resource) {
  auto r = c.requests.find(resource);
  if (r != c.requests.end()) return r->second.MilliValue();
  auto l = c.limits.find(resource);
  return l != c.limits.end() ? l->second.MilliValue() : 0;
}

}  // namespace

Quantity PodInfo::EffectiveRequest(const std::string& resource) const {
  int64_t sum = 0;
  for (const auto& c : containers) sum += RequestOf(c, resource);
  int64_t init_max = 0;
  for (const auto& c : init_containers) init_max = std::max(init_max, RequestOf(c, resource));
  return Quantity::FromMilli(std::max(sum, init_max));
}

int64_t PodInfo::GpuRequest() const {
  std::set<std::string> slices;
  for (const auto* list : {&containers, &init_containers}) {
    for (const ContainerResources& c : *list) {
      for (const auto* m : {&c.requests, &c.limits}) {
        for (const auto& [r, q] : *m) {
          if (r.starts_with(kNvidiaMigPrefix)) slices.insert(r);
        }
      }
    }
  }
  int64_t n = EffectiveRequest(kNvidiaGpu).Value();
  for (const std::string& r : slices) n += EffectiveRequest(r).Value();
  return n;
}

bool PodInfo::DisruptionTarget() const {
  const Condition* c = FindCondition(conditions, "DisruptionTarget");
  return c != nullptr && c->status == "True";
}

StatusOr<PodInfo> ParsePod(const nlohmann::json& obj) {
  PodInfo p;
  ASSIGN_OR_RETURN(p.meta, ReadObjectMeta(obj, "pod", &p.issues));
  FieldReader root(obj, "", &p.issues);
  FieldReader spec = root.Sub("spec");
  p.node_name = spec.String("nodeName");
  p.scheduler_name = spec.String("schedulerName");
  p.priority = spec.Int("priority");
  p.priority_class_name = spec.String("priorityClassName");
  p.termination_grace_period_seconds = spec.Int("terminationGracePeriodSeconds");
  p.containers = ReadContainers(spec, "containers");
  p.init_containers = ReadContainers(spec, "initContainers");
  FieldReader status = root.Sub("status");
  p.phase = status.String("phase");
  p.nominated_node_name = status.String("nominatedNodeName");
  p.start_time = status.String("startTime");
  p.conditions = ReadConditions(status, "conditions");
  return p;
}

}  // namespace skb::k8s

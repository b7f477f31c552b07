// SPDX-License-Identifier: Apache-2.0
// A typed view of a core/v1 Pod: placement, priority, GPU requests, lifecycle.
//
//   ASSIGN_OR_RETURN(PodInfo pod, ParsePod(obj));
//   if (pod.node_name == "node1" && pod.GpuRequest() > 0 && !pod.Terminal()) ...
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/object_meta.h"
#include "k8s/quantity.h"

namespace skb::k8s {

struct ContainerResources {
  std::string name;
  std::map<std::string, Quantity> requests;
  std::map<std::string, Quantity> limits;
};

struct PodInfo {
  ObjectMeta meta;
  std::string node_name;
  std::string scheduler_name;
  std::optional<int64_t> priority;
  std::string priority_class_name;
  std::optional<int64_t> termination_grace_period_seconds;
  std::vector<ContainerResources> containers;
  std::vector<ContainerResources> init_containers;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  // status.nominatedNodeName: a pending pod kube-scheduler preempted victims for.
  std::string nominated_node_name;
  std::string start_time;  // status.startTime (RFC 3339): when the kubelet accepted it
  std::vector<Condition> conditions;
  std::vector<FieldIssue> issues;

  // What the scheduler counts: max(sum over containers, max over init containers) of the
  // request (or, when only a limit is set, the limit: extended resources default the request
  // to the limit).
  Quantity EffectiveRequest(const std::string& resource) const;
  // The GPUs it asks: nvidia.com/gpu plus every MIG slice resource (kNvidiaMigPrefix), a
  // slice counting as one: what keeps a node lent and what a reservation must hold.
  int64_t GpuRequest() const;
  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  // The DisruptionTarget condition is True: the pod is being preempted or evicted.
  bool DisruptionTarget() const;
};

StatusOr<PodInfo> ParsePod(const nlohmann::json& obj);

}  // namespace skb::k8s

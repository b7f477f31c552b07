// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/k8s_convert.h"

#include <algorithm>

#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
inventory::K8sNode ToK8sNode(const k8s::NodeInfo& node) {
  inventory::K8sNode k;
  k.name = node.meta.name;
  k.uid = node.meta.uid;
  k.labels = node.meta.labels;
  k.annotations = node.meta.annotations;
  k.unschedulable = node.unschedulable;
  for (const auto& t : node.taints) k.taints.push_back({t.key, t.value, t.effect});
  for (const auto& c : node.conditions) {
    auto t = k8s::ParseTime(c.last_transition_time);
    k.conditions.push_back(
        {c.type, c.status, c.reason, c.message, t.ok() ? *t : Clock::TimePoint{}});
  }
  k.gpu_capacity = node.CapacityGpus();
  k.gpu_allocatable = node.AllocatableGpus();
  k.slices = node.Slices();
  return k;
}

std::optional<inventory::GpuPod> ToGpuPod(const k8s::PodInfo& pod) {
  if (pod.GpuRequest() <= 0) return std::nullopt;
  return ToPod(pod);
}

inventory::GpuPod ToPod(const k8s::PodInfo& pod) {
  inventory::GpuPod p;
  p.namespace_name = pod.meta.namespace_;
  p.name = pod.meta.name;
  p.node_name = pod.node_name;
  p.gpus = std::max<int64_t>(pod.GpuRequest(), 0);
  p.phase = pod.phase;
  p.terminating = pod.meta.deleting();
  auto role = pod.meta.labels.find(ownership::kRoleLabel);
  p.reservation = role != pod.meta.labels.end() && role->second == ownership::kReservationRole;
  p.priority = static_cast<int32_t>(pod.priority.value_or(0));
  p.uid = pod.meta.uid;
  p.labels = pod.meta.labels;
  p.annotations = pod.meta.annotations;
  p.finalizers = pod.meta.finalizers;
  if (p.terminating) {
    // deletionTimestamp is when the kubelet kills the containers (deletion + grace).
    auto t = k8s::ParseTime(pod.meta.deletion_timestamp);
    p.deletion_time = t.ok() ? *t : Clock::TimePoint{};
  }
  p.priority_class_name = pod.priority_class_name;
  p.nominated_node_name = pod.nominated_node_name;
  if (!pod.start_time.empty()) {
    if (auto t = k8s::ParseTime(pod.start_time); t.ok()) p.started = *t;
  }
  return p;
}

}  // namespace skb::bridge

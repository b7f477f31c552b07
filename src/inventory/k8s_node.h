// SPDX-License-Identifier: Apache-2.0
// A Kubernetes node as the core sees it: plain values, no JSON, no client.
//
// bridge/ fills these from the k8s informers' Node objects (k8s/ typed views); the core and
// its tests build them by hand. Only the fields the bridge decides on are kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"

namespace skb::inventory {

// A NodeCondition (type, status "True"/"False"/"Unknown", reason, message).
struct NodeCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  Clock::TimePoint last_transition{};
  friend bool operator==(const NodeCondition&, const NodeCondition&) = default;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};
// As kubectl shows a taint: key=value:effect, or key:effect without a value.
std::string TaintString(const Taint& t);

struct K8sNode {
  std::string name;
  std::string uid;  // metadata.uid
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<NodeCondition> conditions;
  std::vector<Taint> taints;
  bool unschedulable = false;   // spec.unschedulable (cordon)
  int64_t gpu_capacity = 0;     // status.capacity["nvidia.com/gpu"]
  int64_t gpu_allocatable = 0;  // status.allocatable["nvidia.com/gpu"]
  // MIG slices the device plugin advertises ("mixed" strategy): resource -> allocatable
  // count ("nvidia.com/mig-1g.10gb" -> 7). A reservation holds them beside the GPUs.
  std::map<std::string, int64_t> slices;

  // Kubernetes' GPUs of the node: nvidia.com/gpu (allocatable, else capacity) plus every
  // slice, one each (what a pod's GpuRequest counts); 0 when it lists none.
  int64_t GpuUnits() const {
    int64_t n = gpu_allocatable > 0 ? gpu_allocatable : gpu_capacity;
    for (const auto& [r, c] : slices) n += c;
    return n;
  }

  // The condition of this type, or nullptr.
  const NodeCondition* FindCondition(std::string_view type) const;
  // The label's value, or nullopt.
  std::optional<std::string> Label(std::string_view key) const;
};

}  // namespace skb::inventory

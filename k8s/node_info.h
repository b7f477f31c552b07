// SPDX-License-Identifier: Apache-2.0
// A typed view of a core/v1 Node: what the bridge reads to decide ownership and health.
//
//   ASSIGN_OR_RETURN(NodeInfo node, ParseNode(*informer.Get("node1")));
//   if (node.unschedulable || node.Ready() != "True") ...
//   int64_t gpus = node.AllocatableGpus();
#pragma once

#include <map>
#include <string>
#include <vector>

#include "k8s/object_meta.h"
#include "k8s/quantity.h"

namespace skb::k8s {

inline constexpr char kNvidiaGpu[] = "nvidia.com/gpu";
// The prefix of the MIG slices NVIDIA's device plugin advertises with its "mixed" strategy
// (nvidia.com/mig-1g.10gb, ...): one extended resource per profile, each unit a slice that a
// pod uses as it would a GPU.
inline constexpr char kNvidiaMigPrefix[] = "nvidia.com/mig-";

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct NodeInfo {
  ObjectMeta meta;
  bool unschedulable = false;
  std::vector<Taint> taints;
  std::vector<Condition> conditions;
  std::map<std::string, Quantity> capacity;
  std::map<std::string, Quantity> allocatable;
  // Fields that were present but unusable and therefore left at their defaults.
  std::vector<FieldIssue> issues;

  // Status of the Ready condition: "True", "False", "Unknown", or "" when absent.
  std::string Ready() const;
  int64_t AllocatableGpus() const;  // 0 when absent
  int64_t CapacityGpus() const;
  // The MIG slice resources (kNvidiaMigPrefix) and their allocatable count (the capacity
  // where allocatable does not list one); only those above 0.
  std::map<std::string, int64_t> Slices() const;
};

// InvalidArgument only when there is no usable metadata.name; every other problem is a
// skipped field listed in `issues`.
StatusOr<NodeInfo> ParseNode(const nlohmann::json& obj);

}  // namespace skb::k8s

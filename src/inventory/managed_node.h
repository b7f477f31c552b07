// One managed GPU node as both schedulers see it: the merged view the planner decides on.
//
// A snapshot value: built by the bridge from its informer caches and the last Slurm poll,
// never mutated afterwards. Either side may be missing (a node Slurm does not know, or a
// Kubernetes node that was deleted); the planner then acts on nothing and says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/inventory/k8s_node.h"
#include "src/slurm/types.h"

namespace skb::inventory {

// A Kubernetes pod on the node that requests GPUs.
struct GpuPod {
  std::string namespace_name;
  std::string name;
  std::string node_name;     // spec.nodeName ("" while unscheduled)
  int64_t gpus = 0;
  std::string phase;         // Pending, Running, Succeeded, Failed
  bool terminating = false;  // deletionTimestamp set
  bool reservation = false;  // the bridge's own reservation pod
  int32_t priority = 0;
};

struct ManagedNode {
  std::string name;
  std::optional<K8sNode> k8s;
  std::optional<slurm::NodeView> slurm;
  // Slurm jobs holding resources on this node (running, suspended or completing).
  std::vector<slurm::JobView> jobs;
  std::vector<GpuPod> pods;
};

}  // namespace skb::inventory

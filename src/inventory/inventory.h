// The merged inventory: one immutable snapshot of every GPU node both schedulers see,
// built from the Kubernetes caches and the last Slurm poll ("merge" in
// observe -> merge -> plan -> act).
//
//   Inventory inv = Inventory::Build(k8s_nodes, slurm_nodes, slurm_jobs, gpu_pods, names);
//   for (const ManagedNode& n : inv.nodes()) planner.Plan(n, ...);
//
// Building is O(nodes + jobs x nodes-per-job + pods) and takes its inputs by value so the
// caller can move its copies in. Thread-compatible: a built Inventory is only read.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/inventory/managed_node.h"
#include "src/inventory/node_names.h"

namespace skb::inventory {

class Inventory {
 public:
  Inventory() = default;

  // Merges the two sides by name. Jobs are attached to every node in their node list that
  // they hold resources on (running, suspended, completing), and ended jobs still in
  // Slurm's memory to `ended_jobs` of the nodes they ran on; pods with GPUs to their
  // spec.nodeName. Nodes known to one side only are kept, with the other side empty.
  static Inventory Build(std::vector<K8sNode> k8s_nodes, std::vector<slurm::NodeView> slurm_nodes,
                         const std::vector<slurm::JobView>& jobs, std::vector<GpuPod> pods,
                         const NodeNameMap& names);

  // Sorted by name (the Slurm name when the node is in Slurm).
  const std::vector<ManagedNode>& nodes() const { return nodes_; }
  // nullptr when unknown. O(log n).
  const ManagedNode* Find(std::string_view name) const;

  // Totals for metrics and `bridgectl`: GPUs on nodes both sides know.
  int64_t TotalGpus() const;

 private:
  std::vector<ManagedNode> nodes_;
};

}  // namespace skb::inventory

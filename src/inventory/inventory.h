// SPDX-License-Identifier: Apache-2.0
// The merged inventory: one immutable snapshot of every GPU node both schedulers see
// (Store::Snapshot; the merge rules are the Store's, src/inventory/store.h).
//
//   Inventory inv = store.Snapshot();
//   for (const ManagedNode& n : inv.nodes()) planner.Plan(n, ...);
//
// Thread-compatible: a built Inventory is only read.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "src/inventory/managed_node.h"
#include "src/inventory/node_names.h"

namespace skb::inventory {

class Inventory {
 public:
  Inventory() = default;

  // The snapshot of a Store loaded with these views (tests, benchmarks): k8s nodes first,
  // then the Slurm nodes, the jobs and the pods as live pods. No node is lent to the store
  // (it has no lent annotation), so no ended job is kept.
  static Inventory Build(std::vector<K8sNode> k8s_nodes, std::vector<slurm::NodeView> slurm_nodes,
                         std::vector<slurm::JobView> jobs, std::vector<GpuPod> pods,
                         const NodeNameMap& names);

  // Sorted by name (the Slurm name when the node is in Slurm).
  const std::vector<ManagedNode>& nodes() const { return nodes_; }
  // nullptr when unknown. O(log n).
  const ManagedNode* Find(std::string_view name) const;

  // Totals for metrics and `bridgectl`: GPUs on nodes both sides know.
  int64_t TotalGpus() const;

 private:
  friend class Store;
  // `nodes` sorted by name, names unique.
  explicit Inventory(std::vector<ManagedNode> nodes) : nodes_(std::move(nodes)) {}

  std::vector<ManagedNode> nodes_;
};

}  // namespace skb::inventory

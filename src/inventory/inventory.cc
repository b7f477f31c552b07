// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/inventory.h"

#include <algorithm>

#include "src/inventory/store.h"

namespace skb::inventory {

Inventory Inventory::Build(std::vector<K8sNode> k8s_nodes, std::vector<slurm::NodeView> slurm_nodes,
                           std::vector<slurm::JobView> jobs, std::vector<GpuPod> pods,
                           const NodeNameMap& names) {
  Store store(names, /*lent_annotation=*/"");
  for (K8sNode& k : k8s_nodes) store.UpdateK8sNode(std::move(k));
  store.SetSlurmNodes(std::move(slurm_nodes));
  store.SetSlurmJobs(std::move(jobs));
  for (GpuPod& p : pods) store.UpdatePod(std::move(p));
  return store.Snapshot();
}

const ManagedNode* Inventory::Find(std::string_view name) const {
  auto it = std::lower_bound(nodes_.begin(), nodes_.end(), name,
                             [](const ManagedNode& n, std::string_view v) { return n.name < v; });
  return it != nodes_.end() && it->name == name ? &*it : nullptr;
}

int64_t Inventory::TotalGpus() const {
  int64_t total = 0;
  for (const ManagedNode& n : nodes_) {
    if (n.k8s && n.slurm) total += n.k8s->gpu_capacity;
  }
  return total;
}

}  // namespace skb::inventory

#include "src/inventory/inventory.h"

#include <algorithm>
#include <unordered_map>

namespace skb::inventory {

Inventory Inventory::Build(std::vector<K8sNode> k8s_nodes, std::vector<slurm::NodeView> slurm_nodes,
                           const std::vector<slurm::JobView>& jobs, std::vector<GpuPod> pods,
                           const NodeNameMap& names) {
  Inventory inv;
  inv.nodes_.reserve(std::max(k8s_nodes.size(), slurm_nodes.size()));
  std::unordered_map<std::string, size_t> index;  // node name (Slurm's) -> position
  index.reserve(inv.nodes_.capacity() * 2);
  // Pod spec.nodeName is the Kubernetes name; remember how it maps.
  std::unordered_map<std::string, size_t> by_k8s_name;
  by_k8s_name.reserve(k8s_nodes.size() * 2);

  auto slot = [&](const std::string& name) -> ManagedNode& {
    auto [it, inserted] = index.try_emplace(name, inv.nodes_.size());
    if (inserted) {
      inv.nodes_.emplace_back();
      inv.nodes_.back().name = name;
    }
    return inv.nodes_[it->second];
  };
  for (K8sNode& k : k8s_nodes) {
    // A node the rule gives no Slurm name (label mode, label missing) keeps its own.
    std::string name = names.SlurmName(k).value_or(k.name);
    std::string k8s_name = k.name;
    ManagedNode& m = slot(name);
    m.k8s = std::move(k);
    by_k8s_name.emplace(std::move(k8s_name), index[name]);
  }
  for (slurm::NodeView& s : slurm_nodes) {
    std::string name = s.name;
    slot(name).slurm = std::move(s);
  }
  // Heterogeneous jobs holding nodes, by het_job_id: each node that holds one of their
  // components gets them all (ManagedNode::het_jobs).
  std::unordered_map<uint32_t, std::vector<const slurm::JobView*>> het;
  std::vector<std::pair<size_t, uint32_t>> het_on;  // (node position, het_job_id)
  for (const slurm::JobView& j : jobs) {
    bool holds = j.state == slurm::JobState::kRunning || j.state == slurm::JobState::kSuspended ||
                 j.completing;
    bool ended = !holds && j.state != slurm::JobState::kPending && !j.requeue_pending;
    if (!holds && !ended) continue;
    if (holds && j.het_job_id != 0) het[j.het_job_id].push_back(&j);
    for (const std::string& n : j.nodes) {
      auto it = index.find(n);
      if (it == index.end()) continue;
      ManagedNode& m = inv.nodes_[it->second];
      (holds ? m.jobs : m.ended_jobs).push_back(j);
      if (holds && j.het_job_id != 0) het_on.emplace_back(it->second, j.het_job_id);
    }
  }
  std::sort(het_on.begin(), het_on.end());
  het_on.erase(std::unique(het_on.begin(), het_on.end()), het_on.end());
  for (const auto& [pos, id] : het_on) {
    for (const slurm::JobView* c : het[id]) inv.nodes_[pos].het_jobs.push_back(*c);
  }
  for (GpuPod& p : pods) {
    if (p.node_name.empty()) {
      // A pending preemptor: kube-scheduler nominated this node for it.
      if (p.nominated_node_name.empty()) continue;
      if (auto it = by_k8s_name.find(p.nominated_node_name); it != by_k8s_name.end()) {
        inv.nodes_[it->second].nominated_pods.push_back(std::move(p));
      }
      continue;
    }
    if (auto it = by_k8s_name.find(p.node_name); it != by_k8s_name.end()) {
      inv.nodes_[it->second].pods.push_back(std::move(p));
    }
  }
  std::sort(inv.nodes_.begin(), inv.nodes_.end(),
            [](const ManagedNode& a, const ManagedNode& b) { return a.name < b.name; });
  return inv;
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

// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/store.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "src/base/strings.h"

namespace skb::inventory {
namespace {

// What of a Slurm node the planner looks at; a change in any of it makes the node dirty.
std::string Fingerprint(const slurm::NodeView& n) {
  std::string f = StrCat(n.StateString(), "|", n.reason, "|", n.reason_uid, "|");
  for (const auto& x : n.features) StrAppend(&f, x, ",");
  StrAppend(&f, "|");
  for (const auto& x : n.active_features) StrAppend(&f, x, ",");
  return f;
}

std::string JobFingerprint(const slurm::JobView& j) {
  std::string f = StrCat(static_cast<int>(j.state), "|", j.completing, "|", j.requeue, "|");
  for (const auto& n : j.nodes) StrAppend(&f, n, ",");
  return f;
}

// The keys whose value differs between `a` and `b` (present in one only, or changed).
template <typename K, typename V>
std::set<K> ChangedKeys(const std::map<K, V>& a, const std::map<K, V>& b) {
  std::set<K> changed;
  for (const auto* m : {&a, &b}) {
    const auto* other = m == &a ? &b : &a;
    for (const auto& [key, value] : *m) {
      auto it = other->find(key);
      if (it == other->end() || it->second != value) changed.insert(key);
    }
  }
  return changed;
}

std::vector<std::string> ToVector(std::set<std::string> names) {
  return {std::make_move_iterator(names.begin()), std::make_move_iterator(names.end())};
}

}  // namespace

Store::Store(NodeNameMap names, std::string lent_annotation)
    : names_(std::move(names)), lent_annotation_(std::move(lent_annotation)) {}

std::vector<std::string> Store::UpdateK8sNode(K8sNode node) {
  std::string name = names_.SlurmName(node).value_or(node.name);
  std::vector<std::string> dirty = {name};
  if (auto it = k8s_to_slurm_.find(node.name); it != k8s_to_slurm_.end() && it->second != name) {
    k8s_nodes_.erase(it->second);
    dirty.push_back(it->second);
  }
  k8s_to_slurm_[node.name] = name;
  k8s_nodes_[name] = std::move(node);
  return dirty;
}

std::vector<std::string> Store::RemoveK8sNode(const std::string& k8s_name) {
  std::string name = SlurmName(k8s_name);
  k8s_to_slurm_.erase(k8s_name);
  k8s_nodes_.erase(name);
  return {name};
}

std::string Store::SlurmName(const std::string& k8s_name) const {
  if (auto it = k8s_to_slurm_.find(k8s_name); it != k8s_to_slurm_.end()) return it->second;
  return names_.SlurmName(k8s_name);
}

std::string Store::PodNode(const GpuPod& p) const {
  const std::string& k8s_name = p.node_name.empty() ? p.nominated_node_name : p.node_name;
  return k8s_name.empty() ? "" : SlurmName(k8s_name);
}

std::vector<std::string> Store::UpdatePod(GpuPod pod) {
  return UpdatePodIn(&pods_, std::move(pod));
}

std::vector<std::string> Store::RemovePod(const std::string& ns, const std::string& name) {
  return RemovePodFrom(&pods_, ns, name);
}

std::vector<std::string> Store::UpdateReservation(GpuPod pod) {
  return UpdatePodIn(&reservations_, std::move(pod));
}

std::vector<std::string> Store::RemoveReservation(const std::string& ns, const std::string& name) {
  return RemovePodFrom(&reservations_, ns, name);
}

std::vector<std::string> Store::UpdatePodIn(std::map<std::string, GpuPod>* pods, GpuPod pod) {
  std::vector<std::string> dirty;
  std::string node = PodNode(pod);
  if (!node.empty()) dirty.push_back(node);
  std::string key = StrCat(pod.namespace_name, "/", pod.name);
  auto [it, added] = pods->try_emplace(std::move(key));
  if (!added) {
    std::string old_node = PodNode(it->second);
    if (!old_node.empty() && old_node != node) dirty.push_back(std::move(old_node));
  }
  it->second = std::move(pod);
  return dirty;
}

std::vector<std::string> Store::RemovePodFrom(std::map<std::string, GpuPod>* pods,
                                              const std::string& ns, const std::string& name) {
  auto it = pods->find(StrCat(ns, "/", name));
  if (it == pods->end()) return {};
  std::string node = PodNode(it->second);
  pods->erase(it);
  if (node.empty()) return {};
  return {std::move(node)};
}

std::vector<std::string> Store::SetSlurmNodes(std::vector<slurm::NodeView> nodes) {
  std::vector<std::string> dirty;
  std::map<std::string, slurm::NodeView> next;
  for (auto& n : nodes) {
    auto it = slurm_nodes_.find(n.name);
    if (it == slurm_nodes_.end() || Fingerprint(it->second) != Fingerprint(n)) {
      dirty.push_back(n.name);
    }
    std::string name = n.name;
    next.emplace(std::move(name), std::move(n));
  }
  for (const auto& [name, unused] : slurm_nodes_) {
    if (!next.count(name)) dirty.push_back(name);
  }
  slurm_nodes_ = std::move(next);
  return dirty;
}

std::vector<std::string> Store::SetSlurmJobs(std::vector<slurm::JobView> jobs) {
  std::set<std::string> dirty;
  std::map<uint32_t, slurm::JobView> next;
  std::map<uint32_t, slurm::JobView> ended;
  for (auto& j : jobs) {
    if (!j.HoldsNodes()) {
      if (KeepsEndedJob(j)) {
        if (!ended_jobs_.count(j.job_id)) dirty.insert(j.nodes.begin(), j.nodes.end());
        uint32_t id = j.job_id;
        ended.emplace(id, std::move(j));
      }
      continue;
    }
    auto it = jobs_.find(j.job_id);
    if (it == jobs_.end() || JobFingerprint(it->second) != JobFingerprint(j)) {
      dirty.insert(j.nodes.begin(), j.nodes.end());
      if (it != jobs_.end()) dirty.insert(it->second.nodes.begin(), it->second.nodes.end());
    }
    uint32_t id = j.job_id;
    next.emplace(id, std::move(j));
  }
  for (const auto& [id, j] : jobs_) {
    if (!next.count(id)) dirty.insert(j.nodes.begin(), j.nodes.end());
  }
  // A change of one component of a heterogeneous job changes the policy of the nodes of
  // every other component.
  std::set<uint32_t> het_changed;
  for (const auto* m : {&jobs_, &next}) {
    for (const auto& [id, j] : *m) {
      if (j.het_job_id == 0) continue;
      for (const std::string& n : j.nodes) {
        if (dirty.count(n)) het_changed.insert(j.het_job_id);
      }
    }
  }
  for (const auto& [id, j] : next) {
    if (het_changed.count(j.het_job_id)) dirty.insert(j.nodes.begin(), j.nodes.end());
  }
  jobs_ = std::move(next);
  ended_jobs_ = std::move(ended);
  return ToVector(std::move(dirty));
}

// A lend requeues the jobs its checkpoint signal ended (src/ownership/lend.cc): the ended
// jobs of a lent node are kept while Slurm remembers them.
bool Store::KeepsEndedJob(const slurm::JobView& j) const {
  if (j.state == slurm::JobState::kPending || j.requeue_pending) return false;
  // The maintenance cycle's verdict is the check job's end (src/health/maintenance.h).
  if (j.name == slurm::kMaintenanceCheckJobName) return true;
  if (lent_annotation_.empty()) return false;
  for (const std::string& n : j.nodes) {
    auto it = k8s_nodes_.find(n);
    if (it != k8s_nodes_.end() && it->second.annotations.count(lent_annotation_)) return true;
  }
  return false;
}

std::vector<std::string> Store::SetGpuSharing(std::map<std::string, GpuSharingView> views) {
  if (views == gpu_sharing_) return {};
  std::set<std::string> dirty = ChangedKeys(views, gpu_sharing_);
  gpu_sharing_ = std::move(views);
  return ToVector(std::move(dirty));
}

std::vector<std::string> Store::SetQuotaFacts(QuotaFacts facts) {
  if (facts == quota_) return {};
  std::set<std::string> dirty;
  for (const std::string& node : ChangedKeys(facts.reclaims, quota_.reclaims)) {
    dirty.insert(SlurmName(node));
  }
  for (const std::string& pod : ChangedKeys(facts.borrowing_pods, quota_.borrowing_pods)) {
    auto it = pods_.find(pod);
    if (it != pods_.end() && !it->second.nominated_node_name.empty()) {
      dirty.insert(SlurmName(it->second.nominated_node_name));
    }
  }
  // A heterogeneous job is judged whole: every component's node.
  std::set<uint32_t> het;
  for (uint32_t id : ChangedKeys(facts.guaranteed_jobs, quota_.guaranteed_jobs)) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;  // not holding a node here (yet): SetSlurmJobs marks it
    dirty.insert(it->second.nodes.begin(), it->second.nodes.end());
    if (it->second.het_job_id != 0) het.insert(it->second.het_job_id);
  }
  for (const auto& [id, j] : jobs_) {
    if (j.het_job_id != 0 && het.count(j.het_job_id)) dirty.insert(j.nodes.begin(), j.nodes.end());
  }
  quota_ = std::move(facts);
  return ToVector(std::move(dirty));
}

ManagedNode Store::Node(const std::string& name) const {
  ManagedNode m;
  m.name = name;
  Merge({&m, 1});
  return m;
}

Inventory Store::Snapshot() const {
  std::vector<ManagedNode> nodes;
  nodes.reserve(std::max(k8s_nodes_.size(), slurm_nodes_.size()));
  // Both maps are sorted by name: their union, in order.
  auto k = k8s_nodes_.begin();
  auto s = slurm_nodes_.begin();
  while (k != k8s_nodes_.end() || s != slurm_nodes_.end()) {
    const bool take_k = s == slurm_nodes_.end() || (k != k8s_nodes_.end() && k->first <= s->first);
    const bool take_s = k == k8s_nodes_.end() || (s != slurm_nodes_.end() && s->first <= k->first);
    nodes.emplace_back().name = take_k ? k->first : s->first;
    if (take_k) ++k;
    if (take_s) ++s;
  }
  Merge(nodes);
  return Inventory(std::move(nodes));
}

void Store::Merge(std::span<ManagedNode> nodes) const {
  // The node being built under Slurm name `name`, or nullptr when it is not asked for.
  std::unordered_map<std::string_view, ManagedNode*> index;
  index.reserve(nodes.size());
  for (ManagedNode& m : nodes) index.emplace(m.name, &m);
  const auto slot = [&index](std::string_view name) -> ManagedNode* {
    auto it = index.find(name);
    return it == index.end() ? nullptr : it->second;
  };
  for (ManagedNode& m : nodes) {
    if (auto it = gpu_sharing_.find(m.name); it != gpu_sharing_.end()) m.gpu_sharing = it->second;
    if (auto it = k8s_nodes_.find(m.name); it != k8s_nodes_.end()) {
      m.k8s = it->second;
      if (auto r = quota_.reclaims.find(it->second.name); r != quota_.reclaims.end()) {
        m.reclaim = r->second;
      }
    }
    if (auto it = slurm_nodes_.find(m.name); it != slurm_nodes_.end()) m.slurm = it->second;
  }

  // Jobs, in job id order, each once on every node it lists. A heterogeneous job is preempted
  // whole: each node holding one of its components is given every component.
  std::map<uint32_t, std::vector<ManagedNode*>> het_on;  // het_job_id -> nodes holding it
  for (const auto& [id, j] : jobs_) {
    for (const std::string& n : j.nodes) {
      ManagedNode* m = slot(n);
      if (m == nullptr || (!m->jobs.empty() && m->jobs.back().job_id == id)) continue;
      m->jobs.push_back(j);
      if (j.het_job_id == 0) continue;
      std::vector<ManagedNode*>& on = het_on[j.het_job_id];
      if (std::find(on.begin(), on.end(), m) == on.end()) on.push_back(m);
    }
  }
  if (!het_on.empty()) {
    for (const auto& [id, j] : jobs_) {
      if (j.het_job_id == 0) continue;
      auto it = het_on.find(j.het_job_id);
      if (it == het_on.end()) continue;
      for (ManagedNode* m : it->second) m->het_jobs.push_back(j);
    }
  }
  for (const auto& [id, j] : ended_jobs_) {
    for (const std::string& n : j.nodes) {
      ManagedNode* m = slot(n);
      if (m != nullptr && (m->ended_jobs.empty() || m->ended_jobs.back().job_id != id)) {
        m->ended_jobs.push_back(j);
      }
    }
  }

  // Pods by the node they are bound to, else the one they are nominated to; each Kubernetes
  // node name is mapped once.
  std::unordered_map<std::string_view, ManagedNode*> by_k8s_name;
  const auto pod_slot = [&](const std::string& k8s_name) {
    auto [it, added] = by_k8s_name.try_emplace(k8s_name, nullptr);
    if (added) it->second = slot(SlurmName(k8s_name));
    return it->second;
  };
  const auto attach = [&](const std::string& key, const GpuPod& p) {
    if (!p.node_name.empty()) {
      if (ManagedNode* m = pod_slot(p.node_name)) {
        (p.gpus > 0 ? m->pods : m->claim_pods).push_back(p);
      }
      return;
    }
    if (p.nominated_node_name.empty() || p.gpus <= 0) return;
    ManagedNode* m = pod_slot(p.nominated_node_name);
    if (m == nullptr) return;
    m->nominated_pods.push_back(p);
    if (auto b = quota_.borrowing_pods.find(key); b != quota_.borrowing_pods.end()) {
      m->borrowing_nominated.emplace(key, b->second);
    }
  };
  // The reservations first, then the live pods that are not among them (both by key).
  for (const auto& [key, p] : reservations_) attach(key, p);
  auto r = reservations_.begin();
  for (const auto& [key, p] : pods_) {
    while (r != reservations_.end() && r->first < key) ++r;
    if (r == reservations_.end() || r->first != key) attach(key, p);
  }

  if (quota_.guaranteed_jobs.empty()) return;
  for (ManagedNode& m : nodes) {
    for (const auto* list : {&m.jobs, &m.het_jobs}) {
      for (const slurm::JobView& j : *list) {
        if (auto g = quota_.guaranteed_jobs.find(j.job_id); g != quota_.guaranteed_jobs.end()) {
          m.guaranteed_jobs.emplace(g->first, g->second);
        }
      }
    }
  }
}

}  // namespace skb::inventory

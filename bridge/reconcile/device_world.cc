// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/device_world.h"

#include <algorithm>
#include <set>
#include <vector>

namespace skb::bridge {
namespace {

template <typename Map, typename Convert>
void Set(Map* m, const std::string& key, const nlohmann::json* obj, Convert convert) {
  if (obj == nullptr) {
    m->erase(key);
  } else {
    (*m)[key] = convert(std::span<const nlohmann::json>(obj, 1));
  }
}

}  // namespace

// A pool may be published in several slices (resourceSliceCount), and a new generation
// replaces the old one slice by slice: a node's devices are read from all its slices at
// once, as kube-scheduler reads them, never one slice alone.
void DeviceWorldCache::SetSlice(const std::string& key, const nlohmann::json* obj) {
  {
    MutexLock lock(&mu_);
    std::set<std::string> touched;
    if (auto old = slice_node_.find(key); old != slice_node_.end()) {
      touched.insert(old->second);
      slice_objs_[old->second].erase(key);
      slice_node_.erase(old);
    }
    if (obj != nullptr) {
      const std::string node = devices::SliceNodeOf(*obj, cfg_.gpu_sharing.driver);
      if (!node.empty()) {
        slice_node_[key] = node;
        slice_objs_[node][key] = *obj;
        touched.insert(node);
      }
    }
    for (const std::string& node : touched) {
      slices_.erase(node);
      unreadable_.erase(node);
      auto& objs = slice_objs_[node];
      if (objs.empty()) {
        slice_objs_.erase(node);
        continue;
      }
      std::vector<nlohmann::json> all;
      all.reserve(objs.size());
      for (const auto& [k, o] : objs) all.push_back(o);
      std::map<std::string, std::string> unreadable;
      auto by_node = devices::SlicesByNode(all, cfg_.gpu_sharing.driver, nullptr, &unreadable);
      if (auto it = by_node.find(node); it != by_node.end()) slices_[node] = std::move(it->second);
      if (auto it = unreadable.find(node); it != unreadable.end()) {
        unreadable_[node] = std::move(it->second);
      }
    }
  }
  ++generation_;
}

void DeviceWorldCache::SetClaim(const std::string& key, const nlohmann::json* obj) {
  {
    MutexLock lock(&mu_);
    Set(&claims_, key, obj, [&](std::span<const nlohmann::json> o) {
      return devices::ClaimsByNode(o, cfg_.gpu_sharing.driver);
    });
    Set(&demands_, key, obj, [&](std::span<const nlohmann::json> o) {
      return devices::GpuDemandOf(o[0], cfg_.gpu_sharing.device_classes,
                                  cfg_.gpu_sharing.mig_device_classes);
    });
  }
  ++generation_;
}

void DeviceWorldCache::SetRule(const std::string& key, const nlohmann::json* obj) {
  {
    MutexLock lock(&mu_);
    Set(&rules_, key, obj,
        [](std::span<const nlohmann::json> o) { return devices::HeldDevices(o); });
    Set(&drains_, key, obj,
        [](std::span<const nlohmann::json> o) { return devices::DrainedDevices(o); });
  }
  ++generation_;
}

void DeviceWorldCache::SetPod(const std::string& key, const nlohmann::json* obj) {
  {
    MutexLock lock(&mu_);
    if (obj == nullptr) {
      pods_.erase(key);
    } else {
      PodEntry e;
      e.pod = key;
      if (obj->contains("spec") && (*obj)["spec"].contains("nodeName") &&
          (*obj)["spec"]["nodeName"].is_string()) {
        e.node = (*obj)["spec"]["nodeName"].get<std::string>();
      }
      if (const auto m = obj->find("metadata"); m != obj->end() && m->is_object()) {
        if (const auto u = m->find("uid"); u != m->end() && u->is_string()) e.uid = *u;
      }
      e.pending = devices::PendingCandidateOf(*obj, cfg_.gpu_sharing.extended_resource,
                                              cfg_.lending.inference_threshold,
                                              cfg_.gpu_sharing.mig_extended_resource_prefix);
      pods_[key] = std::move(e);
    }
  }
  ++generation_;
}

std::string DeviceWorldCache::PodUid(const std::string& pod) const {
  MutexLock lock(&mu_);
  auto it = pods_.find(pod);
  return it != pods_.end() ? it->second.uid : "";
}

devices::World DeviceWorldCache::Build(std::vector<slurm::NodeView> slurm_nodes,
                                       std::vector<slurm::JobView> jobs,
                                       std::map<std::string, devices::PairedNode> paired) const {
  devices::World w;
  w.slurm_nodes = std::move(slurm_nodes);
  w.jobs = std::move(jobs);
  w.paired = std::move(paired);
  MutexLock lock(&mu_);
  w.slices = slices_;
  w.unreadable = unreadable_;
  for (const auto& [key, by_node] : claims_) {
    for (const auto& [node, list] : by_node) {
      auto& out = w.claims[node];
      out.insert(out.end(), list.begin(), list.end());
    }
  }
  for (const auto& [key, by_node] : rules_) {
    for (const auto& [node, devs] : by_node) w.held[node].insert(devs.begin(), devs.end());
  }
  for (const auto& [key, by_node] : drains_) {
    for (const auto& [node, devs] : by_node) w.drained[node].insert(devs.begin(), devs.end());
  }
  for (const auto& [key, e] : pods_) {
    w.pod_node[e.pod] = e.node;
    if (!e.uid.empty()) w.pod_uid[e.pod] = e.uid;
    if (!e.pending) continue;
    std::string why;
    if (auto p = devices::CountGpus(*e.pending, demands_, &why)) {
      w.pending.push_back(std::move(*p));
    } else if (!why.empty()) {
      w.not_counted[e.pod] = std::move(why);
    }
  }
  std::stable_sort(w.pending.begin(), w.pending.end(),
                   [](const devices::PendingPod& a, const devices::PendingPod& b) {
                     return a.priority > b.priority;
                   });
  return w;
}

}  // namespace skb::bridge

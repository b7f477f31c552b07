// SPDX-License-Identifier: Apache-2.0
// The Kubernetes half of the GPU-granular lane's World, kept current by informer handlers:
// each object is converted once when it changes (devices/k8s_devices.h), and a pass joins
// the converted pieces with Slurm's view (Build). Thread-safe.
//
//   DeviceWorldCache cache(cfg);
//   slices informer: on add/update cache.SetSlice(key, &obj); on delete cache.SetSlice(key,
//   nullptr) devices::World w = cache.Build(slurm_nodes, jobs, paired);
#pragma once

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/base/thread_annotations.h"
#include "src/config/config.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/observe.h"

namespace skb::bridge {

class DeviceWorldCache {
 public:
  explicit DeviceWorldCache(const config::Config& cfg) : cfg_(cfg) {}

  // `obj` null: the object is gone.
  void SetSlice(const std::string& key, const nlohmann::json* obj);
  void SetClaim(const std::string& key, const nlohmann::json* obj);
  void SetRule(const std::string& key, const nlohmann::json* obj);
  void SetPod(const std::string& key, const nlohmann::json* obj);

  devices::World Build(std::vector<slurm::NodeView> slurm_nodes, std::vector<slurm::JobView> jobs,
                       std::map<std::string, devices::PairedNode> paired) const;
  // A live pod's ("ns/name") metadata.uid, "" when not known.
  std::string PodUid(const std::string& pod) const;
  // Bumped by every change (the device worker passes again when it moved).
  uint64_t Generation() const { return generation_.load(); }

 private:
  struct PodEntry {
    std::string pod;   // "ns/name"
    std::string node;  // spec.nodeName ("" unscheduled)
    std::string uid;   // metadata.uid
    // A give's trigger once its claims are counted (Build: devices::CountGpus).
    std::optional<devices::PendingCandidate> pending;
  };
  const config::Config& cfg_;
  mutable Mutex mu_;
  // ResourceSlices by node and informer key, as stored; each slice's node; and what they
  // merge to per node (or why a node's pool cannot be read).
  std::map<std::string, std::map<std::string, nlohmann::json>> slice_objs_ GUARDED_BY(mu_);
  std::map<std::string, std::string> slice_node_ GUARDED_BY(mu_);
  std::map<std::string, std::vector<devices::SliceDevice>> slices_ GUARDED_BY(mu_);
  std::map<std::string, std::string> unreadable_ GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, std::vector<devices::Claim>>> claims_ GUARDED_BY(mu_);
  // What each claim ("ns/name") asks of the GPU DeviceClasses: pending pods' demand.
  std::map<std::string, devices::ClaimDemand> demands_ GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, std::set<std::string>>> rules_ GUARDED_BY(mu_);
  // Admins' drains of one GPU (devices::DrainedDevices), by rule: pool -> device -> reason.
  std::map<std::string, std::map<std::string, std::map<std::string, std::string>>> drains_
      GUARDED_BY(mu_);
  std::map<std::string, PodEntry> pods_ GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{0};
};

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// What the src/ownership tests share: one fixed "now", a config with lending on, a running
// job, and a node both schedulers know (8 GPUs, no reservation yet).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/time_codec.h"
#include "src/slurm/types.h"

namespace skb::ownership::test_support {

inline const Clock::TimePoint kNow = FromUnix(1'700'000'000);
inline constexpr char kNs[] = "slurm-bridge";

inline config::Config Cfg() {
  config::Config cfg;
  cfg.lending.enabled = true;
  cfg.lending.namespace_name = kNs;
  return cfg;
}

inline slurm::JobView Job(uint32_t id, bool preemptible = true) {
  slurm::JobView j;
  j.job_id = id;
  j.state = slurm::JobState::kRunning;
  j.requeue = true;
  j.gpus_per_node = 8;
  j.user_name = "alice";
  j.account = "ml";
  j.start_time = ToUnix(kNow - std::chrono::minutes(30));
  j.admin_comment = preemptible ? "k8s-bridge:preemptible=true" : "k8s-bridge:preemptible=false";
  j.nodes = {"node1"};
  return j;
}

// A running, requeueable 8-GPU job with `admin_comment` and nothing else: what the lending
// policy reads, without the user, node and start time of Job().
inline slurm::JobView PolicyJob(uint32_t id,
                                std::string admin_comment = "k8s-bridge:preemptible=true") {
  slurm::JobView j;
  j.job_id = id;
  j.state = slurm::JobState::kRunning;
  j.requeue = true;
  j.gpus_per_node = 8;
  j.admin_comment = std::move(admin_comment);
  return j;
}

inline inventory::ManagedNode BareNode() {
  inventory::ManagedNode n;
  n.name = "node1";
  inventory::K8sNode k;
  k.name = "node1";
  k.conditions = {{"Ready", "True", "KubeletReady", "", kNow - std::chrono::hours(1)}};
  k.gpu_capacity = k.gpu_allocatable = 8;
  n.k8s = k;
  slurm::NodeView s;
  s.name = "node1";
  s.base_state = slurm::NodeBaseState::kIdle;
  s.gpus = {{"h100", 8}};
  n.slurm = s;
  return n;
}

}  // namespace skb::ownership::test_support

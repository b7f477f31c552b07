// SPDX-License-Identifier: Apache-2.0
// What the node-ownership planner reads from one node, derived once (Observe) before any
// flow runs: the node's reservation pod and the other GPU pods on it, the Slurm jobs that
// hold it, and the records the bridge keeps on the Kubernetes node (internal/records.h),
// read back and checked. Internal to src/ownership (see internal/records.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/lending_config.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership::internal {

// When a job got its checkpoint signal, as the signalled-at annotation records it: to the
// millisecond ("12:1700000000.250", what the bridge writes), or in whole seconds
// ("12:1700000000", what 0.1.0 wrote), whose grace counts from the second after the stamp
// (GraceEnds).
struct SignalledAt {
  Clock::TimePoint at;
  bool exact = false;  // recorded to the millisecond

  friend bool operator==(const SignalledAt&, const SignalledAt&) = default;
};
using Signalled = std::map<uint32_t, SignalledAt>;

// Everything the planner reads from one node, derived once.
struct Facts {
  const inventory::ManagedNode* node = nullptr;
  const config::Config* cfg = nullptr;
  const LendingConfig* lending = nullptr;
  Clock::TimePoint now{};
  // lending.reservation_update_interval, or the caller's floor when that is longer.
  Clock::Duration update_interval{};
  const inventory::K8sNode* k8s_node = nullptr;
  const slurm::NodeView* slurm_node = nullptr;

  std::string reservation_namespace;
  std::string reservation_name;
  const inventory::GpuPod* reservation = nullptr;    // ours (a terminating one first)
  std::vector<const inventory::GpuPod*> extra_ours;  // more of ours on the node (should not happen)
  const inventory::GpuPod* foreign = nullptr;        // the reservation's name, not ours
  std::vector<const inventory::GpuPod*> k8s_pods;    // non-terminal GPU pods that are not ours
  std::vector<const inventory::GpuPod*> nominated;   // pending pods nominated to this node
  std::vector<const slurm::JobView*> jobs;           // holding the node

  bool lend_drain =
      false;  // Slurm drain with the bridge's lend reason (slurm::DrainOrigin::kBridgeLend)
  bool admin_drain = false;  // Slurm drain by anyone but the bridge
  std::optional<Clock::TimePoint> lent_at;
  bool lent_at_garbled = false;  // present but unreadable or in the future (read as `now`)
  // The other time records found garbled (TimeAnnotation), read as `now`, and what writes
  // them again (Planner::Run, first): "key ('value')" each, and the patch.
  std::string garbled;
  plan::AnnotationPatch repair;
  std::string lent_to;
  std::optional<Clock::TimePoint> idle_since;
  std::optional<Clock::TimePoint> lend_refused_at;
  Signalled signalled;
  std::string lend_blocked;
  std::string return_blocked;
  bool swap_taint = false;
  bool swap_guard = false;  // the swap-guard label (kSwapGuardLabel) is on the node
  bool busy_taint = false;
  bool healthy = true;
  std::string unhealthy_why;

  bool lent() const { return lent_at.has_value() || lend_drain; }
};

// `node` must have both sides (k8s and slurm). `min_update_interval`: as for PlanOwnership.
Facts Observe(const inventory::ManagedNode& node, const config::Config& cfg, Clock::TimePoint now,
              Clock::Duration min_update_interval);

}  // namespace skb::ownership::internal

// SPDX-License-Identifier: Apache-2.0
// Health planning for one node: which Kubernetes signals are bad right now, and what that
// means for the Slurm node and for the conditions the bridge publishes on the Kubernetes
// node. Pure: a function of (node, config, now); running it twice on the same input gives
// the same actions, and once they are carried out it gives none (idempotence).
//
//   NodePlan plan = PlanNodeHealth(node, cfg.health, clock.Now());
//   for (const plan::Action& a : plan.actions) executor.Run(a);
//   if (plan.recheck_at) queue.AddAt(node.name, *plan.recheck_at);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/health/health_config.h"
#include "src/inventory/managed_node.h"
#include "src/plan/action.h"
#include "src/plan/node_plan.h"

namespace skb::health {

// A bad signal on the Kubernetes node.
struct Signal {
  std::string rule;         // "condition GPUHealthy", "taint nvidia.com/gpu.health", "cordon", ...
  std::string description;  // "GPUHealthy=False: XID 79 on GPU 3"
  Severity severity = Severity::kDrain;
  // For a condition rule with a grace: when it fires (or fired).
  std::optional<Clock::TimePoint> fires_at;
};

struct HealthVerdict {
  std::vector<Signal> firing;   // most severe first
  std::vector<Signal> pending;  // bad, but still within their grace period
  // The maintenance condition is True; `maintenance_since` is its lastTransitionTime.
  bool maintenance = false;
  Clock::TimePoint maintenance_since{};
};

// Evaluates the health rules on a Kubernetes node.
HealthVerdict AssessHealth(const inventory::K8sNode& node, const HealthConfig& cfg,
                           Clock::TimePoint now);

using NodePlan = plan::NodePlan;

NodePlan PlanNodeHealth(const inventory::ManagedNode& node, const HealthConfig& cfg,
                        Clock::TimePoint now);

// The slice of PlanNodeHealth the status lane writes: the node conditions that mirror
// Slurm's view (kSetNodeCondition actions only; the same ones PlanNodeHealth plans).
NodePlan PlanNodeConditions(const inventory::ManagedNode& node, const HealthConfig& cfg,
                            Clock::TimePoint now);

// "45s", "12m", "3h": a duration as the health messages give it.
std::string FormatDuration(Clock::Duration d);

// "k8s-bridge: <text>" made safe for a Slurm reason: control characters replaced, at most
// kMaxReasonBytes bytes (cut on a UTF-8 character boundary, "..." appended).
inline constexpr size_t kMaxReasonBytes = 200;
std::string SlurmReason(std::string_view text);

// A condition message made safe for Kubernetes: control characters replaced, at most
// 1,024 bytes.
std::string ConditionMessage(std::string_view text);

// The write that makes a node's condition `cur` (nullptr: the node has none of that type)
// say `want` (its message made safe by ConditionMessage): nullopt when it says so already
// (status, reason and message); else `want` with its transition time: now when the status
// changes, `cur`'s kept when only the words do (kUnknown when the cache holds no readable
// time: the executor reads the node).
std::optional<plan::ConditionSpec> ConditionUpdate(const inventory::NodeCondition* cur,
                                                   plan::ConditionSpec want);

}  // namespace skb::health

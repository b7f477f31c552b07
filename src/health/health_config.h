// SPDX-License-Identifier: Apache-2.0
// Which Kubernetes signals make a GPU node unfit for Slurm work, and how the bridge shows
// Slurm's own view of a node back in Kubernetes. Part of the bridge config ("health").
//
//   "health": {
//     "conditions": [
//       {"type": "Ready", "bad_status": ["False", "Unknown"], "grace": "60s", "severity": "down"},
//       {"type": "GPUHealthy", "bad_status": ["False"]}
//     ],
//     "taints": [{"key": "nvidia.com/gpu.health", "value": "unhealthy"}],
//     "cordon": "drain",
//     "maintenance": {"condition": "MaintenanceRequested", "deadline": "1h",
//                     "reboot": {"condition": "RebootRequested", "by": "slurm", "timeout": "30m"},
//                     "drain_timeout": "2h",
//                     "check": {"command": "/usr/sbin/nhc", "timeout": "10m"}},
//     "slurm_conditions": true
//   }
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/config/json_reader.h"

namespace skb::health {

// What a firing signal does to the Slurm node.
enum class Severity {
  kDrain,    // no new jobs; running jobs finish
  kDownNow,  // no new jobs and running jobs are requeued at once
};

std::string_view SeverityName(Severity s);

// A node condition that is bad when its status is one of `bad_status` for at least `grace`
// (measured from the condition's lastTransitionTime).
struct ConditionRule {
  std::string type;
  std::vector<std::string> bad_status = {"False"};
  std::chrono::milliseconds grace{0};
  Severity severity = Severity::kDrain;
};

// A taint that is bad when present with this key (and value, if given; and one of
// `effects`, if given).
struct TaintRule {
  std::string key;
  std::optional<std::string> value;
  std::vector<std::string> effects;
  Severity severity = Severity::kDrain;
};

struct HealthConfig {
  std::vector<ConditionRule> conditions = {
      {"Ready", {"False", "Unknown"}, std::chrono::seconds(60), Severity::kDownNow},
      {"GPUHealthy", {"False"}, std::chrono::milliseconds(0), Severity::kDrain},
  };
  std::vector<TaintRule> taints = {
      {"nvidia.com/gpu.health", std::string("unhealthy"), {}, Severity::kDrain},
  };
  // A cordoned node (spec.unschedulable) is drained in Slurm; nullopt = ignore cordons.
  std::optional<Severity> cordon = Severity::kDrain;
  // The condition an admin or remediation controller sets to ask for maintenance; the
  // node is drained, jobs get until `maintenance_deadline` (from the condition's
  // lastTransitionTime) to finish, then are requeued.
  std::string maintenance_condition = "MaintenanceRequested";
  std::chrono::milliseconds maintenance_deadline = std::chrono::hours(1);
  // The maintenance cycle (src/health/maintenance.h): the condition that asks for a reboot
  // of the node, which the bridge drains both schedulers for, has rebooted, checks and gives
  // back. "" turns the cycle off.
  std::string reboot_condition = "RebootRequested";
  // Who reboots: Slurm (scontrol reboot: the site's RebootProgram), or the site's own
  // remediation once the node is drained (the bridge waits for Slurm's BootTime to move).
  enum class RebootBy { kSlurm, kSite };
  RebootBy reboot_by = RebootBy::kSlurm;
  std::chrono::milliseconds drain_timeout = std::chrono::hours(2);  // > maintenance_deadline
  std::chrono::milliseconds reboot_timeout = std::chrono::minutes(30);
  // The check job's command (run by /bin/sh -c on the node, inside the maintenance
  // reservation, with the whole node); exit 0 passes. "" = no check: the node is given back
  // once it has rebooted.
  std::string check_command;
  std::chrono::milliseconds check_timeout = std::chrono::minutes(10);
  // Publish Slurm's view as the SlurmNodeHealthy and SlurmDrained node conditions.
  bool slurm_conditions = true;
};

// The condition `bridgectl drain` sets (status True, reason kBridgectlDrainReason, the
// admin's text as message) and `bridgectl undrain` removes. Built in, whatever the
// configured rules: True drains the Slurm node (running jobs finish), like a rule with
// severity drain. Anyone may set it; bridgectl undrain only clears its own.
inline constexpr std::string_view kDrainRequestedCondition = "DrainRequested";
inline constexpr std::string_view kBridgectlDrainReason = "BridgectlDrain";

// Condition types the bridge itself writes: never accepted as health rules (a rule on them
// would feed the bridge's own output back into its input).
inline constexpr std::string_view kSlurmHealthyCondition = "SlurmNodeHealthy";
inline constexpr std::string_view kSlurmDrainedCondition = "SlurmDrained";
// On a node shared GPU by GPU: False while the GPU driver taints any of its GPUs for their
// health (the message counts and names them), True otherwise. Not `GPUHealthy`: that one
// is an input (a DCGM exporter or Node Problem Detector sets it) whose default rule drains
// the whole node, while a bad GPU here leaves both schedulers alone.
inline constexpr std::string_view kGpuDevicesHealthyCondition = "GPUDevicesHealthy";
// The maintenance cycle's record (src/health/maintenance.h).
inline constexpr std::string_view kMaintenanceConditionType = "SlurmMaintenance";
// One of the four above (the decommission removes them from every node).
bool IsBridgeCondition(std::string_view type);

// Reads the "health" section. Absent keys keep the defaults above; a present "conditions"
// or "taints" list replaces the default list.
Status ReadHealthConfig(config::JsonReader reader, HealthConfig* out);

}  // namespace skb::health

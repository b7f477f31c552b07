// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle of one node: an admin (or a remediation controller) sets the
// Kubernetes node condition `RebootRequested=True`; the bridge drains both schedulers, has
// the node rebooted, runs a check job on it through Slurm, and only when the check passes
// gives the node back to both. Pure: a function of (node, config, now), like
// PlanNodeHealth, which calls it while a cycle is under way.
//
// The cycle's only record is the node condition the bridge writes, `SlurmMaintenance`:
// status True while a cycle runs, its reason the phase, its lastTransitionTime the phase's
// start (written anew at each phase), its message what the phase waits for. A restarted
// bridge reads the phase back from it, and Slurm's own state (the node's BootTime, the
// reservation, the check job) says how far the phase got.
//
//   phase       what the bridge does                              leaves when
//   Draining    Slurm drain; taint slurm-k8s-bridge.io/maintenance no Slurm job and no GPU pod
//               (NoSchedule) on the Kubernetes node; GPU pods     on the node (Rebooting), or
//               evicted (PodDisruptionBudgets honoured: a         drain_timeout (DrainTimedOut)
//               refused eviction is retried); Slurm jobs get
//               maintenance.deadline, then are requeued
//   Rebooting   by=slurm: `scontrol reboot ASAP nextstate=DOWN`    slurmd registers with a
//               (the site's RebootProgram); by=site: nothing,     BootTime after the phase
//               the site's remediation reboots                    began (Checking), or
//                                                                 reboot.timeout (RebootTimedOut)
//   Checking    reservation skb-maint-NODE (MAINT, the bridge's   the check job ends: exit 0
//               user only), the node resumed into it, the check   (Completed), else
//               job submitted inside it                           (CheckFailed); no result by
//                                                                 check.timeout + 2 min
//                                                                 (CheckFailed)
//   Completed   reservation deleted, taint removed, the request closed (RebootRequested=False,
//   (False)     reason MaintenanceCompleted): the node serves both schedulers again
//
// A failed phase (DrainTimedOut, RebootTimedOut, CheckFailed) keeps the node drained in
// Slurm and tainted in Kubernetes, and says why in the condition and a Warning Event. A
// retry is `bridgectl maintenance retry NODE` (the cycle starts again at Draining); clearing
// the request instead gives the node back as it is. A request withdrawn while Draining
// stops the cycle (Cancelled); once the reboot is asked for, the cycle runs to its end.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/base/clock.h"
#include "src/health/health_config.h"
#include "src/inventory/managed_node.h"
#include "src/plan/node_plan.h"

namespace skb::health {

// The condition the bridge writes (in IsBridgeCondition) and its phases (its reasons).
inline constexpr std::string_view kMaintenanceCondition = kMaintenanceConditionType;
inline constexpr std::string_view kPhaseDraining = "Draining";
inline constexpr std::string_view kPhaseRebooting = "Rebooting";
inline constexpr std::string_view kPhaseChecking = "Checking";
inline constexpr std::string_view kPhaseCompleted = "Completed";  // status False
inline constexpr std::string_view kPhaseCancelled = "Cancelled";  // status False
inline constexpr std::string_view kPhaseDrainTimedOut = "DrainTimedOut";
inline constexpr std::string_view kPhaseRebootTimedOut = "RebootTimedOut";
inline constexpr std::string_view kPhaseCheckFailed = "CheckFailed";
// The reason the bridge closes the request with (RebootRequested=False).
inline constexpr std::string_view kRequestClosedReason = "MaintenanceCompleted";
// The Kubernetes taint that keeps new pods off the node during the cycle.
inline constexpr std::string_view kMaintenanceTaintKey = "slurm-k8s-bridge.io/maintenance";
// The check job's name, and the reservation's name for a node ("skb-maint-node3").
using slurm::kMaintenanceCheckJobName;
std::string MaintenanceReservationName(std::string_view node);

// Where a node's cycle stands, read from its conditions.
struct MaintenanceState {
  bool requested = false;          // the reboot condition is True
  std::string phase;               // the SlurmMaintenance reason ("" without one)
  bool running = false;            // SlurmMaintenance is True (a phase or a failure)
  Clock::TimePoint phase_since{};  // its lastTransitionTime
  std::string request_message;     // the request condition's message
  bool Active() const { return requested || running; }
  bool Failed() const;  // running, in a failed phase
};
MaintenanceState ReadMaintenanceState(const inventory::K8sNode& node, const HealthConfig& cfg);

// The cycle's plan for a node whose MaintenanceState is Active(). `verdict` is the node's
// health verdict (AssessHealth): a node that has another firing signal when its check
// passes is drained for that signal instead of given back. Every action carries
// Cause::kMaintenance.
plan::NodePlan PlanMaintenance(const inventory::ManagedNode& node, const HealthConfig& cfg,
                               const struct HealthVerdict& verdict, Clock::TimePoint now);

}  // namespace skb::health

// SPDX-License-Identifier: Apache-2.0
// `bridgectl maintenance reboot|retry|cancel`: an admin's side of the maintenance cycle
// (src/health/maintenance.h), as Kubernetes node conditions. `reboot` sets the request
// (RebootRequested=True, the daemon's health.maintenance.reboot.condition); the daemon
// drains both schedulers, has Slurm reboot the node, runs the check job and gives the node
// back, recording its phase in SlurmMaintenance. `retry` starts a failed cycle again from
// Draining; `cancel` withdraws the request.
//
//   ASSIGN_OR_RETURN(MaintenanceChange r,
//                    RequestReboot(kube, "node3", "RebootRequested", "new firmware", who, now));
//   ASSIGN_OR_RETURN(MaintenanceChange r, RetryMaintenance(kube, "node3", who, now));
//   ASSIGN_OR_RETURN(MaintenanceChange r, CancelReboot(kube, "node3", "RebootRequested", who,
//   now));
//
// bridgectl writes Kubernetes itself, with the admin's own kubeconfig, as drain does
// (node_drain.h): the apiserver authorizes and audits the person, the daemon's socket gains
// no write power, and a request made while the daemon is down is acted on once it is back.
#pragma once

#include <string>
#include <string_view>

#include "bridge/cli/args.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"

namespace skb::bridge::cli {

// The reasons bridgectl writes on the request condition: set by `maintenance reboot`, and
// withdrawn by `maintenance cancel` (status False).
inline constexpr std::string_view kBridgectlMaintenanceReason = "BridgectlMaintenance";
inline constexpr std::string_view kBridgectlMaintenanceCancelledReason =
    "BridgectlMaintenanceCancelled";
// The daemon's default request condition (health.maintenance.reboot.condition).
inline constexpr std::string_view kDefaultRebootCondition = "RebootRequested";

// What a maintenance command did, and where the cycle stood when it did.
struct MaintenanceChange {
  bool changed = false;  // false: the node already said so
  // SlurmMaintenance's reason while it is True (a phase, or a failed one: retry's is the
  // phase retried); "" when no cycle runs.
  std::string phase;
};

// Sets `condition`=True (reason BridgectlMaintenance, message "<reason> (bridgectl
// maintenance by <who>)") on the Kubernetes node `node`; lastTransitionTime stays when it
// already was True. changed is false when bridgectl asked already with these words.
// NotFound: no such node. FailedPrecondition: the condition is already True with another
// reason (someone else's request: left alone), or SlurmMaintenance is True: a cycle is under
// way (its phase named) or has failed (retry or cancel it). InvalidArgument: empty reason or
// condition.
StatusOr<MaintenanceChange> RequestReboot(k8s::KubeClient& kube, const std::string& node,
                                          const std::string& condition, const std::string& reason,
                                          const std::string& who, Clock::TimePoint now);

// Starts a failed cycle again: SlurmMaintenance (True, reason DrainTimedOut, RebootTimedOut
// or CheckFailed) becomes True, reason Draining, lastTransitionTime `now`, message "retry by
// <who> after <phase>: <its message>". The JSON patch tests the condition's type, status and
// reason at its index, so a write of the daemon's in between is not overwritten; a moved
// index is read again. changed is always true; phase is the failed phase retried.
// FailedPrecondition: no cycle on the node, or one still running (its phase named).
// Aborted: the node's conditions kept changing under it (retry).
StatusOr<MaintenanceChange> RetryMaintenance(k8s::KubeClient& kube, const std::string& node,
                                             const std::string& who, Clock::TimePoint now);

// Withdraws bridgectl's request: `condition` (True, reason BridgectlMaintenance) becomes
// False, reason BridgectlMaintenanceCancelled, message "cancelled by <who>: <its message>",
// by a JSON patch testing type, status and reason at its index (as RetryMaintenance).
// changed is false when there was no request by bridgectl to withdraw. phase says how the
// daemon takes it: Draining (or none) stops the cycle, a later phase runs to its end (the
// reboot is already asked for), a failed one gives the node back as it is.
// FailedPrecondition: the condition is True from someone else (left alone). Aborted: as
// RetryMaintenance.
StatusOr<MaintenanceChange> CancelReboot(k8s::KubeClient& kube, const std::string& node,
                                         const std::string& condition, const std::string& who,
                                         Clock::TimePoint now);

// The maintenance command `c` (kMaintenanceReboot, kMaintenanceRetry, kMaintenanceCancel) on
// c.name, with c.condition and c.reason; `who` as "alice@login1".
StatusOr<MaintenanceChange> RunMaintenance(k8s::KubeClient& kube, const Command& c,
                                           const std::string& who, Clock::TimePoint now);
// What bridgectl prints for its result: one line saying what changed and what the bridge
// does next.
std::string MaintenanceOutcome(const Command& c, const MaintenanceChange& change);
// "maintenance reboot node3", for error messages.
std::string MaintenanceCommandLine(const Command& c);

// Whether SlurmMaintenance's reason is a phase that runs (Draining, Rebooting, Checking) or
// one that failed (DrainTimedOut, RebootTimedOut, CheckFailed).
bool IsRunningMaintenancePhase(std::string_view phase);
bool IsFailedMaintenancePhase(std::string_view phase);

// A condition type --condition may name: a Kubernetes qualified name ("RebootRequested",
// "example.com/Reboot"), not one the bridge writes itself (SlurmMaintenance, ...) nor
// DrainRequested (bridgectl drain's). "" when it may, else why not.
std::string RequestConditionProblem(std::string_view type);

}  // namespace skb::bridge::cli

// SPDX-License-Identifier: Apache-2.0
// How the bridge lends Slurm nodes to Kubernetes and takes them back: the "lending" section
// of the bridge config (docs/architecture.md "Node ownership"; every key is listed in README.md).
//
//   "lending": {
//     "enabled": true,
//     "priority_classes": {"idle": {"name": "slurm-idle", "value": 1000}, ...},
//     "checkpoint_signal": "USR1", "default_grace": "60s", "max_grace": "10m",
//     "preemption": {"default": "requeue", "partitions": {"debug": "cancel"}},
//     "cooldown": "2m", "min_lend_time": "5m",
//     "anti_thrash": {"max_preemptions": 3, "window": "6h"}
//   }
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "src/base/status.h"
#include "src/config/json_reader.h"
#include "src/plan/action.h"

namespace skb::ownership {

// A PriorityClass the bridge gives reservation pods (created by the Helm chart).
struct PriorityClassRef {
  std::string name;
  int32_t value = 0;
  friend bool operator==(const PriorityClassRef&, const PriorityClassRef&) = default;
};

// The GPU resource the bridge reads and requests. lending.gpu_resource accepts only this
// until the readers (pods, nodes, the inventory) take the name from the config.
inline constexpr char kSupportedGpuResource[] = "nvidia.com/gpu";

struct LendingConfig {
  // Off by default: lending creates pods and needs the PriorityClasses to exist (the chart
  // turns it on).
  bool enabled = false;
  // Namespace of the reservation pods; empty = kubernetes.namespace (resolved by
  // config::ParseConfig, so readers always see a name).
  std::string namespace_name;
  // Reservation pod name; "{node}" is replaced by the Slurm node name.
  std::string name_pattern = "reserve-{node}";
  // The container of a reservation pod: it must keep running (ignore SIGTERM) until the
  // bridge annotates the pod released. The planner supplies the command (a shell loop
  // over a downward-API file), so the image needs /bin/sh, grep and sleep.
  std::string image = "busybox:1.36";
  // The bridge's own URL for a reservation being deleted to ask whether it is released
  // (http://HOST:PORT/reservation-released; the image then needs wget too). A kubelet stops
  // projecting a terminating pod's downward-API files, and a second delete with a shorter
  // grace does not cut short the stop already under way, so the released annotation never
  // reaches the container of a reservation kube-scheduler preempted: it would hold its GPUs
  // for its whole termination grace. Empty: the annotation alone (kwok projects it).
  std::string release_url;
  // The extended resource the reservation requests (all of the node's allocatable).
  std::string gpu_resource = kSupportedGpuResource;  // the only value accepted

  // Reservation classes: an idle node is the cheapest victim; a node whose jobs are all
  // preemptible is below `inference_threshold`; a node with any non-preemptible (or
  // anti-thrash protected) job is at `protected_class`, above every inference pod.
  PriorityClassRef idle_class{"slurm-idle", 1000};
  PriorityClassRef preemptible_class{"slurm-preemptible", 2000};
  PriorityClassRef protected_class{"slurm-protected", 1'000'000'000};
  // Pods at or above this priority may take preemptible Slurm nodes (documentation for
  // the PriorityClasses of inference workloads; validated to sit between the classes).
  int32_t inference_threshold = 100'000;

  // The checkpoint signal jobs get when their node is lent, unless they asked for their
  // own with --signal; and how long they get before being preempted (a job's own
  // --signal=SIG@SECS uses SECS). Both capped by max_grace.
  int checkpoint_signal = 10;  // SIGUSR1
  std::chrono::milliseconds default_grace = std::chrono::seconds(60);
  std::chrono::milliseconds max_grace = std::chrono::minutes(10);
  // Time after the grace for the preemption and Slurm's cleanup (epilog, COMPLETING).
  std::chrono::milliseconds release_timeout = std::chrono::minutes(5);
  // How long the bridge may be away during a lend (crash loop, leader failover, apiserver
  // outage, a backlog of rate-limited writes) without the reservation's kill deadline
  // coming first. At least one leader failover (config::ParseConfig checks it against
  // leader_election). See ReservationGrace.
  std::chrono::milliseconds outage_allowance = std::chrono::hours(1);

  // What preemption does to a job: by QOS first, then partition, then `default_mode`.
  plan::JobPreemptMode default_mode = plan::JobPreemptMode::kRequeue;
  std::map<std::string, plan::JobPreemptMode, std::less<>> partition_modes;
  std::map<std::string, plan::JobPreemptMode, std::less<>> qos_modes;

  // Return to Slurm: no Kubernetes GPU pod on the node for `cooldown`, and lent for at
  // least `min_lend_time`.
  std::chrono::milliseconds cooldown = std::chrono::minutes(2);
  std::chrono::milliseconds min_lend_time = std::chrono::minutes(5);

  // Anti-thrash: a job preempted more than `max_preemptions` times within `window` is
  // protected (its node's reservation gets the protected class).
  int64_t max_preemptions = 3;
  std::chrono::milliseconds preemption_window = std::chrono::hours(6);

  // At most one update of a reservation's job-list annotations per node per interval
  // (1,000 nodes / 60 s = 16.7 writes/s at most, whatever the job start rate).
  std::chrono::milliseconds reservation_update_interval = std::chrono::seconds(60);
  // Class changes that only affect which node Kubernetes prefers (idle <-> preemptible,
  // protected -> lower) replace the reservation only after the new class has been wanted
  // this long; a change *to* protected is immediate.
  std::chrono::milliseconds class_upgrade_delay = std::chrono::seconds(60);
  std::chrono::milliseconds class_downgrade_delay = std::chrono::minutes(5);
};

// The reservation pod's terminationGracePeriodSeconds: max_grace + release_timeout +
// outage_allowance. Past it the kubelet kills the reservation and Kubernetes stops counting
// its GPUs. A lend that starts at the deletion needs max_grace + release_timeout; one the
// bridge starts (or resumes) up to outage_allowance late still ends before the kill. The
// bridge taints the node NoSchedule (slurm-busy) once a signalled job outlives its grace,
// or near the kill deadline, while Slurm work remains (ownership.h).
std::chrono::milliseconds ReservationGrace(const LendingConfig& l);

// "USR1", "SIGUSR1", "10" -> 10. InvalidArgument for unknown names, numbers outside 1-64,
// and KILL/STOP (a job cannot catch them to checkpoint).
StatusOr<int> ParseSignal(std::string_view text);
// 10 -> "SIGUSR1"; a number without a name here -> "signal 42".
std::string SignalName(int number);
// "requeue", "requeue_hold", "cancel". InvalidArgument otherwise ("suspend" is refused with
// the reason: a suspended job keeps its GPU memory, so the node could never be lent).
StatusOr<plan::JobPreemptMode> ParsePreemptMode(std::string_view text);

// Reads the "lending" section. Absent keys keep the defaults above.
Status ReadLendingConfig(config::JsonReader reader, LendingConfig* out);

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
// Slurm's nodes, jobs and partitions as the core sees them: plain values, no libslurm.
//
// bridge/slurm/ fills these from libslurm (node_info_t, slurm_job_info_t,
// partition_info_t); the core and its tests build them by hand. Names follow Slurm's
// (`scontrol show node` / `show job`) so the mapping stays obvious.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skb::slurm {

// Seconds since the epoch, as Slurm reports times (0 = unset).
using UnixTime = int64_t;

// Every Slurm reason and user message the bridge writes starts with kBridgeMessagePrefix.
// A reason is the bridge's when it starts with kBridgeReasonPrefix (the space is not
// required: an admin's hand-typed "k8s-bridge:..." is read as the bridge's, as earlier
// releases did); the bridge resumes only those.
inline constexpr std::string_view kBridgeMessagePrefix = "k8s-bridge: ";
inline constexpr std::string_view kBridgeReasonPrefix = "k8s-bridge:";
// The maintenance cycle's check job (src/health/maintenance.h): the inventory keeps its
// record once it ended, for the verdict.
inline constexpr char kMaintenanceCheckJobName[] = "skb-maint-check";
// Drains made to lend a node to Kubernetes (the ownership state machine) rather than for
// health or maintenance: the health planner leaves them alone.
inline constexpr std::string_view kLendReasonPrefix = "k8s-bridge: lent to ";

// Who drained a node, read once from its reason: nobody (not drained), the bridge to lend
// it to Kubernetes, the bridge for another cause (health, maintenance), or someone else (an
// admin, a site's script, Slurm itself): the bridge never undoes those.
enum class DrainOrigin { kNone, kBridgeLend, kBridge, kOther };

// Slurm's base node state (NODE_STATE_BASE bits).
enum class NodeBaseState { kUnknown, kDown, kIdle, kAllocated, kError, kMixed, kFuture };

std::string_view NodeBaseStateName(NodeBaseState s);

// GPUs of one type on one node: "gpu:h100:8" -> {type "h100", count 8}. An untyped GPU
// ("gpu:8") has an empty type.
struct GpuCount {
  std::string type;
  int64_t count = 0;
  friend bool operator==(const GpuCount&, const GpuCount&) = default;
};

struct NodeView {
  std::string name;
  NodeBaseState base_state = NodeBaseState::kUnknown;
  // State flags (Slurm's NODE_STATE_* bits, decoded).
  bool drain = false;             // DRAIN (draining or drained)
  bool fail = false;              // FAIL
  bool not_responding = false;    // NOT_RESPONDING ('*' in sinfo)
  bool reboot_requested = false;  // REBOOT_REQUESTED: a reboot waits for the node to idle
  bool reboot_issued = false;     // REBOOT_ISSUED: the RebootProgram ran; not back yet
  UnixTime boot_time = 0;         // when the node last booted, as its slurmd reports (0: unknown)
  std::string reason;             // empty when none
  uint32_t reason_uid = 0;        // who set the reason (valid when reason is set)
  UnixTime reason_time = 0;
  std::string gres;                          // as Slurm prints it: "gpu:h100:8(S:0-1)"
  std::string gres_used;                     // "gpu:h100:2(IDX:0-1)"
  std::vector<GpuCount> gpus;                // parsed from gres
  std::vector<GpuCount> gpus_used;           // parsed from gres_used
  std::vector<std::string> features;         // available features
  std::vector<std::string> active_features;  // currently active features
  std::vector<std::string> partitions;

  int64_t TotalGpus() const;
  // The node booted again since a boot time read earlier. slurmd sends its boot time as now
  // less the uptime, cut to whole seconds, at every registration, so one boot reads up to a
  // second apart (seen: a node that did not reboot read one second later while its job ran);
  // a new boot shows only beyond that second.
  bool BootedSince(UnixTime earlier_boot_time) const { return boot_time > earlier_boot_time + 1; }
  // Drained, down or failing: Slurm places no new work here.
  bool Unavailable() const {
    return drain || fail || not_responding || base_state == NodeBaseState::kDown ||
           base_state == NodeBaseState::kFuture;
  }
  // The drain (or down) reason carries the bridge's prefix: the bridge set it.
  bool DrainedByBridge() const;
  // Who set the DRAIN flag (kNone without one).
  DrainOrigin DrainedBy() const;
  // "idle", "mixed+drain", "down*"...: Slurm's spelling, for messages.
  std::string StateString() const;
  friend bool operator==(const NodeView&, const NodeView&) = default;
};

enum class JobState {
  kPending,
  kRunning,
  kSuspended,
  kComplete,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory,
  kUnknown
};

std::string_view JobStateName(JobState s);

// What --signal asked for: `signal` sent `seconds` before the time limit; batch_only when
// "B:" was given (only the batch shell is signalled).
struct SignalSpec {
  int signal = 0;
  int seconds = 0;
  bool batch_only = false;
  friend bool operator==(const SignalSpec&, const SignalSpec&) = default;
};

struct JobView {
  uint32_t job_id = 0;
  uint32_t array_job_id = 0;   // 0 unless part of an array
  uint32_t array_task_id = 0;  // valid when array_job_id != 0 and the task is split out
  std::string array_task_str;  // pending array record: the tasks it still holds ("0-9")
  uint32_t het_job_id = 0;     // 0 unless part of a heterogeneous job
  uint32_t het_job_offset = 0;
  std::string name;  // the job name (--job-name)
  uint32_t user_id = 0;
  std::string user_name;
  std::string account;
  std::string qos;
  std::string partition;
  uint32_t priority = 0;  // 0 = held
  JobState state = JobState::kUnknown;
  bool completing = false;         // COMPLETING flag
  bool requeue_pending = false;    // REQUEUE flags: on its way back to PENDING
  std::string state_reason;        // "Resources", "JobHeldUser", ...
  std::vector<std::string> nodes;  // expanded node list (allocated nodes)
  // The nodes it must run on (--nodelist, expanded; pending jobs too, whose `nodes` is
  // empty) and the reservation it runs in (--reservation; "" for none).
  std::vector<std::string> required_nodes;
  std::string reservation;
  int64_t gpus_per_node = 0;  // allocated (running) or requested (pending) GPUs per node
  // Pending: the GPUs it asks over all its nodes (per node x nodes, or the per-job count);
  // 0 when unknown (then gpus_per_node is the demand).
  int64_t requested_gpus = 0;
  // The GPU GRES type: allocated on its first node (running), or asked for ("gpu:h100:2";
  // pending). "" when untyped: any type.
  std::string gpu_type;
  // Node -> the job's GPU GRES indices there (running jobs; "gpu:4(IDX:0-3)" -> {0,1,2,3}).
  std::map<std::string, std::vector<int64_t>> gpu_indices;
  // Node -> why its GRES string could not be read (the job's GPUs there are unknown, not
  // none: a node with such a job is not planned GPU by GPU).
  std::map<std::string, std::string> unreadable_gpus;
  UnixTime submit_time = 0;
  UnixTime start_time = 0;
  UnixTime end_time = 0;  // finished jobs: when; running: the time limit's end
  int exit_signal = 0;    // finished jobs: the signal that ended the batch script, or 0
  int exit_code = 0;      // finished jobs: the batch script's exit status (0 with a signal)
  bool requeue = false;   // may be requeued (--requeue / JobRequeue=1)
  bool batch = true;      // a batch job (sbatch); srun/salloc allocations are not, and
                          // Slurm refuses to requeue them
  uint32_t restart_count = 0;
  std::string admin_comment;
  std::optional<SignalSpec> signal;  // from the bridge's admission annotation

  bool Held() const { return state == JobState::kPending && priority == 0; }
  // The GPUs the job holds over all its nodes: each node's GRES indices where Slurm listed
  // them (a multi-node allocation need not be even: --gpus=5 -N2 may be 3 + 2), else
  // gpus_per_node (the first node's count) for that node.
  int64_t AllocatedGpus() const {
    if (gpu_indices.empty()) return gpus_per_node * static_cast<int64_t>(nodes.size());
    int64_t total = 0;
    for (const std::string& n : nodes) {
      const auto it = gpu_indices.find(n);
      total += it != gpu_indices.end() ? static_cast<int64_t>(it->second.size()) : gpus_per_node;
    }
    return total;
  }
  // Holds resources (CPUs, GPUs) on its nodes: running, suspended, or still completing (its
  // processes may be on the devices until the epilog ends).
  bool HoldsNodes() const {
    return state == JobState::kRunning || state == JobState::kSuspended || completing;
  }
  friend bool operator==(const JobView&, const JobView&) = default;
};

enum class PreemptMode { kOff, kCancel, kRequeue, kSuspend, kUnknown };

struct PartitionView {
  std::string name;
  PreemptMode preempt_mode = PreemptMode::kOff;
  bool gang = false;
  bool is_default = false;
  uint32_t priority_tier = 0;
  // MaxTime and DefaultTime in minutes; nullopt = UNLIMITED (MaxTime) or none (DefaultTime).
  std::optional<uint32_t> max_time_minutes;
  std::optional<uint32_t> default_time_minutes;
  std::vector<std::string> nodes;  // expanded
  friend bool operator==(const PartitionView&, const PartitionView&) = default;
};

}  // namespace skb::slurm

// SPDX-License-Identifier: Apache-2.0
// SlurmClient: everything the bridge reads from and writes to Slurm, as an interface so the
// core and the daemon can be tested with a fake. The real implementation is
// LibSlurmClient (libslurm_client.h).
//
// Reads are incremental: pass the update_time of the previous answer and an unchanged
// cluster costs one cheap RPC (changed == false, no data). Writes are idempotent and
// verified by re-reading: they return kUnchanged when Slurm was already in the wanted
// state and kChanged after the change is visible.
//
// Error codes (src/base/status.h): Unavailable - slurmctld down, busy or too slow (retry);
// NotFound - no such node or job; FailedPrecondition - not possible in the current state
// (e.g. resuming an admin's drain, signalling a pending job); PermissionDenied;
// InvalidArgument - the request itself is wrong.
//
//   auto nodes = client.LoadNodes(last.update_time);
//   if (nodes.ok() && nodes->changed) Publish(nodes->nodes);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/slurm/types.h"

namespace skb::bridge::slurm {

using skb::slurm::JobView;
using skb::slurm::NodeView;
using skb::slurm::PartitionView;
using skb::slurm::UnixTime;

template <typename T>
struct Loaded {
  // False when nothing changed since the update_time passed in: `items` is then empty.
  bool changed = false;
  // Pass this to the next call.
  UnixTime update_time = 0;
  std::vector<T> items;
};

enum class WriteOutcome { kChanged, kUnchanged };

// A placeholder job (GPU-granular sharing, docs/gpu-granular.md): holds `gpus` GPUs of
// `node` in Slurm for Kubernetes.
struct PlaceholderSpec {
  std::string node;
  int64_t gpus = 0;
  // The GRES type asked for ("gpu:<type>:<gpus>"): a MIG profile, or the whole GPUs' type
  // on a node with MIG slices; "" = any GPU ("gpu:<gpus>").
  std::string gres_type;
  std::string partition;  // devices::PlaceholderConfig: the placeholder partition
  std::string qos;        // "" = the account's default
  std::string account;    // "" = the submitting user's default
  // The placeholder's record (devices::FormatPlaceholderRecord): names the pod it is for.
  std::string admin_comment;
};
// What SubmitPlaceholder did: kChanged, it submitted `job_id`; kUnchanged, a placeholder of
// the same key (devices::PlaceholderKey: its pod, or a health hold's node, device and slot)
// already existed and `job_id` is that one.
struct PlaceholderSubmission {
  uint32_t job_id = 0;
  WriteOutcome outcome = WriteOutcome::kChanged;
};

// The maintenance cycle's check job (src/health/maintenance.h): a batch job that runs
// `command` on exactly `node` inside the Slurm reservation `reservation`, with the whole
// node (--exclusive, every GPU of it: `gpus`, 0 for none), --time `time_limit_minutes`,
// --no-requeue, named health::kMaintenanceCheckJobName, output to `output` ("" =
// /dev/null). Its exit code is the verdict.
struct CheckJobSpec {
  std::string node;
  std::string reservation;
  std::string command;  // run by /bin/sh -c
  int64_t gpus = 0;
  int64_t time_limit_minutes = 10;
  std::string output;
  std::string partition;  // "" = Slurm's default partition
  // A check job on the node submitted at or after this Unix time counts as there already,
  // in any state; 0: only a pending or running one.
  int64_t submitted_since = 0;
};
// Whether a check job on the node counts as there already for SubmitCheckJob: pending or
// running (`live`), or submitted at or after `submitted_since` (when that is set).
inline bool CheckJobCounts(bool live, int64_t submit_time, int64_t submitted_since) {
  return live || (submitted_since > 0 && submit_time >= submitted_since);
}
// What SubmitCheckJob did: kChanged, it submitted `job_id`; kUnchanged, a check job on that
// node already existed (pending or running, or since `submitted_since`) and `job_id` is it.
struct CheckJobSubmission {
  uint32_t job_id = 0;
  WriteOutcome outcome = WriteOutcome::kChanged;
};

// A maintenance reservation (scontrol create reservation Flags=MAINT,IGNORE_JOBS): from now
// for `minutes`, on exactly `node`, usable only by `user` (the bridge's own user name).
// Nothing else starts on the node while it lasts; the check job runs inside it.
struct MaintenanceReservationSpec {
  std::string name;
  std::string node;
  std::string user;
  int64_t minutes = 15;
};

enum class SignalScope {
  kBatchStep,  // the batch shell only (scancel --batch)
  kSteps,      // every step except the batch shell
  kFullJob,    // the batch shell and every step (scancel --full)
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;

  virtual StatusOr<Loaded<NodeView>> LoadNodes(UnixTime since) = 0;
  virtual StatusOr<NodeView> LoadNode(const std::string& name) = 0;
  // Every job record slurmctld holds (pending, running and recently finished).
  virtual StatusOr<Loaded<JobView>> LoadJobs(UnixTime since) = 0;
  virtual StatusOr<JobView> LoadJob(uint32_t job_id) = 0;
  virtual StatusOr<Loaded<PartitionView>> LoadPartitions(UnixTime since) = 0;

  // Drains `node` with `reason`, which must start with "k8s-bridge:". A node already
  // drained by someone else keeps their reason (kUnchanged): the bridge never takes over
  // an admin's drain.
  virtual StatusOr<WriteOutcome> DrainNode(const std::string& node, const std::string& reason) = 0;
  // Hands a drain over to the site (the decommission, src/decommission/decommission.h):
  // drains `node` with `reason`, which must NOT start with "k8s-bridge:", replacing the
  // reason of a drain the bridge made; a node not drained is drained. A drain of somebody
  // else's stays as it is (kUnchanged), as does one that already reads `reason`.
  virtual StatusOr<WriteOutcome> HandOverDrain(const std::string& node,
                                               const std::string& reason) = 0;
  // Resumes `node` only if its drain/down reason starts with "k8s-bridge:";
  // FailedPrecondition for anybody else's drain. kUnchanged when not drained.
  virtual StatusOr<WriteOutcome> ResumeNode(const std::string& node) = 0;
  // Sets the node's available and active features together to `features` (one update, so
  // a feature new to the node needs no slurm.conf entry first).
  virtual StatusOr<WriteOutcome> SetFeatures(const std::string& node,
                                             const std::vector<std::string>& features) = 0;

  // Sends `signal` (e.g. SIGUSR1) to a running job. Not idempotent by nature: callers
  // record that they signalled. FailedPrecondition when the job is not running.
  virtual Status SignalJob(uint32_t job_id, int signal, SignalScope scope) = 0;
  // Requeues a job (running -> back to PENDING). With hold, it comes back held; a pending
  // job is then simply held. kUnchanged when already pending (and held if asked).
  virtual StatusOr<WriteOutcome> RequeueJob(uint32_t job_id, bool hold) = 0;
  virtual StatusOr<WriteOutcome> SuspendJob(uint32_t job_id) = 0;
  virtual StatusOr<WriteOutcome> ResumeJob(uint32_t job_id) = 0;
  // kUnchanged when the job already finished.
  virtual StatusOr<WriteOutcome> CancelJob(uint32_t job_id) = 0;
  // Replaces the job's admin comment (the bridge records preemptions there, so a user's
  // `scontrol show job` says why). kUnchanged when it already reads `comment`.
  virtual StatusOr<WriteOutcome> SetAdminComment(uint32_t job_id, const std::string& comment) = 0;
  // Makes a pending job eligible now: slurmctld holds a requeued job back for about two
  // minutes (its begin time), which a job preempted for a lend does not need -- it should
  // start on any free node at once (two seconds on: a start within the second its old
  // launch credential was revoked is refused). kUnchanged when the job is not pending.
  virtual StatusOr<WriteOutcome> MakeEligibleNow(uint32_t job_id) = 0;

  // Submits the placeholder batch job `s` describes (named devices::kPlaceholderJobName;
  // --gres=gpu:N on exactly `node`, 1 CPU, minimal memory, --no-requeue, output to
  // /dev/null, sleeping until cancelled, `s.admin_comment` as its admin comment, the highest
  // job priority so it starts first once the GPUs free) and returns its job id. Idempotent:
  // when a pending or running placeholder whose record has the same key exists, returns
  // its id (kUnchanged) and submits nothing (the daemon's poll lags a submission).
  // InvalidArgument when `s.admin_comment` holds no placeholder record or gpus < 1.
  virtual StatusOr<PlaceholderSubmission> SubmitPlaceholder(const PlaceholderSpec& s) = 0;

  // --- the maintenance cycle (src/health/maintenance.h) ---
  // Asks Slurm to reboot `node` through its RebootProgram as soon as it is idle (scontrol
  // reboot ASAP nextstate=DOWN reason=`reason`; `reason` must start with "k8s-bridge:"):
  // the node comes back DOWN, with a BootTime after the request. kUnchanged when a reboot
  // of the node is already requested or under way (REBOOT_REQUESTED / REBOOT_ISSUED).
  virtual StatusOr<WriteOutcome> RebootNode(const std::string& node, const std::string& reason) = 0;
  // Creates the reservation `s` describes; kUnchanged when a reservation of that name
  // exists already (on that node: FailedPrecondition when it is on another). `s.user` ""
  // is this process's user.
  virtual StatusOr<WriteOutcome> CreateMaintenanceReservation(
      const MaintenanceReservationSpec& s) = 0;
  // Deletes the reservation `name`; kUnchanged when there is none. FailedPrecondition while
  // a job runs in it (Slurm refuses).
  virtual StatusOr<WriteOutcome> DeleteReservation(const std::string& name) = 0;
  // Submits the check job `s` describes, as this process's user. Idempotent: when a pending
  // or running job of that user named health::kMaintenanceCheckJobName already asks for or
  // runs on `s.node`, returns its id (kUnchanged) and submits nothing. InvalidArgument when
  // `s.command` or `s.node` is empty or the time limit is under a minute.
  virtual StatusOr<CheckJobSubmission> SubmitCheckJob(const CheckJobSpec& s) = 0;
};

}  // namespace skb::bridge::slurm

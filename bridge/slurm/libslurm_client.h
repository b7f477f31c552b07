// SPDX-License-Identifier: Apache-2.0
// LibSlurmClient: SlurmClient over libslurm (the RPCs scontrol and squeue use).
//
// Every libslurm call runs on one private thread (CallThread), one call at a time;
// slurm_init runs once per process (the first client's slurm.conf) and is never undone. Each public
// method waits at most Options::call_timeout; a hung slurmctld therefore costs callers Unavailable
// after the timeout, never a frozen daemon. Slurm's error numbers are mapped to Status codes by
// SlurmErrorToStatus.
//
//   LibSlurmClient slurm({.conf = "/etc/slurm/slurm.conf"});
//   auto nodes = slurm.LoadNodes(0);
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bridge/slurm/call_thread.h"
#include "bridge/slurm/slurm_client.h"

namespace skb::bridge::slurm {

// Maps a Slurm error number (slurm_get_errno()) to a Status whose code tells the caller
// what to do; the message is "<what>: <slurm_strerror> (slurm errno N)" and the number is
// in payload "slurm_errno".
Status SlurmErrorToStatus(int slurm_errno, const std::string& what);

class LibSlurmClient final : public SlurmClient {
 public:
  struct Options {
    // slurm.conf; empty = libslurm's default ($SLURM_CONF or the compiled-in path).
    std::string conf;
    // Longest a caller waits for one method, including the re-reads that verify a write.
    std::chrono::milliseconds call_timeout{5000};
    // How long a write waits to see its effect (e.g. a requeued job leaving RUNNING).
    std::chrono::milliseconds verify_timeout{3000};
    // Called with the call's name ("load_jobs", "requeue_job", ...) whenever a method
    // fails (metrics: skb_slurm_rpc_errors_total). Optional.
    std::function<void(const std::string& call, const Status& status)> on_error;
  };

  explicit LibSlurmClient(Options options);
  ~LibSlurmClient() override;

  StatusOr<Loaded<NodeView>> LoadNodes(UnixTime since) override;
  StatusOr<NodeView> LoadNode(const std::string& name) override;
  StatusOr<Loaded<JobView>> LoadJobs(UnixTime since) override;
  StatusOr<JobView> LoadJob(uint32_t job_id) override;
  StatusOr<Loaded<PartitionView>> LoadPartitions(UnixTime since) override;

  StatusOr<WriteOutcome> DrainNode(const std::string& node, const std::string& reason) override;
  StatusOr<WriteOutcome> HandOverDrain(const std::string& node, const std::string& reason) override;
  StatusOr<WriteOutcome> ResumeNode(const std::string& node) override;
  StatusOr<WriteOutcome> SetFeatures(const std::string& node,
                                     const std::vector<std::string>& features) override;
  Status SignalJob(uint32_t job_id, int signal, SignalScope scope) override;
  StatusOr<WriteOutcome> RequeueJob(uint32_t job_id, bool hold) override;
  StatusOr<WriteOutcome> SuspendJob(uint32_t job_id) override;
  StatusOr<WriteOutcome> ResumeJob(uint32_t job_id) override;
  StatusOr<WriteOutcome> CancelJob(uint32_t job_id) override;
  StatusOr<WriteOutcome> SetAdminComment(uint32_t job_id, const std::string& comment) override;
  StatusOr<WriteOutcome> MakeEligibleNow(uint32_t job_id) override;
  StatusOr<PlaceholderSubmission> SubmitPlaceholder(const PlaceholderSpec& s) override;
  // The reboot request is not in libslurm's public API: it is sent as scontrol sends it,
  // with Slurm's message types laid out per release in libslurm_client.cc. A build for a
  // release other than 22.05, 24.11 and 26.05, or a library laid out otherwise than that
  // build expects, gets Unimplemented (nothing is sent).
  StatusOr<WriteOutcome> RebootNode(const std::string& node, const std::string& reason) override;
  StatusOr<WriteOutcome> CreateMaintenanceReservation(const MaintenanceReservationSpec& s) override;
  StatusOr<WriteOutcome> DeleteReservation(const std::string& name) override;
  StatusOr<CheckJobSubmission> SubmitCheckJob(const CheckJobSpec& s) override;

  // How many drain batches ran: drains with one reason that queue up while the call
  // thread is busy are handled as one (one read, at most one joint update_node, one
  // verifying read: N nodes flipping at once cost three RPCs, not 3N).
  uint64_t drain_batches() const { return drains_->batches.load(); }

 private:
  // Drains waiting for the call thread, by reason. Shared with the queued closures, which
  // may outlive a caller that timed out.
  struct DrainQueue {
    struct Request {
      std::string node;
      std::optional<StatusOr<WriteOutcome>> outcome;  // set on the call thread
    };
    std::mutex mu;
    std::map<std::string, std::vector<std::shared_ptr<Request>>> by_reason;  // GUARDED_BY(mu)
    std::atomic<uint64_t> batches{0};
  };

  template <typename T>
  StatusOr<T> Call(const std::string& what, std::function<StatusOr<T>()> fn) {
    StatusOr<T> r = thread_->Run<T>(what, options_.call_timeout, std::move(fn));
    if (!r.ok() && options_.on_error) ReportError(what, r.status());
    return r;
  }

  void ReportError(const std::string& what, const Status& status) const;

  const Options options_;
  std::unique_ptr<CallThread> thread_;
  std::shared_ptr<DrainQueue> drains_ = std::make_shared<DrainQueue>();
};

}  // namespace skb::bridge::slurm

// SPDX-License-Identifier: Apache-2.0
// An in-memory SlurmClient for unit tests of the act layer (the action executor, the
// reconciler): nodes and jobs as values, with the interface's documented semantics (a drain
// never takes over somebody else's drain, a resume refuses a drain that is not the
// bridge's, writes report kChanged or kUnchanged, a job that is not running cannot be
// signalled), a log of the writes made, and failures a test injects per call.
//
//   FakeSlurmClient slurm;
//   slurm.AddNode(Idle("node1"));
//   slurm.FailNext("DrainNode", UnavailableError("slurmctld busy"));
//   executor.Execute(drain);  // Unavailable
//
// It is not slurmctld: no scheduling, no job steps, update_time is a counter. Behaviour
// beyond the interface's contract is tested against the real slurmctld
// (tests/integration/slurm).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "bridge/slurm/slurm_client.h"
#include "src/base/clock.h"
#include "src/base/thread_annotations.h"

namespace skb::bridge::slurm {

class FakeSlurmClient final : public SlurmClient {
 public:
  // --- the cluster ---
  void AddNode(NodeView node);
  void AddJob(JobView job);
  NodeView Node(const std::string& name) const;  // a default NodeView when unknown
  JobView Job(uint32_t job_id) const;            // a default JobView when unknown
  // Slurm starting a pending job: RUNNING on `node`, holding GRES GPU `indices` there
  // (gpu_indices, gpus_per_node). False when the job is unknown.
  bool StartJob(uint32_t job_id, const std::string& node, std::vector<int64_t> indices);
  // A job ending by itself: COMPLETED with `exit_code` 0, FAILED with another (JobView's
  // exit_code), at `clock`'s time when SetClock was called. False when the job is unknown.
  bool FinishJob(uint32_t job_id, int exit_code);

  // The maintenance cycle's Slurm side. A reboot RebootNode asked for, as slurmctld carries
  // it out: IssueReboot, the RebootProgram ran (REBOOT_ISSUED replaces REBOOT_REQUESTED, the
  // node is DOWN, " : reboot issued" is added to its reason); CompleteReboot, its slurmd
  // registered after the boot (the flags cleared, BootTime `boot_time`, and as `nextstate=DOWN`
  // leaves it: DOWN, the drain lifted, " : reboot complete" added to the reason, which keeps
  // the bridge's prefix, so ResumeNode resumes it). CompleteReboot issues the reboot first
  // when IssueReboot was not called; on a node without a reboot requested or issued (a
  // reboot behind Slurm's back) only the boot time moves. False when the node is unknown.
  bool IssueReboot(const std::string& node);
  bool CompleteReboot(const std::string& node, UnixTime boot_time);
  // The names of the reservations that exist (CreateMaintenanceReservation), sorted.
  std::vector<std::string> Reservations() const;

  // While set, LoadJobs(since) with since != 0 answers "no change" whatever changed, as
  // slurmctld does when a job's change was stamped older than the caller's last read (its
  // stamps count whole seconds); LoadJobs(0) still reads every job.
  void SetJobStampsStale(bool stale);
  // While set, placeholders are submitted at `clock`'s time (JobView::submit_time); without
  // it their submit_time is 0 (unknown). `clock` must outlive the fake.
  void SetClock(const Clock* clock);

  // The next call of `method` ("DrainNode", "LoadJob", ...) fails with `status`; several
  // failures queued for one method are returned in order.
  void FailNext(const std::string& method, Status status);

  // Every write made, in order: "DrainNode node1 k8s-bridge: ...", "RequeueJob 7 hold=0",
  // "SignalJob 7 10 scope=2", "SetAdminComment 7 ...", ... Writes that failed are not listed.
  std::vector<std::string> Writes() const;
  // The calls of `method` made, failed ones included.
  int Calls(const std::string& method) const;

  // --- SlurmClient ---
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
  // Adds a PENDING job (the next free id, from 1000) as LibSlurmClient submits it; a pending
  // or running placeholder for the same pod is returned instead. Logged in Writes() as
  // "SubmitPlaceholder node3 gpus=2 -> 1000" (only when it submitted).
  StatusOr<PlaceholderSubmission> SubmitPlaceholder(const PlaceholderSpec& s) override;
  // Logged as "RebootNode node3 <reason>"; the node gets REBOOT_REQUESTED, the drain and
  // `reason`, as slurmctld does for `scontrol reboot ASAP`.
  StatusOr<WriteOutcome> RebootNode(const std::string& node, const std::string& reason) override;
  // Logged as "CreateMaintenanceReservation skb-maint-node3 node3".
  StatusOr<WriteOutcome> CreateMaintenanceReservation(const MaintenanceReservationSpec& s) override;
  // Logged as "DeleteReservation skb-maint-node3".
  StatusOr<WriteOutcome> DeleteReservation(const std::string& name) override;
  // Adds a PENDING job named health::kMaintenanceCheckJobName (the next free id, from 1000)
  // whose required_nodes is {s.node} and reservation s.reservation; a pending or running one
  // asking for or on that node is returned instead. Logged as "SubmitCheckJob node3
  // skb-maint-node3" (only when it submitted). Users are not modelled: any user's check job
  // counts.
  StatusOr<CheckJobSubmission> SubmitCheckJob(const CheckJobSpec& s) override;

 private:
  struct Reservation {
    std::string node;
    std::string user;
    int64_t minutes = 0;
  };
  // Counts the call; the injected failure for `method`, if one is queued.
  Status Enter(const std::string& method) REQUIRES(mu_);
  // DrainNode's and HandOverDrain's common part, once the reason is checked.
  StatusOr<WriteOutcome> Drain(const std::string& method, const std::string& node,
                               const std::string& reason) REQUIRES(mu_);
  void Wrote(std::string line) REQUIRES(mu_);
  uint32_t NextJobId() const REQUIRES(mu_);
  UnixTime NowSeconds() const REQUIRES(mu_);  // clock_'s time, 0 without one

  mutable Mutex mu_;
  std::map<std::string, NodeView> nodes_ GUARDED_BY(mu_);
  std::map<uint32_t, JobView> jobs_ GUARDED_BY(mu_);
  std::map<std::string, Reservation> reservations_ GUARDED_BY(mu_);
  std::map<std::string, std::deque<Status>> failures_ GUARDED_BY(mu_);
  std::map<std::string, int> calls_ GUARDED_BY(mu_);
  std::vector<std::string> writes_ GUARDED_BY(mu_);
  UnixTime update_time_ GUARDED_BY(mu_) = 1;
  bool job_stamps_stale_ GUARDED_BY(mu_) = false;
  const Clock* clock_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace skb::bridge::slurm

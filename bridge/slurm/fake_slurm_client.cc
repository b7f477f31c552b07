// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/fake_slurm_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "src/base/strings.h"
#include "src/devices/placeholder_record.h"
#include "src/health/maintenance.h"

namespace skb::bridge::slurm {

using skb::slurm::JobState;

void FakeSlurmClient::AddNode(NodeView node) {
  MutexLock lock(&mu_);
  std::string name = node.name;
  nodes_[name] = std::move(node);
  ++update_time_;
}

void FakeSlurmClient::AddJob(JobView job) {
  MutexLock lock(&mu_);
  uint32_t id = job.job_id;
  jobs_[id] = std::move(job);
  ++update_time_;
}

NodeView FakeSlurmClient::Node(const std::string& name) const {
  MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? NodeView{} : it->second;
}

JobView FakeSlurmClient::Job(uint32_t job_id) const {
  MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? JobView{} : it->second;
}

bool FakeSlurmClient::StartJob(uint32_t job_id, const std::string& node,
                               std::vector<int64_t> indices) {
  MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  JobView& j = it->second;
  j.state = JobState::kRunning;
  j.nodes = {node};
  j.gpus_per_node = static_cast<int64_t>(indices.size());
  j.gpu_indices = {{node, std::move(indices)}};
  ++update_time_;
  return true;
}

bool FakeSlurmClient::FinishJob(uint32_t job_id, int exit_code) {
  MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return false;
  JobView& j = it->second;
  j.state = exit_code == 0 ? JobState::kComplete : JobState::kFailed;
  j.exit_code = exit_code;
  j.end_time = NowSeconds();
  ++update_time_;
  return true;
}

bool FakeSlurmClient::IssueReboot(const std::string& node) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return false;
  NodeView& n = it->second;
  if (!n.reboot_requested || n.reboot_issued) return true;
  n.reboot_requested = false;
  n.reboot_issued = true;
  n.base_state = skb::slurm::NodeBaseState::kDown;
  n.reason += " : reboot issued";
  ++update_time_;
  return true;
}

bool FakeSlurmClient::CompleteReboot(const std::string& node, UnixTime boot_time) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return false;
  NodeView& n = it->second;
  n.boot_time = boot_time;
  if (n.reboot_requested || n.reboot_issued) {
    if (!n.reboot_issued) n.reason += " : reboot issued";
    n.reboot_requested = n.reboot_issued = false;
    n.base_state = skb::slurm::NodeBaseState::kDown;
    n.drain = false;
    n.reason += " : reboot complete";
  }
  ++update_time_;
  return true;
}

std::vector<std::string> FakeSlurmClient::Reservations() const {
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, r] : reservations_) names.push_back(name);
  return names;
}

void FakeSlurmClient::SetClock(const Clock* clock) {
  MutexLock lock(&mu_);
  clock_ = clock;
}

void FakeSlurmClient::SetJobStampsStale(bool stale) {
  MutexLock lock(&mu_);
  job_stamps_stale_ = stale;
}

void FakeSlurmClient::FailNext(const std::string& method, Status status) {
  MutexLock lock(&mu_);
  failures_[method].push_back(std::move(status));
}

std::vector<std::string> FakeSlurmClient::Writes() const {
  MutexLock lock(&mu_);
  return writes_;
}

int FakeSlurmClient::Calls(const std::string& method) const {
  MutexLock lock(&mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

Status FakeSlurmClient::Enter(const std::string& method) {
  ++calls_[method];
  auto it = failures_.find(method);
  if (it == failures_.end() || it->second.empty()) return OkStatus();
  Status s = std::move(it->second.front());
  it->second.pop_front();
  return s;
}

void FakeSlurmClient::Wrote(std::string line) {
  writes_.push_back(std::move(line));
  ++update_time_;
}

uint32_t FakeSlurmClient::NextJobId() const {
  uint32_t next = 1000;
  for (const auto& [id, j] : jobs_) next = std::max(next, id + 1);
  return next;
}

UnixTime FakeSlurmClient::NowSeconds() const {
  if (clock_ == nullptr) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(clock_->Now().time_since_epoch()).count();
}

StatusOr<Loaded<NodeView>> FakeSlurmClient::LoadNodes(UnixTime since) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("LoadNodes"));
  Loaded<NodeView> out;
  out.update_time = update_time_;
  out.changed = since < update_time_;
  if (out.changed) {
    for (const auto& [name, n] : nodes_) out.items.push_back(n);
  }
  return out;
}

StatusOr<NodeView> FakeSlurmClient::LoadNode(const std::string& name) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("LoadNode"));
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFoundError(StrCat("no Slurm node ", name));
  return it->second;
}

StatusOr<Loaded<JobView>> FakeSlurmClient::LoadJobs(UnixTime since) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("LoadJobs"));
  Loaded<JobView> out;
  if (job_stamps_stale_ && since != 0) {
    out.update_time = since;  // "no change", as LibSlurmClient reports it
    return out;
  }
  out.update_time = update_time_;
  out.changed = since < update_time_;
  if (out.changed) {
    for (const auto& [id, j] : jobs_) out.items.push_back(j);
  }
  return out;
}

StatusOr<JobView> FakeSlurmClient::LoadJob(uint32_t job_id) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("LoadJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  return it->second;
}

StatusOr<Loaded<PartitionView>> FakeSlurmClient::LoadPartitions(UnixTime since) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("LoadPartitions"));
  Loaded<PartitionView> out;
  out.update_time = update_time_;
  out.changed = since < update_time_;
  return out;
}

StatusOr<WriteOutcome> FakeSlurmClient::DrainNode(const std::string& node,
                                                  const std::string& reason) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("DrainNode"));
  if (!reason.starts_with(skb::slurm::kBridgeReasonPrefix)) {
    return InvalidArgumentError(StrCat("drain reason '", reason, "' lacks the bridge's prefix"));
  }
  return Drain("DrainNode", node, reason);
}

StatusOr<WriteOutcome> FakeSlurmClient::HandOverDrain(const std::string& node,
                                                      const std::string& reason) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("HandOverDrain"));
  if (reason.empty() || reason.starts_with(skb::slurm::kBridgeReasonPrefix)) {
    return InvalidArgumentError(StrCat("hand-over reason '", reason, "' is the bridge's"));
  }
  return Drain("HandOverDrain", node, reason);
}

StatusOr<WriteOutcome> FakeSlurmClient::Drain(const std::string& method, const std::string& node,
                                              const std::string& reason) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(StrCat("no Slurm node ", node));
  NodeView& n = it->second;
  // Somebody else's drain stays; one that already reads `reason` is done.
  if (n.drain && (!n.DrainedByBridge() || n.reason == reason)) return WriteOutcome::kUnchanged;
  n.drain = true;
  n.reason = reason;
  Wrote(StrCat(method, " ", node, " ", reason));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::ResumeNode(const std::string& node) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("ResumeNode"));
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(StrCat("no Slurm node ", node));
  NodeView& n = it->second;
  // As LibSlurmClient: a DOWN node is resumed too (after a reboot with nextstate=DOWN).
  if (!n.drain && n.base_state != skb::slurm::NodeBaseState::kDown) {
    return WriteOutcome::kUnchanged;
  }
  if (!n.DrainedByBridge()) {
    return FailedPreconditionError(StrCat("node ", node, " is drained by somebody else"));
  }
  n.drain = false;
  if (n.base_state == skb::slurm::NodeBaseState::kDown) {
    n.base_state = skb::slurm::NodeBaseState::kIdle;
  }
  n.reason.clear();
  Wrote(StrCat("ResumeNode ", node));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::SetFeatures(const std::string& node,
                                                    const std::vector<std::string>& features) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SetFeatures"));
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(StrCat("no Slurm node ", node));
  NodeView& n = it->second;
  if (n.features == features && n.active_features == features) return WriteOutcome::kUnchanged;
  n.features = n.active_features = features;
  std::string list;
  for (const auto& f : features) StrAppend(&list, list.empty() ? "" : ",", f);
  Wrote(StrCat("SetFeatures ", node, " ", list));
  return WriteOutcome::kChanged;
}

Status FakeSlurmClient::SignalJob(uint32_t job_id, int signal, SignalScope scope) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SignalJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  if (it->second.state != JobState::kRunning) {
    return FailedPreconditionError(StrCat("job ", job_id, " is not running"));
  }
  Wrote(StrCat("SignalJob ", job_id, " ", signal, " scope=", static_cast<int>(scope)));
  return OkStatus();
}

StatusOr<WriteOutcome> FakeSlurmClient::RequeueJob(uint32_t job_id, bool hold) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("RequeueJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  JobView& j = it->second;
  if (j.het_job_id != 0 && j.het_job_id != job_id) {
    // As Slurm: a heterogeneous job is requeued by its leader's id only, and then whole.
    return FailedPreconditionError(StrCat("Job not heterogeneous job leader for job ", job_id));
  }
  if (j.state == JobState::kPending && (!hold || j.Held())) return WriteOutcome::kUnchanged;
  if (j.state != JobState::kPending && !j.requeue) {
    return FailedPreconditionError(StrCat("job ", job_id, " cannot be requeued"));
  }
  for (auto& [id, c] : jobs_) {
    if (id != job_id && (j.het_job_id == 0 || c.het_job_id != j.het_job_id)) continue;
    c.state = JobState::kPending;
    c.nodes.clear();
    if (hold) c.priority = 0;
  }
  Wrote(StrCat("RequeueJob ", job_id, " hold=", hold ? 1 : 0));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::SuspendJob(uint32_t job_id) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SuspendJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  if (it->second.state == JobState::kSuspended) return WriteOutcome::kUnchanged;
  it->second.state = JobState::kSuspended;
  Wrote(StrCat("SuspendJob ", job_id));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::ResumeJob(uint32_t job_id) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("ResumeJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  if (it->second.state != JobState::kSuspended) return WriteOutcome::kUnchanged;
  it->second.state = JobState::kRunning;
  Wrote(StrCat("ResumeJob ", job_id));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::CancelJob(uint32_t job_id) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("CancelJob"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  JobView& j = it->second;
  if (j.state != JobState::kPending && j.state != JobState::kRunning &&
      j.state != JobState::kSuspended) {
    return WriteOutcome::kUnchanged;
  }
  j.state = JobState::kCancelled;
  Wrote(StrCat("CancelJob ", job_id));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::SetAdminComment(uint32_t job_id,
                                                        const std::string& comment) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SetAdminComment"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  if (it->second.admin_comment == comment) return WriteOutcome::kUnchanged;
  it->second.admin_comment = comment;
  Wrote(StrCat("SetAdminComment ", job_id, " ", comment));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::MakeEligibleNow(uint32_t job_id) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("MakeEligibleNow"));
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFoundError(StrCat("no Slurm job ", job_id));
  if (it->second.state != JobState::kPending) return WriteOutcome::kUnchanged;
  Wrote(StrCat("MakeEligibleNow ", job_id));
  return WriteOutcome::kChanged;
}

StatusOr<PlaceholderSubmission> FakeSlurmClient::SubmitPlaceholder(const PlaceholderSpec& s) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SubmitPlaceholder"));
  const std::optional<devices::PlaceholderRecord> record =
      devices::ParsePlaceholderRecord(s.admin_comment);
  if (!record) return InvalidArgumentError("placeholder admin comment holds no record");
  if (s.gpus < 1 || s.node.empty() || record->node != s.node) {
    return InvalidArgumentError(StrCat("placeholder for ", s.gpus, " GPUs on '", s.node,
                                       "' with record '", s.admin_comment, "'"));
  }
  uint32_t next = 1000;
  for (const auto& [id, j] : jobs_) {
    next = std::max(next, id + 1);
    if (j.name != devices::kPlaceholderJobName ||
        (j.state != JobState::kPending && j.state != JobState::kRunning)) {
      continue;
    }
    std::optional<devices::PlaceholderRecord> other =
        devices::ParsePlaceholderRecord(j.admin_comment);
    if (other && devices::PlaceholderKey(*other) == devices::PlaceholderKey(*record)) {
      return PlaceholderSubmission{id, WriteOutcome::kUnchanged};
    }
  }
  JobView j;
  j.job_id = next;
  j.name = devices::kPlaceholderJobName;
  j.partition = s.partition;
  j.qos = s.qos;
  j.account = s.account;
  j.state = JobState::kPending;
  j.state_reason = "Resources";
  j.priority = devices::kPlaceholderPriority;
  j.gpus_per_node = s.gpus;
  j.gpu_type = s.gres_type;
  j.requeue = false;
  j.admin_comment = s.admin_comment;
  if (clock_ != nullptr) {
    j.submit_time =
        std::chrono::duration_cast<std::chrono::seconds>(clock_->Now().time_since_epoch()).count();
  }
  jobs_[next] = std::move(j);
  Wrote(StrCat("SubmitPlaceholder ", s.node, " gpus=", s.gpus,
               s.gres_type.empty() ? "" : StrCat(" type=", s.gres_type), " -> ", next));
  return PlaceholderSubmission{next, WriteOutcome::kChanged};
}

StatusOr<WriteOutcome> FakeSlurmClient::RebootNode(const std::string& node,
                                                   const std::string& reason) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("RebootNode"));
  if (!reason.starts_with(skb::slurm::kBridgeReasonPrefix)) {
    return InvalidArgumentError(StrCat("reboot reason '", reason, "' lacks the bridge's prefix"));
  }
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return NotFoundError(StrCat("no Slurm node ", node));
  NodeView& n = it->second;
  if (n.reboot_requested || n.reboot_issued) return WriteOutcome::kUnchanged;
  n.reboot_requested = true;
  n.drain = true;
  n.reason = reason;
  Wrote(StrCat("RebootNode ", node, " ", reason));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::CreateMaintenanceReservation(
    const MaintenanceReservationSpec& s) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("CreateMaintenanceReservation"));
  if (s.name.empty() || s.node.empty() || s.minutes < 1) {
    return InvalidArgumentError(StrCat("maintenance reservation '", s.name, "' on '", s.node,
                                       "' for ", s.minutes, " minutes"));
  }
  if (!nodes_.contains(s.node)) return NotFoundError(StrCat("no Slurm node ", s.node));
  if (auto it = reservations_.find(s.name); it != reservations_.end()) {
    if (it->second.node != s.node) {
      return FailedPreconditionError(
          StrCat("reservation ", s.name, " exists on ", it->second.node, ", not on ", s.node));
    }
    return WriteOutcome::kUnchanged;
  }
  reservations_[s.name] = Reservation{.node = s.node, .user = s.user, .minutes = s.minutes};
  Wrote(StrCat("CreateMaintenanceReservation ", s.name, " ", s.node));
  return WriteOutcome::kChanged;
}

StatusOr<WriteOutcome> FakeSlurmClient::DeleteReservation(const std::string& name) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("DeleteReservation"));
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return WriteOutcome::kUnchanged;
  for (const auto& [id, j] : jobs_) {
    if (j.reservation == name && j.state == JobState::kRunning) {
      return FailedPreconditionError(
          StrCat("reservation ", name, " is in use: job ", id, " runs in it"));
    }
  }
  reservations_.erase(it);
  Wrote(StrCat("DeleteReservation ", name));
  return WriteOutcome::kChanged;
}

StatusOr<CheckJobSubmission> FakeSlurmClient::SubmitCheckJob(const CheckJobSpec& s) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Enter("SubmitCheckJob"));
  if (s.command.empty() || s.node.empty() || s.gpus < 0 || s.time_limit_minutes < 1) {
    return InvalidArgumentError(StrCat("check job '", s.command, "' on '", s.node, "' with ",
                                       s.gpus, " GPUs for ", s.time_limit_minutes, " minutes"));
  }
  for (const auto& [id, j] : jobs_) {
    if (j.name != health::kMaintenanceCheckJobName ||
        !CheckJobCounts(j.state == JobState::kPending || j.state == JobState::kRunning,
                        j.submit_time, s.submitted_since)) {
      continue;
    }
    auto has = [&](const std::vector<std::string>& nodes) {
      return std::find(nodes.begin(), nodes.end(), s.node) != nodes.end();
    };
    if (has(j.required_nodes) || has(j.nodes))
      return CheckJobSubmission{id, WriteOutcome::kUnchanged};
  }
  JobView j;
  j.job_id = NextJobId();
  j.name = health::kMaintenanceCheckJobName;
  j.partition = s.partition;
  j.state = JobState::kPending;
  j.state_reason = "None";
  j.priority = 1;
  j.required_nodes = {s.node};
  j.reservation = s.reservation;
  j.gpus_per_node = s.gpus;
  j.requested_gpus = s.gpus;
  j.requeue = false;
  j.submit_time = NowSeconds();
  const uint32_t id = j.job_id;
  jobs_[id] = std::move(j);
  Wrote(StrCat("SubmitCheckJob ", s.node, " ", s.reservation));
  return CheckJobSubmission{id, WriteOutcome::kChanged};
}

}  // namespace skb::bridge::slurm

// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/libslurm_client.h"

#include <pwd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "bridge/logging.h"
#include "src/base/strings.h"
#include "src/devices/gres.h"
#include "src/devices/placeholder_record.h"
#include "src/health/maintenance.h"
#include "src/slurm/syntax.h"

// Exported by libslurm (scontrol uses it) but not declared in Slurm's public headers; 24.11
// exports it as slurm_job_state_reason_string (22.05 and 24.11 checked, releases between not).
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
extern "C" char* slurm_job_state_reason_string(enum job_state_reason inx);
#define slurm_job_reason_string slurm_job_state_reason_string
#else
extern "C" char* slurm_job_reason_string(enum job_state_reason inx);
#endif

// 26.05 names a job by a slurm_step_id_t (job id, step, SLUID) in the calls that used to take
// a job id (slurm_load_job, slurm_kill_job, slurm_requeue, slurm_suspend, slurm_resume) and
// in job_desc_msg_t and resource_allocation_response_msg_t (`step_id.job_id`, was `job_id`),
// dropped update_node_msg_t's reason_uid (slurmctld records the RPC's authenticated uid) and
// renamed slurm_free_ctl_conf to slurm_free_conf (25.05 and 25.11 not checked: pyslurm's notes
// put the change in 26.05). slurm.h's SLURM_BACKWARD_COMPAT shims are C11 _Generic, not C++.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
#define slurm_free_ctl_conf slurm_free_conf
#endif

// `scontrol reboot` builds its request itself: a reboot_msg_t sent as REQUEST_REBOOT_NODES
// through slurm_send_recv_controller_rc_msg. libslurm exports that call and slurm_msg_t_init
// (22.05, 24.11 and 26.05 checked) but declares them, and both message types, only in
// Slurm's private headers (src/common/slurm_protocol_defs.h); no release up to 26.05 has a
// public reboot call. The types are laid out below (RebootRequest) as each release has them.
extern "C" {
void slurm_xfree(void** p);  // libslurm's xfree (src/common/xmalloc.h), exported
void slurm_msg_t_init(void* msg);
int slurm_send_recv_controller_rc_msg(void* req, int* rc, void* comm_cluster_rec);
}

namespace skb::bridge::slurm {
namespace {

// The job `job_id` as the job calls above name it: the whole job (no step), SLUID unknown.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
slurm_step_id_t JobId(uint32_t job_id) {
  slurm_step_id_t id;
  id.sluid = 0;
  id.job_id = job_id;
  id.step_het_comp = NO_VAL;
  id.step_id = NO_VAL;
  return id;
}
void SetJobId(job_desc_msg_t* desc, uint32_t job_id) { desc->step_id.job_id = job_id; }
uint32_t JobIdOf(const resource_allocation_response_msg_t& r) { return r.step_id.job_id; }
uint32_t JobIdOf(const submit_response_msg_t& r) { return r.step_id.job_id; }
#else
uint32_t JobId(uint32_t job_id) { return job_id; }
void SetJobId(job_desc_msg_t* desc, uint32_t job_id) { desc->job_id = job_id; }
uint32_t JobIdOf(const resource_allocation_response_msg_t& r) { return r.job_id; }
uint32_t JobIdOf(const submit_response_msg_t& r) { return r.job_id; }
#endif

using skb::slurm::JobState;
using skb::slurm::kBridgeReasonPrefix;
using skb::slurm::NodeBaseState;
using skb::slurm::PreemptMode;
using Clock = std::chrono::steady_clock;

// slurm_init loads process-wide state (slurm.conf, the auth, hash and other plugins) and
// slurm_fini unloads it for every thread of the process. Several clients live in one
// process (a test and its invariant sampler; a client whose call thread was left stuck in
// a hung RPC beside its successor), so a client's own init/fini pair pulled the plugins
// from under the others: libslurm 24.11 then crashed in slurm_init (SIGSEGV in
// slurm_plugin_get_syms) when a heterogeneous job's requeue kept slurmctld busy past a
// client's end. So: init once per process, on the first client's call thread, never undone
// (the process's exit frees it). Every client reads the slurm.conf the first one named.
void InitSlurmOnce(const std::string& conf) {
  static std::once_flag once;
  static std::string first;
  std::call_once(once, [&] {
    first = conf;
    slurm_init(conf.empty() ? nullptr : conf.c_str());
  });
  if (conf != first) {
    Logger("slurm")->warn(
        "slurm_conf_ignored conf=\"{}\" loaded=\"{}\" (one slurm.conf per process)", conf, first);
  }
}

constexpr size_t kMaxExpandedHosts = 100'000;
// A placeholder runs `sleep`: 64 MB covers it where memory is a consumable resource.
constexpr uint64_t kPlaceholderMemoryMb = 64;
// How sbatch spells --gres=gpu:N in tres_per_node: 23.02 renamed "gres:" to "gres/".
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
constexpr std::string_view kGresTresPrefix = "gres/";
#else
constexpr std::string_view kGresTresPrefix = "gres:";
#endif
// Slurm's socket-layer errors start at 5000 in every release; the name of the first one
// (SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH in 22.05) is gone from 24.11's headers.
constexpr int kSocketErrorBase = 5000;

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

std::vector<std::string> SplitList(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  for (std::string_view p : StrSplit(s, ',', /*skip_empty=*/true)) out.emplace_back(p);
  return out;
}

// "node[1-3],gpu7" -> {node1, node2, node3, gpu7}, with libslurm's own parser.
std::vector<std::string> ExpandHostlist(const char* list) {
  std::vector<std::string> out;
  if (list == nullptr || *list == '\0') return out;
  // hostlist_t is a pointer type up to 23.02 and the struct itself from 23.11 on.
  auto* hl = slurm_hostlist_create(list);
  if (hl == nullptr) return out;
  while (out.size() < kMaxExpandedHosts) {
    char* host = slurm_hostlist_shift(hl);
    if (host == nullptr) break;
    out.emplace_back(host);
    free(host);  // slurm_hostlist_shift returns malloc()ed memory
  }
  slurm_hostlist_destroy(hl);
  return out;
}

NodeView ToNodeView(const node_info_t& n) {
  NodeView v;
  v.name = Str(n.name);
  const uint32_t base = n.node_state & NODE_STATE_BASE;
  v.base_state =
      base <= NODE_STATE_FUTURE ? static_cast<NodeBaseState>(base) : NodeBaseState::kUnknown;
  v.drain = (n.node_state & NODE_STATE_DRAIN) != 0;
  v.fail = (n.node_state & NODE_STATE_FAIL) != 0;
  v.not_responding = (n.node_state & NODE_STATE_NO_RESPOND) != 0;
  v.reboot_requested = (n.node_state & NODE_STATE_REBOOT_REQUESTED) != 0;
  v.reboot_issued = (n.node_state & NODE_STATE_REBOOT_ISSUED) != 0;
  v.boot_time = n.boot_time;
  v.reason = Str(n.reason);
  v.reason_uid = n.reason_uid == NO_VAL ? 0 : n.reason_uid;
  v.reason_time = n.reason_time;
  v.gres = Str(n.gres);
  v.gres_used = Str(n.gres_used);
  v.gpus = skb::slurm::ParseNodeGpus(v.gres);
  v.gpus_used = skb::slurm::ParseNodeGpus(v.gres_used);
  v.features = SplitList(n.features);
  v.active_features = SplitList(n.features_act != nullptr ? n.features_act : n.features);
  v.partitions = SplitList(n.partitions);
  return v;
}

// Logs `what` about job `job_id` once per job (the poll reads every job every few seconds).
void WarnOncePerJob(uint32_t job_id, const std::string& what) {
  static std::mutex mu;
  static std::set<uint32_t> warned;  // GUARDED_BY(mu)
  {
    std::lock_guard<std::mutex> lock(mu);
    if (warned.size() > 100'000) warned.clear();  // job ids do not repeat soon; bound it
    if (!warned.insert(job_id).second) return;
  }
  Logger("slurm")->warn("gres_indices_unreadable job={} {}", job_id, what);
}

JobView ToJobView(const slurm_job_info_t& j) {
  JobView v;
  v.job_id = j.job_id;
  v.array_job_id = j.array_job_id;
  v.array_task_id = j.array_task_id == NO_VAL ? 0 : j.array_task_id;
  v.array_task_str = Str(j.array_task_str);
  v.het_job_id = j.het_job_id;
  v.het_job_offset = j.het_job_offset == NO_VAL ? 0 : j.het_job_offset;
  v.user_id = j.user_id;
  v.user_name = Str(j.user_name);
  v.account = Str(j.account);
  v.qos = Str(j.qos);
  v.partition = Str(j.partition);
  v.priority = j.priority;
  const uint32_t base = j.job_state & JOB_STATE_BASE;
  v.state = base < JOB_END ? static_cast<JobState>(base) : JobState::kUnknown;
  v.completing = (j.job_state & JOB_COMPLETING) != 0;
  v.requeue_pending = (j.job_state & (JOB_REQUEUE | JOB_REQUEUE_HOLD)) != 0;
  v.state_reason = Str(slurm_job_reason_string(static_cast<job_state_reason>(j.state_reason)));
  v.nodes = ExpandHostlist(j.nodes);
  v.required_nodes = ExpandHostlist(j.req_nodes);
  v.reservation = Str(j.resv_name);
  // GPUs per node (and their type): the allocation detail of the first node when running,
  // else the request.
  if (j.gres_detail_cnt > 0 && j.gres_detail_str != nullptr && j.gres_detail_str[0] != nullptr) {
    for (const auto& g : skb::slurm::ParseNodeGpus(j.gres_detail_str[0])) {
      v.gpus_per_node += g.count;
      if (v.gpu_type.empty()) v.gpu_type = g.type;
    }
  } else if (int64_t per_node = skb::slurm::GpusInTres(Str(j.tres_per_node)); per_node > 0) {
    v.gpus_per_node = per_node;
    v.requested_gpus = per_node * std::max<uint32_t>(1, j.num_nodes);
    v.gpu_type = skb::slurm::RequestedGpuType(Str(j.tres_per_node));
  } else if (int64_t per_job = skb::slurm::GpusInTres(Str(j.tres_per_job)); per_job > 0) {
    v.gpus_per_node = per_job / std::max<uint32_t>(1, j.num_nodes);
    v.requested_gpus = per_job;
    v.gpu_type = skb::slurm::RequestedGpuType(Str(j.tres_per_job));
  }
  // GRES indices per node (gres_detail_str[i] belongs to the i-th allocated node).
  if (j.gres_detail_str != nullptr) {
    for (uint32_t i = 0; i < j.gres_detail_cnt && i < v.nodes.size(); ++i) {
      if (j.gres_detail_str[i] == nullptr) continue;
      auto idx = skb::devices::ParseGpuIndices(j.gres_detail_str[i]);
      if (!idx.ok()) {
        WarnOncePerJob(j.job_id, StrCat("node=", v.nodes[i], " gres=\"", j.gres_detail_str[i],
                                        "\" error=\"", idx.status().message(), "\""));
        v.unreadable_gpus[v.nodes[i]] =
            StrCat("GRES \"", j.gres_detail_str[i], "\": ", idx.status().message());
        continue;
      }
      if (!idx->empty()) v.gpu_indices[v.nodes[i]] = std::move(*idx);
    }
  }
  v.name = Str(j.name);
  v.submit_time = j.submit_time;
  v.start_time = j.start_time;
  v.end_time = j.end_time;
  if (j.exit_code != NO_VAL && WIFSIGNALED(static_cast<int>(j.exit_code))) {
    v.exit_signal = WTERMSIG(static_cast<int>(j.exit_code));
  }
  if (j.exit_code != NO_VAL && WIFEXITED(static_cast<int>(j.exit_code))) {
    v.exit_code = WEXITSTATUS(static_cast<int>(j.exit_code));
  }
  v.requeue = j.requeue != 0;
  v.batch = j.batch_flag != 0;
  v.restart_count = j.restart_cnt;
  v.admin_comment = Str(j.admin_comment);
  if (auto note = skb::slurm::ParseAnnotation(v.admin_comment)) v.signal = note->signal;
  return v;
}

// `cluster_mode` is slurm.conf's PreemptMode, which a partition without its own inherits.
PartitionView ToPartitionView(const partition_info_t& p, uint16_t cluster_mode) {
  PartitionView v;
  v.name = Str(p.name);
  const uint16_t mode = p.preempt_mode == NO_VAL16 ? cluster_mode : p.preempt_mode;
  if (mode == NO_VAL16) {
    v.preempt_mode = PreemptMode::kUnknown;
  } else {
    v.gang = (mode & PREEMPT_MODE_GANG) != 0;
    const uint16_t m = mode & ~(PREEMPT_MODE_GANG | PREEMPT_MODE_WITHIN);
    if (m & PREEMPT_MODE_SUSPEND)
      v.preempt_mode = PreemptMode::kSuspend;
    else if (m & PREEMPT_MODE_REQUEUE)
      v.preempt_mode = PreemptMode::kRequeue;
    else if (m & PREEMPT_MODE_CANCEL)
      v.preempt_mode = PreemptMode::kCancel;
    else
      v.preempt_mode = PreemptMode::kOff;
  }
  v.is_default = (p.flags & PART_FLAG_DEFAULT) != 0;
  v.priority_tier = p.priority_tier;
  if (p.max_time != INFINITE && p.max_time != NO_VAL) v.max_time_minutes = p.max_time;
  if (p.default_time != INFINITE && p.default_time != NO_VAL) {
    v.default_time_minutes = p.default_time;
  }
  v.nodes = ExpandHostlist(p.nodes);
  return v;
}

Status LastError(const std::string& what) { return SlurmErrorToStatus(errno, what); }

// node_info_t.partitions is not sent by slurmctld: like scontrol, fill it in from the
// partition table (one more RPC, only when the nodes changed).
Status PopulatePartitions(node_info_msg_t* nodes) {
  partition_info_msg_t* parts = nullptr;
  if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS) {
    return LastError("load partitions (for node partitions)");
  }
  slurm_populate_node_partitions(nodes, parts);
  slurm_free_partition_info_msg(parts);
  return OkStatus();
}

// kWithout: a write checking state, reason or features needs no partitions (one RPC
// less per read).
enum class Partitions { kWith, kWithout };

StatusOr<NodeView> ReadNode(const std::string& name, Partitions parts) {
  node_info_msg_t* msg = nullptr;
  std::string mutable_name = name;
  if (slurm_load_node_single(&msg, mutable_name.data(), SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
    return LastError(StrCat("load node ", name));
  }
  if (parts == Partitions::kWith) {
    if (Status p = PopulatePartitions(msg); !p.ok()) {
      slurm_free_node_info_msg(msg);
      return p;
    }
  }
  std::optional<NodeView> found;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count; ++i) {
    if (msg->node_array[i].name != nullptr && name == msg->node_array[i].name) {
      found = ToNodeView(msg->node_array[i]);
    }
  }
  slurm_free_node_info_msg(msg);
  if (!found) return NotFoundError(StrCat("Slurm has no node named '", name, "'"));
  return *found;
}

// The named nodes in one RPC, no partitions (one node: that node alone; more: every node,
// so a single drain on a large cluster costs no more than before batching); a name Slurm
// does not know is absent from the result.
StatusOr<std::map<std::string, NodeView>> ReadNodes(const std::vector<std::string>& names) {
  if (names.size() == 1) {
    StatusOr<NodeView> one = ReadNode(names.front(), Partitions::kWithout);
    if (one.ok()) return std::map<std::string, NodeView>{{names.front(), *std::move(one)}};
    if (one.status().code() == StatusCode::kNotFound) return std::map<std::string, NodeView>{};
    return one.status();
  }
  node_info_msg_t* msg = nullptr;
  if (slurm_load_node(0, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
    return LastError("load nodes");
  }
  std::map<std::string, NodeView> out;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count; ++i) {
    const char* n = msg->node_array[i].name;
    if (n != nullptr && std::find(names.begin(), names.end(), n) != names.end()) {
      out.emplace(n, ToNodeView(msg->node_array[i]));
    }
  }
  slurm_free_node_info_msg(msg);
  return out;
}

StatusOr<JobView> ReadJob(uint32_t job_id) {
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job(&msg, JobId(job_id), SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
    return LastError(StrCat("load job ", job_id));
  }
  std::optional<JobView> found;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count; ++i) {
    if (msg->job_array[i].job_id == job_id) found = ToJobView(msg->job_array[i]);
  }
  slurm_free_job_info_msg(msg);
  if (!found) return NotFoundError(StrCat("Slurm has no job ", job_id));
  return *found;
}

// Re-reads until `done` holds or `budget` runs out: writes are verified, not assumed.
template <typename T>
StatusOr<T> WaitUntil(const std::function<StatusOr<T>()>& read,
                      const std::function<bool(const T&)>& done, std::chrono::milliseconds budget,
                      const std::string& what) {
  const auto deadline = Clock::now() + budget;
  for (;;) {
    ASSIGN_OR_RETURN(T v, read());
    if (done(v)) return v;
    if (Clock::now() >= deadline) {
      return UnavailableError(StrCat(what, ": not visible in Slurm after ", budget.count(),
                                     "ms (the request was accepted; retry to check again)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The pending or running placeholder whose record has `key` (devices::PlaceholderKey: its
// pod, or a health hold's node, device and slot), if any.
StatusOr<std::optional<uint32_t>> FindPlaceholder(const std::string& key) {
  job_info_msg_t* msg = nullptr;
  if (slurm_load_jobs(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
    return LastError("load jobs (for placeholders)");
  }
  std::optional<uint32_t> found;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count && !found; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    if ((base != JOB_PENDING && base != JOB_RUNNING) ||
        Str(j.name) != devices::kPlaceholderJobName) {
      continue;
    }
    std::optional<devices::PlaceholderRecord> r =
        devices::ParsePlaceholderRecord(Str(j.admin_comment));
    if (r && devices::PlaceholderKey(*r) == key) found = j.job_id;
  }
  slurm_free_job_info_msg(msg);
  return found;
}

// Submits the placeholder of `s` (SlurmClient::SubmitPlaceholder says what it is) as a job
// allocation, what `salloc --no-shell` makes: nothing runs on the node, and slurmctld tries
// to place it at once. A batch job waits for the next scheduling pass, up to
// `batch_sched_delay` (3 s by default) after the last one: on the testbed, 1.45 s (p50) from
// submission to RUNNING on idle GPUs while other jobs were being submitted, against 0.07 s
// for an allocation at the placeholder's priority. No response port is given: slurmctld
// sends no allocation message, and InactiveLimit, which ends allocations whose requester
// stops answering, applies only to allocations that named one.
// A job description for one of the bridge's own jobs (the placeholder, the maintenance
// check job) and the strings it points into: named `name`, on exactly `node`, one node, as
// this process's user, never requeued, started in `work_dir`.
class OwnJob {
 public:
  OwnJob(std::string_view name, const std::string& node, std::string_view work_dir) {
    slurm_init_job_desc_msg(&desc);
    desc.name = Keep(std::string(name));
    desc.req_nodes = Keep(node);
    desc.min_nodes = desc.max_nodes = 1;
    desc.work_dir = Keep(std::string(work_dir));
    desc.requeue = 0;
    desc.user_id = getuid();
    desc.group_id = getgid();
  }
  OwnJob(const OwnJob&) = delete;
  OwnJob& operator=(const OwnJob&) = delete;

  // A copy of `value` that lives as long as this job (a deque keeps its elements in place).
  char* Keep(std::string value) { return strings_.emplace_back(std::move(value)).data(); }
  // `*field` = a copy of `value`, unless it is empty (Slurm's default then).
  void SetIf(char** field, const std::string& value) {
    if (!value.empty()) *field = Keep(value);
  }

  job_desc_msg_t desc;

 private:
  std::deque<std::string> strings_;
};

StatusOr<uint32_t> SubmitPlaceholderJob(const PlaceholderSpec& s) {
  OwnJob job(devices::kPlaceholderJobName, s.node, "/");
  job_desc_msg_t& desc = job.desc;
  job.SetIf(&desc.partition, s.partition);
  job.SetIf(&desc.qos, s.qos);
  job.SetIf(&desc.account, s.account);
  desc.num_tasks = 1;
  desc.min_cpus = 1;
  desc.pn_min_memory = kPlaceholderMemoryMb;
  desc.tres_per_node = job.Keep(
      StrCat(kGresTresPrefix, "gpu:", s.gres_type.empty() ? "" : StrCat(s.gres_type, ":"), s.gpus));
  // No time limit: a placeholder ends when the bridge ends it, never because a partition's
  // DefaultTime ran out while a pod uses its GPUs (the device lane refuses a placeholder
  // partition whose MaxTime is finite: devices::PlaceholderPartitionProblem).
  desc.time_limit = INFINITE;
  desc.priority = devices::kPlaceholderPriority;
  desc.admin_comment = job.Keep(s.admin_comment);
  desc.immediate = 0;  // wait (pending) when the GPUs are not free yet
  desc.alloc_resp_port = 0;
  desc.other_port = 0;
  resource_allocation_response_msg_t* resp = nullptr;
  if (slurm_allocate_resources(&desc, &resp) != SLURM_SUCCESS) {
    return LastError(StrCat("submit placeholder for ", s.gpus, " GPUs",
                            s.gres_type.empty() ? "" : StrCat(" of type ", s.gres_type), " on ",
                            s.node));
  }
  if (resp == nullptr) return InternalError("slurm_allocate_resources returned no response");
  const uint32_t id = JobIdOf(*resp);
  slurm_free_resource_allocation_response_msg(resp);
  return id;
}

// --- The reboot request (see the declarations of slurm_msg_t_init above) ---
// slurm_msg_t and reboot_msg_t as src/common/slurm_protocol_defs.h of each release lays them
// out (read at the tags slurm-22-05-8-1, slurm-24-11-5-1 and slurm-26-05-3-1; the offsets
// asserted are those where each release's own slurm_msg_t_init in Debian's libslurm.so
// writes). Pointers to types this file does not know are void*. Before a request is sent,
// RebootMessageLayoutProblem checks what the loaded library's slurm_msg_t_init writes against
// this layout: a library laid out otherwise gets Unimplemented, never a malformed RPC.
constexpr uint16_t kRequestRebootNodes = 1015;  // REQUEST_REBOOT_NODES: a wire number
constexpr uint16_t kRebootFlagsAsap = 0x0001;   // REBOOT_FLAGS_ASAP
constexpr uint16_t kForwardInit = 0xfffe;       // FORWARD_INIT
constexpr uid_t kAuthNobody = 99;               // SLURM_AUTH_NOBODY

#define SKB_SLURM_IS(major, minor) \
  ((SLURM_VERSION_NUMBER >> 8) == (SLURM_VERSION_NUM(major, minor, 0) >> 8))
#if SKB_SLURM_IS(22, 5)
#define SKB_REBOOT_LAYOUT_KNOWN 1
struct SlurmForward {
  uint16_t cnt;
  uint16_t init;
  char* nodelist;
  uint32_t timeout;
  uint16_t tree_width;
};
struct SlurmMsg {
  slurm_addr_t address;
  void* auth_cred;
  int auth_index;
  uid_t auth_uid;
  bool auth_uid_set;
  uid_t restrict_uid;
  bool restrict_uid_set;
  uint32_t body_offset;
  void* buffer;
  void* conn;
  int conn_fd;
  void* data;
  uint32_t data_size;
  uint16_t flags;
  uint8_t hash_index;
  uint16_t msg_type;
  uint16_t protocol_version;
  SlurmForward forward;
  void* forward_struct;
  slurm_addr_t orig_addr;
  void* ret_list;
};
static_assert(sizeof(SlurmMsg) == 0x178 && offsetof(SlurmMsg, auth_uid) == 0x8c &&
              offsetof(SlurmMsg, conn_fd) == 0xb0 && offsetof(SlurmMsg, msg_type) == 0xc8 &&
              offsetof(SlurmMsg, forward) == 0xd0);
// What slurm_msg_t_init sets besides the members every release's sets.
bool InitSetReleaseMembers(const SlurmMsg& m) { return m.conn_fd == -1 && !m.auth_uid_set; }
struct RebootMsg {
  char* features;
  uint16_t flags;
  uint32_t next_state;
  char* node_list;
  char* reason;
};
#elif SKB_SLURM_IS(24, 11) || SKB_SLURM_IS(26, 5)
#define SKB_REBOOT_LAYOUT_KNOWN 1
struct SlurmForward {
  slurm_node_alias_addrs_t alias_addrs;
  uint16_t cnt;
  uint16_t init;
  char* nodelist;
  uint32_t timeout;
  uint16_t tree_width;
  uint16_t tree_depth;
};
#if SKB_SLURM_IS(24, 11)
struct SlurmMsg {
  slurm_addr_t address;
  void* auth_cred;
  int auth_index;
  uid_t auth_uid;
  gid_t auth_gid;
  bool auth_ids_set;
  uid_t restrict_uid;
  bool restrict_uid_set;
  uint32_t body_offset;
  void* buffer;
  void* conn;
  int conn_fd;
  void* conmgr_fd;
  void* data;
  uint16_t flags;
  uint8_t hash_index;
  uint16_t msg_type;
  uint16_t protocol_version;
  SlurmForward forward;
  void* forward_struct;
  slurm_addr_t orig_addr;
  void* ret_list;
};
static_assert(sizeof(SlurmMsg) == 0x1a8 && offsetof(SlurmMsg, auth_uid) == 0x8c &&
              offsetof(SlurmMsg, conn_fd) == 0xb8 && offsetof(SlurmMsg, msg_type) == 0xd4 &&
              offsetof(SlurmMsg, forward) + offsetof(SlurmForward, init) == 0x102);
bool InitSetReleaseMembers(const SlurmMsg& m) {
  return m.conn_fd == -1 && m.auth_gid == kAuthNobody;
}
struct RebootMsg {
  char* features;
  uint16_t flags;
  uint32_t next_state;
  char* node_list;
  char* reason;
};
#else
struct SlurmMsg {
  slurm_addr_t address;
  void* auth_cred;
  int auth_index;
  uid_t auth_uid;
  gid_t auth_gid;
  bool auth_ids_set;
  uid_t restrict_uid;
  bool restrict_uid_set;
  uint32_t body_offset;
  void* buffer;
  void* pcon;
  void* conmgr_con;
  void* data;
  uint16_t flags;
  uint8_t hash_index;
  char* tls_cert;
  void* conn;
  bool conn_is_mtls;
  uint16_t msg_type;
  uint16_t protocol_version;
  SlurmForward forward;
  void* forward_struct;
  slurm_addr_t orig_addr;
  void* ret_list;
};
static_assert(sizeof(SlurmMsg) == 0x1b8 && offsetof(SlurmMsg, auth_uid) == 0x8c &&
              offsetof(SlurmMsg, restrict_uid) == 0x98 && offsetof(SlurmMsg, msg_type) == 0xe2 &&
              offsetof(SlurmMsg, forward) + offsetof(SlurmForward, init) == 0x112);
bool InitSetReleaseMembers(const SlurmMsg& m) {
  return m.restrict_uid == kAuthNobody && m.auth_gid == kAuthNobody;
}
// 26.05 added the PowerAction to run (nullptr: the RebootProgram).
struct RebootMsg {
  char* features;
  uint16_t flags;
  uint32_t next_state;
  char* node_list;
  char* power_action_name;
  char* reason;
};
#endif
#endif
#undef SKB_SLURM_IS

#ifdef SKB_REBOOT_LAYOUT_KNOWN
// "" when the loaded library's slurm_msg_t is SlurmMsg: its slurm_msg_t_init, run on a
// buffer a page longer, wrote nothing past sizeof(SlurmMsg), wrote the last member, and put
// the values it sets where SlurmMsg has those members. Checked once per process.
const std::string& RebootMessageLayoutProblem() {
  static const std::string problem = []() -> std::string {
    constexpr unsigned char kFill = 0xa5;
    std::vector<unsigned char> buf(sizeof(SlurmMsg) + 4096, kFill);
    slurm_msg_t_init(buf.data());
    if (std::any_of(buf.begin() + sizeof(SlurmMsg), buf.end(),
                    [](unsigned char c) { return c != kFill; })) {
      return "its slurm_msg_t is larger";
    }
    SlurmMsg m;
    std::memcpy(&m, buf.data(), sizeof(m));
    if (m.ret_list != nullptr) return "its slurm_msg_t is smaller";
    if (m.msg_type != NO_VAL16 || m.protocol_version != NO_VAL16 ||
        m.forward.init != kForwardInit || m.auth_uid != kAuthNobody || m.data != nullptr ||
        !InitSetReleaseMembers(m)) {
      return "slurm_msg_t_init set other members than this layout's";
    }
    return "";
  }();
  return problem;
}
#endif

// `scontrol reboot ASAP nextstate=DOWN reason=REASON NODE`: slurmctld drains the node,
// replaces its reason with `reason`, and has the RebootProgram run once the node is idle.
Status SendReboot(const std::string& node, const std::string& reason) {
  const std::string release = StrCat(SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), ".",
                                     SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER));
#ifndef SKB_REBOOT_LAYOUT_KNOWN
  (void)node;
  (void)reason;
  return UnimplementedError(StrCat("reboot of ", node, ": this build knows Slurm's reboot request",
                                   " of 22.05, 24.11 and 26.05, not of ", release));
#else
  if (const std::string& problem = RebootMessageLayoutProblem(); !problem.empty()) {
    return UnimplementedError(StrCat("reboot of ", node, ": libslurm ", release,
                                     " is not laid out as this build expects (", problem,
                                     "): build the bridge against the libslurm it loads"));
  }
  // slurmctld takes a reboot without a RebootProgram and then waits for a boot that never
  // comes (the node ends DOWN, "reboot timed out"): refused here instead, as scontrol does.
  slurm_conf_t* conf = nullptr;
  if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) {
    return LastError("load slurmctld config (for RebootProgram)");
  }
  const bool has_program = conf->reboot_program != nullptr && conf->reboot_program[0] != '\0';
  slurm_free_ctl_conf(conf);
  if (!has_program) {
    return FailedPreconditionError(
        StrCat("reboot of ", node, ": slurm.conf sets no RebootProgram, so Slurm cannot reboot"));
  }
  std::string names = node, why = reason;
  RebootMsg req{};
  req.flags = kRebootFlagsAsap;
  req.next_state = NODE_STATE_DOWN;
  req.node_list = names.data();
  req.reason = why.data();
  SlurmMsg msg;
  slurm_msg_t_init(&msg);
  msg.msg_type = kRequestRebootNodes;
  msg.data = &req;
  int rc = SLURM_SUCCESS;
  if (slurm_send_recv_controller_rc_msg(&msg, &rc, nullptr) < 0) {
    return LastError(StrCat("reboot node ", node));
  }
  if (rc != SLURM_SUCCESS) return SlurmErrorToStatus(rc, StrCat("reboot node ", node));
  return OkStatus();
#endif
}

// A reservation as the maintenance cycle reads it.
struct Reservation {
  std::string node_list;           // as Slurm prints it
  std::vector<std::string> nodes;  // expanded
};

// The reservation named `name`, if there is one.
StatusOr<std::optional<Reservation>> FindReservation(const std::string& name) {
  reserve_info_msg_t* msg = nullptr;
  if (slurm_load_reservations(0, &msg) != SLURM_SUCCESS) return LastError("load reservations");
  std::optional<Reservation> found;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count && !found; ++i) {
    const reserve_info_t& r = msg->reservation_array[i];
    if (Str(r.name) == name) found = Reservation{Str(r.node_list), ExpandHostlist(r.node_list)};
  }
  slurm_free_reservation_info_msg(msg);
  return found;
}

// The user name of this process's uid (a reservation names its users by name).
StatusOr<std::string> ProcessUserName() {
  const uid_t uid = getuid();
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  const int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &result);
  if (rc != 0 || result == nullptr || result->pw_name == nullptr) {
    return FailedPreconditionError(StrCat("uid ", uid, " has no user name (getpwuid_r: ",
                                          rc == 0 ? "no such entry" : std::strerror(rc),
                                          "): a reservation names its users"));
  }
  return std::string(result->pw_name);
}

// `scontrol create reservation` of `s` for `user`: Flags=MAINT,IGNORE_JOBS from now (the
// start time left unset is slurmctld's now) for s.minutes, on s.node alone.
Status SendCreateReservation(const MaintenanceReservationSpec& s, const std::string& user) {
  resv_desc_msg_t desc;
  slurm_init_resv_desc_msg(&desc);
  std::string name = s.name, nodes = s.node, users = user;
  desc.name = name.data();
  desc.node_list = nodes.data();
  desc.users = users.data();
  desc.flags = RESERVE_FLAG_MAINT | RESERVE_FLAG_IGN_JOBS;
  desc.duration = static_cast<uint32_t>(s.minutes);
  char* created = slurm_create_reservation(&desc);
  if (created == nullptr) {
    return LastError(StrCat("create reservation ", s.name, " on ", s.node));
  }
  // Its header says how the name is released: free() up to 24.11, xfree from 26.05 on (the
  // releases between were not read: taken as the newer).
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
  slurm_xfree(reinterpret_cast<void**>(&created));
#else
  free(created);
#endif
  return OkStatus();
}

// The pending or running check job of this process's user that asks for or runs on `node`,
// if any. Another user's job of that name is not the bridge's check.
StatusOr<std::optional<uint32_t>> FindCheckJob(const std::string& node, int64_t since) {
  job_info_msg_t* msg = nullptr;
  if (slurm_load_jobs(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
    return LastError("load jobs (for the maintenance check job)");
  }
  const uid_t uid = getuid();
  std::optional<uint32_t> found;
  for (uint32_t i = 0; msg != nullptr && i < msg->record_count && !found; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    const uint32_t base = j.job_state & JOB_STATE_BASE;
    if (!CheckJobCounts(base == JOB_PENDING || base == JOB_RUNNING, j.submit_time, since) ||
        j.user_id != uid || Str(j.name) != health::kMaintenanceCheckJobName) {
      continue;
    }
    auto has = [&](const char* list) {
      const std::vector<std::string> nodes = ExpandHostlist(list);
      return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
    };
    if (has(j.req_nodes) || has(j.nodes)) found = j.job_id;
  }
  slurm_free_job_info_msg(msg);
  return found;
}

// The check job of `s` (SlurmClient::SubmitCheckJob says what it is) as sbatch submits it:
// --job-name, --nodelist, --reservation, --exclusive, --gres=gpu:N, --time, --no-requeue,
// --output and --error, --chdir=/tmp, the script "#!/bin/sh" and the command. A batch job
// needs an environment; it gets a PATH only, none of the daemon's (slurmstepd adds the
// job's SLURM_* variables, SLURMD_NODENAME among them).
StatusOr<uint32_t> SubmitCheckBatchJob(const CheckJobSpec& s) {
  OwnJob job(health::kMaintenanceCheckJobName, s.node, "/tmp");
  job_desc_msg_t& desc = job.desc;
  job.SetIf(&desc.reservation, s.reservation);
  job.SetIf(&desc.partition, s.partition);
  desc.shared = JOB_SHARED_NONE;  // --exclusive: the whole node
  if (s.gpus > 0) desc.tres_per_node = job.Keep(StrCat(kGresTresPrefix, "gpu:", s.gpus));
  desc.time_limit = static_cast<uint32_t>(s.time_limit_minutes);
  desc.std_out = desc.std_err = job.Keep(s.output.empty() ? "/dev/null" : s.output);
  desc.script = job.Keep(StrCat("#!/bin/sh\n", s.command, "\n"));
  char* env[] = {job.Keep("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                 nullptr};
  desc.environment = env;
  desc.env_size = 1;
  submit_response_msg_t* resp = nullptr;
  if (slurm_submit_batch_job(&desc, &resp) != SLURM_SUCCESS) {
    return LastError(
        StrCat("submit the maintenance check job on ", s.node,
               s.reservation.empty() ? "" : StrCat(" in reservation ", s.reservation)));
  }
  if (resp == nullptr) return InternalError("slurm_submit_batch_job returned no response");
  const uint32_t id = JobIdOf(*resp);
  slurm_free_submit_response_response_msg(resp);
  return id;
}

StatusOr<WriteOutcome> UpdateNode(update_node_msg_t* msg, const std::string& what) {
  if (slurm_update_node(msg) != SLURM_SUCCESS) return LastError(what);
  return WriteOutcome::kChanged;
}

// One update_node draining `names` (a hostlist) with `reason`, as the daemon's uid.
Status SendDrain(const std::string& names, const std::string& reason) {
  update_node_msg_t msg;
  slurm_init_update_node_msg(&msg);
  std::string hosts = names, why = reason;
  msg.node_names = hosts.data();
  msg.node_state = NODE_STATE_DRAIN;
  msg.reason = why.data();
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(26, 5, 0)
  msg.reason_uid = getuid();
#endif
  return UpdateNode(&msg, StrCat("drain node ", names)).status();
}

bool IsFinished(const JobView& j) {
  return j.state != JobState::kPending && j.state != JobState::kRunning &&
         j.state != JobState::kSuspended && !j.requeue_pending;
}

// One verified job state change: kUnchanged when `already` holds, else `act` (a libslurm
// call returning SLURM_SUCCESS or an error) and re-reads until `done`.
StatusOr<WriteOutcome> JobTransition(uint32_t job_id, const std::string& what,
                                     std::chrono::milliseconds verify,
                                     const std::function<bool(const JobView&)>& already,
                                     const std::function<int()>& act,
                                     const std::function<bool(const JobView&)>& done) {
  ASSIGN_OR_RETURN(JobView j, ReadJob(job_id));
  if (already(j)) return WriteOutcome::kUnchanged;
  if (act() != SLURM_SUCCESS) {
    if (errno == ESLURM_ALREADY_DONE && what == "cancel") {
      return WriteOutcome::kUnchanged;
    }
    return LastError(StrCat(what, " job ", job_id));
  }
  RETURN_IF_ERROR(WaitUntil<JobView>([&] { return ReadJob(job_id); }, done, verify,
                                     StrCat(what, " of job ", job_id))
                      .status());
  return WriteOutcome::kChanged;
}

// Drains `nodes` with `reason`: one read, one update_node naming them all (a hostlist),
// one verifying read until every drain is visible. Returns each node's outcome; the admin
// rule of SlurmClient::DrainNode holds per node. If slurmctld refuses the joint update,
// the nodes are updated one by one so that one bad node fails alone.
std::map<std::string, StatusOr<WriteOutcome>> DrainNodes(const std::vector<std::string>& nodes,
                                                         const std::string& reason,
                                                         std::chrono::milliseconds verify) {
  std::map<std::string, StatusOr<WriteOutcome>> out;
  auto fail_all = [&](const Status& s) {
    for (const auto& n : nodes) out.insert_or_assign(n, s);
    return out;
  };
  auto drained = [&](const NodeView& v) { return v.drain && v.reason == reason; };
  StatusOr<std::map<std::string, NodeView>> before = ReadNodes(nodes);
  if (!before.ok()) return fail_all(before.status());
  std::vector<std::string> todo;
  for (const auto& n : nodes) {
    auto it = before->find(n);
    if (it == before->end()) {
      out.insert_or_assign(n, NotFoundError(StrCat("Slurm has no node named '", n, "'")));
    } else if (drained(it->second) || (it->second.drain && !it->second.DrainedByBridge())) {
      // Already ours, or somebody else's drain that stays as it is.
      out.insert_or_assign(n, WriteOutcome::kUnchanged);
    } else {
      todo.push_back(n);
    }
  }
  if (todo.empty()) return out;
  auto update = [&](const std::string& names) { return SendDrain(names, reason); };
  std::string joined;
  for (const auto& n : todo) StrAppend(&joined, joined.empty() ? "" : ",", n);
  std::vector<std::string> sent;
  if (update(joined).ok()) {
    sent = todo;
  } else {
    for (const auto& n : todo) {
      if (Status s = update(n); s.ok()) {
        sent.push_back(n);
      } else {
        out.insert_or_assign(n, s);
      }
    }
  }
  if (sent.empty()) return out;
  auto visible = WaitUntil<std::map<std::string, NodeView>>(
      [&] { return ReadNodes(sent); },
      [&](const std::map<std::string, NodeView>& now) {
        return std::all_of(sent.begin(), sent.end(), [&](const std::string& n) {
          auto it = now.find(n);
          return it != now.end() && drained(it->second);
        });
      },
      verify, StrCat("drain of ", joined));
  for (const auto& n : sent) {
    if (visible.ok()) {
      out.insert_or_assign(n, WriteOutcome::kChanged);
    } else {
      out.insert_or_assign(n, visible.status());
    }
  }
  return out;
}

}  // namespace

Status SlurmErrorToStatus(int err, const std::string& what) {
  const char* text = slurm_strerror(err);
  std::string msg =
      StrCat(what, ": ", text != nullptr ? text : "unknown error", " (slurm errno ", err, ")");
  StatusCode code = StatusCode::kUnknown;
  switch (err) {
    case ESLURM_INVALID_JOB_ID:
    case ESLURM_INVALID_NODE_NAME:
    case ESLURM_RESERVATION_INVALID:
      code = StatusCode::kNotFound;
      break;
    case ESLURM_ACCESS_DENIED:
    case ESLURM_USER_ID_MISSING:
    case ESLURM_RESERVATION_ACCESS:
    case EACCES:  // slurmctld's answer to a reboot request of a non-operator
      code = StatusCode::kPermissionDenied;
      break;
    case ESLURM_ALREADY_DONE:
    case ESLURM_JOB_PENDING:
    case ESLURM_TRANSITION_STATE_NO_UPDATE:
    case ESLURM_JOB_NOT_RUNNING:
    case ESLURM_JOB_NOT_PENDING:
    case ESLURM_JOB_NOT_PENDING_NOR_RUNNING:
    case ESLURM_JOB_SUSPENDED:
    case ESLURM_JOB_NOT_SUSPENDED:
    case ESLURM_DISABLED:
    case ESLURM_BATCH_ONLY:
    case ESLURM_NOT_SUPPORTED:
    case ESLURM_RESERVATION_BUSY:
    case ESLURM_RESERVATION_OVERLAP:
    case ESLURM_RESERVATION_NAME_DUP:
    case ESLURM_REBOOT_IN_PROGRESS:
      code = StatusCode::kFailedPrecondition;
      break;
    case ESLURM_INVALID_FEATURE:
    case ESLURM_INVALID_GRES:
    case ESLURM_INVALID_TIME_VALUE:
      code = StatusCode::kInvalidArgument;
      break;
    case ESLURM_IN_STANDBY_MODE:
    case ESLURM_IN_STANDBY_USE_BACKUP:
    case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
    case EAGAIN:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
      code = StatusCode::kUnavailable;
      break;
    default:
      // Every communication failure (1000-1099 generic, 1800-1899 to slurmctld, 5000-5099
      // socket layer): slurmctld down, restarting or unreachable.
      if ((err >= SLURM_UNEXPECTED_MSG_ERROR && err < SLURM_UNEXPECTED_MSG_ERROR + 100) ||
          (err >= SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR &&
           err < SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR + 100) ||
          (err >= kSocketErrorBase && err < kSocketErrorBase + 100)) {
        code = StatusCode::kUnavailable;
      }
  }
  Status s(code, std::move(msg));
  s.SetPayload("slurm_errno", std::to_string(err));
  return s;
}

LibSlurmClient::LibSlurmClient(Options options) : options_(std::move(options)) {
  const std::string conf = options_.conf;
  thread_ = std::make_unique<CallThread>("slurm-rpc", [conf] { InitSlurmOnce(conf); });
}

LibSlurmClient::~LibSlurmClient() = default;

StatusOr<Loaded<NodeView>> LibSlurmClient::LoadNodes(UnixTime since) {
  return Call<Loaded<NodeView>>("load nodes", [since]() -> StatusOr<Loaded<NodeView>> {
    node_info_msg_t* msg = nullptr;
    Loaded<NodeView> out;
    if (slurm_load_node(static_cast<time_t>(since), &msg, SHOW_ALL | SHOW_DETAIL) !=
        SLURM_SUCCESS) {
      if (errno == SLURM_NO_CHANGE_IN_DATA) {
        out.update_time = since;
        return out;
      }
      return LastError("load nodes");
    }
    if (Status p = PopulatePartitions(msg); !p.ok()) {
      slurm_free_node_info_msg(msg);
      return p;
    }
    out.changed = true;
    out.update_time = msg->last_update;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      if (msg->node_array[i].name == nullptr) continue;  // hidden or future slot
      out.items.push_back(ToNodeView(msg->node_array[i]));
    }
    slurm_free_node_info_msg(msg);
    return out;
  });
}

StatusOr<NodeView> LibSlurmClient::LoadNode(const std::string& name) {
  return Call<NodeView>("load node", [name] { return ReadNode(name, Partitions::kWith); });
}

void LibSlurmClient::ReportError(const std::string& what, const Status& status) const {
  // "load jobs" -> "load_jobs": a label value; NotFound is an answer, not a failure.
  if (status.code() == StatusCode::kNotFound) return;
  std::string call = what;
  std::replace(call.begin(), call.end(), ' ', '_');
  options_.on_error(call, status);
}

StatusOr<Loaded<JobView>> LibSlurmClient::LoadJobs(UnixTime since) {
  return Call<Loaded<JobView>>("load jobs", [since]() -> StatusOr<Loaded<JobView>> {
    job_info_msg_t* msg = nullptr;
    Loaded<JobView> out;
    if (slurm_load_jobs(static_cast<time_t>(since), &msg, SHOW_ALL | SHOW_DETAIL) !=
        SLURM_SUCCESS) {
      if (errno == SLURM_NO_CHANGE_IN_DATA) {
        out.update_time = since;
        return out;
      }
      return LastError("load jobs");
    }
    out.changed = true;
    out.update_time = msg->last_update;
    out.items.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i)
      out.items.push_back(ToJobView(msg->job_array[i]));
    slurm_free_job_info_msg(msg);
    return out;
  });
}

StatusOr<JobView> LibSlurmClient::LoadJob(uint32_t job_id) {
  return Call<JobView>("load job", [job_id] { return ReadJob(job_id); });
}

StatusOr<Loaded<PartitionView>> LibSlurmClient::LoadPartitions(UnixTime since) {
  return Call<Loaded<PartitionView>>(
      "load partitions", [since]() -> StatusOr<Loaded<PartitionView>> {
        partition_info_msg_t* msg = nullptr;
        Loaded<PartitionView> out;
        if (slurm_load_partitions(static_cast<time_t>(since), &msg, SHOW_ALL) != SLURM_SUCCESS) {
          if (errno == SLURM_NO_CHANGE_IN_DATA) {
            out.update_time = since;
            return out;
          }
          return LastError("load partitions");
        }
        slurm_conf_t* conf = nullptr;
        if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) {
          slurm_free_partition_info_msg(msg);
          return LastError("load slurmctld config (for PreemptMode)");
        }
        const uint16_t cluster_mode = conf->preempt_mode;
        slurm_free_ctl_conf(conf);
        out.changed = true;
        out.update_time = msg->last_update;
        for (uint32_t i = 0; i < msg->record_count; ++i) {
          if (msg->partition_array[i].name == nullptr) continue;
          out.items.push_back(ToPartitionView(msg->partition_array[i], cluster_mode));
        }
        slurm_free_partition_info_msg(msg);
        return out;
      });
}

StatusOr<WriteOutcome> LibSlurmClient::DrainNode(const std::string& node,
                                                 const std::string& reason) {
  if (reason.rfind(kBridgeReasonPrefix, 0) != 0) {
    return InvalidArgumentError(
        StrCat("drain reason '", reason, "' must start with '", kBridgeReasonPrefix, "'"));
  }
  // Queued by reason; whichever call of that reason reaches the call thread first drains
  // every node queued by then, and the others find their outcome waiting.
  auto request = std::make_shared<DrainQueue::Request>();
  request->node = node;
  {
    std::lock_guard<std::mutex> lock(drains_->mu);
    drains_->by_reason[reason].push_back(request);
  }
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>(
      "drain node", [request, reason, verify, q = drains_]() -> StatusOr<WriteOutcome> {
        if (!request->outcome) {
          std::vector<std::shared_ptr<DrainQueue::Request>> batch;
          {
            std::lock_guard<std::mutex> lock(q->mu);
            batch = std::move(q->by_reason[reason]);
            q->by_reason.erase(reason);
          }
          std::vector<std::string> nodes;
          for (const auto& r : batch) {
            if (std::find(nodes.begin(), nodes.end(), r->node) == nodes.end()) {
              nodes.push_back(r->node);
            }
          }
          auto outcomes = DrainNodes(nodes, reason, verify);
          for (const auto& r : batch) r->outcome = outcomes.at(r->node);
          q->batches.fetch_add(1);
        }
        return *request->outcome;
      });
}

StatusOr<WriteOutcome> LibSlurmClient::HandOverDrain(const std::string& node,
                                                     const std::string& reason) {
  if (reason.empty() || reason.rfind(kBridgeReasonPrefix, 0) == 0) {
    return InvalidArgumentError(StrCat("hand-over drain reason '", reason,
                                       "' must not start with '", kBridgeReasonPrefix, "'"));
  }
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("hand over drain", [node, reason, verify]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(NodeView n, ReadNode(node, Partitions::kWithout));
    if (n.drain && (!n.DrainedByBridge() || n.reason == reason)) return WriteOutcome::kUnchanged;
    RETURN_IF_ERROR(SendDrain(node, reason));
    RETURN_IF_ERROR(
        WaitUntil<NodeView>([&] { return ReadNode(node, Partitions::kWithout); },
                            [&](const NodeView& v) { return v.drain && v.reason == reason; },
                            verify, StrCat("drain of ", node))
            .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<WriteOutcome> LibSlurmClient::ResumeNode(const std::string& node) {
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("resume node", [node, verify]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(NodeView n, ReadNode(node, Partitions::kWithout));
    if (!n.drain && n.base_state != NodeBaseState::kDown) return WriteOutcome::kUnchanged;
    if (!n.DrainedByBridge()) {
      return FailedPreconditionError(StrCat(
          "node ", node, " is ", n.StateString(), " with reason '", n.reason, "' set by uid ",
          n.reason_uid, "; the bridge only resumes drains it made (reason prefix '",
          kBridgeReasonPrefix, "')"));
    }
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    std::string names = node;
    msg.node_names = names.data();
    msg.node_state = NODE_RESUME;
    RETURN_IF_ERROR(UpdateNode(&msg, StrCat("resume node ", node)).status());
    RETURN_IF_ERROR(WaitUntil<NodeView>([&] { return ReadNode(node, Partitions::kWithout); },
                                        [](const NodeView& v) { return !v.DrainedByBridge(); },
                                        verify, StrCat("resume of ", node))
                        .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<WriteOutcome> LibSlurmClient::SetFeatures(const std::string& node,
                                                   const std::vector<std::string>& features) {
  const auto verify = options_.verify_timeout;
  std::vector<std::string> want = features;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  return Call<WriteOutcome>("set features", [node, want, verify]() -> StatusOr<WriteOutcome> {
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    ASSIGN_OR_RETURN(NodeView n, ReadNode(node, Partitions::kWithout));
    if (sorted(n.features) == want && sorted(n.active_features) == want) {
      return WriteOutcome::kUnchanged;
    }
    std::string joined;
    for (const auto& f : want) StrAppend(&joined, joined.empty() ? "" : ",", f);
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    std::string names = node;
    msg.node_names = names.data();
    std::string active = joined;
    msg.features = joined.data();
    msg.features_act = active.data();
    RETURN_IF_ERROR(UpdateNode(&msg, StrCat("set features of ", node)).status());
    RETURN_IF_ERROR(WaitUntil<NodeView>([&] { return ReadNode(node, Partitions::kWithout); },
                                        [&](const NodeView& v) {
                                          return sorted(v.features) == want &&
                                                 sorted(v.active_features) == want;
                                        },
                                        verify, StrCat("features of ", node))
                        .status());
    return WriteOutcome::kChanged;
  });
}

Status LibSlurmClient::SignalJob(uint32_t job_id, int signal, SignalScope scope) {
  if (signal <= 0 || signal >= 65) return InvalidArgumentError(StrCat("bad signal ", signal));
  uint16_t flags = 0;
  switch (scope) {
    case SignalScope::kBatchStep:
      flags = KILL_JOB_BATCH;
      break;
    case SignalScope::kSteps:
      flags = KILL_STEPS_ONLY;
      break;
    case SignalScope::kFullJob:
      flags = KILL_FULL_JOB;
      break;
  }
  auto r = Call<bool>("signal job", [job_id, signal, flags]() -> StatusOr<bool> {
    ASSIGN_OR_RETURN(JobView j, ReadJob(job_id));
    if (j.state != JobState::kRunning && j.state != JobState::kSuspended) {
      return FailedPreconditionError(StrCat("job ", job_id, " is ", JobStateName(j.state),
                                            ": only running jobs can be signalled"));
    }
    if (slurm_kill_job(JobId(job_id), static_cast<uint16_t>(signal), flags) != SLURM_SUCCESS) {
      return LastError(StrCat("signal ", signal, " to job ", job_id));
    }
    return true;
  });
  return r.status();
}

StatusOr<WriteOutcome> LibSlurmClient::RequeueJob(uint32_t job_id, bool hold) {
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("requeue job", [job_id, hold, verify]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(JobView j, ReadJob(job_id));
    if (j.requeue_pending) return WriteOutcome::kUnchanged;  // already on its way back
    if (j.state == JobState::kPending) {
      if (!hold || j.Held()) return WriteOutcome::kUnchanged;
      job_desc_msg_t desc;
      slurm_init_job_desc_msg(&desc);
      SetJobId(&desc, job_id);
      desc.priority = 0;
      if (slurm_update_job(&desc) != SLURM_SUCCESS) return LastError(StrCat("hold job ", job_id));
    } else if (slurm_requeue(JobId(job_id), hold ? JOB_REQUEUE_HOLD : 0) != SLURM_SUCCESS) {
      return LastError(StrCat("requeue job ", job_id));
    }
    const bool was_pending = j.state == JobState::kPending;
    RETURN_IF_ERROR(WaitUntil<JobView>([&] { return ReadJob(job_id); },
                                       [&](const JobView& v) {
                                         if (was_pending) return v.Held();
                                         return v.state == JobState::kPending ||
                                                v.requeue_pending ||
                                                v.restart_count > j.restart_count;
                                       },
                                       verify, StrCat("requeue of job ", job_id))
                        .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<WriteOutcome> LibSlurmClient::SuspendJob(uint32_t job_id) {
  return Call<WriteOutcome>("suspend job", [job_id, verify = options_.verify_timeout] {
    return JobTransition(
        job_id, "suspend", verify, [](const JobView& j) { return j.state == JobState::kSuspended; },
        [job_id] { return slurm_suspend(JobId(job_id)); },
        [](const JobView& j) { return j.state == JobState::kSuspended; });
  });
}

StatusOr<WriteOutcome> LibSlurmClient::ResumeJob(uint32_t job_id) {
  return Call<WriteOutcome>("resume job", [job_id, verify = options_.verify_timeout] {
    return JobTransition(
        job_id, "resume", verify, [](const JobView& j) { return j.state == JobState::kRunning; },
        [job_id] { return slurm_resume(JobId(job_id)); },
        [](const JobView& j) { return j.state != JobState::kSuspended; });
  });
}

StatusOr<WriteOutcome> LibSlurmClient::CancelJob(uint32_t job_id) {
  return Call<WriteOutcome>("cancel job", [job_id, verify = options_.verify_timeout] {
    return JobTransition(
        job_id, "cancel", verify, IsFinished,
        [job_id] { return slurm_kill_job(JobId(job_id), SIGKILL, 0); },
        [](const JobView& j) { return IsFinished(j) || j.completing; });
  });
}

StatusOr<WriteOutcome> LibSlurmClient::SetAdminComment(uint32_t job_id,
                                                       const std::string& comment) {
  return Call<WriteOutcome>("set admin comment", [job_id, comment]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(JobView j, ReadJob(job_id));
    if (j.admin_comment == comment) return WriteOutcome::kUnchanged;
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    SetJobId(&desc, job_id);
    std::string text = comment;
    desc.admin_comment = text.data();
    if (slurm_update_job(&desc) != SLURM_SUCCESS) {
      return LastError(StrCat("set admin comment of job ", job_id));
    }
    return WriteOutcome::kChanged;
  });
}

namespace {
constexpr time_t kRelaunchDelaySeconds = 2;
}  // namespace

StatusOr<WriteOutcome> LibSlurmClient::MakeEligibleNow(uint32_t job_id) {
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("make job eligible", [job_id, verify]() -> StatusOr<WriteOutcome> {
    // A requeue completes asynchronously (the job's steps end first), and slurmctld sets
    // the requeue begin time only when the job is back to PENDING: wait for that.
    auto pending = WaitUntil<JobView>(
        [&] { return ReadJob(job_id); },
        [](const JobView& v) { return v.state == JobState::kPending && !v.completing; }, verify,
        StrCat("requeue of job ", job_id));
    if (!pending.ok()) return pending.status();
    // Not `now`: slurmd refuses a launch credential created in the same second as its
    // revocation of the job's previous one ("Job credential revoked"; the job then ends
    // FAILED, not requeued: seen on 24.11 when the job restarted on its old node at once).
    // Two seconds on, every node that ran the job has revoked before the new credential.
    // A heterogeneous job's begin time is each component's own (an update of the leader
    // leaves the others waiting): every component of the job is made eligible.
    std::vector<uint32_t> ids = {job_id};
    job_info_msg_t* msg = nullptr;
    if (slurm_load_job(&msg, JobId(job_id), SHOW_ALL) == SLURM_SUCCESS && msg != nullptr) {
      for (uint32_t i = 0; i < msg->record_count; ++i) {
        const slurm_job_info_t& r = msg->job_array[i];
        if (r.het_job_id == job_id && r.job_id != job_id) ids.push_back(r.job_id);
      }
      slurm_free_job_info_msg(msg);
    }
    for (uint32_t id : ids) {
      job_desc_msg_t desc;
      slurm_init_job_desc_msg(&desc);
      SetJobId(&desc, id);
      desc.begin_time = time(nullptr) + kRelaunchDelaySeconds;
      if (slurm_update_job(&desc) != SLURM_SUCCESS) {
        return LastError(StrCat("make job ", id, " eligible"));
      }
    }
    return WriteOutcome::kChanged;
  });
}

StatusOr<PlaceholderSubmission> LibSlurmClient::SubmitPlaceholder(const PlaceholderSpec& s) {
  std::optional<devices::PlaceholderRecord> record =
      devices::ParsePlaceholderRecord(s.admin_comment);
  if (!record) {
    return InvalidArgumentError(
        StrCat("placeholder admin comment '", s.admin_comment, "' holds no placeholder record"));
  }
  if (s.gpus < 1 || s.node.empty() || record->node != s.node) {
    return InvalidArgumentError(StrCat("placeholder for ", s.gpus, " GPUs on '", s.node,
                                       "' with record '", s.admin_comment, "'"));
  }
  return Call<PlaceholderSubmission>(
      "submit placeholder",
      [s, key = devices::PlaceholderKey(*record)]() -> StatusOr<PlaceholderSubmission> {
        ASSIGN_OR_RETURN(std::optional<uint32_t> existing, FindPlaceholder(key));
        if (existing) return PlaceholderSubmission{*existing, WriteOutcome::kUnchanged};
        ASSIGN_OR_RETURN(uint32_t id, SubmitPlaceholderJob(s));
        return PlaceholderSubmission{id, WriteOutcome::kChanged};
      });
}

StatusOr<WriteOutcome> LibSlurmClient::RebootNode(const std::string& node,
                                                  const std::string& reason) {
  if (reason.rfind(kBridgeReasonPrefix, 0) != 0) {
    return InvalidArgumentError(
        StrCat("reboot reason '", reason, "' must start with '", kBridgeReasonPrefix, "'"));
  }
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("reboot node", [node, reason, verify]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(NodeView n, ReadNode(node, Partitions::kWithout));
    if (n.reboot_requested || n.reboot_issued) return WriteOutcome::kUnchanged;
    RETURN_IF_ERROR(SendReboot(node, reason));
    // slurmctld takes the request silently for a node it will not reboot (FUTURE, powered
    // down): the flags must show. A reboot already done by the re-read moved the boot time.
    RETURN_IF_ERROR(WaitUntil<NodeView>([&] { return ReadNode(node, Partitions::kWithout); },
                                        [&](const NodeView& v) {
                                          return v.reboot_requested || v.reboot_issued ||
                                                 v.BootedSince(n.boot_time);
                                        },
                                        verify, StrCat("reboot request of ", node))
                        .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<WriteOutcome> LibSlurmClient::CreateMaintenanceReservation(
    const MaintenanceReservationSpec& s) {
  if (s.name.empty() || s.node.empty() || s.minutes < 1) {
    return InvalidArgumentError(StrCat("maintenance reservation '", s.name, "' on '", s.node,
                                       "' for ", s.minutes, " minutes"));
  }
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("create reservation", [s, verify]() -> StatusOr<WriteOutcome> {
    auto same = [&](const std::optional<Reservation>& r) -> StatusOr<bool> {
      if (!r) return false;
      if (r->nodes != std::vector<std::string>{s.node}) {
        return FailedPreconditionError(
            StrCat("reservation ", s.name, " exists on ", r->node_list, ", not on ", s.node));
      }
      return true;
    };
    ASSIGN_OR_RETURN(std::optional<Reservation> existing, FindReservation(s.name));
    ASSIGN_OR_RETURN(bool there, same(existing));
    if (there) return WriteOutcome::kUnchanged;
    std::string user = s.user;
    if (user.empty()) {
      ASSIGN_OR_RETURN(user, ProcessUserName());
    }
    if (Status created = SendCreateReservation(s, user); !created.ok()) {
      // Another caller made it in between: that one's is this one.
      if (created.GetPayload("slurm_errno") != std::to_string(ESLURM_RESERVATION_NAME_DUP)) {
        return created;
      }
      ASSIGN_OR_RETURN(existing, FindReservation(s.name));
      ASSIGN_OR_RETURN(there, same(existing));
      if (there) return WriteOutcome::kUnchanged;
      return created;
    }
    RETURN_IF_ERROR(WaitUntil<std::optional<Reservation>>(
                        [&] { return FindReservation(s.name); },
                        [](const std::optional<Reservation>& r) { return r.has_value(); }, verify,
                        StrCat("reservation ", s.name))
                        .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<WriteOutcome> LibSlurmClient::DeleteReservation(const std::string& name) {
  if (name.empty()) return InvalidArgumentError("delete reservation: no name");
  const auto verify = options_.verify_timeout;
  return Call<WriteOutcome>("delete reservation", [name, verify]() -> StatusOr<WriteOutcome> {
    ASSIGN_OR_RETURN(std::optional<Reservation> existing, FindReservation(name));
    if (!existing) return WriteOutcome::kUnchanged;
    reservation_name_msg_t msg{};
    std::string n = name;
    msg.name = n.data();
    if (slurm_delete_reservation(&msg) != SLURM_SUCCESS) {
      if (errno == ESLURM_RESERVATION_INVALID) return WriteOutcome::kUnchanged;  // gone since
      return LastError(StrCat("delete reservation ", name));
    }
    RETURN_IF_ERROR(WaitUntil<std::optional<Reservation>>(
                        [&] { return FindReservation(name); },
                        [](const std::optional<Reservation>& r) { return !r.has_value(); }, verify,
                        StrCat("deletion of reservation ", name))
                        .status());
    return WriteOutcome::kChanged;
  });
}

StatusOr<CheckJobSubmission> LibSlurmClient::SubmitCheckJob(const CheckJobSpec& s) {
  if (s.command.empty() || s.node.empty() || s.gpus < 0 || s.time_limit_minutes < 1) {
    return InvalidArgumentError(StrCat("check job '", s.command, "' on '", s.node, "' with ",
                                       s.gpus, " GPUs for ", s.time_limit_minutes, " minutes"));
  }
  return Call<CheckJobSubmission>("submit check job", [s]() -> StatusOr<CheckJobSubmission> {
    ASSIGN_OR_RETURN(std::optional<uint32_t> existing, FindCheckJob(s.node, s.submitted_since));
    if (existing) return CheckJobSubmission{*existing, WriteOutcome::kUnchanged};
    ASSIGN_OR_RETURN(uint32_t id, SubmitCheckBatchJob(s));
    return CheckJobSubmission{id, WriteOutcome::kChanged};
  });
}

}  // namespace skb::bridge::slurm

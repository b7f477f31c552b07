// SPDX-License-Identifier: Apache-2.0
// job_submit/k8s_bridge: the Slurm job_submit plugin of slurm-k8s-bridge.
//
// Loaded by slurmctld (JobSubmitPlugins=k8s_bridge, PluginDir including this .so's folder).
// At submit time it asks the daemon, over its Unix socket (bridge/api/v1/bridge.proto),
// whether the job can ever run on the shared GPU inventory, and stores the daemon's
// annotation in the job's admin_comment. It runs inside slurmctld with its locks held:
//   - every call is bounded by TimeoutMs (default 5 ms); without an answer the job is
//     accepted (FailurePolicy=open, the default: logged and counted) or refused
//     (FailurePolicy=closed) with a message naming the reason;
//   - all input is untrusted: strings are length-capped, hostlists expansion is capped;
//   - strings slurmctld frees (err_msg, admin_comment) come from slurm_xstrdup;
//   - no exception escapes a hook; only the symbols in exports.map are visible.
// The config file (see plugin_core.h) is k8s_bridge.conf next to slurm.conf
// ($SLURM_CONF's directory, else /etc/slurm), overridable with $SKB_K8S_BRIDGE_PLUGIN_CONF.
//
// Built against the exact Slurm release it is loaded by (SLURM_VERSION_NUMBER below is
// checked by slurmctld at load time; a mismatch refuses to load the plugin).
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <slurm/slurmdb.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "slurm-plugin/plugin_core.h"

// Provided by slurmctld (libslurmfull) at load time; not in Slurm's public headers.
extern "C" {
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** p);
// slurmctld's association cache, as its own job_submit/lua reads a user's default account
// (the same signature in 22.05 and 24.11). Weak: a slurmctld without them (or a test host)
// leaves them null, and the plugin then sends no default account.
int assoc_mgr_fill_in_user(void* db_conn, slurmdb_user_rec_t* user, int enforce,
                           slurmdb_user_rec_t** user_pptr, bool locked) __attribute__((weak));
extern void* acct_db_conn __attribute__((weak));
extern uint16_t accounting_enforce __attribute__((weak));
}

namespace {

namespace v1 = ::skb::api::v1;

constexpr size_t kMaxField = 4096;
constexpr size_t kMaxRequiredNodes = 1024;

std::unique_ptr<skb::plugin::BridgeConnection> g_conn;

void Log(bool error, const std::string& line) {
  if (error) {
    slurm_error("job_submit/k8s_bridge: %s", line.c_str());
  } else {
    slurm_info("job_submit/k8s_bridge: %s", line.c_str());
  }
}

std::string Field(const char* s) {
  if (s == nullptr) return {};
  return std::string(s, strnlen(s, kMaxField));
}

std::string ConfigPath() {
  if (const char* p = std::getenv("SKB_K8S_BRIDGE_PLUGIN_CONF"); p != nullptr && *p != '\0') {
    return p;
  }
  std::string conf = "/etc/slurm/slurm.conf";
  if (const char* p = std::getenv("SLURM_CONF"); p != nullptr && *p != '\0') conf = p;
  auto slash = conf.rfind('/');
  return (slash == std::string::npos ? std::string(".") : conf.substr(0, slash)) +
         "/k8s_bridge.conf";
}

// The default account of `uid` in slurmctld's association cache (read-locked inside), or ""
// (no accounting, an unknown user, a slurmctld without the cache's symbols). Copied at once:
// the cache owns the string.
std::string DefaultAccount(uint32_t uid) {
  if (assoc_mgr_fill_in_user == nullptr || &acct_db_conn == nullptr ||
      &accounting_enforce == nullptr) {
    return {};
  }
  slurmdb_user_rec_t user;
  std::memset(&user, 0, sizeof(user));
  user.uid = uid;
  if (assoc_mgr_fill_in_user(acct_db_conn, &user, accounting_enforce, nullptr, false) !=
      SLURM_SUCCESS) {
    return {};
  }
  return Field(user.default_acct);
}

void Describe(const job_desc_msg_t& d, uint32_t uid, v1::JobDescription* j) {
  j->set_submit_uid(uid);
  j->set_partition(Field(d.partition));
  j->set_qos(Field(d.qos));
  j->set_account(Field(d.account));
  if (j->account().empty()) j->set_default_account(DefaultAccount(uid));
  j->set_name(Field(d.name));
  j->set_tres_per_node(Field(d.tres_per_node));
  j->set_tres_per_job(Field(d.tres_per_job));
  j->set_tres_per_task(Field(d.tres_per_task));
  j->set_tres_per_socket(Field(d.tres_per_socket));
  j->set_features(Field(d.features));
  j->set_array_spec(Field(d.array_inx));
  j->set_het_component(d.het_job_offset != NO_VAL);
  j->set_het_offset(d.het_job_offset == NO_VAL ? 0 : d.het_job_offset);
  j->set_admin_comment(Field(d.admin_comment));
  j->set_min_nodes(d.min_nodes == NO_VAL ? 0 : d.min_nodes);
  if (d.warn_signal != 0 && d.warn_signal != NO_VAL16) {
    j->set_warn_signal(d.warn_signal);
    j->set_warn_time(d.warn_time == NO_VAL16 ? 0 : d.warn_time);
    j->set_warn_flags(d.warn_flags == NO_VAL16 ? 0 : d.warn_flags);
  }
  if (d.requeue != NO_VAL16) {
    j->set_requeue(d.requeue == 0 ? v1::JobDescription::REQUEUE_NO
                                  : v1::JobDescription::REQUEUE_YES);
  }
  // sbatch carries its script; srun and salloc ask for an allocation without one.
  j->set_interactive(d.script == nullptr);
  if (d.req_nodes != nullptr && *d.req_nodes != '\0') {
    std::string list = Field(d.req_nodes);
    // hostlist_t is a pointer type up to 23.02 and the struct itself from 23.11 on.
    auto* hl = slurm_hostlist_create(list.c_str());
    if (hl != nullptr) {
      while (true) {
        char* host = slurm_hostlist_shift(hl);
        if (host == nullptr) break;
        if (static_cast<size_t>(j->required_nodes_size()) < kMaxRequiredNodes) {
          j->add_required_nodes(host);
        } else {
          j->set_required_nodes_truncated(true);
        }
        free(host);
        if (j->required_nodes_truncated()) break;
      }
      slurm_hostlist_destroy(hl);
    }
  }
}

void SetErrMsg(char** err_msg, const std::string& message) {
  if (err_msg == nullptr || message.empty()) return;
  if (*err_msg != nullptr) slurm_xfree(reinterpret_cast<void**>(err_msg));
  *err_msg = slurm_xstrdup(message.c_str());
}

int Unanswered(const std::string& why, uint32_t uid, char** err_msg) {
  const bool closed = g_conn && g_conn->config().fail_closed;
  if (g_conn) g_conn->CountFailure(closed);
  if (closed) {
    slurm_error("job_submit/k8s_bridge: job from uid %u refused: %s (FailurePolicy=closed)", uid,
                why.c_str());
    SetErrMsg(err_msg, "k8s-bridge: job admission is unavailable (" + why +
                           "); this cluster refuses jobs until it is back (FailurePolicy=closed). "
                           "Retry in a minute or contact the administrators.");
    return ESLURM_SUBMISSIONS_DISABLED;
  }
  slurm_info(
      "job_submit/k8s_bridge: job from uid %u accepted without admission: %s "
      "(FailurePolicy=open, fail_open_total=%llu)",
      uid, why.c_str(), static_cast<unsigned long long>(g_conn ? g_conn->fail_open().load() : 0));
  SetErrMsg(err_msg, "k8s-bridge: the bridge daemon did not answer (" + why +
                         "): the job is accepted without its checks, and whether it would run "
                         "within its tenant's GPU guarantee or borrowed is not known.");
  return SLURM_SUCCESS;
}

// The Slurm error code for a refusal: sbatch prints its text ("Invalid feature
// specification") before our message.
int RefusalCode(v1::AdmitResponse::Refusal r) {
  switch (r) {
    case v1::AdmitResponse::INVALID_GRES:
      return ESLURM_INVALID_GRES;
    case v1::AdmitResponse::INVALID_FEATURE:
      return ESLURM_INVALID_FEATURE;
    case v1::AdmitResponse::ACCOUNTING_POLICY:
      return ESLURM_ACCOUNTING_POLICY;
    default:  // NODE_CONFIG_UNAVAILABLE, and a daemon that does not say
      return ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE;
  }
}

int Submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  if (job_desc == nullptr) return SLURM_SUCCESS;
  if (!g_conn) return Unanswered("plugin not initialised", submit_uid, err_msg);
  v1::JobDescription job;
  Describe(*job_desc, submit_uid, &job);
  v1::AdmitResponse answer;
  std::string why;
  if (g_conn->Admit(job, &answer, &why) != skb::plugin::BridgeConnection::Outcome::kAnswered) {
    return Unanswered(why, submit_uid, err_msg);
  }
  const bool accept = answer.decision() == v1::AdmitResponse::ACCEPT;
  g_conn->CountDecision(accept);
  if (!accept) {
    slurm_info("job_submit/k8s_bridge: job from uid %u rejected: %s", submit_uid,
               answer.user_message().c_str());
    SetErrMsg(err_msg,
              answer.user_message().empty() ? "k8s-bridge: job rejected" : answer.user_message());
    return RefusalCode(answer.refusal());
  }
  if (answer.set_admin_comment()) {
    if (job_desc->admin_comment != nullptr) {
      slurm_xfree(reinterpret_cast<void**>(&job_desc->admin_comment));
    }
    job_desc->admin_comment = slurm_xstrdup(answer.admin_comment().c_str());
  }
  SetErrMsg(err_msg, answer.user_message());
  return SLURM_SUCCESS;
}

}  // namespace

// Compiled with hidden visibility: exactly these are exported (and exports.map agrees).
#define SKB_EXPORT __attribute__((visibility("default")))

extern "C" {

// The plugin identity Slurm's plugin loader reads.
SKB_EXPORT extern const char plugin_name[] = "job_submit k8s_bridge: slurm-k8s-bridge admission";
SKB_EXPORT extern const char plugin_type[] = "job_submit/k8s_bridge";
SKB_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;

SKB_EXPORT int init(void) {
  try {
    slurm_info("job_submit/k8s_bridge: loaded (built for Slurm %u.%02u.%02u)",
               SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
               SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
    g_conn = std::make_unique<skb::plugin::BridgeConnection>(ConfigPath(), &Log);
    g_conn->Start();
  } catch (...) {
    slurm_error("job_submit/k8s_bridge: init failed; jobs are accepted without admission");
    g_conn.reset();
  }
  return SLURM_SUCCESS;
}

SKB_EXPORT int fini(void) {
  try {
    if (g_conn) g_conn->Stop();
    g_conn.reset();
  } catch (...) {
  }
  return SLURM_SUCCESS;
}

SKB_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  try {
    return Submit(job_desc, submit_uid, err_msg);
  } catch (...) {
    return Unanswered("internal error in the plugin", submit_uid, err_msg);
  }
}

// Modifications (scontrol update) are not re-admitted: the bridge judges submissions.
// job_record_t is internal to slurmctld; the plugin only needs its address.
SKB_EXPORT int job_modify(job_desc_msg_t* job_desc, void* job_ptr, uint32_t submit_uid,
                          char** err_msg) {
  (void)job_desc;
  (void)job_ptr;
  (void)submit_uid;
  (void)err_msg;
  return SLURM_SUCCESS;
}

}  // extern "C"

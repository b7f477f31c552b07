// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/admission_service.h"

#include <algorithm>

#include "bridge/api/v1/bridge.pb.h"
#include "bridge/logging.h"
#include "bridge/version.h"
#include "src/base/strings.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/time_codec.h"
#include "src/slurm/syntax.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;

constexpr size_t kMaxRequiredNodes = 4096;
constexpr size_t kMaxUserMessage = 1000;
constexpr size_t kMaxAdminComment = 4096;

std::string Truncate(std::string s, size_t max) {
  if (s.size() > max) {
    s.resize(max - 3);
    s += "...";
  }
  return s;
}

v1::AdmitResponse::Refusal ToProto(admission::Refusal r) {
  switch (r) {
    case admission::Refusal::kNone:
      return v1::AdmitResponse::REFUSAL_UNSPECIFIED;
    case admission::Refusal::kNodeConfig:
      return v1::AdmitResponse::NODE_CONFIG_UNAVAILABLE;
    case admission::Refusal::kGresType:
      return v1::AdmitResponse::INVALID_GRES;
    case admission::Refusal::kFeature:
      return v1::AdmitResponse::INVALID_FEATURE;
    case admission::Refusal::kQuota:
      return v1::AdmitResponse::ACCOUNTING_POLICY;
  }
  return v1::AdmitResponse::REFUSAL_UNSPECIFIED;
}

admission::JobRequest ToJobRequest(const v1::JobDescription& j) {
  admission::JobRequest r;
  r.submit_uid = j.submit_uid();
  r.partition = j.partition();
  r.qos = j.qos();
  r.tres_per_node = j.tres_per_node();
  r.tres_per_job = j.tres_per_job();
  r.tres_per_task = j.tres_per_task();
  r.tres_per_socket = j.tres_per_socket();
  r.features = j.features();
  r.required_nodes.assign(j.required_nodes().begin(), j.required_nodes().end());
  r.array_spec = j.array_spec();
  r.het_component = j.het_component();
  r.admin_comment = j.admin_comment();
  r.name = j.name();
  if (j.warn_signal() > 0 && j.warn_signal() < 65 && j.warn_time() >= 0) {
    // KILL_JOB_BATCH (bit 0): "--signal=B:..." signals only the batch shell.
    r.signal = slurm::SignalSpec{j.warn_signal(), j.warn_time(), (j.warn_flags() & 1u) != 0};
  }
  return r;
}

// GPUs the job asks for in all: per node x its minimum node count, per job as given; per
// task and per socket count once per node (the task count is not known here).
int64_t RequestedGpus(const v1::JobDescription& j) {
  const int64_t nodes = std::max<int64_t>(1, j.min_nodes());
  auto count = [](const std::string& tres) -> int64_t {
    auto requests = slurm::ParseTresRequest(tres);
    if (!requests.ok()) return 0;
    int64_t n = 0;
    for (const auto& r : *requests) {
      if (r.name == "gpu" && r.count > 0) n += r.count;
    }
    return n;
  };
  if (int64_t per_job = count(j.tres_per_job()); per_job > 0) return per_job;
  int64_t per_node = count(j.tres_per_node());
  if (per_node == 0) per_node = count(j.tres_per_task());
  if (per_node == 0) per_node = count(j.tres_per_socket());
  return std::min<int64_t>(per_node * nodes, 1'000'000);
}

// The GPU type a job asks for (its first typed gpu GRES, in the order Slurm reads the
// requests), "" for any.
std::string RequestedGpuType(const v1::JobDescription& j) {
  for (const std::string* tres :
       {&j.tres_per_job(), &j.tres_per_node(), &j.tres_per_task(), &j.tres_per_socket()}) {
    if (std::string type = slurm::RequestedGpuType(*tres); !type.empty()) return type;
  }
  return "";
}

}  // namespace

AdmissionService::AdmissionService(admission::Policy policy) : policy_(std::move(policy)) {}

void AdmissionService::Publish(admission::Inventory inventory) {
  auto snap = std::make_shared<const admission::Inventory>(std::move(inventory));
  std::lock_guard<std::mutex> lock(mu_);
  inventory_ = std::move(snap);
  published_at_ = std::chrono::steady_clock::now();
}

std::shared_ptr<const admission::Inventory> AdmissionService::Snapshot(
    std::chrono::steady_clock::time_point* at) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (at != nullptr) *at = published_at_;
  return inventory_;
}

AdmissionService::Counters AdmissionService::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

bool AdmissionService::IsQuery(std::string_view payload) {
  v1::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return false;
  return req.body_case() != v1::Request::kAdmit && req.body_case() != v1::Request::kPing &&
         req.body_case() != v1::Request::BODY_NOT_SET;
}

HandleResult AdmissionService::HandleFrame(std::string_view payload, uint32_t peer_pid) {
  HandleResult out;
  v1::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.dropped;
    out.drop_reason = StrCat("undecodable request (", payload.size(), " bytes, not a v1.Request)");
    return out;
  }
  v1::Response resp;
  resp.set_protocol_version(v1::PROTOCOL_VERSION_1);
  resp.set_request_id(req.request_id());
  auto error = [&](v1::Error::Code code, std::string message) {
    resp.mutable_error()->set_code(code);
    resp.mutable_error()->set_message(std::move(message));
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.errors;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.requests;
  }
  if (req.protocol_version() < v1::PROTOCOL_VERSION_1) {
    error(v1::Error::UNSUPPORTED_VERSION,
          StrCat("protocol_version ", req.protocol_version(), " is not supported (need >= 1)"));
  } else if (req.has_ping()) {
    std::chrono::steady_clock::time_point at;
    auto inv = Snapshot(&at);
    auto* ping = resp.mutable_ping();
    ping->set_daemon_version(kVersion);
    ping->set_snapshot_age_ms(inv ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - at)
                                        .count()
                                  : -1);
    ping->set_nodes(inv ? static_cast<uint32_t>(inv->nodes.size()) : 0);
  } else if (req.has_admit()) {
    const auto& job = req.admit().job();
    if (static_cast<size_t>(job.required_nodes_size()) > kMaxRequiredNodes) {
      error(v1::Error::BAD_REQUEST, StrCat("more than ", kMaxRequiredNodes, " required nodes"));
    } else {
      auto inv = Snapshot(nullptr);
      admission::Decision d =
          admission::Decide(ToJobRequest(job), inv ? *inv : admission::Inventory{}, policy_);
      if (d.accept && cfg_ != nullptr) {
        // The job as the lend will judge it once it runs, once for both notices.
        const ownership::JobPolicy policy =
            ownership::PolicyFor(AsRunning(job, d), *cfg_, ownership::FromUnix(0));
        AdviseOnPreemption(policy, &d);
        AdviseOnQuota(job, policy, &d);
      }
      auto* admit = resp.mutable_admit();
      admit->set_decision(d.accept ? v1::AdmitResponse::ACCEPT : v1::AdmitResponse::REJECT);
      admit->set_user_message(Truncate(d.user_message, kMaxUserMessage));
      if (!d.accept) admit->set_refusal(ToProto(d.refusal));
      if (d.admin_comment && d.admin_comment->size() <= kMaxAdminComment) {
        admit->set_set_admin_comment(true);
        admit->set_admin_comment(*d.admin_comment);
      }
      const auto& c = req.admit().counters();
      std::lock_guard<std::mutex> lock(mu_);
      ++(d.accept ? counters_.accepted : counters_.rejected);
      if (c.fail_open() != counters_.plugin_fail_open ||
          c.fail_closed() != counters_.plugin_fail_closed ||
          c.timeouts() != counters_.plugin_timeouts) {
        Logger("plugin")->info(
            "plugin_counters pid={} fail_open={} fail_closed={} timeouts={} "
            "admitted={} rejected={} protocol_errors={}",
            peer_pid, c.fail_open(), c.fail_closed(), c.timeouts(), c.admitted(), c.rejected(),
            c.protocol_errors());
        counters_.plugin_fail_open = c.fail_open();
        counters_.plugin_fail_closed = c.fail_closed();
        counters_.plugin_timeouts = c.timeouts();
      }
      if (!d.accept) {
        Logger("plugin")->info(
            "admission_reject uid={} partition=\"{}\" tres_per_node=\"{}\" "
            "message=\"{}\"",
            job.submit_uid(), Truncate(job.partition(), 100), Truncate(job.tres_per_node(), 100),
            d.user_message);
      }
    }
  } else if (!query_handler_ || !query_handler_(req, &resp)) {
    error(v1::Error::BAD_REQUEST, "request has no body this daemon knows");
  }
  out.response = resp.SerializeAsString();
  return out;
}

std::string AdmissionService::EffectiveAccount(const v1::JobDescription& job) {
  return job.account().empty() ? job.default_account() : job.account();
}

slurm::JobView AdmissionService::AsRunning(const v1::JobDescription& job,
                                           const admission::Decision& d) {
  slurm::JobView view;
  view.account = EffectiveAccount(job);
  view.qos = job.qos();
  view.partition = job.partition();
  view.admin_comment = d.admin_comment.value_or(job.admin_comment());
  view.requeue = job.requeue() != v1::JobDescription::REQUEUE_NO;
  view.batch = !job.interactive();
  view.signal = ToJobRequest(job).signal;
  return view;
}

void AdmissionService::AdviseOnPreemption(const ownership::JobPolicy& policy,
                                          admission::Decision* d) const {
  if (!cfg_->lending.enabled || !policy.preemptible) return;
  const std::string message =
      StrCat(admission::kPrefix, "this job may be preempted for Kubernetes (", policy.why,
             "): if its node is lent, ", ownership::DescribePreemption(policy),
             "; checkpoint on that signal");
  d->user_message = d->user_message.empty() ? message : StrCat(d->user_message, "\n", message);
}

void AdmissionService::AdviseOnQuota(const v1::JobDescription& job,
                                     const ownership::JobPolicy& policy,
                                     admission::Decision* d) const {
  if (!cfg_->quotas.enabled() || !quota_view_) return;
  auto observation = quota_view_();
  if (observation == nullptr) return;
  quota::SubmitFacts facts{.account = EffectiveAccount(job),
                           .account_is_default = job.account().empty(),
                           .gpus = static_cast<int>(RequestedGpus(job)),
                           .gpu_type = RequestedGpuType(job),
                           .preemptible = policy.preemptible,
                           .preemptible_why = policy.why,
                           .bridge_preempts = cfg_->lending.enabled};
  quota::SubmitAdvice advice =
      quota::AdviseSubmit(cfg_->quotas, observation->classification, facts);
  if (advice.message.empty()) return;
  if (advice.refuse) {
    d->accept = false;
    d->refusal = admission::Refusal::kQuota;
    d->user_message = advice.message;
    d->admin_comment.reset();
    return;
  }
  d->user_message =
      d->user_message.empty() ? advice.message : StrCat(d->user_message, "\n", advice.message);
}

}  // namespace skb::bridge

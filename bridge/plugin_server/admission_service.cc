// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/admission_service.h"

#include "bridge/api/v1/bridge.pb.h"
#include "bridge/logging.h"
#include "bridge/version.h"
#include "src/admission/submit.h"
#include "src/base/strings.h"

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
  r.min_nodes = j.min_nodes();
  r.account = j.account();
  r.default_account = j.default_account();
  r.requeue = j.requeue() != v1::JobDescription::REQUEUE_NO;
  r.interactive = j.interactive();
  if (j.warn_signal() > 0 && j.warn_signal() < 65 && j.warn_time() >= 0) {
    // KILL_JOB_BATCH (bit 0): "--signal=B:..." signals only the batch shell.
    r.signal = slurm::SignalSpec{j.warn_signal(), j.warn_time(), (j.warn_flags() & 1u) != 0};
  }
  return r;
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
      std::shared_ptr<const quota::Observation> quotas;
      if (cfg_ != nullptr && cfg_->quotas.enabled() && quota_view_) quotas = quota_view_();
      admission::Decision d =
          admission::Admit(ToJobRequest(job), inv ? *inv : admission::Inventory{}, policy_,
                           {.config = cfg_, .quotas = quotas ? &quotas->classification : nullptr});
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

}  // namespace skb::bridge

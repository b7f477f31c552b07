// SPDX-License-Identifier: Apache-2.0
// The daemon's side of the plugin protocol: turns one request frame into one response,
// answering admission questions from the latest published inventory snapshot. No Slurm
// or Kubernetes call happens here; Publish() is fed by the Slurm poller (and later by the
// shared inventory).
//
//   AdmissionService svc(policy);
//   svc.Publish(admission::InventoryFromSlurm(nodes, "gpu"));
//   HandleResult r = svc.HandleFrame(payload);   // r.response, or r.drop_reason
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "src/admission/admission.h"
#include "src/config/config.h"
#include "src/quota/observe.h"

namespace skb::api::v1 {
class JobDescription;
class Request;
class Response;
}  // namespace skb::api::v1

namespace skb::bridge {

struct HandleResult {
  // The serialized Response to send back (empty when the connection must be dropped).
  std::string response;
  // Why the connection is dropped: undecodable request (garbage protobuf).
  std::string drop_reason;
};

class AdmissionService {
 public:
  explicit AdmissionService(admission::Policy policy);

  // Replaces the snapshot the answers come from.
  void Publish(admission::Inventory inventory);

  // Answers requests other than admit and ping (bridgectl's queries): fills the response
  // body and returns true, or returns false for a body it does not know. Set before the
  // server starts.
  using QueryHandler = std::function<bool(const api::v1::Request&, api::v1::Response*)>;
  void SetQueryHandler(QueryHandler handler) { query_handler_ = std::move(handler); }

  // What an accepted job is told at submit comes from the daemon's config and the quota
  // classification (src/admission/submit.h decides it all). `cfg` must outlive this; `view` returns
  // the latest classification (null: not known yet, nothing is said of quotas). Set before the
  // server starts.
  using QuotaView = std::function<std::shared_ptr<const quota::Observation>()>;
  void SetConfig(const config::Config* cfg, QuotaView view) {
    cfg_ = cfg;
    quota_view_ = std::move(view);
  }

  // Decodes a Request (the payload of one frame), answers it. Never throws; a request
  // that is not a protobuf Request is a drop, a Request with missing or odd fields gets an
  // Error response.
  HandleResult HandleFrame(std::string_view payload, uint32_t peer_pid = 0);

  // True for a frame whose answer may take long (bridgectl's queries, which the socket
  // server hands to its worker thread); false for admit and ping, which are answered from
  // the snapshot at once, and for anything undecodable (dropped at once).
  static bool IsQuery(std::string_view payload);

  struct Counters {
    uint64_t requests = 0, accepted = 0, rejected = 0, errors = 0, dropped = 0;
    // The latest counters a plugin reported (fail-open etc. happen inside slurmctld).
    uint64_t plugin_fail_open = 0, plugin_fail_closed = 0, plugin_timeouts = 0;
  };
  Counters counters() const;

 private:
  std::shared_ptr<const admission::Inventory> Snapshot(
      std::chrono::steady_clock::time_point* at) const;

  const admission::Policy policy_;
  QueryHandler query_handler_;
  const config::Config* cfg_ = nullptr;
  QuotaView quota_view_;
  mutable std::mutex mu_;
  std::shared_ptr<const admission::Inventory> inventory_;  // guarded by mu_
  std::chrono::steady_clock::time_point published_at_;     // guarded by mu_
  Counters counters_;                                      // guarded by mu_
};

}  // namespace skb::bridge

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
#include "src/ownership/job_policy.h"
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

  // What an accepted job is told at submit, from the daemon's config:
  //  - with lending on, a job the bridge may preempt is told so, why, and what a lend does
  //    to it: the signal, its lead time, requeue or cancel (ownership::PolicyFor);
  //  - with quotas configured, a GPU job is told whether it would run within its tenant's
  //    guarantee or borrowed (and so preemptible), and one that cannot be preempted beyond
  //    its tenant's floor is refused (quota::AdviseSubmit).
  // `cfg` must outlive this; `view` returns the latest classification (null: not known
  // yet, nothing is said of quotas). Set before the server starts.
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
  // Adds the quota standing to an accepted job's message, or refuses it
  // (quota::AdviseSubmit).
  // `policy`: the job as the lend will judge it (PolicyFor of AsRunning). `cfg_` is set.
  void AdviseOnQuota(const api::v1::JobDescription& job, const ownership::JobPolicy& policy,
                     admission::Decision* d) const;
  // Tells an accepted job the bridge may preempt what a lend would do to it.
  void AdviseOnPreemption(const ownership::JobPolicy& policy, admission::Decision* d) const;
  // The job as the lending policy will judge it once it runs: the admission annotation
  // just made, its --signal, --no-requeue, srun/salloc.
  static slurm::JobView AsRunning(const api::v1::JobDescription& job, const admission::Decision& d);
  // The account Slurm will charge: the job's, else the submitting user's default.
  static std::string EffectiveAccount(const api::v1::JobDescription& job);
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

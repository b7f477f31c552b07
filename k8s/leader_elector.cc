// SPDX-License-Identifier: Apache-2.0
#include "k8s/leader_elector.h"

#include <random>

#include "k8s/api_error.h"
#include "k8s/lease_info.h"
#include "k8s/logger.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

int64_t CeilSeconds(std::chrono::milliseconds d) { return (d.count() + 999) / 1000; }

std::chrono::milliseconds Jittered(std::chrono::milliseconds d) {
  thread_local std::mt19937 rng(std::random_device{}());
  return std::chrono::milliseconds(static_cast<int64_t>(
      static_cast<double>(d.count()) * std::uniform_real_distribution<double>(1.0, 1.2)(rng)));
}

}  // namespace

StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(KubeClient* client,
                                                               LeaderElectionConfig config) {
  if (client == nullptr) return InvalidArgumentError("leader election: no client");
  if (config.lease_name.empty() || config.lease_namespace.empty()) {
    return InvalidArgumentError("leader election: lease namespace and name are required");
  }
  if (config.identity.empty()) return InvalidArgumentError("leader election: identity is required");
  if (config.retry_period.count() <= 0)
    return InvalidArgumentError("leader election: retry period must be positive");
  if (config.lease_duration <= config.renew_deadline) {
    return InvalidArgumentError(
        "leader election: lease duration must be greater than the renew deadline");
  }
  if (config.renew_deadline.count() <= config.retry_period.count() * 12 / 10) {
    return InvalidArgumentError(
        "leader election: renew deadline must be greater than 1.2 x retry period");
  }
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(config)));
}

LeaderElector::LeaderElector(KubeClient* client, LeaderElectionConfig config)
    : client_(client),
      config_(std::move(config)),
      clock_(config_.clock ? config_.clock : SystemClock::Get()) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leading_;
}

bool LeaderElector::HoldsValidLease() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leading_ && std::chrono::steady_clock::now() < valid_until_;
}

void LeaderElector::Renewed(std::chrono::steady_clock::time_point attempt_start) {
  std::lock_guard<std::mutex> lock(mu_);
  valid_until_ = attempt_start + config_.renew_deadline;
}

std::string LeaderElector::Leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

bool LeaderElector::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

void LeaderElector::ObserveHolder(const std::string& holder) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = leader_ != holder;
    leader_ = holder;
  }
  if (changed) {
    Logger()->info("k8s_leader_observed lease={}/{} holder={} self={}", config_.lease_namespace,
                   config_.lease_name, holder.empty() ? "<none>" : holder, config_.identity);
    if (config_.on_new_leader && !holder.empty()) config_.on_new_leader(holder);
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const Resource leases = Resource::Leases();
  const auto now_steady = std::chrono::steady_clock::now();
  const std::string now = FormatMicroTime(clock_->Now());
  const int64_t duration_s = CeilSeconds(config_.lease_duration);

  auto current = client_->Get(leases, config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (!IsNotFound(current.status())) {
      Logger()->warn("k8s_leader_get_failed lease={}/{} error=\"{}\"", config_.lease_namespace,
                     config_.lease_name, current.status().message());
      return false;
    }
    json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", duration_s},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    auto created = client_->Create(leases, config_.lease_namespace, lease);
    if (!created.ok()) return false;  // someone else created it first: next round
    observed_record_ = StrCat(config_.identity, "|", now);
    observed_at_ = now_steady;
    ObserveHolder(config_.identity);
    return true;
  }

  auto info = ParseLease(*current);
  if (!info.ok()) {
    Logger()->warn("k8s_leader_bad_lease lease={}/{} error=\"{}\"", config_.lease_namespace,
                   config_.lease_name, info.status().message());
    return false;
  }
  const std::string record = StrCat(info->holder_identity, "|", info->renew_time, "|",
                                    info->acquire_time, "|", info->lease_transitions);
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = now_steady;
  }
  ObserveHolder(info->holder_identity);
  const bool held_by_other =
      !info->holder_identity.empty() && info->holder_identity != config_.identity;
  if (held_by_other) {
    const auto lease_duration =
        info->lease_duration_seconds.has_value()
            ? std::chrono::milliseconds(*info->lease_duration_seconds * 1000)
            : config_.lease_duration;
    if (now_steady < observed_at_ + lease_duration) return false;  // not expired yet
  }

  json updated = *current;
  json& spec = updated["spec"];
  if (!spec.is_object()) spec = json::object();
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = duration_s;
  spec["renewTime"] = now;
  if (info->holder_identity != config_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = info->lease_transitions + 1;
  }
  // The read resourceVersion stays in metadata: a concurrent writer makes this a conflict.
  auto result = client_->Update(leases, config_.lease_namespace, updated);
  if (!result.ok()) {
    if (!IsConflict(result.status())) {
      Logger()->warn("k8s_leader_update_failed lease={}/{} error=\"{}\"", config_.lease_namespace,
                     config_.lease_name, result.status().message());
    }
    return false;
  }
  auto mine = ParseLease(*result);
  observed_record_ = mine.ok() ? StrCat(mine->holder_identity, "|", mine->renew_time, "|",
                                        mine->acquire_time, "|", mine->lease_transitions)
                               : std::string();
  observed_at_ = now_steady;
  ObserveHolder(config_.identity);
  return true;
}

void LeaderElector::Release() {
  const Resource leases = Resource::Leases();
  auto current = client_->Get(leases, config_.lease_namespace, config_.lease_name);
  if (!current.ok()) return;
  auto info = ParseLease(*current);
  if (!info.ok() || info->holder_identity != config_.identity) return;
  json updated = *current;
  // As client-go: clear the holder, keep a 1 s duration, renew now.
  updated["spec"]["holderIdentity"] = nullptr;
  updated["spec"]["leaseDurationSeconds"] = 1;
  std::string now = FormatMicroTime(clock_->Now());
  updated["spec"]["renewTime"] = now;
  updated["spec"]["acquireTime"] = now;
  auto result = client_->Update(leases, config_.lease_namespace, updated);
  if (result.ok()) {
    Logger()->info("k8s_leader_released lease={}/{} identity={}", config_.lease_namespace,
                   config_.lease_name, config_.identity);
  } else {
    Logger()->warn("k8s_leader_release_failed lease={}/{} error=\"{}\"", config_.lease_namespace,
                   config_.lease_name, result.status().message());
  }
}

void LeaderElector::Run() {
  for (;;) {
    // Campaign.
    bool acquired = false;
    while (!acquired) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
      }
      const auto attempt = std::chrono::steady_clock::now();
      acquired = TryAcquireOrRenew();
      if (acquired) Renewed(attempt);
      if (!acquired && !SleepUnlessStopped(Jittered(config_.retry_period))) return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      leading_ = true;
    }
    Logger()->info("k8s_leader_started lease={}/{} identity={}", config_.lease_namespace,
                   config_.lease_name, config_.identity);
    if (config_.on_started_leading) config_.on_started_leading();

    // Renew until the deadline passes without a successful renewal, or Stop().
    auto last_renew = std::chrono::steady_clock::now();
    bool stopping = false;
    for (;;) {
      if (!SleepUnlessStopped(config_.retry_period)) {
        stopping = true;
        break;
      }
      const auto attempt = std::chrono::steady_clock::now();
      if (TryAcquireOrRenew()) {
        Renewed(attempt);
        last_renew = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - last_renew >= config_.renew_deadline) break;
    }
    if (stopping && config_.release_on_stop) Release();
    {
      std::lock_guard<std::mutex> lock(mu_);
      leading_ = false;
    }
    Logger()->info("k8s_leader_stopped lease={}/{} identity={} reason={}", config_.lease_namespace,
                   config_.lease_name, config_.identity, stopping ? "stop" : "renew-deadline");
    if (config_.on_stopped_leading) config_.on_stopped_leading();
    if (stopping) return;
  }
}

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package:
// candidates try to create or take over the Lease; the holder renews it every retry period;
// a Lease is considered expired when it has not changed for lease_duration as observed
// locally (clocks of different hosts are never compared); a leader that cannot renew within
// renew_deadline stops leading. Every write carries the resourceVersion it read, so two
// candidates can never both believe they won the same round.
//
// There is no fencing: a deposed leader may still be finishing a write. Everything a leader
// does must be idempotent and conflict-checked (docs/contributing.md, "Adding an action
// kind").
//
//   LeaderElectionConfig cfg{.lease_namespace = "slurm-bridge", .lease_name = "bridge",
//                            .identity = pod_name,
//                            .on_started_leading = [&] { controller.Start(); },
//                            .on_stopped_leading = [&] { std::exit(1); }};
//   ASSIGN_OR_RETURN(auto elector, LeaderElector::Create(client.get(), cfg));
//   elector->Start();
//   ...
//   elector->Stop();  // releases the Lease so a standby takes over at once
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/kube_client.h"
#include "src/base/clock.h"

namespace skb::k8s {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate (pod name)
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // Called on the elector's thread, without locks; they must return promptly (start work on
  // another thread). on_stopped_leading is called once for every on_started_leading: on
  // loss of the lease and on Stop().
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  // The holder changed (observed), including to ourselves. Optional.
  std::function<void(const std::string& identity)> on_new_leader;
  // On Stop(), give the lease up (holder cleared) so another candidate need not wait for
  // it to expire.
  bool release_on_stop = true;
  // Timestamps written into the Lease. Null: the system clock.
  const Clock* clock = nullptr;
};

// Thread-safe.
class LeaderElector {
 public:
  // InvalidArgument unless lease_duration > renew_deadline > retry_period * 1.2 > 0 and the
  // names and identity are set (client-go's rules). `client` must outlive the elector.
  static StatusOr<std::unique_ptr<LeaderElector>> Create(KubeClient* client,
                                                         LeaderElectionConfig config);
  ~LeaderElector();  // Stop()s

  void Start();
  // Stops campaigning; if leading, releases the lease (when configured) and calls
  // on_stopped_leading. Idempotent; joins the thread.
  void Stop();

  bool IsLeader() const;
  // Leading, and the last successful renewal began less than renew_deadline ago: no other
  // candidate can have taken the Lease over yet (they wait lease_duration > renew_deadline
  // after they saw our last write). Unlike IsLeader, it turns false on time even while a
  // renewal hangs: callers check it before each write.
  bool HoldsValidLease() const;
  // The last observed holder ("" when none).
  std::string Leader() const;

 private:
  LeaderElector(KubeClient* client, LeaderElectionConfig config);
  void Run();
  // One round: create, renew or take over the Lease. Returns whether we hold it now.
  bool TryAcquireOrRenew();
  void Release();
  bool SleepUnlessStopped(std::chrono::milliseconds d);
  // Records a successful acquire/renew whose attempt began at `attempt_start`.
  void Renewed(std::chrono::steady_clock::time_point attempt_start);
  void ObserveHolder(const std::string& holder);

  KubeClient* const client_;
  const LeaderElectionConfig config_;
  const Clock* const clock_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // GUARDED_BY(mu_)
  bool leading_ = false;  // GUARDED_BY(mu_)
  // Until when a write is safe: last successful attempt's start + renew_deadline.
  std::chrono::steady_clock::time_point valid_until_{};  // GUARDED_BY(mu_)
  std::string leader_;                                   // GUARDED_BY(mu_)
  // Only the elector thread touches these.
  std::string observed_record_;  // holder|renewTime|acquireTime|transitions last seen
  std::chrono::steady_clock::time_point observed_at_{};
};

}  // namespace skb::k8s

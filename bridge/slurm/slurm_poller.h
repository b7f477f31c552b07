// Polls Slurm's nodes, partitions and jobs by update_time on its own thread and hands every
// changed view to a callback (the daemon feeds the reconciler and the admission snapshot).
// An unchanged cluster costs three cheap RPCs per interval; errors keep the last view and
// are logged once per outage, not once per poll.
//
//   SlurmPoller poller(client, 500ms, [&](const SlurmState& s) {...});
//   poller.Start();
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "bridge/slurm/slurm_client.h"

namespace skb::bridge::slurm {

// The latest full view, and which parts changed in this poll.
struct SlurmState {
  std::vector<NodeView> nodes;
  std::vector<PartitionView> partitions;
  std::vector<JobView> jobs;  // every record slurmctld holds, finished ones included
  bool nodes_changed = false;
  bool partitions_changed = false;
  bool jobs_changed = false;
};

class SlurmPoller {
 public:
  // Called on the poller's thread after a poll in which something changed.
  using OnChange = std::function<void(const SlurmState& state)>;

  SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval, OnChange on_change);
  ~SlurmPoller();  // Stop()s

  void Start();
  void Stop();
  // One poll, on the caller's thread (used by Start's loop and by tests).
  Status PollOnce();
  // Polls at once instead of at the end of the interval (after the bridge changed Slurm).
  void Kick();
  // Told about every poll of the Start() loop: its result, whether anything changed, how
  // long it took (metrics). Set before Start().
  using PollObserver =
      std::function<void(const Status& s, bool changed, std::chrono::microseconds took)>;
  void SetObserver(PollObserver observer) { observer_ = std::move(observer); }
  // Completed polls and how long the last one took (metrics, readiness).
  uint64_t polls() const;
  std::chrono::microseconds last_poll_duration() const;

 private:
  SlurmClient* const client_;
  const std::chrono::milliseconds interval_;
  const OnChange on_change_;
  PollObserver observer_;
  UnixTime nodes_time_ = 0, partitions_time_ = 0, jobs_time_ = 0;
  SlurmState state_;  // poller thread only
  bool failing_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                           // guarded by mu_
  bool kicked_ = false;                         // guarded by mu_
  uint64_t polls_ = 0;                          // guarded by mu_
  std::chrono::microseconds last_duration_{0};  // guarded by mu_
  std::thread thread_;
};

}  // namespace skb::bridge::slurm

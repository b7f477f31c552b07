// SPDX-License-Identifier: Apache-2.0
// Polls Slurm's nodes, partitions and jobs by update_time on its own thread and hands every
// changed view to a callback (the daemon feeds the reconciler and the admission snapshot).
// An unchanged cluster costs three cheap RPCs per interval; errors keep the last view and
// are logged once per outage, not once per poll.
//
// slurmctld's "changed since" answer is only as good as its change stamps, and they count
// whole seconds: a change stamped with a time older than a read the bridge already made
// (a stamp taken before the change waited for slurmctld's lock, say) is answered "no change"
// until something else changes. That happened: the bridge kept a requeued job PENDING in
// its view after Slurm ran it again, until the test looked (Slurm 24.11 testbed, CI). So
// the stamps are trusted only between full reads:
//   - every `resync` (and at the first poll) nodes, partitions and jobs are read whole;
//   - when the nodes changed, the jobs are read whole (a job starting or ending changes its
//     nodes' state, which has a stamp of its own);
// and a full read that finds what the stamp said had not changed is a repair: logged, and
// reported to the observer as PollResult::kRepaired.
//
//   SlurmPoller poller(client, 500ms, 10s, [&](const SlurmState& s) {...});
//   poller.Start();
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string_view>
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

// What one poll found (the `result` label of skb_slurm_poll_duration_seconds).
enum class PollResult {
  kChanged,    // a stamp said something changed
  kUnchanged,  // nothing changed
  kRepaired,   // a full read found a change the stamps had missed
  kError,      // a read failed; the last view stands
};
std::string_view PollResultName(PollResult r);

class SlurmPoller {
 public:
  // Called on the poller's thread after a poll in which something changed.
  using OnChange = std::function<void(const SlurmState& state)>;

  // `resync`: how often everything is read whole whatever the stamps say (0: never).
  SlurmPoller(SlurmClient* client, std::chrono::milliseconds interval,
              std::chrono::milliseconds resync, OnChange on_change);
  ~SlurmPoller();  // Stop()s

  void Start();
  void Stop();
  // One poll, on the caller's thread (used by Start's loop and by tests): a resync when one
  // is due.
  StatusOr<PollResult> PollOnce();
  // One poll that reads everything whole.
  StatusOr<PollResult> Resync();
  // Polls at once instead of at the end of the interval (after the bridge changed Slurm).
  void Kick();
  // Told about every poll of the Start() loop: its result, whether anything changed, how
  // long it took (metrics). Set before Start().
  using PollObserver = std::function<void(PollResult result, std::chrono::microseconds took)>;
  void SetObserver(PollObserver observer) { observer_ = std::move(observer); }
  // Completed polls and how long the last one took (metrics, readiness).
  uint64_t polls() const;
  // Polls whose full read repaired what the stamps had missed.
  uint64_t repairs() const;
  std::chrono::microseconds last_poll_duration() const;

 private:
  SlurmClient* const client_;
  StatusOr<PollResult> Poll(bool resync);

  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds resync_;
  const OnChange on_change_;
  std::chrono::steady_clock::time_point last_resync_{};  // poller thread only
  PollObserver observer_;
  UnixTime nodes_time_ = 0, partitions_time_ = 0, jobs_time_ = 0;
  SlurmState state_;  // poller thread only
  bool failing_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                           // guarded by mu_
  bool kicked_ = false;                         // guarded by mu_
  uint64_t polls_ = 0;                          // guarded by mu_
  uint64_t repairs_ = 0;                        // guarded by mu_
  std::chrono::microseconds last_duration_{0};  // guarded by mu_
  std::thread thread_;
};

}  // namespace skb::bridge::slurm

// SPDX-License-Identifier: Apache-2.0
// A "stingy" work queue of keys (node names), as controllers use (client-go workqueue):
//  - a key added many times before it is processed is processed once;
//  - a key is never handed to two workers at once: added while being processed, it is
//    queued again only when Done() is called;
//  - AddAfter(key, t) schedules it for later (a grace period ends, a retry after back-off);
//  - AddRateLimited(key) backs off exponentially per key (base 5 ms, doubling, capped at
//    max), and Forget(key) resets the count after a success.
// Time comes from the injected Clock; Get() never blocks: the caller (the reconcile thread)
// asks NextReadyTime() how long to sleep, so tests drive everything with SimulatedClock.
// What client-go's workqueue metrics report (adds, retries, time queued, time worked, work
// still running) goes to an optional WorkQueueMetrics; depth and unfinished work are read
// at scrape time (ReadyLen, InFlight).
//
// Thread-safe.
//
//   queue.Add("node3");
//   while (auto key = queue.Get()) {
//     Status s = Reconcile(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "src/base/clock.h"

namespace skb::reconcile {

// Receives what client-go's workqueue MetricsProvider receives, as it happens. Called with
// the queue's lock held: an implementation only counts (atomics), never calls the queue.
class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  // A key became ready that was not already queued (delayed keys count when due).
  virtual void Added() = 0;
  // AddRateLimited: a key scheduled again after a failure.
  virtual void Retried() = 0;
  // Get handed out a key that had been ready for `queued`.
  virtual void Started(Clock::Duration queued) = 0;
  // Done for a key handed out `worked` ago.
  virtual void Finished(Clock::Duration worked) = 0;
};

struct WorkQueueOptions {
  Clock::Duration base_delay = std::chrono::milliseconds(5);
  Clock::Duration max_delay = std::chrono::seconds(60);
  // Called (without the queue's lock) after every Add, AddAt and Done: a key may be ready
  // sooner than the worker planned to look. The daemon wakes its worker with it; must not
  // call back into the queue.
  std::function<void()> on_change;
  // Optional; must outlive the queue.
  WorkQueueMetrics* metrics = nullptr;
};

// The keys being worked on, at one instant (client-go's unfinished_work_seconds and
// longest_running_processor_seconds).
struct InFlightWork {
  size_t keys = 0;
  Clock::Duration total{};    // summed over the keys in flight
  Clock::Duration longest{};  // the key in flight longest
};

class WorkQueue {
 public:
  WorkQueue(const Clock& clock, WorkQueueOptions options = {});

  // Queues `key` now (no-op if already queued; deferred until Done if in flight).
  void Add(const std::string& key);
  // Queues `key` at `at` (now if in the past). An earlier schedule for the key wins.
  void AddAt(const std::string& key, Clock::TimePoint at);
  void AddAfter(const std::string& key, Clock::Duration delay) { AddAt(key, clock_.Now() + delay); }
  // Queues `key` after its back-off: base * 2^failures, capped at max.
  void AddRateLimited(const std::string& key);
  // Clears the failure count of `key` (after a successful reconcile).
  void Forget(const std::string& key);
  // Number of times `key` was rate-limited since the last Forget.
  int Failures(const std::string& key) const;

  // The next key ready now, marked in flight; nullopt when none is ready.
  std::optional<std::string> Get();
  // Marks `key` no longer in flight; if it was added meanwhile, it is queued again.
  void Done(const std::string& key);

  // When the next delayed key becomes ready (nullopt: nothing delayed). A ready key makes
  // this "now".
  std::optional<Clock::TimePoint> NextReadyTime() const;
  // Keys ready or waiting (not counting those in flight).
  size_t Len() const;
  // Keys ready now (client-go's depth: delayed keys are not in it until due).
  size_t ReadyLen() const;
  InFlightWork InFlight() const;

 private:
  void PromoteDueLocked(Clock::TimePoint now);
  void Notify() const;
  void EnqueueLocked(const std::string& key);

  const Clock& clock_;
  const WorkQueueOptions options_;
  mutable std::mutex mu_;
  std::deque<std::string> ready_;                                   // FIFO of ready keys
  std::map<std::string, Clock::TimePoint, std::less<>> queued_;     // in ready_ -> since
  std::map<std::string, Clock::TimePoint, std::less<>> in_flight_;  // -> handed out at
  std::set<std::string, std::less<>> dirty_in_flight_;              // added while in flight
  std::map<std::string, Clock::TimePoint> waiting_;                 // delayed keys -> due time
  std::map<std::string, int> failures_;
};

}  // namespace skb::reconcile

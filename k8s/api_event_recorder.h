// SPDX-License-Identifier: Apache-2.0
// EventRecorder writing core/v1 Events through a KubeClient, like client-go's recorder with
// its EventCorrelator:
//  - Record() only queues (bounded; the oldest queued event is dropped when full) and
//    returns; a worker thread writes.
//  - Repeats (same object, type, reason, message, component) within the aggregation window
//    are folded into one Event: its count goes up and lastTimestamp moves (a merge patch),
//    as `kubectl describe` shows "(x5 over 3m)".
//  - A token bucket per object and reason (burst 25, then one per 5 minutes by default)
//    drops floods. client-go's default spam key is the object alone; the bridge keys it on
//    the reason too (client-go allows that through CorrelatorOptions.SpamKeyFunc): one lend
//    and return of a node is some 25 Events of different reasons on that Node, and with a
//    per-object budget the second lend of the day lost its last steps (ReturnedToSlurm was
//    dropped). A flood of one reason is still cut to its burst.
//
//   ApiEventRecorder recorder(client.get(), {.component = "slurm-k8s-bridge", .host = pod});
//   recorder.Start();
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "k8s/event_recorder.h"
#include "k8s/kube_client.h"
#include "k8s/rate_limiter.h"
#include "src/base/clock.h"

namespace skb::k8s {

struct EventRecorderOptions {
  std::string component = "slurm-k8s-bridge";  // source.component / reportingComponent
  std::string host;                            // source.host / reportingInstance
  size_t max_queue = 1000;
  std::chrono::minutes aggregation_window{10};
  size_t max_tracked_events = 4096;   // LRU of recent events for aggregation
  double per_object_qps = 1.0 / 300;  // per object and reason
  int per_object_burst = 25;
  // Namespace for events about cluster-scoped objects (nodes), as kubectl looks there.
  std::string cluster_scoped_namespace = "default";
  const Clock* clock = nullptr;  // null: system clock
};

struct EventRecorderStats {
  uint64_t created = 0;
  uint64_t aggregated = 0;     // repeats folded into an existing Event
  uint64_t dropped_queue = 0;  // queue full
  uint64_t dropped_spam = 0;   // rate limit per object and reason
  uint64_t failed = 0;         // apiserver refused or unreachable
};

// Thread-safe.
class ApiEventRecorder final : public EventRecorder {
 public:
  // `client` must outlive the recorder.
  ApiEventRecorder(KubeClient* client, EventRecorderOptions options);
  ~ApiEventRecorder() override;  // Stop()s

  void Start();
  // Writes what is queued (best effort, a few seconds at most), then stops. Idempotent.
  void Stop();

  void Record(const ObjectReference& object, EventType type, const std::string& reason,
              const std::string& message) override;

  EventRecorderStats Stats() const;
  // Blocks until the queue is empty and the worker idle (tests, shutdown).
  void Flush();

 private:
  struct Pending {
    ObjectReference object;
    EventType type;
    std::string reason;
    std::string message;
    Clock::TimePoint at;
  };
  struct Tracked {
    std::string ns;
    std::string name;  // of the Event object
    int64_t count = 0;
    Clock::TimePoint last;
    std::list<std::string>::iterator lru;
  };

  void Run();
  void Write(const Pending& p);

  KubeClient* const client_;
  const EventRecorderOptions options_;
  const Clock* const clock_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;          // GUARDED_BY(mu_)
  bool busy_ = false;          // GUARDED_BY(mu_)
  EventRecorderStats stats_;   // GUARDED_BY(mu_)

  // Worker thread only.
  std::unordered_map<std::string, Tracked> tracked_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, std::unique_ptr<TokenBucket>> spam_;
  uint64_t last_stamp_ = 0;
};

}  // namespace skb::k8s

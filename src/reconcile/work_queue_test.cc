// SPDX-License-Identifier: Apache-2.0
#include "src/reconcile/work_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace skb::reconcile {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class WorkQueueTest : public ::testing::Test {
 protected:
  SimulatedClock clock_{Clock::TimePoint{} + seconds(1000)};
  WorkQueue q_{clock_};
};

TEST_F(WorkQueueTest, DeduplicatesAndKeepsFifoOrder) {
  q_.Add("a");
  q_.Add("b");
  q_.Add("a");
  EXPECT_EQ(q_.Len(), 2u);
  EXPECT_EQ(q_.Get(), "a");
  EXPECT_EQ(q_.Get(), "b");
  EXPECT_EQ(q_.Get(), std::nullopt);
}

TEST_F(WorkQueueTest, NeverHandsOutAKeyTwiceAtOnce) {
  q_.Add("a");
  ASSERT_EQ(q_.Get(), "a");
  q_.Add("a");  // changed while being reconciled
  EXPECT_EQ(q_.Get(), std::nullopt) << "in flight: must wait for Done";
  q_.Done("a");
  EXPECT_EQ(q_.Get(), "a") << "queued again after Done";
  q_.Done("a");
  EXPECT_EQ(q_.Get(), std::nullopt);
}

TEST(WorkQueueNotifyTest, TellsTheWorkerWhenAKeyMayBeReadySooner) {
  SimulatedClock clock{Clock::TimePoint{} + seconds(1000)};
  int notified = 0;
  WorkQueue q(clock, {.on_change = [&] { ++notified; }});
  q.Add("a");
  EXPECT_EQ(notified, 1);
  q.AddAfter("b", seconds(5));
  EXPECT_EQ(notified, 2);
  ASSERT_EQ(q.Get(), "a");
  EXPECT_EQ(notified, 2) << "taking a key changes nothing a sleeping worker waits for";
  q.Done("a");
  EXPECT_EQ(notified, 3);
}

// What client-go's workqueue metrics see, recorded.
struct RecordedMetrics : WorkQueueMetrics {
  int added = 0, retried = 0;
  std::vector<Clock::Duration> queued, worked;
  void Added() override { ++added; }
  void Retried() override { ++retried; }
  void Started(Clock::Duration d) override { queued.push_back(d); }
  void Finished(Clock::Duration d) override { worked.push_back(d); }
};

TEST(WorkQueueMetricsTest, CountsAddsRetriesAndTimesQueuedAndWorkedAsClientGoDoes) {
  SimulatedClock clock{Clock::TimePoint{} + seconds(1000)};
  RecordedMetrics m;
  WorkQueue q(clock, {.metrics = &m});
  q.Add("a");
  q.Add("a");  // already queued: not an add
  q.AddAfter("b", seconds(5));
  EXPECT_EQ(m.added, 1) << "a delayed key is added when it is due, not before";
  EXPECT_EQ(q.ReadyLen(), 1u);
  EXPECT_EQ(q.Len(), 2u);
  clock.Advance(seconds(2));
  ASSERT_EQ(q.Get(), "a");
  ASSERT_EQ(m.queued.size(), 1u);
  EXPECT_EQ(m.queued[0], seconds(2));
  q.Add("a");  // changed while in flight: added again at Done
  EXPECT_EQ(m.added, 1);
  clock.Advance(milliseconds(300));
  InFlightWork w = q.InFlight();
  EXPECT_EQ(w.keys, 1u);
  EXPECT_EQ(w.total, milliseconds(300));
  EXPECT_EQ(w.longest, milliseconds(300));
  q.Done("a");
  ASSERT_EQ(m.worked.size(), 1u);
  EXPECT_EQ(m.worked[0], milliseconds(300));
  EXPECT_EQ(m.added, 2);
  EXPECT_EQ(q.InFlight().keys, 0u);
  clock.Advance(seconds(3));  // b is due
  ASSERT_EQ(q.Get(), "a");
  ASSERT_EQ(q.Get(), "b");
  EXPECT_EQ(m.added, 3);
  EXPECT_EQ(m.queued.back(), Clock::Duration{}) << "b was ready only from the Get that promoted it";
  clock.Advance(seconds(1));
  w = q.InFlight();
  EXPECT_EQ(w.keys, 2u);
  EXPECT_EQ(w.total, seconds(2));
  EXPECT_EQ(w.longest, seconds(1));
  q.AddRateLimited("b");
  q.AddRateLimited("b");
  EXPECT_EQ(m.retried, 2);
  q.Done("b");
  q.Done("a");
  EXPECT_EQ(m.worked.size(), 3u);
}

TEST_F(WorkQueueTest, DelayedKeysBecomeReadyWhenDue) {
  q_.AddAfter("late", seconds(10));
  q_.AddAfter("later", seconds(20));
  EXPECT_EQ(q_.Get(), std::nullopt);
  EXPECT_EQ(q_.NextReadyTime(), clock_.Now() + seconds(10));
  clock_.Advance(seconds(10));
  EXPECT_EQ(q_.Get(), "late");
  EXPECT_EQ(q_.NextReadyTime(), clock_.Now() + seconds(10));
  // An earlier schedule wins; Add makes it ready at once.
  q_.AddAfter("later", seconds(1));
  EXPECT_EQ(q_.NextReadyTime(), clock_.Now() + seconds(1));
  q_.Add("later");
  EXPECT_EQ(q_.Get(), "later");
  EXPECT_EQ(q_.NextReadyTime(), std::nullopt);
}

TEST_F(WorkQueueTest, RateLimitedBackOffDoublesAndIsCappedAndForgotten) {
  WorkQueue q(clock_, {milliseconds(100), seconds(1)});
  std::vector<Clock::Duration> delays;
  for (int i = 0; i < 6; ++i) {
    q.AddRateLimited("x");
    delays.push_back(*q.NextReadyTime() - clock_.Now());
    clock_.Advance(*q.NextReadyTime() - clock_.Now());
    ASSERT_EQ(q.Get(), "x");
    q.Done("x");
  }
  EXPECT_THAT(delays,
              ::testing::ElementsAre(milliseconds(100), milliseconds(200), milliseconds(400),
                                     milliseconds(800), seconds(1), seconds(1)));
  EXPECT_EQ(q.Failures("x"), 6);
  q.Forget("x");
  EXPECT_EQ(q.Failures("x"), 0);
  q.AddRateLimited("x");
  EXPECT_EQ(*q.NextReadyTime() - clock_.Now(), milliseconds(100));
}

TEST_F(WorkQueueTest, ConcurrentProducersAndConsumersProcessEachKeyOnceAtATime) {
  std::atomic<int> concurrent{0}, max_concurrent{0}, processed{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    while (!stop) {
      auto k = q_.Get();
      if (!k) {
        std::this_thread::yield();
        continue;
      }
      if (*k == "hot") {
        int c = ++concurrent;
        int m = max_concurrent;
        while (c > m && !max_concurrent.compare_exchange_weak(m, c)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        --concurrent;
      }
      ++processed;
      q_.Done(*k);
    }
  };
  std::thread w1(worker), w2(worker);
  for (int i = 0; i < 2000; ++i) {
    q_.Add("hot");
    q_.Add("k" + std::to_string(i % 50));
  }
  while (q_.Len() > 0) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(20));
  stop = true;
  w1.join();
  w2.join();
  EXPECT_EQ(max_concurrent.load(), 1);
  EXPECT_GT(processed.load(), 50);
}

}  // namespace
}  // namespace skb::reconcile

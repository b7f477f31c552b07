// SPDX-License-Identifier: Apache-2.0
#include "k8s/api_event_recorder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/event_info.h"
#include "k8s/fake_kube_client.h"

namespace skb::k8s {
namespace {

using std::chrono::minutes;

std::vector<EventInfo> Events(FakeKubeClient& fake, const std::string& ns) {
  std::vector<EventInfo> out;
  auto list = fake.List(Resource::Events(), ns, {});
  for (const auto& e : list->items) out.push_back(*ParseEvent(e));
  return out;
}

class ApiEventRecorderTest : public ::testing::Test {
 protected:
  SimulatedClock clock_{SimulatedClock::TimePoint{} + std::chrono::hours(24 * 365 * 56)};
  FakeKubeClient fake_;
};

TEST_F(ApiEventRecorderTest, CreatesEventsForNodesAndPods) {
  ApiEventRecorder rec(&fake_, {.component = "bridge-test", .host = "pod-a", .clock = &clock_});
  rec.Start();
  rec.Record(NodeRef("node1", "uid-1"), EventType::kWarning, "SlurmDrained",
             "k8s-bridge: GpuHealthy: XID 79");
  rec.Record(PodRef("slurm", "reserve-node1"), EventType::kNormal, "Lent",
             "lent to inference/llm-0");
  rec.Flush();
  auto node_events = Events(fake_, "default");
  ASSERT_EQ(node_events.size(), 1u);
  EXPECT_EQ(node_events[0].involved.kind, "Node");
  EXPECT_EQ(node_events[0].involved.name, "node1");
  EXPECT_EQ(node_events[0].involved.uid, "uid-1");
  EXPECT_EQ(node_events[0].type, "Warning");
  EXPECT_EQ(node_events[0].reason, "SlurmDrained");
  EXPECT_EQ(node_events[0].count, 1);
  EXPECT_EQ(node_events[0].source_component, "bridge-test");
  EXPECT_EQ(node_events[0].first_timestamp, node_events[0].last_timestamp);
  auto pod_events = Events(fake_, "slurm");
  ASSERT_EQ(pod_events.size(), 1u);
  EXPECT_EQ(pod_events[0].involved.namespace_, "slurm");
  EXPECT_EQ(rec.Stats().created, 2u);
}

TEST_F(ApiEventRecorderTest, AggregatesRepeatsWithinTheWindow) {
  ApiEventRecorder rec(&fake_, {.clock = &clock_});
  rec.Start();
  for (int i = 0; i < 5; ++i) {
    rec.Record(NodeRef("node1"), EventType::kWarning, "SlurmDown", "slurmd not responding");
    clock_.Advance(minutes(1));
  }
  rec.Record(NodeRef("node1"), EventType::kWarning, "SlurmDown", "a different message");
  rec.Flush();
  auto events = Events(fake_, "default");
  ASSERT_EQ(events.size(), 2u);
  const EventInfo& agg = events[0].count == 5 ? events[0] : events[1];
  EXPECT_EQ(agg.count, 5);
  EXPECT_NE(agg.first_timestamp, agg.last_timestamp);
  EXPECT_EQ(rec.Stats().aggregated, 4u);

  // Past the window a repeat starts a new Event.
  clock_.Advance(minutes(11));
  rec.Record(NodeRef("node1"), EventType::kWarning, "SlurmDown", "slurmd not responding");
  rec.Flush();
  EXPECT_EQ(Events(fake_, "default").size(), 3u);
}

TEST_F(ApiEventRecorderTest, RecreatesAnEventThatExpired) {
  ApiEventRecorder rec(&fake_, {.clock = &clock_});
  rec.Start();
  rec.Record(NodeRef("node1"), EventType::kNormal, "Returned", "back to slurm");
  rec.Flush();
  auto events = Events(fake_, "default");
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(fake_.Delete(Resource::Events(), "default", events[0].meta.name).ok());
  rec.Record(NodeRef("node1"), EventType::kNormal, "Returned", "back to slurm");
  rec.Flush();
  events = Events(fake_, "default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count, 1);
}

TEST_F(ApiEventRecorderTest, SpamFilterLimitsOneObject) {
  ApiEventRecorder rec(&fake_, {.per_object_burst = 3, .clock = &clock_});
  rec.Start();
  for (int i = 0; i < 10; ++i) {
    rec.Record(NodeRef("node1"), EventType::kNormal, "Flapping", "message " + std::to_string(i));
  }
  rec.Record(NodeRef("node2"), EventType::kNormal, "Flapping", "other node");
  rec.Flush();
  EXPECT_EQ(rec.Stats().created, 4u);
  EXPECT_EQ(rec.Stats().dropped_spam, 7u);
}

// One lend and return of a node is some 25 Events on its Node, each step its own reason: a
// flow of many reasons is never cut by the filter, however long; one reason is.
TEST_F(ApiEventRecorderTest, SpamFilterCutsOneReasonNotAFlowOfMany) {
  ApiEventRecorder rec(&fake_, {.per_object_burst = 3, .clock = &clock_});
  rec.Start();
  for (int step = 0; step < 40; ++step) {
    rec.Record(NodeRef("node1"), EventType::kNormal, "Step" + std::to_string(step), "a step");
  }
  for (int i = 0; i < 5; ++i) {
    rec.Record(NodeRef("node1"), EventType::kNormal, "Step0", "again " + std::to_string(i));
  }
  rec.Flush();
  EXPECT_EQ(rec.Stats().created, 40u + 2u);
  EXPECT_EQ(rec.Stats().dropped_spam, 3u);
}

TEST_F(ApiEventRecorderTest, RecordNeverBlocksAndBoundsTheQueue) {
  ApiEventRecorder rec(&fake_, {.max_queue = 10, .clock = &clock_});
  // Not started: nothing drains the queue, yet Record returns at once.
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i)
    rec.Record(NodeRef("n" + std::to_string(i)), EventType::kNormal, "R", "m");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(rec.Stats().dropped_queue, 990u);
  rec.Start();
  rec.Flush();
  EXPECT_EQ(rec.Stats().created, 10u);
}

}  // namespace
}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/victims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "src/ownership/test_support.h"

namespace skb::ownership {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using test_support::kNow;
using ::testing::ElementsAre;

VictimCandidate Node(std::string name, int64_t gpus, int32_t prio, int start_min_ago,
                     std::vector<JobCost> jobs = {}) {
  return {std::move(name), gpus, prio, kNow - minutes(start_min_ago), std::move(jobs)};
}

TEST(PickVictims, LowestPriorityThenKubeSchedulerTieBreak) {
  std::vector<VictimCandidate> nodes = {
      Node("busy", 8, 2000, 50, {{8, kNow - hours(5)}}),
      Node("idle-old", 8, 1000, 60),
      Node("idle-new", 8, 1000, 5),
      Node("protected", 8, 1'000'000'000, 1),
      Node("small", 4, 1000, 1),
  };
  // One 8-GPU pod at inference priority: the newest idle node (kube-scheduler picks the
  // latest-started victim among equals); the 4-GPU node does not fit.
  EXPECT_THAT(PickVictims(nodes, {8, 1, 100'000}, kNow), ElementsAre(2));
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow), ElementsAre(2, 1, 0));
  // Never the protected node, however large the demand.
  EXPECT_THAT(PickVictims(nodes, {8, 10, 100'000}, kNow), ElementsAre(2, 1, 0));
  // A demand below the preemptible class takes idle nodes only.
  EXPECT_THAT(PickVictims(nodes, {1, 10, 1500}, kNow), ElementsAre(4, 2, 1));
  EXPECT_TRUE(PickVictims(nodes, {16, 1, 100'000}, kNow).empty());
  EXPECT_TRUE(PickVictims(nodes, {8, 0, 100'000}, kNow).empty());
}

TEST(PickVictims, LeastWorkLostPrefersSmallAndFreshNodes) {
  std::vector<VictimCandidate> nodes = {
      Node("long", 8, 2000, 1, {{8, kNow - hours(10)}}),
      Node("short", 8, 2000, 300, {{8, kNow - minutes(10)}}),
      Node("big", 16, 2000, 1, {{1, kNow - minutes(1)}}),
  };
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow, VictimOrder::kLeastWorkLost),
              ElementsAre(1, 0, 2));
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow, VictimOrder::kKubeScheduler),
              ElementsAre(2, 0, 1));
  EXPECT_DOUBLE_EQ(WorkLost(nodes[1], kNow), 8 * 600.0);
}

}  // namespace
}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/slurm_poller.h"

#include <gtest/gtest.h>

#include <thread>

#include "bridge/slurm/fake_slurm_client.h"

namespace skb::bridge::slurm {
namespace {

using namespace std::chrono_literals;
using skb::slurm::JobState;
using skb::slurm::NodeBaseState;

NodeView Node(const std::string& name, NodeBaseState state) {
  NodeView n;
  n.name = name;
  n.base_state = state;
  return n;
}

JobView Pending(uint32_t id) {
  JobView j;
  j.job_id = id;
  j.state = JobState::kPending;
  j.state_reason = "BeginTime";
  return j;
}

// The poller with resyncs off unless a test asks for one, and what it handed on.
class SlurmPollerTest : public ::testing::Test {
 protected:
  SlurmPollerTest() {
    slurm_.AddNode(Node("node1", NodeBaseState::kIdle));
    slurm_.AddJob(Pending(7));
  }
  JobState SeenState(uint32_t id) const {
    for (const auto& j : seen_.jobs) {
      if (j.job_id == id) return j.state;
    }
    return JobState::kUnknown;
  }

  FakeSlurmClient slurm_;
  SlurmState seen_;
  int calls_ = 0;
  SlurmPoller poller_{&slurm_, 100ms, 0ms, [this](const SlurmState& s) {
                        seen_ = s;
                        ++calls_;
                      }};
};

TEST_F(SlurmPollerTest, TheFirstPollReadsEverythingAndAQuietClusterIsUnchanged) {
  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kChanged);
  EXPECT_EQ(calls_, 1);
  ASSERT_EQ(seen_.nodes.size(), 1u);
  EXPECT_EQ(SeenState(7), JobState::kPending);
  EXPECT_TRUE(seen_.nodes_changed && seen_.jobs_changed);

  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kUnchanged);
  EXPECT_EQ(poller_.Resync().value(), PollResult::kUnchanged)
      << "a full read equal to the view wakes nobody";
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(poller_.polls(), 3u);
  EXPECT_EQ(poller_.repairs(), 0u);
}

TEST_F(SlurmPollerTest, AJobChangeTheStampMissedIsRepairedByTheNextResync) {
  ASSERT_TRUE(poller_.PollOnce().ok());
  slurm_.SetJobStampsStale(true);
  ASSERT_TRUE(slurm_.StartJob(7, "node1", {0, 1}));

  // By the stamp alone the job stays pending for as long as nothing else changes.
  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kUnchanged);
  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kUnchanged);
  EXPECT_EQ(SeenState(7), JobState::kPending);

  EXPECT_EQ(poller_.Resync().value(), PollResult::kRepaired);
  EXPECT_EQ(SeenState(7), JobState::kRunning);
  EXPECT_TRUE(seen_.jobs_changed);
  EXPECT_FALSE(seen_.nodes_changed);
  EXPECT_EQ(calls_, 2);
  EXPECT_EQ(poller_.repairs(), 1u);
}

TEST_F(SlurmPollerTest, ANodeChangeRereadsEveryJobWhateverTheJobStampSays) {
  ASSERT_TRUE(poller_.PollOnce().ok());
  slurm_.SetJobStampsStale(true);
  // Slurm starts the job: the node becomes allocated (stamped), the job's stamp is missed.
  ASSERT_TRUE(slurm_.StartJob(7, "node1", {0}));
  slurm_.AddNode(Node("node1", NodeBaseState::kAllocated));

  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kRepaired);
  EXPECT_TRUE(seen_.nodes_changed);
  EXPECT_EQ(SeenState(7), JobState::kRunning);
}

TEST_F(SlurmPollerTest, AResyncIsDueByTheIntervalAndAFailedOneIsTriedAgain) {
  SlurmPoller poller(&slurm_, 50ms, 300ms, [this](const SlurmState& s) { seen_ = s; });
  ASSERT_EQ(poller.PollOnce().value(), PollResult::kChanged);
  slurm_.SetJobStampsStale(true);
  ASSERT_TRUE(slurm_.StartJob(7, "node1", {0}));
  EXPECT_EQ(poller.PollOnce().value(), PollResult::kUnchanged) << "no resync due yet";

  std::this_thread::sleep_for(320ms);
  slurm_.FailNext("LoadJobs", UnavailableError("slurmctld busy"));
  EXPECT_EQ(poller.PollOnce().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(SeenState(7), JobState::kPending) << "a failed poll keeps the last view";
  EXPECT_EQ(poller.PollOnce().value(), PollResult::kRepaired);
  EXPECT_EQ(SeenState(7), JobState::kRunning);
}

TEST_F(SlurmPollerTest, WhatAReadChangedBeforeALaterReadFailedIsHandedOnByTheNextPoll) {
  ASSERT_TRUE(poller_.PollOnce().ok());
  slurm_.AddNode(Node("node1", NodeBaseState::kDown));
  slurm_.FailNext("LoadJobs", UnavailableError("slurmctld busy"));
  EXPECT_FALSE(poller_.PollOnce().ok());
  EXPECT_EQ(calls_, 1);

  EXPECT_EQ(poller_.PollOnce().value(), PollResult::kChanged);
  EXPECT_EQ(calls_, 2);
  EXPECT_TRUE(seen_.nodes_changed);
  ASSERT_EQ(seen_.nodes.size(), 1u);
  EXPECT_EQ(seen_.nodes[0].base_state, NodeBaseState::kDown);
}

}  // namespace
}  // namespace skb::bridge::slurm

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/hetjob.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "src/ownership/job_policy.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/test_support.h"

namespace skb::ownership {
namespace {

using std::chrono::seconds;
using test_support::kNow;
using test_support::PolicyJob;
using ::testing::HasSubstr;

// A heterogeneous job is preempted whole (by its leader's id): preemptible only if every
// component is, with the longest grace of any, the leader's signal; and its cost is every
// component's GPUs on every node.
TEST(HeterogeneousJob, IsJudgedAsAWhole) {
  config::Config cfg;
  slurm::JobView leader = PolicyJob(11), other = PolicyJob(12);
  leader.het_job_id = other.het_job_id = 11;
  other.het_job_offset = 1;
  leader.nodes = {"node1"};
  other.nodes = {"node2", "node3"};
  other.gpu_indices = {{"node2", {0, 1}}, {"node3", {4}}};
  other.signal = slurm::SignalSpec{12, 300, false};
  const std::vector<slurm::JobView> all = {other, leader, PolicyJob(13)};

  const std::vector<const slurm::JobView*> whole = WholeJob(other, all);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0]->job_id, 12u) << "the job asked about first";
  EXPECT_EQ(whole[1]->job_id, 11u);
  EXPECT_EQ(WholeJob(PolicyJob(13), all).size(), 1u);
  EXPECT_EQ(WholeJobId(other), 11u);
  EXPECT_EQ(WholeJobGpus(whole), 8 + 3);  // leader: 8 per node on 1 node; other: 3 indices
  EXPECT_EQ(DescribeWhole(whole),
            "heterogeneous job 11 (components 11 on node1, 12 on node2,node3)");
  EXPECT_EQ(DescribeWhole(WholeJob(PolicyJob(13), all)), "");

  JobPolicy p = PolicyForWhole(whole, cfg, kNow);
  EXPECT_TRUE(p.preemptible) << p.why;
  EXPECT_EQ(p.grace, seconds(300)) << "the longest grace of any component";
  EXPECT_EQ(p.signal, cfg.lending.checkpoint_signal) << "the leader's: one call signals all";

  // One component protected: the whole job is, whichever component is asked about.
  std::vector<slurm::JobView> guarded = all;
  guarded[0].admin_comment = "k8s-bridge:preemptible=false";
  for (const slurm::JobView& j : {guarded[0], guarded[1]}) {
    JobPolicy g = PolicyForWhole(WholeJob(j, guarded), cfg, kNow);
    EXPECT_FALSE(g.preemptible);
    EXPECT_THAT(g.why, HasSubstr("component 12 of heterogeneous job 11"));
  }
  // And so is the reservation class of the leader's node, which sees only the leader.
  std::string why;
  EXPECT_EQ(ClassFor({guarded[1]}, cfg, kNow, &why, guarded), ReservationClass::kProtected);
  EXPECT_THAT(why, HasSubstr("component 12"));
  EXPECT_EQ(ClassFor({guarded[1]}, cfg, kNow, &why), ReservationClass::kPreemptible)
      << "without the other components only the leader is seen";
}

}  // namespace
}  // namespace skb::ownership

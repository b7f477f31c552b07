// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/reservation_class.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "src/ownership/test_support.h"

namespace skb::ownership {
namespace {

using test_support::kNow;
using test_support::PolicyJob;
using ::testing::HasSubstr;

TEST(ClassFor, IdlePreemptibleProtected) {
  config::Config cfg;
  std::string why;
  EXPECT_EQ(ClassFor({}, cfg, kNow, &why), ReservationClass::kIdle);
  EXPECT_THAT(why, HasSubstr("no Slurm job"));
  EXPECT_EQ(ClassFor({PolicyJob(1), PolicyJob(2)}, cfg, kNow), ReservationClass::kPreemptible);
  EXPECT_EQ(ClassFor({PolicyJob(1), PolicyJob(2, "k8s-bridge:preemptible=false")}, cfg, kNow, &why),
            ReservationClass::kProtected);
  EXPECT_THAT(why, HasSubstr("job 2"));
  slurm::JobView done = PolicyJob(3, "");
  done.state = slurm::JobState::kComplete;  // no longer holds the node
  EXPECT_EQ(ClassFor({done}, cfg, kNow), ReservationClass::kIdle);
  slurm::JobView completing = PolicyJob(4);
  completing.completing = true;
  EXPECT_EQ(ClassFor({completing}, cfg, kNow), ReservationClass::kPreemptible);
}

TEST(ClassNames, MapBothWays) {
  LendingConfig cfg;
  EXPECT_EQ(ClassByPriorityClassName("slurm-protected", cfg), ReservationClass::kProtected);
  EXPECT_EQ(ClassByPriorityClassName("slurm-idle", cfg), ReservationClass::kIdle);
  EXPECT_FALSE(ClassByPriorityClassName("other", cfg).has_value());
  EXPECT_EQ(ClassByName("preemptible"), ReservationClass::kPreemptible);
  EXPECT_FALSE(ClassByName("x").has_value());
  EXPECT_EQ(ClassRef(ReservationClass::kPreemptible, cfg).name, "slurm-preemptible");
}

}  // namespace
}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/preemption_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "src/base/strings.h"
#include "src/ownership/test_support.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using test_support::kNow;
using test_support::PolicyJob;
using ::testing::ElementsAre;

TEST(PreemptionRecord, RecordsKeepsTheLatestAndPreservesOtherText) {
  LendingConfig cfg;
  cfg.max_preemptions = 2;
  std::string c = RecordPreemption("k8s-bridge:preemptible=true", 100, "ml/infer-1", cfg);
  EXPECT_EQ(c, "k8s-bridge:preemptible=true k8s-bridge-preempted=100@ml/infer-1");
  c = RecordPreemption(c, 200, "ml/infer 2", cfg);
  c = RecordPreemption(c, 300, "kubernetes", cfg);
  c = RecordPreemption(c, 400, "kubernetes", cfg);
  EXPECT_EQ(c, "k8s-bridge:preemptible=true k8s-bridge-preempted=200,300,400@kubernetes");
  EXPECT_THAT(PreemptionTimes(c), ElementsAre(200, 300, 400));
  // Recording the same preemption again (a retried action) changes nothing.
  EXPECT_EQ(RecordPreemption(c, 400, "kubernetes", cfg), c);
  // Text around the token survives; the token is found only at a word start.
  std::string mid = RecordPreemption("note k8s-bridge-preempted=5@x tail", 6, "y", cfg);
  EXPECT_EQ(mid, "note k8s-bridge-preempted=5,6@y tail");
  EXPECT_TRUE(PreemptionTimes("xk8s-bridge-preempted=5").empty());
  EXPECT_EQ(RecordPreemption("", 7, "p", cfg), "k8s-bridge-preempted=7@p");
  // Garbage is ignored, not trusted.
  EXPECT_THAT(PreemptionTimes("k8s-bridge-preempted=1,x,-3,2@"), ElementsAre(1, 2));
}

TEST(PreemptionRecord, CountsWithinTheWindow) {
  LendingConfig cfg;
  cfg.preemption_window = hours(1);
  slurm::JobView j = PolicyJob(1);
  j.admin_comment = StrCat("k8s-bridge-preempted=", ToUnix(kNow - hours(2)), ",",
                           ToUnix(kNow - minutes(30)), ",", ToUnix(kNow - minutes(1)), "@x");
  EXPECT_EQ(PreemptionsInWindow(j, cfg, kNow), 2);
}

}  // namespace
}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/return_decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "src/ownership/test_support.h"

namespace skb::ownership {
namespace {

using std::chrono::minutes;
using test_support::kNow;
using ::testing::HasSubstr;

TEST(ShouldReturn, CooldownMinLendHealthAndPods) {
  LendingConfig cfg;
  cfg.cooldown = minutes(2);
  cfg.min_lend_time = minutes(5);
  const Clock::TimePoint lent = kNow - minutes(10);
  EXPECT_TRUE(ShouldReturn(lent, kNow - minutes(3), false, true, cfg, kNow).now);
  ReturnDecision d = ShouldReturn(lent, kNow - minutes(1), false, true, cfg, kNow);
  EXPECT_FALSE(d.now);
  EXPECT_EQ(d.at, kNow + minutes(1));
  EXPECT_THAT(d.why, HasSubstr("cool-down"));
  d = ShouldReturn(kNow - minutes(4), kNow - minutes(3), false, true, cfg, kNow);
  EXPECT_EQ(d.at, kNow + minutes(1));
  EXPECT_THAT(d.why, HasSubstr("minimum lend time"));
  EXPECT_FALSE(ShouldReturn(lent, kNow - minutes(3), true, true, cfg, kNow).now);
  d = ShouldReturn(lent, kNow - minutes(3), false, false, cfg, kNow);
  EXPECT_FALSE(d.now);
  EXPECT_FALSE(d.at.has_value());
  EXPECT_THAT(d.why, HasSubstr("unhealthy"));
  EXPECT_FALSE(ShouldReturn(lent, std::nullopt, false, true, cfg, kNow).now);
}

}  // namespace
}  // namespace skb::ownership

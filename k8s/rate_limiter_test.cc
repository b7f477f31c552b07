// SPDX-License-Identifier: Apache-2.0
#include "k8s/rate_limiter.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucket, BurstThenQps) {
  TokenBucket b(10, 3);
  auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(b.Reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(b.Reserve(t0), TokenBucket::Duration::zero());
  EXPECT_EQ(b.Reserve(t0), TokenBucket::Duration::zero());
  // Empty: the next reservations queue 100 ms apart.
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(b.Reserve(t0)), milliseconds(100));
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(b.Reserve(t0)), milliseconds(200));
  // After a second the bucket has refilled what was borrowed plus up to the burst.
  auto t1 = t0 + std::chrono::seconds(1);
  EXPECT_TRUE(b.TryTake(t1));
  EXPECT_TRUE(b.TryTake(t1));
  EXPECT_TRUE(b.TryTake(t1));
  EXPECT_FALSE(b.TryTake(t1));
  // It never holds more than the burst, however long it was idle.
  auto t2 = t1 + std::chrono::hours(1);
  int taken = 0;
  while (b.TryTake(t2)) ++taken;
  EXPECT_EQ(taken, 3);
}

TEST(TokenBucket, NonPositiveQpsIsUnlimited) {
  TokenBucket b(0, 1);
  auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.Reserve(t), TokenBucket::Duration::zero());
}

TEST(TokenBucket, BridgeSettingsAllowFortyImmediately) {
  TokenBucket b(20, 40);
  auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < 40; ++i) ASSERT_EQ(b.Reserve(t), TokenBucket::Duration::zero()) << i;
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(b.Reserve(t)), milliseconds(50));
}

}  // namespace
}  // namespace skb::k8s

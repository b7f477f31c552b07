// SPDX-License-Identifier: Apache-2.0
#include "k8s/backoff.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesUpToMaxWithBoundedJitter) {
  Backoff b({milliseconds(100), milliseconds(1000), 0.5}, /*seed=*/42);
  const int64_t bases[] = {100, 200, 400, 800, 1000, 1000, 1000};
  for (int64_t base : bases) {
    int64_t d = b.Next().count();
    EXPECT_GE(d, base);
    EXPECT_LT(d, base * 3 / 2 + 1);
  }
  b.Reset();
  EXPECT_LT(b.Next().count(), 151);
}

TEST(Backoff, JitterSpreadsClients) {
  Backoff a({milliseconds(1000), milliseconds(30000), 0.5}, 1);
  Backoff c({milliseconds(1000), milliseconds(30000), 0.5}, 2);
  EXPECT_NE(a.Next(), c.Next());
}

TEST(Backoff, NoJitterIsExact) {
  Backoff b({milliseconds(10), milliseconds(35), 0}, 0);
  EXPECT_EQ(b.Next(), milliseconds(10));
  EXPECT_EQ(b.Next(), milliseconds(20));
  EXPECT_EQ(b.Next(), milliseconds(35));
  for (int i = 0; i < 100; ++i) b.Next();  // no overflow after many failures
  EXPECT_EQ(b.Next(), milliseconds(35));
}

}  // namespace
}  // namespace skb::k8s

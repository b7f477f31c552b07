// SPDX-License-Identifier: Apache-2.0
#include "k8s/time_format.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using std::chrono::seconds;

TEST(FormatTime, RoundTripsThroughParseTime) {
  Clock::TimePoint t = Clock::TimePoint{} + seconds(1795304524);
  EXPECT_EQ(FormatTime(t), "2026-11-21T23:42:04Z");
  auto back = ParseTime(FormatTime(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  auto micro = ParseTime(FormatMicroTime(t + std::chrono::microseconds(250)));
  ASSERT_TRUE(micro.ok()) << micro.status();
  EXPECT_EQ(*micro - t, std::chrono::microseconds(250));
}

TEST(ParseTime, KubernetesForms) {
  auto t = ParseTime("2026-11-21T23:42:04Z");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(std::chrono::duration_cast<seconds>(t->time_since_epoch()).count(), 1795304524);
  auto micro = ParseTime("2026-11-21T23:42:04.250000Z");
  ASSERT_TRUE(micro.ok());
  EXPECT_EQ(*micro - *t, std::chrono::milliseconds(250));
  auto offset = ParseTime("2026-11-22T00:42:04+01:00");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, *t);
}

TEST(ParseTime, RejectsGarbage) {
  for (const char* bad : {"", "2026-11-21", "2026-11-21 23:42:04Z", "2026-13-01T00:00:00Z",
                          "2026-11-21T23:42:04", "2026-11-21T23:42:04.Z", "2026-11-21T23:42:04Zx",
                          "20x6-11-21T23:42:04Z", "2026-11-21T23:42:04+0100"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace skb::k8s

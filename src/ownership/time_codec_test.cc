// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/time_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace skb::ownership {
namespace {

TEST(UnixTime, RoundTrips) {
  EXPECT_EQ(ToUnix(FromUnix(1'700'000'123)), 1'700'000'123);
  EXPECT_EQ(ToUnix(FromUnix(5) + std::chrono::milliseconds(999)), 5);
}

// A lent node's idle-since is written to the millisecond, so that its cool-down ends when
// it should and not up to a second early or late; the whole seconds every other time
// annotation holds (and older versions wrote) read as before.
TEST(UnixTime, MillisecondsRoundTripAndWholeSecondsStillParse) {
  using std::chrono::milliseconds;
  const Clock::TimePoint t = FromUnix(1'700'000'000) + milliseconds(250);
  EXPECT_EQ(FormatUnixMillis(t), "1700000000.250");
  EXPECT_EQ(ParseUnixTime(FormatUnixMillis(t)), t);
  EXPECT_EQ(FormatUnixMillis(FromUnix(1'700'000'000)), "1700000000.000");
  EXPECT_EQ(FormatUnixMillis(t + std::chrono::microseconds(999)), "1700000000.250");
  EXPECT_EQ(ParseUnixTime("1700000000"), FromUnix(1'700'000'000));
  EXPECT_EQ(ParseUnixTime("1700000000.5"), FromUnix(1'700'000'000) + milliseconds(500));
  EXPECT_EQ(ParseUnixTime("1700000000.123456789"), FromUnix(1'700'000'000) + milliseconds(123));
  EXPECT_EQ(ParseUnixTime("99999999999999999.999"), FromUnix(99'999'999'999));
  for (const char* bad : {"", ".", ".5", "1700000000.", "1700000000.x", "1700000000.1234567890",
                          "-1.5", "1700000000.-5", "1700000000,5", " 1700000000.5"}) {
    EXPECT_EQ(ParseUnixTime(bad), std::nullopt) << bad;
  }
}

// A signal sent at 100.9 s is stamped 100 (whole seconds): the grace must still be whole,
// so it runs from 101 and a 2 s grace ends at 103, not at 102 (1.1 s after the signal).
TEST(UnixTime, TheGraceRunsFromTheSecondAfterTheStamp) {
  const Clock::TimePoint sent = FromUnix(100) + std::chrono::milliseconds(900);
  const Clock::TimePoint stamp = FromUnix(ToUnix(sent));
  EXPECT_EQ(stamp, FromUnix(100));
  const Clock::TimePoint ends = GraceEnds(stamp, /*exact=*/false, std::chrono::seconds(2));
  EXPECT_EQ(ends, FromUnix(103));
  EXPECT_GE(ends - sent, std::chrono::seconds(2));
  EXPECT_LE(ends - sent, std::chrono::seconds(3));
  // Recorded to the millisecond: exactly the grace.
  EXPECT_EQ(GraceEnds(sent, /*exact=*/true, std::chrono::seconds(2)),
            sent + std::chrono::seconds(2));
}

TEST(UnixTime, ATimeTheClockCannotHoldIsClampedNotOverflowed) {
  EXPECT_GT(FromUnix(99'999'999'999), FromUnix(9'000'000'000));
  EXPECT_EQ(FromUnix(99'999'999'999), FromUnix(std::numeric_limits<slurm::UnixTime>::max()));
  EXPECT_LT(FromUnix(-99'999'999'999), FromUnix(0));
}

TEST(UnixTime, FormatsUtcToTheSecond) {
  EXPECT_EQ(FormatUtc(FromUnix(1700000000) + std::chrono::milliseconds(999)),
            "2023-11-14T22:13:20Z");
}

}  // namespace
}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "k8s/quantity.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

int64_t Milli(const char* s) {
  auto q = Quantity::Parse(s);
  EXPECT_TRUE(q.ok()) << s << ": " << q.status();
  return q.ok() ? q->MilliValue() : -999;
}

TEST(Quantity, CommonForms) {
  EXPECT_EQ(Milli("8"), 8000);
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Milli("1Gi"), (int64_t{1} << 30) * 1000);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("0.5Gi"), (int64_t{1} << 29) * 1000);
  EXPECT_EQ(Milli("2k"), 2000000);
  EXPECT_EQ(Milli("2e3"), 2000000);
  EXPECT_EQ(Milli("1E-3"), 1);
  EXPECT_EQ(Milli("100Mi"), int64_t{100} * (1 << 20) * 1000);
  EXPECT_EQ(Milli("-1"), -1000);
  EXPECT_EQ(Milli("+2"), 2000);
  EXPECT_EQ(Milli("1n"), 1);  // rounds up to the smallest unit we keep
  EXPECT_EQ(Milli("0n"), 0);
  EXPECT_EQ(Milli("1.0001"), 1001);  // rounds up
  EXPECT_EQ(Milli("5e-40"), 1);
}

TEST(Quantity, ValueRoundsUp) {
  EXPECT_EQ(Quantity::Parse("500m")->Value(), 1);
  EXPECT_EQ(Quantity::Parse("8")->Value(), 8);
  EXPECT_EQ(Quantity::Parse("0")->Value(), 0);
  EXPECT_EQ(Quantity::Parse("2001m")->Value(), 3);
  EXPECT_LT(*Quantity::Parse("500m"), *Quantity::Parse("1"));
}

TEST(Quantity, RejectsGarbageAndOverflow) {
  for (const char* bad : {"", "m", "abc", "1x", "1Gb", "1.2.3", "--1", "1e", "1e+", "1e1000",
                          "1ee3", "99999999999999999999", "9Ei", "1e25", " 1", "1 "}) {
    auto q = Quantity::Parse(bad);
    EXPECT_FALSE(q.ok()) << bad;
    if (!q.ok()) {
      EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/exposition_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace skb::observability {
namespace {

using ::testing::HasSubstr;

TEST(ExpositionParserTest, ReadsSamplesLabelsAndTimestamps) {
  auto e = ParseExposition(
      "# a plain comment\n"
      "# HELP up Whether up.\n"
      "# TYPE up gauge\n"
      "up{job=\"a\",instance=\"x:1\"} 1 1700000000000\n"
      "up{job=\"b\"} NaN\n"
      "\n"
      "untyped_thing -Inf\n");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->samples.size(), 3u);
  EXPECT_EQ(e->Value("up", {{"job", "a"}, {"instance", "x:1"}}), 1);
  EXPECT_TRUE(std::isnan(*e->Value("up", {{"job", "b"}})));
  EXPECT_EQ(e->Value("untyped_thing"), -INFINITY);
  EXPECT_EQ(e->helps.at("up"), "Whether up.");
  EXPECT_FALSE(e->Value("up").has_value());
}

struct BadCase {
  const char* text;
  const char* error;
};

class ExpositionParserRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ExpositionParserRejects, WithAMessageNamingTheProblem) {
  auto e = ParseExposition(GetParam().text);
  ASSERT_FALSE(e.ok()) << GetParam().text;
  EXPECT_THAT(e.status().message(), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExpositionParserRejects,
    ::testing::Values(
        BadCase{"x 1", "must end with a line feed"}, BadCase{"x{a=\"1} 1\n", "unterminated"},
        BadCase{"x{a=\"\\t\"} 1\n", "invalid escape"},
        BadCase{"x{a=\"1\",a=\"2\"} 1\n", "duplicate label"}, BadCase{"x{a=1} 1\n", "expected =\""},
        BadCase{"x one\n", "invalid value"}, BadCase{"x 1\nx 2\n", "duplicate series"},
        BadCase{"x 1\ny 1\nx{a=\"b\"} 1\n", "not contiguous"},
        BadCase{"x 1\n# TYPE x gauge\n", "after its samples"},
        BadCase{"# TYPE x gauge\n# TYPE x counter\n", "second TYPE"},
        BadCase{"# TYPE x flux\n", "unknown TYPE"},
        BadCase{"# TYPE c counter\nc -1\n", "negative counter"},
        BadCase{"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n", "+Inf"},
        BadCase{"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
                "cumulative"},
        BadCase{"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 1\n", "_count differs"},
        BadCase{"1x 1\n", "expected a metric name"}));

}  // namespace
}  // namespace skb::observability

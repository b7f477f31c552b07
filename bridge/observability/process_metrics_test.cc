// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/process_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>

#include "bridge/observability/exposition_parser.h"

namespace skb::observability {
namespace {

TEST(ProcStatTest, ParsesTheFieldsAfterACommandWithSpacesAndParentheses) {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
  const char* stat =
      "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 123456 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto s = ParseProcStat(stat, 100);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) / 100
  EXPECT_EQ(s->start_ticks, 123456u);
  EXPECT_EQ(s->virtual_bytes, 104857600u);
  EXPECT_EQ(s->resident_pages, 2560u);
}

TEST(ProcStatTest, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(ParseProcStat("", 100).has_value());
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2 3", 100).has_value());  // too few fields
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 2x0 50 0 0 20 0 3 "
                             "0 123456 104857600 2560",
                             100)
                   .has_value());
  EXPECT_FALSE(ParseProcStat("no parenthesis at all", 100).has_value());
}

// This process's own figures, through the exposition: plausible, not exact.
TEST(ProcessMetricsTest, ExportsThisProcesssFigures) {
  Registry r;
  AddProcessMetrics(&r);
  volatile double spin = 0;
  for (int i = 0; i < 20'000'000; ++i) spin = spin + i;  // some CPU time to count
  auto e = ParseExposition(r.Render());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->types.at("process_cpu_seconds_total"), "counter");
  EXPECT_GT(*e->Value("process_cpu_seconds_total"), 0);
  EXPECT_GT(*e->Value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(*e->Value("process_virtual_memory_bytes"), *e->Value("process_resident_memory_bytes"));
  EXPECT_GE(*e->Value("process_open_fds"), 3);  // stdin, stdout, stderr at least
  EXPECT_GE(*e->Value("process_max_fds"), *e->Value("process_open_fds"));
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(*e->Value("process_start_time_seconds"), now + 1);
  EXPECT_GT(*e->Value("process_start_time_seconds"), now - 3600);  // started within the hour
  // A second scrape never goes back.
  const double first = *e->Value("process_cpu_seconds_total");
  auto again = ParseExposition(r.Render());
  ASSERT_TRUE(again.ok());
  EXPECT_GE(*again->Value("process_cpu_seconds_total"), first);
}

}  // namespace
}  // namespace skb::observability

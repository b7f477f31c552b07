// SPDX-License-Identifier: Apache-2.0
// The replaced operator new/delete below pair malloc with free; GCC's inliner then reports
// every std container in this file as a new/free mismatch. It is not one.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include "bridge/observability/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "bridge/observability/exposition_parser.h"

// Counts heap allocations while `g_count_allocations` is set (this thread only), to prove
// the hot path does not allocate. Sanitizer runtimes replace operator new themselves:
// there the count is unavailable and the test is skipped.
#if defined(__SANITIZE_ADDRESS__)
#define SKB_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SKB_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef SKB_COUNT_ALLOCATIONS
#define SKB_COUNT_ALLOCATIONS 1
#endif

namespace {
thread_local bool g_count_allocations = false;
std::atomic<int> g_allocations{0};
}  // namespace

#if SKB_COUNT_ALLOCATIONS
void* operator new(std::size_t n) {
  if (g_count_allocations) g_allocations.fetch_add(1);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace skb::observability {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, RendersCountersGaugesAndHistogramsExactly) {
  Registry r;
  Counter& c = r.AddCounter("skb_test_events_total", "Events seen.");
  c.Increment();
  c.Increment(2);
  GaugeFamily& g = r.AddGaugeFamily("skb_test_gpus", "GPUs by owner.", {"owner"});
  g.WithLabels({"slurm"}).Set(24);
  g.WithLabels({"k8s"}).Set(8);
  Histogram& h = r.AddHistogram("skb_test_duration_seconds", "Durations.", {0.1, 1});
  h.Observe(0.05);
  h.Observe(0.1);  // le is inclusive
  h.Observe(0.5);
  h.Observe(7);
  EXPECT_EQ(r.Render(),
            "# HELP skb_test_duration_seconds Durations.\n"
            "# TYPE skb_test_duration_seconds histogram\n"
            "skb_test_duration_seconds_count 4\n"
            "skb_test_duration_seconds_sum 7.65\n"
            "skb_test_duration_seconds_bucket{le=\"0.1\"} 2\n"
            "skb_test_duration_seconds_bucket{le=\"1\"} 3\n"
            "skb_test_duration_seconds_bucket{le=\"+Inf\"} 4\n"
            "# HELP skb_test_events_total Events seen.\n"
            "# TYPE skb_test_events_total counter\n"
            "skb_test_events_total 3\n"
            "# HELP skb_test_gpus GPUs by owner.\n"
            "# TYPE skb_test_gpus gauge\n"
            "skb_test_gpus{owner=\"k8s\"} 8\n"
            "skb_test_gpus{owner=\"slurm\"} 24\n");
}

// A family whose label values are known only at run time has no series until its first
// one: the exposition leaves it out, Families() still lists it.
TEST(MetricsTest, FamiliesListsWhatTheExpositionDoesNotShowYet) {
  Registry r;
  r.AddCounterFamily("skb_test_actions_total", "Actions.", {"kind"});
  EXPECT_EQ(r.Render(), "");
  std::vector<Registry::FamilyInfo> f = r.Families();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].name, "skb_test_actions_total");
  EXPECT_EQ(f[0].type, "counter");
  EXPECT_EQ(f[0].help, "Actions.");
}

TEST(MetricsTest, OutputOrderDoesNotDependOnRegistrationOrCreationOrder) {
  Registry a;
  Registry b;
  CounterFamily& fa = a.AddCounterFamily("x_total", "x", {"k", "o"});
  a.AddGauge("a_gauge", "a");
  b.AddGauge("a_gauge", "a");
  CounterFamily& fb = b.AddCounterFamily("x_total", "x", {"k", "o"});
  fa.WithLabels({"b", "1"}).Increment();
  fa.WithLabels({"a", "2"}).Increment();
  fa.WithLabels({"a", "1"}).Increment();
  fb.WithLabels({"a", "1"}).Increment();
  fb.WithLabels({"b", "1"}).Increment();
  fb.WithLabels({"a", "2"}).Increment();
  EXPECT_EQ(a.Render(), b.Render());
  EXPECT_LT(a.Render().find("a_gauge"), a.Render().find("x_total"));
}

TEST(MetricsTest, EscapesLabelValuesAndParsesBack) {
  Registry r;
  std::string nasty = "a\\b\"c\nd}e,f=g";
  r.AddCounterFamily("skb_test_errors_total", "Help with \"quotes\".", {"reason"})
      .WithLabels({nasty})
      .Increment(5);
  std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("{reason=\"a\\\\b\\\"c\\nd}e,f=g\"} 5\n"));
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("skb_test_errors_total", {{"reason", nasty}}), 5);
  EXPECT_EQ(parsed->helps.at("skb_test_errors_total"), "Help with \"quotes\".");
  EXPECT_EQ(parsed->types.at("skb_test_errors_total"), "counter");
}

TEST(MetricsTest, HistogramRendersCumulativeBucketsThatParseBack) {
  Registry r;
  HistogramFamily& f =
      r.AddHistogramFamily("lat_seconds", "l", {"result"}, ExponentialBuckets(0.001, 2, 10));
  Histogram& ok = f.WithLabels({"success"});
  Histogram& err = f.WithLabels({"error"});
  for (int i = 0; i < 1000; ++i) ok.Observe(i * 0.0005);
  ObserveDuration(err, std::chrono::milliseconds(3));
  auto parsed = ParseExposition(r.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("lat_seconds_count", {{"result", "success"}}), 1000);
  EXPECT_EQ(parsed->Value("lat_seconds_bucket", {{"result", "success"}, {"le", "+Inf"}}), 1000);
  // Values 0, 0.0005, 0.001 are <= 0.001.
  EXPECT_EQ(parsed->Value("lat_seconds_bucket", {{"result", "success"}, {"le", "0.001"}}), 3);
  EXPECT_NEAR(*parsed->Value("lat_seconds_sum", {{"result", "success"}}), 249.75, 1e-9);
  EXPECT_EQ(parsed->Value("lat_seconds_bucket", {{"result", "error"}, {"le", "0.004"}}), 1);
  EXPECT_EQ(parsed->Value("lat_seconds_count", {{"result", "error"}}), 1);
  prometheus::ClientMetric s = ok.Collect();
  EXPECT_EQ(s.histogram.bucket.size(), 11u);  // ten bounds and +Inf
  EXPECT_EQ(s.histogram.sample_count, 1000u);
}

TEST(MetricsTest, FormatsValuesAsPrometheusReadsThem) {
  auto fmt = [](double v) {
    Registry r;
    r.AddGauge("v", "v").Set(v);
    std::string text = r.Render();
    size_t at = text.find("\nv ");
    return at == std::string::npos ? text : text.substr(at + 3, text.size() - at - 4);
  };
  EXPECT_EQ(fmt(0), "0");
  EXPECT_EQ(fmt(1000000), "1000000");
  EXPECT_EQ(fmt(-3), "-3");
  EXPECT_EQ(fmt(0.25), "0.25");
  EXPECT_EQ(fmt(1e300), "1e+300");
  EXPECT_EQ(fmt(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(fmt(-std::numeric_limits<double>::infinity()), "-Inf");
  // prometheus-cpp 1.0 writes "Nan"; Prometheus reads NaN in any case.
  EXPECT_THAT(fmt(std::numeric_limits<double>::quiet_NaN()), ::testing::MatchesRegex("[Nn]a[Nn]"));
  // Every rendered value parses back (the parser takes NaN in any case, as Prometheus).
  Registry r;
  r.AddGauge("n", "n").Set(std::numeric_limits<double>::quiet_NaN());
  auto parsed = ParseExposition(r.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(std::isnan(*parsed->Value("n")));
}

TEST(MetricsTest, GaugeGoesBothWays) {
  Registry r;
  Gauge& g = r.AddGauge("depth", "d");
  g.Increment();
  g.Increment();
  g.Decrement();
  g.Increment(-5);
  EXPECT_EQ(g.Value(), -4);
  g.Set(2.5);
  EXPECT_EQ(g.Value(), 2.5);
}

TEST(MetricsTest, WithLabelsReturnsTheSameChildEveryTime) {
  Registry r;
  CounterFamily& f = r.AddCounterFamily("c_total", "c", {"kind", "outcome"});
  Counter& a = f.WithLabels({"drain", "success"});
  std::string kind = "drain";
  Counter& b = f.WithLabels({std::string_view(kind), "success"});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &f.WithLabels({"drain", "error"}));
}

TEST(MetricsTest, CollectHooksRunBeforeEachRender) {
  Registry r;
  Gauge& depth = r.AddGauge("queue_depth", "q");
  int calls = 0;
  r.AddCollectHook([&] { depth.Set(++calls * 10); });
  EXPECT_THAT(r.Render(), HasSubstr("queue_depth 10\n"));
  EXPECT_THAT(r.Render(), HasSubstr("queue_depth 20\n"));
}

TEST(MetricsTest, IncrementingACachedHandleDoesNotAllocate) {
  if (!SKB_COUNT_ALLOCATIONS) GTEST_SKIP() << "allocation counting is off under sanitizers";
  Registry r;
  Counter& c = r.AddCounterFamily("c_total", "c", {"kind"}).WithLabels({"x"});
  Gauge& g = r.AddGauge("g", "g");
  Histogram& h = r.AddHistogram("h_seconds", "h", DefaultBuckets());
  g_allocations = 0;
  g_count_allocations = true;
  for (int i = 0; i < 1000; ++i) {
    c.Increment();
    g.Set(i);
    h.Observe(i * 0.01);
  }
  g_count_allocations = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(c.Value(), 1000);
}

TEST(MetricsTest, ConcurrentUpdatesAndRendersAreConsistent) {
  Registry r;
  CounterFamily& f = r.AddCounterFamily("ops_total", "o", {"worker"});
  Histogram& h = r.AddHistogram("op_seconds", "o", LinearBuckets(0, 0.25, 4));
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    while (!done.load()) {
      auto parsed = ParseExposition(r.Render());
      ASSERT_TRUE(parsed.ok()) << parsed.status();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::string name = "w" + std::to_string(t % 2);
      Counter& c = f.WithLabels({std::string_view(name)});
      for (int i = 0; i < kPerThread; ++i) {
        c.Increment();
        h.Observe(i % 5 * 0.25);
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  renderer.join();
  auto parsed = ParseExposition(r.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("ops_total", {{"worker", "w0"}}), 2 * kPerThread);
  EXPECT_EQ(parsed->Value("ops_total", {{"worker", "w1"}}), 2 * kPerThread);
  EXPECT_EQ(parsed->Value("op_seconds_count"), kThreads * kPerThread);
  EXPECT_EQ(parsed->Value("op_seconds_bucket", {{"le", "0.5"}}), kThreads * kPerThread * 3 / 5);
}

TEST(MetricsTest, NameRules) {
  EXPECT_TRUE(IsValidMetricName("skb_x:y_total"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("owner"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

using MetricsDeathTest = ::testing::Test;

TEST(MetricsDeathTest, RegistrationMistakesAbortLoudly) {
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("dup_total", "a");
        r.AddGauge("dup_total", "b");
      },
      "registered twice");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddHistogram("lat", "a", {1});
        r.AddCounter("lat_count", "b");
      },
      "registered twice");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("two_lines_total", "a\nb");
      },
      "line feed");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("bad-name", "a");
      },
      "invalid metric name");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddHistogramFamily("h", "a", {"le"}, {1});
      },
      "may not use 'le'");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddHistogram("h", "a", {1, 1});
      },
      "strictly increasing");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounterFamily("c_total", "a", {"x", "y"}).WithLabels({"only-one"});
      },
      "1 label values for 2 label names");
}

// A counter only goes up: prometheus-cpp ignores a negative increment.
TEST(MetricsTest, ANegativeCounterIncrementIsIgnored) {
  Registry r;
  Counter& c = r.AddCounter("c_total", "a");
  c.Increment(2);
  c.Increment(-1);
  EXPECT_EQ(c.Value(), 2);
}

}  // namespace
}  // namespace skb::observability

// SPDX-License-Identifier: Apache-2.0
// The bridge's Prometheus metrics, on prometheus-cpp (Debian's prometheus-cpp-dev): its
// Counter, Gauge and Histogram, its registry and its text serializer. What this file adds
// is the shape every caller here uses: families with fixed label names whose children are
// picked by label values in that order, registration mistakes that abort (metric names are
// constants in code, never input), collect hooks, and an exposition ordered by name.
//
//   Registry registry;
//   CounterFamily& actions = registry.AddCounterFamily(
//       "skb_actions_total", "Actions executed.", {"kind", "outcome"});
//   Counter& drain_ok = actions.WithLabels({"drain", "success"});  // cache this handle
//   drain_ok.Increment();                                          // lock- and allocation-free
//   Histogram& latency = registry.AddHistogram("skb_reconcile_duration_seconds",
//       "Time of one reconcile.", ExponentialBuckets(0.001, 2, 12));
//   latency.Observe(0.004);
//   std::string text = registry.Render();  // what /metrics serves
//
// Thread-safety: everything is thread-safe. Updating a child through a handle is an atomic
// operation (prometheus-cpp's); WithLabels() takes the family's mutex (and allocates). Handles
// stay valid for the lifetime of the Registry: children are never removed, except by
// Family::Remove for families whose callers keep no handles.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace skb::observability {

using Counter = prometheus::Counter;
using Gauge = prometheus::Gauge;
using Histogram = prometheus::Histogram;

template <typename Rep, typename Period>
void ObserveDuration(Histogram& h, std::chrono::duration<Rep, Period> d) {
  h.Observe(std::chrono::duration<double>(d).count());
}

// Bucket helpers (as client_golang's): `count` bounds start, start*factor, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// start, start+width, ...
std::vector<double> LinearBuckets(double start, double width, int count);
// Prometheus' default buckets, .005 .. 10 seconds.
std::vector<double> DefaultBuckets();

// A family of children of type T (Counter, Gauge or Histogram) with fixed label names.
template <typename T>
class Family {
 public:
  Family(prometheus::Family<T>& family, std::vector<std::string> label_names,
         std::vector<double> bounds = {})
      : family_(family), label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  // The child for these label values (one per label name, in order), created on first use.
  // The reference stays valid for the Registry's lifetime: keep it for the hot path.
  T& WithLabels(std::initializer_list<std::string_view> values) {
    return WithLabels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  T& WithLabels(std::span<const std::string_view> values);
  // Removes the child for these label values, if any. Only for children no one keeps a
  // handle to (a per-node series whose node changed owner or left): a kept handle dangles.
  void Remove(std::initializer_list<std::string_view> values) {
    Remove(std::span<const std::string_view>(values.begin(), values.size()));
  }
  void Remove(std::span<const std::string_view> values);

  const std::vector<std::string>& label_names() const { return label_names_; }

 private:
  prometheus::Family<T>& family_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histograms only
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Names follow Prometheus' rules ([a-zA-Z_:][a-zA-Z0-9_:]*; labels [a-zA-Z_][a-zA-Z0-9_]*,
  // not starting with "__", histograms may not use "le"); a name may be registered once;
  // bounds are finite and strictly increasing; help is one line without backslashes
  // (prometheus-cpp 1.0.1 writes HELP unescaped). A mistake aborts with a message.
  CounterFamily& AddCounterFamily(std::string name, std::string help,
                                  std::vector<std::string> label_names);
  GaugeFamily& AddGaugeFamily(std::string name, std::string help,
                              std::vector<std::string> label_names);
  HistogramFamily& AddHistogramFamily(std::string name, std::string help,
                                      std::vector<std::string> label_names,
                                      std::vector<double> bounds);

  // Families without labels: the single child directly.
  Counter& AddCounter(std::string name, std::string help);
  Gauge& AddGauge(std::string name, std::string help);
  Histogram& AddHistogram(std::string name, std::string help, std::vector<double> bounds);

  // Every registered family: what a family with no series yet (label values seen only at
  // run time) would be, since the exposition shows only families with series.
  struct FamilyInfo {
    std::string name;
    std::string type;  // "counter", "gauge" or "histogram"
    std::string help;
  };
  std::vector<FamilyInfo> Families() const;

  // `hook` runs at the start of every Render(), on the rendering thread, to refresh values
  // that are cheaper to read at scrape time than to track (e.g. a queue's length). It must
  // not call Render(). Thread-safe.
  void AddCollectHook(std::function<void()> hook);

  // The text exposition format 0.0.4 (prometheus-cpp's serializer), families ordered by
  // name and children by label values. Thread-safe.
  std::string Render() const;
  void RenderTo(std::string* out) const;

 private:
  void CheckName(const std::string& name, const std::string& help,
                 const std::vector<std::string>& label_names, bool histogram);

  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex mu_;
  std::set<std::string, std::less<>> names_;                  // guarded by mu_
  std::vector<std::unique_ptr<CounterFamily>> counters_;      // guarded by mu_
  std::vector<std::unique_ptr<GaugeFamily>> gauges_;          // guarded by mu_
  std::vector<std::unique_ptr<HistogramFamily>> histograms_;  // guarded by mu_
  std::vector<std::function<void()>> hooks_;                  // guarded by mu_
  std::vector<FamilyInfo> infos_;                             // guarded by mu_
};

// The Content-Type of Render()'s output.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace skb::observability

// Prometheus metrics without a third-party library: a thread-safe Registry of metric
// families (Counter, Gauge, Histogram), each with fixed label names and one child series
// per combination of label values, rendered in the Prometheus text exposition format 0.0.4.
//
// Debian 12 packages no Prometheus C++ client (no prometheus-cpp), so this is our own; it
// covers what the bridge needs and nothing more (no summaries, no exemplars, no OpenMetrics).
//
//   Registry registry;
//   CounterFamily& actions = registry.AddCounterFamily(
//       "skb_actions_total", "Actions executed.", {"kind", "outcome"});
//   Counter& drain_ok = actions.WithLabels({"drain", "success"});  // cache this handle
//   drain_ok.Inc();                                                // lock- and allocation-free
//   Histogram& latency = registry.AddHistogram("skb_reconcile_duration_seconds",
//       "Time of one reconcile.", ExponentialBuckets(0.001, 2, 12));
//   latency.Observe(0.004);
//   std::string text = registry.Render();  // what /metrics serves
//
// Thread-safety: everything is thread-safe. Updating a child through a handle is a few
// atomic operations; WithLabels() takes the family's mutex (and allocates only the first
// time a label combination is seen). Handles (Counter&, Gauge&, Histogram&, the families)
// stay valid for the lifetime of the Registry: children are never removed.
//
// Registration mistakes (invalid or duplicate names, a wrong number of label values,
// unsorted buckets) are programming errors and abort with a message: metric names are
// constants in code, never input.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace skb::observability {

// A value that only goes up (resets only when the process restarts).
class Counter {
 public:
  // `v` must be >= 0 (a negative increment aborts: it is a bug in the caller).
  void Inc(double v = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into buckets with fixed upper bounds (inclusive, as Prometheus'
// `le`), plus their sum. The +Inf bucket is implicit.
class Histogram {
 public:
  // `bounds` must be finite and strictly increasing (checked by the Registry).
  explicit Histogram(std::span<const double> bounds);

  void Observe(double v);
  template <typename Rep, typename Period>
  void ObserveDuration(std::chrono::duration<Rep, Period> d) {
    Observe(std::chrono::duration<double>(d).count());
  }

  // A consistent-enough copy for rendering and tests: counts are per bucket (not
  // cumulative), the last entry is the +Inf bucket; count == sum of bucket counts.
  struct Snapshot {
    std::vector<uint64_t> bucket_counts;
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Collect() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  // bounds_.size() + 1 entries; the last one is +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Bucket helpers (as client_golang's): `count` bounds start, start*factor, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// start, start+width, ...
std::vector<double> LinearBuckets(double start, double width, int count);
// Prometheus' default buckets, .005 .. 10 seconds.
std::vector<double> DefaultBuckets();

enum class MetricType { kCounter, kGauge, kHistogram };

// Label values of one child, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// Common part of a family: name, help, label names, and rendering of its children.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends "# HELP", "# TYPE" and every child's sample lines to `out`, children ordered by
  // their label values.
  virtual void RenderTo(std::string* out) const = 0;

 protected:
  // Orders children by label values; lookups by string_view spans do not allocate.
  struct LabelsLess {
    using is_transparent = void;
    bool operator()(const LabelValues& a, const LabelValues& b) const { return a < b; }
    bool operator()(const LabelValues& a, std::span<const std::string_view> b) const;
    bool operator()(std::span<const std::string_view> a, const LabelValues& b) const;
  };
  void CheckArity(size_t n) const;
  // `{a="x",b="y"` without the closing brace (so histograms can append `,le=...`), or
  // empty when there are no labels and no extra label.
  void AppendLabels(std::string* out, const LabelValues& values, std::string_view extra_name,
                    std::string_view extra_value) const;
  void AppendHeader(std::string* out) const;

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// A family of children of type T (Counter, Gauge or Histogram).
template <typename T>
class Family final : public FamilyBase {
 public:
  // Histogram families pass their bucket bounds; others pass none.
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> bounds = {});

  // The child for these label values (one per label name, in order), created on first use.
  // The reference stays valid for the Registry's lifetime: keep it for the hot path.
  T& WithLabels(std::initializer_list<std::string_view> values) {
    return WithLabels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  T& WithLabels(std::span<const std::string_view> values);

  void RenderTo(std::string* out) const override;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<T>, LabelsLess> children_;  // guarded by mu_
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Names follow Prometheus' rules ([a-zA-Z_:][a-zA-Z0-9_:]*; labels [a-zA-Z_][a-zA-Z0-9_]*,
  // not starting with "__", histograms may not use "le"); a name may be registered once.
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

  // `hook` runs at the start of every Render(), on the rendering thread, to refresh values
  // that are cheaper to read at scrape time than to track (e.g. a queue's length). It must
  // not call Render(). Thread-safe.
  void AddCollectHook(std::function<void()> hook);

  // The text exposition format 0.0.4, families ordered by name. Thread-safe.
  std::string Render() const;
  void RenderTo(std::string* out) const;

 private:
  template <typename F, typename... Args>
  F& Add(std::string name, Args&&... args);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;  // guarded by mu_
  std::vector<std::function<void()>> hooks_;                                  // guarded by mu_
};

// The Content-Type of Render()'s output.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Exposition helpers, exposed for tests and for other renderers.
// Label values: backslash, double quote and line feed are escaped.
void AppendEscapedLabelValue(std::string* out, std::string_view v);
// HELP text: backslash and line feed are escaped.
void AppendEscapedHelp(std::string* out, std::string_view v);
// Sample values: integers without exponent, otherwise the shortest round-trip form;
// "+Inf", "-Inf", "NaN".
void AppendValue(std::string* out, double v);
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace skb::observability

// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

namespace skb::observability {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fatal: metrics: %s\n", what.c_str());
  std::abort();
}

void CheckBounds(const std::vector<double>& bounds, const std::string& name) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) Die(name + ": histogram bounds must be finite");
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      Die(name + ": histogram bounds must be strictly increasing");
    }
  }
}

constexpr std::span<const std::string_view> kNoLabels;

bool LabelsLess(const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
  return std::lexicographical_compare(
      a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
      [](const prometheus::ClientMetric::Label& x, const prometheus::ClientMetric::Label& y) {
        return std::tie(x.name, x.value) < std::tie(y.name, y.value);
      });
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  return prometheus::CheckMetricName(std::string(name));
}

bool IsValidLabelName(std::string_view name) {
  return prometheus::CheckLabelName(std::string(name));
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) Die("ExponentialBuckets: bad arguments");
  std::vector<double> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (!(width > 0) || count < 1) Die("LinearBuckets: bad arguments");
  std::vector<double> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out.push_back(start + width * i);
  return out;
}

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

template <typename T>
T& Family<T>::WithLabels(std::span<const std::string_view> values) {
  if (values.size() != label_names_.size()) {
    Die("WithLabels: " + std::to_string(values.size()) + " label values for " +
        std::to_string(label_names_.size()) + " label names");
  }
  prometheus::Labels labels;
  for (size_t i = 0; i < values.size(); ++i) labels.emplace(label_names_[i], values[i]);
  // prometheus-cpp returns the existing child for labels it has seen.
  if constexpr (std::is_same_v<T, Histogram>) {
    return family_.Add(labels, bounds_);
  } else {
    return family_.Add(labels);
  }
}

template <typename T>
void Family<T>::Remove(std::span<const std::string_view> values) {
  if (values.size() != label_names_.size()) {
    Die("Remove: " + std::to_string(values.size()) + " label values for " +
        std::to_string(label_names_.size()) + " label names");
  }
  prometheus::Labels labels;
  for (size_t i = 0; i < values.size(); ++i) labels.emplace(label_names_[i], values[i]);
  if (!family_.Has(labels)) return;
  if constexpr (std::is_same_v<T, Histogram>) {
    family_.Remove(&family_.Add(labels, bounds_));
  } else {
    family_.Remove(&family_.Add(labels));
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Registry::Registry() : registry_(std::make_shared<prometheus::Registry>()) {}

void Registry::CheckName(const std::string& name, const std::string& help,
                         const std::vector<std::string>& label_names, bool histogram) {
  if (!IsValidMetricName(name)) Die("invalid metric name '" + name + "'");
  if (help.find_first_of("\\\n") != std::string::npos) {
    Die(name + ": help text with a line feed or backslash (written unescaped)");
  }
  for (const auto& l : label_names) {
    if (!IsValidLabelName(l)) Die(name + ": invalid label name '" + l + "'");
    if (histogram && l == "le") Die(name + ": a histogram may not use 'le'");
    if (std::count(label_names.begin(), label_names.end(), l) > 1) {
      Die(name + ": label '" + l + "' given twice");
    }
  }
  // A histogram's series take three more names.
  std::vector<std::string> taken = {name};
  if (histogram) {
    for (const char* suffix : {"_bucket", "_count", "_sum"}) taken.push_back(name + suffix);
  }
  for (const auto& n : taken) {
    if (names_.contains(n)) Die("metric '" + n + "' registered twice");
  }
  names_.insert(taken.begin(), taken.end());
}

CounterFamily& Registry::AddCounterFamily(std::string name, std::string help,
                                          std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckName(name, help, label_names, false);
  infos_.push_back({name, "counter", help});
  auto& f = prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
  return *counters_.emplace_back(std::make_unique<CounterFamily>(f, std::move(label_names)));
}

GaugeFamily& Registry::AddGaugeFamily(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckName(name, help, label_names, false);
  infos_.push_back({name, "gauge", help});
  auto& f = prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  return *gauges_.emplace_back(std::make_unique<GaugeFamily>(f, std::move(label_names)));
}

HistogramFamily& Registry::AddHistogramFamily(std::string name, std::string help,
                                              std::vector<std::string> label_names,
                                              std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  CheckName(name, help, label_names, true);
  infos_.push_back({name, "histogram", help});
  CheckBounds(bounds, name);
  auto& f = prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
  return *histograms_.emplace_back(
      std::make_unique<HistogramFamily>(f, std::move(label_names), std::move(bounds)));
}

Counter& Registry::AddCounter(std::string name, std::string help) {
  return AddCounterFamily(std::move(name), std::move(help), {}).WithLabels(kNoLabels);
}

Gauge& Registry::AddGauge(std::string name, std::string help) {
  return AddGaugeFamily(std::move(name), std::move(help), {}).WithLabels(kNoLabels);
}

Histogram& Registry::AddHistogram(std::string name, std::string help, std::vector<double> bounds) {
  return AddHistogramFamily(std::move(name), std::move(help), {}, std::move(bounds))
      .WithLabels(kNoLabels);
}

std::vector<Registry::FamilyInfo> Registry::Families() const {
  std::lock_guard<std::mutex> lock(mu_);
  return infos_;
}

void Registry::AddCollectHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::Render() const {
  std::string out;
  RenderTo(&out);
  return out;
}

void Registry::RenderTo(std::string* out) const {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hooks = hooks_;
  }
  for (const auto& h : hooks) h();
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& f : families) std::sort(f.metric.begin(), f.metric.end(), LabelsLess);
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  out->append(text.str());
}

}  // namespace skb::observability

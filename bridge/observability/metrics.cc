#include "bridge/observability/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace skb::observability {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fatal: metrics: %s\n", what.c_str());
  std::abort();
}

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void CheckBounds(const std::vector<double>& bounds, const std::string& name) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) Die(name + ": histogram bounds must be finite");
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      Die(name + ": histogram bounds must be strictly increasing");
    }
  }
}

}  // namespace

// ---- values ----

void Counter::Inc(double v) {
  if (!(v >= 0)) Die("Counter::Inc with a negative or NaN increment");
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // First bound >= v (`le` is inclusive); NaN lands in +Inf, as in client_golang.
  size_t i = std::isnan(v)
                 ? bounds_.size()
                 : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                       bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot s;
  s.bucket_counts.resize(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    s.bucket_counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.bucket_counts[i];
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) Die("ExponentialBuckets: bad arguments");
  std::vector<double> b;
  b.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (!(width > 0) || count < 1) Die("LinearBuckets: bad arguments");
  std::vector<double> b;
  b.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) b.push_back(start + width * i);
  return b;
}

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

// ---- exposition helpers ----

namespace {
// Backslash and line feed always; the double quote only inside label values.
void AppendEscaped(std::string* out, std::string_view v, bool quote) {
  for (char c : v) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && quote) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}
}  // namespace

void AppendEscapedLabelValue(std::string* out, std::string_view v) { AppendEscaped(out, v, true); }

void AppendEscapedHelp(std::string* out, std::string_view v) { AppendEscaped(out, v, false); }

void AppendValue(std::string* out, double v) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[64];
  std::to_chars_result r;
  // Integers up to 2^53 print exactly and without an exponent ("1000000", not "1e+06").
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  out->append(buf, r.ptr);
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// ---- families ----

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {
  if (!IsValidMetricName(name_)) Die("invalid metric name '" + name_ + "'");
  for (size_t i = 0; i < label_names_.size(); ++i) {
    const std::string& l = label_names_[i];
    if (!IsValidLabelName(l)) Die(name_ + ": invalid label name '" + l + "'");
    if (type_ == MetricType::kHistogram && l == "le") Die(name_ + ": histograms may not use 'le'");
    for (size_t j = 0; j < i; ++j) {
      if (label_names_[j] == l) Die(name_ + ": duplicate label name '" + l + "'");
    }
  }
}

bool FamilyBase::LabelsLess::operator()(const LabelValues& a,
                                        std::span<const std::string_view> b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

bool FamilyBase::LabelsLess::operator()(std::span<const std::string_view> a,
                                        const LabelValues& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

void FamilyBase::CheckArity(size_t n) const {
  if (n != label_names_.size()) {
    Die(name_ + ": " + std::to_string(n) + " label values for " +
        std::to_string(label_names_.size()) + " label names");
  }
}

void FamilyBase::AppendLabels(std::string* out, const LabelValues& values,
                              std::string_view extra_name, std::string_view extra_value) const {
  if (values.empty() && extra_name.empty()) return;
  out->push_back('{');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(label_names_[i]);
    out->append("=\"");
    AppendEscapedLabelValue(out, values[i]);
    out->push_back('"');
  }
  if (!extra_name.empty()) {
    if (!values.empty()) out->push_back(',');
    out->append(extra_name);
    out->append("=\"");
    out->append(extra_value);
    out->push_back('"');
  }
  out->push_back('}');
}

void FamilyBase::AppendHeader(std::string* out) const {
  out->append("# HELP ");
  out->append(name_);
  out->push_back(' ');
  AppendEscapedHelp(out, help_);
  out->append("\n# TYPE ");
  out->append(name_);
  out->push_back(' ');
  out->append(TypeName(type_));
  out->push_back('\n');
}

template <typename T>
Family<T>::Family(std::string name, std::string help, MetricType type,
                  std::vector<std::string> label_names, std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)) {
  if constexpr (std::is_same_v<T, Histogram>) CheckBounds(bounds_, name_);
}

template <typename T>
T& Family<T>::WithLabels(std::span<const std::string_view> values) {
  CheckArity(values.size());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) return *it->second;
  std::unique_ptr<T> child;
  if constexpr (std::is_same_v<T, Histogram>) {
    child = std::make_unique<Histogram>(bounds_);
  } else {
    child = std::make_unique<T>();
  }
  T& ref = *child;
  children_.emplace(LabelValues(values.begin(), values.end()), std::move(child));
  return ref;
}

template <typename T>
void Family<T>::RenderTo(std::string* out) const {
  AppendHeader(out);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [labels, child] : children_) {
    if constexpr (std::is_same_v<T, Histogram>) {
      Histogram::Snapshot s = child->Collect();
      uint64_t cumulative = 0;
      std::string le;
      for (size_t i = 0; i < s.bucket_counts.size(); ++i) {
        cumulative += s.bucket_counts[i];
        le.clear();
        if (i < bounds_.size()) {
          AppendValue(&le, bounds_[i]);
        } else {
          le = "+Inf";
        }
        out->append(name_);
        out->append("_bucket");
        AppendLabels(out, labels, "le", le);
        out->push_back(' ');
        AppendValue(out, static_cast<double>(cumulative));
        out->push_back('\n');
      }
      out->append(name_);
      out->append("_sum");
      AppendLabels(out, labels, "", "");
      out->push_back(' ');
      AppendValue(out, s.sum);
      out->push_back('\n');
      out->append(name_);
      out->append("_count");
      AppendLabels(out, labels, "", "");
      out->push_back(' ');
      AppendValue(out, static_cast<double>(s.count));
      out->push_back('\n');
    } else {
      out->append(name_);
      AppendLabels(out, labels, "", "");
      out->push_back(' ');
      AppendValue(out, child->Value());
      out->push_back('\n');
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- registry ----

template <typename F, typename... Args>
F& Registry::Add(std::string name, Args&&... args) {
  auto family = std::make_unique<F>(name, std::forward<Args>(args)...);
  F& ref = *family;
  std::lock_guard<std::mutex> lock(mu_);
  // A histogram `x` owns the series x_bucket, x_sum and x_count: those names are taken too.
  auto clashes = [&](const std::string& n) {
    if (families_.count(n)) return true;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (n.ends_with(suffix)) {
        auto it = families_.find(n.substr(0, n.size() - std::string_view(suffix).size()));
        if (it != families_.end() && it->second->type() == MetricType::kHistogram) return true;
      }
    }
    if (ref.type() == MetricType::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (families_.count(n + suffix)) return true;
      }
    }
    return false;
  };
  if (clashes(name)) Die("metric '" + name + "' registered twice");
  families_.emplace(std::move(name), std::move(family));
  return ref;
}

CounterFamily& Registry::AddCounterFamily(std::string name, std::string help,
                                          std::vector<std::string> label_names) {
  return Add<CounterFamily>(std::move(name), std::move(help), MetricType::kCounter,
                            std::move(label_names));
}

GaugeFamily& Registry::AddGaugeFamily(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  return Add<GaugeFamily>(std::move(name), std::move(help), MetricType::kGauge,
                          std::move(label_names));
}

HistogramFamily& Registry::AddHistogramFamily(std::string name, std::string help,
                                              std::vector<std::string> label_names,
                                              std::vector<double> bounds) {
  return Add<HistogramFamily>(std::move(name), std::move(help), MetricType::kHistogram,
                              std::move(label_names), std::move(bounds));
}

Counter& Registry::AddCounter(std::string name, std::string help) {
  return AddCounterFamily(std::move(name), std::move(help), {}).WithLabels({});
}

Gauge& Registry::AddGauge(std::string name, std::string help) {
  return AddGaugeFamily(std::move(name), std::move(help), {}).WithLabels({});
}

Histogram& Registry::AddHistogram(std::string name, std::string help, std::vector<double> bounds) {
  return AddHistogramFamily(std::move(name), std::move(help), {}, std::move(bounds)).WithLabels({});
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
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hooks = hooks_;
    families.reserve(families_.size());
    for (const auto& [name, f] : families_) families.push_back(f.get());
  }
  // Hooks run without the registry lock, so they may update (or even register) metrics.
  for (const auto& h : hooks) h();
  for (const FamilyBase* f : families) f->RenderTo(out);
}

}  // namespace skb::observability

// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/exposition_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "bridge/observability/metrics.h"
#include "src/base/strings.h"

namespace skb::observability {
namespace {

std::optional<double> ParseNumber(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s.starts_with('+')) s.remove_prefix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool IsNameChar(char c, bool first, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

// Reads a name at `*pos`; empty when there is none.
std::string_view ReadName(std::string_view line, size_t* pos, bool colon_ok) {
  size_t start = *pos;
  while (*pos < line.size() && IsNameChar(line[*pos], *pos == start, colon_ok)) ++*pos;
  return line.substr(start, *pos - start);
}

std::string SeriesKey(const Sample& s) {
  std::string k = s.name;
  for (const auto& [n, v] : s.labels) StrAppend(&k, '\x1f', n, '=', v);
  return k;
}

struct HistogramSeries {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  std::optional<double> count;
  int first_line = 0;
};

}  // namespace

std::optional<double> Exposition::Value(std::string_view name,
                                        const std::map<std::string, std::string>& labels) const {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

StatusOr<Exposition> ParseExposition(std::string_view text) {
  Exposition e;
  int line_no = 0;
  auto fail = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("exposition line ", line_no, ": ", why));
  };
  std::set<std::string> finished_families;
  std::set<std::string> families_with_samples;
  std::set<std::string> series;
  std::string current_family;
  // family + labels without "le" -> its histogram series
  std::map<std::string, HistogramSeries> histograms;

  auto family_of = [&](const std::string& name) -> std::string {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(suffix)) {
        std::string base = name.substr(0, name.size() - suffix.size());
        auto it = e.types.find(base);
        if (it != e.types.end() && (it->second == "histogram" || it->second == "summary")) {
          return base;
        }
      }
    }
    return name;
  };

  if (!text.empty() && !text.ends_with('\n')) {
    line_no = static_cast<int>(StrSplit(text, '\n').size());
    return fail("the exposition must end with a line feed");
  }
  for (std::string_view line : StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    if (line.starts_with('#')) {
      std::vector<std::string_view> parts = StrSplit(line, ' ');
      if (parts.size() < 3 || parts[0] != "#" || (parts[1] != "HELP" && parts[1] != "TYPE")) {
        continue;  // a plain comment
      }
      std::string name(parts[2]);
      if (!IsValidMetricName(name)) return fail(StrCat("invalid metric name '", name, "'"));
      size_t rest_at = 2 + parts[1].size() + 1 + parts[2].size();
      std::string_view rest = rest_at < line.size() ? line.substr(rest_at + 1) : "";
      if (parts[1] == "HELP") {
        std::string help;
        for (size_t i = 0; i < rest.size(); ++i) {
          if (rest[i] == '\\' && i + 1 < rest.size() &&
              (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
            help.push_back(rest[i + 1] == 'n' ? '\n' : '\\');
            ++i;
          } else if (rest[i] == '\\') {
            return fail("invalid escape in HELP");
          } else {
            help.push_back(rest[i]);
          }
        }
        if (!e.helps.emplace(name, help).second) return fail(StrCat("second HELP for ", name));
      } else {
        static const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram",
                                                          "summary", "untyped"};
        if (!kTypes.count(rest)) return fail(StrCat("unknown TYPE '", rest, "'"));
        if (families_with_samples.count(name)) {
          return fail(StrCat("TYPE for ", name, " after its samples"));
        }
        if (!e.types.emplace(name, std::string(rest)).second) {
          return fail(StrCat("second TYPE for ", name));
        }
      }
      continue;
    }

    Sample s;
    size_t pos = 0;
    s.name = std::string(ReadName(line, &pos, true));
    if (s.name.empty()) return fail("expected a metric name");
    if (pos < line.size() && line[pos] == '{') {
      ++pos;
      while (true) {
        if (pos < line.size() && line[pos] == '}') {
          ++pos;
          break;
        }
        std::string label(ReadName(line, &pos, false));
        if (label.empty()) return fail("expected a label name");
        if (pos + 1 >= line.size() || line[pos] != '=' || line[pos + 1] != '"') {
          return fail(StrCat("expected =\" after label ", label));
        }
        pos += 2;
        std::string value;
        bool closed = false;
        while (pos < line.size()) {
          char c = line[pos++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (pos >= line.size()) break;
            char n = line[pos++];
            if (n == '\\')
              value.push_back('\\');
            else if (n == '"')
              value.push_back('"');
            else if (n == 'n')
              value.push_back('\n');
            else
              return fail(StrCat("invalid escape \\", n, " in label ", label));
          } else {
            value.push_back(c);
          }
        }
        if (!closed) return fail(StrCat("unterminated value of label ", label));
        if (!s.labels.emplace(label, std::move(value)).second) {
          return fail(StrCat("duplicate label ", label));
        }
        if (pos < line.size() && line[pos] == ',') {
          ++pos;
        } else if (pos >= line.size() || line[pos] != '}') {
          return fail("expected , or } after a label");
        }
      }
    }
    if (pos >= line.size() || line[pos] != ' ') return fail("expected a space before the value");
    std::vector<std::string_view> rest = StrSplit(line.substr(pos + 1), ' ');
    if (rest.empty() || rest.size() > 2) return fail("expected a value and an optional timestamp");
    std::optional<double> v = ParseNumber(rest[0]);
    if (!v) return fail(StrCat("invalid value '", rest[0], "'"));
    s.value = *v;

    std::string family = family_of(s.name);
    if (family != current_family) {
      if (finished_families.count(family)) {
        return fail(StrCat("samples of ", family, " are not contiguous"));
      }
      if (!current_family.empty()) finished_families.insert(current_family);
      current_family = family;
    }
    families_with_samples.insert(family);
    if (!series.insert(SeriesKey(s)).second) return fail(StrCat("duplicate series ", s.name));

    auto type = e.types.find(family);
    if (type != e.types.end() && type->second == "histogram") {
      Sample key = s;
      key.name = family;
      key.labels.erase("le");
      HistogramSeries& h = histograms[SeriesKey(key)];
      if (h.first_line == 0) h.first_line = line_no;
      if (s.name == family + "_bucket") {
        auto le = s.labels.find("le");
        if (le == s.labels.end()) return fail("histogram bucket without le");
        std::optional<double> bound = ParseNumber(le->second);
        if (!bound || std::isnan(*bound)) return fail(StrCat("invalid le '", le->second, "'"));
        if (!h.buckets.empty() &&
            (*bound <= h.buckets.back().first || s.value < h.buckets.back().second)) {
          return fail("histogram buckets must have increasing le and cumulative counts");
        }
        h.buckets.emplace_back(*bound, s.value);
      } else if (s.name == family + "_count") {
        h.count = s.value;
      } else if (s.name != family + "_sum") {
        return fail(StrCat("unexpected sample ", s.name, " in histogram ", family));
      }
    } else if (type != e.types.end() && type->second == "counter" && s.value < 0) {
      return fail(StrCat("negative counter ", s.name));
    }
    e.samples.push_back(std::move(s));
  }
  for (const auto& [key, h] : histograms) {
    line_no = h.first_line;
    if (h.buckets.empty() || !std::isinf(h.buckets.back().first)) {
      return fail("histogram without a le=\"+Inf\" bucket");
    }
    if (!h.count || *h.count != h.buckets.back().second) {
      return fail("histogram _count differs from its +Inf bucket");
    }
  }
  return e;
}

}  // namespace skb::observability

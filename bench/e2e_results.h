// SPDX-License-Identifier: Apache-2.0
// Shared by the end-to-end benchmarks (bench/*_e2e.cc): percentiles of a sample and the
// result files bench/report.py reads (bench/results/NAME.json).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace skb::bench {

// A duration in (fractional) milliseconds, the unit of the latency results.
inline double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// {"p50", "p90", "p99", "max", "samples"} of `v` (nearest rank); all 0 when empty.
inline nlohmann::json Percentiles(std::vector<double> v) {
  if (v.empty()) return {{"p50", 0}, {"p90", 0}, {"p99", 0}, {"max", 0}, {"samples", 0}};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {{"p50", at(0.5)},
          {"p90", at(0.9)},
          {"p99", at(0.99)},
          {"max", v.back()},
          {"samples", v.size()}};
}

// Writes `result` (name, description, unit, figures, target, notes) to DIR/STEM.json and
// prints its figures.
inline void WriteResult(const std::string& dir, const std::string& stem,
                        const nlohmann::json& result) {
  std::ofstream(dir + "/" + stem + ".json") << result.dump(2) << "\n";
  std::printf("%s: %s\n", result.value("name", stem).c_str(),
              result.contains("figures") ? result["figures"].dump().c_str() : "{}");
}

// A latency result in milliseconds.
inline void WriteLatency(const std::string& dir, const std::string& stem, const std::string& name,
                         const std::string& description, const std::vector<double>& ms,
                         const std::string& target, const std::string& notes) {
  WriteResult(dir, stem,
              {{"name", name},
               {"description", description},
               {"unit", " ms"},
               {"figures", Percentiles(ms)},
               {"target", target},
               {"notes", notes}});
}

}  // namespace skb::bench

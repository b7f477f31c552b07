// SPDX-License-Identifier: Apache-2.0
// Shared by the end-to-end benchmarks (bench/*_e2e.cc): percentiles of a sample and the
// result files bench/report.py reads (bench/results/NAME.json).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace skb::bench {

// What an end-to-end benchmark is told: --runs N (`runs` by default) and --out DIR (where
// its results go, bench/results by default).
struct RunArgs {
  int runs = 10;
  std::string out_dir = "bench/results";
};
inline RunArgs ParseRunArgs(int argc, char** argv, int runs = 10) {
  RunArgs a;
  a.runs = runs;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--runs") a.runs = std::atoi(argv[i + 1]);
    if (flag == "--out") a.out_dir = argv[i + 1];
  }
  return a;
}

// Whether this runs against a testbed in dra mode (KUBECONFIG set,
// SKB_TESTBED_GPU_ALLOCATION=dra); when not, says so on stderr, naming `bench`.
inline bool OnDraTestbed(const char* bench) {
  const char* mode = std::getenv("SKB_TESTBED_GPU_ALLOCATION");
  if (std::getenv("KUBECONFIG") != nullptr && mode != nullptr && std::string(mode) == "dra") {
    return true;
  }
  std::fprintf(stderr,
               "%s: needs the testbed in dra mode: SKB_TESTBED_GPU_ALLOCATION=dra scripts/testbed "
               "up; eval \"$(scripts/testbed env)\"\n",
               bench);
  return false;
}

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

// Writes `result` (name, description, unit, figures, target, notes) to DIR/STEM.json (DIR
// created when missing; a file that cannot be written is said on stderr) and prints its
// figures.
inline void WriteResult(const std::string& dir, const std::string& stem,
                        const nlohmann::json& result) {
  const std::string path = dir + "/" + stem + ".json";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(path);
  out << result.dump(2) << "\n";
  out.close();
  if (ec || !out) {
    std::fprintf(stderr, "cannot write %s%s%s\n", path.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
  }
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

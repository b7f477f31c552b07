// SPDX-License-Identifier: Apache-2.0
// skb_quota_study: the guaranteed-quota study (quota_study.h). Replays the Philly trace
// on clusters of several sizes in the three modes and prints, from one run:
//   * per size and mode: the worst team's p99 wait, GPU-hours served / capacity,
//     preempted GPU-hours and within-guarantee service;
//   * the smallest size at which every team's p99 wait is within 24 h and 4 h, per mode,
//     and the ratio quotas / static;
//   * per team at one size: wait p50/p99, guarantee kept, preempted GPU-hours.
// Writes bench/results/quota_study.csv (the curve) and quota_study_teams.csv.
// --inference-trace adds the Alibaba trace's inference pods as one more tenant (the mixed
// case, quota_study.h says how they are mapped): the report adds the inference tenant's
// own p99 wait and within-guarantee service, and the files are quota_study_mixed*.csv.
//
//   skb_quota_study --trace PATH [--inference-trace PATH] [--sizes 240,320,...]
//                   [--team-size GPUS] [--out DIR]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "bench/quota/quota_study.h"

using skb::quota_study::Mode;
using skb::quota_study::Result;

namespace {

std::string Hours(double s) {
  if (std::isinf(s)) return "never";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f h", s / 3600.0);
  return buf;
}

// Waits under an hour in minutes: what the inference tenant's figures are about.
std::string Wait(double s) {
  if (std::isinf(s) || s >= 3600) return Hours(s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f min", s / 60.0);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace, inference_trace, out_dir = ".";
  std::vector<int> sizes = {240,  320,  400,  480,  560,  640,  800,  960, 1200,
                            1600, 2000, 2400, 3200, 4000, 4800, 6400, 8000};
  int team_size = 640;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--trace") {
      trace = value();
    } else if (a == "--inference-trace") {
      inference_trace = value();
    } else if (a == "--out") {
      out_dir = value();
    } else if (a == "--team-size") {
      team_size = std::stoi(value());
    } else if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(value());
      std::string s;
      while (std::getline(ss, s, ',')) sizes.push_back(std::stoi(s));
    } else {
      std::fprintf(stderr,
                   "usage: skb_quota_study --trace philly_vc_sep_oct.csv "
                   "[--inference-trace openb_pod_list_default.csv] [--sizes A,B,...] "
                   "[--team-size GPUS] [--out DIR]\n");
      return 2;
    }
  }
  auto jobs = skb::quota_study::ReadPhilly(trace);
  if (!jobs.ok()) {
    std::fprintf(stderr, "%s\n", jobs.status().ToString().c_str());
    return 1;
  }
  skb::quota_study::Options options;
  std::printf(
      "trace: %zu jobs, %zu teams; nodes of %d GPUs; grace %lld s, checkpoint every "
      "%lld s, min run time %lld s\n",
      jobs->size(), skb::quota_study::Shares(*jobs).size(), options.gpus_per_node,
      static_cast<long long>(options.grace_s),
      static_cast<long long>(options.checkpoint_interval_s),
      static_cast<long long>(options.min_run_time_s));
  const bool mixed = !inference_trace.empty();
  const std::string inference = skb::quota_study::kInferenceTenant;
  if (mixed) {
    for (const auto& j : *jobs) {
      if (j.team == inference) {
        std::fprintf(stderr, "%s: a team is named '%s', the mixed case's tenant\n", trace.c_str(),
                     inference.c_str());
        return 1;
      }
    }
    const int64_t window_s = jobs->back().submit_s;
    auto pods = skb::quota_study::ReadInference(inference_trace, window_s);
    if (!pods.ok()) {
      std::fprintf(stderr, "%s\n", pods.status().ToString().c_str());
      return 1;
    }
    const int peak = skb::quota_study::PeakConcurrentGpus(pods->jobs);
    options.fixed_guarantees[inference] = peak;
    double gpu_h = 0, training_gpu_h = 0;
    for (const auto& j : pods->jobs) gpu_h += static_cast<double>(j.duration_s) * j.gpus / 3600;
    for (const auto& j : *jobs) training_gpu_h += static_cast<double>(j.duration_s) * j.gpus / 3600;
    std::printf(
        "mixed: tenant '%s' = %zu inference pods (LS with a GPU: %d; dropped: %d never "
        "scheduled, %d ended before the window, %d with no run time; %d running at the "
        "window's start arrive at 0; %d fractional rounded up to one GPU, +%.0f GPU-h; %d "
        "with no deletion run to the trace's end)\n"
        "  window: the last %.1f days of the Alibaba trace (from its day %.1f) onto the Philly "
        "submit window, not stretched\n"
        "  %.0f GPU-hours (%.1f%% of all), guaranteed its peak concurrent demand: %d GPUs "
        "(static: %d nodes of its own), not preemptible; the teams share the rest by "
        "GPU-hours\n",
        inference.c_str(), pods->jobs.size(), pods->inference_gpu_tasks, pods->never_scheduled,
        pods->ended_before_window, pods->no_run_time, pods->running_at_start, pods->fractional,
        pods->fractional_gpu_h_added, pods->no_deletion, static_cast<double>(window_s) / 86400,
        static_cast<double>(pods->window_start_s) / 86400, gpu_h,
        100 * gpu_h / (gpu_h + training_gpu_h), peak,
        (peak + options.gpus_per_node - 1) / options.gpus_per_node);
    *jobs = skb::quota_study::Merge(*jobs, pods->jobs);
  }
  const std::string stem = out_dir + (mixed ? "/quota_study_mixed" : "/quota_study");
  // The inference tenant's own figures (mixed case): p99 wait, jobs within its guarantee
  // that started on time.
  auto inference_of = [&](const Result& r) -> const skb::quota_study::TeamResult* {
    for (const auto& t : r.teams) {
      if (t.team == inference) return &t;
    }
    return nullptr;
  };
  auto kept_share = [](int within, int on_time) {
    return within > 0 ? std::to_string(100.0 * on_time / within).substr(0, 5) + "%"
                      : std::string("-");
  };
  std::ofstream curve(stem + ".csv");
  curve << "mode,cluster_gpus,worst_p99_wait_h,served_gpu_h,capacity_gpu_h,preempted_gpu_h,"
           "within_guarantee_jobs,within_guarantee_on_time"
        << (mixed ? ",inference_p99_wait_h,inference_max_wait_h,inference_within_guarantee_jobs,"
                    "inference_within_guarantee_on_time"
                  : "")
        << "\n";
  const Mode modes[] = {Mode::kStatic, Mode::kPool, Mode::kQuotas};
  std::printf("\n%-7s %6s %14s %10s %12s %16s", "mode", "GPUs", "worst p99 wait", "served/cap",
              "preempt GPU-h", "guarantee <=10m");
  if (mixed) std::printf(" %14s %14s %14s", "inference p99", "inference max", "inference<=10m");
  std::printf("\n");
  double need24[3], need4[3];
  double inference_p99_at24[3] = {0, 0, 0}, inference_p99_at4[3] = {0, 0, 0};
  for (int m = 0; m < 3; ++m) need24[m] = need4[m] = std::numeric_limits<double>::infinity();
  for (int size : sizes) {
    for (int m = 0; m < 3; ++m) {
      Result r = skb::quota_study::Simulate(*jobs, size, modes[m], options);
      double preempted = 0;
      int within = 0, on_time = 0;
      for (const auto& t : r.teams) {
        preempted += t.preempted_gpu_h;
        within += t.within_guarantee_jobs;
        on_time += t.within_guarantee_on_time;
      }
      std::string kept = kept_share(within, on_time);
      std::printf("%-7s %6d %14s %10.3f %12.1f %16s", ModeName(modes[m]), r.cluster_gpus,
                  Hours(r.worst_p99_s).c_str(), r.gpu_h_served / r.gpu_h_capacity, preempted,
                  kept.c_str());
      curve << ModeName(modes[m]) << "," << r.cluster_gpus << ","
            << (std::isinf(r.worst_p99_s) ? -1 : r.worst_p99_s / 3600.0) << "," << r.gpu_h_served
            << "," << r.gpu_h_capacity << "," << preempted << "," << within << "," << on_time;
      const auto* pods = inference_of(r);
      if (pods != nullptr) {
        std::printf(
            " %14s %14s %14s", Wait(pods->wait_p99_s).c_str(), Wait(pods->wait_max_s).c_str(),
            kept_share(pods->within_guarantee_jobs, pods->within_guarantee_on_time).c_str());
        curve << "," << (std::isinf(pods->wait_p99_s) ? -1 : pods->wait_p99_s / 3600.0) << ","
              << (std::isinf(pods->wait_max_s) ? -1 : pods->wait_max_s / 3600.0) << ","
              << pods->within_guarantee_jobs << "," << pods->within_guarantee_on_time;
      }
      std::printf("\n");
      std::fflush(stdout);
      curve << "\n";
      if (r.worst_p99_s <= 24 * 3600.0 && r.cluster_gpus < need24[m]) {
        need24[m] = r.cluster_gpus;
        if (pods != nullptr) inference_p99_at24[m] = pods->wait_p99_s;
      }
      if (r.worst_p99_s <= 4 * 3600.0 && r.cluster_gpus < need4[m]) {
        need4[m] = r.cluster_gpus;
        if (pods != nullptr) inference_p99_at4[m] = pods->wait_p99_s;
      }
    }
  }
  std::printf("\nsmallest cluster (of the sizes run) at which every team's p99 wait is within:\n");
  for (int m = 0; m < 3; ++m) {
    std::printf("  %-7s 24 h: %s GPUs   4 h: %s GPUs", ModeName(modes[m]),
                std::isinf(need24[m]) ? "beyond the sizes run"
                                      : std::to_string(static_cast<int>(need24[m])).c_str(),
                std::isinf(need4[m]) ? "beyond the sizes run"
                                     : std::to_string(static_cast<int>(need4[m])).c_str());
    if (mixed) {
      std::printf("   (inference p99 there: %s, %s)",
                  std::isinf(need24[m]) ? "-" : Wait(inference_p99_at24[m]).c_str(),
                  std::isinf(need4[m]) ? "-" : Wait(inference_p99_at4[m]).c_str());
    }
    std::printf("\n");
  }
  auto ratio = [](double a, double b) {
    return std::isinf(a) || std::isinf(b) ? std::string("n/a")
                                          : std::to_string(a / b).substr(0, 5) + "x";
  };
  std::printf("  quotas / static: 24 h %s, 4 h %s\n", ratio(need24[2], need24[0]).c_str(),
              ratio(need4[2], need4[0]).c_str());

  std::ofstream teams(stem + "_teams.csv");
  teams << "mode,cluster_gpus,team,guaranteed_gpus,jobs,never_started,wait_p50_h,wait_p99_h,"
           "within_guarantee_jobs,within_guarantee_on_time,preempted_gpu_h,preemptions\n";
  // Mixed: short waits in minutes (the inference tenant's are seconds to minutes).
  std::string (*show)(double) = mixed ? Wait : Hours;
  const int team_width = mixed ? 9 : 8;  // "inference"
  std::printf("\nper team at %d GPUs:\n%-7s %-*s %6s %6s %10s %10s %14s %10s\n", team_size, "mode",
              team_width, "team", "guar.", "jobs", "wait p50", "wait p99", "guarantee<=10m",
              "preempt h");
  for (Mode mode : modes) {
    Result r = skb::quota_study::Simulate(*jobs, team_size, mode, options);
    for (const auto& t : r.teams) {
      std::string kept = kept_share(t.within_guarantee_jobs, t.within_guarantee_on_time);
      std::printf("%-7s %-*s %6d %6d %10s %10s %14s %10.1f\n", ModeName(mode), team_width,
                  t.team.c_str(), t.guaranteed, t.jobs, show(t.wait_p50_s).c_str(),
                  show(t.wait_p99_s).c_str(), kept.c_str(), t.preempted_gpu_h);
      teams << ModeName(mode) << "," << r.cluster_gpus << "," << t.team << "," << t.guaranteed
            << "," << t.jobs << "," << t.never_started << ","
            << (std::isinf(t.wait_p50_s) ? -1 : t.wait_p50_s / 3600.0) << ","
            << (std::isinf(t.wait_p99_s) ? -1 : t.wait_p99_s / 3600.0) << ","
            << t.within_guarantee_jobs << "," << t.within_guarantee_on_time << ","
            << t.preempted_gpu_h << "," << t.preemptions << "\n";
    }
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// skb_trace_sim: replays a GPU-cluster trace through a static split and through the
// bridge's policy (simulator.h) and writes the figures in bench/report.py's format.
//
//   skb_trace_sim --tasks openb_pod_list_default.csv --nodes openb_node_list_gpu_node.csv
//       [--seed N] [--mode static-peak|static-avg|bridge|bridge-gpu|all] [--out results.json]
//       [--series series.csv] [--compress F] [--node-fraction F] [--config bridge.json]
//       [--checkpoint-interval SECONDS] [--checkpoint-on-signal]
//       [--lend-overhead SECONDS] [--k8s-score least|most] [--name TEXT]
//
// Exit status: 0 done, 2 bad arguments or input (the message names the file and line).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/sim/simulator.h"
#include "src/base/strings.h"

namespace {

using skb::StrCat;
namespace sim = skb::sim;

struct Args {
  std::string tasks, nodes, out, series, config, name;
  std::vector<sim::Mode> modes{sim::Mode::kStaticPeak, sim::Mode::kStaticAvg, sim::Mode::kBridge,
                               sim::Mode::kBridgeGpu};
  double node_fraction = 1;
  sim::Options options;
};

constexpr char kUsage[] =
    "usage: skb_trace_sim --tasks PATH --nodes PATH [--seed N]\n"
    "         [--mode static-peak|static-avg|bridge|bridge-gpu|all] [--out results.json]\n"
    "         [--series series.csv] [--compress F] [--node-fraction F] [--config bridge.json]\n"
    "         [--checkpoint-interval SECONDS] [--checkpoint-on-signal] [--lend-overhead SECONDS]\n"
    "         [--k8s-score least|most] [--name TEXT]\n";

skb::Status ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--checkpoint-on-signal") {
      a->options.checkpoint_on_signal = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") return skb::InvalidArgumentError("");
    if (i + 1 >= argc) return skb::InvalidArgumentError(StrCat(flag, " needs a value"));
    std::string v = argv[++i];
    try {
      if (flag == "--tasks") {
        a->tasks = v;
      } else if (flag == "--nodes") {
        a->nodes = v;
      } else if (flag == "--out") {
        a->out = v;
      } else if (flag == "--series") {
        a->series = v;
      } else if (flag == "--config") {
        a->config = v;
      } else if (flag == "--name") {
        a->name = v;
      } else if (flag == "--seed") {
        a->options.seed = std::stoull(v);
      } else if (flag == "--compress") {
        a->options.compress = std::stod(v);
      } else if (flag == "--node-fraction") {
        a->node_fraction = std::stod(v);
        if (!(a->node_fraction > 0 && a->node_fraction <= 1)) {
          return skb::InvalidArgumentError("--node-fraction must be in (0, 1]");
        }
      } else if (flag == "--checkpoint-interval") {
        a->options.checkpoint_interval = std::chrono::seconds(std::stoll(v));
      } else if (flag == "--lend-overhead") {
        a->options.lend_overhead = std::chrono::milliseconds(std::llround(std::stod(v) * 1000));
      } else if (flag == "--k8s-score") {
        if (v != "least" && v != "most") return skb::InvalidArgumentError("--k8s-score least|most");
        a->options.k8s_score =
            v == "least" ? sim::K8sScore::kLeastAllocated : sim::K8sScore::kMostAllocated;
      } else if (flag == "--mode") {
        if (v == "all") continue;
        a->modes.clear();
        for (sim::Mode m : {sim::Mode::kStaticPeak, sim::Mode::kStaticAvg, sim::Mode::kBridge,
                            sim::Mode::kBridgeGpu}) {
          if (sim::ModeName(m) == v) a->modes.push_back(m);
        }
        if (a->modes.empty()) return skb::InvalidArgumentError(StrCat("unknown mode '", v, "'"));
      } else {
        return skb::InvalidArgumentError(StrCat("unknown flag ", flag));
      }
    } catch (const std::exception&) {
      return skb::InvalidArgumentError(StrCat(flag, ": '", v, "' is not a number"));
    }
  }
  if (a->tasks.empty() || a->nodes.empty()) {
    return skb::InvalidArgumentError("--tasks and --nodes are required");
  }
  return skb::OkStatus();
}

nlohmann::ordered_json Dist(const sim::Percentiles& p) {
  return {{"p50", p.p50}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}, {"count", p.count}};
}

nlohmann::ordered_json ModeJson(const sim::Result& r, double run_ms) {
  return {
      {"nodes", r.nodes},
      {"gpus", r.gpus},
      {"k8s_nodes", r.k8s_nodes},
      {"k8s_gpus", r.k8s_gpus},
      {"inference_pods", r.inference_pods},
      {"training_jobs", r.training_jobs},
      {"skipped_tasks", r.skipped_tasks},
      {"horizon_hours", r.horizon_hours},
      {"capacity_gpu_hours", r.capacity_gpu_hours},
      {"allocated_gpu_hours", r.allocated_gpu_hours},
      {"inference_gpu_hours", r.inference_gpu_hours},
      {"training_gpu_hours", r.training_gpu_hours},
      {"allocation", r.allocation},
      {"allocated_gpu_hours_total", r.allocated_gpu_hours_total},
      {"lost_gpu_hours", r.lost_gpu_hours},
      {"lost_fraction", r.lost_fraction},
      {"inference_wait_s", Dist(r.inference_wait_s)},
      {"inference_never_started", r.inference_never_started},
      {"training_wait_s", Dist(r.training_wait_s)},
      {"training_slowdown", Dist(r.training_slowdown)},
      {"training_never_finished", r.training_never_finished},
      {"preemptions", r.preemptions},
      {"preempted_jobs", r.preempted_jobs},
      {"preemptions_per_job", r.preemptions_per_job},
      {"max_preemptions_per_job", r.max_preemptions_per_job},
      {"lends", r.lends},
      {"returns", r.returns},
      {"no_victim", r.protected_skips},
      {"gpus_taken", r.gpus_taken},
      {"gpus_needed", r.gpus_needed},
      {"gpus_preempted", r.gpus_preempted},
      {"preempted_gpu_hours", r.preempted_gpu_hours},
      {"k8s_held_gpu_hours", r.k8s_held_gpu_hours},
      {"device_violations", r.device_violations},
      {"end_hours", r.end_hours},
      {"run_ms", run_ms},
  };
}

double Round(double v, double scale) { return std::round(v * scale) / scale; }

// The flat figures one row of bench/RESULTS.md shows.
void AddFigures(const sim::Result& r, nlohmann::ordered_json* figures) {
  const std::string m(sim::ModeName(r.mode));
  nlohmann::ordered_json& f = *figures;
  f[m + " alloc%"] = Round(100 * r.allocation, 1000);
  f[m + " GPU-h"] = Round(r.allocated_gpu_hours, 10);
  f[m + " inf-wait p50 s"] = Round(r.inference_wait_s.p50, 10);
  f[m + " inf-wait p99 s"] = Round(r.inference_wait_s.p99, 10);
  f[m + " slowdown p50"] = Round(r.training_slowdown.p50, 100);
  f[m + " slowdown p99"] = Round(r.training_slowdown.p99, 100);
  auto per = [](double a, double b) { return b > 0 ? a / b : 0; };
  // Kubernetes-held GPU-hours per inference GPU-hour served (1.0: nothing held idle).
  f[m + " k8s-held/inf GPU-h"] = Round(per(r.k8s_held_gpu_hours, r.inference_gpu_hours), 1000);
  // Fragmentation: whole nodes with nothing on them, and those Slurm could give a whole-node
  // job at once (mean over the window's minutes; share of minutes with at least one).
  f[m + " whole idle nodes"] = Round(r.whole_nodes_idle_mean, 100);
  f[m + " whole nodes for Slurm"] = Round(r.whole_nodes_for_slurm_mean, 100);
  f[m + " any whole node for Slurm%"] = Round(100 * r.whole_node_for_slurm_share, 10);
  if (r.mode == sim::Mode::kBridge || r.mode == sim::Mode::kBridgeGpu) {
    f[m + " taken/needed GPUs"] = Round(per(double(r.gpus_taken), double(r.gpus_needed)), 1000);
    f[m + " preempted/needed GPUs"] =
        Round(per(double(r.gpus_preempted), double(r.gpus_needed)), 1000);
    f[m + " preempted GPU-h/inf GPU-h"] =
        Round(per(r.preempted_gpu_hours, r.inference_gpu_hours), 10000);
    f[m + " lost GPU-h/inf GPU-h"] = Round(per(r.lost_gpu_hours, r.inference_gpu_hours), 10000);
    f[m + " lost%"] = Round(100 * r.lost_fraction, 1000);
    f[m + " preempt/job mean"] = Round(r.preemptions_per_job, 1000);
    f[m + " preempt/job max"] = r.max_preemptions_per_job;
  }
}

void PrintSummary(const sim::Result& r, double run_ms) {
  std::printf(
      "%-12s nodes %lld, %lld GPUs (k8s %lld, %lld GPUs) alloc %.3f%% (%.1f of %.1f GPU-h; inf "
      "%.1f, "
      "train %.1f)\n"
      "             inference wait p50 %.1fs p99 %.1fs max %.1fs (never %lld) | training "
      "slowdown p50 %.2f p99 %.2f (unfinished %lld)\n"
      "             lost %.2f GPU-h (%.3f%%) preemptions %lld (jobs %lld, mean %.4f, max %lld) "
      "lends %lld returns %lld | taken %lld needed %lld preempted %lld GPUs | %.0f ms\n"
      "             whole idle nodes %.2f, for Slurm %.2f (>= 1 in %.1f%% of minutes)\n",
      std::string(sim::ModeName(r.mode)).c_str(), static_cast<long long>(r.nodes),
      static_cast<long long>(r.gpus), static_cast<long long>(r.k8s_nodes),
      static_cast<long long>(r.k8s_gpus), 100 * r.allocation, r.allocated_gpu_hours,
      r.capacity_gpu_hours, r.inference_gpu_hours, r.training_gpu_hours, r.inference_wait_s.p50,
      r.inference_wait_s.p99, r.inference_wait_s.max,
      static_cast<long long>(r.inference_never_started), r.training_slowdown.p50,
      r.training_slowdown.p99, static_cast<long long>(r.training_never_finished), r.lost_gpu_hours,
      100 * r.lost_fraction, static_cast<long long>(r.preemptions),
      static_cast<long long>(r.preempted_jobs), r.preemptions_per_job,
      static_cast<long long>(r.max_preemptions_per_job), static_cast<long long>(r.lends),
      static_cast<long long>(r.returns), static_cast<long long>(r.gpus_taken),
      static_cast<long long>(r.gpus_needed), static_cast<long long>(r.gpus_preempted), run_ms,
      r.whole_nodes_idle_mean, r.whole_nodes_for_slurm_mean, 100 * r.whole_node_for_slurm_share);
}

// A trace file as "its directory/its name": where a trace lives on this machine is not a
// result.
std::string TraceName(const std::string& path) {
  const size_t file = path.rfind('/');
  if (file == std::string::npos) return path;
  const size_t dir = file == 0 ? std::string::npos : path.rfind('/', file - 1);
  return path.substr(dir == std::string::npos ? 0 : dir + 1);
}

int Fail(const skb::Status& s) {
  if (!s.message().empty()) std::fprintf(stderr, "skb_trace_sim: %s\n", s.message().c_str());
  std::fputs(kUsage, stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (skb::Status s = ParseArgs(argc, argv, &args); !s.ok()) return Fail(s);
  if (!args.config.empty()) {
    skb::StatusOr<std::string> text = sim::ReadFile(args.config);
    if (!text.ok()) return Fail(text.status());
    skb::StatusOr<skb::config::Config> cfg = skb::config::ParseConfig(*text);
    if (!cfg.ok()) return Fail(cfg.status());
    args.options.config = *cfg;
  }
  skb::StatusOr<std::string> task_text = sim::ReadFile(args.tasks);
  if (!task_text.ok()) return Fail(task_text.status());
  skb::StatusOr<std::string> node_text = sim::ReadFile(args.nodes);
  if (!node_text.ok()) return Fail(node_text.status());
  skb::StatusOr<std::vector<sim::Task>> tasks = sim::ParseTasks(*task_text, args.tasks);
  if (!tasks.ok()) return Fail(tasks.status());
  skb::StatusOr<std::vector<sim::GpuNode>> all_nodes = sim::ParseNodes(*node_text, args.nodes);
  if (!all_nodes.ok()) return Fail(all_nodes.status());
  const std::vector<sim::GpuNode> nodes =
      sim::SampleNodes(*all_nodes, args.node_fraction, args.options.seed);

  nlohmann::ordered_json modes = nlohmann::ordered_json::object(),
                         figures = nlohmann::ordered_json::object();
  std::vector<sim::Result> results;
  for (sim::Mode m : args.modes) {
    const auto start = std::chrono::steady_clock::now();
    skb::StatusOr<sim::Result> r = sim::Simulate(*tasks, nodes, m, args.options);
    if (!r.ok()) return Fail(r.status());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    PrintSummary(*r, ms);
    modes[std::string(sim::ModeName(m))] = ModeJson(*r, ms);
    AddFigures(*r, &figures);
    results.push_back(std::move(*r));
  }
  const sim::Result* peak = nullptr;
  const sim::Result* bridge = nullptr;
  const sim::Result* bridge_gpu = nullptr;
  for (const sim::Result& r : results) {
    if (r.mode == sim::Mode::kStaticPeak) peak = &r;
    if (r.mode == sim::Mode::kBridge) bridge = &r;
    if (r.mode == sim::Mode::kBridgeGpu) bridge_gpu = &r;
  }
  std::string notes;
  if (!results.empty()) {
    const sim::Result& any = results.front();
    const double inf = any.demand_inference_gpu_hours, train = any.demand_training_gpu_hours;
    notes = StrCat("demand ", Round(inf + train, 10), " GPU-h (inference ", Round(inf, 10),
                   ", training ", Round(train, 10),
                   "); a split that serves all inference "
                   "allocates >= inference, so bridge/static-peak <= (inference + training) / "
                   "inference = ",
                   Round(inf > 0 ? (inf + train) / inf : 0, 1000), "x");
  }
  if (peak && bridge && peak->allocated_gpu_hours > 0) {
    const double ratio = bridge->allocated_gpu_hours / peak->allocated_gpu_hours;
    figures["bridge/static-peak GPU-h"] = Round(ratio, 1000);
    std::printf("bridge / static-peak allocated GPU-hours: %.3fx\n", ratio);
  }
  if (peak && bridge_gpu && peak->allocated_gpu_hours > 0) {
    const double ratio = bridge_gpu->allocated_gpu_hours / peak->allocated_gpu_hours;
    figures["bridge-gpu/static-peak GPU-h"] = Round(ratio, 1000);
    std::printf("bridge-gpu / static-peak allocated GPU-hours: %.3fx\n", ratio);
  }
  std::printf("%s\n", notes.c_str());

  if (!args.out.empty()) {
    nlohmann::ordered_json out = {
        {"name", args.name.empty() ? StrCat("trace replay (", nodes.size(), " nodes, compress ",
                                            args.options.compress, "x)")
                                   : args.name},
        {"description",
         StrCat("tasks ", TraceName(args.tasks), ", nodes ", TraceName(args.nodes), " (fraction ",
                args.node_fraction, "), seed ", args.options.seed, ", checkpoint every ",
                args.options.checkpoint_interval.count(), " s",
                args.options.checkpoint_on_signal ? " and on the signal" : "", ", lend overhead ",
                args.options.lend_overhead.count() / 1000.0, " s")},
        {"unit", ""},
        {"figures", figures},
        {"target",
         "bridge >= 2x static-peak GPU-h, inference wait p99 <= static-peak's, lost <= 3%"},
        {"notes", StrCat(notes, "; models: bench/sim/README.md")},
        {"modes", modes},
    };
    std::ofstream f(args.out);
    f << out.dump(2) << "\n";
    if (!f) return Fail(skb::UnavailableError(StrCat("cannot write ", args.out)));
  }
  if (!args.series.empty()) {
    std::ofstream f(args.series);
    f << "mode,hours,inference_gpus,training_gpus,total_gpus\n";
    for (const sim::Result& r : results) {
      for (const sim::SeriesPoint& p : r.series) {
        f << sim::ModeName(r.mode) << ',' << p.hours << ',' << p.inference << ',' << p.training
          << ',' << p.inference + p.training << '\n';
      }
    }
    if (!f) return Fail(skb::UnavailableError(StrCat("cannot write ", args.series)));
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// GPU-granular sharing end to end on the testbed in dra mode (SKB_TESTBED_GPU_ALLOCATION=dra),
// with a bridge built from this tree, the real kube-scheduler and slurmctld: every node but
// node1 is full of work the bridge may not take; then, `--runs` times for each case, a
// 2-GPU inference pod is created on node1 and timed until Running:
//   idle       node1 runs a preemptible 4-GPU job: the pod gets 2 of the 4 idle GPUs (no
//              preemption; what the placeholder, Slurm and kube-scheduler add);
//   preempted  node1 runs a preemptible 8-GPU job: the pod gets 2 of its GPUs (checkpoint
//              signal, grace, requeue), timed minus the grace.
// After each run the pod is deleted and the devices are timed until held for Slurm again
// (minus the cool-down).
//
// Writes bench/results/gpu_sharing_latency_{idle,preempted,return}.json (bench/report.py).
//
//   SKB_TESTBED_GPU_ALLOCATION=dra scripts/testbed up --no-bridge
//   eval "$(scripts/testbed env)"; build/bench/gpu_sharing_latency_e2e [--runs N] [--out DIR]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/e2e_results.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/testbed_support.h"

namespace {

using skb::StrCat;
using skb::testbed::RunCommand;
using skb::testbed::Shell;
using skb::testbed::Trim;
using skb::testbed::WaitFor;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kGrace = 2;  // seconds
// Longer than the holds' settle (devices::kHoldSettle, 5 s), which a return begins before
// the cool-down ends: with a shorter cool-down the settle, not the cool-down, would bound
// the return, and "beyond the cool-down" would measure the difference.
constexpr int kCooldown = 8;  // seconds

using skb::bench::Ms;

int HoldsOn(const std::string& node) {
  return std::atoi(Trim(Shell(StrCat("kubectl get devicetaintrules -l slurm-k8s-bridge.io/node=",
                                     node, " --no-headers 2>/dev/null | wc -l"))
                            .out)
                       .c_str());
}

// GPUs of `node` the bridge sees Slurm's (bridgectl's view: its last Slurm poll).
int SlurmGpusSeen(const std::string& socket, const std::string& node) {
  auto r = RunCommand(
      {skb::testbed::BridgectlBinary(), "--socket", socket, "get", "nodes", "-o", "json"},
      seconds(30));
  if (r.exit_code != 0) return -1;
  int n = 0;
  try {
    const nlohmann::json all = nlohmann::json::parse(r.out);  // outlives the loop
    for (const auto& x : all["nodes"]) {
      if (x["name"] != node) continue;
      for (const auto& g : x["gpuOwners"]) n += g["owner"] == "slurm" && g.contains("jobId");
    }
  } catch (const nlohmann::json::exception&) {
    return -1;
  }
  return n;
}

bool NoPlaceholder() { return Trim(Shell("squeue -h -n skb-gpu-hold -o %i").out).empty(); }

std::string Submit(const std::string& node, int gpus, bool preemptible) {
  auto r =
      RunCommand({"sbatch", "--parsable", preemptible ? "--requeue" : "--no-requeue",
                  StrCat("--gres=gpu:", gpus), "-w", node, "-p", "gpu", "-o", "/dev/null", "--wrap",
                  "trap 'echo checkpoint' USR1; for i in $(seq 100000); do sleep 0.2; done"},
                 seconds(30));
  return Trim(r.out);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const skb::bench::RunArgs args = skb::bench::ParseRunArgs(argc, argv);
  const int runs = args.runs;
  const std::string& out_dir = args.out_dir;
  if (!skb::bench::OnDraTestbed("gpu_sharing_latency_e2e")) return 2;
  auto kube = skb::testbed::AdminKubeClient();
  if (!kube.ok()) return 2;
  const std::string reset = StrCat(skb::testbed::SourceDir(), "/tests/e2e/bridge/reset_lending.sh");
  Shell(reset, seconds(120));
  skb::testbed::BridgeDaemon bridge(
      skb::testbed::DaemonBinary(),
      StrCat(R"({"admission": {"preemptible_partitions": ["gpu"]}, "features": {"labels": []},
                 "gpu_sharing": {"enabled": true, "give_timeout": "2m"},
                 "lending": {"enabled": true, "default_grace": ")",
             kGrace, R"(s", "cooldown": ")", kCooldown, R"(s", "min_lend_time": "1s",
                 "anti_thrash": {"max_preemptions": 1000}}})"));
  if (auto s = bridge.Start(); !s.ok()) {
    std::fprintf(stderr, "bridge: %s\n", s.ToString().c_str());
    return 1;
  }
  const int nodes = skb::testbed::TestbedNodeCount();
  std::vector<std::string> jobs;
  for (int i = 2; i <= nodes; ++i) jobs.push_back(Submit(StrCat("node", i), 8, false));
  auto running = [&](const std::vector<std::string>& ids) {
    for (const auto& j : ids) {
      if (skb::testbed::SqueueState(j) != "RUNNING") return false;
    }
    return true;
  };
  bool ok = WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60)) &&
            WaitFor([&] { return running(jobs); }, seconds(60));

  // One case: a job of `job_gpus` on node1, then `runs` pods of 2 GPUs one after another.
  auto run_case = [&](const char* name, int job_gpus, int minus_ms, std::vector<double>* took,
                      std::vector<double>* back) {
    const std::string job = Submit("node1", job_gpus, true);
    jobs.push_back(job);
    // Running, and seen so by the bridge: a pod created within a poll of the job's start
    // would be given GPUs the bridge still thinks idle (see the note in the results).
    auto job_seen = [&] {
      return skb::testbed::SqueueState(job) == "RUNNING" &&
             SlurmGpusSeen(bridge.socket(), "node1") == job_gpus;
    };
    if (!WaitFor(job_seen, seconds(60))) {
      std::fprintf(stderr, "%s: job %s %s, the bridge sees %d of node1's GPUs Slurm's\n%s\n", name,
                   job.c_str(), skb::testbed::SqueueState(job).c_str(),
                   SlurmGpusSeen(bridge.socket(), "node1"),
                   RunCommand({skb::testbed::BridgectlBinary(), "--socket", bridge.socket(), "get",
                               "node", "node1", "-o", "json"},
                              seconds(30))
                       .out.c_str());
      return false;
    }
    for (int run = 0; run < runs; ++run) {
      const std::string pod = StrCat("gpu-", name, "-", run);
      const auto t0 = Steady::now();
      if (!(*kube)
               ->Create(skb::k8s::Resource::Pods(), "default",
                        skb::testbed::InferencePod(pod, "lending", 2))
               .ok()) {
        return false;
      }
      auto phase = [&] {
        auto p = (*kube)->Get(skb::k8s::Resource::Pods(), "default", pod);
        return p.ok() ? (*p)["status"].value("phase", "") : std::string();
      };
      if (!WaitFor([&] { return phase() == "Running"; }, seconds(kGrace + 90), milliseconds(20))) {
        std::fprintf(stderr, "%s run %d: the pod is not Running\n", name, run);
        return false;
      }
      took->push_back(Ms(Steady::now() - t0) - minus_ms);
      const auto t1 = Steady::now();
      skb::k8s::DeleteOptions del;
      del.grace_period_seconds = 0;
      (void)(*kube)->Delete(skb::k8s::Resource::Pods(), "default", pod, del);
      if (!WaitFor([&] { return NoPlaceholder() && HoldsOn("node1") == 8; },
                   seconds(kCooldown + 90), milliseconds(50))) {
        std::fprintf(stderr, "%s run %d: the GPUs did not come back\n", name, run);
        return false;
      }
      back->push_back(Ms(Steady::now() - t1) - kCooldown * 1000.0);
      // The preempted job runs again before the next run (Slurm restarts it on its GPUs).
      if (!WaitFor(job_seen, seconds(60))) {
        std::fprintf(stderr, "%s: job %s %s, the bridge sees %d of node1's GPUs Slurm's\n%s\n",
                     name, job.c_str(), skb::testbed::SqueueState(job).c_str(),
                     SlurmGpusSeen(bridge.socket(), "node1"),
                     RunCommand({skb::testbed::BridgectlBinary(), "--socket", bridge.socket(),
                                 "get", "node", "node1", "-o", "json"},
                                seconds(30))
                         .out.c_str());
        return false;
      }
      std::printf("%s run %2d: pod Running %.0f ms%s, GPUs back %.0f ms beyond the cool-down\n",
                  name, run, took->back(), minus_ms > 0 ? " beyond the grace" : "", back->back());
    }
    Shell(StrCat("scancel ", job));
    return WaitFor([&] { return skb::testbed::SqueueState(job).empty(); }, seconds(30));
  };
  std::vector<double> idle, preempted, back;
  ok = ok && run_case("idle", 4, 0, &idle, &back);
  ok = ok && run_case("preempted", 8, kGrace * 1000, &preempted, &back);
  for (const auto& j : jobs) Shell(StrCat("scancel ", j));
  bridge.Stop();
  Shell(reset, seconds(120));
  if (!ok || idle.empty() || preempted.empty()) {
    std::fprintf(stderr, "bridge log tail:\n%s\n", bridge.LogTail(60000).c_str());
    return 1;
  }
  const std::string where = StrCat(nodes, " nodes, dra mode, node1 the only one with work to take");
  skb::bench::WriteLatency(out_dir, "gpu_sharing_latency_idle",
                           "GPU sharing, idle GPUs: 2-GPU pod created -> Running",
                           "placeholder submitted and started by Slurm, holds lifted, "
                           "kube-scheduler allocates the freed devices",
                           idle, "p99 < 1000 ms", StrCat(idle.size(), " runs, ", where));
  skb::bench::WriteLatency(out_dir, "gpu_sharing_latency_preempted",
                           "GPU sharing, preempted GPUs: 2-GPU pod created -> Running, minus grace",
                           "the same, after the checkpoint signal, the grace and the requeue of "
                           "the preemptible job on those GPUs",
                           preempted, "p99 < 1000 ms",
                           StrCat(preempted.size(), " runs, grace ", kGrace, " s, ", where));
  skb::bench::WriteLatency(
      out_dir, "gpu_sharing_latency_return",
      "GPU sharing, return: pod deleted -> devices held for Slurm, minus cool-down",
      "cool-down, holds re-created, the placeholder ended", back, "",
      StrCat(back.size(), " runs, cool-down ", kCooldown, " s"));
  return 0;
}

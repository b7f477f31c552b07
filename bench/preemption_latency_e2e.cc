// SPDX-License-Identifier: Apache-2.0
// Preemption end to end on the testbed, with a bridge built from this tree and the real
// kube-scheduler: every node runs a preemptible training job (sbatch --gres=gpu:8); then,
// `--runs` times: an inference pod (PriorityClass inference-high, 8 GPUs) is created and
// timed until Running (minus the configured grace: what the bridge and Kubernetes add);
// the pod is deleted and the victim job is timed until it runs again (minus the cool-down:
// the return path, including Slurm starting the requeued job).
//
// Writes bench/results/preemption_latency*.json (bench/report.py).
//
//   eval "$(scripts/testbed env)"; build/bench/preemption_latency_e2e [--runs N] [--out DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e_results.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/testbed_support.h"

namespace {

using skb::StrCat;
using skb::testbed::RunCommand;
using skb::testbed::Shell;
using skb::testbed::WaitFor;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kGrace = 2;     // seconds
constexpr int kCooldown = 3;  // seconds

using skb::testbed::Trim;

using skb::bench::Ms;

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up as they happen
  int runs = 20;
  std::string out_dir = "bench/results";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(argv[i + 1]);
    if (a == "--out") out_dir = argv[i + 1];
  }
  if (std::getenv("KUBECONFIG") == nullptr) {
    std::fprintf(stderr, "preemption_latency_e2e: eval \"$(scripts/testbed env)\" first\n");
    return 2;
  }
  auto kube = skb::testbed::AdminKubeClient();
  if (!kube.ok()) return 2;
  const std::string reset = StrCat(skb::testbed::SourceDir(), "/tests/e2e/bridge/reset_lending.sh");
  Shell(reset, seconds(120));
  skb::testbed::BridgeDaemon bridge(
      skb::testbed::DaemonBinary(),
      StrCat(R"({"admission": {"preemptible_partitions": ["gpu"]}, "features": {"labels": []},
                 "lending": {"enabled": true, "default_grace": ")",
             kGrace, R"(s",
                 "cooldown": ")",
             kCooldown, R"(s", "min_lend_time": "1s",
                 "class_upgrade_delay": "1s", "class_downgrade_delay": "60s",
                 "reservation_update_interval": "30s",
                 "anti_thrash": {"max_preemptions": 1000}}})"));
  if (auto s = bridge.Start(); !s.ok()) {
    std::fprintf(stderr, "bridge: %s\n", s.ToString().c_str());
    return 1;
  }
  const int nodes = skb::testbed::TestbedNodeCount();
  std::vector<std::string> jobs;
  for (int i = 0; i < nodes; ++i) {
    auto r = RunCommand({"sbatch", "--parsable", "--requeue", "--gres=gpu:8", "-p", "gpu", "-o",
                         "/dev/null", "--wrap",
                         // A checkpointing job: it traps the checkpoint signal (one that does
                         // not dies of it and is requeued all the same).
                         "trap 'echo checkpoint' USR1; for i in $(seq 100000); do sleep 0.2; done"},
                        seconds(30));
    jobs.push_back(Trim(r.out));
  }
  auto all_running = [&] {
    for (const auto& j : jobs) {
      if (skb::testbed::SqueueState(j) != "RUNNING") return false;
    }
    return true;
  };
  auto settled = [&] {
    auto r = Shell(
        "kubectl get pods -n slurm-bridge -l slurm-k8s-bridge.io/role=reservation "
        "-o jsonpath='{range .items[*]}{.spec.priorityClassName}/{.status.phase} "
        "{end}' | tr ' ' '\\n' | grep -c '^slurm-preemptible/Running$'");
    auto taints = Shell("kubectl get nodes -o jsonpath='{.items[*].spec.taints[*].key}'").out;
    return std::atoi(Trim(r.out).c_str()) == nodes &&
           taints.find("reservation-swap") == std::string::npos;
  };
  bool ok = WaitFor(all_running, seconds(60)) && WaitFor(settled, seconds(60));
  // No node drained in Slurm (the lent node resumed): the bridge's part of the return ends
  // here; what follows is slurmctld's scheduling of the requeued job.
  auto none_drained = [&] { return Trim(Shell("sinfo -h -N -p gpu -t drain -o %N").out).empty(); };
  std::vector<double> preempt, ret, resumed;
  for (int run = 0; ok && run < runs; ++run) {
    const std::string name = StrCat("bench-infer-", run);
    const nlohmann::json pod = skb::testbed::InferencePod(name, "lending");
    const auto t0 = Steady::now();
    if (!(*kube)->Create(skb::k8s::Resource::Pods(), "default", pod).ok()) {
      ok = false;
      break;
    }
    auto phase = [&] {
      auto p = (*kube)->Get(skb::k8s::Resource::Pods(), "default", name);
      return p.ok() ? (*p)["status"].value("phase", "") : std::string();
    };
    if (!WaitFor([&] { return phase() == "Running"; }, seconds(kGrace + 60), milliseconds(20))) {
      std::fprintf(stderr, "run %d: inference pod not Running\n", run);
      ok = false;
      break;
    }
    preempt.push_back(Ms(Steady::now() - t0) - kGrace * 1000.0);
    const auto t1 = Steady::now();
    skb::k8s::DeleteOptions del;
    del.grace_period_seconds = 0;
    (void)(*kube)->Delete(skb::k8s::Resource::Pods(), "default", name, del);
    if (!WaitFor(none_drained, seconds(kCooldown + 60), milliseconds(20))) {
      std::fprintf(stderr, "run %d: the lent node was not resumed in Slurm\n", run);
      ok = false;
      break;
    }
    resumed.push_back(Ms(Steady::now() - t1) - kCooldown * 1000.0);
    if (!WaitFor(all_running, seconds(kCooldown + 60), milliseconds(50))) {
      std::fprintf(stderr, "run %d: the victim job did not run again\n", run);
      ok = false;
      break;
    }
    ret.push_back(Ms(Steady::now() - t1) - kCooldown * 1000.0);
    // Let the reservations settle (class swaps) before the next run.
    WaitFor(settled, seconds(60));
    std::printf(
        "run %2d: preemption %.0f ms (beyond grace), node resumed %.0f ms and its job running "
        "%.0f ms beyond the cool-down\n",
        run, preempt.back(), resumed.back(), ret.back());
  }
  for (const auto& j : jobs) Shell(StrCat("scancel ", j));
  bridge.Stop();
  Shell(reset, seconds(120));
  if (!ok || preempt.empty()) {
    std::fprintf(stderr, "bridge log tail:\n%s\n", bridge.LogTail(60000).c_str());
    return 1;
  }
  skb::bench::WriteLatency(
      out_dir, "preemption_latency", "Preemption: inference pod created -> Running, minus grace",
      "kube-scheduler preempts a reservation; the bridge drains, signals, waits the grace, "
      "requeues, releases",
      preempt, "p99 < 3000 ms",
      StrCat(preempt.size(), " runs, grace ", kGrace, " s, ", nodes, " busy nodes"));
  skb::bench::WriteLatency(
      out_dir, "return_resume_latency",
      "Return: inference pod deleted -> Slurm node resumed, minus cool-down",
      "the bridge's part: cool-down, the reservation made 5 s before it ends and running, the "
      "Slurm node resumed when it ends",
      resumed, "", StrCat(resumed.size(), " runs, cool-down ", kCooldown, " s"));
  skb::bench::WriteLatency(
      out_dir, "return_latency",
      "Return: inference pod deleted -> requeued job running, minus cool-down",
      "cool-down, reservation re-created, Slurm node resumed, the requeued job (made eligible "
      "at once) started",
      ret, "",
      StrCat(ret.size(), " runs, cool-down ", kCooldown,
             " s; Slurm's own ~120 s requeue hold is lifted by the bridge"));
  return 0;
}

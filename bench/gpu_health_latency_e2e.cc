// SPDX-License-Identifier: Apache-2.0
// A GPU the driver taints for its health, kept from Slurm, end to end on the testbed in dra
// mode (SKB_TESTBED_GPU_ALLOCATION=dra), with a bridge built from this tree and the real
// slurmctld: node1 runs a 5-GPU job, so 3 of its GPUs are idle; then, `--runs` times, one of
// the idle GPUs is tainted as NVIDIA's driver does (what scripts/testbed gpu-unhealthy
// publishes: a new generation of node1's ResourceSlice with gpu.nvidia.com/xid=79 on the
// device, written here by one PUT, so that the time starts at the write) and timed from just
// before that PUT until
//   held     a health hold runs on its GRES index in Slurm (Slurm can no longer place a
//            job there);
//   settled  that hold is the only one left (the others, placed on good GPUs, ended);
// then the taint is cleared (the slice republished without it, as gpu-healthy does) and timed
// until no health hold is left (the GPU is Slurm's again).
//
// Writes bench/results/gpu_health_latency_{held,settled,cleared}.json (bench/report.py).
//
//   SKB_TESTBED_GPU_ALLOCATION=dra scripts/testbed up --no-bridge
//   eval "$(scripts/testbed env)"; build/bench/gpu_health_latency_e2e [--runs N] [--out DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
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
using skb::bench::Ms;
using std::chrono::milliseconds;
using std::chrono::seconds;

// node1's slice republished (a new pool generation) with gpu-<index> tainted as NVIDIA's
// driver taints a GPU whose health check failed (XID 79), or without the taint. Returns when
// the PUT was sent (the time to count from), or nullopt when it failed.
std::optional<Steady::time_point> PublishTaint(skb::k8s::KubeClient* kube, int index, bool on) {
  const std::string name = "node1-gpu.nvidia.com";
  auto slice = kube->Get(skb::k8s::Resource::ResourceSlices(), "", name);
  if (!slice.ok()) return std::nullopt;
  nlohmann::json s = *slice;
  s["spec"]["pool"]["generation"] = s["spec"]["pool"].value("generation", 0) + 1;
  for (auto& d : s["spec"]["devices"]) {
    if (d.value("name", "") != StrCat("gpu-", index)) continue;
    if (on) {
      d["taints"] = nlohmann::json::array(
          {{{"key", "gpu.nvidia.com/xid"}, {"value", "79"}, {"effect", "NoSchedule"}}});
    } else {
      d.erase("taints");
    }
  }
  const auto sent = Steady::now();
  if (!kube->Update(skb::k8s::Resource::ResourceSlices(), "", s).ok()) return std::nullopt;
  return sent;
}

// The GRES indices of the running placeholders of node1 (health holds and gives), one entry
// per job: "5", "0-1".
std::vector<std::string> RunningHoldIndices() {
  std::vector<std::string> out;
  const std::string ids =
      Shell("squeue -h -n skb-gpu-hold -t RUNNING -w node1 -o %i 2>/dev/null").out;
  for (const auto& id : skb::StrSplit(ids, '\n', /*skip_empty=*/true)) {
    const std::string indices = skb::testbed::SlurmGpuIndices(std::string(id));
    if (!indices.empty()) out.push_back(indices);
  }
  return out;
}

bool NoHolds() { return Trim(Shell("squeue -h -n skb-gpu-hold -o %i").out).empty(); }

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const skb::bench::RunArgs args = skb::bench::ParseRunArgs(argc, argv);
  const int runs = args.runs;
  const std::string& out_dir = args.out_dir;
  if (!skb::bench::OnDraTestbed("gpu_health_latency_e2e")) return 2;
  auto kube = skb::testbed::AdminKubeClient();
  if (!kube.ok()) return 2;
  const std::string reset = StrCat(skb::testbed::SourceDir(), "/tests/e2e/bridge/reset_lending.sh");
  Shell(reset, seconds(120));
  skb::testbed::BridgeDaemon bridge(skb::testbed::DaemonBinary(),
                                    R"({"features": {"labels": []},
                                        "gpu_sharing": {"enabled": true},
                                        "lending": {"enabled": true}})");
  if (auto s = bridge.Start(); !s.ok()) {
    std::fprintf(stderr, "bridge: %s\n", s.ToString().c_str());
    return 1;
  }
  const std::string job = Trim(
      RunCommand({"sbatch", "--parsable", "--no-requeue", "--gres=gpu:5", "-w", "node1", "-p",
                  "gpu", "-o", "/dev/null", "--wrap", "for i in $(seq 100000); do sleep 0.2; done"},
                 seconds(30))
          .out);
  bool ok = WaitFor([&] { return skb::testbed::SqueueState(job) == "RUNNING"; }, seconds(60));
  // node1's idle GPUs: those of no job (its GRES indices 0-7 but the job's).
  const std::string used = ok ? skb::testbed::SlurmGpuIndices(job) : "";
  std::vector<int> idle;
  for (int i = 0; i < 8 && ok; ++i) {
    // The job's indices as Slurm prints them: a range "0-4" (5 of 8, placed first-fit).
    const size_t dash = used.find('-');
    const int lo = std::atoi(used.c_str());
    const int hi = dash == std::string::npos ? lo : std::atoi(used.c_str() + dash + 1);
    if (i < lo || i > hi) idle.push_back(i);
  }
  ok = ok && idle.size() == 3 && used.find(',') == std::string::npos;
  if (!ok) std::fprintf(stderr, "job %s on node1: indices '%s'\n", job.c_str(), used.c_str());
  ok = ok && WaitFor([&] { return NoHolds(); }, seconds(30));

  std::vector<double> held, settled, cleared;
  for (int run = 0; run < runs && ok; ++run) {
    const int index = idle[static_cast<size_t>(run) % idle.size()];
    const std::optional<Steady::time_point> tainted = PublishTaint(kube->get(), index, true);
    if (!tainted) {
      ok = false;
      break;
    }
    const Steady::time_point written = *tainted;
    const std::string want = StrCat(index);
    bool seen_held = false;
    ok = WaitFor(
        [&] {
          const std::vector<std::string> holds = RunningHoldIndices();
          const bool on_it = std::find(holds.begin(), holds.end(), want) != holds.end();
          if (on_it && !seen_held) {
            seen_held = true;
            held.push_back(Ms(Steady::now() - written));
          }
          return on_it && holds.size() == 1;
        },
        seconds(60), milliseconds(50));
    if (!ok) {
      std::fprintf(stderr, "run %d: gpu-%d not held alone: %s\n", run, index,
                   Shell("squeue -n skb-gpu-hold").out.c_str());
      break;
    }
    settled.push_back(Ms(Steady::now() - written));
    const std::optional<Steady::time_point> cleared_at = PublishTaint(kube->get(), index, false);
    if (!cleared_at) {
      ok = false;
      break;
    }
    const Steady::time_point healed = *cleared_at;
    ok = WaitFor(NoHolds, seconds(60), milliseconds(50));
    if (!ok) {
      std::fprintf(stderr, "run %d: the health hold did not end\n", run);
      break;
    }
    cleared.push_back(Ms(Steady::now() - healed));
    std::printf("run %2d gpu-%d: held %.0f ms, settled %.0f ms; back to Slurm %.0f ms\n", run,
                index, held.back(), settled.back(), cleared.back());
  }
  Shell(StrCat("scancel ", job));
  bridge.Stop();
  Shell(reset, seconds(120));
  if (!ok || held.empty()) {
    std::fprintf(stderr, "bridge log tail:\n%s\n", bridge.LogTail(60000).c_str());
    return 1;
  }
  const std::string where =
      StrCat(held.size(),
             " runs, 4 nodes, dra mode, node1 with a 5-GPU job and 3 idle GPUs "
             "(3 health holds submitted together each time)");
  skb::bench::WriteLatency(out_dir, "gpu_health_latency_held",
                           "GPU health: driver taint written -> a health hold on its index",
                           "the bridge sees the ResourceSlice, submits one 1-GPU health hold per "
                           "free GPU, Slurm places them (one on the tainted GPU)",
                           held, "", where);
  skb::bench::WriteLatency(out_dir, "gpu_health_latency_settled",
                           "GPU health: driver taint written -> only the bad GPU's hold left",
                           "as above, then the holds Slurm placed on good GPUs ended", settled, "",
                           where);
  skb::bench::WriteLatency(out_dir, "gpu_health_latency_cleared",
                           "GPU health: driver taint cleared -> the GPU back to Slurm",
                           "the bridge sees the slice without the taint and ends the health hold",
                           cleared, "", where);
  return 0;
}

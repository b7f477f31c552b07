// SPDX-License-Identifier: Apache-2.0
// The GPU-granular lane's planning at fleet scale: one pass (devices::PlanPass) over a fleet
// of 8-GPU nodes shared GPU by GPU, each with 1-GPU and 4-GPU jobs (a tenth of them not
// preemptible), with pending pods to serve. The lane runs such a pass about once a second,
// so its cost bounds the fleet one replica can plan. Figures go to bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <random>

#include "src/devices/device_plan.h"
#include "src/devices/gres.h"
#include "src/devices/pass.h"
#include "src/ownership/time_codec.h"

namespace {

using skb::Clock;
namespace dev = skb::devices;
namespace own = skb::ownership;

const Clock::TimePoint kNow = own::FromUnix(1'700'000'000);

skb::config::Config Cfg() {
  skb::config::Config cfg;
  cfg.lending.enabled = true;
  cfg.gpu_sharing.enabled = true;
  return cfg;
}

// `nodes` nodes, every device held for Slurm, filled with jobs to between 4 and 8 GPUs.
std::vector<dev::NodeDevices> Fleet(int nodes) {
  std::mt19937 rng(7);
  std::vector<dev::NodeDevices> fleet;
  fleet.reserve(nodes);
  uint32_t next_job = 1;
  for (int i = 0; i < nodes; ++i) {
    dev::NodeDevices n;
    n.node = "gpu-" + std::to_string(i);
    n.k8s_node = n.node;
    n.model = "h100";
    for (int d = 0; d < 8; ++d) n.devices.push_back({d, dev::DeviceName(d), /*k8s_hold=*/true});
    int used = 0;
    const int fill = 4 + static_cast<int>(rng() % 5);
    while (used < fill) {
      const int gpus = used + 4 <= fill && rng() % 3 == 0 ? 4 : 1;
      dev::NodeJob j;
      j.view.job_id = next_job++;
      j.view.state = skb::slurm::JobState::kRunning;
      j.view.requeue = true;
      j.view.nodes = {n.node};
      j.view.start_time = own::ToUnix(kNow) - static_cast<int64_t>(rng() % 86400);
      j.view.admin_comment =
          rng() % 10 == 0 ? "k8s-bridge:preemptible=false" : "k8s-bridge:preemptible=true";
      for (int g = 0; g < gpus; ++g) j.indices.push_back(used + g);
      j.view.gpus_per_node = gpus;
      used += gpus;
      n.jobs.push_back(std::move(j));
    }
    fleet.push_back(std::move(n));
  }
  return fleet;
}

// `count` pending pods of 1, 2 or 8 GPUs; the 8-GPU ones fit no node without preemption.
std::vector<dev::PendingPod> Pending(int count) {
  std::vector<dev::PendingPod> pods;
  for (int i = 0; i < count; ++i) {
    const int64_t gpus = i % 3 == 0 ? 8 : (i % 3 == 1 ? 2 : 1);
    pods.push_back({"ml/infer-" + std::to_string(i), gpus, 1'000'000, ""});
  }
  return pods;
}

// One pass: every node planned, then a give chosen for each pending pod.
void BM_DevicePass(benchmark::State& state) {
  const skb::config::Config cfg = Cfg();
  const std::vector<dev::NodeDevices> fleet = Fleet(static_cast<int>(state.range(0)));
  const std::vector<dev::PendingPod> pending = Pending(static_cast<int>(state.range(1)));
  size_t gives = 0;
  for (auto _ : state) {
    dev::PassPlan p = dev::PlanPass(fleet, pending, cfg, kNow);
    gives = p.gives.size();
    benchmark::DoNotOptimize(p);
  }
  state.counters["gives"] = static_cast<double>(gives);
}
BENCHMARK(BM_DevicePass)
    ->Args({1'000, 0})
    ->Args({1'000, 10})
    ->Args({1'000, 100})
    ->Args({10'000, 10})
    ->Unit(benchmark::kMillisecond);

// One pod that no node can serve: every node's refusal is built for its waiting reason.
void BM_ChooseNodeNoneFits(benchmark::State& state) {
  const skb::config::Config cfg = Cfg();
  const std::vector<dev::NodeDevices> fleet = Fleet(static_cast<int>(state.range(0)));
  dev::PendingPod pod{"ml/too-big", 9, 1'000'000, ""};
  for (auto _ : state) {
    std::string why;
    benchmark::DoNotOptimize(dev::ChooseNode(fleet, pod, cfg, kNow, &why));
    benchmark::DoNotOptimize(why);
  }
}
BENCHMARK(BM_ChooseNodeNoneFits)->Arg(1'000)->Arg(10'000)->Unit(benchmark::kMillisecond);

}  // namespace

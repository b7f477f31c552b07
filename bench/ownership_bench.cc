// SPDX-License-Identifier: Apache-2.0
// The node-ownership core at fleet scale: plan every node of a 10,000-node fleet (steady
// Slurm ownership with up-to-date reservations, and every node mid-lend), and the victim
// ranking the trace simulator and bridgectl call for a demand (issue 8: "victim selection
// decision time").
#include <benchmark/benchmark.h>

#include <random>

#include "src/ownership/ownership.h"
#include "src/ownership/reservation.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/time_codec.h"
#include "src/ownership/victims.h"

namespace {

using skb::Clock;
using skb::inventory::GpuPod;
using skb::inventory::ManagedNode;
namespace own = skb::ownership;

const Clock::TimePoint kNow = own::FromUnix(1'700'000'000);

skb::config::Config Cfg() {
  skb::config::Config cfg;
  cfg.lending.enabled = true;
  cfg.lending.namespace_name = "slurm-bridge";
  return cfg;
}

// `nodes` Slurm-owned nodes with `jobs_per_node` 1-GPU jobs each (a third non-preemptible
// somewhere on 10% of the nodes) and a reservation matching them.
std::vector<ManagedNode> Fleet(int nodes, int jobs_per_node, const skb::config::Config& cfg) {
  std::mt19937 rng(7);
  std::vector<ManagedNode> fleet;
  fleet.reserve(nodes);
  uint32_t next_job = 1;
  for (int i = 0; i < nodes; ++i) {
    ManagedNode n;
    n.name = "gpu-" + std::to_string(i);
    skb::inventory::K8sNode k;
    k.name = n.name;
    k.gpu_capacity = k.gpu_allocatable = 8;
    n.k8s = k;
    skb::slurm::NodeView s;
    s.name = n.name;
    s.base_state = skb::slurm::NodeBaseState::kMixed;
    n.slurm = s;
    const bool protect = rng() % 10 == 0;
    for (int j = 0; j < jobs_per_node; ++j) {
      skb::slurm::JobView job;
      job.job_id = next_job++;
      job.state = skb::slurm::JobState::kRunning;
      job.requeue = true;
      job.gpus_per_node = 1;
      job.user_name = "user" + std::to_string(rng() % 100);
      job.account = "acct" + std::to_string(rng() % 20);
      job.start_time = own::ToUnix(kNow) - static_cast<int64_t>(rng() % 86400);
      job.admin_comment =
          protect && j == 0 ? "k8s-bridge:preemptible=false" : "k8s-bridge:preemptible=true";
      job.nodes = {n.name};
      n.jobs.push_back(std::move(job));
    }
    skb::plan::ReservationSpec spec = own::BuildReservation(n, own::ClassFor(n.jobs, cfg, kNow),
                                                            cfg, kNow - std::chrono::hours(1));
    GpuPod r;
    r.namespace_name = spec.namespace_name;
    r.name = spec.name;
    r.node_name = spec.node;
    r.gpus = spec.gpus;
    r.phase = "Running";
    r.reservation = true;
    r.priority = spec.priority;
    r.labels = spec.labels;
    r.annotations = spec.annotations;
    r.finalizers = spec.finalizers;
    r.priority_class_name = spec.priority_class_name;
    n.pods.push_back(std::move(r));
    fleet.push_back(std::move(n));
  }
  return fleet;
}

void BM_PlanOwnershipSteady(benchmark::State& state) {
  const skb::config::Config cfg = Cfg();
  const std::vector<ManagedNode> fleet = Fleet(static_cast<int>(state.range(0)), 8, cfg);
  size_t actions = 0;
  for (auto _ : state) {
    for (const ManagedNode& n : fleet) actions += own::PlanOwnership(n, cfg, kNow).actions.size();
  }
  benchmark::DoNotOptimize(actions);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["actions_per_round"] =
      static_cast<double>(actions) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PlanOwnershipSteady)->Arg(10'000)->Unit(benchmark::kMillisecond);

void BM_PlanOwnershipLending(benchmark::State& state) {
  const skb::config::Config cfg = Cfg();
  std::vector<ManagedNode> fleet = Fleet(static_cast<int>(state.range(0)), 8, cfg);
  for (ManagedNode& n : fleet) {
    n.pods.front().terminating = true;
    n.pods.front().deletion_time = kNow + std::chrono::minutes(15);
  }
  for (auto _ : state) {
    for (const ManagedNode& n : fleet) {
      benchmark::DoNotOptimize(own::PlanOwnership(n, cfg, kNow));
    }
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PlanOwnershipLending)->Arg(10'000)->Unit(benchmark::kMillisecond);

void BM_PickVictims(benchmark::State& state) {
  std::mt19937 rng(11);
  std::vector<own::VictimCandidate> candidates(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < candidates.size(); ++i) {
    own::VictimCandidate& c = candidates[i];
    c.node = "gpu-" + std::to_string(i);
    c.gpus = 8;
    c.priority = rng() % 3 == 0 ? 1000 : 2000;
    c.reservation_start = kNow - std::chrono::seconds(rng() % 86400);
    for (int j = 0; j < 8; ++j) c.jobs.push_back({1, kNow - std::chrono::seconds(rng() % 86400)});
  }
  const own::VictimOrder order =
      state.range(1) ? own::VictimOrder::kLeastWorkLost : own::VictimOrder::kKubeScheduler;
  for (auto _ : state) {
    benchmark::DoNotOptimize(own::PickVictims(candidates, {8, 100, 100'000}, kNow, order));
  }
}
BENCHMARK(BM_PickVictims)->Args({10'000, 0})->Args({10'000, 1})->Unit(benchmark::kMicrosecond);

}  // namespace

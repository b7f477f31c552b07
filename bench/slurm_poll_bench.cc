// SPDX-License-Identifier: Apache-2.0
// Cost of one Slurm poll by LibSlurmClient against the testbed's slurmctld (needs
// `eval "$(scripts/testbed env)"`): an incremental poll with no change (one RPC answered
// SLURM_NO_CHANGE_IN_DATA) and a full job load with however many jobs slurmctld holds
// (bench/slurm_submit_burst.sh --jobs N fills it). The job count is reported as a counter.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "bridge/slurm/libslurm_client.h"

namespace {

skb::bridge::slurm::LibSlurmClient& Client() {
  static auto* c = new skb::bridge::slurm::LibSlurmClient(
      {.conf = std::getenv("SLURM_CONF") ? std::getenv("SLURM_CONF") : ""});
  return *c;
}

void BM_PollJobsNoChange(benchmark::State& state) {
  auto first = Client().LoadJobs(0);
  if (!first.ok()) {
    state.SkipWithError(first.status().ToString().c_str());
    return;
  }
  state.counters["jobs"] = static_cast<double>(first->items.size());
  int64_t changed = 0;
  for (auto _ : state) {
    auto r = Client().LoadJobs(first->update_time);
    if (r.ok() && r->changed) ++changed;
  }
  state.counters["changed_polls"] = static_cast<double>(changed);
}
BENCHMARK(BM_PollJobsNoChange)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_PollNodesNoChange(benchmark::State& state) {
  auto first = Client().LoadNodes(0);
  if (!first.ok()) {
    state.SkipWithError(first.status().ToString().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(Client().LoadNodes(first->update_time));
}
BENCHMARK(BM_PollNodesNoChange)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_LoadAllJobs(benchmark::State& state) {
  size_t jobs = 0;
  for (auto _ : state) {
    auto r = Client().LoadJobs(0);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    jobs = r->items.size();
  }
  state.counters["jobs"] = static_cast<double>(jobs);
}
BENCHMARK(BM_LoadAllJobs)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// The daemon's quota classification (src/quota/observe.h) at cluster sizes: what one Slurm
// jobs change or GPU pod change costs the QuotaLedger (it reclassifies everything), and what
// one submit-time answer costs the plugin's budget (AdviseSubmit on the held classification).
//
//   build/bench/quota_bench --benchmark_filter=Observe
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/time_codec.h"
#include "src/quota/observe.h"

namespace {

using namespace skb;

// 16 tenants, each with a floor of jobs/16 GPUs-ish; jobs on 8-GPU nodes, half of them
// borrowed; as many GPU pods as jobs / 2, one per node.
struct Cluster {
  config::Config cfg;
  std::vector<slurm::JobView> jobs;
  std::vector<inventory::GpuPod> pods;
  std::set<std::string, std::less<>> managed;
};

Cluster Make(int n_jobs) {
  Cluster c;
  std::string tenants;
  for (int t = 0; t < 16; ++t) {
    tenants += (t ? "," : "") + std::string(R"({"name": "t)") + std::to_string(t) +
               R"(", "slurm_accounts": ["acct)" + std::to_string(t) +
               R"("], "kubernetes_namespaces": ["ns)" + std::to_string(t) +
               R"("], "guaranteed": )" + std::to_string(n_jobs / 4) + "}";
  }
  c.cfg = *config::ParseConfig(R"({"admission": {"preemptible_partitions": ["gpu"]},)"
                               R"( "quotas": {"tenants": [)" +
                               tenants + "]}}");
  for (int i = 0; i < n_jobs; ++i) {
    slurm::JobView j;
    j.job_id = 1000 + i;
    j.account = "acct" + std::to_string(i % 16);
    j.partition = "gpu";
    j.requeue = true;
    j.priority = 1000 + i % 97;
    j.gpus_per_node = 4;
    if (i % 5 == 4) {
      j.state = slurm::JobState::kPending;
    } else {
      j.state = slurm::JobState::kRunning;
      j.nodes = {"node" + std::to_string(i / 2)};
      j.start_time = 1'700'000'000 - i;
    }
    c.jobs.push_back(j);
  }
  for (int i = 0; i < n_jobs / 2; ++i) {
    inventory::GpuPod p;
    p.namespace_name = "ns" + std::to_string(i % 16);
    p.name = "pod-" + std::to_string(i);
    p.node_name = "node" + std::to_string(n_jobs / 2 + i);
    p.gpus = 8;
    p.phase = "Running";
    p.priority = 200000;
    c.pods.push_back(p);
  }
  for (int n = 0; n < n_jobs; ++n) c.managed.insert("node" + std::to_string(n));
  return c;
}

void BM_Observe(benchmark::State& state) {
  Cluster c = Make(static_cast<int>(state.range(0)));
  const Clock::TimePoint now = ownership::FromUnix(1'700'000'000);
  for (auto _ : state) {
    quota::Observation o = quota::Observe(c.cfg, c.jobs, c.pods, c.managed, now);
    benchmark::DoNotOptimize(o);
  }
  state.counters["jobs"] = static_cast<double>(c.jobs.size());
  state.counters["pods"] = static_cast<double>(c.pods.size());
}
BENCHMARK(BM_Observe)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// What the ledger adds to each classification for the planners: the guaranteed jobs and
// the borrowing pending pods (ownership::QuotaFacts), compared with the last ones told.
void BM_QuotaFacts(benchmark::State& state) {
  Cluster c = Make(static_cast<int>(state.range(0)));
  const quota::Observation o =
      quota::Observe(c.cfg, c.jobs, c.pods, c.managed, ownership::FromUnix(1'700'000'000));
  const ownership::QuotaFacts last{.guaranteed_jobs = quota::GuaranteedJobs(o),
                                   .borrowing_pods = quota::BorrowingPendingPods(c.cfg.quotas, o)};
  for (auto _ : state) {
    ownership::QuotaFacts f{.guaranteed_jobs = quota::GuaranteedJobs(o),
                            .borrowing_pods = quota::BorrowingPendingPods(c.cfg.quotas, o)};
    benchmark::DoNotOptimize(f == last);
  }
  state.counters["guaranteed_jobs"] = static_cast<double>(last.guaranteed_jobs.size());
}
BENCHMARK(BM_QuotaFacts)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_AdviseSubmit(benchmark::State& state) {
  Cluster c = Make(static_cast<int>(state.range(0)));
  quota::Observation o =
      quota::Observe(c.cfg, c.jobs, c.pods, c.managed, ownership::FromUnix(1'700'000'000));
  for (auto _ : state) {
    quota::SubmitAdvice a = quota::AdviseSubmit(
        c.cfg.quotas, o.classification, {.account = "acct3", .gpus = 8, .preemptible = false});
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_AdviseSubmit)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

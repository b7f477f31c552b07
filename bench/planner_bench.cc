// SPDX-License-Identifier: Apache-2.0
// The pure core at production scale: merge 10,000 nodes / 100,000 jobs / 50,000 pods into
// one inventory (from vectors; from the loaded store, every node and one) and plan every
// node (targets in the inventory/health issue: full plan < 50 ms CPU, one dirty node
// < 100 µs).
#include <benchmark/benchmark.h>

#include <random>

#include "src/health/node_health.h"
#include "src/inventory/inventory.h"
#include "src/inventory/store.h"

namespace {

using skb::Clock;
using skb::inventory::GpuPod;
using skb::inventory::Inventory;
using skb::inventory::K8sNode;
using skb::inventory::ManagedNode;
using skb::inventory::NodeCondition;
using skb::inventory::Store;

const Clock::TimePoint kNow = Clock::TimePoint{} + std::chrono::hours(24 * 365 * 50);

struct Cluster {
  std::vector<K8sNode> k8s;
  std::vector<skb::slurm::NodeView> slurm;
  std::vector<skb::slurm::JobView> jobs;
  std::vector<GpuPod> pods;
};

// A cluster like a large GPU fleet: realistic labels and conditions on every node, 5% with
// a bad signal, 2% admin-drained, jobs of 1-4 nodes, pods of 1-8 GPUs.
Cluster MakeCluster(int nodes, int jobs, int pods) {
  std::mt19937 rng(42);
  Cluster c;
  for (int i = 0; i < nodes; ++i) {
    std::string name = "gpu-" + std::to_string(i);
    K8sNode k;
    k.name = name;
    k.labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                {"nvidia.com/gpu.count", "8"},
                {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 8)},
                {"kubernetes.io/hostname", name},
                {"slurm-k8s-bridge.io/managed", "true"}};
    k.conditions = {{"Ready", "True", "KubeletReady", "kubelet is posting ready status", kNow},
                    {"MemoryPressure", "False", "KubeletHasSufficientMemory", "", kNow},
                    {"DiskPressure", "False", "KubeletHasNoDiskPressure", "", kNow},
                    {"PIDPressure", "False", "KubeletHasSufficientPID", "", kNow},
                    {"GPUHealthy", i % 20 == 0 ? "False" : "True", "", "XID 79", kNow},
                    {"SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding", kNow},
                    {"SlurmDrained", "False", "NotDrained", "", kNow}};
    k.gpu_capacity = k.gpu_allocatable = 8;
    c.k8s.push_back(std::move(k));
    skb::slurm::NodeView s;
    s.name = name;
    s.base_state = skb::slurm::NodeBaseState::kAllocated;
    if (i % 50 == 1) {
      s.drain = true;
      s.reason = "admin: bad DIMM";
      s.reason_uid = 1000;
    }
    s.gpus = {{"h100", 8}};
    c.slurm.push_back(std::move(s));
  }
  std::uniform_int_distribution<int> node_of(0, nodes - 1), width(1, 4), gpus(1, 8);
  for (int j = 0; j < jobs; ++j) {
    skb::slurm::JobView job;
    job.job_id = static_cast<uint32_t>(j + 1);
    job.state = j % 3 == 0 ? skb::slurm::JobState::kPending : skb::slurm::JobState::kRunning;
    job.requeue = true;
    job.gpus_per_node = gpus(rng);
    int first = node_of(rng), w = width(rng);
    for (int n = 0; n < w; ++n) job.nodes.push_back("gpu-" + std::to_string((first + n) % nodes));
    c.jobs.push_back(std::move(job));
  }
  for (int p = 0; p < pods; ++p) {
    GpuPod pod;
    pod.namespace_name = "inference";
    pod.name = "llm-" + std::to_string(p);
    pod.node_name = "gpu-" + std::to_string(node_of(rng));
    pod.gpus = gpus(rng);
    pod.phase = "Running";
    c.pods.push_back(std::move(pod));
  }
  return c;
}

const Cluster& Big() {
  static const Cluster* c = new Cluster(MakeCluster(10'000, 100'000, 50'000));
  return *c;
}

void BM_BuildInventory(benchmark::State& state) {
  const Cluster& c = Big();
  for (auto _ : state) {
    Inventory inv = Inventory::Build(c.k8s, c.slurm, c.jobs, c.pods, {});
    benchmark::DoNotOptimize(inv);
  }
  state.counters["nodes"] = static_cast<double>(c.k8s.size());
}
BENCHMARK(BM_BuildInventory)->Unit(benchmark::kMillisecond);

// The store the reconciler keeps, loaded with the same cluster.
const Store& BigStore() {
  static const Store* s = [] {
    const Cluster& c = Big();
    auto* store = new Store({}, "example.org/lent-at");
    for (const K8sNode& k : c.k8s) store->UpdateK8sNode(k);
    store->SetSlurmNodes(c.slurm);
    store->SetSlurmJobs(c.jobs);
    for (const GpuPod& p : c.pods) store->UpdatePod(p);
    return store;
  }();
  return *s;
}

// What bridgectl, the metrics and admission build: every node from the store.
void BM_StoreSnapshot(benchmark::State& state) {
  const Store& store = BigStore();
  for (auto _ : state) {
    Inventory inv = store.Snapshot();
    benchmark::DoNotOptimize(inv);
  }
}
BENCHMARK(BM_StoreSnapshot)->Unit(benchmark::kMillisecond);

// What one reconcile merges: one node from the store.
void BM_StoreNode(benchmark::State& state) {
  const Store& store = BigStore();
  for (auto _ : state) {
    ManagedNode n = store.Node("gpu-4000");
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_StoreNode)->Unit(benchmark::kMicrosecond);

void BM_PlanAllNodes(benchmark::State& state) {
  const Cluster& c = Big();
  Inventory inv = Inventory::Build(c.k8s, c.slurm, c.jobs, c.pods, {});
  skb::health::HealthConfig cfg;
  size_t actions = 0;
  for (auto _ : state) {
    actions = 0;
    for (const auto& n : inv.nodes()) actions += PlanNodeHealth(n, cfg, kNow).actions.size();
    benchmark::DoNotOptimize(actions);
  }
  state.counters["nodes"] = static_cast<double>(inv.nodes().size());
  state.counters["actions"] = static_cast<double>(actions);
}
BENCHMARK(BM_PlanAllNodes)->Unit(benchmark::kMillisecond);

void BM_PlanOneDirtyNode(benchmark::State& state) {
  const Cluster& c = Big();
  Inventory inv = Inventory::Build(c.k8s, c.slurm, c.jobs, c.pods, {});
  skb::health::HealthConfig cfg;
  const auto* node = inv.Find("gpu-4000");  // GPUHealthy=False: plans a drain
  for (auto _ : state) {
    const auto* n = inv.Find("gpu-4000");
    auto plan = PlanNodeHealth(*n, cfg, kNow);
    benchmark::DoNotOptimize(plan);
  }
  state.counters["jobs_on_node"] = static_cast<double>(node->jobs.size());
}
BENCHMARK(BM_PlanOneDirtyNode)->Unit(benchmark::kMicrosecond);

}  // namespace

// Memory per cached object in an informer-style cache (key -> shared_ptr<const json>), for
// realistic Nodes and Pods, with and without the bridge's field selection
// (k8s/field_selection.h). Targets (issue 3): <= 2 KB per Node, <= 1 KB per Pod with the
// field selection. Measured by counting heap bytes (malloc_usable_size) allocated while
// filling the cache; reported as "bytes/object" counters, not asserted.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>

#include "k8s/field_selection.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/testdata.h"

namespace {

std::atomic<int64_t> g_live_bytes{0};
// Only while a cache benchmark measures: the watch benchmarks in this executable must not
// pay for the bookkeeping (the daemon does not).
std::atomic<bool> g_counting{false};

}  // namespace

// Counting allocator for this benchmark executable only. GCC flags free() on memory from
// operator new; here operator new itself is malloc, so they match.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  if (g_counting.load(std::memory_order_relaxed))
    g_live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  if (g_counting.load(std::memory_order_relaxed))
    g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace {

using nlohmann::json;
template <typename T>
using CacheOf = std::unordered_map<std::string, std::shared_ptr<const T>>;

std::string NameOf(const json& j) { return j["metadata"]["name"].get<std::string>(); }
std::string NameOf(const skb::k8s::PodInfo& p) { return p.meta.name; }
std::string NameOf(const skb::k8s::NodeInfo& n) { return n.meta.name; }

template <typename MakeObject>
void MeasureCache(benchmark::State& state, MakeObject make) {
  using T = std::decay_t<decltype(make(0))>;
  const int kObjects = 2000;
  double per_object = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // Everything allocated from here on and still live once the cache is built belongs to
    // the cached objects (the inputs are moved into it, their husks freed).
    g_counting = true;
    const int64_t before = g_live_bytes.load();
    std::vector<T> inputs;
    inputs.reserve(kObjects);
    for (int i = 0; i < kObjects; ++i) inputs.push_back(make(i));
    state.ResumeTiming();
    {
      CacheOf<T> cache;
      for (int i = 0; i < kObjects; ++i) {
        std::string key = NameOf(inputs[static_cast<size_t>(i)]);
        cache.emplace(std::move(key),
                      std::make_shared<const T>(std::move(inputs[static_cast<size_t>(i)])));
      }
      inputs.clear();
      inputs.shrink_to_fit();
      per_object = static_cast<double>(g_live_bytes.load() - before) / kObjects;
      g_counting = false;  // whatever was allocated in the window is counted in full
      benchmark::DoNotOptimize(cache);
    }
  }
  state.counters["bytes/object"] = per_object;
}

json Node(int i, bool select) {
  json n = skb::k8s::testdata::RealisticNode();
  n["metadata"]["name"] = "node" + std::to_string(i);
  return select ? skb::k8s::SelectNodeFields(std::move(n)) : n;
}

json Pod(int i, bool select) {
  json p = skb::k8s::testdata::RealisticPod();
  p["metadata"]["name"] = "llm-inference-" + std::to_string(i);
  return select ? skb::k8s::SelectPodFields(std::move(p)) : p;
}

void BM_CachedNodeFull(benchmark::State& s) {
  MeasureCache(s, [](int i) { return Node(i, false); });
}
void BM_CachedNodeSelected(benchmark::State& s) {
  MeasureCache(s, [](int i) { return Node(i, true); });
}
void BM_CachedPodFull(benchmark::State& s) {
  MeasureCache(s, [](int i) { return Pod(i, false); });
}
void BM_CachedPodSelected(benchmark::State& s) {
  MeasureCache(s, [](int i) { return Pod(i, true); });
}
// The alternative of caching typed views instead of JSON (node_info.h / pod_info.h).
void BM_CachedNodeInfo(benchmark::State& s) {
  MeasureCache(s, [](int i) { return *skb::k8s::ParseNode(Node(i, true)); });
}
void BM_CachedPodInfo(benchmark::State& s) {
  MeasureCache(s, [](int i) { return *skb::k8s::ParsePod(Pod(i, true)); });
}
BENCHMARK(BM_CachedNodeInfo)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodInfo)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedNodeFull)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedNodeSelected)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodFull)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodSelected)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

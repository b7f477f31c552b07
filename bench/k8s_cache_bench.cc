// SPDX-License-Identifier: Apache-2.0
// Memory per cached object in an informer-style cache, for realistic Nodes and Pods: as the
// informer keeps them (key -> CompactJson of the bridge's field selection, compact_json.h),
// and the alternatives (key -> shared_ptr<const json> with and without the selection, typed
// views); plus the per-object cost of encoding, decoding and parsing views. Targets (issue 3): <= 2
// KB per Node, <= 1 KB per Pod with the field selection. Measured by counting heap bytes
// (malloc_usable_size) allocated while filling the cache; reported as "bytes/object" counters, not
// asserted.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>

#include "k8s/compact_json.h"
#include "k8s/field_selection.h"
#include "k8s/informer.h"
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

constexpr int kObjects = 2000;

// Makes the inputs with `make` (untimed), then times `fill`, which moves them into a cache
// it returns; reports the heap bytes that cache holds per object.
template <typename MakeObject, typename Fill>
void MeasureCache(benchmark::State& state, MakeObject make, Fill fill) {
  using T = std::decay_t<decltype(make(0))>;
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
      auto cache = fill(inputs);
      inputs.clear();
      inputs.shrink_to_fit();
      per_object = static_cast<double>(g_live_bytes.load() - before) / kObjects;
      g_counting = false;  // whatever was allocated in the window is counted in full
      benchmark::DoNotOptimize(cache);
    }
  }
  state.counters["bytes/object"] = per_object;
}

// key -> shared_ptr<const T>.
template <typename MakeObject>
void MeasureCache(benchmark::State& state, MakeObject make) {
  using T = std::decay_t<decltype(make(0))>;
  MeasureCache(state, make, [](std::vector<T>& inputs) {
    CacheOf<T> cache;
    for (T& obj : inputs) {
      std::string key = NameOf(obj);
      cache.emplace(std::move(key), std::make_shared<const T>(std::move(obj)));
    }
    return cache;
  });
}

// What the informer keeps (informer.h): "namespace/name" -> CompactJson, no shared_ptr.
void MeasureCompactCache(benchmark::State& state, json (*make)(int, bool)) {
  size_t encoded = 0;
  MeasureCache(
      state, [make](int i) { return make(i, true); },
      [&encoded](std::vector<json>& inputs) {
        std::unordered_map<std::string, skb::k8s::CompactJson> cache;
        encoded = 0;
        for (json& obj : inputs) {
          skb::k8s::CompactJson c = skb::k8s::CompactJson::Encode(obj);
          encoded += c.size();
          cache.emplace(skb::k8s::Informer::KeyOf(obj), std::move(c));
          json().swap(obj);
        }
        return cache;
      });
  state.counters["encoding_bytes/object"] = static_cast<double>(encoded) / kObjects;
}

// Distinct name, uid and resourceVersion per object, as in a real cluster (the compact
// encoding shares nothing between objects, so this only matters for honesty).
void Distinct(json& obj, std::string name, int i) {
  std::string n = std::to_string(100000 + i);
  obj["metadata"]["name"] = std::move(name);
  std::string uid = obj["metadata"]["uid"].get<std::string>();
  obj["metadata"]["uid"] = uid.replace(uid.size() - n.size(), n.size(), n);
  obj["metadata"]["resourceVersion"] = std::to_string(48000000 + i);
}

json Node(int i, bool select) {
  json n = skb::k8s::testdata::RealisticNode();
  Distinct(n, "node" + std::to_string(i), i);
  return select ? skb::k8s::SelectNodeFields(std::move(n)) : n;
}

json Pod(int i, bool select) {
  json p = skb::k8s::testdata::RealisticPod();
  Distinct(p, "llm-inference-7d9f8b6c5d-" + std::to_string(10000 + i), i);
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
// What the informer caches now: the selected fields, compactly encoded (compact_json.h).
void BM_CachedNodeCompact(benchmark::State& s) { MeasureCompactCache(s, Node); }
void BM_CachedPodCompact(benchmark::State& s) { MeasureCompactCache(s, Pod); }

// The cost of a read from the compact cache (Informer::Get/List, an update's old object)
// and of writing into it, per object; and the typed view the bridge's handlers then build.
void BM_CompactDecode(benchmark::State& state, bool pod) {
  const skb::k8s::CompactJson c = skb::k8s::CompactJson::Encode(pod ? Pod(1, true) : Node(1, true));
  for (auto _ : state) benchmark::DoNotOptimize(c.Decode());
}
void BM_CompactEncode(benchmark::State& state, bool pod) {
  const json obj = pod ? Pod(1, true) : Node(1, true);
  for (auto _ : state) benchmark::DoNotOptimize(skb::k8s::CompactJson::Encode(obj));
}
void BM_CompactStringAt(benchmark::State& state) {
  const skb::k8s::CompactJson c = skb::k8s::CompactJson::Encode(Pod(1, true));
  for (auto _ : state) benchmark::DoNotOptimize(c.StringAt({"metadata", "resourceVersion"}));
}
void BM_ParseView(benchmark::State& state, bool pod) {
  const json obj = pod ? Pod(1, true) : Node(1, true);
  for (auto _ : state) {
    if (pod) {
      benchmark::DoNotOptimize(skb::k8s::ParsePod(obj));
    } else {
      benchmark::DoNotOptimize(skb::k8s::ParseNode(obj));
    }
  }
}
BENCHMARK_CAPTURE(BM_CompactDecode, pod, true);
BENCHMARK_CAPTURE(BM_CompactDecode, node, false);
BENCHMARK_CAPTURE(BM_CompactEncode, pod, true);
BENCHMARK_CAPTURE(BM_CompactEncode, node, false);
BENCHMARK(BM_CompactStringAt);
BENCHMARK_CAPTURE(BM_ParseView, pod, true);
BENCHMARK_CAPTURE(BM_ParseView, node, false);
BENCHMARK(BM_CachedNodeCompact)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodCompact)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedNodeInfo)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodInfo)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedNodeFull)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedNodeSelected)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodFull)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CachedPodSelected)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// Watch-stream decoding throughput: realistic Pod events (k8s/testdata/pod.json, ~4.5 KB
// each, as the apiserver sends them) through WatchDecoder, fed in 16 KiB chunks like
// libcurl delivers them. Target (issue 3): >= 50k events/s on one core. Measured, not
// asserted; see the "events/s" counter.
#include <benchmark/benchmark.h>

#include <string>

#include "k8s/compact_json.h"
#include "k8s/field_selection.h"
#include "k8s/informer.h"
#include "k8s/json_selection.h"
#include "k8s/testdata.h"
#include "k8s/watch_decoder.h"

namespace {

using nlohmann::json;

// `n` MODIFIED events for distinct pods, newline-delimited.
std::string PodStream(int n) {
  json pod = skb::k8s::testdata::RealisticPod();
  std::string out;
  for (int i = 0; i < n; ++i) {
    pod["metadata"]["name"] = "llm-inference-" + std::to_string(i);
    pod["metadata"]["resourceVersion"] = std::to_string(48213907 + i);
    out += json({{"type", "MODIFIED"}, {"object", pod}}).dump();
    out += '\n';
  }
  return out;
}

void Decode(benchmark::State& state, bool transform, bool selective, bool encode = false) {
  const int kEvents = 1000;
  const std::string stream = PodStream(kEvents);
  int64_t events = 0;
  for (auto _ : state) {
    skb::k8s::WatchDecoder decoder("watch pods", 16u << 20,
                                   selective ? &skb::k8s::JsonSelection::PodWatchEvent() : nullptr);
    size_t kept = 0;
    auto handler = [&](skb::k8s::WatchEvent&& ev) {
      if (transform) {
        json small = skb::k8s::SelectPodFields(std::move(ev.object));
        kept += skb::k8s::Informer::KeyOf(small).size();
        if (encode) kept += skb::k8s::CompactJson::Encode(small).size();
      } else {
        kept += ev.object.size();
      }
      return true;
    };
    for (size_t i = 0; i < stream.size(); i += 16384) {
      auto s = decoder.Feed(std::string_view(stream).substr(i, 16384), handler);
      if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    }
    benchmark::DoNotOptimize(kept);
    events += decoder.events();
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["bytes/event"] = static_cast<double>(stream.size()) / kEvents;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(stream.size()));
}

// Whole objects (nlohmann DOM of every field).
void BM_WatchDecodePodEvents(benchmark::State& state) { Decode(state, false, false); }
// Whole objects, then trimmed by the informer transform.
void BM_WatchDecodePodEventsThenTrim(benchmark::State& state) { Decode(state, true, false); }
// What the bridge's pod informer does: selective decode (JsonSelection) + transform.
void BM_WatchDecodePodEventsSelective(benchmark::State& state) { Decode(state, true, true); }
// ... and encodes the result for the cache, as the informer does (compact_json.h).
void BM_WatchDecodePodEventsSelectiveEncode(benchmark::State& state) {
  Decode(state, true, true, true);
}
BENCHMARK(BM_WatchDecodePodEvents)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WatchDecodePodEventsThenTrim)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WatchDecodePodEventsSelective)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WatchDecodePodEventsSelectiveEncode)->Unit(benchmark::kMillisecond);

}  // namespace

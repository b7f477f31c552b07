// SPDX-License-Identifier: Apache-2.0
#include "k8s/fuzz/watch_fuzz.h"

#include "k8s/api_error.h"
#include "k8s/base64.h"
#include "k8s/event_info.h"
#include "k8s/field_selection.h"
#include "k8s/lease_info.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/quantity.h"
#include "k8s/time_format.h"
#include "k8s/watch_decoder.h"
#include "k8s/yaml_reader.h"

namespace skb::k8s::fuzz {

FuzzResult RunWatchFuzzInput(std::string_view input) {
  FuzzResult r;
  // Small limit so oversized-line handling is reachable.
  WatchDecoder decoder("fuzz", 64 << 10);
  auto handler = [&r](WatchEvent&& ev) {
    ++r.events;
    const nlohmann::json& obj = ev.object;
    r.views_ok += ParseNode(obj).ok();
    r.views_ok += ParsePod(obj).ok();
    r.views_ok += ParseLease(obj).ok();
    r.views_ok += ParseEvent(obj).ok();
    // The transforms must keep what the views read, whatever the input.
    auto node = ParseNode(SelectNodeFields(nlohmann::json(obj)));
    auto pod = ParsePod(SelectPodFields(nlohmann::json(obj)));
    if (pod.ok()) (void)pod->GpuRequest();
    if (node.ok()) (void)node->AllocatableGpus();
    return true;
  };
  const size_t split =
      input.empty() ? 0 : static_cast<unsigned char>(input[0]) % (input.size() + 1);
  Status s = decoder.Feed(input.substr(0, split), handler);
  if (s.ok()) s = decoder.Feed(input.substr(split), handler);
  if (s.ok()) s = decoder.Finish(handler);
  r.stream_ok = s.ok();

  // The informers decode with a selection (only the fields the views read): the same input
  // through that path, which parses differently and looks at "type" first.
  WatchDecoder selected(
      "fuzz-selected", 64 << 10,
      input.size() % 2 ? &JsonSelection::PodWatchEvent() : &JsonSelection::NodeWatchEvent());
  auto count_only = [](WatchEvent&&) { return true; };
  if (selected.Feed(input, count_only).ok()) (void)selected.Finish(count_only);

  // Single-line inputs also go through the other parsers of outside data.
  if (input.size() < 4096) {
    (void)Quantity::Parse(input);
    // Base64 and RFC 3339 times round-trip through their writers.
    if (auto bytes = Base64Decode(input); bytes.ok()) {
      auto again = Base64Decode(Base64Encode(*bytes));
      if (!again.ok() || *again != *bytes) __builtin_trap();
    }
    if (auto t = ParseTime(input); t.ok()) {
      const std::string text = FormatMicroTime(*t);
      // An offset can move the instant out of years 0000-9999, which RFC 3339 cannot write.
      const bool writable = text.size() > 4 && text[0] >= '0' && text[0] <= '9' && text[4] == '-';
      auto again = writable ? ParseTime(text) : t;
      // Micro-precision: what ParseTime kept beyond it is the writer's rounding.
      if (!again.ok() || *again != std::chrono::floor<std::chrono::microseconds>(*t)) {
        __builtin_trap();
      }
    }
    (void)ApiError("fuzz", 500, input, input.substr(0, 8));
    (void)ParseYamlDocument(input);
  }
  return r;
}

}  // namespace skb::k8s::fuzz

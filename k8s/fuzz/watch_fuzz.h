// SPDX-License-Identifier: Apache-2.0
// What the k8s fuzz target exercises, callable from the libFuzzer entry point and from the
// corpus replay unit test: watch-stream decoding (fed in two chunks split at an input-chosen
// point), every typed view and field selection on each decoded object, quantities, the
// kubeconfig YAML subset, base64 and API error bodies.
#pragma once

#include <string_view>

namespace skb::k8s::fuzz {

struct FuzzResult {
  int events = 0;          // watch events decoded
  int views_ok = 0;        // objects a typed view accepted
  bool stream_ok = false;  // the whole input decoded as a watch stream without error
};

FuzzResult RunWatchFuzzInput(std::string_view input);

}  // namespace skb::k8s::fuzz

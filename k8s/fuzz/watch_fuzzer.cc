// SPDX-License-Identifier: Apache-2.0
// libFuzzer entry point (built with -DSKB_FUZZ=ON under clang as k8s_watch_fuzzer; also
// linked into k8s_fuzz_corpus_test, which replays k8s/fuzz/corpus/ with any compiler):
//
//   k8s_watch_fuzzer -max_total_time=60 k8s/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/fuzz/watch_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  skb::k8s::fuzz::RunWatchFuzzInput(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

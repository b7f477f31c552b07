// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the GRES index syntax Slurm prints (`scontrol show job -d`) and the
// device names of a ResourceSlice: arbitrary text must give an error or indices that keep
// the parser's contract, never a crash, a hang or a throw. Built with -DSKB_FUZZ=ON under
// clang as gres_fuzzer; also linked into gres_corpus_test, which replays
// src/devices/fuzz/corpus/ with any compiler:
//
//   gres_fuzzer -max_total_time=60 -max_len=512 src/devices/fuzz/corpus
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string_view>

#include "src/devices/gres.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  skb::StatusOr<std::vector<skb::devices::GresIndices>> entries =
      skb::devices::ParseGresIndices(text);
  if (entries.ok()) {
    for (const skb::devices::GresIndices& g : *entries) {
      // gres.h: indices ascending and distinct, as many as the count says.
      if (static_cast<int64_t>(g.indices.size()) != g.count) std::abort();
      if (std::adjacent_find(g.indices.begin(), g.indices.end(), std::greater_equal<>()) !=
          g.indices.end()) {
        std::abort();
      }
    }
  }
  (void)skb::devices::ParseGpuIndices(text);
  if (std::optional<int64_t> minor = skb::devices::DeviceMinor(text)) {
    if (skb::devices::DeviceName(*minor) != text) std::abort();  // names round-trip
  }
  return 0;
}

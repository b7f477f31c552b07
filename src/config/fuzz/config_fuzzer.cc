// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the daemon's configuration: arbitrary text (a hand-edited ConfigMap)
// goes through ParseConfig, which must return an error or a Config and never crash, hang
// or throw. Built with -DSKB_FUZZ=ON under clang as config_fuzzer; also linked into
// config_corpus_test, which replays src/config/fuzz/corpus/ with any compiler:
//
//   config_fuzzer -max_total_time=60 -max_len=4096 src/config/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/config/config.h"
#include "src/config/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  skb::StatusOr<skb::config::Config> cfg = skb::config::ParseConfig(text);
  // ParseConfig's contract (config.h): a parsed config always names the lending namespace.
  if (cfg.ok() && cfg->lending.namespace_name.empty()) std::abort();
  // Short inputs also go through the duration syntax on its own.
  if (size < 64) (void)skb::config::ParseDuration(text);
  return 0;
}

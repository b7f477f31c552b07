// SPDX-License-Identifier: Apache-2.0
// Replays the checked-in fuzz corpus through the fuzz entry point with the normal compiler
// (and under ASan/UBSan in the sanitizer build), so the parsing paths the corpus covers are
// exercised on every test run even where libFuzzer is not available.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "k8s/fuzz/watch_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace skb::k8s::fuzz {
namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FuzzCorpus, EveryEntryRunsThroughTheEntryPoint) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SKB_K8S_FUZZ_CORPUS)) {
    std::string data = Read(entry.path());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
              0);
    ++files;
  }
  EXPECT_GE(files, 10);
}

// The corpus's named seeds decode as they should, so a parser regression shows up here and
// not only as lost fuzzing coverage.
TEST(FuzzCorpus, SeedsDecodeAsExpected) {
  const std::filesystem::path dir(SKB_K8S_FUZZ_CORPUS);
  FuzzResult pods = RunWatchFuzzInput(Read(dir / "pod_stream"));
  EXPECT_TRUE(pods.stream_ok);
  EXPECT_EQ(pods.events, 3);
  FuzzResult node = RunWatchFuzzInput(Read(dir / "node_modified"));
  EXPECT_TRUE(node.stream_ok);
  EXPECT_EQ(node.events, 1);
  EXPECT_FALSE(RunWatchFuzzInput(Read(dir / "error_410")).stream_ok);
  FuzzResult cut = RunWatchFuzzInput(Read(dir / "truncated"));
  EXPECT_FALSE(cut.stream_ok);
  EXPECT_EQ(cut.events, 1);
  FuzzResult wrong = RunWatchFuzzInput(Read(dir / "wrong_types"));
  EXPECT_TRUE(wrong.stream_ok);
  EXPECT_EQ(wrong.events, 1);
  EXPECT_FALSE(RunWatchFuzzInput(Read(dir / "garbage")).stream_ok);
}

}  // namespace
}  // namespace skb::k8s::fuzz

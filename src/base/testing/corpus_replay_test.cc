// SPDX-License-Identifier: Apache-2.0
// Replays a fuzzer's corpus (SKB_CORPUS_DIR) through its LLVMFuzzerTestOneInput with the
// normal compiler, so every corpus input is checked on every build, fuzzing or not.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

TEST(CorpusReplay, EveryInputIsHandled) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SKB_CORPUS_DIR)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0)
        << entry.path();
    ++files;
  }
  EXPECT_GE(files, 5u) << "corpus " << SKB_CORPUS_DIR << " is missing";
}

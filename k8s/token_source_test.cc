// SPDX-License-Identifier: Apache-2.0
#include "k8s/token_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace skb::k8s {
namespace {

class TokenSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skb-token-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/token";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes atomically (as the kubelet does) with a distinct modification time.
  void WriteToken(const std::string& text, int mtime) {
    std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << text;
    struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, tmp.c_str(), times, 0), 0);
    std::filesystem::rename(tmp, path_);
  }
  std::string dir_;
  std::string path_;
};

TEST_F(TokenSourceTest, StaticToken) {
  TokenSource s("abc", "");
  EXPECT_EQ(*s.Token(), "abc");
}

TEST_F(TokenSourceTest, RereadsARotatedFileAndKeepsTheLastGoodToken) {
  WriteToken("first\n", 1000);
  TokenSource s("ignored-static", path_);
  EXPECT_EQ(*s.Token(), "first");
  WriteToken("second", 2000);
  EXPECT_EQ(*s.Token(), "second");
  std::filesystem::remove(path_);
  EXPECT_EQ(*s.Token(), "second");  // transient absence keeps auth working
  WriteToken("   \n", 3000);
  EXPECT_EQ(*s.Token(), "second");  // an empty file is not a token
}

TEST_F(TokenSourceTest, MissingOrEmptyFileIsAnErrorWithoutAPreviousToken) {
  TokenSource missing("", path_);
  EXPECT_EQ(missing.Token().status().code(), StatusCode::kNotFound);
  WriteToken("\n", 1000);
  TokenSource empty("", path_);
  EXPECT_EQ(empty.Token().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// A fresh directory under /tmp for one test, removed with everything in it when the
// object goes. Short paths on purpose: a Unix socket's path must fit in 107 bytes.
//
//   TempDir dir("skb-unix-server");
//   ASSERT_TRUE(dir.ok());
//   std::string sock = dir.path() + "/bridge.sock";
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace skb::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix) {
    std::string tmpl = "/tmp/" + std::string(prefix) + "-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (ok()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace skb::testing

// Bearer tokens for requests: a fixed string, or a file re-read when it changes (projected
// service-account tokens are rotated by the kubelet, roughly hourly).
#pragma once

#include <chrono>
#include <ctime>
#include <mutex>
#include <string>

#include "src/base/status.h"

namespace skb::k8s {

// Thread-safe.
class TokenSource {
 public:
  // A token file wins when both are given (RestConfig::bearer_token_file).
  TokenSource(std::string token, std::string token_file);

  // The current token ("" when there is none). With a file, its modification time and size
  // are checked on every call (one stat) and the file re-read when they changed, so a rotated
  // token is used from the next request. If a re-read fails the last good token is kept
  // (the kubelet replaces the file atomically; a transient error should not drop auth).
  StatusOr<std::string> Token();

 private:
  const std::string static_token_;
  const std::string file_;
  std::mutex mu_;
  std::string cached_;
  struct timespec mtime_ {};
  long long size_ = -1;
};

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// Bearer tokens for requests: a fixed string, a file re-read when it changes (projected
// service-account tokens are rotated by the kubelet, roughly hourly), or a kubeconfig exec
// credential plugin (exec_credential.h).
#pragma once

#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>

#include "k8s/exec_credential.h"
#include "src/base/status.h"

namespace skb::k8s {

// Thread-safe.
class TokenSource {
 public:
  // A token file wins when both are given (RestConfig::bearer_token_file); `exec`, when not
  // null, wins over both.
  TokenSource(std::string token, std::string token_file,
              std::shared_ptr<ExecCredentialSource> exec = nullptr);

  // The current token ("" when there is none). With a file, its modification time and size
  // are checked on every call (one stat) and the file re-read when they changed, so a rotated
  // token is used from the next request. If a re-read fails the last good token is kept
  // (the kubelet replaces the file atomically; a transient error should not drop auth).
  // With `exec`, the plugin's cached token (running the plugin when there is none).
  StatusOr<std::string> Token();

  // The apiserver answered 401 to a request that carried `token`. With `exec` the token is
  // dropped, so the next Token() runs the plugin again; a static token or a file has nothing
  // better to offer.
  void Unauthorized(const std::string& token);

 private:
  const std::string static_token_;
  const std::string file_;
  const std::shared_ptr<ExecCredentialSource> exec_;
  std::mutex mu_;
  std::string cached_;
  struct timespec mtime_ {};
  long long size_ = -1;
};

}  // namespace skb::k8s

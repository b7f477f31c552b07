// SPDX-License-Identifier: Apache-2.0
// Jittered exponential back-off for reconnects and retries (client-go's wait.Backoff with
// Jitter): initial, doubled after every failure up to max, each delay stretched by a random
// factor in [1, 1 + jitter) so that many clients do not reconnect in lock-step after an
// apiserver restart.
//
//   Backoff b({.initial = 800ms, .max = 30s});
//   while (!Connect().ok()) Sleep(b.Next());
//   b.Reset();  // after a success
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace skb::k8s {

struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds max{std::chrono::seconds(30)};
  double jitter = 0.5;
};

// Not thread-safe: one per retry loop.
class Backoff {
 public:
  explicit Backoff(BackoffOptions options, uint64_t seed = std::random_device{}());

  // The delay to wait before the next attempt.
  std::chrono::milliseconds Next();
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }

 private:
  const BackoffOptions options_;
  std::mt19937_64 rng_;
  int attempt_ = 0;
};

}  // namespace skb::k8s

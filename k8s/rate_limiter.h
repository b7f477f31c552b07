// SPDX-License-Identifier: Apache-2.0
// Client-side request rate limiting: a token bucket of `qps` tokens per second holding at
// most `burst`, as client-go's flowcontrol.NewTokenBucketRateLimiter (defaults 5 / 10).
//
//   TokenBucket bucket(20, 40);
//   auto wait = bucket.Reserve(std::chrono::steady_clock::now());
//   std::this_thread::sleep_for(wait);  // then send the request
#pragma once

#include <chrono>
#include <mutex>

namespace skb::k8s {

// Thread-safe. Time is passed in so the arithmetic is testable without sleeping.
class TokenBucket {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::nanoseconds;

  // qps <= 0 disables limiting (Reserve always returns zero). burst < 1 is treated as 1.
  TokenBucket(double qps, int burst);

  // Takes one token and returns how long the caller must wait before using it (zero when
  // one was available). Reservations queue up: the tenth caller in a burst waits longest.
  Duration Reserve(TimePoint now);

  // Takes a token only if one is available now. Returns whether it did.
  bool TryTake(TimePoint now);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void Refill(TimePoint now);

  const double qps_;
  const int burst_;
  std::mutex mu_;
  double tokens_;  // may go negative: outstanding reservations
  TimePoint last_{};
  bool started_ = false;
};

}  // namespace skb::k8s

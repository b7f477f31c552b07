// SPDX-License-Identifier: Apache-2.0
#include "k8s/rate_limiter.h"

#include <algorithm>

namespace skb::k8s {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(burst, 1)), tokens_(static_cast<double>(std::max(burst, 1))) {}

void TokenBucket::Refill(TimePoint now) {
  if (!started_) {
    started_ = true;
    last_ = now;
    return;
  }
  if (now <= last_) return;
  double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

TokenBucket::Duration TokenBucket::Reserve(TimePoint now) {
  if (qps_ <= 0) return Duration::zero();
  std::lock_guard<std::mutex> lock(mu_);
  Refill(now);
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucket::TryTake(TimePoint now) {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  Refill(now);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

}  // namespace skb::k8s

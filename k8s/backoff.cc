// SPDX-License-Identifier: Apache-2.0
#include "k8s/backoff.h"

#include <algorithm>

namespace skb::k8s {

Backoff::Backoff(BackoffOptions options, uint64_t seed) : options_(options), rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  double base = static_cast<double>(options_.initial.count());
  const double cap = static_cast<double>(options_.max.count());
  for (int i = 0; i < attempt_ && base < cap; ++i) base *= 2;
  base = std::min(base, cap);
  if (attempt_ < 64) ++attempt_;
  double factor = 1.0;
  if (options_.jitter > 0)
    factor += std::uniform_real_distribution<double>(0, options_.jitter)(rng_);
  return std::chrono::milliseconds(static_cast<int64_t>(base * factor));
}

}  // namespace skb::k8s

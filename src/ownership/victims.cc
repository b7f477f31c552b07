// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/victims.h"

#include <algorithm>
#include <chrono>
#include <climits>

namespace skb::ownership {

double WorkLost(const VictimCandidate& c, Clock::TimePoint now) {
  double total = 0;
  for (const JobCost& j : c.jobs) {
    double secs = std::chrono::duration<double>(now - j.start).count();
    if (secs > 0) total += secs * static_cast<double>(j.gpus);
  }
  return total;
}

std::vector<size_t> PickVictims(std::span<const VictimCandidate> candidates, const Demand& demand,
                                Clock::TimePoint now, VictimOrder order) {
  std::vector<size_t> eligible;
  std::vector<double> work(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const VictimCandidate& c = candidates[i];
    if (c.gpus < demand.gpus_per_pod || c.priority >= demand.priority) continue;
    eligible.push_back(i);
    work[i] = WorkLost(c, now);
  }
  auto less = [&](size_t a, size_t b) {
    const VictimCandidate& x = candidates[a];
    const VictimCandidate& y = candidates[b];
    if (x.priority != y.priority) return x.priority < y.priority;
    if (order == VictimOrder::kLeastWorkLost) {
      if (x.gpus != y.gpus) return x.gpus < y.gpus;
      if (work[a] != work[b]) return work[a] < work[b];
    }
    if (x.reservation_start != y.reservation_start) {
      return x.reservation_start > y.reservation_start;
    }
    return x.node < y.node;
  };
  const size_t n = static_cast<size_t>(std::clamp<int64_t>(demand.pods, 0, INT32_MAX));
  if (n < eligible.size()) {
    std::partial_sort(eligible.begin(), eligible.begin() + static_cast<long>(n), eligible.end(),
                      less);
    eligible.resize(n);
  } else {
    std::sort(eligible.begin(), eligible.end(), less);
  }
  return eligible;
}

}  // namespace skb::ownership

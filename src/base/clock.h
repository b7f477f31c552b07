// SPDX-License-Identifier: Apache-2.0
// Time as the core sees it: only through this interface, so that tests drive time by hand.
//
// The real clock lives in bridge/ (the only place allowed to read the wall clock); the
// core and its tests use SimulatedClock, which never moves unless told to.
//
//   skb::SimulatedClock clock(skb::SimulatedClock::TimePoint{});
//   planner.Plan(inventory, clock.Now());
//   clock.Advance(std::chrono::seconds(30));
#pragma once

#include <chrono>
#include <mutex>
#include <optional>

namespace skb {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  // Wall-clock time: comparable with timestamps from Kubernetes and Slurm.
  using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

  virtual ~Clock() = default;
  // Thread-safe.
  virtual TimePoint Now() const = 0;
};

// `*at` becomes the earlier of itself and `t` (nullopt is no time: the other wins). The
// planners' "plan again by then" (recheck_at) gathers its deadlines this way.
inline void KeepEarliest(std::optional<Clock::TimePoint>* at, std::optional<Clock::TimePoint> t) {
  if (t && (!*at || *t < **at)) *at = t;
}

// A clock that moves only when Advance() or Set() is called. Thread-safe.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(TimePoint start) : now_(start) {}

  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void Set(TimePoint t) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = t;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;
};

}  // namespace skb

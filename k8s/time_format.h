// SPDX-License-Identifier: Apache-2.0
// Kubernetes timestamps: metav1.Time ("2026-11-21T10:00:00Z") and metav1.MicroTime
// ("2026-11-21T10:00:00.123456Z"), and the wall clock k8s/ uses when the caller injects none.
#pragma once

#include <string>
#include <string_view>

#include "src/base/clock.h"
#include "src/base/status.h"

namespace skb::k8s {

std::string FormatTime(Clock::TimePoint t);       // seconds, UTC
std::string FormatMicroTime(Clock::TimePoint t);  // microseconds, UTC
// Parses RFC 3339 as Kubernetes writes it (both forms above, and "+01:00" offsets).
// InvalidArgument for anything else.
StatusOr<Clock::TimePoint> ParseTime(std::string_view text);

// std::chrono::system_clock. k8s/ writes timestamps into API objects (Events, Leases), so it
// reads the wall clock; tests inject a SimulatedClock instead.
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override;
  static const Clock* Get();  // a process-wide instance
};

}  // namespace skb::k8s

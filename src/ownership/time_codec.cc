// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/time_codec.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <system_error>

#include "src/base/strings.h"

namespace skb::ownership {

Clock::TimePoint FromUnix(slurm::UnixTime t) {
  // Clock's nanoseconds reach about the year 2262: a stamp beyond (a garbled record) is
  // clamped there, not overflowed.
  constexpr slurm::UnixTime kMax =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::Duration::max()).count() - 1;
  return Clock::TimePoint{} + std::chrono::seconds(std::clamp(t, -kMax, kMax));
}

Clock::TimePoint FromUnixMillis(int64_t ms) {
  constexpr int64_t kMax =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::Duration::max()).count() - 1;
  return Clock::TimePoint{} + std::chrono::milliseconds(std::clamp(ms, -kMax, kMax));
}

int64_t ToUnixMillis(Clock::TimePoint t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

slurm::UnixTime ToUnix(Clock::TimePoint t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

slurm::UnixTime ToUnixRoundedUp(Clock::TimePoint t) {
  return std::chrono::ceil<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::optional<slurm::UnixTime> ParseUnix(std::string_view text) {
  slurm::UnixTime v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

Clock::TimePoint GraceEnds(Clock::TimePoint signalled, Clock::Duration grace) {
  return signalled + std::chrono::seconds(1) + grace;
}

std::string FormatSeconds(Clock::Duration d) {
  return StrCat(std::chrono::duration_cast<std::chrono::seconds>(d).count(), "s");
}

std::string FormatUtc(Clock::TimePoint t) {
  const std::time_t tt = static_cast<std::time_t>(ToUnix(t));
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/time_codec.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <limits>
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

std::optional<slurm::UnixTime> ParseUnix(std::string_view text) {
  slurm::UnixTime v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<Clock::TimePoint> ParseUnixTime(std::string_view text) {
  const size_t dot = text.find('.');
  const std::optional<slurm::UnixTime> seconds = ParseUnix(text.substr(0, dot));
  if (!seconds) return std::nullopt;
  if (dot == std::string_view::npos) return FromUnix(*seconds);
  const std::string_view fraction = text.substr(dot + 1);
  if (fraction.empty() || fraction.size() > 9 ||
      !std::all_of(fraction.begin(), fraction.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t ms = 0;
  for (size_t i = 0; i < 3; ++i) ms = ms * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  // Beyond what milliseconds hold in 64 bits, far beyond the clock's range: clamped as a
  // whole second.
  if (*seconds > std::numeric_limits<int64_t>::max() / 1000 - 1) return FromUnix(*seconds);
  return FromUnixMillis(*seconds * 1000 + ms);
}

std::string FormatUnixMillis(Clock::TimePoint t) {
  const int64_t ms = ToUnixMillis(t);
  int64_t seconds = ms / 1000, rest = ms % 1000;
  if (rest < 0) {  // before 1970: the fraction counts up from the whole second below
    rest += 1000;
    --seconds;
  }
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(rest));
  return StrCat(seconds, fraction);
}

Clock::TimePoint GraceEnds(Clock::TimePoint signalled, bool exact, Clock::Duration grace) {
  return exact ? signalled + grace : signalled + std::chrono::seconds(1) + grace;
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

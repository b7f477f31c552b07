// SPDX-License-Identifier: Apache-2.0
// Kubernetes timestamps written with snprintf over gmtime_r and read by a fixed-width parser
// of our own (timegm does the calendar). Why not a library: C++20's std::chrono::parse is not
// in GCC 12's libstdc++ (Debian 12); its origin (Howard Hinnant's date,
// libhowardhinnant-date-dev) would be one more dependency in every build root for one fixed
// format; strptime reads variable-width fields, no fractions and no "+01:00" before glibc's
// %z, so it would need the same code around it. The fuzz target (k8s/fuzz) checks that
// whatever ParseTime accepts round-trips through FormatMicroTime.
#include "k8s/time_format.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

std::string Format(Clock::TimePoint t, bool micro) {
  auto since = t.time_since_epoch();
  auto secs = std::chrono::floor<std::chrono::seconds>(since);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(since - secs).count();
  std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  if (micro) {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(us));
  } else {
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

}  // namespace

std::string FormatTime(Clock::TimePoint t) { return Format(t, false); }
std::string FormatMicroTime(Clock::TimePoint t) { return Format(t, true); }

Clock::TimePoint SystemClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

const Clock* SystemClock::Get() {
  static const SystemClock clock;
  return &clock;
}

namespace {

bool ReadInt(std::string_view s, size_t pos, size_t len, int* out) {
  if (pos + len > s.size()) return false;
  for (size_t i = pos; i < pos + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, *out);
  return ec == std::errc();
}

}  // namespace

StatusOr<Clock::TimePoint> ParseTime(std::string_view s) {
  auto bad = [&] { return InvalidArgumentError(StrCat("not an RFC 3339 time: '", s, "'")); };
  int year, mon, day, hour, min, sec;
  if (s.size() < 20 || !ReadInt(s, 0, 4, &year) || s[4] != '-' || !ReadInt(s, 5, 2, &mon) ||
      s[7] != '-' || !ReadInt(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
      !ReadInt(s, 11, 2, &hour) || s[13] != ':' || !ReadInt(s, 14, 2, &min) || s[16] != ':' ||
      !ReadInt(s, 17, 2, &sec)) {
    return bad();
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) {
    return bad();
  }
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (s[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return bad();
    for (; digits < 9; ++digits) nanos *= 10;
  }
  int offset_seconds = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!ReadInt(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !ReadInt(s, pos + 4, 2, &om)) {
      return bad();
    }
    offset_seconds = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  return Clock::TimePoint{} + std::chrono::seconds(t - offset_seconds) +
         std::chrono::nanoseconds(nanos);
}

}  // namespace skb::k8s

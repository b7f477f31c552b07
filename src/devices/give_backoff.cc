// SPDX-License-Identifier: Apache-2.0
#include "src/devices/give_backoff.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

// "ns/name/placeholder@unix"; nullopt when malformed.
std::optional<UnusedGive> ParseOne(std::string_view s) {
  const size_t slash = s.rfind('/'), at = s.rfind('@');
  if (slash == std::string_view::npos || at == std::string_view::npos || at < slash ||
      s.substr(0, slash).find('/') == std::string_view::npos) {
    return std::nullopt;
  }
  UnusedGive g{.pod = std::string(s.substr(0, slash))};
  if (!ParseInteger(s.substr(slash + 1, at - slash - 1), &g.placeholder) || g.placeholder == 0 ||
      !ParseInteger(s.substr(at + 1), &g.at_unix) || g.at_unix <= 0) {
    return std::nullopt;
  }
  return g;
}

}  // namespace

std::vector<UnusedGive> ParseUnusedGives(std::string_view annotation) {
  std::vector<UnusedGive> out;
  for (std::string_view entry : StrSplit(annotation, ',', /*skip_empty=*/true)) {
    if (std::optional<UnusedGive> g = ParseOne(StripWhitespace(entry))) out.push_back(*g);
  }
  return out;
}

std::string FormatUnusedGives(const std::vector<UnusedGive>& gives) {
  std::string out;
  for (const UnusedGive& g : gives) {
    StrAppend(&out, out.empty() ? "" : ",", g.pod, "/", g.placeholder, "@", g.at_unix);
  }
  return out;
}

std::optional<std::vector<UnusedGive>> AddUnusedGive(std::vector<UnusedGive> gives,
                                                     const UnusedGive& g, int64_t keep_after) {
  if (std::any_of(gives.begin(), gives.end(),
                  [&](const UnusedGive& x) { return x.placeholder == g.placeholder; })) {
    return std::nullopt;
  }
  std::erase_if(gives, [&](const UnusedGive& x) { return x.at_unix < keep_after; });
  gives.push_back(g);
  if (gives.size() > kMaxUnusedGives) {
    gives.erase(gives.begin(), gives.end() - static_cast<std::ptrdiff_t>(kMaxUnusedGives));
  }
  return gives;
}

std::optional<Clock::TimePoint> BackoffUntil(const std::vector<UnusedGive>& gives,
                                             std::string_view pod, const SharingConfig& cfg,
                                             Clock::TimePoint now) {
  int count = 0;
  int64_t last = 0;
  for (const UnusedGive& g : gives) {
    if (g.pod != pod) continue;
    ++count;
    last = std::max(last, g.at_unix);
  }
  if (count == 0) return std::nullopt;
  Clock::Duration wait = cfg.give_backoff;
  for (int i = 1; i < count && wait < cfg.give_backoff_max; ++i) wait *= 2;
  const Clock::TimePoint from = std::min(ownership::FromUnix(last), now);
  return from + std::min<Clock::Duration>(wait, cfg.give_backoff_max);
}

}  // namespace skb::devices

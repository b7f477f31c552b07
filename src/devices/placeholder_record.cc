// SPDX-License-Identifier: Apache-2.0
#include "src/devices/placeholder_record.h"

#include "src/base/strings.h"

namespace skb::devices {
namespace {

constexpr std::string_view kPrefix = "skb-gpu-hold:v1;";

// The record's token in `comment`: [begin, end), or npos.
std::pair<size_t, size_t> FindToken(std::string_view comment) {
  const size_t begin = comment.find(kPrefix);
  if (begin == std::string_view::npos) return {begin, begin};
  size_t end = comment.find_first_of(" \t\n", begin);
  if (end == std::string_view::npos) end = comment.size();
  return {begin, end};
}

}  // namespace

std::string FormatPlaceholderRecord(const PlaceholderRecord& r) {
  std::string victims;
  for (uint32_t id : r.victims) StrAppend(&victims, victims.empty() ? "" : ",", id);
  return StrCat(kPrefix, "node=", r.node, ";pod=", r.pod, ";gpus=", r.gpus, ";victims=", victims,
                ";signalled=", r.signalled_at,
                r.signalled_at_ms > 0 ? StrCat(";signalled_ms=", r.signalled_at_ms) : "",
                ";returning=", r.returning ? 1 : 0, ";idle=", r.idle_since,
                r.idle_since_ms > 0 ? StrCat(";idle_ms=", r.idle_since_ms) : "",
                r.profile.empty() ? "" : StrCat(";profile=", r.profile),
                r.health.empty() ? "" : StrCat(";health=", r.health, ";slot=", r.slot),
                r.under_job == 0 ? "" : StrCat(";under=", r.under_job));
}

std::string HealthHoldPreemptor(std::string_view node, std::string_view device) {
  return StrCat("health:", node, ":", device);
}

std::string PlaceholderKey(const PlaceholderRecord& r) {
  if (r.health.empty()) return r.pod;
  if (r.under_job != 0) return StrCat("health:", r.node, ":", r.health, ":under:", r.under_job);
  return StrCat("health:", r.node, ":", r.health, ":", r.slot);
}

std::optional<PlaceholderRecord> ParsePlaceholderRecord(std::string_view admin_comment) {
  const auto [begin, end] = FindToken(admin_comment);
  if (begin == std::string_view::npos) return std::nullopt;
  const std::string_view token =
      admin_comment.substr(begin + kPrefix.size(), end - begin - kPrefix.size());
  PlaceholderRecord r;
  bool have_node = false, have_pod = false, have_gpus = false;
  for (std::string_view field : StrSplit(token, ';')) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "node") {
      if (value.empty()) return std::nullopt;
      r.node = std::string(value);
      have_node = true;
    } else if (key == "pod") {
      // Checked below: a health hold names no pod.
      r.pod = std::string(value);
      have_pod = true;
    } else if (key == "gpus") {
      if (!ParseInteger(value, &r.gpus) || r.gpus <= 0) return std::nullopt;
      have_gpus = true;
    } else if (key == "victims") {
      for (std::string_view id : StrSplit(value, ',', /*skip_empty=*/true)) {
        uint32_t v = 0;
        if (!ParseInteger(id, &v) || v == 0) return std::nullopt;
        r.victims.push_back(v);
      }
    } else if (key == "signalled") {
      if (!ParseInteger(value, &r.signalled_at) || r.signalled_at < 0) return std::nullopt;
    } else if (key == "signalled_ms") {
      if (!ParseInteger(value, &r.signalled_at_ms) || r.signalled_at_ms < 0) return std::nullopt;
    } else if (key == "returning") {
      if (value != "0" && value != "1") return std::nullopt;
      r.returning = value == "1";
    } else if (key == "profile") {
      if (value.empty() || value.find_first_of(" ,=:") != std::string_view::npos) {
        return std::nullopt;
      }
      r.profile = std::string(value);
    } else if (key == "idle") {
      if (!ParseInteger(value, &r.idle_since) || r.idle_since < 0) return std::nullopt;
    } else if (key == "idle_ms") {
      if (!ParseInteger(value, &r.idle_since_ms) || r.idle_since_ms < 0) return std::nullopt;
    } else if (key == "health") {
      if (value.empty() || value.find_first_of(" ,=:") != std::string_view::npos) {
        return std::nullopt;
      }
      r.health = std::string(value);
    } else if (key == "slot") {
      if (!ParseInteger(value, &r.slot) || r.slot <= 0) return std::nullopt;
    } else if (key == "under") {
      if (!ParseInteger(value, &r.under_job) || r.under_job == 0) return std::nullopt;
    }
    // Unknown keys: a later version's fields; this one ignores them.
  }
  if (!have_node || !have_pod || !have_gpus) return std::nullopt;
  // A give names its pod ("ns/name"); a health hold names its device and slot, no pod.
  if (r.health.empty() ? r.pod.find('/') == std::string::npos : (!r.pod.empty() || r.slot <= 0)) {
    return std::nullopt;
  }
  if (r.under_job != 0 && r.health.empty()) return std::nullopt;  // a give follows no job
  // The seconds are what every version reads: milliseconds of another second are dropped.
  if (r.signalled_at_ms / 1000 != r.signalled_at) r.signalled_at_ms = 0;
  if (r.idle_since_ms / 1000 != r.idle_since) r.idle_since_ms = 0;
  return r;
}

std::string MergePlaceholderRecord(std::string_view admin_comment, const PlaceholderRecord& r) {
  const auto [begin, end] = FindToken(admin_comment);
  if (begin == std::string_view::npos) {
    return admin_comment.empty() ? FormatPlaceholderRecord(r)
                                 : StrCat(admin_comment, " ", FormatPlaceholderRecord(r));
  }
  return StrCat(admin_comment.substr(0, begin), FormatPlaceholderRecord(r),
                admin_comment.substr(end));
}

}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/internal/records.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {

using inventory::GpuPod;

const std::string* Find(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? nullptr : &it->second;
}

std::optional<Clock::TimePoint> TimeAnnotation(const std::map<std::string, std::string>& m,
                                               std::string_view key, Clock::TimePoint now,
                                               bool* garbled) {
  *garbled = false;
  const std::string* v = Find(m, key);
  if (v == nullptr) return std::nullopt;
  std::optional<Clock::TimePoint> t = ParseUnixTime(*v);
  if (!t || *t > now + kClockSkewAllowance) {
    *garbled = true;
    return now;
  }
  return *t;
}

Clock::TimePoint GraceEnds(const SignalledAt& s, Clock::Duration grace) {
  return ownership::GraceEnds(s.at, s.exact, grace);
}

Signalled ParseSignalled(std::string_view s) {
  Signalled out;
  for (std::string_view e : StrSplit(s, ',', /*skip_empty=*/true)) {
    size_t colon = e.find(':');
    if (colon == std::string_view::npos) continue;
    std::optional<slurm::UnixTime> id = ParseUnix(e.substr(0, colon));
    const std::string_view stamp = e.substr(colon + 1);
    std::optional<Clock::TimePoint> t = ParseUnixTime(stamp);
    if (!id || !t || *id == 0 || *id > UINT32_MAX) continue;
    out[static_cast<uint32_t>(*id)] = {*t, stamp.find('.') != std::string_view::npos};
  }
  return out;
}

std::string FormatSignalled(const Signalled& m) {
  std::string s;
  for (const auto& [id, t] : m) {
    StrAppend(&s, s.empty() ? "" : ",", id, ":",
              t.exact ? FormatUnixMillis(t.at) : StrCat(ToUnix(t.at)));
  }
  return s;
}

std::string JoinIds(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) StrAppend(&s, s.empty() ? "" : ",", id);
  return s;
}

std::string PodName(const GpuPod& p) { return StrCat(p.namespace_name, "/", p.name); }

plan::PodRef Ref(const GpuPod& p) { return {p.namespace_name, p.name, p.uid}; }

bool Terminal(const GpuPod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

const std::string& ReservationNamespace(const config::Config& cfg) {
  return cfg.lending.namespace_name.empty() ? cfg.kubernetes.namespace_name
                                            : cfg.lending.namespace_name;
}

bool IsOurReservation(const GpuPod& p, const std::string& ns) {
  const std::string* role = Find(p.labels, kRoleLabel);
  return p.namespace_name == ns && role != nullptr && *role == kReservationRole;
}

bool HasFinalizer(const GpuPod& p) {
  return std::find(p.finalizers.begin(), p.finalizers.end(), kFinalizer) != p.finalizers.end();
}

bool Released(const GpuPod& p) {
  const std::string* v = Find(p.annotations, kReleasedAnnotation);
  return v != nullptr && *v == "true" && !HasFinalizer(p);
}

bool Replacing(const GpuPod& p) { return Find(p.annotations, kReplacingAnnotation) != nullptr; }

bool HasTaint(const inventory::K8sNode& k, std::string_view key) {
  return std::any_of(k.taints.begin(), k.taints.end(),
                     [&](const inventory::Taint& t) { return t.key == key; });
}

}  // namespace skb::ownership::internal

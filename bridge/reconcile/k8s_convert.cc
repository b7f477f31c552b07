#include "bridge/reconcile/k8s_convert.h"

#include <charconv>
#include <ctime>

#include "src/base/strings.h"

namespace skb::bridge {
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

StatusOr<Clock::TimePoint> ParseRfc3339(std::string_view s) {
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

inventory::K8sNode ToK8sNode(const k8s::NodeInfo& node) {
  inventory::K8sNode k;
  k.name = node.meta.name;
  k.labels = node.meta.labels;
  k.annotations = node.meta.annotations;
  k.unschedulable = node.unschedulable;
  for (const auto& t : node.taints) k.taints.push_back({t.key, t.value, t.effect});
  for (const auto& c : node.conditions) {
    auto t = ParseRfc3339(c.last_transition_time);
    k.conditions.push_back(
        {c.type, c.status, c.reason, c.message, t.ok() ? *t : Clock::TimePoint{}});
  }
  k.gpu_capacity = node.CapacityGpus();
  k.gpu_allocatable = node.AllocatableGpus();
  return k;
}

std::optional<inventory::GpuPod> ToGpuPod(const k8s::PodInfo& pod) {
  int64_t gpus = pod.GpuRequest();
  if (gpus <= 0) return std::nullopt;
  inventory::GpuPod p;
  p.namespace_name = pod.meta.namespace_;
  p.name = pod.meta.name;
  p.node_name = pod.node_name;
  p.gpus = gpus;
  p.phase = pod.phase;
  p.terminating = pod.meta.deleting();
  auto role = pod.meta.labels.find(kRoleLabel);
  p.reservation = role != pod.meta.labels.end() && role->second == kReservationRole;
  p.priority = static_cast<int32_t>(pod.priority.value_or(0));
  return p;
}

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// The standard process metrics every Prometheus client exports (the names client_golang's
// process collector uses), read from /proc at each scrape: prometheus-cpp has no such
// collector.
//
//   process_cpu_seconds_total        user + system CPU time
//   process_resident_memory_bytes    resident set size
//   process_virtual_memory_bytes     virtual memory size
//   process_open_fds                 open file descriptors
//   process_max_fds                  the soft limit on them
//   process_start_time_seconds       start time, seconds since the Unix epoch
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "bridge/observability/metrics.h"

namespace skb::observability {

// The figures of /proc/self/stat that matter here, parsed; nullopt when `stat` is malformed.
struct ProcStat {
  double cpu_seconds = 0;
  uint64_t virtual_bytes = 0;
  uint64_t resident_pages = 0;
  uint64_t start_ticks = 0;  // after boot, in clock ticks
};
std::optional<ProcStat> ParseProcStat(std::string_view stat, long ticks_per_second);

// Registers the families above on `registry` and a collect hook that refreshes them. On a
// system without /proc the values stay 0.
void AddProcessMetrics(Registry* registry);

}  // namespace skb::observability

// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace skb::observability {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Seconds since the epoch at which the system booted ("btime" in /proc/stat), or 0.
uint64_t BootTime() {
  std::istringstream in(ReadFile("/proc/stat"));
  std::string key;
  uint64_t value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

double OpenFds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  double n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view stat, long ticks_per_second) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields after
  // the last ')' are space-separated, state being field 3.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  // fields[0] is field 3 (state): field N is fields[N - 3].
  if (fields.size() < 22) return std::nullopt;
  auto number = [&](int field, uint64_t* out) {
    std::string_view f = fields[static_cast<size_t>(field - 3)];
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
    return ec == std::errc() && p == f.data() + f.size();
  };
  uint64_t utime = 0, stime = 0;
  ProcStat s;
  if (!number(14, &utime) || !number(15, &stime) || !number(22, &s.start_ticks) ||
      !number(23, &s.virtual_bytes) || !number(24, &s.resident_pages)) {
    return std::nullopt;
  }
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
  return s;
}

void AddProcessMetrics(Registry* registry) {
  Counter& cpu = registry->AddCounter("process_cpu_seconds_total",
                                      "Total user and system CPU time spent in seconds.");
  Gauge& rss =
      registry->AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  Gauge& vsize =
      registry->AddGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  Gauge& open_fds = registry->AddGauge("process_open_fds", "Number of open file descriptors.");
  Gauge& max_fds =
      registry->AddGauge("process_max_fds", "Maximum number of open file descriptors.");
  Gauge& start = registry->AddGauge("process_start_time_seconds",
                                    "Start time of the process since unix epoch in seconds.");
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t boot = BootTime();
  // The counter only goes up: each scrape adds what the CPU time grew since the last one.
  auto last_cpu = std::make_shared<double>(0);
  auto mu = std::make_shared<std::mutex>();
  registry->AddCollectHook([=, &cpu, &rss, &vsize, &open_fds, &max_fds, &start] {
    if (std::optional<ProcStat> s = ParseProcStat(ReadFile("/proc/self/stat"), ticks)) {
      {
        std::lock_guard<std::mutex> lock(*mu);
        if (s->cpu_seconds > *last_cpu) {
          cpu.Increment(s->cpu_seconds - *last_cpu);
          *last_cpu = s->cpu_seconds;
        }
      }
      rss.Set(static_cast<double>(s->resident_pages) * static_cast<double>(page));
      vsize.Set(static_cast<double>(s->virtual_bytes));
      if (boot > 0 && ticks > 0) {
        start.Set(static_cast<double>(boot) +
                  static_cast<double>(s->start_ticks) / static_cast<double>(ticks));
      }
    }
    open_fds.Set(OpenFds());
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) max_fds.Set(static_cast<double>(lim.rlim_cur));
  });
}

}  // namespace skb::observability

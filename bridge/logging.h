// spdlog setup for the daemon and bridgectl: one named logger per component ("main", "k8s",
// "slurm", "reconcile", "plugin"), text or JSON lines, level from config or flags.
//
// Messages are structured as `event key=value ...` in text mode; in JSON mode each line is
// one object {"ts":..,"level":..,"logger":..,"msg":..}. Never pass tokens, keys or whole
// kubeconfigs to a logger.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::bridge {

// Configures the default sink and format for every logger created afterwards and for those
// already registered. `level` is one of trace, debug, info, warn, error; `format` is text
// or json. Not thread-safe: call once at startup before other threads log.
Status SetupLogging(std::string_view level, std::string_view format);

// Returns the logger for `component`, creating it with the configured sink. Thread-safe.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

}  // namespace skb::bridge

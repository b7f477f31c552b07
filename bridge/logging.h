// SPDX-License-Identifier: Apache-2.0
// spdlog setup for the daemon and bridgectl: one named logger per component ("main", "k8s",
// "slurm", "reconcile", "plugin"), text or JSON lines, level from config or flags.
//
// Messages are structured as `event key=value key="quoted value" ...`. Text mode prints them
// as they are; in JSON mode each line is one object whose members are the message's parts:
//   {"ts":..,"level":..,"logger":..,"event":"drain","node":"gpu-1","error":"..."}
// with any free text that does not parse as fields in "msg". Never pass tokens, keys or
// whole kubeconfigs to a logger.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::bridge {

// Configures the default sink and format for every logger created afterwards and for those
// already registered. `level` is one of trace, debug, info, warn, error; `format` is text
// or json. Not thread-safe: call once at startup before other threads log.
Status SetupLogging(std::string_view level, std::string_view format);

// The JSON members of one message (see above): "event" for a first word alone or followed
// by a field, one string member per key=value, "msg" for what is left from the first word
// that is neither (so "action drain node=x" is all "msg"). Exposed for tests.
nlohmann::json FieldsOf(std::string_view message);

// The formatter SetupLogging gives the sink: JSON lines or text. Exposed for tests.
std::unique_ptr<spdlog::formatter> MakeFormatter(bool json);

// Returns the logger for `component`, creating it with the configured sink. Thread-safe.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

}  // namespace skb::bridge

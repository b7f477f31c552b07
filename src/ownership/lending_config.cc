// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/lending_config.h"

#include <array>
#include <charconv>
#include <utility>

#include "src/base/strings.h"

namespace skb::ownership {
namespace {

// Linux signal numbers of the signals a job could use to checkpoint.
constexpr std::array<std::pair<std::string_view, int>, 13> kSignals = {{
    {"HUP", 1},
    {"INT", 2},
    {"QUIT", 3},
    {"ABRT", 6},
    {"USR1", 10},
    {"USR2", 12},
    {"ALRM", 14},
    {"TERM", 15},
    {"CONT", 18},
    {"TSTP", 20},
    {"URG", 23},
    {"XCPU", 24},
    {"PWR", 30},
}};

void ReadClass(config::JsonReader& parent, std::string_view key, PriorityClassRef* out) {
  config::JsonReader r = parent.Object(key);
  r.String("name", &out->name);
  int64_t value = out->value;
  r.Int("value", &value, -2'147'483'648LL, 1'000'000'000);
  out->value = static_cast<int32_t>(value);
  // A PriorityClass name is a DNS subdomain.
  if (out->name.empty() || out->name.size() > 253 ||
      out->name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos) {
    r.Fail("name", "must be a PriorityClass name (lowercase letters, digits, '-', '.'; 1-253)");
  }
  parent.Merge(r.Finish());
}

void ReadModes(config::JsonReader& parent, std::string_view key,
               std::map<std::string, plan::JobPreemptMode, std::less<>>* out) {
  config::JsonReader r = parent.Object(key);
  std::map<std::string, std::string> raw;
  Status s = r.StringMap(&raw);
  if (!s.ok()) return parent.Merge(s);
  out->clear();
  for (const auto& [name, text] : raw) {
    StatusOr<plan::JobPreemptMode> mode = ParsePreemptMode(text);
    if (!mode.ok()) return parent.Fail(StrCat(key, ".", name), mode.status().message());
    out->emplace(name, *mode);
  }
}

}  // namespace

std::chrono::milliseconds ReservationGrace(const LendingConfig& l) {
  return l.max_grace + l.release_timeout + l.outage_allowance;
}

std::string SignalName(int number) {
  for (const auto& [n, value] : kSignals) {
    if (value == number) return StrCat("SIG", n);
  }
  return StrCat("signal ", number);
}

StatusOr<int> ParseSignal(std::string_view text) {
  std::string_view name = text;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  if (name == "KILL" || name == "STOP" || text == "9" || text == "19") {
    return InvalidArgumentError(
        StrCat("signal '", text, "' cannot be caught, so a job could not checkpoint on it"));
  }
  for (const auto& [n, number] : kSignals) {
    if (n == name) return number;
  }
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc() && end == text.data() + text.size() && number >= 1 && number <= 64) {
    return number;
  }
  return InvalidArgumentError(
      StrCat("'", text, "' is not a signal (a name such as USR1 or SIGUSR1, or 1-64)"));
}

StatusOr<plan::JobPreemptMode> ParsePreemptMode(std::string_view text) {
  if (text == "requeue") return plan::JobPreemptMode::kRequeue;
  if (text == "requeue_hold") return plan::JobPreemptMode::kRequeueHold;
  if (text == "cancel") return plan::JobPreemptMode::kCancel;
  if (text == "suspend") {
    return InvalidArgumentError(
        "'suspend' is not supported: a suspended job keeps its GPU memory and allocation, so "
        "its node could never be handed to Kubernetes; use requeue, requeue_hold or cancel");
  }
  return InvalidArgumentError(
      StrCat("'", text, "' is not a preemption mode (requeue, requeue_hold, cancel)"));
}

Status ReadLendingConfig(config::JsonReader r, LendingConfig* out) {
  using std::chrono::milliseconds;
  r.Bool("enabled", &out->enabled);
  r.String("namespace", &out->namespace_name);
  r.String("name_pattern", &out->name_pattern);
  r.String("image", &out->image);
  r.String("gpu_resource", &out->gpu_resource);
  if (!out->namespace_name.empty() &&
      (out->namespace_name.size() > 63 ||
       out->namespace_name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") !=
           std::string::npos)) {
    r.Fail("namespace", "must be a DNS label of 1 to 63 characters (or empty)");
  }
  const size_t at = out->name_pattern.find("{node}");
  if (at == std::string::npos) {
    r.Fail("name_pattern", "must contain {node}");
  } else {
    std::string rest = out->name_pattern;
    rest.erase(at, 6);
    if (rest.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos ||
        rest.size() > 200) {
      r.Fail("name_pattern", "may only add lowercase letters, digits, '-' and '.' to {node}");
    }
  }
  if (out->image.empty()) r.Fail("image", "must name a container image");
  r.String("release_url", &out->release_url);
  // It is written into the reservation's shell script: a URL of plain characters only.
  if (!out->release_url.empty() &&
      (!out->release_url.starts_with("http://") || out->release_url.size() > 200 ||
       out->release_url.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789.:/_-") != std::string::npos)) {
    r.Fail("release_url",
           "must be an http:// URL of at most 200 letters, digits and '.:/_-' (the bridge's "
           "HTTP address and /reservation-released), or empty");
  }
  if (out->gpu_resource.empty() || out->gpu_resource.find('/') == std::string::npos) {
    r.Fail("gpu_resource", "must be an extended resource name such as nvidia.com/gpu");
  } else if (out->gpu_resource != kSupportedGpuResource) {
    // Every reader of GPU counts (pods' requests, nodes' allocatable, the inventory) reads
    // nvidia.com/gpu: a reservation requesting anything else would be invisible to the
    // bridge itself, and a preemption of it would never drain Slurm.
    r.Fail("gpu_resource", StrCat("only ", kSupportedGpuResource,
                                  " is supported (the bridge counts GPUs of pods and nodes "
                                  "by that name)"));
  }

  config::JsonReader classes = r.Object("priority_classes");
  ReadClass(classes, "idle", &out->idle_class);
  ReadClass(classes, "preemptible", &out->preemptible_class);
  ReadClass(classes, "protected", &out->protected_class);
  r.Merge(classes.Finish());
  int64_t threshold = out->inference_threshold;
  r.Int("inference_threshold", &threshold, -2'147'483'648LL, 1'000'000'000);
  out->inference_threshold = static_cast<int32_t>(threshold);
  if (!(out->idle_class.value < out->preemptible_class.value &&
        out->preemptible_class.value < out->inference_threshold &&
        out->inference_threshold < out->protected_class.value)) {
    r.Fail("priority_classes",
           "values must rise strictly: idle < preemptible < inference_threshold < protected");
  }
  if (out->idle_class.name == out->preemptible_class.name ||
      out->idle_class.name == out->protected_class.name ||
      out->preemptible_class.name == out->protected_class.name) {
    r.Fail("priority_classes", "the three classes need distinct names");
  }

  std::string signal;
  r.String("checkpoint_signal", &signal);
  if (!signal.empty()) {
    StatusOr<int> number = ParseSignal(signal);
    if (number.ok()) {
      out->checkpoint_signal = *number;
    } else {
      r.Fail("checkpoint_signal", number.status().message());
    }
  }
  r.Duration("default_grace", &out->default_grace);
  r.Duration("max_grace", &out->max_grace);
  r.Duration("release_timeout", &out->release_timeout);
  r.Duration("outage_allowance", &out->outage_allowance);
  if (out->max_grace > std::chrono::hours(24)) r.Fail("max_grace", "must be at most 24h");
  if (out->default_grace > out->max_grace) {
    r.Fail("default_grace", "must not be longer than max_grace");
  }
  if (out->release_timeout < std::chrono::seconds(30)) {
    r.Fail("release_timeout", "must be at least 30s (Slurm's requeue and epilog take time)");
  }
  if (out->outage_allowance > std::chrono::hours(24 * 7)) {
    r.Fail("outage_allowance", "must be at most 168h");
  }

  config::JsonReader preemption = r.Object("preemption");
  std::string mode(plan::JobPreemptModeName(out->default_mode));
  preemption.String("default", &mode);
  if (StatusOr<plan::JobPreemptMode> m = ParsePreemptMode(mode); m.ok()) {
    out->default_mode = *m;
  } else {
    preemption.Fail("default", m.status().message());
  }
  ReadModes(preemption, "partitions", &out->partition_modes);
  ReadModes(preemption, "qos", &out->qos_modes);
  r.Merge(preemption.Finish());

  r.Duration("cooldown", &out->cooldown);
  r.Duration("min_lend_time", &out->min_lend_time);
  config::JsonReader anti = r.Object("anti_thrash");
  anti.Int("max_preemptions", &out->max_preemptions, 0, 1000);
  anti.Duration("window", &out->preemption_window);
  r.Merge(anti.Finish());
  r.Duration("reservation_update_interval", &out->reservation_update_interval);
  r.Duration("class_upgrade_delay", &out->class_upgrade_delay);
  r.Duration("class_downgrade_delay", &out->class_downgrade_delay);
  if (out->reservation_update_interval < std::chrono::seconds(1)) {
    r.Fail("reservation_update_interval", "must be at least 1s");
  }
  return r.Finish();
}

}  // namespace skb::ownership

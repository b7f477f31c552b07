// SPDX-License-Identifier: Apache-2.0
#include "k8s/logger.h"

#include <mutex>

namespace skb::k8s {

std::shared_ptr<spdlog::logger> Logger() {
  if (auto existing = spdlog::get("k8s")) return existing;
  // Serialise creation so two threads do not both try to register "k8s".
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get("k8s")) return existing;
  auto def = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("k8s", def->sinks().begin(), def->sinks().end());
  logger->set_level(def->level());
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    // Registered concurrently by someone not holding our mutex (the daemon's setup).
    if (auto existing = spdlog::get("k8s")) return existing;
  }
  return logger;
}

}  // namespace skb::k8s

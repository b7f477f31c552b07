// SPDX-License-Identifier: Apache-2.0
// slurm-k8s-bridge: the daemon's process. What belongs to a process only -- flags, the config
// file, logging, signals, the exit status -- is here; the daemon itself is bridge/daemon.h.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bridge/action_hooks.h"
#include "bridge/daemon.h"
#include "bridge/daemon_flags.h"
#include "bridge/decommission/decommission_runner.h"
#include "bridge/logging.h"
#include "bridge/version.h"
#include "src/config/config.h"
#include "src/quota/quota.h"

namespace {

constexpr char kQuotasWithoutLending[] =
    "quotas: lending.enabled is false: guarantees are reported, not enforced (the bridge "
    "takes no GPUs back from Slurm for another tenant, and submit-time advice refuses nothing)";

skb::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return skb::FailedPreconditionError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Fail(int code, std::string_view message) {
  std::fprintf(stderr, "slurm-k8s-bridge: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return code;
}

int Run(int argc, char** argv) {
  auto flags = skb::bridge::ParseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!flags.ok()) return Fail(2, flags.status().message());
  if (flags->help) {
    std::fputs(skb::bridge::DaemonUsage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("slurm-k8s-bridge %s (built against Slurm %s)\n", skb::bridge::kVersion,
                skb::bridge::kSlurmVersion);
    return 0;
  }
  if (flags->print_config_schema) {
    std::printf("%s\n", skb::config::ConfigSchema().dump(2).c_str());
    return 0;
  }
  std::string text = "{}";
  if (!flags->config_path.empty()) {
    auto read = ReadFile(flags->config_path);
    if (!read.ok()) return Fail(2, read.status().message());
    text = *read;
  }
  auto cfg = skb::config::ParseConfig(text);
  if (!cfg.ok()) {
    return Fail(2, (flags->config_path.empty() ? "" : flags->config_path + ": ") +
                       std::string(cfg.status().message()));
  }
  if (!flags->log_level.empty()) cfg->logging.level = flags->log_level;
  if (!flags->log_format.empty()) cfg->logging.format = flags->log_format;
  if (auto s = skb::bridge::SetupLogging(cfg->logging.level, cfg->logging.format); !s.ok()) {
    return Fail(2, s.message());
  }
  // What the reader noticed in the file (a missing apiVersion); nothing without a file.
  if (flags->config_path.empty()) cfg->notices.clear();
  if (flags->check_config) {
    for (const std::string& notice : cfg->notices) std::printf("notice: %s\n", notice.c_str());
    std::printf(
        "config OK: apiVersion=%s namespace=%s node_selector=%s slurm.poll_interval=%lldms "
        "socket=%s http=%s\n",
        cfg->api_version.c_str(), cfg->kubernetes.namespace_name.c_str(),
        cfg->kubernetes.node_selector.c_str(),
        static_cast<long long>(cfg->slurm.poll_interval.count()), cfg->server.socket_path.c_str(),
        cfg->server.http_address.c_str());
    for (const std::string& line : skb::quota::DescribeQuotaConfig(cfg->quotas)) {
      std::printf("%s\n", line.c_str());
    }
    if (cfg->quotas.enabled() && !cfg->lending.enabled) std::printf("%s\n", kQuotasWithoutLending);
    return 0;
  }
  if (flags->decommission) {
    return skb::bridge::decommission::DecommissionMain(*cfg, flags->dry_run, flags->force);
  }
  auto hooks =
      skb::bridge::ActionHooksFromEnvironment([](const char* name) { return std::getenv(name); });
  if (!hooks.ok()) return Fail(2, hooks.status().message());

  // Block the shutdown signals before any thread starts, then wait for them here.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto log = skb::bridge::Logger("main");
  log->info(
      "starting version={} slurm_abi={} namespace={} node_selector=\"{}\" "
      "slurm_poll={}ms",
      skb::bridge::kVersion, skb::bridge::kSlurmVersion, cfg->kubernetes.namespace_name,
      cfg->kubernetes.node_selector, cfg->slurm.poll_interval.count());
  for (const std::string& notice : cfg->notices) {
    log->warn("config_notice file=\"{}\" notice=\"{}\"", flags->config_path, notice);
  }
  auto daemon =
      skb::bridge::Daemon::Create({.config = *std::move(cfg),
                                   .leader_election = flags->leader_election,
                                   .identity = flags->identity,
                                   .hooks = *std::move(hooks),
                                   // A leader that lost the Lease stops at once; its supervisor
                                   // restarts it as a follower.
                                   .on_lost_leadership = [] { kill(getpid(), SIGTERM); }});
  if (!daemon.ok()) {
    log->error("startup_failed error=\"{}\"", daemon.status().message());
    return 2;
  }
  if (auto s = (*daemon)->Start(); !s.ok()) {
    log->error("startup_failed error=\"{}\"", s.ToString());
    return 1;
  }
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      log->info("sighup: configuration reload needs a restart (the daemon is stateless)");
      continue;
    }
    log->info("stopping signal={}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    break;
  }
  (*daemon)->Stop();
  log->info("stopped");
  return (*daemon)->lost_leadership() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

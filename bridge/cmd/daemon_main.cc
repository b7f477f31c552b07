// slurm-k8s-bridge: the daemon. Thin wiring only; everything testable lives in libraries.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <pwd.h>

#include <memory>

#include "bridge/daemon_flags.h"
#include "bridge/logging.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/plugin_server/unix_server.h"
#include "bridge/slurm/libslurm_client.h"
#include "bridge/slurm/slurm_poller.h"
#include "bridge/version.h"
#include "src/admission/admission.h"
#include "src/config/config.h"

namespace {

skb::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return skb::FailedPreconditionError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Run(int argc, char** argv) {
  auto flags = skb::bridge::ParseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!flags.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(skb::bridge::DaemonUsage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("slurm-k8s-bridge %s (built against Slurm %s)\n", skb::bridge::kVersion,
                skb::bridge::kSlurmVersion);
    return 0;
  }
  std::string text = "{}";
  if (!flags->config_path.empty()) {
    auto read = ReadFile(flags->config_path);
    if (!read.ok()) {
      std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(read.status().message()).c_str());
      return 2;
    }
    text = *read;
  }
  auto cfg = skb::config::ParseConfig(text);
  if (!cfg.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s%s\n",
                 flags->config_path.empty() ? "" : (flags->config_path + ": ").c_str(),
                 std::string(cfg.status().message()).c_str());
    return 2;
  }
  if (!flags->log_level.empty()) cfg->logging.level = flags->log_level;
  if (!flags->log_format.empty()) cfg->logging.format = flags->log_format;
  if (auto s = skb::bridge::SetupLogging(cfg->logging.level, cfg->logging.format); !s.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto log = skb::bridge::Logger("main");
  if (flags->check_config) {
    std::printf("config OK: namespace=%s node_selector=%s slurm.poll_interval=%lldms "
                "socket=%s http=%s\n",
                cfg->kubernetes.namespace_name.c_str(), cfg->kubernetes.node_selector.c_str(),
                static_cast<long long>(cfg->slurm.poll_interval.count()),
                cfg->server.socket_path.c_str(), cfg->server.http_address.c_str());
    return 0;
  }

  // Block the shutdown signals before any thread starts, then wait for them here.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  log->info("starting version={} slurm_abi={} namespace={} node_selector=\"{}\" "
            "slurm_poll={}ms",
            skb::bridge::kVersion, skb::bridge::kSlurmVersion, cfg->kubernetes.namespace_name,
            cfg->kubernetes.node_selector, cfg->slurm.poll_interval.count());

  // Admission answers come from a snapshot the Slurm poller refreshes; until the first
  // poll the daemon accepts (and annotates) every job.
  skb::bridge::AdmissionService admission(skb::admission::Policy{
      .preemptible_partitions = cfg->admission.preemptible_partitions,
      .preemptible_qos = cfg->admission.preemptible_qos,
      .reject_unknown_features = cfg->admission.reject_unknown_features});
  skb::bridge::UnixServer::Options server_opts{.path = cfg->server.socket_path};
  if (!cfg->server.client_user.empty()) {
    const passwd* pw = getpwnam(cfg->server.client_user.c_str());
    if (pw == nullptr) {
      log->error("config_error key=server.client_user error=\"no such user '{}'\"",
                 cfg->server.client_user);
      return 2;
    }
    server_opts.owner_uid = pw->pw_uid;
    server_opts.allowed_uids.insert(pw->pw_uid);
  }
  skb::bridge::UnixServer server(server_opts, [&](std::string_view frame, uint32_t pid) {
    return admission.HandleFrame(frame, pid);
  });
  if (auto s = server.Start(); !s.ok()) {
    log->error("socket_failed error=\"{}\"", s.ToString());
    return 1;
  }
  skb::bridge::slurm::LibSlurmClient slurm_client({.conf = cfg->slurm.conf,
                                                   .call_timeout = cfg->slurm.call_timeout});
  skb::bridge::slurm::SlurmPoller poller(
      &slurm_client, cfg->slurm.poll_interval,
      [&](const std::vector<skb::slurm::NodeView>& nodes,
          const std::vector<skb::slurm::PartitionView>& partitions) {
        std::string default_partition;
        for (const auto& p : partitions) {
          if (p.is_default) default_partition = p.name;
        }
        admission.Publish(skb::admission::InventoryFromSlurm(nodes, default_partition));
        skb::bridge::Logger("slurm")->info("snapshot_published nodes={} partitions={}",
                                           nodes.size(), partitions.size());
      });
  poller.Start();

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
  poller.Stop();
  server.Stop();
  log->info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

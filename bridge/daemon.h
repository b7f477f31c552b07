// SPDX-License-Identifier: Apache-2.0
// The daemon as a library: everything slurm-k8s-bridge's main wires together, so that the
// whole process (clients, metrics, the controller, the plugin/bridgectl socket, the HTTP
// endpoints) starts and stops in a unit test on in-memory Slurm and Kubernetes
// (bridge/daemon_test.cc) exactly as it does in production.
//
//   ASSIGN_OR_RETURN(auto daemon, Daemon::Create({.config = *cfg, .identity = id}));
//   RETURN_IF_ERROR(daemon->Start());   // socket, controller, then HTTP
//   ...                                 // wait for SIGTERM
//   daemon->Stop();                     // HTTP, controller (releases the Lease), socket
//
// main (bridge/cmd/daemon_main.cc) keeps what belongs to a process: flags, reading the
// config file, logging set-up, signals and the exit status.
//
// Thread-safe: Start and Stop from one thread; the accessors from any.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/action_hooks.h"
#include "bridge/controller.h"
#include "bridge/observability/bridge_metrics.h"
#include "bridge/observability/http_server.h"
#include "bridge/observability/metrics.h"
#include "bridge/plugin_server/inventory_queries.h"
#include "bridge/plugin_server/quota_queries.h"
#include "bridge/plugin_server/unix_server.h"
#include "bridge/slurm/slurm_client.h"
#include "k8s/kube_client.h"
#include "k8s/observed_kube_client.h"
#include "src/base/clock.h"
#include "src/config/config.h"

namespace skb::bridge {

struct DaemonOptions {
  config::Config config;
  // Leader election on the configured Lease; off for a single replica.
  bool leader_election = true;
  // This replica's name in the Lease; empty: DefaultIdentity().
  std::string identity;
  ActionHooks hooks;
  // Called once, on the elector's thread, when this replica stops leading (acting has
  // stopped already). main sends itself SIGTERM: a replica that lost the Lease exits and
  // comes back as a follower.
  std::function<void()> on_lost_leadership;

  // Seams for tests. Null: built from the config (its kubeconfig, else $KUBECONFIG merged,
  // else ~/.kube/config, else in-cluster; libslurm on slurm.conf; the system clock). A
  // given `kube` serves all three of the daemon's client roles (actions, Events, the
  // Lease), which otherwise have rate limits of their own.
  k8s::KubeClient* kube = nullptr;
  slurm::SlurmClient* slurm = nullptr;
  const Clock* clock = nullptr;
};

// $POD_NAME, else <hostname>-<pid>.
std::string DefaultIdentity();

class Daemon {
 public:
  // Builds the clients, metrics and controller; starts nothing. FailedPrecondition for a
  // kubeconfig that cannot be loaded, InvalidArgument for an unknown server.client_user.
  static StatusOr<std::unique_ptr<Daemon>> Create(DaemonOptions options);
  ~Daemon();  // Stop()s

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The socket first (the plugin is answered, fail-open, from the first poll on), then the
  // controller, then /metrics, /healthz and /readyz. An error leaves nothing running.
  Status Start();
  // Idempotent.
  void Stop();

  // The HTTP port bound (server.http_address may name port 0); 0 without an HTTP server.
  uint16_t http_port() const;
  bool lost_leadership() const { return lost_leadership_; }
  Controller& controller() { return *controller_; }
  // /metrics' registry: every family, as the scrape would render it.
  std::string RenderMetrics();

 private:
  explicit Daemon(DaemonOptions options);
  Status Build();
  // The scrape-time feed: gauges of the current state and the growth of totals kept
  // elsewhere (informers, the Event recorder, the plugin's counters, the socket).
  void Collect();
  // Exports the growth of a total kept elsewhere since the last scrape (a total that went
  // backwards, as after a restart of its source, adds nothing).
  double Growth(const std::string& key, uint64_t total);

  DaemonOptions opts_;
  const config::Config& cfg_ = opts_.config;
  std::unique_ptr<k8s::KubeClient> own_kube_[3];  // actions, Events, Lease (unless given)
  std::unique_ptr<slurm::SlurmClient> own_slurm_;
  std::unique_ptr<Clock> own_clock_;
  observability::Registry registry_;
  std::unique_ptr<observability::BridgeMetrics> metrics_;
  std::unique_ptr<k8s::ObservedKubeClient> observed_[3];
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<InventoryQueries> queries_;
  std::unique_ptr<QuotaQueries> quota_queries_;
  std::unique_ptr<UnixServer> server_;
  std::unique_ptr<observability::HttpServer> http_;
  // civetweb answers concurrent scrapes on several threads: the collect hook runs under
  // collect_mu_, which guards Growth's last totals.
  std::mutex collect_mu_;
  std::map<std::string, uint64_t> exported_;
  // Node -> the owner of its exported skb_node_owner_since_timestamp_seconds series.
  std::map<std::string, std::string> exported_owners_;
  std::atomic<bool> lost_leadership_{false};
};

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// The bridge's configuration: one JSON document (mounted from a ConfigMap in the chart),
// validated at start with errors that name the key and the problem.
//
// Every option, its default and its meaning are listed in README.md ("Configuration"); keep the
// two in step. Unknown keys are errors, so a typo never silently falls back to a default.
//
//   StatusOr<skb::config::Config> cfg = skb::config::ParseConfig(text);
//   if (!cfg.ok()) { /* print cfg.status().message() and exit 2 */ }
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/devices/sharing_config.h"
#include "src/health/health_config.h"
#include "src/inventory/node_names.h"
#include "src/ownership/lending_config.h"
#include "src/plan/features.h"
#include "src/quota/quota.h"

namespace skb::config {

struct LoggingConfig {
  std::string level = "info";   // trace, debug, info, warn, error
  std::string format = "text";  // text or json
};

struct KubernetesConfig {
  // Path to a kubeconfig; empty means in-cluster config (service-account token), falling
  // back to $KUBECONFIG.
  std::string kubeconfig;
  // Namespace for the bridge's own objects (reservation pods, Lease, Events on pods).
  std::string namespace_name = "slurm-bridge";
  // Label selector choosing the GPU nodes the bridge manages.
  std::string node_selector = "slurm-k8s-bridge.io/managed=true";
  double qps = 20;
  int64_t burst = 40;
  // How Kubernetes node names pair with Slurm's (src/inventory/node_names.h); identity by
  // default.
  inventory::NodeNameMap node_names;
};

struct SlurmConfig {
  // slurm.conf to load; empty means libslurm's default ($SLURM_CONF or the compiled path).
  std::string conf;
  // How often Slurm is polled for node and job changes (an unchanged poll is cheap).
  std::chrono::milliseconds poll_interval{500};
  // How often nodes, partitions and jobs are read whole whatever slurmctld's change stamps
  // say (they count whole seconds and can miss a change; 0 disables).
  std::chrono::milliseconds resync_interval{10000};
  // Hard time budget for one libslurm call before it is reported Unavailable.
  std::chrono::milliseconds call_timeout{5000};
};

struct ServerConfig {
  // Unix socket the job_submit plugin and bridgectl talk to.
  std::string socket_path = "/run/slurm-k8s-bridge/bridge.sock";
  // host:port for /metrics, /healthz, /readyz. Empty disables the HTTP listener.
  std::string http_address = "127.0.0.1:9464";
  // The user slurmctld runs as (SlurmUser). When set, the socket (mode 0600) is chowned to
  // this user and peers with its uid are accepted; root and the daemon's own uid are always
  // accepted. Chowning to another user needs CAP_CHOWN, which the systemd unit and the chart
  // do not grant: there the daemon runs as SlurmUser itself and the start fails on any other
  // client_user. Empty: only root and the daemon's uid.
  std::string client_user;
};

// Leader election among replicas (client-go semantics: k8s/leader_elector.h). The Lease lives in
// kubernetes.namespace. Shorter timings fail over faster at the cost of more Lease writes.
struct LeaderElectionConfig {
  std::string lease_name = "slurm-k8s-bridge";
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// Admission of Slurm jobs at submit time (the job_submit plugin asks the daemon).
struct AdmissionConfig {
  // A job is annotated preemptible=true when its QOS is in preemptible_qos, or when every
  // partition it may run in is in preemptible_partitions.
  std::vector<std::string> preemptible_partitions;
  std::vector<std::string> preemptible_qos;
  // Reject a --constraint that names a feature no node of the job's partitions has.
  bool reject_unknown_features = true;
};

struct Config {
  LoggingConfig logging;
  KubernetesConfig kubernetes;
  SlurmConfig slurm;
  ServerConfig server;
  LeaderElectionConfig leader_election;
  AdmissionConfig admission;
  health::HealthConfig health;
  plan::FeaturesConfig features = plan::FeaturesConfig::Defaults();
  // Lending nodes to Kubernetes (reservation pods, preemption, return). After parsing,
  // lending.namespace_name is never empty (it defaults to kubernetes.namespace).
  ownership::LendingConfig lending;
  // GPU-granular sharing of DRA nodes (off by default).
  devices::SharingConfig gpu_sharing;
  // Guaranteed GPU quotas per tenant (off when no tenant is listed): which work runs within
  // its tenant's floor and which borrows (bridgectl get quotas, the submit-time message).
  quota::QuotaConfig quotas;
};

// Parses and validates a JSON configuration document. An empty document ("{}") yields all
// defaults. Errors are InvalidArgument and name the key ("config: key 'slurm.poll_interval':
// ...").
StatusOr<Config> ParseConfig(std::string_view json_text);

// The JSON Schema (draft-07) of the document ParseConfig reads, recorded from the parser's
// own reads (JsonReader::SchemaRecorder): every key, its type, range and allowed values,
// unknown keys refused. Cross-key checks are not in it. `slurm-k8s-bridge
// --print-config-schema` prints it; the chart's values.schema.json carries it as the
// schema of `config:` (scripts/chart-config-schema).
nlohmann::json ConfigSchema();

}  // namespace skb::config

// SPDX-License-Identifier: Apache-2.0
// The bridge's configuration: one JSON document (mounted from a ConfigMap in the chart),
// validated at start with errors that name the key and the problem.
//
// Every option, its default and its meaning are listed in README.md ("Configuration"); keep the
// two in step. Unknown keys are errors, so a typo never silently falls back to a default.
//
//   StatusOr<skb::config::Config> cfg = skb::config::ParseConfig(text);
//   if (!cfg.ok()) { /* print cfg.status().message() and exit 2 */ }
//   for (const std::string& n : cfg->notices) { /* log each */ }
//
// The file is versioned: its top-level "apiVersion" names the format it is written in
// (kApiVersions). A file without it is read as slurm-k8s-bridge/v1, the format of 0.1.0's
// files, with a notice; an apiVersion this release does not know is refused. A key that a
// release renamed or removed within a format is named, with that release, by KeyHistory().
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <span>
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
  // The client-side rate limit of the actions' client (the Events' and the Lease's clients
  // have limits of their own). 100 / 200, as large controllers default (kube-scheduler 50 /
  // 100, Karpenter 200 / 300): 5,000 nodes are set up (a reservation and a status write
  // each) in about 100 s; at 20 they took 500 s. The apiserver's API Priority and Fairness
  // still decides what the bridge gets; the steady state is paced by what it needs
  // (reservation refreshes take at most half of this rate).
  double qps = 100;
  int64_t burst = 200;
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

// The formats of the config file this release reads, oldest first: the value of the
// top-level "apiVersion" key, and the releases that read it.
struct ApiVersion {
  std::string_view name;      // "slurm-k8s-bridge/v1"
  std::string_view releases;  // "0.1.0 and later (...)"
};
inline constexpr std::string_view kApiVersionV1 = "slurm-k8s-bridge/v1";
inline constexpr ApiVersion kApiVersions[] = {
    {kApiVersionV1,
     "0.1.0 and every later release; 0.1.0 only without the apiVersion key, which came "
     "after it"},
};

// A key of a config format that a release renamed or removed. A document of that format
// that still has the key is refused with a message naming the key, the release and what to
// write instead, not with the bare "unknown key" (a file written for an older release).
struct KeyChange {
  std::string_view api_version;  // the format whose documents it applies to
  // The dotted path of the old key; "[]" stands for every element of a list
  // ("quotas.tenants[].old_key").
  std::string_view key;
  std::string_view release;     // the release that renamed or removed it
  std::string_view renamed_to;  // the dotted path of the new key; empty when removed
  std::string_view note;        // what to do instead (optional for a rename)
};

// The project's table: every key renamed or removed since 0.1.0, oldest first. Add an entry
// with the release that changes a key (and a CHANGELOG.md and docs/upgrade.md line); keep
// entries when the format gets a new apiVersion (they say what an older file meant).
std::span<const KeyChange> KeyHistory();

struct Config {
  // The format the file was read as (kApiVersions): its apiVersion, or v1 when it had none.
  std::string api_version{kApiVersionV1};
  // What the reader has to say about a file it accepted (a missing apiVersion), for the
  // daemon to log and --check-config to print.
  std::vector<std::string> notices;

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
// The same with another key history than KeyHistory() (tests).
StatusOr<Config> ParseConfig(std::string_view json_text, std::span<const KeyChange> key_history);

// The JSON Schema (draft-07) of the document ParseConfig reads, recorded from the parser's
// own reads (JsonReader::SchemaRecorder): every key, its type, range and allowed values,
// unknown keys refused. Cross-key checks are not in it. `slurm-k8s-bridge
// --print-config-schema` prints it; the chart's values.schema.json carries it as the
// schema of `config:` (scripts/chart-config-schema).
nlohmann::json ConfigSchema();

}  // namespace skb::config

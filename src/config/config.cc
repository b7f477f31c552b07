// SPDX-License-Identifier: Apache-2.0
#include "src/config/config.h"

#include <nlohmann/json.hpp>

#include "src/base/strings.h"
#include "src/config/json_reader.h"

namespace skb::config {
namespace {

Status ReadLogging(JsonReader r, LoggingConfig* out) {
  r.Enum("level", &out->level, {"trace", "debug", "info", "warn", "error"});
  r.Enum("format", &out->format, {"text", "json"});
  return r.Finish();
}

Status ReadKubernetes(JsonReader r, KubernetesConfig* out) {
  r.String("kubeconfig", &out->kubeconfig);
  r.String("namespace", &out->namespace_name);
  r.String("node_selector", &out->node_selector);
  r.Double("qps", &out->qps, 0.1, 10'000);
  r.Int("burst", &out->burst, 1, 100'000);
  r.Merge(inventory::ReadNodeNames(r.Object("node_names"), &out->node_names));
  if (out->namespace_name.empty() || out->namespace_name.size() > 63) {
    r.Fail("namespace", "must be a DNS label of 1 to 63 characters");
  }
  return r.Finish();
}

Status ReadSlurm(JsonReader r, SlurmConfig* out) {
  r.String("conf", &out->conf);
  r.Duration("poll_interval", &out->poll_interval);
  r.Duration("call_timeout", &out->call_timeout);
  r.Duration("resync_interval", &out->resync_interval);
  if (out->poll_interval < std::chrono::milliseconds(50)) {
    r.Fail("poll_interval", "must be at least 50ms (each poll is an RPC to slurmctld)");
  }
  if (out->resync_interval.count() != 0 && out->resync_interval < out->poll_interval) {
    r.Fail("resync_interval",
           "must be 0 (never) or at least poll_interval (a resync is a poll that reads "
           "everything whole)");
  }
  if (out->call_timeout < std::chrono::milliseconds(100)) {
    r.Fail("call_timeout", "must be at least 100ms");
  }
  return r.Finish();
}

Status ReadServer(JsonReader r, ServerConfig* out) {
  r.String("socket_path", &out->socket_path);
  r.String("http_address", &out->http_address);
  r.String("client_user", &out->client_user);
  if (out->socket_path.empty()) r.Fail("socket_path", "must not be empty");
  if (!out->http_address.empty() && out->http_address.rfind(':') == std::string::npos) {
    r.Fail("http_address", "must be host:port (or empty to disable)");
  }
  return r.Finish();
}

Status ReadLeaderElection(JsonReader r, LeaderElectionConfig* out) {
  r.String("lease_name", &out->lease_name);
  r.Duration("lease_duration", &out->lease_duration);
  r.Duration("renew_deadline", &out->renew_deadline);
  r.Duration("retry_period", &out->retry_period);
  if (out->lease_name.empty()) r.Fail("lease_name", "must not be empty");
  // client-go's rules: lease_duration > renew_deadline > retry_period * 1.2 > 0.
  if (out->retry_period.count() <= 0) r.Fail("retry_period", "must be positive");
  if (out->renew_deadline.count() * 10 <= out->retry_period.count() * 12) {
    r.Fail("renew_deadline", "must be more than 1.2 x retry_period");
  }
  if (out->lease_duration <= out->renew_deadline) {
    r.Fail("lease_duration", "must be longer than renew_deadline");
  }
  return r.Finish();
}

Status ReadAdmission(JsonReader r, AdmissionConfig* out) {
  r.StringList("preemptible_partitions", &out->preemptible_partitions);
  r.StringList("preemptible_qos", &out->preemptible_qos);
  r.Bool("reject_unknown_features", &out->reject_unknown_features);
  for (const auto& p : out->preemptible_partitions) {
    if (p.empty() || p.find_first_of(", ") != std::string::npos) {
      r.Fail("preemptible_partitions", "entries must be single partition names");
    }
  }
  return r.Finish();
}

// The format's name, as the schema says it (the parser checks it before, in
// CheckApiVersion, to name the releases that read each format).
void ReadApiVersion(JsonReader& root, Config* cfg) {
  std::vector<std::string> names;
  for (const ApiVersion& v : kApiVersions) names.emplace_back(v.name);
  root.Enum("apiVersion", &cfg->api_version, names);
}

// Every section, read by the parser and by the schema recorder (ConfigSchema) alike: the
// one list of the config's keys.
void ReadSections(JsonReader& root, Config* cfg) {
  ReadApiVersion(root, cfg);
  root.Merge(ReadLogging(root.Object("logging"), &cfg->logging));
  root.Merge(ReadKubernetes(root.Object("kubernetes"), &cfg->kubernetes));
  root.Merge(ReadSlurm(root.Object("slurm"), &cfg->slurm));
  root.Merge(ReadServer(root.Object("server"), &cfg->server));
  root.Merge(ReadLeaderElection(root.Object("leader_election"), &cfg->leader_election));
  root.Merge(ReadAdmission(root.Object("admission"), &cfg->admission));
  root.Merge(health::ReadHealthConfig(root.Object("health"), &cfg->health));
  root.Merge(plan::ReadFeaturesConfig(root.Object("features"), &cfg->features));
  root.Merge(ownership::ReadLendingConfig(root.Object("lending"), &cfg->lending));
  root.Merge(devices::ReadSharingConfig(root.Object("gpu_sharing"), &cfg->gpu_sharing));
  root.Merge(quota::ReadQuotaConfig(root.Object("quotas"), &cfg->quotas));
}

std::string KnownApiVersions() {
  std::string out;
  for (const ApiVersion& v : kApiVersions) {
    StrAppend(&out, out.empty() ? "" : "; ", v.name, " (read by ", v.releases, ")");
  }
  return out;
}

// The document's apiVersion: absent is v1 with a notice, a known one is taken, any other
// value is refused naming the formats this release reads and the releases that read them.
Status CheckApiVersion(const nlohmann::json& doc, Config* cfg) {
  auto it = doc.find("apiVersion");
  if (it == doc.end() || it->is_null()) {
    cfg->notices.push_back(StrCat("config: no apiVersion: read as ", kApiVersionV1,
                                  " (the format of 0.1.0's files); add \"apiVersion\": \"",
                                  kApiVersionV1, "\" to the file (docs/upgrade.md)"));
    return OkStatus();
  }
  if (!it->is_string()) {
    return InvalidArgumentError(
        StrCat("config: key 'apiVersion': expected a string, got ", it->type_name()));
  }
  const std::string name = it->get<std::string>();
  for (const ApiVersion& v : kApiVersions) {
    if (v.name == name) {
      cfg->api_version = name;
      return OkStatus();
    }
  }
  return InvalidArgumentError(
      StrCat("config: key 'apiVersion': '", name, "' is not a format this release reads. It reads ",
             KnownApiVersions(),
             ". A file of a newer format needs the release that introduced it (CHANGELOG.md)"));
}

// FindKey: the paths at which `key` (dotted, "[]" for every element of a list) occurs in
// `node`, with list indices filled in ("quotas.tenants[2].old").
void FindKey(const nlohmann::json& node, std::string_view key, const std::string& at,
             std::vector<std::string>* found) {
  if (key.empty()) {
    found->push_back(at);
    return;
  }
  if (key.starts_with("[]")) {
    if (!node.is_array()) return;
    std::string_view rest = key.substr(2);
    if (rest.starts_with(".")) rest.remove_prefix(1);
    for (size_t i = 0; i < node.size(); ++i) {
      FindKey(node[i], rest, StrCat(at, "[", i, "]"), found);
    }
    return;
  }
  const size_t end = key.find_first_of(".[");
  const std::string name(key.substr(0, end));
  std::string_view rest = end == std::string_view::npos ? "" : key.substr(end);
  if (rest.starts_with(".")) rest.remove_prefix(1);
  if (!node.is_object()) return;
  auto it = node.find(name);
  if (it == node.end()) return;
  FindKey(*it, rest, at.empty() ? name : StrCat(at, ".", name), found);
}

// A key the history says a release renamed or removed, in a document of that format.
Status CheckKeyHistory(const nlohmann::json& doc, std::string_view api_version,
                       std::span<const KeyChange> history) {
  for (const KeyChange& change : history) {
    if (change.api_version != api_version) continue;
    std::vector<std::string> found;
    FindKey(doc, change.key, "", &found);
    if (found.empty()) continue;
    std::string message;
    if (change.renamed_to.empty()) {
      message = StrCat("config: key '", found.front(), "' was removed in release ", change.release);
    } else {
      message = StrCat("config: key '", found.front(), "' was renamed to '", change.renamed_to,
                       "' in release ", change.release);
    }
    if (!change.note.empty()) StrAppend(&message, ": ", change.note);
    StrAppend(&message, " (docs/upgrade.md)");
    return InvalidArgumentError(message);
  }
  return OkStatus();
}

}  // namespace

std::span<const KeyChange> KeyHistory() {
  // No key of slurm-k8s-bridge/v1 has been renamed or removed since 0.1.0.
  static constexpr std::span<const KeyChange> kHistory{};
  return kHistory;
}

nlohmann::json ConfigSchema() {
  nlohmann::json schema;
  JsonReader recorder = JsonReader::SchemaRecorder(&schema);
  Config unused;
  ReadSections(recorder, &unused);
  schema["description"] =
      "slurm-k8s-bridge's configuration file (README.md, \"Configuration\"), as the daemon "
      "reads it: every key, its type and range. Generated by `slurm-k8s-bridge "
      "--print-config-schema` from the parser itself; checks across keys stay the daemon's "
      "(--check-config).";
  return schema;
}

StatusOr<Config> ParseConfig(std::string_view json_text) {
  return ParseConfig(json_text, KeyHistory());
}

StatusOr<Config> ParseConfig(std::string_view json_text, std::span<const KeyChange> key_history) {
  nlohmann::json doc = nlohmann::json::parse(json_text, /*cb=*/nullptr,
                                             /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded()) {
    // Re-parse with exceptions only to recover the position for the message. Catch every
    // json exception, not only parse_error: a number too large for a double ("1e400") is an
    // out_of_range, and an uncaught one would end the daemon instead of naming the problem.
    try {
      nlohmann::json unused = nlohmann::json::parse(json_text, nullptr, true, true);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgumentError(StrCat("config: not valid JSON: ", e.what()));
    }
    return InvalidArgumentError("config: not valid JSON");
  }
  if (!doc.is_object()) {
    return InvalidArgumentError(
        StrCat("config: the document must be a JSON object, got ", doc.type_name()));
  }
  Config cfg;
  RETURN_IF_ERROR(CheckApiVersion(doc, &cfg));
  RETURN_IF_ERROR(CheckKeyHistory(doc, cfg.api_version, key_history));
  JsonReader root(doc, "");
  ReadSections(root, &cfg);
  if (cfg.lending.namespace_name.empty()) {
    cfg.lending.namespace_name = cfg.kubernetes.namespace_name;
  }
  // A standby takes over at most lease_duration after the last renewal it saw, which it
  // sees up to a (jittered) retry_period late and acts on at its next try; a leader that
  // cannot renew acts until renew_deadline. A lend must survive one failover.
  const LeaderElectionConfig& le = cfg.leader_election;
  const std::chrono::milliseconds failover =
      le.lease_duration + le.renew_deadline + le.retry_period;
  if (cfg.lending.outage_allowance < failover) {
    root.Fail("lending.outage_allowance",
              StrCat("must cover a leader failover: at least leader_election.lease_duration + "
                     "renew_deadline + retry_period = ",
                     failover.count(), "ms"));
  }
  RETURN_IF_ERROR(root.Finish());
  return cfg;
}

}  // namespace skb::config

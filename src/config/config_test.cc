// SPDX-License-Identifier: Apache-2.0
#include "src/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace skb::config {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  auto cfg = ParseConfig(text);
  EXPECT_FALSE(cfg.ok()) << text;
  return cfg.ok() ? "" : std::string(cfg.status().message());
}

// Whether the schema has the dotted key ("a.b[].c": c of every element of the list a.b).
bool SchemaHasKey(const nlohmann::json& schema, std::string_view key) {
  const nlohmann::json* node = &schema;
  while (!key.empty()) {
    if (key.starts_with("[]")) {
      if (!node->contains("items")) return false;
      node = &(*node)["items"];
      key.remove_prefix(key.starts_with("[].") ? 3 : 2);
      continue;
    }
    const size_t end = key.find_first_of(".[");
    const std::string name(key.substr(0, end));
    key = end == std::string_view::npos ? "" : key.substr(end);
    if (key.starts_with(".")) key.remove_prefix(1);
    if (!node->contains("properties") || !(*node)["properties"].contains(name)) return false;
    node = &(*node)["properties"][name];
  }
  return true;
}

TEST(ConfigSchema, EverySectionAndKeyTheParserReads) {
  const nlohmann::json schema = ConfigSchema();
  EXPECT_EQ(schema["additionalProperties"], false);
  std::vector<std::string> sections;
  for (const auto& [k, v] : schema["properties"].items()) {
    if (k == "apiVersion") continue;
    sections.push_back(k);
    EXPECT_EQ(v["additionalProperties"], false) << k;
  }
  // The format's name: one of the versions this release reads (absent: v1).
  EXPECT_EQ(schema["properties"]["apiVersion"]["enum"],
            nlohmann::json::parse(R"(["slurm-k8s-bridge/v1", null])"));
  EXPECT_THAT(sections, ::testing::UnorderedElementsAre(
                            "logging", "kubernetes", "slurm", "server", "leader_election",
                            "admission", "health", "features", "lending", "gpu_sharing", "quotas"));
  const nlohmann::json& p = schema["properties"];
  EXPECT_EQ(p["logging"]["properties"]["level"]["enum"],
            nlohmann::json::parse(R"(["trace", "debug", "info", "warn", "error", null])"));
  EXPECT_EQ(p["kubernetes"]["properties"]["qps"]["minimum"], 0.1);
  EXPECT_EQ(p["kubernetes"]["properties"]["node_names"]["properties"]["map"]["additionalProperties"]
             ["type"],
            "string");
  EXPECT_TRUE(p["slurm"]["properties"]["poll_interval"].contains("pattern"));
  EXPECT_EQ(p["health"]["properties"]["conditions"]["items"]["properties"]["severity"]["enum"],
            nlohmann::json::parse(R"(["drain", "down", null])"));
  EXPECT_EQ(
      p["lending"]["properties"]["preemption"]["properties"]["qos"]["additionalProperties"]["type"],
      "string");
  EXPECT_EQ(p["gpu_sharing"]["properties"]["gres_files"]["additionalProperties"], true);
  // Keys of more than one form accept anything in the schema; the parser checks them.
  const nlohmann::json& tenant = p["quotas"]["properties"]["tenants"]["items"];
  EXPECT_FALSE(tenant["properties"]["guaranteed"].contains("type"));
  EXPECT_EQ(tenant["properties"]["weight"]["type"][0], "number");
}

TEST(ParseConfig, EmptyDocumentGivesDefaults) {
  auto cfg = ParseConfig("{}");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->logging.level, "info");
  EXPECT_EQ(cfg->kubernetes.namespace_name, "slurm-bridge");
  EXPECT_EQ(cfg->slurm.poll_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(cfg->slurm.resync_interval, std::chrono::seconds(10));
  EXPECT_EQ(cfg->server.http_address, "127.0.0.1:9464");
}

TEST(ParseConfig, ReadsEverySection) {
  auto cfg = ParseConfig(R"({
    // comments are allowed, as in a hand-edited ConfigMap
    "logging": {"level": "debug", "format": "json"},
    "kubernetes": {"kubeconfig": "/k", "namespace": "ns", "node_selector": "gpu=true",
                   "qps": 50, "burst": 100},
    "slurm": {"conf": "/etc/slurm/slurm.conf", "poll_interval": "250ms", "call_timeout": "2s",
              "resync_interval": "30s"},
    "server": {"socket_path": "/tmp/s.sock", "http_address": ""}
  })");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->logging.format, "json");
  EXPECT_EQ(cfg->kubernetes.kubeconfig, "/k");
  EXPECT_EQ(cfg->kubernetes.burst, 100);
  EXPECT_EQ(cfg->slurm.poll_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(cfg->slurm.call_timeout, std::chrono::milliseconds(2000));
  EXPECT_EQ(cfg->slurm.resync_interval, std::chrono::seconds(30));
  EXPECT_EQ(cfg->server.http_address, "");
}

TEST(ParseConfig, ErrorsNameTheKeyAndTheProblem) {
  EXPECT_THAT(ErrorOf(R"({"slurm": {"poll_interval": 5}})"),
              HasSubstr("key 'slurm.poll_interval': expected a duration string"));
  EXPECT_THAT(ErrorOf(R"({"slurm": {"poll_interval": "10ms"}})"), HasSubstr("at least 50ms"));
  EXPECT_THAT(
      ErrorOf(R"({"slurm": {"poll_interval": "1s", "resync_interval": "500ms"}})"),
      HasSubstr("key 'slurm.resync_interval': must be 0 (never) or at least poll_interval"));
  EXPECT_TRUE(ParseConfig(R"({"slurm": {"resync_interval": "0s"}})").ok());
  EXPECT_THAT(ErrorOf(R"({"slurm": {"pol_interval": "1s"}})"),
              HasSubstr("unknown key 'slurm.pol_interval'"));
  EXPECT_THAT(ErrorOf(R"({"extra": 1})"), HasSubstr("unknown key 'extra'"));
  EXPECT_THAT(ErrorOf(R"({"logging": {"level": "loud"}})"), HasSubstr("must be one of"));
  EXPECT_THAT(ErrorOf(R"({"kubernetes": "x"})"), HasSubstr("'kubernetes': expected an object"));
  EXPECT_THAT(ErrorOf(R"({"kubernetes": {"namespace": ""}})"), HasSubstr("DNS label"));
  EXPECT_THAT(ErrorOf(R"({"server": {"http_address": "9464"}})"), HasSubstr("host:port"));
}

// kubernetes.node_names is read with the rest (the rules: src/inventory/node_names_test.cc):
// a wrong mode or template stops the start with the key named.
TEST(ParseConfig, NodeNames) {
  auto cfg = ParseConfig(
      R"({"kubernetes": {"node_names": {"mode": "strip_domain", "domain": "cluster.local"}}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->kubernetes.node_names.SlurmName("gpu7.cluster.local"), "gpu7");
  auto defaults = ParseConfig("{}");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->kubernetes.node_names.Describe(), "identity");
  EXPECT_THAT(ErrorOf(R"({"kubernetes": {"node_names": {"mode": "fqdn"}}})"),
              HasSubstr("key 'kubernetes.node_names.mode': must be one of"));
  EXPECT_THAT(ErrorOf(R"({"kubernetes": {"node_names": {"mode": "template", "template": "x"}}})"),
              HasSubstr("key 'kubernetes.node_names.template'"));
  EXPECT_THAT(ErrorOf(R"({"kubernetes": {"node_names": "strip_domain"}})"),
              HasSubstr("'kubernetes.node_names': expected an object"));
}

TEST(ParseConfig, AdmissionAndClientUser) {
  auto cfg = ParseConfig(R"({
    "server": {"client_user": "slurm"},
    "admission": {"preemptible_partitions": ["gpu"], "preemptible_qos": ["scavenger"],
                  "reject_unknown_features": false}
  })");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server.client_user, "slurm");
  EXPECT_EQ(cfg->admission.preemptible_partitions, std::vector<std::string>{"gpu"});
  EXPECT_EQ(cfg->admission.preemptible_qos, std::vector<std::string>{"scavenger"});
  EXPECT_FALSE(cfg->admission.reject_unknown_features);
  auto defaults = ParseConfig("{}");
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->admission.preemptible_partitions.empty());
  EXPECT_TRUE(defaults->admission.reject_unknown_features);
  EXPECT_THAT(ErrorOf(R"({"admission": {"preemptible_partitions": ["a,b"]}})"),
              HasSubstr("single partition names"));
  EXPECT_THAT(ErrorOf(R"({"admission": {"preemptible_qos": "x"}})"),
              HasSubstr("admission.preemptible_qos"));
}

TEST(ParseConfig, HealthAndFeaturesSections) {
  auto cfg = ParseConfig(R"({
    "health": {"conditions": [{"type": "GPUHealthy"}], "cordon": "ignore"},
    "features": {"labels": [{"label": "topology.kubernetes.io/zone", "prefix": "zone_"}]}
  })");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->health.conditions.size(), 1u);
  EXPECT_FALSE(cfg->health.cordon.has_value());
  EXPECT_EQ(cfg->features.labels.size(), 1u);
  auto defaults = ParseConfig("{}");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->health.conditions.size(), 2u);
  EXPECT_EQ(defaults->features.labels.size(), 3u);
  EXPECT_THAT(ErrorOf(R"({"health": {"cordon": "maybe"}})"), HasSubstr("'health.cordon'"));
}

TEST(ParseConfig, LendingSection) {
  auto defaults = ParseConfig("{}");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_FALSE(defaults->lending.enabled);
  EXPECT_EQ(defaults->lending.namespace_name, "slurm-bridge");  // kubernetes.namespace
  auto cfg = ParseConfig(R"({
    "kubernetes": {"namespace": "bridge"},
    "lending": {"enabled": true, "cooldown": "30s", "preemption": {"qos": {"debug": "cancel"}}}
  })");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_TRUE(cfg->lending.enabled);
  EXPECT_EQ(cfg->lending.namespace_name, "bridge");
  EXPECT_EQ(cfg->lending.cooldown, std::chrono::seconds(30));
  EXPECT_EQ(cfg->lending.qos_modes.at("debug"), plan::JobPreemptMode::kCancel);
  auto own = ParseConfig(R"({"lending": {"namespace": "slurm"}})");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->lending.namespace_name, "slurm");
  EXPECT_THAT(ErrorOf(R"({"lending": {"cooldwn": "1s"}})"),
              HasSubstr("unknown key 'lending.cooldwn'"));
  EXPECT_THAT(ErrorOf(R"({"lending": {"preemption": {"default": "suspend"}}})"),
              HasSubstr("'lending.preemption.default'"));
}

TEST(ParseConfig, LeaderElectionTimingFollowsClientGoRules) {
  auto def = ParseConfig("{}");
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->leader_election.lease_name, "slurm-k8s-bridge");
  EXPECT_EQ(def->leader_election.lease_duration, std::chrono::seconds(15));
  auto fast = ParseConfig(
      R"({"leader_election": {"lease_duration": "4s", "renew_deadline": "3s", "retry_period": "500ms"}})");
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_EQ(fast->leader_election.retry_period, std::chrono::milliseconds(500));
  auto bad =
      ParseConfig(R"({"leader_election": {"lease_duration": "5s", "renew_deadline": "5s"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("leader_election.lease_duration"));
  auto typo = ParseConfig(R"({"leader_election": {"lease_durations": "5s"}})");
  EXPECT_FALSE(typo.ok());
}

// A lend survives a leader failover: the reservation's kill deadline leaves at least
// lease_duration + renew_deadline + retry_period for the bridge to be away.
TEST(ParseConfig, OutageAllowanceCoversALeaderFailover) {
  auto def = ParseConfig("{}");
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->lending.outage_allowance, std::chrono::hours(1));
  EXPECT_THAT(
      ErrorOf(R"({"lending": {"outage_allowance": "26s"}})"),
      HasSubstr("'lending.outage_allowance': must cover a leader failover: at least "
                "leader_election.lease_duration + renew_deadline + retry_period = 27000ms"));
  EXPECT_TRUE(ParseConfig(R"({"lending": {"outage_allowance": "27s"}})").ok());
  // Shorter leases fail over faster and allow a shorter allowance; longer ones need more.
  EXPECT_TRUE(ParseConfig(R"({"leader_election": {"lease_duration": "4s", "renew_deadline": "3s",
                                                  "retry_period": "500ms"},
                              "lending": {"outage_allowance": "7500ms"}})")
                  .ok());
  EXPECT_THAT(ErrorOf(R"({"leader_election": {"lease_duration": "60s", "renew_deadline": "40s"},
                          "lending": {"outage_allowance": "90s"}})"),
              HasSubstr("= 102000ms"));
}

TEST(ParseConfig, MalformedDocuments) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("not valid JSON"));
  EXPECT_THAT(ErrorOf("{\"logging\": "), HasSubstr("not valid JSON"));
  EXPECT_THAT(ErrorOf("[1,2]"), HasSubstr("must be a JSON object, got array"));
  EXPECT_THAT(ErrorOf("\"str\""), HasSubstr("must be a JSON object"));
  std::string deep(10000, '[');
  EXPECT_FALSE(ParseConfig(deep).ok());
}

TEST(ParseConfig, AFileWithoutApiVersionIsReadAsV1WithANotice) {
  auto cfg = ParseConfig(R"({"slurm": {"poll_interval": "1s"}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->api_version, "slurm-k8s-bridge/v1");
  EXPECT_EQ(cfg->slurm.poll_interval, std::chrono::seconds(1));
  ASSERT_EQ(cfg->notices.size(), 1u);
  EXPECT_THAT(cfg->notices[0], HasSubstr("no apiVersion: read as slurm-k8s-bridge/v1"));
  EXPECT_THAT(cfg->notices[0], HasSubstr("\"apiVersion\": \"slurm-k8s-bridge/v1\""));
  // A null is absent, as for every key.
  auto null_version = ParseConfig(R"({"apiVersion": null})");
  ASSERT_TRUE(null_version.ok()) << null_version.status();
  EXPECT_EQ(null_version->notices.size(), 1u);
}

TEST(ParseConfig, AFileWithApiVersionV1IsReadWithoutANotice) {
  auto cfg =
      ParseConfig(R"({"apiVersion": "slurm-k8s-bridge/v1", "slurm": {"poll_interval": "1s"}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->api_version, "slurm-k8s-bridge/v1");
  EXPECT_EQ(cfg->slurm.poll_interval, std::chrono::seconds(1));
  EXPECT_TRUE(cfg->notices.empty());
}

TEST(ParseConfig, AnUnknownApiVersionIsRefusedNamingTheKeyAndTheReleasesOfEachFormat) {
  const std::string error = ErrorOf(R"({"apiVersion": "slurm-k8s-bridge/v2"})");
  EXPECT_THAT(error, HasSubstr("key 'apiVersion': 'slurm-k8s-bridge/v2' is not a format this "
                               "release reads"));
  EXPECT_THAT(error, HasSubstr("It reads slurm-k8s-bridge/v1 (read by 0.1.0 and every later "
                               "release"));
  // Refused before anything else is read: the keys of an unknown format mean nothing here.
  EXPECT_THAT(ErrorOf(R"({"apiVersion": "v1", "slurm": {"polling": "1s"}})"),
              HasSubstr("key 'apiVersion': 'v1' is not a format"));
  EXPECT_THAT(ErrorOf(R"({"apiVersion": 1})"),
              HasSubstr("key 'apiVersion': expected a string, got number"));
}

// A made-up history: one key removed, one renamed (inside a list), one of another format.
constexpr KeyChange kTestHistory[] = {
    {"slurm-k8s-bridge/v1", "slurm.legacy_poll", "0.3.0", "",
     "polling follows slurm.poll_interval"},
    {"slurm-k8s-bridge/v1", "quotas.tenants[].floor", "0.4.0", "quotas.tenants[].guaranteed", ""},
    {"slurm-k8s-bridge/v0", "logging.verbose", "0.2.0", "logging.level", ""},
};

TEST(ParseConfig, AKeyTheHistorySaysWasRemovedOrRenamedNamesTheKeyAndTheRelease) {
  auto parse = [](std::string_view text) { return ParseConfig(text, kTestHistory); };
  auto removed = parse(R"({"slurm": {"legacy_poll": true}})");
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().message(),
            "config: key 'slurm.legacy_poll' was removed in release 0.3.0: polling follows "
            "slurm.poll_interval (docs/upgrade.md)");
  auto renamed = parse(R"({"apiVersion": "slurm-k8s-bridge/v1", "quotas": {"tenants": [
      {"name": "a", "guaranteed": 1}, {"name": "b", "floor": 2}]}})");
  ASSERT_FALSE(renamed.ok());
  EXPECT_EQ(renamed.status().message(),
            "config: key 'quotas.tenants[1].floor' was renamed to 'quotas.tenants[].guaranteed' "
            "in release 0.4.0 (docs/upgrade.md)");
  // Another format's history does not apply; the key is then only unknown.
  EXPECT_THAT(parse(R"({"logging": {"verbose": true}})").status().message(),
              HasSubstr("unknown key 'logging.verbose'"));
  // A file without the old keys is read as usual.
  EXPECT_TRUE(parse(R"({"slurm": {"poll_interval": "1s"}})").ok());
  // The project's own table: every entry names a format this release reads, a release and
  // a key this release no longer reads (else the history would shadow a live key); a removal
  // says what to do instead.
  const nlohmann::json schema = ConfigSchema();
  for (const KeyChange& c : KeyHistory()) {
    EXPECT_FALSE(c.release.empty()) << c.key;
    EXPECT_TRUE(std::ranges::any_of(kApiVersions, [&](const ApiVersion& v) {
      return v.name == c.api_version;
    })) << c.key;
    EXPECT_TRUE(!c.renamed_to.empty() || !c.note.empty()) << c.key;
    EXPECT_FALSE(SchemaHasKey(schema, c.key)) << c.key << " is still read";
  }
  EXPECT_TRUE(SchemaHasKey(schema, "quotas.tenants[].guaranteed"));
  EXPECT_FALSE(SchemaHasKey(schema, "slurm.legacy_poll"));
}

// Found by config_fuzzer (src/config/fuzz/corpus/number_overflow): a number beyond a double's
// range made the diagnostic re-parse throw out_of_range, which nothing caught.
TEST(ParseConfig, NumberOutOfRangeIsAnErrorNotACrash) {
  EXPECT_THAT(ErrorOf(R"({"kubernetes": {"qps": 1e400}})"), HasSubstr("number overflow"));
  EXPECT_THAT(ErrorOf("3e521s"), HasSubstr("not valid JSON"));
}

}  // namespace
}  // namespace skb::config

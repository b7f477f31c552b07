// SPDX-License-Identifier: Apache-2.0
#include "src/health/health_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::health {
namespace {

using ::testing::HasSubstr;

Status Read(std::string_view text, HealthConfig* cfg) {
  nlohmann::json j = nlohmann::json::parse(text);
  return ReadHealthConfig(config::JsonReader(j, "health"), cfg);
}

TEST(HealthConfig, DefaultsCoverReadyGpuTaintAndCordon) {
  HealthConfig cfg;
  ASSERT_TRUE(Read("{}", &cfg).ok());
  ASSERT_EQ(cfg.conditions.size(), 2u);
  EXPECT_EQ(cfg.conditions[0].type, "Ready");
  EXPECT_EQ(cfg.conditions[0].severity, Severity::kDownNow);
  EXPECT_EQ(cfg.conditions[0].grace, std::chrono::seconds(60));
  EXPECT_EQ(cfg.taints.at(0).key, "nvidia.com/gpu.health");
  EXPECT_EQ(cfg.cordon, Severity::kDrain);
  EXPECT_EQ(cfg.maintenance_condition, "MaintenanceRequested");
}

TEST(HealthConfig, ListsReplaceTheDefaults) {
  HealthConfig cfg;
  Status s = Read(R"({
    "conditions": [{"type": "GPUHealthy", "bad_status": ["False", "Unknown"], "grace": "5s",
                    "severity": "down"}],
    "taints": [],
    "cordon": "ignore",
    "maintenance": {"condition": "RebootRequested", "deadline": "30m"},
    "slurm_conditions": false})",
                  &cfg);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(cfg.conditions.size(), 1u);
  EXPECT_EQ(cfg.conditions[0].bad_status.size(), 2u);
  EXPECT_EQ(cfg.conditions[0].grace, std::chrono::seconds(5));
  EXPECT_TRUE(cfg.taints.empty());
  EXPECT_FALSE(cfg.cordon.has_value());
  EXPECT_EQ(cfg.maintenance_condition, "RebootRequested");
  EXPECT_EQ(cfg.maintenance_deadline, std::chrono::minutes(30));
  EXPECT_FALSE(cfg.slurm_conditions);
  // A maintenance condition named like the reboot request keeps its old meaning: the
  // maintenance cycle is off until the reboot request is given another name.
  EXPECT_EQ(cfg.reboot_condition, "");
}

TEST(HealthConfig, TheMaintenanceCycleReadsItsRebootAndCheck) {
  HealthConfig cfg;
  EXPECT_EQ(cfg.reboot_condition, "RebootRequested");
  EXPECT_EQ(cfg.reboot_by, HealthConfig::RebootBy::kSlurm);
  EXPECT_EQ(cfg.check_command, "");
  Status s = Read(R"({"maintenance": {
      "deadline": "20m", "drain_timeout": "40m",
      "reboot": {"condition": "NodeRebootWanted", "by": "site", "timeout": "45m"},
      "check": {"command": "/usr/sbin/nhc -t 60", "timeout": "5m"}}})",
                  &cfg);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(cfg.reboot_condition, "NodeRebootWanted");
  EXPECT_EQ(cfg.reboot_by, HealthConfig::RebootBy::kSite);
  EXPECT_EQ(cfg.reboot_timeout, std::chrono::minutes(45));
  EXPECT_EQ(cfg.drain_timeout, std::chrono::minutes(40));
  EXPECT_EQ(cfg.check_command, "/usr/sbin/nhc -t 60");
  EXPECT_EQ(cfg.check_timeout, std::chrono::minutes(5));
}

TEST(HealthConfig, TheMaintenanceCycleRefusesWhatCannotWork) {
  // Each on the defaults.
  auto error = [](const char* json) {
    HealthConfig cfg;
    return std::string(Read(json, &cfg).message());
  };
  EXPECT_THAT(error(R"({"maintenance": {"reboot": {"by": "ipmi"}}})"),
              HasSubstr("health.maintenance.reboot.by"));
  EXPECT_THAT(error(R"({"maintenance": {"reboot": {"condition": "SlurmMaintenance"}}})"),
              HasSubstr("written by the bridge itself"));
  EXPECT_THAT(error(R"({"maintenance": {"condition": "X", "reboot": {"condition": "X"}}})"),
              HasSubstr("must differ from maintenance.condition"));
  EXPECT_THAT(error(R"({"maintenance": {"check": {"timeout": "30s"}}})"), HasSubstr("at least 1m"));
  EXPECT_THAT(error(R"({"maintenance": {"deadline": "3h"}})"),
              HasSubstr("drain_timeout': must be longer than maintenance.deadline"));
}

TEST(HealthConfig, ErrorsNameTheElement) {
  HealthConfig cfg;
  EXPECT_THAT(Read(R"({"conditions": [{"type": "A"}, {"typ": "B"}]})", &cfg).message(),
              HasSubstr("unknown key 'health.conditions[1].typ'"));
  EXPECT_THAT(Read(R"({"conditions": [{"type": "SlurmDrained"}]})", &cfg).message(),
              HasSubstr("written by the bridge itself"));
  EXPECT_THAT(Read(R"({"conditions": [{"type": "X", "bad_status": ["false"]}]})", &cfg).message(),
              HasSubstr("'false' is not True, False or Unknown"));
  EXPECT_THAT(Read(R"({"conditions": [{"type": "X", "severity": "panic"}]})", &cfg).message(),
              HasSubstr("must be one of drain, down"));
  EXPECT_THAT(Read(R"({"taints": [{"value": "x"}]})", &cfg).message(),
              HasSubstr("'health.taints[0].key': must name a taint key"));
  EXPECT_THAT(Read(R"({"taints": [{"key": "k", "effects": ["NoRun"]}]})", &cfg).message(),
              HasSubstr("'NoRun' is not"));
  EXPECT_THAT(Read(R"({"conditions": {"type": "X"}})", &cfg).message(),
              HasSubstr("expected a list of objects"));
  EXPECT_THAT(Read(R"({"conditions": ["Ready"]})", &cfg).message(),
              HasSubstr("'health.conditions[0]': expected an object"));
  EXPECT_THAT(Read(R"({"maintenance": {"deadline": "soon"}})", &cfg).message(),
              HasSubstr("health.maintenance.deadline"));
}

}  // namespace
}  // namespace skb::health

// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/lending_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace skb::ownership {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

StatusOr<LendingConfig> Read(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text);
  LendingConfig cfg;
  Status s = ReadLendingConfig(config::JsonReader(doc, "lending"), &cfg);
  if (!s.ok()) return s;
  return cfg;
}

std::string ErrorOf(std::string_view text) {
  auto cfg = Read(text);
  EXPECT_FALSE(cfg.ok()) << text;
  return cfg.ok() ? "" : std::string(cfg.status().message());
}

TEST(ReadLendingConfig, DefaultsAreSafe) {
  auto cfg = Read("{}");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_FALSE(cfg->enabled);
  EXPECT_EQ(cfg->name_pattern, "reserve-{node}");
  EXPECT_EQ(cfg->checkpoint_signal, 10);
  EXPECT_EQ(cfg->default_grace, seconds(60));
  EXPECT_EQ(cfg->default_mode, plan::JobPreemptMode::kRequeue);
  EXPECT_LT(cfg->idle_class.value, cfg->preemptible_class.value);
  EXPECT_LT(cfg->preemptible_class.value, cfg->inference_threshold);
  EXPECT_LT(cfg->inference_threshold, cfg->protected_class.value);
}

TEST(ReadLendingConfig, ReadsEveryKey) {
  auto cfg = Read(R"({
    "enabled": true, "namespace": "slurm", "name_pattern": "hold-{node}.gpu",
    "image": "registry.local/reserve:1", "gpu_resource": "nvidia.com/gpu",
    "priority_classes": {"idle": {"name": "a", "value": -10},
                         "preemptible": {"name": "b", "value": 10},
                         "protected": {"name": "c", "value": 5000}},
    "inference_threshold": 100,
    "checkpoint_signal": "SIGUSR2", "default_grace": "30s", "max_grace": "2m",
    "release_timeout": "1m", "outage_allowance": "2h",
    "preemption": {"default": "requeue_hold", "partitions": {"debug": "cancel"},
                   "qos": {"long": "requeue"}},
    "cooldown": "10s", "min_lend_time": "1m",
    "anti_thrash": {"max_preemptions": 2, "window": "1h"},
    "reservation_update_interval": "15s",
    "class_upgrade_delay": "5s", "class_downgrade_delay": "1m"
  })");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_TRUE(cfg->enabled);
  EXPECT_EQ(cfg->namespace_name, "slurm");
  EXPECT_EQ(cfg->name_pattern, "hold-{node}.gpu");
  EXPECT_EQ(cfg->image, "registry.local/reserve:1");
  EXPECT_EQ(cfg->gpu_resource, "nvidia.com/gpu");
  EXPECT_EQ(cfg->idle_class, (PriorityClassRef{"a", -10}));
  EXPECT_EQ(cfg->protected_class, (PriorityClassRef{"c", 5000}));
  EXPECT_EQ(cfg->inference_threshold, 100);
  EXPECT_EQ(cfg->checkpoint_signal, 12);
  EXPECT_EQ(cfg->default_grace, seconds(30));
  EXPECT_EQ(cfg->max_grace, minutes(2));
  EXPECT_EQ(cfg->release_timeout, minutes(1));
  EXPECT_EQ(cfg->outage_allowance, std::chrono::hours(2));
  EXPECT_EQ(cfg->default_mode, plan::JobPreemptMode::kRequeueHold);
  EXPECT_EQ(cfg->partition_modes.at("debug"), plan::JobPreemptMode::kCancel);
  EXPECT_EQ(cfg->qos_modes.at("long"), plan::JobPreemptMode::kRequeue);
  EXPECT_EQ(cfg->cooldown, seconds(10));
  EXPECT_EQ(cfg->min_lend_time, minutes(1));
  EXPECT_EQ(cfg->max_preemptions, 2);
  EXPECT_EQ(cfg->preemption_window, std::chrono::hours(1));
  EXPECT_EQ(cfg->reservation_update_interval, seconds(15));
  EXPECT_EQ(cfg->class_upgrade_delay, seconds(5));
  EXPECT_EQ(cfg->class_downgrade_delay, minutes(1));
}

// The URL goes into the reservation's shell script: plain characters only.
TEST(ReadLendingConfig, ReleaseUrlIsAPlainHttpUrl) {
  auto cfg = Read(R"({"release_url": "http://bridge.slurm-bridge.svc:9464/reservation-released"})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->release_url, "http://bridge.slurm-bridge.svc:9464/reservation-released");
  EXPECT_EQ(Read("{}")->release_url, "");
  EXPECT_THAT(ErrorOf(R"({"release_url": "https://b:9464/r"})"),
              HasSubstr("'lending.release_url'"));
  EXPECT_THAT(ErrorOf(R"({"release_url": "http://b/r\";reboot;\""})"), HasSubstr("http:// URL"));
  EXPECT_THAT(ErrorOf(R"j({"release_url": "http://b/$(id)"})j"), HasSubstr("http:// URL"));
  EXPECT_THAT(ErrorOf(R"({"release_url": "http://b/r?x=1&y=2"})"), HasSubstr("http:// URL"));
}

TEST(ReadLendingConfig, ErrorsNameTheKey) {
  EXPECT_THAT(ErrorOf(R"({"enable": true})"), HasSubstr("unknown key 'lending.enable'"));
  EXPECT_THAT(ErrorOf(R"({"name_pattern": "reserve"})"), HasSubstr("{node}"));
  EXPECT_THAT(ErrorOf(R"({"name_pattern": "Reserve_{node}"})"), HasSubstr("lowercase"));
  EXPECT_THAT(ErrorOf(R"({"namespace": "Slurm"})"), HasSubstr("DNS label"));
  EXPECT_THAT(ErrorOf(R"({"image": ""})"), HasSubstr("'lending.image'"));
  EXPECT_THAT(ErrorOf(R"({"gpu_resource": "gpu"})"), HasSubstr("extended resource"));
  // Refused rather than half-honoured: only the reservation's request would use it, and
  // the bridge would see neither its own reservations nor the pods preempting them.
  EXPECT_THAT(ErrorOf(R"({"gpu_resource": "amd.com/gpu"})"),
              HasSubstr("only nvidia.com/gpu is supported"));
  EXPECT_THAT(ErrorOf(R"({"priority_classes": {"idle": {"value": 5000}}})"),
              HasSubstr("rise strictly"));
  EXPECT_THAT(ErrorOf(R"({"priority_classes": {"idle": {"name": "slurm-protected"}}})"),
              HasSubstr("distinct names"));
  EXPECT_THAT(ErrorOf(R"({"priority_classes": {"idle": {"name": "Idle"}}})"),
              HasSubstr("'lending.priority_classes.idle.name'"));
  EXPECT_THAT(ErrorOf(R"({"priority_classes": {"idle": {"colour": 1}}})"),
              HasSubstr("unknown key 'lending.priority_classes.idle.colour'"));
  EXPECT_THAT(ErrorOf(R"({"priority_classes": {"protected": {"value": 2000000000}}})"),
              HasSubstr("between"));
  EXPECT_THAT(ErrorOf(R"({"inference_threshold": 1})"), HasSubstr("rise strictly"));
  EXPECT_THAT(ErrorOf(R"({"checkpoint_signal": "KILL"})"), HasSubstr("cannot be caught"));
  EXPECT_THAT(ErrorOf(R"({"checkpoint_signal": "SIGFOO"})"), HasSubstr("not a signal"));
  EXPECT_THAT(ErrorOf(R"({"default_grace": "20m"})"), HasSubstr("max_grace"));
  EXPECT_THAT(ErrorOf(R"({"max_grace": "48h"})"), HasSubstr("at most 24h"));
  EXPECT_THAT(ErrorOf(R"({"release_timeout": "1s"})"), HasSubstr("at least 30s"));
  EXPECT_THAT(ErrorOf(R"({"outage_allowance": "200h"})"), HasSubstr("at most 168h"));
  EXPECT_THAT(ErrorOf(R"({"preemption": {"default": "suspend"}})"), HasSubstr("GPU memory"));
  EXPECT_THAT(ErrorOf(R"({"preemption": {"partitions": {"gpu": "kill"}}})"),
              HasSubstr("'lending.preemption.partitions.gpu'"));
  EXPECT_THAT(ErrorOf(R"({"preemption": {"qos": {"gpu": 1}}})"),
              HasSubstr("'lending.preemption.qos.gpu': expected a string"));
  EXPECT_THAT(ErrorOf(R"({"anti_thrash": {"max_preemptions": -1}})"), HasSubstr("between"));
  EXPECT_THAT(ErrorOf(R"({"reservation_update_interval": "10ms"})"), HasSubstr("at least 1s"));
  EXPECT_THAT(ErrorOf(R"({"cooldown": 5})"), HasSubstr("duration"));
}

// The kubelet kills a deleted reservation this long after its deletion: the longest grace a
// job may get, the time to requeue and release after it, and the bridge outage a lend
// survives. With the defaults: 10m + 5m + 1h.
TEST(ReservationGrace, CoversTheLongestGraceTheReleaseAndAnOutage) {
  LendingConfig l;
  EXPECT_EQ(ReservationGrace(l), minutes(75));
  l.max_grace = minutes(2);
  l.release_timeout = minutes(1);
  l.outage_allowance = seconds(30);
  EXPECT_EQ(ReservationGrace(l), seconds(210));
}

TEST(ParseSignal, NamesNumbersAndRefusals) {
  EXPECT_EQ(*ParseSignal("USR1"), 10);
  EXPECT_EQ(*ParseSignal("SIGUSR1"), 10);
  EXPECT_EQ(*ParseSignal("TERM"), 15);
  EXPECT_EQ(*ParseSignal("12"), 12);
  EXPECT_EQ(*ParseSignal("64"), 64);
  EXPECT_FALSE(ParseSignal("0").ok());
  EXPECT_FALSE(ParseSignal("65").ok());
  EXPECT_FALSE(ParseSignal("9").ok());
  EXPECT_FALSE(ParseSignal("SIGSTOP").ok());
  EXPECT_FALSE(ParseSignal("").ok());
  EXPECT_FALSE(ParseSignal("10x").ok());
}

TEST(ParsePreemptMode, KnownModes) {
  EXPECT_EQ(*ParsePreemptMode("requeue"), plan::JobPreemptMode::kRequeue);
  EXPECT_EQ(*ParsePreemptMode("requeue_hold"), plan::JobPreemptMode::kRequeueHold);
  EXPECT_EQ(*ParsePreemptMode("cancel"), plan::JobPreemptMode::kCancel);
  EXPECT_FALSE(ParsePreemptMode("Requeue").ok());
  EXPECT_THAT(std::string(ParsePreemptMode("suspend").status().message()),
              HasSubstr("never be handed to Kubernetes"));
}

}  // namespace
}  // namespace skb::ownership

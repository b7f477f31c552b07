// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_maintenance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "bridge/cli/node_test_fixture.h"
#include "k8s/fake_kube_client.h"
#include "k8s/forwarding_kube_client.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using cli_test::kNow;
constexpr char kNowText[] = "2019-12-20T00:00:00Z";

// The FakeKubeClient, with a hook run before each Patch: what the daemon or the kubelet
// writes between bridgectl's read and its write.
class RacingKubeClient final : public k8s::ForwardingKubeClient {
 public:
  using ForwardingKubeClient::ForwardingKubeClient;
  std::function<void()> before_patch;
  int patches = 0;

  StatusOr<json> Patch(const k8s::Resource& r, const std::string& ns, const std::string& name,
                       k8s::PatchType type, const json& patch, const k8s::PatchOptions& o,
                       const std::string& sub) override {
    ++patches;
    if (before_patch) {
      auto hook = std::move(before_patch);
      before_patch = nullptr;
      hook();
    }
    return ForwardingKubeClient::Patch(r, ns, name, type, patch, o, sub);
  }
};

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message = "", const std::string& since = "2019-12-19T22:00:00Z") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", since}};
}

class NodeMaintenanceTest : public cli_test::NodeFixture {
 protected:
  StatusOr<MaintenanceChange> Reboot(const std::string& reason,
                                     const std::string& condition = "RebootRequested",
                                     Clock::TimePoint now = kNow) {
    return RequestReboot(kube_, "node3", condition, reason, "alice@login1", now);
  }
};

TEST_F(NodeMaintenanceTest, RebootSetsTheRequestWithTheReasonAndWhoOnce) {
  auto r = Reboot("new BIOS");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  json c = Conditions()["RebootRequested"];
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "BridgectlMaintenance");
  EXPECT_EQ(c["message"], "new BIOS (bridgectl maintenance by alice@login1)");
  EXPECT_EQ(c["lastTransitionTime"], kNowText);
  EXPECT_EQ(Conditions()["Ready"]["reason"], "KubeletReady") << "merged by type";
  // Again with the same words: nothing to do. New words keep the transition time.
  r = Reboot("new BIOS");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->changed);
  r = Reboot("new BIOS and BMC", "RebootRequested", kNow + std::chrono::hours(1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  c = Conditions()["RebootRequested"];
  EXPECT_EQ(c["lastTransitionTime"], kNowText);
  EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("BMC"));
  // Another request condition, as the daemon's health.maintenance.reboot.condition names it.
  ASSERT_TRUE(Reboot("x", "example.com/Reboot").ok());
  EXPECT_EQ(Conditions()["example.com/Reboot"]["reason"], "BridgectlMaintenance");
}

TEST_F(NodeMaintenanceTest, RebootRefusesBadInputAndSomeoneElsesRequest) {
  EXPECT_EQ(Reboot("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Reboot("x", "SlurmMaintenance").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Reboot("x", "").status().code(), StatusCode::kInvalidArgument);
  auto missing = RequestReboot(kube_, "nope", "RebootRequested", "x", "a", kNow);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no node 'nope'"));
  EXPECT_EQ(RetryMaintenance(kube_, "nope", "a", kNow).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(CancelReboot(kube_, "nope", "RebootRequested", "a", kNow).status().code(),
            StatusCode::kNotFound);
  SetConditions(json::array({Condition("RebootRequested", "True", "KernelUpdate", "kured")}));
  auto theirs = Reboot("x");
  EXPECT_EQ(theirs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(theirs.status().message(), HasSubstr("'KernelUpdate' (kured): left alone"));
  EXPECT_EQ(Conditions()["RebootRequested"]["reason"], "KernelUpdate") << "left alone";
  // A request of bridgectl's the daemon closed: asked anew.
  SetConditions(json::array({Condition("RebootRequested", "False", "MaintenanceCompleted")}));
  auto again = Reboot("x");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->changed);
  EXPECT_EQ(Conditions()["RebootRequested"]["lastTransitionTime"], kNowText);
}

TEST_F(NodeMaintenanceTest, RebootRefusesWhileACycleRunsOrHasFailedNamingItsPhase) {
  for (const char* phase : {"Draining", "Rebooting", "Checking"}) {
    SetConditions(json::array({Condition("SlurmMaintenance", "True", phase, "waiting")}));
    auto r = Reboot("x");
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << phase;
    EXPECT_THAT(r.status().message(), HasSubstr("a maintenance cycle is under way"));
    EXPECT_THAT(r.status().message(),
                HasSubstr(StrCat("phase ", phase, " since 2019-12-19T22:00:00Z: waiting")));
  }
  SetConditions(json::array({Condition("SlurmMaintenance", "True", "CheckFailed", "exit 1")}));
  auto failed = Reboot("x", "example.com/Reboot");
  EXPECT_EQ(failed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(failed.status().message(), HasSubstr("failed (SlurmMaintenance phase CheckFailed"));
  EXPECT_THAT(failed.status().message(), HasSubstr("`bridgectl maintenance retry node3`"));
  EXPECT_THAT(failed.status().message(),
              HasSubstr("`bridgectl maintenance cancel node3 --condition example.com/Reboot`"));
  EXPECT_EQ(Conditions().count("example.com/Reboot"), 0u);
  // A cycle that ended (False) is no obstacle.
  SetConditions(json::array({Condition("SlurmMaintenance", "False", "Completed")}));
  EXPECT_TRUE(Reboot("x").ok());
}

TEST_F(NodeMaintenanceTest, RetryStartsAFailedCycleAgainFromDraining) {
  SetConditions(json::array(
      {Condition("Ready", "True", "KubeletReady"),
       Condition("RebootRequested", "True", "BridgectlMaintenance", "x"),
       Condition("SlurmMaintenance", "True", "RebootTimedOut", "no slurmd registration for 30m")}));
  auto r = RetryMaintenance(kube_, "node3", "bob@login2", kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->phase, "RebootTimedOut");
  auto c = Conditions();
  EXPECT_EQ(c["SlurmMaintenance"]["status"], "True");
  EXPECT_EQ(c["SlurmMaintenance"]["reason"], "Draining");
  EXPECT_EQ(c["SlurmMaintenance"]["lastTransitionTime"], kNowText);
  EXPECT_EQ(c["SlurmMaintenance"]["message"],
            "retry by bob@login2 after RebootTimedOut: no slurmd registration for 30m");
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c["RebootRequested"]["reason"], "BridgectlMaintenance") << "the request stays";
  // Running again now: no second retry.
  auto twice = RetryMaintenance(kube_, "node3", "bob@login2", kNow);
  EXPECT_EQ(twice.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(twice.status().message(), HasSubstr("still running"));
  EXPECT_THAT(twice.status().message(), HasSubstr("phase Draining"));
}

TEST_F(NodeMaintenanceTest, RetryCutsTheMessageToTheConditionLimit) {
  SetConditions(
      json::array({Condition("SlurmMaintenance", "True", "CheckFailed", std::string(1024, 'x'))}));
  ASSERT_TRUE(RetryMaintenance(kube_, "node3", "bob", kNow).ok());
  const std::string m = Conditions()["SlurmMaintenance"]["message"];
  EXPECT_LE(m.size(), 1024u);
  EXPECT_THAT(m, StartsWith("retry by bob after CheckFailed: xxx"));
}

TEST_F(NodeMaintenanceTest, RetryIsRefusedWithoutAFailedCycle) {
  auto none = RetryMaintenance(kube_, "node3", "a", kNow);
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("no maintenance cycle"));
  SetConditions(json::array({Condition("SlurmMaintenance", "False", "Completed", "given back")}));
  auto done = RetryMaintenance(kube_, "node3", "a", kNow);
  EXPECT_EQ(done.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(done.status().message(), HasSubstr("phase Completed"));
  for (const char* phase : {"Draining", "Rebooting", "Checking"}) {
    SetConditions(json::array({Condition("SlurmMaintenance", "True", phase)}));
    auto running = RetryMaintenance(kube_, "node3", "a", kNow);
    EXPECT_EQ(running.status().code(), StatusCode::kFailedPrecondition) << phase;
    EXPECT_THAT(running.status().message(), HasSubstr(StrCat("phase ", phase)));
    EXPECT_EQ(Conditions()["SlurmMaintenance"]["reason"], phase) << "untouched";
  }
}

// The patch tests the failed phase at its index: the daemon's write in between (it gave the
// node back) is not overwritten, and an index the kubelet moved is read again.
TEST_F(NodeMaintenanceTest, RetryNeverOverwritesAWriteInBetween) {
  RacingKubeClient racing(&kube_);
  SetConditions(json::array({Condition("SlurmMaintenance", "True", "DrainTimedOut", "a job")}));
  racing.before_patch = [&] {
    SetConditions(json::array({Condition("SlurmMaintenance", "False", "Cancelled", "cleared")}));
  };
  auto r = RetryMaintenance(racing, "node3", "a", kNow);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(Conditions()["SlurmMaintenance"]["reason"], "Cancelled");

  SetConditions(json::array({Condition("SlurmMaintenance", "True", "DrainTimedOut", "a job")}));
  racing.patches = 0;
  racing.before_patch = [&] {
    SetConditions(json::array({Condition("Ready", "True", "KubeletReady"),
                               Condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                               Condition("SlurmMaintenance", "True", "DrainTimedOut", "a job")}));
  };
  r = RetryMaintenance(racing, "node3", "a", kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(racing.patches, 2) << "the first patch's test failed on the moved index";
  auto c = Conditions();
  EXPECT_EQ(c["SlurmMaintenance"]["reason"], "Draining");
  EXPECT_EQ(c["Ready"]["reason"], "KubeletReady");
  EXPECT_EQ(c["MemoryPressure"]["reason"], "KubeletHasSufficientMemory");
}

TEST_F(NodeMaintenanceTest, CancelWithdrawsOnlyBridgectlsRequest) {
  auto nothing = CancelReboot(kube_, "node3", "RebootRequested", "a", kNow);
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_FALSE(nothing->changed);
  ASSERT_TRUE(Reboot("new BIOS").ok());
  SetConditions(
      json::array({Conditions()["RebootRequested"],
                   Condition("SlurmMaintenance", "True", "Rebooting", "scontrol reboot")}));
  auto r = CancelReboot(kube_, "node3", "RebootRequested", "bob@login2", kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->phase, "Rebooting");
  json c = Conditions()["RebootRequested"];
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "BridgectlMaintenanceCancelled");
  EXPECT_EQ(c["message"],
            "cancelled by bob@login2: new BIOS (bridgectl maintenance by alice@login1)");
  EXPECT_EQ(c["lastTransitionTime"], kNowText);
  EXPECT_EQ(Conditions()["SlurmMaintenance"]["reason"], "Rebooting") << "the daemon's";
  auto again = CancelReboot(kube_, "node3", "RebootRequested", "bob@login2", kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->changed);

  SetConditions(json::array({Condition("RebootRequested", "True", "KernelUpdate", "kured")}));
  auto theirs = CancelReboot(kube_, "node3", "RebootRequested", "a", kNow);
  EXPECT_EQ(theirs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(theirs.status().message(), HasSubstr("not from bridgectl: left alone"));
  EXPECT_EQ(Conditions()["RebootRequested"]["status"], "True");
  EXPECT_EQ(CancelReboot(kube_, "node3", "DrainRequested", "a", kNow).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(NodeMaintenanceTest, CancelNeverOverwritesARequestSetInBetween) {
  RacingKubeClient racing(&kube_);
  ASSERT_TRUE(Reboot("x").ok());
  racing.before_patch = [&] {
    SetConditions(json::array({Condition("RebootRequested", "True", "KernelUpdate", "kured")}));
  };
  auto r = CancelReboot(racing, "node3", "RebootRequested", "a", kNow);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(Conditions()["RebootRequested"]["reason"], "KernelUpdate");
}

TEST(MaintenanceOutcome, SaysWhatTheBridgeDoesNext) {
  Command c;
  c.name = "node3";
  c.condition = "RebootRequested";
  c.verb = Verb::kMaintenanceCancel;
  EXPECT_THAT(MaintenanceOutcome(c, {true, "Draining"}), HasSubstr("stops the cycle"));
  EXPECT_THAT(MaintenanceOutcome(c, {true, "Checking"}), HasSubstr("runs to its end"));
  EXPECT_THAT(MaintenanceOutcome(c, {true, "CheckFailed"}), HasSubstr("back as it is"));
  EXPECT_THAT(MaintenanceOutcome(c, {true, ""}), HasSubstr("no cycle had begun"));
  EXPECT_THAT(MaintenanceOutcome(c, {false, ""}), HasSubstr("no maintenance request"));
  c.verb = Verb::kMaintenanceRetry;
  EXPECT_THAT(MaintenanceOutcome(c, {true, "CheckFailed"}),
              HasSubstr("from CheckFailed to Draining"));
  c.verb = Verb::kMaintenanceReboot;
  EXPECT_THAT(MaintenanceOutcome(c, {true, ""}), StartsWith("node3: set RebootRequested=True"));
  EXPECT_THAT(MaintenanceOutcome(c, {false, ""}), HasSubstr("already has"));
  EXPECT_EQ(MaintenanceCommandLine(c), "maintenance reboot node3");
}

TEST(RequestConditionProblem, TakesAQualifiedNameTheBridgeDoesNotWrite) {
  EXPECT_EQ(RequestConditionProblem("RebootRequested"), "");
  EXPECT_EQ(RequestConditionProblem("example.com/Reboot_Now"), "");
  EXPECT_NE(RequestConditionProblem(""), "");
  EXPECT_NE(RequestConditionProblem("Reboot Requested"), "");
  EXPECT_NE(RequestConditionProblem("-Reboot"), "");
  EXPECT_NE(RequestConditionProblem("a/b/c"), "");
  EXPECT_THAT(RequestConditionProblem("SlurmMaintenance"), HasSubstr("the bridge writes"));
  EXPECT_THAT(RequestConditionProblem("SlurmDrained"), HasSubstr("the bridge writes"));
  EXPECT_THAT(RequestConditionProblem("DrainRequested"), HasSubstr("drain"));
}

}  // namespace
}  // namespace skb::bridge::cli

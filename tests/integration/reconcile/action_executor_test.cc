// SPDX-License-Identifier: Apache-2.0
// The action executor against the real slurmctld and kube-apiserver of the testbed: each
// action does what it says, is idempotent, never touches an admin's drain, keeps other
// controllers' node conditions, and is recorded as an Event on the node.
#include "bridge/reconcile/action_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/time_format.h"
#include "src/health/node_health.h"
#include "tests/integration/reconcile/act_test_env.h"

namespace skb::bridge {
namespace {

using plan::Action;
using std::chrono::seconds;
using testbed::RunCommand;
using testbed::Shell;
using ::testing::HasSubstr;

// node4 of the testbed: drained and resumed here, always resumed afterwards.
constexpr char kNode[] = "node4";

class ActionExecutorTest : public testing::ActOnTestbedTest {
 protected:
  void SetUp() override {
    k8s::EventRecorderOptions eo;
    eo.host = "executor-test";
    ConnectAndPrepare(kNode, eo);
  }
  void TearDown() override {
    StopEvents();
    Cleanup();
  }
  void Cleanup() { Shell(StrCat("scontrol update nodename=", kNode, " state=resume 2>/dev/null")); }
  std::string SlurmReason() {
    return std::string(
        StripWhitespace(Shell(StrCat("sinfo -h -n ", kNode, " -o '%E' | head -1")).out));
  }
  std::string SlurmState() {
    return std::string(
        StripWhitespace(Shell(StrCat("sinfo -h -N -n ", kNode, " -o '%T' | head -1")).out));
  }
  nlohmann::json Condition(const std::string& type) {
    auto node = kube_->Get(k8s::Resource::Nodes(), "", kNode);
    EXPECT_TRUE(node.ok()) << node.status();
    for (const auto& c : (*node)["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return nullptr;
  }
  // Events on the node with this reason, as kubectl sees them.
  int EventCount(const std::string& reason) {
    events_->Flush();
    auto r =
        Shell(StrCat("kubectl get events -n default --field-selector involvedObject.name=", kNode,
                     ",reason=", reason, " -o jsonpath='{range .items[*]}{.count}{\"\\n\"}{end}'"));
    int total = 0;
    for (auto line : StrSplit(r.out, '\n', true)) total += std::atoi(std::string(line).c_str());
    return total;
  }

  Action Drain(std::string text) {
    Action a;
    a.op = plan::DrainSlurmNode{};
    a.node = kNode;
    a.As<plan::DrainSlurmNode>().reason = health::SlurmReason(text);
    a.event_reason = "ExecutorTestDrained";
    a.event_message = "drained by the executor test: " + text;
    return a;
  }
  Action Resume(std::string expected) {
    Action a;
    a.op = plan::ResumeSlurmNode{};
    a.node = kNode;
    a.As<plan::ResumeSlurmNode>().expected_reason = std::move(expected);
    a.event_reason = "ExecutorTestResumed";
    a.event_message = "resumed by the executor test";
    return a;
  }
};

TEST_F(ActionExecutorTest, DrainThenResumeIsIdempotentAndEvented) {
  int before = EventCount("ExecutorTestDrained");
  Action drain = Drain("GPUHealthy=False: XID 79 on GPU 3");
  {
    Status st = exec_->Execute(drain).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  EXPECT_EQ(SlurmReason(), "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
  EXPECT_THAT(SlurmState(), HasSubstr("drain"));
  {
    Status st = exec_->Execute(drain).status();
    ASSERT_TRUE(st.ok()) << st;
  }  // again: nothing changes, no second Event
  EXPECT_EQ(EventCount("ExecutorTestDrained"), before + 1);

  Action resume = Resume(drain.As<plan::DrainSlurmNode>().reason);
  {
    Status st = exec_->Execute(resume).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  EXPECT_THAT(SlurmState(), ::testing::Not(HasSubstr("drain")));
  {
    Status st = exec_->Execute(resume).status();
    ASSERT_TRUE(st.ok()) << st;
  }  // not drained any more: fine
  EXPECT_GE(EventCount("ExecutorTestResumed"), 1);
}

TEST_F(ActionExecutorTest, ResumeRefusesADrainThatChangedHands) {
  ASSERT_TRUE(exec_->Execute(Drain("cordoned (spec.unschedulable)")).ok());
  // An admin re-drains the node with their own reason after the plan was made.
  ASSERT_EQ(Shell(StrCat("scontrol update nodename=", kNode,
                         " state=drain reason='admin: replacing PSU'"))
                .exit_code,
            0);
  Status s = exec_->Execute(Resume("k8s-bridge: cordoned (spec.unschedulable)")).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_EQ(SlurmReason(), "admin: replacing PSU");
  // A bridge drain over an admin's drain does not take it over either.
  {
    Status st = exec_->Execute(Drain("GPUHealthy=False")).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  EXPECT_EQ(SlurmReason(), "admin: replacing PSU");
}

TEST_F(ActionExecutorTest, ConditionKeepsOthersAndTransitionTimeOnlyFlipsWithStatus) {
  Action a;
  a.op = plan::SetNodeCondition{};
  a.node = kNode;
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", ""};
  a.event_reason = "SlurmNodeNotDrained";
  a.event_message = "executor test";
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  nlohmann::json c1 = Condition("SlurmDrained");
  ASSERT_FALSE(c1.is_null());
  EXPECT_EQ(c1["status"], "False");
  std::this_thread::sleep_for(seconds(1));
  a.As<plan::SetNodeCondition>().condition.message = "still not drained";
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  nlohmann::json c2 = Condition("SlurmDrained");
  EXPECT_EQ(c2["message"], "still not drained");
  EXPECT_EQ(c2["lastTransitionTime"], c1["lastTransitionTime"]) << "status did not flip";
  std::this_thread::sleep_for(seconds(1));
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "True", "DrainedByBridge",
                                              "k8s-bridge: test"};
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  nlohmann::json c3 = Condition("SlurmDrained");
  EXPECT_EQ(c3["status"], "True");
  EXPECT_NE(c3["lastTransitionTime"], c1["lastTransitionTime"]) << "status flipped";
  // kwok's Ready condition is untouched by the strategic merge.
  EXPECT_EQ(Condition("Ready")["status"], "True");
  // Leave the node as the planner would find it.
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", ""};
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
}

// When the planner's cache knows the transition (plan::ConditionSpec::transition), the
// executor writes it as it is, without reading the node.
TEST_F(ActionExecutorTest, ATransitionTheCacheKnowsIsWrittenAsItIs) {
  using Transition = plan::ConditionSpec::Transition;
  Action a;
  a.op = plan::SetNodeCondition{};
  a.node = kNode;
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", "kept"};
  a.As<plan::SetNodeCondition>().condition.transition = Transition::kKeep;
  auto since = k8s::ParseTime("2026-01-02T03:04:05Z");
  ASSERT_TRUE(since.ok());
  a.As<plan::SetNodeCondition>().condition.since = *since;
  a.event_reason = "SlurmNodeNotDrained";
  a.event_message = "executor test";
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  EXPECT_EQ(Condition("SlurmDrained")["lastTransitionTime"], "2026-01-02T03:04:05Z");
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", ""};
  a.As<plan::SetNodeCondition>().condition.transition = Transition::kNow;
  {
    Status st = exec_->Execute(a).status();
    ASSERT_TRUE(st.ok()) << st;
  }
  nlohmann::json now = Condition("SlurmDrained");
  EXPECT_NE(now["lastTransitionTime"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(now.value("message", ""), "") << "an empty message is left out";
}

// Reservation pods pass Pod Security "restricted" (the chart's reservation namespace
// enforces it): created by the executor in a namespace that enforces it, admitted.
TEST_F(ActionExecutorTest, ReservationPodPassesRestrictedPodSecurity) {
  const std::string ns = "skb-restricted-test";
  Shell(StrCat("kubectl delete namespace ", ns, " --wait=true 2>/dev/null"));
  ASSERT_EQ(Shell(StrCat("kubectl create namespace ", ns, " && kubectl label namespace ", ns,
                         " pod-security.kubernetes.io/enforce=restricted"))
                .exit_code,
            0);
  Action a;
  a.op = plan::CreateReservationPod{};
  a.node = kNode;
  plan::ReservationSpec& r = a.As<plan::CreateReservationPod>().reservation;
  r.namespace_name = ns;
  r.name = "restricted-check";
  r.node = kNode;
  r.gpu_resource = "nvidia.com/gpu";
  r.gpus = 0;  // holds nothing on the shared node
  r.priority_class_name = "slurm-idle";
  r.image = "busybox:1.36";
  r.command = {"/bin/sh", "-c", "sleep 3600"};
  a.event_reason = "ReservationCreated";
  a.event_message = "restricted check";
  Status s = exec_->Execute(a).status();
  EXPECT_TRUE(s.ok()) << s;  // a violation is a Forbidden naming the restricted rule
  auto pod = kube_->Get(k8s::Resource::Pods(), ns, r.name);
  EXPECT_TRUE(pod.ok()) << pod.status();
  Shell(StrCat("kubectl delete namespace ", ns, " --wait=false"));
}

TEST_F(ActionExecutorTest, ErrorsAreTypedAndEvented) {
  Action drain = Drain("x");
  drain.node = "no-such-node";
  Status s = exec_->Execute(drain).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.code(), StatusCode::kUnavailable) << s;
  Action cond;
  cond.op = plan::SetNodeCondition{};
  cond.node = "no-such-node";
  cond.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", ""};
  EXPECT_EQ(exec_->Execute(cond).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace skb::bridge

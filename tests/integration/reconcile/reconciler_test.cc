// SPDX-License-Identifier: Apache-2.0
// One reconcile step end to end on the real testbed, without informers: the Kubernetes node
// is read from the apiserver, the Slurm node from slurmctld, and the Reconciler plans with
// the pure core and acts through the executor. A condition set with kubectl drains the
// Slurm node with a readable reason; cleared, the node is resumed; an admin's drain is
// never resumed; Slurm's view shows up as node conditions.
#include "bridge/reconcile/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/reconcile/k8s_convert.h"
#include "tests/integration/reconcile/act_test_env.h"

namespace skb::bridge {
namespace {

using std::chrono::seconds;
using testbed::Shell;
using ::testing::HasSubstr;

constexpr char kNode[] = "node3";

class ReconcilerTest : public testing::ActOnTestbedTest {
 protected:
  void SetUp() override {
    ConnectAndPrepare(kNode);
    queue_ = std::make_unique<reconcile::WorkQueue>(clock_);
    config::Config c;
    c.features.labels.clear();  // features are not what this test is about
    rec_ = std::make_unique<Reconciler>(c, inventory::NodeNameMap{}, &clock_, exec_.get(),
                                        queue_.get());
    Cleanup();
  }
  void TearDown() override {
    Cleanup();
    StopEvents();
  }
  void Cleanup() {
    SetGpuHealthy("True", "test cleanup");
    Shell(StrCat("scontrol update nodename=", kNode, " state=resume 2>/dev/null"));
  }
  void SetGpuHealthy(const std::string& status, const std::string& message) {
    std::string patch = StrCat(R"({"status":{"conditions":[{"type":"GPUHealthy","status":")",
                               status, R"(","reason":"Test","message":")", message,
                               R"(","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})");
    auto r = testbed::RunCommand({"kubectl", "patch", "node", kNode, "--subresource=status",
                                  "--type=strategic", "-p", patch},
                                 seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Observe both sides as the informers and the poller would, then run one step.
  ReconcileResult Step() {
    auto obj = kube_->Get(k8s::Resource::Nodes(), "", kNode);
    EXPECT_TRUE(obj.ok()) << obj.status();
    auto info = k8s::ParseNode(*obj);
    EXPECT_TRUE(info.ok());
    rec_->UpdateK8sNode(ToK8sNode(*info));
    auto nodes = slurm_->LoadNodes(0);
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    rec_->SetSlurmNodes(nodes->items);
    auto jobs = slurm_->LoadJobs(0);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    rec_->SetSlurmJobs(jobs->items);
    return rec_->ReconcileNode(kNode);
  }
  std::string SlurmReason() {
    return std::string(
        StripWhitespace(Shell(StrCat("sinfo -h -n ", kNode, " -o '%E' | head -1")).out));
  }
  std::string Condition(const std::string& type, const std::string& field) {
    return testbed::RunCommand(
               {"kubectl", "get", "node", kNode, "-o",
                StrCat("jsonpath={.status.conditions[?(@.type==\"", type, "\")].", field, "}")},
               seconds(30))
        .out;
  }

  std::unique_ptr<reconcile::WorkQueue> queue_;
  std::unique_ptr<Reconciler> rec_;
};

TEST_F(ReconcilerTest, ConditionDrainsAndClearingResumes) {
  SetGpuHealthy("False", "XID 79 on GPU 3");
  ReconcileResult r = Step();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(SlurmReason(), "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
  // The next observation publishes the drain and then has nothing left to do.
  ASSERT_TRUE(Step().status.ok());
  EXPECT_EQ(Condition("SlurmDrained", "status"), "True");
  EXPECT_EQ(Condition("SlurmDrained", "reason"), "DrainedByBridge");
  EXPECT_TRUE(Step().plan.actions.empty());

  SetGpuHealthy("True", "recovered");
  ASSERT_TRUE(Step().status.ok());
  EXPECT_EQ(SlurmReason(), "none");
  ASSERT_TRUE(Step().status.ok());
  EXPECT_EQ(Condition("SlurmDrained", "status"), "False");
  EXPECT_TRUE(Step().plan.actions.empty());
}

// The daemon's status lane: ReconcileNode acts on Slurm and leaves the node conditions to
// WriteNodeStatus, which writes them as they are when it runs: a drain is not held up by
// condition writes, and a state that came and went before its write is never written.
TEST_F(ReconcilerTest, StatusLaneWritesConditionsApartAsTheyAreWhenItRuns) {
  reconcile::WorkQueue status(clock_);
  rec_->SetStatusQueue(&status);
  auto write_status = [&] {
    auto key = status.Get();
    EXPECT_EQ(key.value_or(""), kNode);
    ReconcileResult r = rec_->WriteNodeStatus(kNode);
    if (key) status.Done(*key);
    return r;
  };
  auto executed = [](const ReconcileResult& r, std::string_view kind) {
    int n = 0;
    for (const auto& [index, s] : r.outcomes) n += s.ok() && r.plan.actions[index].Kind() == kind;
    return n;
  };

  SetGpuHealthy("False", "XID 48 on GPU 1");
  ReconcileResult r = Step();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(executed(r, plan::DrainSlurmNode::kName), 1);
  EXPECT_EQ(SlurmReason(), "k8s-bridge: GPUHealthy=False: XID 48 on GPU 1");
  // The drained state observed: the condition is planned, queued apart, not written here.
  r = Step();
  EXPECT_EQ(executed(r, plan::SetNodeCondition::kName), 0);
  EXPECT_NE(Condition("SlurmDrained", "status"), "True");
  ASSERT_EQ(status.Len(), 1u);
  r = write_status();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(executed(r, plan::SetNodeCondition::kName), r.executed);
  EXPECT_EQ(Condition("SlurmDrained", "status"), "True");
  const std::string since = Condition("SlurmDrained", "lastTransitionTime");

  // Resumed, then drained again before the status lane ran: SlurmDrained=False is never
  // written; one write carries the new drain, and the transition time stays.
  SetGpuHealthy("True", "recovered");
  ASSERT_TRUE(Step().status.ok());
  EXPECT_EQ(SlurmReason(), "none");
  ASSERT_TRUE(Step().status.ok());
  SetGpuHealthy("False", "XID 79 on GPU 2");
  ASSERT_TRUE(Step().status.ok());
  ASSERT_TRUE(Step().status.ok());
  EXPECT_EQ(status.Len(), 1u);  // one entry, however often the node was planned
  r = write_status();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.executed, 1);
  EXPECT_EQ(Condition("SlurmDrained", "status"), "True");
  EXPECT_EQ(Condition("SlurmDrained", "message"), "k8s-bridge: GPUHealthy=False: XID 79 on GPU 2");
  EXPECT_EQ(Condition("SlurmDrained", "lastTransitionTime"), since);
  // Nothing left for either lane once the written state is observed.
  r = Step();
  EXPECT_TRUE(r.plan.actions.empty());
  EXPECT_EQ(status.Len(), 0u);
}

TEST_F(ReconcilerTest, AdminDrainSurvivesAndIsShownAsSuch) {
  ASSERT_EQ(
      Shell(StrCat("scontrol update nodename=", kNode, " state=drain reason='admin: swap PSU'"))
          .exit_code,
      0);
  ASSERT_TRUE(Step().status.ok());
  ReconcileResult r = Step();
  EXPECT_TRUE(r.plan.actions.empty());
  EXPECT_THAT(r.plan.explanation, ::testing::Contains(HasSubstr("never resumed by the bridge")));
  EXPECT_EQ(SlurmReason(), "admin: swap PSU");
  EXPECT_EQ(Condition("SlurmDrained", "reason"), "DrainedByAdmin");
  EXPECT_EQ(Condition("SlurmDrained", "message"), "admin: swap PSU");
}

// kubernetes.node_names: the Kubernetes node node3 carries the Slurm name node4 in a label.
// A condition on node3 drains Slurm's node4; Slurm's view of node4 is written on node3; a
// label naming a node Slurm lacks is a Warning on node3 with both names.
class NodeNamesTest : public ReconcilerTest {
 protected:
  static constexpr char kLabel[] = "skb-test/slurm-name";
  static constexpr char kSlurmNode[] = "node4";
  void SetUp() override {
    ReconcilerTest::SetUp();
    config::Config c;
    c.features.labels.clear();
    c.kubernetes.node_names.mode = inventory::NodeNameMap::Mode::kLabel;
    c.kubernetes.node_names.label = kLabel;
    rec_ = std::make_unique<Reconciler>(c, c.kubernetes.node_names, &clock_, exec_.get(),
                                        queue_.get());
    Label(kSlurmNode);
  }
  void TearDown() override {
    SetGpuHealthy("True", "test cleanup");
    Shell(StrCat("kubectl label node ", kNode, " ", kLabel, "-"));
    Shell(StrCat("scontrol update nodename=", kSlurmNode, " state=resume 2>/dev/null"));
    // The conditions this test wrote on node3 described node4 or no node: node3's again.
    EXPECT_TRUE(Step().status.ok());
    ReconcilerTest::TearDown();
  }
  void Label(const std::string& value) {
    ASSERT_EQ(
        Shell(StrCat("kubectl label node ", kNode, " --overwrite ", kLabel, "=", value)).exit_code,
        0);
  }
  ReconcileResult StepAs(const std::string& slurm_name) {
    Step();  // observes both sides (its ReconcileNode(node3) has no Kubernetes node now)
    return rec_->ReconcileNode(slurm_name);
  }
};

TEST_F(NodeNamesTest, EachSideIsActedOnUnderItsOwnName) {
  SetGpuHealthy("False", "XID 31 on GPU 0");
  ReconcileResult r = StepAs(kSlurmNode);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(std::string(StripWhitespace(
                Shell(StrCat("sinfo -h -n ", kSlurmNode, " -o '%E' | head -1")).out)),
            "k8s-bridge: GPUHealthy=False: XID 31 on GPU 0");
  EXPECT_EQ(SlurmReason(), "none");  // Slurm's node3 is not node3 in Kubernetes here
  ASSERT_TRUE(StepAs(kSlurmNode).status.ok());
  EXPECT_EQ(Condition("SlurmDrained", "status"), "True");
  EXPECT_EQ(Condition("SlurmDrained", "reason"), "DrainedByBridge");
  EXPECT_TRUE(StepAs(kSlurmNode).plan.actions.empty());
}

TEST_F(NodeNamesTest, AnUnpairedNodeIsAWarningWithBothNames) {
  Label("gpu-nosuch");
  ReconcileResult r = StepAs("gpu-nosuch");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(Condition("SlurmNodeHealthy", "status"), "Unknown");
  EXPECT_EQ(Condition("SlurmNodeHealthy", "reason"), "SlurmNodeNotFound");
  std::string events;
  EXPECT_TRUE(testbed::WaitFor(
      [&] {
        events = Shell(StrCat("kubectl get events -A --field-selector involvedObject.name=", kNode,
                              ",reason=SlurmNodeNotFound,type=Warning -o "
                              "jsonpath='{.items[*].message}'"))
                     .out;
        return events.find("pairs with Slurm node gpu-nosuch") != std::string::npos;
      },
      seconds(30)))
      << events;
  EXPECT_THAT(events, HasSubstr("Kubernetes node node3 pairs with Slurm node gpu-nosuch"));
  EXPECT_TRUE(StepAs("gpu-nosuch").plan.actions.empty());
}

}  // namespace
}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// The reconcile step on fakes: how a node's plan is ordered and how failures of one action
// affect the others. Against the real systems: tests/integration/reconcile/reconciler_test.cc.
#include "bridge/reconcile/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "src/ownership/reservation.h"

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;

class ReconcilerChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = config::ParseConfig(R"({"lending": {"enabled": true}, "features": {"labels": []}})");
    ASSERT_TRUE(c.ok()) << c.status();
    cfg_ = *c;
    exec_ = std::make_unique<ActionExecutor>(&slurm_, &kube_, &events_, &clock_, cfg_.lending);
    rec_ =
        std::make_unique<Reconciler>(cfg_, inventory::NodeNameMap{}, &clock_, exec_.get(), &queue_);
    slurm::NodeView n;
    n.name = kNode;
    n.base_state = skb::slurm::NodeBaseState::kIdle;
    n.gpus = {{"", 8}};
    slurm_.AddNode(n);
    rec_->SetSlurmNodes({n});
  }

  void SetK8sNode(std::vector<inventory::NodeCondition> conditions) {
    inventory::K8sNode k;
    k.name = kNode;
    k.uid = "uid-node2";
    k.gpu_capacity = k.gpu_allocatable = 8;
    k.conditions = std::move(conditions);
    rec_->UpdateK8sNode(std::move(k));
  }

  // A pod with the reservation's name that is not the bridge's: every reservation create
  // is refused (FailedPrecondition), as with a ResourceQuota or a namespace being deleted.
  void RefuseReservations() {
    nlohmann::json pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata",
                           {{"name", ownership::ReservationName(cfg_.lending, kNode)},
                            {"namespace", cfg_.lending.namespace_name}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::Pods(), cfg_.lending.namespace_name, pod).ok());
  }

  static constexpr char kNode[] = "node2";
  config::Config cfg_;
  SimulatedClock clock_{Clock::TimePoint{} + std::chrono::hours(1'000'000)};
  slurm::FakeSlurmClient slurm_;
  k8s::FakeKubeClient kube_;
  k8s::DiscardingEventRecorder events_;
  reconcile::WorkQueue queue_{clock_};
  std::unique_ptr<ActionExecutor> exec_;
  std::unique_ptr<Reconciler> rec_;
};

// A GPU fault drains the node in the same pass although the reservation create planned with
// it is refused: the drain goes first, and the refusal holds back only the ownership chain.
TEST_F(ReconcilerChainTest, HealthDrainIsNotHeldBackByARefusedReservationCreate) {
  RefuseReservations();
  SetK8sNode({{"GPUHealthy", "False", "XidError", "XID 79 on GPU 3", {}}});
  ReconcileResult r = rec_->ReconcileNode(kNode);

  ASSERT_GE(r.plan.actions.size(), 2u);
  EXPECT_EQ(r.plan.actions.front().Kind(), plan::DrainSlurmNode::kName);
  bool create_refused = false;
  for (const auto& [index, status] : r.outcomes) {
    if (r.plan.actions[index].Kind() == plan::CreateReservationPod::kName) {
      create_refused = status.status().code() == StatusCode::kFailedPrecondition;
    }
  }
  EXPECT_TRUE(create_refused) << r.status;
  EXPECT_EQ(r.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(slurm_.Node(kNode).drain);
  EXPECT_EQ(slurm_.Node(kNode).reason, "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
}

// A retryable failure decides the requeue even when a refusal came first: the drain that
// failed for a busy slurmctld is retried with back-off, not after the refusal's 10 s.
TEST_F(ReconcilerChainTest, RetryableFailureWinsTheRequeue) {
  RefuseReservations();
  slurm_.FailNext("DrainNode", UnavailableError("slurmctld busy"));
  SetK8sNode({{"GPUHealthy", "False", "XidError", "XID 79", {}}});
  ReconcileResult r = rec_->ReconcileNode(kNode);
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable) << r.status;
  int attempted_creates = 0;
  for (const auto& [index, status] : r.outcomes) {
    attempted_creates += r.plan.actions[index].Kind() == plan::CreateReservationPod::kName;
  }
  EXPECT_EQ(attempted_creates, 1);  // the failed drain did not hold back the create
}

// When the lend drains, health neither drains nor resumes: a health resume run before the
// lend drain would open the node to Slurm between the two.
TEST_F(ReconcilerChainTest, LendDrainReplacesHealthDrainAndResume) {
  slurm::NodeView n = slurm_.Node(kNode);
  n.drain = true;
  n.reason = "k8s-bridge: GPUHealthy=False: XID 79";
  slurm_.AddNode(n);
  rec_->SetSlurmNodes({n});
  SetK8sNode({});  // healthy again: health alone would resume
  inventory::GpuPod preemptor;
  preemptor.namespace_name = "default";
  preemptor.name = "infer";
  preemptor.node_name = kNode;
  preemptor.gpus = 8;
  preemptor.phase = "Running";
  rec_->UpdatePod(preemptor);  // no reservation, a GPU pod: the node is lent
  health::NodePlan p = rec_->PlanNode(kNode);
  std::vector<std::string> drains;
  int resumes = 0;
  for (const auto& a : p.actions) {
    if (const auto* d = a.Get<plan::DrainSlurmNode>()) drains.push_back(d->reason);
    resumes += a.Kind() == plan::ResumeSlurmNode::kName;
  }
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_THAT(drains[0], HasSubstr("lent to default/infer"));
  EXPECT_EQ(resumes, 0);
}

// A leader deposed mid-plan (its gate closes) stops between two actions.
TEST_F(ReconcilerChainTest, ADeposedLeaderStopsBetweenTwoActions) {
  int allowed = 1;
  rec_->SetActingGate([&] { return allowed-- > 0; });
  SetK8sNode({{"GPUHealthy", "False", "XidError", "XID 79", {}}});
  ReconcileResult r = rec_->ReconcileNode(kNode);
  ASSERT_GE(r.plan.actions.size(), 2u);  // the drain, the reservation's create, ...
  EXPECT_EQ(r.executed, 1);
  EXPECT_EQ(r.status.code(), StatusCode::kCancelled);
  EXPECT_TRUE(slurm_.Node(kNode).drain);
  auto pods = kube_.List(k8s::Resource::Pods(), cfg_.lending.namespace_name, {});
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->items.empty());  // the create after the gate closed never ran
}

}  // namespace
}  // namespace skb::bridge

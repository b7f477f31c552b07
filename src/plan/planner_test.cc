// SPDX-License-Identifier: Apache-2.0
#include "src/plan/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "src/health/node_health.h"

namespace skb::plan {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;
using std::chrono::hours;
using ::testing::ElementsAre;

const Clock::TimePoint kNow = Clock::TimePoint{} + hours(24 * 365 * 50);

// An idle node both sides know, its Slurm conditions already published.
ManagedNode IdleNode() {
  ManagedNode n;
  n.name = "node1";
  inventory::K8sNode k;
  k.name = "node1";
  k.conditions = {{"Ready", "True", "KubeletReady", "", kNow - hours(1)},
                  {"SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding", kNow},
                  {"SlurmDrained", "False", "NotDrained", "", kNow}};
  k.gpu_capacity = k.gpu_allocatable = 8;
  n.k8s = k;
  slurm::NodeView s;
  s.name = "node1";
  s.base_state = slurm::NodeBaseState::kIdle;
  s.gpus = {{"h100", 8}};
  n.slurm = s;
  return n;
}

void InMaintenance(ManagedNode* n, const config::Config& cfg) {
  n->k8s->conditions.push_back(
      {cfg.health.maintenance_condition, "True", "Planned", "fan swap", kNow - hours(1)});
}

const Action* Find(const NodePlan& p, std::string_view kind) {
  for (const Action& a : p.actions) {
    if (a.Kind() == kind) return &a;
  }
  return nullptr;
}

TEST(PlanNode, OwnerWithoutLendingFollowsHealth) {
  config::Config cfg;
  ManagedNode n = IdleNode();
  EXPECT_EQ(PlanNode(n, cfg, kNow).owner, plan::NodeOwner::kSlurm);
  EXPECT_EQ(PlanOwner(n, cfg, kNow), plan::NodeOwner::kSlurm);

  InMaintenance(&n, cfg);
  EXPECT_EQ(PlanNode(n, cfg, kNow).owner, plan::NodeOwner::kUnhealthy);

  ManagedNode lent = IdleNode();
  lent.slurm->drain = true;
  lent.slurm->reason = "k8s-bridge: lent to ml/infer-0";
  EXPECT_EQ(PlanOwner(lent, cfg, kNow), plan::NodeOwner::kKubernetes);

  ManagedNode slurm_only = IdleNode();
  slurm_only.k8s.reset();
  EXPECT_EQ(PlanNode(slurm_only, cfg, kNow).owner, plan::NodeOwner::kUnknown);
}

TEST(PlanNode, HealthActionsCarryTheirCauseAndEvent) {
  config::Config cfg;
  ManagedNode n = IdleNode();
  InMaintenance(&n, cfg);
  NodePlan p = PlanNode(n, cfg, kNow);
  const Action* drain = Find(p, plan::DrainSlurmNode::kName);
  ASSERT_NE(drain, nullptr);
  EXPECT_EQ(drain->cause, Cause::kMaintenance);
  EXPECT_EQ(drain->event_type, EventType::kWarning);
  EXPECT_EQ(DrainCauseLabel(drain->cause), "maintenance");

  // Once drained and the maintenance over: the resume says why the drain was made.
  ManagedNode done = IdleNode();
  done.slurm->drain = true;
  done.slurm->reason = drain->As<plan::DrainSlurmNode>().reason;
  // Each plan stays alive while its action is read (Find points into it).
  NodePlan resumed = PlanNode(done, cfg, kNow);
  const Action* resume = Find(resumed, plan::ResumeSlurmNode::kName);
  ASSERT_NE(resume, nullptr);
  EXPECT_EQ(resume->cause, Cause::kMaintenance);
  EXPECT_EQ(resume->event_type, EventType::kNormal);

  done.slurm->reason = health::SlurmReason("GPUHealthy=False: XID 79");
  NodePlan resumed_health = PlanNode(done, cfg, kNow);
  resume = Find(resumed_health, plan::ResumeSlurmNode::kName);
  ASSERT_NE(resume, nullptr);
  EXPECT_EQ(resume->cause, Cause::kHealth);
  EXPECT_EQ(DrainCauseLabel(resume->cause), "health");
}

TEST(PlanNode, ConditionEventsAreWarningsUnlessGoodNews) {
  config::Config cfg;
  ManagedNode n = IdleNode();
  n.slurm->base_state = slurm::NodeBaseState::kDown;
  n.slurm->drain = true;
  n.slurm->reason = "admin";
  NodePlan p = PlanNode(n, cfg, kNow);
  for (const Action& a : p.actions) {
    if (a.Kind() != plan::SetNodeCondition::kName) continue;
    EXPECT_EQ(a.cause, Cause::kSlurmState);
    EXPECT_EQ(a.event_type, EventType::kWarning) << ToString(a);
  }
  ManagedNode back = IdleNode();
  back.k8s->conditions[1] = {"SlurmNodeHealthy", "False", "SlurmNodeDown", "x", kNow};
  NodePlan back_plan = PlanNode(back, cfg, kNow);
  const Action* up = Find(back_plan, plan::SetNodeCondition::kName);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->event_type, EventType::kNormal);
}

TEST(PlanNode, StatusSliceIsTheFullPlansConditions) {
  config::Config cfg;
  cfg.lending.enabled = true;
  ManagedNode n = IdleNode();
  n.slurm->base_state = slurm::NodeBaseState::kDown;
  n.slurm->drain = true;
  n.slurm->reason = "admin";
  NodePlan full = PlanNode(n, cfg, kNow);
  std::vector<Action> conditions;
  for (const Action& a : full.actions) {
    if (a.Kind() == plan::SetNodeCondition::kName) conditions.push_back(a);
  }
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(health::PlanNodeConditions(n, cfg.health, kNow).actions, conditions);
}

// The maintenance cycle's record is a step of its chain, written by the reconcile lane in
// order with the drain it starts (the status lane writes only the conditions mirroring
// Slurm: it would write the record late, or never).
TEST(PlanNode, TheMaintenanceRecordRunsFirstInTheHealthChainWithOrWithoutLending) {
  for (const bool lending : {false, true}) {
    config::Config cfg;
    cfg.lending.enabled = lending;
    ManagedNode n = IdleNode();
    n.k8s->conditions.push_back({"RebootRequested", "True", "Firmware", "bios", kNow});
    NodePlan p = PlanNode(n, cfg, kNow);
    ASSERT_FALSE(p.actions.empty());
    const Action& first = p.actions.front();
    ASSERT_TRUE(first.Is<SetNodeCondition>()) << ToString(first);
    EXPECT_EQ(first.As<SetNodeCondition>().condition.type, "SlurmMaintenance");
    EXPECT_EQ(first.chain, Chain::kHealth) << "lending " << lending;
    EXPECT_FALSE(IsStatusLaneCondition(first));
    const Action* drain = Find(p, DrainSlurmNode::kName);
    ASSERT_NE(drain, nullptr);
    EXPECT_EQ(drain->chain, Chain::kHealth);
    // The status lane's slice has none of the cycle's steps.
    for (const Action& a : health::PlanNodeConditions(n, cfg.health, kNow).actions) {
      EXPECT_TRUE(IsStatusLaneCondition(a)) << ToString(a);
    }
  }
}

TEST(PlanNode, LendDrainReplacesHealthDrain) {
  config::Config cfg;
  cfg.lending.enabled = true;
  cfg.lending.namespace_name = "slurm-bridge";
  ManagedNode n = IdleNode();
  InMaintenance(&n, cfg);
  GpuPod p;
  p.namespace_name = "ml";
  p.name = "infer-0";
  p.gpus = 8;
  p.phase = "Pending";
  p.priority = 500'000;
  p.nominated_node_name = "node1";
  n.nominated_pods.push_back(p);
  NodePlan plan = PlanNode(n, cfg, kNow);
  EXPECT_EQ(plan.owner, plan::NodeOwner::kLending);
  std::vector<const Action*> drains;
  for (const Action& a : plan.actions) {
    if (a.Kind() == plan::DrainSlurmNode::kName) drains.push_back(&a);
  }
  ASSERT_EQ(drains.size(), 1u) << "the lend's drain replaces the health drain";
  EXPECT_EQ(drains[0]->cause, Cause::kLend);
  EXPECT_EQ(drains[0]->event_type, EventType::kWarning);
  EXPECT_EQ(DrainCauseLabel(drains[0]->cause), "lending");
  for (const Action& a : plan.actions) {
    if (a.Kind() == plan::SetNodeCondition::kName) continue;
    EXPECT_EQ(a.cause, Cause::kLend) << ToString(a);
  }
}

TEST(PlanNode, SwappingCountsAsSlurm) {
  EXPECT_EQ(CountedOwner(NodeOwner::kSwapping), NodeOwner::kSlurm);
  EXPECT_EQ(CountedOwner(NodeOwner::kKubernetes), NodeOwner::kKubernetes);
  EXPECT_EQ(NodeOwnerName(NodeOwner::kKubernetes), "k8s");
  EXPECT_EQ(NodeOwnerName(NodeOwner::kGpuShared), "gpu-shared");
}

}  // namespace
}  // namespace skb::plan

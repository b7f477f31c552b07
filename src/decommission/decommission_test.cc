// SPDX-License-Identifier: Apache-2.0
#include "src/decommission/decommission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace skb::decommission {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// The kinds of the plan's steps, in order, as "cordon node1": what the tests compare.
std::vector<std::string> Steps(const Plan& p) {
  std::vector<std::string> out;
  for (const Step& s : p.steps) out.push_back(DescribeStep(s));
  return out;
}

NodeFacts Node(const std::string& name) {
  NodeFacts n;
  n.k8s_name = name;
  n.slurm_name = name;
  return n;
}

TEST(Decommission, MidLendTheJobStillRunningKeepsTheNodeForSlurm) {
  // kube-scheduler preempted the reservation (it is being deleted); the job is in its grace.
  NodeFacts n = Node("node1");
  n.reservations = {{"slurm-bridge-reservations", "skb-res-node1"}};
  n.live_reservation = false;
  n.slurm_jobs = {12};
  n.drain = slurm::DrainOrigin::kBridgeLend;
  n.drain_reason = "k8s-bridge: lent to ml/infer-1";
  n.bridge_annotations = {"slurm-k8s-bridge.io/signalled-at"};
  n.bridge_taints = {"slurm-k8s-bridge.io/slurm-busy"};
  n.bridge_conditions = {"SlurmDrained"};
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kSlurm);
  EXPECT_EQ(p.nodes[0].why, "Slurm job 12 runs there");
  // The cordon first: the preemptor waiting for the node must not land once the
  // reservation is gone; the lend's drain is resumed last, the job never stopped.
  EXPECT_THAT(Steps(p),
              ElementsAre("cordon node1 in Kubernetes",
                          "release reservation slurm-bridge-reservations/skb-res-node1",
                          "resume node1 in Slurm (the bridge's lend)",
                          "remove from node node1: annotations slurm-k8s-bridge.io/signalled-at; "
                          "taints slurm-k8s-bridge.io/slurm-busy; conditions SlurmDrained"));
}

TEST(Decommission, ALentNodeWithPodsStaysKubernetesAndDrainedInSlurmInTheSitesWords) {
  NodeFacts n = Node("node2");
  n.drain = slurm::DrainOrigin::kBridgeLend;
  n.drain_reason = "k8s-bridge: lent to ml/infer-1";
  n.gpu_pods = {{"ml", "infer-1"}};
  n.bridge_annotations = {"slurm-k8s-bridge.io/lent-at", "slurm-k8s-bridge.io/lent-to"};
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kKubernetes);
  ASSERT_EQ(p.steps.size(), 2u);
  const auto* drain = std::get_if<DrainAs>(&p.steps[0]);
  ASSERT_NE(drain, nullptr);
  EXPECT_EQ(drain->node, "node2");
  EXPECT_EQ(drain->reason, "decommissioned: held by Kubernetes: pod ml/infer-1 uses its GPUs");
  // Not the bridge's prefix: no bridge that comes back later resumes it.
  EXPECT_FALSE(std::string_view(drain->reason).starts_with(slurm::kBridgeReasonPrefix));
  EXPECT_TRUE(std::holds_alternative<CleanNode>(p.steps[1]));
}

TEST(Decommission, AnIdleLentNodeStaysDrainedForKubernetes) {
  NodeFacts n = Node("node2");
  n.drain = slurm::DrainOrigin::kBridgeLend;
  n.drain_reason = "k8s-bridge: lent to ml/infer-1";
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kKubernetes);
  EXPECT_EQ(p.nodes[0].why, "lent to Kubernetes");
  EXPECT_THAT(Steps(p), ElementsAre("drain node2 in Slurm: 'decommissioned: held by Kubernetes: "
                                    "lent to Kubernetes'"));
}

TEST(Decommission, ANodeSharedGpuByGpuIsClosedToBothAndEverythingOfTheBridgeGoes) {
  NodeFacts n = Node("node1");
  n.slurm_jobs = {7, 8};
  n.gpu_pods = {{"ml", "a"}, {"ml", "b"}};
  n.placeholders = {30};
  n.hold_rules = {"skb-hold-node1-gpu-0", "skb-hold-node1-gpu-1"};
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kBoth);
  EXPECT_EQ(p.nodes[0].why, "Slurm jobs 7, 8 run there and pods ml/a, ml/b use its GPUs");
  EXPECT_THAT(
      Steps(p),
      ElementsAre("cordon node1 in Kubernetes",
                  "drain node1 in Slurm: 'decommissioned: shared by both schedulers: "
                  "Slurm jobs 7, 8 run there and pods ml/a, ml/b use its GPUs'",
                  "cancel placeholder job 30", "delete DeviceTaintRule skb-hold-node1-gpu-0",
                  "delete DeviceTaintRule skb-hold-node1-gpu-1"));
}

TEST(Decommission, IdleGpusHeldForSlurmStaySlurms) {
  NodeFacts n = Node("node3");
  n.hold_rules = {"skb-hold-node3-gpu-2"};
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kSlurm);
  EXPECT_THAT(Steps(p), ElementsAre("cordon node3 in Kubernetes",
                                    "delete DeviceTaintRule skb-hold-node3-gpu-2"));
}

TEST(Decommission, AHealthDrainOfTheBridgesStaysADrainInTheSitesWords) {
  NodeFacts n = Node("node4");
  n.reservations = {{"r", "skb-res-node4"}};
  n.live_reservation = true;
  n.drain = slurm::DrainOrigin::kBridge;
  n.drain_reason = "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3";
  Plan p = PlanDecommission({.nodes = {n}});
  EXPECT_THAT(Steps(p), ElementsAre("cordon node4 in Kubernetes",
                                    "drain node4 in Slurm: 'decommissioned: GPUHealthy=False: "
                                    "XID 79 on GPU 3'",
                                    "release reservation r/skb-res-node4"));
}

TEST(Decommission, AnAdminsDrainAndCordonAreNeverTouched) {
  NodeFacts n = Node("node5");
  n.cordoned = true;
  n.slurm_jobs = {3};
  n.gpu_pods = {{"ml", "x"}};
  n.drain = slurm::DrainOrigin::kOther;
  n.drain_reason = "swap PSU";
  n.bridge_labels = {"slurm-k8s-bridge.io/swap-guard"};
  Plan p = PlanDecommission({.nodes = {n}});
  EXPECT_EQ(p.nodes[0].holder, Holder::kBoth);
  EXPECT_THAT(Steps(p),
              ElementsAre("remove from node node5: labels slurm-k8s-bridge.io/swap-guard"));
}

TEST(Decommission, ANodeTheBridgeNeverTouchedIsLeftOut) {
  NodeFacts n = Node("node6");
  n.slurm_jobs = {1};
  n.gpu_pods = {{"ml", "y"}};
  n.drain = slurm::DrainOrigin::kOther;
  Plan p = PlanDecommission({.nodes = {n}});
  EXPECT_THAT(p.nodes, IsEmpty());
  EXPECT_THAT(p.steps, IsEmpty());
}

TEST(Decommission, ASecondRunOverWhatTheFirstLeftPlansNothing) {
  // What the first run leaves of the mid-lend and lent nodes above.
  NodeFacts slurms = Node("node1");
  slurms.cordoned = true;
  slurms.slurm_jobs = {12};
  NodeFacts lent = Node("node2");
  lent.drain = slurm::DrainOrigin::kOther;
  lent.drain_reason = "decommissioned: held by Kubernetes: pod ml/infer-1 uses its GPUs";
  lent.gpu_pods = {{"ml", "infer-1"}};
  Plan p = PlanDecommission({.nodes = {slurms, lent}});
  EXPECT_THAT(p.steps, IsEmpty());
  EXPECT_THAT(p.nodes, IsEmpty());
}

TEST(Decommission, ANodeOnOneSideOnlyGetsThatSidesSteps) {
  NodeFacts k8s_only = Node("gone-from-slurm");
  k8s_only.slurm_name.clear();
  k8s_only.reservations = {{"r", "skb-res-x"}};
  k8s_only.live_reservation = true;
  NodeFacts slurm_only = Node("node9");
  slurm_only.k8s_name.clear();
  slurm_only.drain = slurm::DrainOrigin::kBridgeLend;
  slurm_only.drain_reason = "k8s-bridge: lent to ml/p";
  Plan p = PlanDecommission({.nodes = {k8s_only, slurm_only}});
  ASSERT_EQ(p.nodes.size(), 2u);
  EXPECT_EQ(p.nodes[1].node, "node9");
  // node9 has no Kubernetes node: nothing can use it there, and Slurm keeps its drain.
  EXPECT_THAT(Steps(p), ElementsAre("cordon gone-from-slurm in Kubernetes",
                                    "drain node9 in Slurm: 'decommissioned: held by Kubernetes: "
                                    "lent to Kubernetes'",
                                    "release reservation r/skb-res-x"));
}

TEST(Decommission, ClusterObjectsAndJobRecordsGoToo) {
  Facts f;
  f.unplaced_placeholders = {41};
  f.unbound_reservations = {{"r", "skb-res-old"}};
  f.other_rules = {"skb-drain.node7.gpu-1"};
  f.quotas = {{"team-a", "skb-guarantee"}};
  f.priority_classes = {"slurm-idle"};
  f.job_records = {{5, "k8s-bridge:preemptible=true k8s-bridge-preempted=1700000000@ml/i note"},
                   {6, "k8s-bridge:preemptible=true"}};
  Plan p = PlanDecommission(f);
  EXPECT_THAT(
      Steps(p),
      ElementsAre("cancel placeholder job 41", "release reservation r/skb-res-old",
                  "delete DeviceTaintRule skb-drain.node7.gpu-1",
                  "delete ResourceQuota team-a/skb-guarantee", "delete PriorityClass slurm-idle",
                  "remove the preemption record from job 5"));
  const auto* c = std::get_if<SetAdminComment>(&p.steps.back());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->admin_comment, "k8s-bridge:preemptible=true note");
}

TEST(Decommission, AnAdminsGpuDrainGoesAndIsSaid) {
  NodeFacts n = Node("node1");
  n.drain_rules = {{"skb-drain.node1.gpu-3", "gpu-3 (swap it)"}};
  Plan p = PlanDecommission({.nodes = {n}});
  ASSERT_EQ(p.nodes.size(), 1u);
  EXPECT_EQ(p.nodes[0].holder, Holder::kNeither);
  EXPECT_THAT(Steps(p), ElementsAre("delete DeviceTaintRule skb-drain.node1.gpu-3"));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_THAT(p.warnings[0], StartsWith("node1 gpu-3 (swap it): drained with bridgectl"));
  EXPECT_THAT(Describe(p).back(), StartsWith("warning: node1 gpu-3"));
}

TEST(Decommission, ManyJobsAndPodsAreCountedNotListed) {
  NodeFacts n = Node("node1");
  n.slurm_jobs = {1, 2, 3, 4, 5};
  n.live_reservation = true;
  n.reservations = {{"r", "skb-res-node1"}};
  EXPECT_EQ(HolderOf(n).why, "Slurm jobs 1, 2, 3 and 2 more run there");
  std::vector<std::string> lines = Describe(PlanDecommission({.nodes = {n}}));
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines[0], StartsWith("node1: Slurm's (Slurm jobs 1, 2, 3"));
  EXPECT_THAT(lines[1], HasSubstr("cordon node1"));
}

TEST(Decommission, WithoutPreemptionRecordKeepsEverythingElse) {
  EXPECT_EQ(WithoutPreemptionRecord(""), "");
  EXPECT_EQ(WithoutPreemptionRecord("k8s-bridge-preempted=1,2@a/b"), "");
  EXPECT_EQ(WithoutPreemptionRecord("a  k8s-bridge-preempted=1@x/y b"), "a b");
}

}  // namespace
}  // namespace skb::decommission

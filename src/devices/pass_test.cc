// SPDX-License-Identifier: Apache-2.0
#include "src/devices/pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/devices/gres.h"
#include "src/devices/test_support.h"

namespace skb::devices {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

using test_support::kNow;

config::Config Cfg() { return test_support::SharingOn(); }

void Published(NodeDevices* n);

NodeDevices Node(std::string name, int gpus, int busy) {
  NodeDevices n;
  n.node = std::move(name);
  n.model = "h100";
  for (int i = 0; i < gpus; ++i) n.devices.push_back({i, DeviceName(i), /*k8s_hold=*/true});
  if (busy > 0) {
    NodeJob j;
    j.view.job_id = 100;
    j.view.state = slurm::JobState::kRunning;
    j.view.requeue = true;
    j.view.nodes = {n.node};
    j.view.admin_comment = "k8s-bridge:preemptible=false";
    for (int i = 0; i < busy; ++i) j.indices.push_back(i);
    n.jobs.push_back(std::move(j));
  }
  Published(&n);
  return n;
}

// The node's GPUDevicesHealthy condition as the lane wrote it: nothing to write this pass.
void Published(NodeDevices* n) {
  if (std::optional<DeviceAction> c = PlanDevicesCondition(*n)) {
    n->devices_condition = test_support::AsWritten(c->As<plan::SetNodeCondition>().condition);
  }
}

PendingPod Pod(std::string name, int64_t gpus, int32_t priority) {
  return {std::move(name), gpus, priority, ""};
}

TEST(PassTest, OneGivePerNodeAndTheHigherPriorityPodFirst) {
  // node1 has 2 idle GPUs, node2 has 1: two 2-GPU pods cannot both be served this pass.
  std::vector<NodeDevices> nodes = {Node("node1", 8, 6), Node("node2", 8, 7)};
  const std::vector<PendingPod> pending = {Pod("ml/low", 2, 200'000), Pod("ml/high", 2, 900'000)};
  const PassPlan p = PlanPass(nodes, pending, Cfg(), kNow);
  ASSERT_EQ(p.gives.size(), 1u);
  EXPECT_EQ(p.gives.at("ml/high"), "node1");
  ASSERT_EQ(p.actions.at("node1").size(), 1u);
  ASSERT_TRUE(p.actions.at("node1")[0].Is<SubmitPlaceholder>());
  EXPECT_EQ(p.actions.at("node1")[0].As<SubmitPlaceholder>().gpus, 2);
  EXPECT_THAT(p.waiting.at("ml/low"), HasSubstr("node"));
}

TEST(PassTest, TwoOneGpuPodsGoToTwoNodes) {
  std::vector<NodeDevices> nodes = {Node("node1", 8, 5), Node("node2", 8, 5)};
  const std::vector<PendingPod> pending = {Pod("ml/a", 1, 200'000), Pod("ml/b", 1, 200'000)};
  const PassPlan p = PlanPass(nodes, pending, Cfg(), kNow);
  ASSERT_EQ(p.gives.size(), 2u);
  EXPECT_NE(p.gives.at("ml/a"), p.gives.at("ml/b"));
  EXPECT_THAT(p.waiting, IsEmpty());
}

TEST(PassTest, RestoresMissingHoldsAndReportsViolations) {
  NodeDevices n = Node("node1", 4, 0);
  n.devices[3].k8s_hold = false;  // a hold deleted by hand
  n.devices[2].k8s_hold = false;
  n.claims.push_back({.pod = "ml/x", .devices = {"gpu-2"}, .allocated = true});
  const PassPlan p = PlanPass({n}, {}, Cfg(), kNow);
  // gpu-2 is a give whose placeholder is gone (a lifted device a pod uses): held again in
  // Slurm by a new placeholder (device_plan_test has the whole repair); gpu-3 held again.
  ASSERT_EQ(p.actions.at("node1").size(), 2u);
  ASSERT_TRUE(p.actions.at("node1")[0].Is<SubmitPlaceholder>());
  EXPECT_EQ(p.actions.at("node1")[0].As<SubmitPlaceholder>().pod, "ml/x");
  ASSERT_TRUE(p.actions.at("node1")[1].Is<AddDeviceHold>());
  EXPECT_EQ(p.actions.at("node1")[1].As<AddDeviceHold>().devices,
            std::vector<std::string>{"gpu-3"});
  ASSERT_EQ(p.violations.at("node1").size(), 1u);
  EXPECT_EQ(p.violations.at("node1")[0].device, "gpu-2");
}

// The node's GPU health condition comes last in its actions (a failed write stops no hold or
// give before it), and only when it differs from what the node has.
TEST(PassTest, TheGpuHealthConditionComesLastAndOnlyWhenItChanges) {
  NodeDevices n = Node("node1", 8, 6);
  n.devices[7].driver_taint = "gpu.nvidia.com/xid=79:NoSchedule";
  PassPlan p = PlanPass({n}, {}, Cfg(), kNow);
  ASSERT_FALSE(p.actions.at("node1").empty());
  const DeviceAction& last = p.actions.at("node1").back();
  ASSERT_TRUE(last.Is<plan::SetNodeCondition>());
  EXPECT_EQ(last.As<plan::SetNodeCondition>().condition.status, "False");
  EXPECT_GT(p.actions.at("node1").size(), 1u) << "the health holds before it";
  Published(&n);
  p = PlanPass({n}, {}, Cfg(), kNow);
  for (const DeviceAction& a : p.actions["node1"]) EXPECT_FALSE(a.Is<plan::SetNodeCondition>());
}

TEST(PassTest, PodsBelowTheThresholdWait) {
  const PassPlan p =
      PlanPass({Node("node1", 8, 0)}, std::vector<PendingPod>{Pod("ml/a", 1, 10)}, Cfg(), kNow);
  EXPECT_THAT(p.gives, IsEmpty());
  EXPECT_THAT(p.waiting.at("ml/a"), HasSubstr("below the inference threshold"));
}

// A give frees GPUs only on a node the pod may use: elsewhere it would preempt a Slurm job
// for a pod kube-scheduler never places there.
TEST(PassTest, AGiveGoesOnlyToANodeThePodsNodeSelectorAndAffinityAllow) {
  NodeDevices a = Node("node1", 8, 6), b = Node("node2", 8, 0);
  a.labels = {{"zone", "a"}};
  b.labels = {{"zone", "b"}};
  b.k8s_node = "node2.example.org";
  PendingPod in_b = Pod("ml/in-b", 2, 900'000);
  in_b.placement.node_selector = {{"zone", "b"}};
  PassPlan p = PlanPass({a, b}, std::vector<PendingPod>{in_b}, Cfg(), kNow);
  ASSERT_EQ(p.gives.size(), 1u);
  EXPECT_EQ(p.gives.at("ml/in-b"), "node2") << "node1's 2 idle GPUs fit best, but not zone b";

  // Zone b, but not that node (matchFields on the Kubernetes name): nowhere, and why.
  PendingPod nowhere = Pod("ml/nowhere", 1, 900'000);
  nowhere.placement.terms = {
      {{.key = "zone", .op = "In", .values = {"b"}},
       {.key = "metadata.name", .op = "NotIn", .values = {"node2.example.org"}, .field = true}}};
  p = PlanPass({a, b}, std::vector<PendingPod>{nowhere}, Cfg(), kNow);
  EXPECT_THAT(p.gives, IsEmpty());
  EXPECT_THAT(p.actions, IsEmpty()) << "nothing is freed for it";
  EXPECT_THAT(p.waiting.at("ml/nowhere"), HasSubstr("required node affinity"));
}

// kube-scheduler places no pod on a node with a NoSchedule or NoExecute taint the pod does
// not tolerate: a give there would free GPUs for a pod that never comes.
TEST(PassTest, AGiveSkipsANodeWithATaintThePodDoesNotTolerate) {
  NodeDevices tainted = Node("node1", 8, 6), clean = Node("node2", 8, 0);
  tainted.taints = {{.key = "nvidia.com/maintenance", .value = "true", .effect = "NoSchedule"}};
  PendingPod pod = Pod("ml/pod", 2, 900'000);
  PassPlan p = PlanPass({tainted, clean}, std::vector<PendingPod>{pod}, Cfg(), kNow);
  ASSERT_EQ(p.gives.size(), 1u);
  EXPECT_EQ(p.gives.at("ml/pod"), "node2") << "node1's 2 idle GPUs fit best, but it is tainted";

  pod.placement.tolerations = {{.key = "nvidia.com/maintenance", .op = "Exists"}};
  p = PlanPass({tainted, clean}, std::vector<PendingPod>{pod}, Cfg(), kNow);
  ASSERT_EQ(p.gives.size(), 1u);
  EXPECT_EQ(p.gives.at("ml/pod"), "node1") << "tolerated: the best fit again";

  // Untolerated taints on both nodes: nowhere, and why.
  clean.taints = {{.key = "dedicated", .value = "training", .effect = "NoExecute"}};
  p = PlanPass({tainted, clean}, std::vector<PendingPod>{Pod("ml/none", 1, 900'000)}, Cfg(), kNow);
  EXPECT_THAT(p.gives, IsEmpty());
  EXPECT_THAT(p.actions, IsEmpty()) << "nothing is freed for it";
  EXPECT_THAT(p.waiting.at("ml/none"),
              HasSubstr("node node2: taint dedicated=training:NoExecute not tolerated"));
}

}  // namespace
}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/k8s_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge {
namespace {

TEST(ToK8sNode, KeepsWhatThePlannerNeeds) {
  nlohmann::json obj = nlohmann::json::parse(R"({
    "metadata": {"name": "node1", "uid": "0c4e-node1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {
      "capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "7"},
      "conditions": [
        {"type": "GPUHealthy", "status": "False", "reason": "Xid", "message": "XID 79",
         "lastTransitionTime": "2026-11-21T23:42:04Z"},
        {"type": "Odd", "status": "False", "lastTransitionTime": "yesterday"}]}})");
  auto info = k8s::ParseNode(obj);
  ASSERT_TRUE(info.ok()) << info.status();
  inventory::K8sNode k = ToK8sNode(*info);
  EXPECT_EQ(k.name, "node1");
  EXPECT_EQ(k.uid, "0c4e-node1");
  EXPECT_TRUE(k.unschedulable);
  ASSERT_EQ(k.taints.size(), 1u);
  EXPECT_EQ(k.taints[0].effect, "NoSchedule");
  EXPECT_EQ(k.gpu_capacity, 8);
  EXPECT_EQ(k.gpu_allocatable, 7);
  ASSERT_NE(k.FindCondition("GPUHealthy"), nullptr);
  EXPECT_EQ(k.FindCondition("GPUHealthy")->message, "XID 79");
  EXPECT_EQ(k.FindCondition("Odd")->last_transition, Clock::TimePoint{});
  EXPECT_EQ(k.Label("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
}

TEST(ToGpuPod, OnlyGpuPodsAndReservationsRecognised) {
  auto gpu = k8s::ParsePod(nlohmann::json::parse(R"({
    "metadata": {"name": "reserve-node1", "namespace": "slurm-bridge",
                 "labels": {"slurm-k8s-bridge.io/role": "reservation"},
                 "deletionTimestamp": "2026-11-21T23:42:04Z"},
    "spec": {"nodeName": "node1", "priority": 1000,
             "containers": [{"name": "hold", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
    "status": {"phase": "Running"}})"));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto p = ToGpuPod(*gpu);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpus, 8);
  EXPECT_TRUE(p->reservation);
  EXPECT_TRUE(p->terminating);
  EXPECT_EQ(p->node_name, "node1");
  EXPECT_EQ(p->priority, 1000);
  auto cpu = k8s::ParsePod(nlohmann::json::parse(R"({
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})"));
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(ToGpuPod(*cpu).has_value());
}

}  // namespace
}  // namespace skb::bridge

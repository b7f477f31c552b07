// SPDX-License-Identifier: Apache-2.0
#include "src/devices/mode_switch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string_view>

namespace skb::devices {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

NodeDevices Node(std::vector<Device> devices) {
  NodeDevices n;
  n.node = "node1";
  n.k8s_node = "node1";
  n.devices = std::move(devices);
  return n;
}

std::vector<std::string_view> Kinds(const std::vector<DeviceAction>& actions) {
  std::vector<std::string_view> out;
  for (const DeviceAction& a : actions) out.push_back(a.Kind());
  return out;
}

TEST(PlanHoldAll, HoldsEveryGpuWithoutAHoldWhateverUsesIt) {
  NodeDevices n = Node({{.index = 0, .name = "gpu-0", .k8s_hold = true},
                        {.index = 1, .name = "gpu-1"},
                        {.index = 2, .name = "gpu-2"}});
  // The reservation's own claim: a hold keeps only new allocations off.
  n.claims = {{.pod = "slurm-bridge/reserve-node1", .devices = {"gpu-1", "gpu-2"}}};
  const std::vector<DeviceAction> a = PlanHoldAll(n);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_TRUE(a[0].Is<AddDeviceHold>()) << ToString(a[0]);
  EXPECT_THAT(a[0].As<AddDeviceHold>().devices, ElementsAre("gpu-1", "gpu-2"));
  EXPECT_EQ(a[0].event_reason, "GpusHeldForHandover");
  for (Device& d : n.devices) d.k8s_hold = true;
  EXPECT_THAT(PlanHoldAll(n), IsEmpty()) << "converged";
}

TEST(PlanLeave, CancelsGivesThenHoldsReturnsWhenIdleThenDropsTheHolds) {
  // The slice is gone: neither device is published any more.
  NodeDevices n = Node({{.index = -1, .name = "gpu-0", .k8s_hold = true, .published = false},
                        {.index = -1, .name = "gpu-1", .published = false}});
  n.placeholders = {{.job_id = 7, .pod = "ml/a", .gpus = 1, .running = true, .indices = {1}},
                    {.job_id = 8, .pod = "ml/b", .gpus = 1, .running = false}};
  n.claims = {{.pod = "ml/a", .devices = {"gpu-1"}, .allocated = true}};

  // A give in flight first: nothing moved yet.
  std::vector<DeviceAction> a = PlanLeave(n);
  ASSERT_THAT(Kinds(a), ElementsAre(EndPlaceholder::kName));
  EXPECT_EQ(a[0].As<EndPlaceholder>().placeholder_job, 8u);
  n.placeholders.pop_back();

  // The lent GPU is held again before anything ends.
  a = PlanLeave(n);
  ASSERT_THAT(Kinds(a), ElementsAre(AddDeviceHold::kName));
  EXPECT_THAT(a[0].As<AddDeviceHold>().devices, ElementsAre("gpu-1"));
  n.devices[1].k8s_hold = true;

  // Its pod still runs: wait.
  EXPECT_THAT(PlanLeave(n), IsEmpty());
  n.claims.clear();
  a = PlanLeave(n);
  ASSERT_THAT(Kinds(a), ElementsAre(EndPlaceholder::kName));
  EXPECT_EQ(a[0].As<EndPlaceholder>().placeholder_job, 7u);
  EXPECT_EQ(a[0].cause, plan::Cause::kReturn);
  n.placeholders.clear();

  // Nothing of the lane runs there: every hold goes.
  a = PlanLeave(n);
  ASSERT_THAT(Kinds(a), ElementsAre(DropDeviceHold::kName));
  EXPECT_THAT(a[0].As<DropDeviceHold>().devices, ElementsAre("gpu-0", "gpu-1"));
  for (Device& d : n.devices) d.k8s_hold = false;
  EXPECT_THAT(PlanLeave(n), IsEmpty()) << "converged";
}

// The driver republished the slice without one GPU (its health check lost it): the mapping
// fails and the node leaves GPU sharing, but the devices still published keep their holds,
// or Kubernetes could allocate a GPU a Slurm job uses; only the lost device's hold goes.
TEST(PlanLeave, KeepsTheHoldsOfDevicesTheDriverStillPublishes) {
  NodeDevices n = Node({{.index = -1, .name = "gpu-0", .k8s_hold = true},
                        {.index = -1, .name = "gpu-1", .k8s_hold = true},
                        {.index = -1, .name = "gpu-7", .k8s_hold = true, .published = false}});
  EXPECT_THAT(PlanLeave(n), IsEmpty());
  n.devices[0].published = n.devices[1].published = false;  // the slice went after all
  const std::vector<DeviceAction> a = PlanLeave(n);
  ASSERT_THAT(Kinds(a), ElementsAre(DropDeviceHold::kName));
  EXPECT_THAT(a[0].As<DropDeviceHold>().devices, ElementsAre("gpu-0", "gpu-1", "gpu-7"));
}

}  // namespace
}  // namespace skb::devices

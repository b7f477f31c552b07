// SPDX-License-Identifier: Apache-2.0
// DeviceWorldCache: the informers' objects joined into the device lane's World, in
// particular a pending pod's GPUs asked through ResourceClaims, counted once its claims are
// seen (and not before, not once they are allocated, not when they cannot be sized).
#include "bridge/reconcile/device_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/devices/dra_testdata.h"
#include "src/devices/k8s_devices.h"

namespace skb::bridge {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class DeviceWorldCacheTest : public ::testing::Test {
 protected:
  DeviceWorldCacheTest() { cfg_.gpu_sharing.enabled = true; }

  // kPendingPod (9 nvidia.com/gpu) asking instead for its GPUs through template claim "gpu",
  // whose generated claim is cap/big-gpu-x7k2p.
  static json ClaimPod() {
    json pod = json::parse(devices::dra_testdata::kPendingPod);
    pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
    pod["spec"]["initContainers"][0]["resources"] = json::object();
    pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "two"}}};
    pod["status"]["resourceClaimStatuses"] = {
        {{"name", "gpu"}, {"resourceClaimName", "big-gpu-x7k2p"}}};
    return pod;
  }
  // The claim kube-controller-manager generates from the template: `count` GPUs, pending.
  static json Claim(json exactly) {
    return {{"metadata", {{"name", "big-gpu-x7k2p"}, {"namespace", "cap"}}},
            {"spec", {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", exactly}}}}}}}}};
  }
  devices::World Build() { return cache_.Build({}, {}, {}); }

  config::Config cfg_;
  DeviceWorldCache cache_{cfg_};
};

TEST_F(DeviceWorldCacheTest, APodAskingThroughAClaimIsATriggerOnceItsClaimIsSeen) {
  const json pod = ClaimPod();
  cache_.SetPod("cap/big", &pod);
  EXPECT_THAT(Build().pending, IsEmpty());  // its claim not seen yet
  EXPECT_THAT(Build().not_counted, IsEmpty());

  const json claim = Claim({{"deviceClassName", "gpu.nvidia.com"}, {"count", 2}});
  const uint64_t before = cache_.Generation();
  cache_.SetClaim("cap/big-gpu-x7k2p", &claim);
  EXPECT_GT(cache_.Generation(), before);
  devices::World w = Build();
  ASSERT_EQ(w.pending.size(), 1u);
  EXPECT_EQ(w.pending[0].pod, "cap/big");
  EXPECT_EQ(w.pending[0].gpus, 2);
  EXPECT_EQ(w.pending[0].model, "NVIDIA-H100-80GB-HBM3");

  // Allocated (kube-scheduler placed it): nothing left to free.
  json allocated = claim;
  allocated["status"]["allocation"]["devices"]["results"] = {
      {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node1"}, {"device", "gpu-0"}},
      {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node1"}, {"device", "gpu-1"}}};
  cache_.SetClaim("cap/big-gpu-x7k2p", &allocated);
  w = Build();
  EXPECT_THAT(w.pending, IsEmpty());
  ASSERT_EQ(w.claims["node1"].size(), 1u);  // and its devices are the pod's
  EXPECT_THAT(w.claims["node1"][0].devices, ElementsAre("gpu-0", "gpu-1"));

  cache_.SetClaim("cap/big-gpu-x7k2p", nullptr);  // gone again: not a trigger
  EXPECT_THAT(Build().pending, IsEmpty());
  cache_.SetPod("cap/big", nullptr);
  cache_.SetClaim("cap/big-gpu-x7k2p", &claim);
  EXPECT_THAT(Build().pending, IsEmpty());
}

TEST_F(DeviceWorldCacheTest, AClaimOfAnotherClassOrThatCannotBeSizedIsNoTrigger) {
  const json pod = ClaimPod();
  cache_.SetPod("cap/big", &pod);
  const json nic = Claim({{"deviceClassName", "rdma.example.com"}, {"count", 2}});
  cache_.SetClaim("cap/big-gpu-x7k2p", &nic);
  EXPECT_THAT(Build().pending, IsEmpty());
  EXPECT_THAT(Build().not_counted, IsEmpty());

  const json every = Claim({{"deviceClassName", "gpu.nvidia.com"}, {"allocationMode", "All"}});
  cache_.SetClaim("cap/big-gpu-x7k2p", &every);
  devices::World w = Build();
  EXPECT_THAT(w.pending, IsEmpty());
  ASSERT_EQ(w.not_counted.count("cap/big"), 1u);
  EXPECT_EQ(w.not_counted["cap/big"],
            "ResourceClaim cap/big-gpu-x7k2p: request gpu asks for every device of its class on a "
            "node (allocationMode All)");

  // The class the site names as its GPUs' counts.
  cfg_.gpu_sharing.device_classes = {"gpu.nvidia.com", "rdma.example.com"};
  cache_.SetClaim("cap/big-gpu-x7k2p", &nic);
  ASSERT_EQ(Build().pending.size(), 1u);
  EXPECT_EQ(Build().pending[0].gpus, 2);
}

// A driver republishing node1's pool as two slices of a new generation, one informer event
// at a time: the pool reads whole again only once both halves of the new generation are
// there; in between it is unreadable (never "no devices"), and the old generation's slice
// lingering beside the new ones is ignored.
TEST_F(DeviceWorldCacheTest, APoolSplitOverSlicesIsReadWholeAndUnreadableInBetween) {
  json old_slice = json::parse(devices::dra_testdata::kSlice);
  cache_.SetSlice("node1-gpu.nvidia.com", &old_slice);
  ASSERT_EQ(Build().slices["node1"].size(), 8u);

  json a = old_slice, b = old_slice;
  a["metadata"]["name"] = "node1-gpu.nvidia.com-a";
  b["metadata"]["name"] = "node1-gpu.nvidia.com-b";
  for (json* s : {&a, &b}) {
    (*s)["spec"]["pool"]["generation"] = 2;
    (*s)["spec"]["pool"]["resourceSliceCount"] = 2;
  }
  json& ad = a["spec"]["devices"];
  ad.erase(ad.begin() + 4, ad.end());
  json& bd = b["spec"]["devices"];
  bd.erase(bd.begin(), bd.begin() + 4);

  cache_.SetSlice("node1-gpu.nvidia.com-a", &a);
  devices::World w = Build();
  EXPECT_EQ(w.slices.count("node1"), 0u);
  ASSERT_EQ(w.unreadable.count("node1"), 1u);
  EXPECT_THAT(w.unreadable["node1"], ::testing::HasSubstr("has 1 of 2 slices"));

  cache_.SetSlice("node1-gpu.nvidia.com-b", &b);
  w = Build();
  EXPECT_THAT(w.unreadable, IsEmpty());
  ASSERT_EQ(w.slices["node1"].size(), 8u) << "both halves, the old generation ignored";

  cache_.SetSlice("node1-gpu.nvidia.com", nullptr);  // the old one goes at last
  EXPECT_EQ(Build().slices["node1"].size(), 8u);
  cache_.SetSlice("node1-gpu.nvidia.com-a", nullptr);
  EXPECT_EQ(Build().unreadable.count("node1"), 1u);
  cache_.SetSlice("node1-gpu.nvidia.com-b", nullptr);
  w = Build();
  EXPECT_THAT(w.unreadable, IsEmpty());
  EXPECT_THAT(w.slices, IsEmpty()) << "no slice at all: the driver publishes nothing";
}

// The bridge's holds and an admin's drain of one GPU come from the same informer (rules
// labelled as the bridge's): each read for what it is, a drain with its reason; a deleted
// drain is gone from the World.
TEST_F(DeviceWorldCacheTest, HoldsAndAGpuDrainAreReadFromTheRules) {
  json hold = devices::HoldRule("node1", "gpu-0", "gpu.nvidia.com");
  json drain = devices::DrainRule("node1", "gpu-3", "gpu.nvidia.com", "node1", "RMA (by alice)");
  cache_.SetRule("slurm-hold.node1.gpu-0", &hold);
  cache_.SetRule("skb-drain.node1.gpu-3", &drain);
  devices::World w = Build();
  EXPECT_THAT(w.held["node1"], ElementsAre("gpu-0")) << "a drain is no hold";
  ASSERT_EQ(w.drained["node1"].size(), 1u);
  EXPECT_EQ(w.drained["node1"]["gpu-3"], "RMA (by alice)");
  cache_.SetRule("skb-drain.node1.gpu-3", nullptr);
  EXPECT_THAT(Build().drained, IsEmpty());
}

}  // namespace
}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_drain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/cli/node_test_fixture.h"
#include "k8s/fake_kube_client.h"
#include "src/devices/k8s_devices.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using cli_test::kNow;

class NodeDrainTest : public cli_test::NodeFixture {};

TEST_F(NodeDrainTest, DrainSetsTheConditionWithTheReasonAndWhoOnce) {
  auto changed = RequestDrain(kube_, "node3", "swap PSU", "alice@login1", kNow);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  json c = Conditions()["DrainRequested"];
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "BridgectlDrain");
  EXPECT_EQ(c["message"], "swap PSU (bridgectl drain by alice@login1)");
  EXPECT_EQ(c["lastTransitionTime"], "2019-12-20T00:00:00Z");
  // Again with the same words: nothing to do. New words keep the transition time.
  EXPECT_FALSE(*RequestDrain(kube_, "node3", "swap PSU", "alice@login1", kNow));
  ASSERT_TRUE(*RequestDrain(kube_, "node3", "swap PSU and fan", "alice@login1",
                            kNow + std::chrono::hours(1)));
  c = Conditions()["DrainRequested"];
  EXPECT_EQ(c["lastTransitionTime"], "2019-12-20T00:00:00Z");
  EXPECT_THAT(c["message"].get<std::string>(), HasSubstr("fan"));
}

TEST_F(NodeDrainTest, BadInputAndSomeoneElsesConditionAreRefused) {
  EXPECT_EQ(RequestDrain(kube_, "node3", "", "a", kNow).status().code(),
            StatusCode::kInvalidArgument);
  auto missing = RequestDrain(kube_, "nope", "x", "a", kNow);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no node 'nope'"));
  EXPECT_EQ(ClearDrain(kube_, "nope").status().code(), StatusCode::kNotFound);
  SetConditions(json::array({{{"type", "DrainRequested"},
                              {"status", "True"},
                              {"reason", "Remediation"},
                              {"message", "NHC says so"}}}));
  auto theirs = RequestDrain(kube_, "node3", "x", "a", kNow);
  EXPECT_EQ(theirs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(theirs.status().message(), HasSubstr("Remediation"));
  auto clear = ClearDrain(kube_, "node3");
  EXPECT_EQ(clear.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Conditions()["DrainRequested"]["reason"], "Remediation") << "left alone";
}

TEST_F(NodeDrainTest, UndrainRemovesOnlyOurConditionWhereverItSits) {
  SetConditions(json::array({{{"type", "Ready"}, {"status", "True"}},
                             {{"type", "GPUHealthy"}, {"status", "False"}, {"reason", "XID"}},
                             {{"type", "DrainRequested"},
                              {"status", "True"},
                              {"reason", "BridgectlDrain"},
                              {"message", "x"}},
                             {{"type", "SlurmDrained"}, {"status", "True"}}}));
  auto cleared = ClearDrain(kube_, "node3");
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_TRUE(*cleared);
  auto c = Conditions();
  EXPECT_EQ(c.count("DrainRequested"), 0u);
  EXPECT_EQ(c.size(), 3u) << "Ready, GPUHealthy and SlurmDrained stay";
  EXPECT_EQ(c["GPUHealthy"]["status"], "False");
  // Nothing left to clear: not an error.
  EXPECT_FALSE(*ClearDrain(kube_, "node3"));
}

// One GPU drained alone: a DeviceTaintRule on exactly that device of the node's pool (the
// driver and pool as its ResourceSlice says), the admin's words and name on it; again with
// the same words changes nothing, new words are written; undrain deletes it, and only a
// drain bridgectl made.
TEST_F(NodeDrainTest, AGpuIsDrainedAloneByADeviceTaintRuleAndUndrainedByDeletingIt) {
  json slice = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceSlice"},
                {"metadata", {{"name", "node3-gpu.nvidia.com-x"}}},
                {"spec",
                 {{"driver", "gpu.nvidia.com"},
                  {"nodeName", "node3"},
                  {"pool", {{"name", "node3"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", json::array({{{"name", "gpu-0"}}, {{"name", "gpu-5"}}})}}}};
  ASSERT_TRUE(kube_.Create(k8s::Resource::ResourceSlices(), "", slice).ok());
  auto changed = RequestGpuDrain(kube_, "node3", "5", "XID 79 twice", "alice@login1");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  auto rule = kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-drain.node3.gpu-5");
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ((*rule)["spec"]["deviceSelector"],
            json({{"driver", "gpu.nvidia.com"}, {"pool", "node3"}, {"device", "gpu-5"}}));
  EXPECT_EQ((*rule)["spec"]["taint"]["key"], "slurm-k8s-bridge.io/drained");
  EXPECT_EQ((*rule)["spec"]["taint"]["effect"], "NoSchedule");
  EXPECT_EQ((*rule)["metadata"]["annotations"]["slurm-k8s-bridge.io/drain-reason"],
            "XID 79 twice (bridgectl drain by alice@login1)");
  const std::vector<json> rules = {*rule};
  EXPECT_EQ(devices::DrainedDevices(rules).at("node3").at("gpu-5"),
            "XID 79 twice (bridgectl drain by alice@login1)");
  EXPECT_FALSE(*RequestGpuDrain(kube_, "node3", "gpu-5", "XID 79 twice", "alice@login1"));
  EXPECT_TRUE(*RequestGpuDrain(kube_, "node3", "gpu-5", "RMA", "alice@login1"));

  auto missing = RequestGpuDrain(kube_, "node3", "7", "x", "a");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no device gpu-7 (it has gpu-0, gpu-5)"));
  EXPECT_EQ(RequestGpuDrain(kube_, "node9", "5", "x", "a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RequestGpuDrain(kube_, "node3", "5", "", "a").status().code(),
            StatusCode::kInvalidArgument);

  auto cleared = ClearGpuDrain(kube_, "node3", "5");
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_TRUE(*cleared);
  EXPECT_EQ(
      kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-drain.node3.gpu-5").status().code(),
      StatusCode::kNotFound);
  EXPECT_FALSE(*ClearGpuDrain(kube_, "node3", "5")) << "nothing left to clear";

  // A rule of that name someone else made: neither drained over nor deleted.
  json foreign = devices::DrainRule("node3", "gpu-0", "gpu.nvidia.com", "node3", "by hand");
  foreign["metadata"]["labels"].erase("slurm-k8s-bridge.io/drained-by");
  ASSERT_TRUE(kube_.Create(k8s::Resource::DeviceTaintRules(), "", foreign).ok());
  EXPECT_EQ(ClearGpuDrain(kube_, "node3", "0").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-drain.node3.gpu-0").ok());
}

TEST(GpuDeviceName, TakesANumberOrADeviceName) {
  EXPECT_EQ(GpuDeviceName("5"), "gpu-5");
  EXPECT_EQ(GpuDeviceName("gpu-5"), "gpu-5");
  EXPECT_EQ(GpuDeviceName("mig-1g-5"), "mig-1g-5");
  EXPECT_EQ(GpuDeviceName(""), "");
  EXPECT_EQ(GpuDeviceName("GPU 5"), "");
  EXPECT_EQ(GpuDeviceName("-1"), "");
  EXPECT_EQ(GpuDeviceName("a.b"), "");
}

}  // namespace
}  // namespace skb::bridge::cli

// SPDX-License-Identifier: Apache-2.0
#include "bridge/device_informers.h"

#include <gtest/gtest.h>

#include "bridge/controller.h"
#include "k8s/fake_kube_client.h"
#include "k8s/json_selection.h"
#include "src/devices/dra_testdata.h"
#include "src/devices/k8s_devices.h"

namespace skb::bridge {
namespace {

using nlohmann::json;
namespace td = devices::dra_testdata;

constexpr char kDriver[] = "gpu.nvidia.com";

// Each informer's trim keeps what the conversions read: the same result from the trimmed
// object as from the full one, from a smaller object.
TEST(DeviceInformers, TrimsKeepWhatTheConversionsRead) {
  config::Config cfg;
  json slice = json::parse(td::kSlice);
  slice["spec"]["devices"][2]["attributes"]["minor"] = {{"int", 5}};
  slice["spec"]["devices"][3]["taints"] = json::parse(
      R"([{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
           "timeAdded": "2026-11-29T04:00:00Z"}])");
  json slice_trimmed = ResourceSliceInformerOptions(cfg).transform(json(slice));
  EXPECT_LT(slice_trimmed.dump().size(), slice.dump().size());
  EXPECT_FALSE(slice_trimmed["spec"]["devices"][0].contains("capacity"));
  std::vector<json> full = {slice}, trimmed = {slice_trimmed};
  auto a = devices::SlicesByNode(full, kDriver), b = devices::SlicesByNode(trimmed, kDriver);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(a["node1"].size(), b["node1"].size());
  for (size_t i = 0; i < a["node1"].size(); ++i) {
    EXPECT_EQ(a["node1"][i].name, b["node1"][i].name);
    EXPECT_EQ(a["node1"][i].minor, b["node1"][i].minor);
    EXPECT_EQ(a["node1"][i].taint, b["node1"][i].taint);
  }
  EXPECT_EQ(b["node1"][2].minor, 5);
  EXPECT_EQ(b["node1"][3].taint, "gpu.nvidia.com/xid=79:NoSchedule") << "the driver's health taint";

  full = {json::parse(td::kExtendedClaim), json::parse(td::kTemplateClaim)};
  json admin = json::parse(td::kTemplateClaim);
  admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = true;
  full.push_back(admin);
  trimmed.clear();
  for (const json& c : full) trimmed.push_back(ResourceClaimInformerOptions().transform(json(c)));
  EXPECT_LT(trimmed[0].dump().size(), full[0].dump().size());
  // What a claim asks for stays (a pending pod's GPUs); its allocation's node selector goes.
  EXPECT_EQ(trimmed[0]["spec"], full[0]["spec"]);
  EXPECT_FALSE(trimmed[0]["status"]["allocation"].contains("nodeSelector"));
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(devices::GpuDemandOf(trimmed[i], cfg.gpu_sharing.device_classes),
              devices::GpuDemandOf(full[i], cfg.gpu_sharing.device_classes));
  }
  auto ca = devices::ClaimsByNode(full, kDriver), cb = devices::ClaimsByNode(trimmed, kDriver);
  ASSERT_EQ(ca["node1"].size(), 2u);
  ASSERT_EQ(cb["node1"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ca["node1"][i].pod, cb["node1"][i].pod);
    EXPECT_EQ(ca["node1"][i].devices, cb["node1"][i].devices);
  }
  EXPECT_EQ(trimmed[1]["metadata"]["ownerReferences"][0]["name"], "tmpl");

  json rule = json::parse(td::kRule);
  json rule_trimmed = DeviceTaintRuleInformerOptions().transform(json(rule));
  EXPECT_FALSE(rule_trimmed.contains("status"));
  full = {rule};
  trimmed = {rule_trimmed};
  EXPECT_EQ(devices::HeldDevices(full), devices::HeldDevices(trimmed));
  EXPECT_EQ(devices::HeldDevices(trimmed).at("node2"), std::set<std::string>{"gpu-3"});
}

// The pod informer is the controller's (PodInformerOptions): its trim keeps what PendingGpuPod
// reads (conditions, priority, nodeSelector, node affinity, tolerations, requests, sidecars),
// through the selective decode of watch events too.
TEST(DeviceInformers, PodInformerKeepsWhatPendingGpuPodReads) {
  json pod = json::parse(td::kPendingPod);
  pod["spec"]["nodeSelector"].clear();
  pod["spec"]["affinity"] = json::parse(R"({
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In",
                             "values": ["NVIDIA-A100-SXM4-80GB"]}]}]}}})");
  json sidecar = {{"name", "proxy"},
                  {"image", "p:1"},
                  {"restartPolicy", "Always"},
                  {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}};
  pod["spec"]["initContainers"].insert(pod["spec"]["initContainers"].begin(), sidecar);
  pod["spec"]["tolerations"] = json::parse(R"([
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "nvidia.com/maintenance", "operator": "Equal", "value": "true",
     "effect": "NoSchedule"}])");
  k8s::InformerOptions opts = PodInformerOptions();
  json trimmed = opts.transform(json(pod));
  auto selected =
      k8s::ParseSelected(json({{"type", "ADDED"}, {"object", pod}}).dump(), *opts.decode_selection);
  ASSERT_TRUE(selected.ok()) << selected.status();
  json decoded = opts.transform(std::move((*selected)["object"]));

  auto want = devices::PendingGpuPod(pod, "nvidia.com/gpu", 100000);
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(want->gpus, 11);  // 9 + the sidecar's 2
  EXPECT_EQ(want->model, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(want->placement.tolerations.size(), 2u);
  for (const json& p : {trimmed, decoded}) {
    auto got = devices::PendingGpuPod(p, "nvidia.com/gpu", 100000);
    ASSERT_TRUE(got.has_value()) << p.dump();
    EXPECT_EQ(got->pod, want->pod);
    EXPECT_EQ(got->gpus, want->gpus);
    EXPECT_EQ(got->priority, want->priority);
    EXPECT_EQ(got->model, want->model);
    EXPECT_EQ(got->placement, want->placement);
  }
}

// The same for a pod asking through a ResourceClaimTemplate, and its generated claim, as the
// apiserver returned them: the pod's claim references and the claim's requests survive both
// trims and the selective decode.
TEST(DeviceInformers, TrimsKeepWhatCountsAClaimPodsGpus) {
  config::Config cfg;
  const json pod = json::parse(td::kPendingTemplatePod);
  const json claim = json::parse(td::kPendingTemplateClaim);
  k8s::InformerOptions opts = PodInformerOptions();
  auto selected =
      k8s::ParseSelected(json({{"type", "ADDED"}, {"object", pod}}).dump(), *opts.decode_selection);
  ASSERT_TRUE(selected.ok()) << selected.status();
  const json trimmed_claim = ResourceClaimInformerOptions().transform(json(claim));
  const std::map<std::string, devices::ClaimDemand> demands = {
      {"cap/tmpl-big-gpu-dmjs7",
       devices::GpuDemandOf(trimmed_claim, cfg.gpu_sharing.device_classes)}};
  for (const json& p :
       {opts.transform(json(pod)), opts.transform(std::move((*selected)["object"]))}) {
    auto got = devices::PendingGpuPod(p, "nvidia.com/gpu", 100000, demands);
    ASSERT_TRUE(got.has_value()) << p.dump();
    EXPECT_EQ(got->gpus, 9);
    EXPECT_EQ(got->claim_gpus, 9);
  }
}

TEST(DeviceInformers, SelectWhatTheBridgeReads) {
  config::Config cfg;
  cfg.gpu_sharing.driver = "gpu.example.com";
  k8s::InformerOptions slices = ResourceSliceInformerOptions(cfg);
  EXPECT_EQ(slices.resource.Name(), "resourceslices.resource.k8s.io");
  EXPECT_EQ(slices.field_selector, "spec.driver=gpu.example.com");
  k8s::InformerOptions claims = ResourceClaimInformerOptions();
  EXPECT_EQ(claims.resource.Name(), "resourceclaims.resource.k8s.io");
  EXPECT_TRUE(claims.resource.namespaced);
  EXPECT_EQ(claims.ns, "");
  k8s::InformerOptions rules = DeviceTaintRuleInformerOptions();
  EXPECT_EQ(rules.resource.Name(), "devicetaintrules.resource.k8s.io");
  EXPECT_EQ(rules.label_selector, "app.kubernetes.io/managed-by=slurm-k8s-bridge");
  // What the informer lists is what the bridge creates.
  json hold = devices::HoldRule("node1", "gpu-0", kDriver);
  EXPECT_EQ(hold["metadata"]["labels"]["app.kubernetes.io/managed-by"], "slurm-k8s-bridge");
}

// An apiserver without DRA (older, or the group turned off) answers a list of its resources
// with 404: GPU-granular sharing is then off, not waiting forever for caches to sync.
TEST(DeviceInformers, TellWhichDeviceResourcesAreNotServed) {
  k8s::FakeKubeClient kube;
  auto all = UnservedDeviceResources(&kube);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());

  kube.FailNextListOrWatch(1, NotFoundError("the server could not find the requested resource"));
  auto first = UnservedDeviceResources(&kube);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, std::vector<std::string>{k8s::Resource::ResourceSlices().Name()});

  kube.FailNextListOrWatch(3, NotFoundError("the server could not find the requested resource"));
  auto none = UnservedDeviceResources(&kube);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), 3u);

  // A dead apiserver says nothing about what it serves.
  kube.FailNextListOrWatch(1, UnavailableError("connection refused"));
  EXPECT_EQ(UnservedDeviceResources(&kube).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace skb::bridge

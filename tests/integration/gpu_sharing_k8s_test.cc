// SPDX-License-Identifier: Apache-2.0
// The Kubernetes side of GPU-granular sharing against the testbed in dra mode (label `dra`):
// what src/devices/k8s_devices.h reads from, and the holds it writes to, a real 1.37
// apiserver, kube-scheduler and kube-controller-manager, through the informers the daemon
// runs (bridge/device_informers.h and the controller's pod informer):
//  - SlicesByNode gives each node its eight devices (and the driver's slices only);
//  - HoldRule on all eight devices of node1 keeps an 8-GPU pod for node1 Pending, and
//    HeldDevices reads the rules back (the bridge's only); PendingGpuPod recognises that pod
//    (not a running one, not one below the threshold);
//  - deleting one hold lets a 1-GPU pod run on exactly that device, and ClaimsByNode shows
//    the claim kube-scheduler generated for it on that device;
//  - a hold being deleted (a finalizer keeps it) still keeps its device from new pods.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "bridge/controller.h"
#include "bridge/device_informers.h"
#include "k8s/api_error.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kDriver[] = "gpu.nvidia.com";
constexpr char kResource[] = "nvidia.com/gpu";
constexpr int32_t kThreshold = 100000;  // the testbed's inference-high class
constexpr char kNode[] = "node1";

std::vector<json> Objects(const std::vector<k8s::ObjectPtr>& list) {
  std::vector<json> out;
  for (const k8s::ObjectPtr& o : list) out.push_back(*o);
  return out;
}

class GpuSharingK8sTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    if (!DraMode()) GTEST_SKIP() << kNeedsDraMode;
    auto kube = AdminKubeClient();
    ASSERT_TRUE(kube.ok()) << kube.status().message();
    kube_ = std::move(*kube);
    RemoveHolds();  // of an earlier run that crashed: no bridge runs in the dra lane
    ns_ = StrCat("gpus-", std::random_device{}() % 100000);
    ASSERT_TRUE(CreateNamespace(ns_).ok());
    cfg_.gpu_sharing.enabled = true;
    cfg_.gpu_sharing.driver = kDriver;
    slices_ = Start(bridge::ResourceSliceInformerOptions(cfg_));
    claims_ = Start(bridge::ResourceClaimInformerOptions());
    rules_ = Start(bridge::DeviceTaintRuleInformerOptions());
    pods_ = Start(bridge::PodInformerOptions());
  }

  void TearDown() override {
    for (auto* inf : {&slices_, &claims_, &rules_, &pods_}) {
      if (*inf) (*inf)->Stop();
    }
    if (kube_ == nullptr) return;
    for (const std::string& name : rules_made_) Remove(name);
    RunCommand({"kubectl", "delete", "pods", "--all", "-n", ns_, "--grace-period=0"}, seconds(60));
    RunCommand({"kubectl", "delete", "namespace", ns_, "--wait=false"}, seconds(30));
  }

  // Deletes a DeviceTaintRule, removing a finalizer a test put on first (or the delete
  // would wait on it forever).
  void Remove(const std::string& name) {
    (void)kube_->Patch(k8s::Resource::DeviceTaintRules(), "", name, k8s::PatchType::kJsonMerge,
                       json{{"metadata", {{"finalizers", nullptr}}}});
    (void)kube_->Delete(k8s::Resource::DeviceTaintRules(), "", name);
  }
  void RemoveHolds() {
    k8s::ListOptions opts;
    opts.label_selector = bridge::DeviceTaintRuleInformerOptions().label_selector;
    auto list = kube_->List(k8s::Resource::DeviceTaintRules(), "", opts);
    ASSERT_TRUE(list.ok()) << list.status().message();
    for (const json& r : list->items) Remove(r["metadata"].value("name", ""));
  }

  std::unique_ptr<k8s::Informer> Start(k8s::InformerOptions opts) {
    auto inf = std::make_unique<k8s::Informer>(kube_.get(), std::move(opts));
    inf->Start();
    EXPECT_TRUE(inf->WaitForSync(seconds(30)));
    return inf;
  }

  // The bridge's hold on `device` of node1, created as the executor will create it.
  void Hold(const std::string& device, bool finalizer = false) {
    json rule = devices::HoldRule(kNode, device, kDriver);
    if (finalizer) rule["metadata"]["finalizers"] = {"slurm-k8s-bridge.io/test"};
    auto r = kube_->Create(k8s::Resource::DeviceTaintRules(), "", rule);
    ASSERT_TRUE(r.ok()) << r.status().message();
    rules_made_.push_back(rule["metadata"]["name"]);
  }
  void Unhold(const std::string& device) {
    auto r =
        kube_->Delete(k8s::Resource::DeviceTaintRules(), "", devices::HoldRuleName(kNode, device));
    ASSERT_TRUE(r.ok()) << r.status().message();
  }

  std::map<std::string, std::set<std::string>> Held() {
    return devices::HeldDevices(Objects(rules_->List()));
  }
  // node1's allocated claims of this test's namespace.
  std::vector<devices::Claim> Claims() {
    std::vector<devices::Claim> out;
    auto by_node = devices::ClaimsByNode(Objects(claims_->List()), kDriver);
    for (const devices::Claim& c : by_node[kNode]) {
      if (c.pod.starts_with(ns_ + "/")) out.push_back(c);
    }
    return out;
  }

  // A pod asking `gpus` nvidia.com/gpu (served by DRA) that only node1 fits (and only its
  // H100s), of PriorityClass `priority_class` ("" = none, priority 0).
  void CreatePod(const std::string& name, int gpus, const std::string& priority_class) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", ns_}}},
        {"spec",
         {{"nodeSelector",
           {{"kubernetes.io/hostname", kNode},
            {devices::kGpuProductLabel, "NVIDIA-H100-80GB-HBM3"}}},
          {"tolerations", json::array({{{"operator", "Exists"}}})},
          {"containers", json::array({{{"name", "main"},
                                       {"image", "registry.invalid/inference:1"},
                                       {"resources", {{"limits", {{kResource, gpus}}}}}}})}}}};
    if (!priority_class.empty()) pod["spec"]["priorityClassName"] = priority_class;
    auto r = kube_->Create(k8s::Resource::Pods(), ns_, pod);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  json Pod(const std::string& name) {
    auto p = kube_->Get(k8s::Resource::Pods(), ns_, name);
    return p.ok() ? *p : json();
  }
  // The pod as the controller's (trimmed) pod informer caches it.
  json CachedPod(const std::string& name) {
    k8s::ObjectPtr p = pods_->Get(StrCat(ns_, "/", name));
    return p ? *p : json();
  }
  // "" for a pod not (yet) there.
  std::string SchedulingReason(const json& pod) {
    if (!pod.is_object()) return "";
    for (const json& c : pod.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled") return c.value("reason", "");
    }
    return "";
  }
  bool WaitUnschedulable(const std::string& name) {
    return WaitFor([&] { return SchedulingReason(Pod(name)) == "Unschedulable"; }, seconds(60));
  }
  bool WaitRunning(const std::string& name) {
    return WaitFor([&] { return Pod(name)["status"].value("phase", "") == "Running"; },
                   seconds(60));
  }

  config::Config cfg_;
  std::unique_ptr<k8s::KubeClient> kube_;
  std::string ns_;
  std::unique_ptr<k8s::Informer> slices_, claims_, rules_, pods_;
  std::vector<std::string> rules_made_;
};

TEST_F(GpuSharingK8sTest, SlicesByNodeGivesEightDevicesPerNode) {
  std::vector<std::string> skipped;
  auto by_node = devices::SlicesByNode(Objects(slices_->List()), kDriver, &skipped);
  EXPECT_THAT(skipped, ::testing::IsEmpty());
  ASSERT_EQ(static_cast<int>(by_node.size()), TestbedNodeCount());
  for (const auto& [node, devices] : by_node) {
    ASSERT_EQ(devices.size(), 8u) << node;
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(devices[i].name, StrCat("gpu-", i)) << node;
      EXPECT_FALSE(devices[i].minor.has_value()) << "the testbed (as v25.12) publishes no minor";
    }
  }
  // The informer lists the driver's slices only (field selector spec.driver), each trimmed.
  for (const json& s : Objects(slices_->List())) {
    EXPECT_EQ(s["spec"]["driver"], kDriver);
    EXPECT_FALSE(s["spec"]["devices"][0].contains("capacity"));
  }
}

TEST_F(GpuSharingK8sTest, HoldsKeepPodsOffUntilLiftedDeviceByDevice) {
  for (int i = 0; i < 8; ++i) Hold(StrCat("gpu-", i));
  // A rule that is not the bridge's (no managed-by label): not listed, not read as a hold.
  json foreign = devices::HoldRule("node2", "gpu-0", kDriver);
  foreign["metadata"]["name"] = StrCat(ns_, "-foreign");
  foreign["metadata"].erase("labels");
  ASSERT_TRUE(kube_->Create(k8s::Resource::DeviceTaintRules(), "", foreign).ok());
  rules_made_.push_back(foreign["metadata"]["name"]);

  std::set<std::string> all;
  for (int i = 0; i < 8; ++i) all.insert(StrCat("gpu-", i));
  ASSERT_TRUE(WaitFor([&] { return Held()[kNode] == all; }, seconds(30)));
  EXPECT_EQ(Held().count("node2"), 0u);
  // The apiserver kept what HoldRule wrote and added timeAdded.
  auto got =
      kube_->Get(k8s::Resource::DeviceTaintRules(), "", devices::HoldRuleName(kNode, "gpu-3"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["metadata"]["name"], "slurm-hold.node1.gpu-3");
  EXPECT_EQ((*got)["spec"]["deviceSelector"],
            json({{"driver", kDriver}, {"pool", kNode}, {"device", "gpu-3"}}));
  EXPECT_TRUE((*got)["spec"]["taint"].contains("timeAdded"));

  // Every device of node1 held: an inference pod asking all eight waits.
  CreatePod("eight", 8, "inference-high");
  ASSERT_TRUE(WaitUnschedulable("eight")) << Pod("eight")["status"].dump();
  json eight = Pod("eight");
  EXPECT_EQ(eight["spec"].value("nodeName", ""), "");
  auto pending = devices::PendingGpuPod(eight, kResource, kThreshold);
  ASSERT_TRUE(pending.has_value()) << eight["status"].dump();
  EXPECT_EQ(pending->pod, StrCat(ns_, "/eight"));
  EXPECT_EQ(pending->gpus, 8);
  EXPECT_EQ(pending->priority, kThreshold);
  EXPECT_EQ(pending->model, "NVIDIA-H100-80GB-HBM3");
  EXPECT_FALSE(devices::PendingGpuPod(eight, kResource, kThreshold + 1));
  // The same from the controller's trimmed pod cache.
  ASSERT_TRUE(WaitFor([&] { return SchedulingReason(CachedPod("eight")) == "Unschedulable"; },
                      seconds(30)));
  auto cached = devices::PendingGpuPod(CachedPod("eight"), kResource, kThreshold);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->gpus, 8);
  EXPECT_EQ(cached->model, pending->model);

  // A priority-0 pod waiting as well is no trigger at the inference threshold.
  CreatePod("low", 1, "");
  ASSERT_TRUE(WaitUnschedulable("low"));
  EXPECT_FALSE(devices::PendingGpuPod(Pod("low"), kResource, kThreshold));
  EXPECT_TRUE(devices::PendingGpuPod(Pod("low"), kResource, 0).has_value());
  ASSERT_TRUE(kube_->Delete(k8s::Resource::Pods(), ns_, "low", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(kube_->Delete(k8s::Resource::Pods(), ns_, "eight", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(WaitFor([&] { return Pod("eight").is_null() && Pod("low").is_null(); }, seconds(30)));

  // Lift the hold of gpu-5 only: a one-GPU pod runs there, on that device and no other.
  Unhold("gpu-5");
  all.erase("gpu-5");
  ASSERT_TRUE(WaitFor([&] { return Held()[kNode] == all; }, seconds(30)));
  auto created = std::chrono::steady_clock::now();
  CreatePod("one", 1, "inference-high");
  ASSERT_TRUE(WaitRunning("one")) << Pod("one")["status"].dump();
  std::cout << "[ timing ] 1-GPU pod created -> Running on the lifted device: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - created)
                   .count()
            << " ms\n";
  json one = Pod("one");
  EXPECT_EQ(one["spec"].value("nodeName", ""), kNode);
  EXPECT_FALSE(devices::PendingGpuPod(one, kResource, 0)) << "a running pod is no trigger";
  const std::string claim_name = one["status"]
                                     .value("extendedResourceClaimStatus", json::object())
                                     .value("resourceClaimName", "");
  EXPECT_THAT(claim_name, StartsWith("one-extended-resources-"));

  // The claim kube-scheduler generated is an ordinary ResourceClaim the informer lists.
  ASSERT_TRUE(WaitFor([&] { return Claims().size() == 1; }, seconds(30)));
  std::vector<devices::Claim> claims = Claims();
  EXPECT_EQ(claims[0].pod, StrCat(ns_, "/one"));
  EXPECT_EQ(claims[0].devices, std::vector<std::string>{"gpu-5"});
  EXPECT_TRUE(claims[0].allocated);
  k8s::ObjectPtr cached_claim = claims_->Get(StrCat(ns_, "/", claim_name));
  ASSERT_NE(cached_claim, nullptr) << claim_name;
  EXPECT_EQ((*cached_claim)["metadata"]["annotations"].value(
                "resource.kubernetes.io/extended-resource-claim", ""),
            "true");
  EXPECT_EQ((*cached_claim)["metadata"]["ownerReferences"][0].value("name", ""), "one");
}

// A hold being deleted (here a finalizer keeps it, as an owner's could) is a hold until it
// is gone, for HeldDevices and for kube-scheduler alike.
TEST_F(GpuSharingK8sTest, AHoldBeingDeletedStillHolds) {
  for (int i = 0; i < 8; ++i) Hold(StrCat("gpu-", i), /*finalizer=*/i == 0);
  ASSERT_TRUE(WaitFor([&] { return Held()[kNode].size() == 8; }, seconds(30)));
  Unhold("gpu-0");
  ASSERT_TRUE(WaitFor(
      [&] {
        k8s::ObjectPtr r = rules_->Get(devices::HoldRuleName(kNode, "gpu-0"));
        return r != nullptr && (*r)["metadata"].contains("deletionTimestamp");
      },
      seconds(30)));
  EXPECT_EQ(Held()[kNode].count("gpu-0"), 1u);
  CreatePod("one", 1, "inference-high");
  ASSERT_TRUE(WaitUnschedulable("one")) << Pod("one")["status"].dump();

  // The finalizer goes: the rule is gone, and the pod gets gpu-0.
  ASSERT_TRUE(kube_
                  ->Patch(k8s::Resource::DeviceTaintRules(), "",
                          devices::HoldRuleName(kNode, "gpu-0"), k8s::PatchType::kJsonMerge,
                          json{{"metadata", {{"finalizers", nullptr}}}})
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return Held()[kNode].count("gpu-0") == 0; }, seconds(30)));
  ASSERT_TRUE(WaitRunning("one")) << Pod("one")["status"].dump();
  ASSERT_TRUE(WaitFor([&] { return Claims().size() == 1; }, seconds(30)));
  EXPECT_EQ(Claims()[0].devices, std::vector<std::string>{"gpu-0"});
}

}  // namespace
}  // namespace skb::testbed

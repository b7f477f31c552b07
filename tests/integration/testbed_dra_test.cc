// SPDX-License-Identifier: Apache-2.0
// What Kubernetes does with GPUs offered through Dynamic Resource Allocation, checked on the
// testbed in dra mode (SKB_TESTBED_GPU_ALLOCATION=dra: every node publishes a ResourceSlice
// of driver gpu.nvidia.com as NVIDIA's GPU DRA driver does, and the DeviceClass
// gpu.nvidia.com maps nvidia.com/gpu onto its devices). GPU-granular lending builds on each
// of these, so a Kubernetes upgrade that changes one must fail here (label `dra`; scripts/test
// runs them in a lane of their own):
//  - a pod asking nvidia.com/gpu: k gets k devices through a claim kube-scheduler generates
//    (named in status.extendedResourceClaimStatus), allocated on the pod's node;
//  - kube-scheduler does not preempt lower-priority pods to free DRA devices: a
//    high-priority pod stays Pending with "Preemption is not helpful";
//  - a DeviceTaintRule with effect NoSchedule keeps its device out of new allocations, a
//    toleration of every node taint does not tolerate it, and deleting the rule lets the
//    pending pod have the device;
//  - the testbed's kubelet admission starts a pod only once its claims are allocated and
//    reserved for it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr char kDriver[] = "gpu.nvidia.com";

class DraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    if (!DraMode()) GTEST_SKIP() << kNeedsDraMode;
    ns_ = StrCat("dra-", std::random_device{}() % 100000);
    CommandResult r = RunCommand({"kubectl", "create", "namespace", ns_}, seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Pods are refused until the namespace's default ServiceAccount exists.
    ASSERT_TRUE(WaitFor(
        [&] {
          return RunCommand({"kubectl", "get", "serviceaccount", "default", "-n", ns_}, seconds(10))
                     .exit_code == 0;
        },
        seconds(30)));
  }
  void TearDown() override {
    for (const std::string& rule : rules_) {
      RunCommand({"kubectl", "delete", "devicetaintrule", rule, "--ignore-not-found"}, seconds(30));
    }
    if (!ns_.empty()) DeleteTestNamespace(ns_);
  }

  // `kubectl get ARGS -o json`, parsed; null when it fails.
  json Get(std::vector<std::string> args) { return KubectlGetJson(std::move(args)); }
  json Pod(const std::string& name) { return Get({"pod", "-n", ns_, name}); }
  std::string Phase(const std::string& name) {
    json p = Pod(name);
    return p.is_null() ? "<gone>" : p["status"].value("phase", "");
  }
  bool WaitPhase(const std::string& name, const std::string& phase, seconds timeout) {
    return WaitFor([&] { return Phase(name) == phase; }, timeout);
  }
  // The message of the pod's PodScheduled condition ("" when there is none).
  std::string SchedulingMessage(const std::string& name) {
    json p = Pod(name);
    if (p.is_null()) return "";
    for (const json& c : p["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled") return c.value("message", "");
    }
    return "";
  }

  void Apply(const std::string& manifest, const std::string& ns) {
    std::vector<std::string> argv = {"kubectl", "apply", "-f", "-"};
    if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
    CommandResult r = RunCommand(argv, seconds(30), manifest);
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << manifest;
  }

  // A pod asking `gpus` nvidia.com/gpu (no DRA in its spec), tolerating every node taint.
  void CreateGpuPod(const std::string& name, int gpus, const std::string& priority_class = "") {
    Apply(
        StrCat(R"(
apiVersion: v1
kind: Pod
metadata: {name: )",
               name, R"(}
spec:
  tolerations: [{operator: Exists}]
)",
               priority_class.empty() ? "" : StrCat("  priorityClassName: ", priority_class, "\n"),
               R"(  containers:
  - name: main
    image: registry.invalid/inference:1
    resources: {limits: {nvidia.com/gpu: )",
               gpus, R"(}}
)"),
        ns_);
  }

  // A DeviceTaintRule (cluster-scoped) NoSchedule on driver gpu.nvidia.com, pool `pool`, and
  // `device` unless empty (then the whole pool); deleted by TearDown.
  void TaintDevices(const std::string& name, const std::string& pool, const std::string& device) {
    rules_.push_back(name);
    Apply(StrCat(R"(
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: )",
                 name, R"(}
spec:
  deviceSelector:
    driver: )",
                 kDriver, R"(
    pool: )",
                 pool, device.empty() ? "" : StrCat("\n    device: ", device), R"(
  taint: {key: slurm-k8s-bridge.io/slurm-owned, value: "true", effect: NoSchedule}
)"),
          "");
  }

  // The devices allocated to the pod through its generated claim, as "pool/device".
  std::set<std::string> AllocatedDevices(const std::string& pod) {
    std::set<std::string> out;
    json p = Pod(pod);
    if (p.is_null()) return out;
    std::string claim = p["status"]
                            .value("extendedResourceClaimStatus", json::object())
                            .value("resourceClaimName", "");
    if (claim.empty()) return out;
    json c = Get({"resourceclaim", "-n", ns_, claim});
    if (c.is_null()) return out;
    json results = c["status"]["allocation"]["devices"].value("results", json::array());
    for (const json& r : results) {
      out.insert(StrCat(r.value("pool", ""), "/", r.value("device", "")));
    }
    return out;
  }

  std::string ns_;
  std::vector<std::string> rules_;
};

TEST_F(DraTest, EveryNodePublishesEightGpusOfTheNvidiaDriver) {
  json slices = Get({"resourceslices"});
  ASSERT_FALSE(slices.is_null());
  std::set<std::string> nodes;
  for (const json& s : slices["items"]) {
    if (s["spec"].value("driver", "") != kDriver) continue;
    std::string node = s["spec"].value("nodeName", "");
    nodes.insert(node);
    EXPECT_EQ(s["spec"]["pool"].value("name", ""), node);
    ASSERT_EQ(s["spec"]["devices"].size(), 8u) << node;
    for (int i = 0; i < 8; ++i) {
      const json& d = s["spec"]["devices"][i];
      EXPECT_EQ(d.value("name", ""), StrCat("gpu-", i));
      EXPECT_EQ(d["attributes"]["type"].value("string", ""), "gpu");
      EXPECT_THAT(d["attributes"]["uuid"].value("string", ""), HasSubstr("GPU-"));
      EXPECT_TRUE(d["attributes"].contains("productName"));
      EXPECT_TRUE(d["capacity"].contains("memory"));
    }
  }
  EXPECT_EQ(static_cast<int>(nodes.size()), TestbedNodeCount());
  // The nodes themselves advertise no nvidia.com/gpu: DRA serves it.
  json node = Get({"node", "node1"});
  ASSERT_FALSE(node.is_null());
  EXPECT_FALSE(node["status"]["allocatable"].contains("nvidia.com/gpu"));
}

TEST_F(DraTest, ExtendedResourceIsServedFromTheDeviceClass) {
  CreateGpuPod("two", 2);
  ASSERT_TRUE(WaitPhase("two", "Running", seconds(60))) << SchedulingMessage("two");
  json pod = Pod("two");
  const json& ers = pod["status"]["extendedResourceClaimStatus"];
  ASSERT_TRUE(ers.is_object()) << pod["status"].dump();
  std::string claim_name = ers.value("resourceClaimName", "");
  ASSERT_FALSE(claim_name.empty());
  ASSERT_EQ(ers["requestMappings"].size(), 1u);
  EXPECT_EQ(ers["requestMappings"][0].value("resourceName", ""), "nvidia.com/gpu");
  EXPECT_EQ(ers["requestMappings"][0].value("containerName", ""), "main");

  json claim = Get({"resourceclaim", "-n", ns_, claim_name});
  ASSERT_FALSE(claim.is_null()) << claim_name;
  const json& results = claim["status"]["allocation"]["devices"]["results"];
  ASSERT_EQ(results.size(), 2u) << claim["status"].dump();
  std::string node = pod["spec"].value("nodeName", "");
  for (const json& r : results) {
    EXPECT_EQ(r.value("driver", ""), kDriver);
    EXPECT_EQ(r.value("pool", ""), node);  // the driver's pool is its node
    EXPECT_THAT(r.value("device", ""), HasSubstr("gpu-"));
  }
  ASSERT_EQ(claim["status"]["reservedFor"].size(), 1u);
  EXPECT_EQ(claim["status"]["reservedFor"][0].value("name", ""), "two");

  // The generated claim belongs to the pod and goes with it.
  RunCommand({"kubectl", "delete", "pod", "-n", ns_, "two", "--grace-period=0"}, seconds(60));
  EXPECT_TRUE(WaitFor(
      [&] {
        return Get({"resourceclaim", "-n", ns_, claim_name}).is_null();
      },
      seconds(60)))
      << "claim " << claim_name << " outlived its pod";
}

TEST_F(DraTest, SchedulerDoesNotPreemptToFreeDevices) {
  // Every GPU of every node held by priority-0 pods.
  int nodes = TestbedNodeCount();
  for (int i = 0; i < nodes; ++i) CreateGpuPod(StrCat("low-", i), 8);
  for (int i = 0; i < nodes; ++i) {
    ASSERT_TRUE(WaitPhase(StrCat("low-", i), "Running", seconds(60)))
        << SchedulingMessage(StrCat("low-", i));
  }
  // A pod of the inference class (priority 100000, may preempt) asking one GPU.
  CreateGpuPod("high", 1, "inference-high");
  ASSERT_TRUE(WaitFor(
      [&] {
        return SchedulingMessage("high").find("Preemption is not helpful") != std::string::npos;
      },
      seconds(60)))
      << SchedulingMessage("high");
  EXPECT_EQ(Phase("high"), "Pending");
  EXPECT_EQ(Pod("high")["status"].value("nominatedNodeName", ""), "");
  for (int i = 0; i < nodes; ++i) {
    json low = Pod(StrCat("low-", i));
    ASSERT_FALSE(low.is_null()) << "low-" << i << " was deleted (preempted)";
    EXPECT_FALSE(low["metadata"].contains("deletionTimestamp")) << "low-" << i << " preempted";
  }
}

TEST_F(DraTest, DeviceTaintRuleKeepsDeviceFromNewAllocations) {
  int nodes = TestbedNodeCount();
  // Only node1's devices other than gpu-0 are untainted.
  for (int i = 2; i <= nodes; ++i) {
    TaintDevices(StrCat(ns_, "-node", i), StrCat("node", i), "");
  }
  TaintDevices(StrCat(ns_, "-node1-gpu-0"), "node1", "gpu-0");

  CreateGpuPod("seven", 7);
  ASSERT_TRUE(WaitPhase("seven", "Running", seconds(60))) << SchedulingMessage("seven");
  std::set<std::string> got = AllocatedDevices("seven");
  EXPECT_EQ(got.size(), 7u);
  EXPECT_EQ(got.count("node1/gpu-0"), 0u) << "the tainted device was allocated";

  // One more GPU: only the tainted gpu-0 is free, and tolerating every node taint
  // (tolerations: [{operator: Exists}]) does not tolerate a device taint.
  CreateGpuPod("one", 1);
  ASSERT_TRUE(WaitFor([&] { return !SchedulingMessage("one").empty(); }, seconds(60)));
  EXPECT_EQ(Phase("one"), "Pending") << SchedulingMessage("one");

  RunCommand({"kubectl", "delete", "devicetaintrule", StrCat(ns_, "-node1-gpu-0")}, seconds(30));
  ASSERT_TRUE(WaitPhase("one", "Running", seconds(60))) << SchedulingMessage("one");
  EXPECT_EQ(AllocatedDevices("one"), std::set<std::string>{"node1/gpu-0"});
}

// The testbed's kubelet admission with DRA (kwok starts what it admits): a pod bound to a
// node by name, whose claim nothing allocated, is admitted but does not start -- its kubelet
// cannot prepare the claim (Warning FailedPrepareDynamicResources) -- and starts once the
// claim is allocated (kube-controller-manager then reserves it for the bound pod).
TEST_F(DraTest, APodStartsOnlyOnceItsClaimIsAllocated) {
  Apply(StrCat(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: )",
               kDriver, R"(}
)"),
        ns_);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec:
  nodeName: node1
  tolerations: [{operator: Exists}]
  resourceClaims: [{name: gpu, resourceClaimName: one-gpu}]
  containers:
  - name: main
    image: registry.invalid/inference:1
    resources: {claims: [{name: gpu}]}
)",
        ns_);
  auto prepare_failed = [&] {
    json events = Get({"events", "-n", ns_, "--field-selector",
                       "involvedObject.name=bound,reason=FailedPrepareDynamicResources"});
    return !events.is_null() && !events["items"].empty();
  };
  ASSERT_TRUE(WaitFor(prepare_failed, seconds(60)));
  EXPECT_EQ(Phase("bound"), "Pending");

  // Allocated as kube-scheduler allocates (the device is free: earlier tests' pods are gone).
  CommandResult r = RunCommand({"kubectl", "patch", "resourceclaim", "one-gpu", "-n", ns_,
                                "--subresource=status", "--type=merge", "-p",
                                StrCat(R"({"status":{"allocation":{"devices":{"results":[)",
                                       R"({"request":"gpu","driver":")", kDriver,
                                       R"(","pool":"node1","device":"gpu-7"}]}}}})")},
                               seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitPhase("bound", "Running", seconds(60)))
      << Get({"resourceclaim", "-n", ns_, "one-gpu"})["status"].dump();
}

// The chart's device-hold guard (helm/.../admission-device-hold-guard.yaml, which `scripts/
// testbed up` installs): the apiserver refuses a claim or template whose request tolerates the
// bridge's device taint (it could be allocated a GPU Slurm holds), directly or through a
// toleration of every key, in `exactly` or in a firstAvailable alternative; a toleration of
// another key or of NoExecute only is the claim's own matter.
TEST_F(DraTest, TheChartRefusesClaimsThatTolerateTheBridgesDeviceTaint) {
  CommandResult installed = RunCommand(
      {"kubectl", "get", "validatingadmissionpolicy", "skb-slurm-k8s-bridge-device-hold-guard"},
      seconds(30));
  ASSERT_EQ(installed.exit_code, 0) << "the testbed lacks the chart's device-hold guard "
                                       "(`scripts/testbed up` of this tree installs it)";
  auto create = [&](const std::string& kind, const std::string& name, const std::string& request) {
    const std::string devices =
        StrCat("devices:\n      requests:\n      - name: gpu\n        ", request);
    std::string manifest =
        kind == "ResourceClaim"
            ? StrCat("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: ", name,
                     "}\nspec:\n  ", devices, "\n")
            : StrCat(
                  "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: ",
                  name, "}\nspec:\n  spec:\n    ",
                  StrCat("devices:\n        requests:\n        - name: gpu\n          ", request),
                  "\n");
    return RunCommand({"kubectl", "create", "-n", ns_, "-f", "-"}, seconds(30), manifest);
  };
  const std::string gpu = StrCat("deviceClassName: ", kDriver);
  for (std::string_view tolerations :
       {"[{operator: Exists}]", "[{key: slurm-k8s-bridge.io/slurm-owned, operator: Exists}]",
        "[{key: slurm-k8s-bridge.io/slurm-owned, value: 'true', effect: NoSchedule}]"}) {
    CommandResult r = create("ResourceClaimTemplate", "tolerant",
                             StrCat("exactly: {", gpu, ", tolerations: ", tolerations, "}"));
    EXPECT_NE(r.exit_code, 0) << tolerations;
    EXPECT_THAT(r.err, HasSubstr("request(s) gpu tolerate the device taint "
                                 "slurm-k8s-bridge.io/slurm-owned"))
        << tolerations;
  }
  CommandResult alternative = create(
      "ResourceClaim", "tolerant-alt",
      StrCat("firstAvailable:\n        - {name: two, ", gpu, ", count: 2}\n        - {name: one, ",
             gpu, ", tolerations: [{operator: Exists}]}"));
  EXPECT_NE(alternative.exit_code, 0);
  EXPECT_THAT(alternative.err, HasSubstr("device-hold-guard"));
  for (std::string_view tolerations : {"[{key: gpu.nvidia.com/unhealthy, operator: Exists}]",
                                       "[{operator: Exists, effect: NoExecute}]"}) {
    CommandResult r = create("ResourceClaim", StrCat("other-", tolerations.size() % 100),
                             StrCat("exactly: {", gpu, ", tolerations: ", tolerations, "}"));
    EXPECT_EQ(r.exit_code, 0) << tolerations << ": " << r.err;
  }
  EXPECT_EQ(
      create("ResourceClaimTemplate", "plain", StrCat("exactly: {", gpu, ", count: 2}")).exit_code,
      0);
}

}  // namespace
}  // namespace skb::testbed

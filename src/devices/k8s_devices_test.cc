// SPDX-License-Identifier: Apache-2.0
#include "src/devices/k8s_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "src/devices/dra_testdata.h"
#include "src/ownership/schema.h"

namespace skb::devices {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kDriver[] = "gpu.nvidia.com";

using namespace dra_testdata;  // NOLINT(build/namespaces)

std::vector<std::string> Names(const std::vector<SliceDevice>& devices) {
  std::vector<std::string> out;
  for (const SliceDevice& d : devices) out.push_back(d.name);
  return out;
}

// node1's slice under another node and pool name.
json SliceOf(const std::string& node) {
  json s = json::parse(kSlice);
  s["metadata"]["name"] = node + "-gpu.nvidia.com";
  s["spec"]["nodeName"] = node;
  s["spec"]["pool"]["name"] = node;
  return s;
}

TEST(SlicesByNode, ReadsTheDriversSlices) {
  std::vector<json> slices = {SliceOf("node1"), SliceOf("node2")};
  json other = SliceOf("node3");
  other["spec"]["driver"] = "other.example.com";
  slices.push_back(other);
  std::vector<std::string> skipped;
  auto by_node = SlicesByNode(slices, kDriver, &skipped);
  EXPECT_THAT(skipped, IsEmpty());
  ASSERT_EQ(by_node.size(), 2u);
  EXPECT_THAT(Names(by_node["node1"]),
              ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"));
  // The testbed (as v25.12) publishes no minor attribute, and each GPU's PCI bus id.
  for (const SliceDevice& d : by_node["node2"]) EXPECT_FALSE(d.minor.has_value()) << d.name;
  EXPECT_EQ(by_node["node1"][0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(by_node["node1"][7].pci_bus_id, "0000:db:00.0");
  // A driver that publishes only its own pcieBusID (releases before the standard attribute).
  json old = SliceOf("node1");
  for (json& d : old["spec"]["devices"]) {
    d["attributes"]["pcieBusID"] = d["attributes"]["resource.kubernetes.io/pciBusID"];
    d["attributes"].erase("resource.kubernetes.io/pciBusID");
  }
  std::vector<json> olds = {old};
  EXPECT_EQ(SlicesByNode(olds, kDriver)["node1"][1].pci_bus_id, "0000:2a:00.0");
}

TEST(SlicesByNode, ReadsTheMinorAttribute) {
  json s = SliceOf("node1");
  s["spec"]["devices"][0]["attributes"]["minor"] = {{"int", 3}};
  s["spec"]["devices"][1]["attributes"]["gpu.nvidia.com/minor"] = {{"int", 0}};
  s["spec"]["devices"][2]["attributes"]["minor"] = {{"string", "1"}};  // not an int
  s["spec"]["devices"][3]["attributes"]["minor"] = {{"int", -1}};
  std::vector<json> slices = {s};
  auto by_node = SlicesByNode(slices, kDriver);
  const auto& d = by_node["node1"];
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].minor, 3);
  EXPECT_EQ(d[1].minor, 0);
  EXPECT_EQ(d[2].minor, std::nullopt);
  EXPECT_EQ(d[3].minor, std::nullopt);
}

TEST(SlicesByNode, ReadsTheTypeUuidAndProfileOfMigSlices) {
  json s = SliceOf("node1");
  json& mig = s["spec"]["devices"][7];
  mig["name"] = "gpu-7-mig-19-0-1";
  mig["attributes"]["type"] = {{"string", "mig"}};
  mig["attributes"]["uuid"] = {{"string", "MIG-0d7f1a44-1a7e-5b5e-9d5f-8f5d0c1b2a3e"}};
  mig["attributes"]["profile"] = {{"string", "1g.10gb"}};
  std::vector<json> slices = {s};
  auto by_node = SlicesByNode(slices, kDriver);
  const auto& d = by_node["node1"];
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].type, "gpu");
  EXPECT_FALSE(d[0].IsMig());
  EXPECT_EQ(d[0].uuid.rfind("GPU-", 0), 0u) << d[0].uuid;
  EXPECT_TRUE(d[7].IsMig());
  EXPECT_EQ(d[7].uuid, "MIG-0d7f1a44-1a7e-5b5e-9d5f-8f5d0c1b2a3e");
  EXPECT_EQ(d[7].profile, "1g.10gb");
}

// The driver's taints on a device (NVIDIA's marks a GPU's health so): those that keep it
// from new claims, as kubectl shows taints; effect None (informational) and a taint without
// a key are not read.
TEST(SlicesByNode, ReadsTheDriversTaintsOnADevice) {
  json s = SliceOf("node1");
  s["spec"]["devices"][1]["taints"] = json::parse(R"([
    {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"},
    {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoExecute"}])");
  s["spec"]["devices"][2]["taints"] = json::parse(R"([
    {"key": "example.com/note", "value": "x", "effect": "None"}, {"value": "y", "effect": "NoSchedule"},
    {"key": "slurm-k8s-bridge.io/slurm-owned", "value": "true", "effect": "NoSchedule"},
    "garbage"])");
  std::vector<json> slices = {s};
  auto by_node = SlicesByNode(slices, kDriver);
  const auto& d = by_node["node1"];
  ASSERT_EQ(d.size(), 8u);
  EXPECT_EQ(d[0].taint, "");
  EXPECT_EQ(d[1].taint, "gpu.nvidia.com/xid=79:NoSchedule,gpu.nvidia.com/gpu-lost:NoExecute");
  EXPECT_EQ(d[2].taint, "");
}

TEST(SlicesByNode, UsesThePoolWithoutANodeName) {
  json s = SliceOf("node1");
  s["spec"].erase("nodeName");
  std::vector<json> slices = {s};
  EXPECT_EQ(SlicesByNode(slices, kDriver)["node1"].size(), 8u);
}

TEST(SlicesByNode, MergesAPoolsSlicesOfItsNewestGeneration) {
  json a = SliceOf("node1"), b = SliceOf("node1"), old = SliceOf("node1");
  for (json* s : {&a, &b}) {
    s->at("spec")["pool"]["generation"] = 2;
    s->at("spec")["pool"]["resourceSliceCount"] = 2;
  }
  json& ad = a["spec"]["devices"];
  ad.erase(ad.begin() + 4, ad.end());
  json& bd = b["spec"]["devices"];
  bd.erase(bd.begin(), bd.begin() + 4);
  old["spec"]["devices"] = json::array({old["spec"]["devices"][0]});  // generation 1
  std::vector<std::string> skipped;
  std::vector<json> slices = {old, b, a};
  auto by_node = SlicesByNode(slices, kDriver, &skipped);
  EXPECT_THAT(skipped, IsEmpty());
  EXPECT_THAT(Names(by_node["node1"]),
              ElementsAre("gpu-4", "gpu-5", "gpu-6", "gpu-7", "gpu-0", "gpu-1", "gpu-2", "gpu-3"));

  // Half of generation 2 published: the node is left out, and why.
  slices = {old, a};
  skipped.clear();
  EXPECT_EQ(SlicesByNode(slices, kDriver, &skipped).count("node1"), 0u);
  EXPECT_THAT(skipped, ElementsAre(HasSubstr("has 1 of 2 slices")));
}

TEST(SlicesByNode, SkipsMalformedSlicesWithAReason) {
  json no_node = SliceOf("node1");
  no_node["spec"].erase("nodeName");
  no_node["spec"].erase("pool");
  json twice = SliceOf("node2");
  twice["spec"]["devices"][1]["name"] = "gpu-0";
  json unnamed = SliceOf("node3");
  unnamed["spec"]["devices"][7].erase("name");
  json empty = SliceOf("node4");
  empty["spec"]["devices"] = json::array();
  json junk = "not an object";
  std::vector<json> slices = {no_node, twice, unnamed, empty, junk, json::object()};
  std::vector<std::string> skipped;
  auto by_node = SlicesByNode(slices, kDriver, &skipped);
  ASSERT_EQ(by_node.size(), 1u);
  EXPECT_EQ(by_node["node3"].size(), 7u);  // the unnamed device is left out
  EXPECT_THAT(skipped, ::testing::UnorderedElementsAre(
                           HasSubstr("no spec.nodeName and no pool name"),
                           HasSubstr("node3: a device has no name"), HasSubstr("node4: no devices"),
                           HasSubstr("node node2: device gpu-0 is published twice")));
}

TEST(ClaimsByNode, ReadsGeneratedAndTemplateClaims) {
  std::vector<json> claims = {json::parse(kExtendedClaim), json::parse(kTemplateClaim)};
  auto by_node = ClaimsByNode(claims, kDriver);
  ASSERT_EQ(by_node.size(), 1u);
  const auto& c = by_node["node1"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].pod, "cap/two");
  EXPECT_THAT(c[0].devices, ElementsAre("gpu-0", "gpu-1"));
  EXPECT_TRUE(c[0].allocated);
  EXPECT_EQ(c[1].pod, "cap/tmpl");
  EXPECT_THAT(c[1].devices, ElementsAre("gpu-2"));
}

TEST(ClaimsByNode, ClaimsWithoutAPodAndOtherDrivers) {
  json unreserved = json::parse(kExtendedClaim);
  unreserved["status"].erase("reservedFor");
  json unallocated = json::parse(kTemplateClaim);
  unallocated["status"].erase("allocation");
  json other = json::parse(kTemplateClaim);
  other["status"]["allocation"]["devices"]["results"][0]["driver"] = "nic.example.com";
  json admin = json::parse(kTemplateClaim);
  admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = true;
  json mixed = json::parse(kExtendedClaim);
  mixed["metadata"]["name"] = "mixed";
  mixed["status"]["allocation"]["devices"]["results"][1]["pool"] = "node2";
  json job = {{"apiGroup", "batch"}, {"resource", "jobs"}, {"name", "j"}};
  mixed["status"]["reservedFor"].insert(mixed["status"]["reservedFor"].begin(), job);
  std::vector<json> claims = {unreserved, unallocated, other, admin, mixed, json(), json(3)};
  auto by_node = ClaimsByNode(claims, kDriver);
  ASSERT_EQ(by_node["node1"].size(), 2u);
  EXPECT_EQ(by_node["node1"][0].pod, "cap/two-extended-resources-r4tqr");  // the claim itself
  EXPECT_EQ(by_node["node1"][1].pod, "cap/two");  // the first *pod* reserving it
  EXPECT_THAT(by_node["node1"][1].devices, ElementsAre("gpu-0"));
  ASSERT_EQ(by_node["node2"].size(), 1u);
  EXPECT_THAT(by_node["node2"][0].devices, ElementsAre("gpu-1"));
  EXPECT_EQ(by_node.size(), 2u);
}

TEST(HoldRule, IsTheRuleTheApiserverAccepted) {
  json rule = HoldRule("node2", "gpu-3", kDriver);
  json real = json::parse(kRule);
  EXPECT_EQ(rule["metadata"]["name"], "slurm-hold.node2.gpu-3");
  EXPECT_EQ(rule["apiVersion"], real["apiVersion"]);
  EXPECT_EQ(rule["kind"], real["kind"]);
  EXPECT_EQ(rule["metadata"]["labels"], real["metadata"]["labels"]);
  EXPECT_EQ(rule["spec"]["deviceSelector"], real["spec"]["deviceSelector"]);
  json taint = real["spec"]["taint"];
  taint.erase("timeAdded");  // the apiserver's
  EXPECT_EQ(rule["spec"]["taint"], taint);
}

bool Dns1123Subdomain(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return s.size() <= 253 && std::regex_match(s, re);
}
bool LabelValue(const std::string& s) {
  static const std::regex re("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
  return s.size() <= 63 && std::regex_match(s, re);
}

TEST(HoldRule, NamesAreValidStableAndDistinct) {
  EXPECT_EQ(HoldRuleName("gpu-a.rack1.example.com", "gpu-7"),
            "slurm-hold.gpu-a.rack1.example.com.gpu-7");
  // A dash could not tell node "a-b" device "c" from node "a" device "b-c"; a dot can.
  EXPECT_NE(HoldRuleName("a-b", "c"), HoldRuleName("a", "b-c"));

  std::string label(63, 'n');
  std::string longest = std::string(250, 'n');
  std::string longest_dots = std::string(60, 'a') + "." + std::string(60, 'b') + "." +
                             std::string(60, 'c') + "." + std::string(68, 'd');
  for (const std::string& node : {std::string("node1"), label, longest, longest_dots}) {
    for (const std::string& device : {std::string("gpu-0"), std::string(63, 'x')}) {
      std::string name = HoldRuleName(node, device);
      EXPECT_TRUE(Dns1123Subdomain(name)) << name;
      EXPECT_EQ(name, HoldRuleName(node, device));
      json rule = HoldRule(node, device, kDriver);
      EXPECT_TRUE(LabelValue(rule["metadata"]["labels"][kHoldNodeLabel])) << node;
      EXPECT_EQ(rule["spec"]["deviceSelector"]["pool"], node);
    }
  }
  // Long names that share their first 236 characters stay distinct.
  EXPECT_NE(HoldRuleName(longest, "gpu-0"), HoldRuleName(longest, "gpu-1"));
  EXPECT_NE(HoldRuleName(longest + "a", "gpu-0"), HoldRuleName(longest + "b", "gpu-0"));
  EXPECT_EQ(HoldRule(label, "gpu-0", kDriver)["metadata"]["labels"][kHoldNodeLabel], label);
}

TEST(HeldDevices, ReadsOnlyTheBridgesRules) {
  json real = json::parse(kRule);
  json deleting = HoldRule("node2", "gpu-4", kDriver);
  deleting["metadata"]["deletionTimestamp"] = "2026-11-24T01:12:00Z";
  json someone_elses = HoldRule("node2", "gpu-5", kDriver);
  someone_elses["metadata"]["labels"].erase(ownership::kManagedByLabel);
  json whole_pool = HoldRule("node3", "gpu-0", kDriver);
  whole_pool["spec"]["deviceSelector"].erase("device");
  std::vector<json> rules = {real,       deleting, someone_elses,
                             whole_pool, json(),   HoldRule("node1", "gpu-0", kDriver)};
  auto held = HeldDevices(rules);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held["node2"], (std::set<std::string>{"gpu-3", "gpu-4"}));
  EXPECT_EQ(held["node1"], std::set<std::string>{"gpu-0"});
}

// A labelled rule holds nothing unless it says what the bridge's hold says: someone who sets
// its effect to None, changes its key, narrows or renames its selector has lifted the hold.
TEST(HeldDevices, ReadsWhatARuleSaysNotItsLabel) {
  json none = HoldRule("node1", "gpu-1", kDriver);
  none["spec"]["taint"]["effect"] = "None";
  json other_key = HoldRule("node1", "gpu-2", kDriver);
  other_key["spec"]["taint"]["key"] = "example.com/other";
  json narrowed = HoldRule("node1", "gpu-3", kDriver);
  narrowed["spec"]["deviceSelector"]["selectors"] =
      json::array({{{"cel", {{"expression", "false"}}}}});
  json renamed = HoldRule("node1", "gpu-4", kDriver);
  renamed["spec"]["deviceSelector"]["device"] = "gpu-5";  // the rule of gpu-4 holds gpu-5
  json no_driver = HoldRule("node1", "gpu-6", kDriver);
  no_driver["spec"]["deviceSelector"].erase("driver");
  json evicting = HoldRule("node1", "gpu-7", kDriver);
  evicting["spec"]["taint"]["effect"] = "NoExecute";
  std::vector<json> rules = {
      HoldRule("node1", "gpu-0", kDriver), none, other_key, narrowed, renamed, no_driver, evicting};
  auto held = HeldDevices(rules);
  EXPECT_EQ(held["node1"], (std::set<std::string>{"gpu-0", "gpu-5", "gpu-7"}))
      << "gpu-4's rule now holds gpu-5; gpu-4 is unguarded";
}

constexpr int32_t kThreshold = 100000;

TEST(PendingGpuPod, RecognisesTheUnschedulablePod) {
  auto p = PendingGpuPod(json::parse(kPendingPod), "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod, "cap/big");
  EXPECT_EQ(p->gpus, 9);  // max(9 in containers, 1 in the init container)
  EXPECT_EQ(p->priority, 100000);
  EXPECT_EQ(p->model, "NVIDIA-H100-80GB-HBM3");
  EXPECT_FALSE(PendingGpuPod(json::parse(kPendingPod), "nvidia.com/gpu", kThreshold + 1));
  EXPECT_FALSE(PendingGpuPod(json::parse(kPendingPod), "example.com/fpga", kThreshold));
}

TEST(PendingGpuPod, CarriesItsNodeSelectorAndRequiredAffinity) {
  json pod = json::parse(kPendingPod);
  pod["spec"]["nodeSelector"] = {{"zone", "b"},
                                 {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms",
       {{{"matchExpressions", {{{"key", "pool"}, {"operator", "In"}, {"values", {"inf", "x"}}}}},
         {"matchFields",
          {{{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", {"node9"}}}}}},
        {{"matchExpressions", {{{"key", "rack"}, {"operator", "Exists"}}}}}}}};
  auto p = PendingGpuPod(pod, "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->placement.node_selector.at("zone"), "b");
  ASSERT_EQ(p->placement.terms.size(), 2u);
  EXPECT_EQ(p->placement.terms[0],
            (std::vector<NodeSelectorRequirement>{
                {.key = "pool", .op = "In", .values = {"inf", "x"}},
                {.key = "metadata.name", .op = "NotIn", .values = {"node9"}, .field = true}}));
  EXPECT_EQ(p->placement.terms[1],
            (std::vector<NodeSelectorRequirement>{{.key = "rack", .op = "Exists"}}));
  // Preferred terms never make a node unusable: not read.
  pod["spec"]["affinity"]["nodeAffinity"].erase("requiredDuringSchedulingIgnoredDuringExecution");
  pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
      json::array({{{"weight", 1}}});
  EXPECT_TRUE(PendingGpuPod(pod, "nvidia.com/gpu", kThreshold)->placement.terms.empty());
}

TEST(PendingGpuPod, CarriesItsTolerations) {
  json pod = json::parse(kPendingPod);  // tolerates every taint
  EXPECT_EQ(PendingGpuPod(pod, "nvidia.com/gpu", kThreshold)->placement.tolerations,
            std::vector<Toleration>{{.op = "Exists"}});
  pod["spec"].erase("tolerations");
  EXPECT_TRUE(PendingGpuPod(pod, "nvidia.com/gpu", kThreshold)->placement.tolerations.empty());
  pod["spec"]["tolerations"] = json::parse(R"([
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "nvidia.com/maintenance", "operator": "Equal", "value": "true",
     "effect": "NoSchedule"},
    {"key": "dedicated", "value": "inference"},
    {"operator": "Exists"}])");
  auto p = PendingGpuPod(pod, "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(
      p->placement.tolerations,
      (std::vector<Toleration>{
          {.key = "node.kubernetes.io/not-ready", .op = "Exists", .effect = "NoExecute"},
          {.key = "nvidia.com/maintenance", .op = "Equal", .value = "true", .effect = "NoSchedule"},
          {.key = "dedicated", .value = "inference"},
          {.op = "Exists"}}));
}

TEST(PendingGpuPod, NotRunningBoundDeletedOrSchedulablePods) {
  EXPECT_FALSE(PendingGpuPod(json::parse(kRunningPod), "nvidia.com/gpu", 0));
  json bound = json::parse(kPendingPod);
  bound["spec"]["nodeName"] = "node1";
  EXPECT_FALSE(PendingGpuPod(bound, "nvidia.com/gpu", kThreshold));
  json deleting = json::parse(kPendingPod);
  deleting["metadata"]["deletionTimestamp"] = "2026-11-24T01:12:00Z";
  EXPECT_FALSE(PendingGpuPod(deleting, "nvidia.com/gpu", kThreshold));
  json gated = json::parse(kPendingPod);
  gated["status"]["conditions"][0]["reason"] = "SchedulingGated";
  EXPECT_FALSE(PendingGpuPod(gated, "nvidia.com/gpu", kThreshold));
  json fresh = json::parse(kPendingPod);
  fresh["status"].erase("conditions");  // not yet tried by the scheduler
  EXPECT_FALSE(PendingGpuPod(fresh, "nvidia.com/gpu", kThreshold));
  json failed = json::parse(kPendingPod);
  failed["status"]["phase"] = "Failed";
  EXPECT_FALSE(PendingGpuPod(failed, "nvidia.com/gpu", kThreshold));
  EXPECT_FALSE(PendingGpuPod(json(), "nvidia.com/gpu", 0));
  EXPECT_FALSE(PendingGpuPod(json::array(), "nvidia.com/gpu", 0));
}

TEST(PendingGpuPod, CountsAsKubeSchedulerDoes) {
  json pod = json::parse(kPendingPod);
  json& spec = pod["spec"];
  auto gpus = [&] {
    auto p = PendingGpuPod(pod, "nvidia.com/gpu", 0);
    return p ? p->gpus : -1;
  };
  spec["priority"] = 0;
  // A limit alone is the request.
  spec["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}}}};
  spec["containers"].push_back(
      {{"name", "b"}, {"resources", {{"requests", {{"nvidia.com/gpu", "3"}}}}}});
  EXPECT_EQ(gpus(), 5);
  // An init container asking more than the containers together.
  spec["initContainers"][0]["resources"] = {{"requests", {{"nvidia.com/gpu", "6"}}}};
  EXPECT_EQ(gpus(), 6);
  // A sidecar started before the init container runs beside it (6 + 1) and beside the
  // containers (5 + 1).
  json sidecar = {{"name", "proxy"},
                  {"restartPolicy", "Always"},
                  {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}};
  spec["initContainers"].insert(spec["initContainers"].begin(), sidecar);
  EXPECT_EQ(gpus(), 7);
  // Not a whole number: not a GPU pod the bridge can count.
  spec["containers"][1]["resources"]["requests"]["nvidia.com/gpu"] = "1500m";
  EXPECT_EQ(gpus(), -1);
  // No GPU at all.
  spec.erase("initContainers");
  spec["containers"] =
      json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}});
  EXPECT_EQ(gpus(), -1);
}

TEST(PendingGpuPod, ModelFromNodeAffinity) {
  json pod = json::parse(kPendingPod);
  pod["spec"].erase("nodeSelector");
  EXPECT_EQ(PendingGpuPod(pod, "nvidia.com/gpu", 0)->model, "");
  auto term = [](const std::string& op, std::vector<std::string> values) {
    return json{{"matchExpressions",
                 json::array({{{"key", kGpuProductLabel}, {"operator", op}, {"values", values}}})}};
  };
  auto with_terms = [&](json terms) {
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
       ["nodeSelectorTerms"] = terms;
    return PendingGpuPod(pod, "nvidia.com/gpu", 0)->model;
  };
  EXPECT_EQ(with_terms(json::array({term("In", {"NVIDIA-A100"})})), "NVIDIA-A100");
  EXPECT_EQ(with_terms(json::array({term("In", {"NVIDIA-A100"}), term("In", {"NVIDIA-A100"})})),
            "NVIDIA-A100");
  // Either of two models, any but one, or a term that allows any: no single model.
  EXPECT_EQ(with_terms(json::array({term("In", {"NVIDIA-A100", "NVIDIA-H100"})})), "");
  EXPECT_EQ(with_terms(json::array({term("In", {"NVIDIA-A100"}), term("In", {"NVIDIA-H100"})})),
            "");
  EXPECT_EQ(with_terms(json::array({term("NotIn", {"NVIDIA-A100"})})), "");
  EXPECT_EQ(
      with_terms(json::array({term("In", {"NVIDIA-A100"}), json{{"matchFields", json::array()}}})),
      "");
}

// Quotas read the model of any GPU pod, bound or not, scheduled or not.
TEST(RequestedGpuModel, OfAnyPodWithTheSelector) {
  json pod = json::parse(kPendingPod);
  EXPECT_EQ(RequestedGpuModel(pod), "NVIDIA-H100-80GB-HBM3");
  pod["spec"]["nodeName"] = "node1";
  pod.erase("status");
  EXPECT_EQ(RequestedGpuModel(pod), "NVIDIA-H100-80GB-HBM3");
  pod["spec"].erase("nodeSelector");
  EXPECT_EQ(RequestedGpuModel(pod), "");
  EXPECT_EQ(RequestedGpuModel(json::object()), "");
}

// --- GPUs asked for through ResourceClaims -------------------------------------------------

const std::set<std::string, std::less<>> kGpuClasses = {"gpu.nvidia.com"};

// A pending claim (no status) with these requests.
json PendingClaim(const std::string& name, json requests) {
  return {{"metadata", {{"name", name}, {"namespace", "cap"}}},
          {"spec", {{"devices", {{"requests", std::move(requests)}}}}}};
}
json Exactly(const std::string& cls, json extra = json::object()) {
  json e = {{"deviceClassName", cls}};
  e.update(extra);
  return e;
}

TEST(GpuDemandOf, CountsExactRequestsOfTheGpuClasses) {
  // The template claim the 1.37.2 apiserver returned: 1 GPU, allocated.
  EXPECT_EQ(GpuDemandOf(json::parse(kTemplateClaim), kGpuClasses),
            (ClaimDemand{.gpus = 1, .allocated = true}));
  // The same asked again, not allocated: count 3 + a default count of 1; another class
  // (a NIC) and adminAccess (monitoring, no device of its own) count nothing.
  json claim = PendingClaim(
      "c", json::array(
               {{{"name", "a"},
                 {"exactly", Exactly(kDriver, {{"allocationMode", "ExactCount"}, {"count", 3}})}},
                {{"name", "b"}, {"exactly", Exactly(kDriver)}},
                {{"name", "nic"}, {"exactly", Exactly("rdma.example.com", {{"count", 2}})}},
                {{"name", "mon"}, {"exactly", Exactly(kDriver, {{"adminAccess", true}})}}}));
  EXPECT_EQ(GpuDemandOf(claim, kGpuClasses), (ClaimDemand{.gpus = 4}));
  EXPECT_EQ(GpuDemandOf(claim, {"other.example.com"}), (ClaimDemand{}));
  EXPECT_EQ(GpuDemandOf(json::object(), kGpuClasses), (ClaimDemand{}));
}

TEST(GpuDemandOf, APrioritizedListCountsItsFirstGpuAlternative) {
  json claim = PendingClaim(
      "c",
      json::array({{{"name", "r"},
                    {"firstAvailable",
                     json::array({{{"name", "mig"}, {"deviceClassName", "mig.nvidia.com"}},
                                  {{"name", "two"}, {"deviceClassName", kDriver}, {"count", 2}},
                                  {{"name", "one"}, {"deviceClassName", kDriver}}})}}}));
  EXPECT_EQ(GpuDemandOf(claim, kGpuClasses).gpus, 2);
  EXPECT_EQ(GpuDemandOf(claim, {"mig.nvidia.com", "gpu.nvidia.com"}).gpus, 1);  // the MIG slice
}

const std::set<std::string, std::less<>> kMigClasses = {"mig.nvidia.com"};

json MigRequest(const std::string& name, const std::string& expression, int count = 1) {
  return {{"name", name},
          {"exactly",
           Exactly("mig.nvidia.com",
                   {{"count", count}, {"selectors", {{{"cel", {{"expression", expression}}}}}}})}};
}

// As NVIDIA's driver documents a MIG request: the class mig.nvidia.com and a CEL selector
// on the profile.
TEST(GpuDemandOf, AMigRequestAsksForSlicesOfTheProfileItsSelectorNames) {
  json claim = PendingClaim(
      "c",
      json::array({MigRequest("a", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", 2),
                   MigRequest("b",
                              "device.attributes[\"gpu.nvidia.com\"].profile==\"1g.10gb\" && "
                              "device.capacity['gpu.nvidia.com'].memory.compareTo("
                              "quantity('10Gi')) >= 0")}));
  EXPECT_EQ(GpuDemandOf(claim, kGpuClasses, kMigClasses),
            (ClaimDemand{.gpus = 3, .profile = "1g.10gb"}));
  // Without the MIG classes configured, a MIG request is no GPU demand (as before).
  EXPECT_EQ(GpuDemandOf(claim, kGpuClasses), (ClaimDemand{}));

  const std::pair<json, const char*> unknown[] = {
      {MigRequest("any", "device.attributes['gpu.nvidia.com'].type == 'mig'"),
       "of no single profile"},
      {MigRequest("either",
                  "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || "
                  "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"),
       "of no single profile"},
  };
  for (const auto& [request, why] : unknown) {
    EXPECT_THAT(
        GpuDemandOf(PendingClaim("c", json::array({request})), kGpuClasses, kMigClasses).unknown,
        HasSubstr(why))
        << request.dump();
  }
  // Slices of two profiles, or slices beside whole GPUs: one give frees one kind.
  json two = PendingClaim(
      "c",
      json::array({MigRequest("a", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"),
                   MigRequest("b", "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'")}));
  EXPECT_THAT(GpuDemandOf(two, kGpuClasses, kMigClasses).unknown,
              HasSubstr("asks for 3g.40gb slices beside other GPUs"));
  json mixed = PendingClaim(
      "c",
      json::array({{{"name", "whole"}, {"exactly", Exactly(kDriver)}},
                   MigRequest("a", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")}));
  EXPECT_THAT(GpuDemandOf(mixed, kGpuClasses, kMigClasses).unknown, HasSubstr("beside other GPUs"));
}

TEST(GpuDemandOf, ADemandItCannotSizeIsUnknownAndSaysWhy) {
  json all = PendingClaim(
      "c", json::array(
               {{{"name", "every"}, {"exactly", Exactly(kDriver, {{"allocationMode", "All"}})}}}));
  EXPECT_THAT(GpuDemandOf(all, kGpuClasses).unknown, HasSubstr("allocationMode All"));
  json zero = PendingClaim(
      "c", json::array({{{"name", "z"}, {"exactly", Exactly(kDriver, {{"count", 0}})}}}));
  EXPECT_THAT(GpuDemandOf(zero, kGpuClasses).unknown, HasSubstr("no valid count"));
  // A request that tolerates the bridge's hold could be given a device Slurm holds.
  for (json t : {json{{"operator", "Exists"}},
                 json{{"key", kHoldTaintKey}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                 json{{"key", kHoldTaintKey}, {"value", "true"}}}) {
    json c = PendingClaim(
        "c", json::array({{{"name", "t"}, {"exactly", Exactly(kDriver, {{"tolerations", {t}}})}}}));
    EXPECT_THAT(GpuDemandOf(c, kGpuClasses).unknown,
                HasSubstr("tolerates the bridge's device taint"))
        << t.dump();
  }
  // Tolerating something else (a NoExecute taint, another key) is the claim's own matter.
  for (json t : {json{{"operator", "Exists"}, {"effect", "NoExecute"}},
                 json{{"key", "gpu.nvidia.com/unhealthy"}, {"operator", "Exists"}}}) {
    json c = PendingClaim(
        "c", json::array({{{"name", "t"}, {"exactly", Exactly(kDriver, {{"tolerations", {t}}})}}}));
    EXPECT_EQ(GpuDemandOf(c, kGpuClasses), (ClaimDemand{.gpus = 1})) << t.dump();
  }
}

// Quotas count what an allocated claim holds (the driver's devices), whatever it asked: an
// allocationMode All claim once allocated, a prioritized list's chosen alternative.
TEST(QuotaGpusOf, AnAllocatedClaimCountsItsDevicesAndAPendingOneItsDemand) {
  EXPECT_EQ(QuotaGpusOf(json::parse(kExtendedClaim), kGpuClasses, kDriver),
            (ClaimDemand{.gpus = 2, .allocated = true}));
  json all = json::parse(kExtendedClaim);
  all["spec"]["devices"]["requests"][0]["exactly"] = Exactly(kDriver, {{"allocationMode", "All"}});
  EXPECT_EQ(QuotaGpusOf(all, kGpuClasses, kDriver), (ClaimDemand{.gpus = 2, .allocated = true}));
  // Another driver's devices (a NIC in the same claim) and admin access count nothing.
  json mixed = json::parse(kExtendedClaim);
  json& results = mixed["status"]["allocation"]["devices"]["results"];
  results.push_back(
      {{"device", "nic-0"}, {"driver", "rdma.example.com"}, {"pool", "node1"}, {"request", "nic"}});
  results.push_back({{"device", "gpu-5"},
                     {"driver", kDriver},
                     {"pool", "node1"},
                     {"request", "mon"},
                     {"adminAccess", true}});
  EXPECT_EQ(QuotaGpusOf(mixed, kGpuClasses, kDriver).gpus, 2);
  // Not allocated yet: what it asks, or why that is not known.
  json pending = json::parse(kPendingTemplateClaim);
  EXPECT_EQ(QuotaGpusOf(pending, kGpuClasses, kDriver), GpuDemandOf(pending, kGpuClasses));
  all["status"].erase("allocation");
  EXPECT_THAT(QuotaGpusOf(all, kGpuClasses, kDriver).unknown, HasSubstr("allocationMode All"));
}

// A MIG slice counts as one device for its tenant, asked or allocated: two 1g.10gb slices
// pending count 2, as they do once the scheduler has chosen them.
TEST(QuotaGpusOf, AMigSliceCountsOneAskedOrAllocated) {
  const std::set<std::string, std::less<>> mig = {"mig.nvidia.com"};
  json claim = PendingClaim(
      "c", json::array(
               {MigRequest("a", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", 2)}));
  EXPECT_EQ(QuotaGpusOf(claim, kGpuClasses, kDriver, mig),
            (ClaimDemand{.gpus = 2, .profile = "1g.10gb"}));
  // Without the MIG classes, the slices are not GPU demand (a site that does not use them).
  EXPECT_EQ(QuotaGpusOf(claim, kGpuClasses, kDriver), ClaimDemand{});
  claim["status"]["allocation"]["devices"]["results"] = {
      {{"device", "gpu-6-mig-19-0-1"}, {"driver", kDriver}, {"pool", "node2"}, {"request", "a"}},
      {{"device", "gpu-6-mig-19-1-1"}, {"driver", kDriver}, {"pool", "node2"}, {"request", "a"}}};
  claim["status"]["allocation"]["nodeSelector"] = {
      {"nodeSelectorTerms",
       {{{"matchFields",
          {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"node2"}}}}}}}}};
  EXPECT_EQ(QuotaGpusOf(claim, kGpuClasses, kDriver, mig).gpus, 2);
}

// A pending pod asking its GPUs through a ResourceClaimTemplate (claim "gpu") and a named
// ResourceClaim (claim "shared"), nothing through nvidia.com/gpu.
json ClaimPod() {
  json pod = json::parse(kPendingPod);
  for (auto* c : {&pod["spec"]["containers"][0], &pod["spec"]["initContainers"][0]}) {
    (*c)["resources"] = {{"claims", {{{"name", "gpu"}}, {{"name", "shared"}}}}};
  }
  pod["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimTemplateName", "two-gpus"}},
                                   {{"name", "shared"}, {"resourceClaimName", "team-gpus"}}};
  pod["status"]["resourceClaimStatuses"] = {
      {{"name", "gpu"}, {"resourceClaimName", "big-gpu-x7k2p"}}};
  return pod;
}

TEST(ClaimsOfPod, NamesTheClaimsItUses) {
  PodClaims c = ClaimsOfPod(ClaimPod());
  EXPECT_THAT(c.claims, ElementsAre("cap/big-gpu-x7k2p", "cap/team-gpus"));
  EXPECT_EQ(c.unresolved, 0);
  json fresh = ClaimPod();  // kube-controller-manager has not generated the claim yet
  fresh["status"].erase("resourceClaimStatuses");
  c = ClaimsOfPod(fresh);
  EXPECT_THAT(c.claims, ElementsAre("cap/team-gpus"));
  EXPECT_EQ(c.unresolved, 1);
  json none = ClaimPod();  // recorded without a claim: none was needed
  none["status"]["resourceClaimStatuses"][0].erase("resourceClaimName");
  EXPECT_THAT(ClaimsOfPod(none).claims, ElementsAre("cap/team-gpus"));
  EXPECT_TRUE(ClaimsOfPod(json::parse(kPendingPod)).empty());
}

TEST(PendingGpuPod, CountsTheGpusItsClaimsAskFor) {
  std::map<std::string, ClaimDemand> demands = {{"cap/big-gpu-x7k2p", {.gpus = 2}},
                                                {"cap/team-gpus", {.gpus = 1}}};
  auto p = PendingGpuPod(ClaimPod(), "nvidia.com/gpu", kThreshold, demands);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod, "cap/big");
  EXPECT_EQ(p->gpus, 3);
  EXPECT_EQ(p->model, "NVIDIA-H100-80GB-HBM3");
  // With an extended-resource request beside them: both count.
  json both = ClaimPod();
  both["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", "4"}};
  EXPECT_EQ(PendingGpuPod(both, "nvidia.com/gpu", kThreshold, demands)->gpus, 7);
  // An allocated claim (shared with a running pod) asks for nothing more.
  demands["cap/team-gpus"].allocated = true;
  EXPECT_EQ(PendingGpuPod(ClaimPod(), "nvidia.com/gpu", kThreshold, demands)->gpus, 2);
  demands["cap/big-gpu-x7k2p"].allocated = true;
  EXPECT_FALSE(PendingGpuPod(ClaimPod(), "nvidia.com/gpu", kThreshold, demands));
  // Below the threshold, or scheduled: no trigger whatever it asks.
  demands = {{"cap/big-gpu-x7k2p", {.gpus = 2}}, {"cap/team-gpus", {.gpus = 1}}};
  EXPECT_FALSE(PendingGpuPod(ClaimPod(), "nvidia.com/gpu", kThreshold + 1, demands));
}

// The objects as the 1.37.2 apiserver returned them: a pending pod of a template and the
// claim kube-controller-manager generated for it.
TEST(PendingGpuPod, CountsTheGeneratedClaimOfARealTemplatePod) {
  const json pod = json::parse(kPendingTemplatePod);
  const json claim = json::parse(kPendingTemplateClaim);
  EXPECT_THAT(ClaimsOfPod(pod).claims, ElementsAre("cap/tmpl-big-gpu-dmjs7"));
  const ClaimDemand demand = GpuDemandOf(claim, kGpuClasses);
  EXPECT_EQ(demand, (ClaimDemand{.gpus = 9}));
  auto p = PendingGpuPod(pod, "nvidia.com/gpu", kThreshold, {{"cap/tmpl-big-gpu-dmjs7", demand}});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->pod, "cap/tmpl-big");
  EXPECT_EQ(p->gpus, 9);
  EXPECT_EQ(p->claim_gpus, 9);
  EXPECT_EQ(p->priority, 100000);
}

TEST(MayUseGpus, AGpuRequestOrAClaim) {
  EXPECT_TRUE(MayUseGpus(json::parse(kPendingPod), "nvidia.com/gpu"));
  EXPECT_TRUE(MayUseGpus(json::parse(kPendingTemplatePod), "nvidia.com/gpu"));
  json plain = json::parse(kPendingPod);
  plain["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "1"}}}};
  plain["spec"]["initContainers"][0]["resources"] = json::object();
  EXPECT_FALSE(MayUseGpus(plain, "nvidia.com/gpu"));
  EXPECT_FALSE(MayUseGpus(json::object(), "nvidia.com/gpu"));
}

TEST(PendingGpuPod, WaitsUntilEveryClaimIsKnownAndSized) {
  std::optional<PendingCandidate> c = PendingCandidateOf(ClaimPod(), "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->pod.gpus, 0);  // no extended-resource part
  std::string why;
  EXPECT_FALSE(CountGpus(*c, {{"cap/team-gpus", {.gpus = 1}}}, &why));
  EXPECT_EQ(why, "");  // not seen yet: a matter of moments, nothing to report
  EXPECT_FALSE(CountGpus(*c,
                         {{"cap/team-gpus", {.gpus = 1}},
                          {"cap/big-gpu-x7k2p", {.unknown = "request gpu asks for every device"}}},
                         &why));
  EXPECT_EQ(why, "ResourceClaim cap/big-gpu-x7k2p: request gpu asks for every device");
  json fresh = ClaimPod();
  fresh["status"].erase("resourceClaimStatuses");
  c = PendingCandidateOf(fresh, "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(c.has_value());
  why.clear();
  EXPECT_FALSE(CountGpus(*c, {{"cap/team-gpus", {.gpus = 1}}}, &why));
  EXPECT_EQ(why, "");
  // A pod with neither a GPU request nor claims is no candidate.
  json plain = json::parse(kPendingPod);
  plain["spec"]["containers"][0]["resources"] = json::object();
  plain["spec"]["initContainers"][0]["resources"] = json::object();
  EXPECT_FALSE(PendingCandidateOf(plain, "nvidia.com/gpu", kThreshold));
}

TEST(PendingGpuPod, AMigPodAsksForSlicesAndNeverForSlicesBesideWholeGpus) {
  std::map<std::string, ClaimDemand> demands = {
      {"cap/big-gpu-x7k2p", {.gpus = 2, .profile = "1g.10gb"}},
      {"cap/team-gpus", {.gpus = 1, .profile = "1g.10gb"}}};
  auto p = PendingGpuPod(ClaimPod(), "nvidia.com/gpu", kThreshold, demands);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpus, 3);
  EXPECT_EQ(p->profile, "1g.10gb");
  std::optional<PendingCandidate> c = PendingCandidateOf(ClaimPod(), "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(c.has_value());
  std::string why;
  demands["cap/team-gpus"].profile = "3g.40gb";
  EXPECT_FALSE(CountGpus(*c, demands, &why));
  EXPECT_THAT(why, HasSubstr("asks for 3g.40gb slices beside 1g.10gb slices"));
  demands["cap/team-gpus"].profile.clear();
  EXPECT_FALSE(CountGpus(*c, demands, &why));
  EXPECT_THAT(why, HasSubstr("asks for whole GPUs beside 1g.10gb slices"));
  // An extended-resource request is whole GPUs.
  json both = ClaimPod();
  both["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", "4"}};
  c = PendingCandidateOf(both, "nvidia.com/gpu", kThreshold);
  ASSERT_TRUE(c.has_value());
  demands["cap/team-gpus"].profile = "1g.10gb";
  EXPECT_FALSE(CountGpus(*c, demands, &why));
  EXPECT_THAT(why, HasSubstr("asks for 1g.10gb slices beside whole GPUs"));
}

// A pod written for the device plugin's mixed MIG strategy asks nvidia.com/mig-1g.10gb; a
// DeviceClass of slices serves it through DRA (extendedResourceName). The give frees slices
// of that profile, counted as kube-scheduler counts the request.
TEST(PendingGpuPod, AMigExtendedResourceAsksForSlicesOfItsProfile) {
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  json pod = json::parse(kPendingPod);
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "2"}}}};
  pod["spec"]["initContainers"][0]["resources"] = {{"requests", {{"nvidia.com/mig-1g.10gb", "3"}}}};
  auto p = PendingGpuPod(pod, "nvidia.com/gpu", kThreshold, {}, kPrefix);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpus, 3);  // the init container's 3 (as kube-scheduler counts), not 2 + 3
  EXPECT_EQ(p->profile, "1g.10gb");
  EXPECT_EQ(p->claim_gpus, 0);
  EXPECT_TRUE(MayUseGpus(pod, "nvidia.com/gpu", kPrefix));
  // Without the prefix (mig_extended_resource_prefix ""), the pod asks for no GPU.
  EXPECT_FALSE(PendingGpuPod(pod, "nvidia.com/gpu", kThreshold));
  EXPECT_FALSE(MayUseGpus(pod, "nvidia.com/gpu"));
  // A zero request is no request: the whole-GPU ask stands alone.
  json zero = json::parse(kPendingPod);
  zero["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] = "0";
  p = PendingGpuPod(zero, "nvidia.com/gpu", kThreshold, {}, kPrefix);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpus, 9);
  EXPECT_EQ(p->profile, "");

  // Slices beside whole GPUs, or of two profiles: a give frees one kind; said, not sized.
  json mixed = json::parse(kPendingPod);  // 9 whole GPUs
  mixed["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] = "1";
  json two = pod;
  two["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] = "1";
  const std::pair<json, const char*> refused[] = {
      {mixed, "ask for nvidia.com/mig-1g.10gb slices beside whole GPUs (nvidia.com/gpu)"},
      {two, "slices of two profiles (nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb)"}};
  for (const auto& [refused_pod, reason] : refused) {
    std::optional<PendingCandidate> c =
        PendingCandidateOf(refused_pod, "nvidia.com/gpu", kThreshold, kPrefix);
    ASSERT_TRUE(c.has_value()) << reason;
    std::string why;
    EXPECT_FALSE(CountGpus(*c, {}, &why));
    EXPECT_THAT(why, HasSubstr(reason));
  }
  // A slice request beside a claim of slices of the same profile adds up.
  json with_claim = ClaimPod();
  with_claim["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", "1"}};
  p = PendingGpuPod(with_claim, "nvidia.com/gpu", kThreshold,
                    {{"cap/big-gpu-x7k2p", {.gpus = 2, .profile = "1g.10gb"}},
                     {"cap/team-gpus", {.gpus = 1, .profile = "1g.10gb"}}},
                    kPrefix);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpus, 4);
  EXPECT_EQ(p->claim_gpus, 3);
}

}  // namespace
}  // namespace skb::devices

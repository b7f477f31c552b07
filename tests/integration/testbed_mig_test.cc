// SPDX-License-Identifier: Apache-2.0
// The testbed's static MIG node, checked end to end (label `mig`; scripts/test runs it in a
// lane of its own on SKB_TESTBED_GPU_ALLOCATION=dra SKB_TESTBED_MIG=1 SKB_TESTBED_NODES=2).
// The last node has GPUs 0-5 whole, GPU 6 cut into seven 1g.10gb slices and GPU 7 into two
// 3g.40gb slices, on both sides:
//  - Kubernetes: its ResourceSlice publishes gpu-0..gpu-5 and nine MIG devices as NVIDIA's
//    GPU DRA driver does (gpu-<parent>-mig-<GI profile id>-<start>-<size>, type mig, uuid,
//    parentUUID, profile, the engines and memory slices as capacity), no whole gpu-6/gpu-7;
//    a claim of the DeviceClass mig.nvidia.com selecting profile 1g.10gb gets 1g.10gb slices;
//  - Slurm: Gres=gpu:TYPE:6,gpu:1g.10gb:7,gpu:3g.40gb:2, and a job asking one slice of a
//    profile is given a GRES index whose entry in the testbed's mig-gres-files.json (what the
//    bridge config's gpu_sharing.gres_files holds) is a slice of that profile.
// The bridge's MIG support maps Slurm's indices onto these devices; each fact it builds on
// is pinned here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

constexpr char kDriver[] = "gpu.nvidia.com";

bool MigMode() {
  const char* mig = std::getenv("SKB_TESTBED_MIG");
  return DraMode() && mig != nullptr && std::string_view(mig) == "1";
}

// One MIG device of the layout: name, profile, placement.
struct Slice {
  int parent;
  std::string profile;
  int gi_profile_id;
  int start;
  int size;
  std::string Name() const {
    return StrCat("gpu-", parent, "-mig-", gi_profile_id, "-", start, "-", size);
  }
};

std::vector<Slice> ExpectedSlices() {
  std::vector<Slice> out;
  for (int start = 0; start < 7; ++start) out.push_back({6, "1g.10gb", 19, start, 1});
  out.push_back({7, "3g.40gb", 9, 0, 4});
  out.push_back({7, "3g.40gb", 9, 4, 4});
  return out;
}

class MigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = *dir;
    if (!MigMode()) {
      GTEST_SKIP() << "needs the testbed in dra mode with MIG: SKB_TESTBED_GPU_ALLOCATION=dra "
                      "SKB_TESTBED_MIG=1 scripts/testbed up --no-bridge";
    }
    node_ = StrCat("node", TestbedNodeCount());
  }
  void TearDown() override {
    for (const std::string& job : jobs_) RunCommand({"scancel", job}, seconds(30));
    if (!ns_.empty()) DeleteTestNamespace(ns_);
  }

  // `kubectl get ARGS -o json`, parsed; null when it fails.
  json Get(std::vector<std::string> args) { return KubectlGetJson(std::move(args)); }

  // The MIG node's devices by name.
  std::map<std::string, json> SliceDevices() {
    std::map<std::string, json> out;
    json slice = Get({"resourceslice", StrCat(node_, "-", kDriver)});
    if (slice.is_null()) return out;
    for (const json& d : slice["spec"]["devices"]) out[d.value("name", "")] = d;
    return out;
  }

  // $SKB_TESTBED_DIR/mig-gres-files.json: the MIG node's GRES in Slurm's index order.
  json GresFiles() {
    return json::parse(ReadAll(StrCat(dir_, "/mig-gres-files.json")), nullptr,
                       /*allow_exceptions=*/false);
  }

  // Submits `sleep 300` on the MIG node asking `gres`; returns the job id ("" on failure).
  std::string Submit(const std::string& gres) {
    CommandResult r = RunCommand({"sbatch", "--parsable", "-w", node_, StrCat("--gres=", gres),
                                  "--job-name=mig", "--output=/dev/null", "--wrap", "sleep 300"},
                                 seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id(StripWhitespace(r.out));
    if (!id.empty()) jobs_.push_back(id);
    return id;
  }

  // The GRES index Slurm gave a running one-GPU job (scontrol show job -d: "GRES=gpu:T:1(IDX:k)").
  int GresIndex(const std::string& job, std::string* detail) {
    *detail = RunCommand({"scontrol", "show", "job", "-d", job}, seconds(30)).out;
    size_t at = detail->find("(IDX:");
    if (at == std::string::npos) return -1;
    int idx = -1;
    std::string_view rest = std::string_view(*detail).substr(at + 5);
    std::string_view digits = rest.substr(0, rest.find_first_not_of("0123456789"));
    if (digits.empty() || !ParseInteger(digits, &idx)) return -1;
    return idx;
  }

  std::string dir_, node_, ns_;
  std::vector<std::string> jobs_;
};

TEST_F(MigTest, TheMigNodePublishesSixWholeGpusAndNineMigDevices) {
  std::map<std::string, json> devices = SliceDevices();
  ASSERT_EQ(devices.size(), 15u) << "ResourceSlice " << node_ << "-" << kDriver;
  std::set<std::string> whole_uuids;
  for (int g = 0; g < 6; ++g) {
    const std::string name = StrCat("gpu-", g);
    ASSERT_TRUE(devices.count(name)) << name;
    EXPECT_EQ(devices[name]["attributes"]["type"].value("string", ""), "gpu") << name;
    whole_uuids.insert(devices[name]["attributes"]["uuid"].value("string", ""));
  }
  // A GPU in MIG mode is not offered whole.
  EXPECT_EQ(devices.count("gpu-6"), 0u);
  EXPECT_EQ(devices.count("gpu-7"), 0u);
  const json& gpu0 = devices["gpu-0"]["attributes"];

  std::map<int, std::string> parent_uuid;  // parent minor -> parentUUID
  std::set<std::string> mig_uuids;
  for (const Slice& s : ExpectedSlices()) {
    ASSERT_TRUE(devices.count(s.Name())) << s.Name();
    const json& a = devices[s.Name()]["attributes"];
    const json& c = devices[s.Name()]["capacity"];
    SCOPED_TRACE(s.Name());
    EXPECT_EQ(a["type"].value("string", ""), "mig");
    EXPECT_EQ(a["profile"].value("string", ""), s.profile);
    std::string uuid = a["uuid"].value("string", "");
    EXPECT_THAT(uuid,
                MatchesRegex("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"));
    mig_uuids.insert(uuid);
    std::string parent = a["parentUUID"].value("string", "");
    EXPECT_THAT(parent, StartsWith("GPU-"));
    EXPECT_EQ(whole_uuids.count(parent), 0u) << "the parent is a GPU published whole";
    auto [it, first] = parent_uuid.emplace(s.parent, parent);
    if (!first) {
      EXPECT_EQ(it->second, parent) << "slices of one GPU name different parents";
    }
    // The parent's product and versions.
    for (const char* attr : {"productName", "brand", "architecture"}) {
      EXPECT_EQ(a[attr].value("string", "<none>"), gpu0[attr].value("string", "")) << attr;
    }
    for (const char* attr : {"cudaComputeCapability", "driverVersion", "cudaDriverVersion"}) {
      EXPECT_EQ(a[attr].value("version", "<none>"), gpu0[attr].value("version", "")) << attr;
    }
    EXPECT_THAT(a["pcieBusID"].value("string", ""), MatchesRegex("0000:[0-9a-f]{2}:00\\.0"));
    EXPECT_THAT(a["resource.kubernetes.io/pcieRoot"].value("string", ""), StartsWith("pci0000:"));
    for (const char* cap : {"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines",
                            "ofaEngines", "memory"}) {
      EXPECT_TRUE(c.contains(cap)) << cap;
    }
    // One memorySlice<i> per memory slice of the placement, and no other.
    std::set<std::string> slices, want;
    for (auto& [k, v] : c.items()) {
      if (k.rfind("memorySlice", 0) == 0) {
        slices.insert(k);
        EXPECT_EQ(v.value("value", ""), "1") << k;
      }
    }
    for (int i = s.start; i < s.start + s.size; ++i) want.insert(StrCat("memorySlice", i));
    EXPECT_EQ(slices, want);
  }
  EXPECT_EQ(mig_uuids.size(), 9u) << "MIG uuids are not distinct";
  ASSERT_EQ(parent_uuid.size(), 2u);
  EXPECT_NE(parent_uuid[6], parent_uuid[7]);
  // The profiles' SM counts (H100 80GB's).
  EXPECT_EQ(devices["gpu-6-mig-19-0-1"]["capacity"]["multiprocessors"].value("value", ""), "16");
  EXPECT_EQ(devices["gpu-7-mig-9-4-4"]["capacity"]["multiprocessors"].value("value", ""), "60");

  // The other nodes are unchanged: eight whole GPUs.
  if (TestbedNodeCount() > 1) {
    json other = Get({"resourceslice", StrCat("node1-", kDriver)});
    ASSERT_FALSE(other.is_null());
    EXPECT_EQ(other["spec"]["devices"].size(), 8u);
  }
  // The driver chart's DeviceClass for MIG devices: no extended resource.
  json mig_class = Get({"deviceclass", "mig.nvidia.com"});
  ASSERT_FALSE(mig_class.is_null()) << "no DeviceClass mig.nvidia.com";
  EXPECT_FALSE(mig_class["spec"].contains("extendedResourceName"));
  EXPECT_THAT(mig_class["spec"]["selectors"][0]["cel"].value("expression", ""),
              HasSubstr("type == 'mig'"));

  // The GRES files the bridge config gets: the six whole GPUs, then each slice in layout order
  // with its device's uuid.
  json files = GresFiles();
  ASSERT_TRUE(files.is_array()) << StrCat(dir_, "/mig-gres-files.json");
  ASSERT_EQ(files.size(), 15u) << files.dump();
  for (size_t g = 0; g < 6; ++g) EXPECT_EQ(files[g], StrCat("/dev/nvidia", g)) << g;
  std::vector<Slice> layout = ExpectedSlices();
  for (size_t i = 0; i < layout.size(); ++i) {
    const json& f = files[6 + i];
    ASSERT_TRUE(f.is_object()) << f.dump();
    EXPECT_EQ(f.value("type", ""), layout[i].profile);
    EXPECT_EQ(f.value("mig_uuid", ""),
              devices[layout[i].Name()]["attributes"]["uuid"].value("string", "<none>"))
        << layout[i].Name();
    ASSERT_TRUE(f["files"].is_array() && !f["files"].empty()) << f.dump();
    EXPECT_EQ(f["files"][0], StrCat("/dev/nvidia", layout[i].parent));
    for (size_t k = 1; k < f["files"].size(); ++k) {
      EXPECT_THAT(f["files"][k].get<std::string>(), StartsWith("/dev/nvidia-caps/nvidia-cap"));
    }
  }
}

TEST_F(MigTest, AClaimOfTheMigClassGetsTwo1gSlices) {
  ns_ = StrCat("mig-", std::random_device{}() % 100000);
  Status created = CreateNamespace(ns_);
  ASSERT_TRUE(created.ok()) << created;
  const std::string manifest = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-1g}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          count: 2
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
---
apiVersion: v1
kind: Pod
metadata: {name: mig}
spec:
  resourceClaims: [{name: mig, resourceClaimTemplateName: two-1g}]
  containers:
  - name: main
    image: registry.invalid/inference:1
    resources: {claims: [{name: mig}]}
)";
  CommandResult r = RunCommand({"kubectl", "apply", "-n", ns_, "-f", "-"}, seconds(30), manifest);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string phase;
  ASSERT_TRUE(WaitFor(
      [&] {
        json p = Get({"pod", "-n", ns_, "mig"});
        phase = p.is_null() ? "" : p["status"].value("phase", "");
        return phase == "Running";
      },
      seconds(60)))
      << phase << "\n"
      << Get({"pod", "-n", ns_, "mig"})["status"].dump();
  json pod = Get({"pod", "-n", ns_, "mig"});
  EXPECT_EQ(pod["spec"].value("nodeName", ""), node_);
  std::string claim_name;
  for (const json& s : pod["status"].value("resourceClaimStatuses", json::array())) {
    if (s.value("name", "") == "mig") claim_name = s.value("resourceClaimName", "");
  }
  ASSERT_FALSE(claim_name.empty()) << pod["status"].dump();
  json claim = Get({"resourceclaim", "-n", ns_, claim_name});
  ASSERT_FALSE(claim.is_null());
  const json& results = claim["status"]["allocation"]["devices"]["results"];
  ASSERT_EQ(results.size(), 2u) << claim["status"].dump();
  std::map<std::string, json> devices = SliceDevices();
  std::set<std::string> got;
  for (const json& res : results) {
    EXPECT_EQ(res.value("driver", ""), kDriver);
    EXPECT_EQ(res.value("pool", ""), node_);
    std::string name = res.value("device", "");
    got.insert(name);
    EXPECT_THAT(name, MatchesRegex("gpu-6-mig-19-[0-6]-1"));
    ASSERT_TRUE(devices.count(name)) << name;
    EXPECT_EQ(devices[name]["attributes"]["profile"].value("string", ""), "1g.10gb");
  }
  EXPECT_EQ(got.size(), 2u) << "one slice allocated twice";
}

TEST_F(MigTest, SlurmGivesAJobASliceOfTheProfileItAsks) {
  std::string sinfo = RunCommand({"sinfo", "-h", "-N", "-n", node_, "-o", "%G"}, seconds(30)).out;
  EXPECT_THAT(std::string(StripWhitespace(sinfo.substr(0, sinfo.find('\n')))),
              MatchesRegex("gpu:[a-z0-9]+:6,gpu:1g\\.10gb:7,gpu:3g\\.40gb:2"));
  json files = GresFiles();
  ASSERT_TRUE(files.is_array() && files.size() == 15u) << files.dump();

  const std::string small = Submit("gpu:1g.10gb:1");
  const std::string large = Submit("gpu:3g.40gb:1");
  ASSERT_FALSE(small.empty());
  ASSERT_FALSE(large.empty());
  ASSERT_TRUE(WaitFor([&] { return SqueueState(small) == "RUNNING"; }, seconds(60)))
      << "job " << small << ": " << SqueueState(small);
  ASSERT_TRUE(WaitFor([&] { return SqueueState(large) == "RUNNING"; }, seconds(60)))
      << "job " << large << ": " << SqueueState(large);

  std::string detail;
  int idx = GresIndex(small, &detail);
  EXPECT_THAT(detail, HasSubstr("GRES=gpu:1g.10gb:1(IDX:"));
  EXPECT_GE(idx, 6) << detail;
  EXPECT_LE(idx, 12) << detail;
  if (idx >= 0 && idx < 15) {
    const json& f = files[static_cast<size_t>(idx)];
    EXPECT_TRUE(f.is_object()) << f.dump();
    EXPECT_EQ(f.value("type", ""), "1g.10gb") << f.dump();
  }
  idx = GresIndex(large, &detail);
  EXPECT_THAT(detail, HasSubstr("GRES=gpu:3g.40gb:1(IDX:"));
  EXPECT_GE(idx, 13) << detail;
  EXPECT_LE(idx, 14) << detail;
  if (idx >= 0 && idx < 15) {
    const json& f = files[static_cast<size_t>(idx)];
    EXPECT_TRUE(f.is_object()) << f.dump();
    EXPECT_EQ(f.value("type", ""), "3g.40gb") << f.dump();
  }
}

}  // namespace
}  // namespace skb::testbed

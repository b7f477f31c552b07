// SPDX-License-Identifier: Apache-2.0
// The GPU-granular sharing fixture (dra mode): the lending fixture with gpu_sharing on and
// the invariant sampled per device, and the helpers both gpu_sharing_e2e_test.cc and
// mig_e2e_test.cc use. With the testbed's static MIG node (SKB_TESTBED_MIG=1), the bridge
// is given the node's gres.conf entries and the sampler the device of each GRES index.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {

class GpuSharingE2E : public LendingE2E {
 protected:
  GpuSharingE2E() {
    wait_for_reservations_ = false;
    extra_overlay_ = {{"gpu_sharing", {{"enabled", true}, {"give_timeout", "2m"}}}};
    sampler_options_.per_device = true;
  }

  void SetUp() override {
    const char* mode = std::getenv("SKB_TESTBED_GPU_ALLOCATION");
    if (mode == nullptr || std::string(mode) != "dra") {
      GTEST_SKIP() << "needs the testbed in dra mode: SKB_TESTBED_GPU_ALLOCATION=dra "
                      "scripts/testbed up (scripts/test runs it in its dra lane)";
    }
    if (MigMode()) {
      // The last node's slices: the bridge needs their gres.conf entries (gpu_sharing.
      // gres_files, as the testbed lists them), the sampler their devices by GRES index.
      const std::string mig_node = StrCat("node", testbed::TestbedNodeCount());
      std::ifstream file(StrCat(*testbed::TestbedDir(), "/mig-gres-files.json"));
      ASSERT_TRUE(file) << "the testbed wrote no mig-gres-files.json";
      const nlohmann::json gres = nlohmann::json::parse(file);
      extra_overlay_["gpu_sharing"]["gres_files"] = {{mig_node, gres}};
      ASSERT_NO_FATAL_FAILURE(MapMigDevices(mig_node, gres));
    }
    LendingE2E::SetUp();
    if (HasFatalFailure()) return;
    // Every node enters GPU granularity: each device it publishes held for Slurm.
    ASSERT_TRUE(WaitFor([&] { return Holds() == AllDevices(); }, seconds(60)))
        << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  }

  // The testbed's static MIG node (SKB_TESTBED_MIG=1): the last node, 6 whole GPUs and 9
  // slices.
  static bool MigMode() {
    const char* mig = std::getenv("SKB_TESTBED_MIG");
    return mig != nullptr && std::string(mig) == "1";
  }
  static int AllDevices() { return 8 * testbed::TestbedNodeCount() + (MigMode() ? 7 : 0); }

  // Which device each GRES index of `node` is, for the sampler: the testbed's gres entry's
  // MIG UUID looked up in the node's published slice (a whole GPU: gpu-<index>).
  void MapMigDevices(const std::string& node, const nlohmann::json& gres) {
    auto r = Shell(StrCat("kubectl get resourceslice ", node, "-gpu.nvidia.com -o json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::string> by_uuid;
    const nlohmann::json slice = nlohmann::json::parse(r.out);
    for (const auto& d : slice["spec"]["devices"]) {
      by_uuid[d["attributes"]["uuid"]["string"].get<std::string>()] = d["name"];
    }
    std::vector<std::string>& names = sampler_options_.devices_by_index[node];
    for (size_t i = 0; i < gres.size(); ++i) {
      if (gres[i].is_string()) {
        names.push_back(StrCat("gpu-", i));
        continue;
      }
      const std::string uuid = gres[i]["mig_uuid"];
      ASSERT_TRUE(by_uuid.count(uuid)) << uuid << " not published on " << node;
      names.push_back(by_uuid[uuid]);
    }
  }

  // A ResourceClaimTemplate `name` in default asking `count` devices of `device_class` as
  // request `request`, narrowed by the CEL `selector` when given; deleted after the test.
  void ApplyClaimTemplate(const std::string& name, const std::string& request,
                          const std::string& device_class, int count,
                          const std::string& selector = "") {
    nlohmann::json t = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaimTemplate"},
        {"metadata", {{"name", name}, {"namespace", "default"}}},
        {"spec",
         {{"spec",
           {{"devices",
             {{"requests",
               {{{"name", request},
                 {"exactly", {{"deviceClassName", device_class}, {"count", count}}}}}}}}}}}}};
    if (!selector.empty()) {
      t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = {
          {{"cel", {{"expression", selector}}}}};
    }
    ASSERT_EQ(Shell(StrCat("kubectl apply -f - <<'EOF'\n", t.dump(), "\nEOF")).exit_code, 0);
    templates_.push_back(name);
  }
  void TearDown() override {
    LendingE2E::TearDown();
    for (const std::string& t : templates_) {
      Shell(StrCat("kubectl delete resourceclaimtemplate -n default --ignore-not-found ", t));
    }
  }

  // A pod (priority above the threshold) whose only GPU demand is the ResourceClaimTemplate
  // `template_name`, used by its container as claim `claim`.
  void CreateClaimPod(const std::string& name, const std::string& template_name,
                      const std::string& claim = "gpu") {
    nlohmann::json pod = testbed::PodManifest(testbed::InferenceTestPod(name, "lending", 0));
    pod["spec"]["containers"][0]["resources"] = {{"claims", {{{"name", claim}}}}};
    pod["spec"]["resourceClaims"] = {
        {{"name", claim}, {"resourceClaimTemplateName", template_name}}};
    auto r = kube_->Create(k8s::Resource::Pods(), "default", pod);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  int Holds() {
    auto r = Shell(
        "kubectl get devicetaintrules -l app.kubernetes.io/managed-by=slurm-k8s-bridge "
        "--no-headers 2>/dev/null | wc -l");
    return std::atoi(Trim(r.out).c_str());
  }
  int HoldsOn(const std::string& node) {
    auto r = Shell(StrCat("kubectl get devicetaintrules -l slurm-k8s-bridge.io/node=", node,
                          " --no-headers 2>/dev/null | wc -l"));
    return std::atoi(Trim(r.out).c_str());
  }

  // A job of `gpus` GPUs on `node`; `preemptible` false: --no-requeue, so the bridge may
  // never take it.
  std::string SubmitOn(const std::string& node, int gpus, bool preemptible) {
    std::string script = StrCat("trap 'echo USR1 $(date +%s.%N) >> ", dir_,
                                "/signal-$SLURM_JOB_ID' USR1; for i in $(seq 3000); do sleep "
                                "0.2; done");
    auto r = RunCommand(
        {"sbatch", "--parsable", preemptible ? "--requeue" : "--no-requeue",
         StrCat("--gres=gpu:", gpus), "-w", node, "-p", "gpu", "-o", "/dev/null", "--wrap", script},
        seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = Trim(r.out);
    jobs_.push_back(id);
    return id;
  }

  // Every node but node1 full of non-preemptible work: node1 is the only place to free GPUs.
  void FillOtherNodes() {
    for (int i = 2; i <= testbed::TestbedNodeCount(); ++i) SubmitOn(StrCat("node", i), 8, false);
  }

  std::string Placeholders() {
    return Trim(Shell("squeue -h -n skb-gpu-hold -o '%i %T %N %b'").out);
  }

  // An inference pod kube-scheduler can place nowhere: it asks more CPU than any node has
  // (kwok's have 32), a fit the bridge does not judge, so a give for it goes unused.
  void CreateUnplaceablePod(const std::string& name, int gpus) {
    nlohmann::json pod = testbed::PodManifest(testbed::InferenceTestPod(name, "lending", gpus));
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "64";
    ASSERT_TRUE(kube_->Create(k8s::Resource::Pods(), "default", pod).ok());
  }

  void CreatePod(const std::string& name, int gpus) {
    CreatePod(testbed::InferenceTestPod(name, "lending", gpus));
  }
  void CreatePod(const testbed::TestPod& pod) {
    auto r = kube_->Create(k8s::Resource::Pods(), "default", testbed::PodManifest(pod));
    ASSERT_TRUE(r.ok()) << r.status();
  }

  // Pod `name` (2 GPUs) runs on `node` through a give there that preempted job `victim`
  // (signalled, then requeued); every other node still holds all its devices for Slurm.
  void ExpectGivenByPreemptionOn(const std::string& name, const std::string& node,
                                 const std::string& victim, const std::string& what) {
    const double took = SecondsUntilRunning(name, seconds(90));
    ASSERT_GE(took, 0) << Shell(StrCat("kubectl describe pod ", name)).out << Placeholders() << "\n"
                       << Shell("squeue").out << daemon_->LogTail();
    std::printf("%s -> Running: %.2f s\n", what.c_str(), took);
    EXPECT_EQ(PodField(name, ".spec.nodeName"), node);
    EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
    EXPECT_TRUE(WaitFor([&] { return Restarts(victim) >= 1; }, seconds(30))) << Shell("squeue").out;
    const std::string placeholders = Placeholders();
    EXPECT_THAT(placeholders, HasSubstr(StrCat("RUNNING ", node, " ")));
    for (const auto& line : StrSplit(placeholders, '\n', /*skip_empty=*/true)) {
      EXPECT_THAT(std::string(line), HasSubstr(StrCat(" ", node, " "))) << placeholders;
    }
    EXPECT_EQ(HoldsOn(node), 6);
    for (int i = 1; i <= testbed::TestbedNodeCount(); ++i) {
      const std::string n = StrCat("node", i);
      if (n == node) continue;
      EXPECT_EQ(HoldsOn(n), 8) << n << ": a give went there";
    }
  }

  // bridgectl's view of `node` (the NodeSummary of `get nodes -o json`), null if absent.
  nlohmann::json BridgectlNode(const std::string& node) {
    auto r = RunCommand(
        {testbed::BridgectlBinary(), "--socket", daemon_->socket(), "get", "nodes", "-o", "json"},
        seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return nullptr;
    const nlohmann::json all = nlohmann::json::parse(r.out);
    for (const auto& n : all["nodes"]) {
      if (n["name"] == node) return n;
    }
    return nullptr;
  }

  // Seconds from now until the pod runs (or -1 after `limit`).
  double SecondsUntilRunning(const std::string& name, seconds limit) {
    const auto t0 = Steady::now();
    if (!WaitFor([&] { return PodField(name, ".status.phase") == "Running"; }, limit,
                 milliseconds(100))) {
      return -1;
    }
    return std::chrono::duration<double>(Steady::now() - t0).count();
  }

  std::vector<std::string> templates_;  // ApplyClaimTemplate's, deleted after the test
};

}  // namespace skb::lending_e2e

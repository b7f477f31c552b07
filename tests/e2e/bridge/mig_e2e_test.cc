// SPDX-License-Identifier: Apache-2.0
// GPU-granular sharing of MIG slices end to end (label mig: scripts/test's mig lane, the
// testbed in dra mode with SKB_TESTBED_MIG=1 and two nodes). The last node has GPUs 0-5
// whole, GPU 6 cut into seven 1g.10gb slices and GPU 7 into two 3g.40gb slices, on both
// sides: Slurm's gres.conf lists each slice (Type=<profile>, MultipleFiles=) and the
// ResourceSlice publishes it as NVIDIA's driver does (type mig, uuid, profile). The bridge
// is given the node's gres entries with their MIG UUIDs (gpu_sharing.gres_files) and proves
// each slice against the published device; the sampler checks the invariant per device,
// each GRES index mapped through the testbed's own layout.
#include <string>
#include <vector>

#include "tests/e2e/bridge/gpu_sharing_fixture.h"

namespace skb::lending_e2e {
namespace {

using ::testing::MatchesRegex;

class MigE2E : public GpuSharingE2E {
 protected:
  void SetUp() override {
    if (!MigMode()) {
      GTEST_SKIP() << "needs the testbed's MIG node: SKB_TESTBED_GPU_ALLOCATION=dra "
                      "SKB_TESTBED_MIG=1 scripts/testbed up (scripts/test runs it in its mig lane)";
    }
    mig_node_ = StrCat("node", testbed::TestbedNodeCount());
    GpuSharingE2E::SetUp();
  }
  // A job of `count` GPUs of GRES type `type` (a MIG profile, or the whole GPUs' h100) on
  // the MIG node; `preemptible` false: --no-requeue.
  std::string SubmitTyped(const std::string& type, int count, bool preemptible) {
    std::string script = StrCat("trap 'echo USR1 $(date +%s.%N) >> ", dir_,
                                "/signal-$SLURM_JOB_ID' USR1; for i in $(seq 3000); do sleep "
                                "0.2; done");
    auto r = RunCommand({"sbatch", "--parsable", preemptible ? "--requeue" : "--no-requeue",
                         StrCat("--gres=gpu:", type, ":", count), "-w", mig_node_, "-p", "gpu",
                         "-o", "/dev/null", "--wrap", script},
                        seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = Trim(r.out);
    jobs_.push_back(id);
    return id;
  }

  // A ResourceClaimTemplate asking `count` MIG slices of `profile`, as NVIDIA's driver
  // documents it: the DeviceClass mig.nvidia.com and a CEL selector on the profile.
  void ApplyMigTemplate(const std::string& name, const std::string& profile, int count) {
    ApplyClaimTemplate(name, "mig", "mig.nvidia.com", count,
                       StrCat("device.attributes['gpu.nvidia.com'].profile == '", profile, "'"));
  }

  // The devices ("pool/device") the pod's claim was allocated: its generated claim for a
  // template pod, the extended-resource claim for a nvidia.com/gpu pod.
  std::string ClaimDevices(const std::string& pod) {
    std::string claim = PodField(pod, ".status.resourceClaimStatuses[0].resourceClaimName");
    if (claim.empty())
      claim = PodField(pod, ".status.extendedResourceClaimStatus.resourceClaimName");
    if (claim.empty()) return "";
    return Trim(Shell(StrCat("kubectl get resourceclaim -n default ", claim,
                             " -o jsonpath='{range .status.allocation.devices.results[*]}"
                             "{.pool}/{.device} {end}'"))
                    .out);
  }

  // Pod `pod` runs on the MIG node on a 1g.10gb slice of GPU 6 that job `take` held, through
  // a placeholder of one such slice: the job was signalled and requeued. Prints how long the
  // pod took to run, as `what`.
  void ExpectOnAPreemptedSlice(const std::string& pod, const std::string& take,
                               const std::string& what) {
    const double took = SecondsUntilRunning(pod, seconds(90));
    ASSERT_GE(took, 0) << Shell(StrCat("kubectl describe pod ", pod)).out << Placeholders() << "\n"
                       << Shell("squeue").out << daemon_->LogTail();
    std::printf("%s -> Running: %.2f s\n", what.c_str(), took);
    EXPECT_EQ(PodField(pod, ".spec.nodeName"), mig_node_);
    EXPECT_THAT(ClaimDevices(pod), MatchesRegex(StrCat(mig_node_, "/gpu-6-mig-19-[0-6]-1")));
    EXPECT_THAT(Signals(take), HasSubstr("USR1"));
    EXPECT_TRUE(WaitFor([&] { return Restarts(take) >= 1; }, seconds(30))) << Shell("squeue").out;
    EXPECT_THAT(Placeholders(), HasSubstr("gpu:1g.10gb:1")) << Placeholders();
  }

  std::string mig_node_;
};

// The fraction case: a Slurm job on gpu:1g.10gb slices and a pod on another slice of
// the same GPU. Every slice of GPU 6 is busy (4 in a job that cannot be preempted, 3 in a
// preemptible one): a pod asking one 1g.10gb slice takes one of the preemptible job's
// (signal, grace, requeue; Slurm picks which slice, the bridge lifts the hold of exactly
// that device), and the other job never stops. A 3g.40gb pod then gets an idle 3g.40gb slice
// with no preemption, and a 2-GPU pod two whole GPUs: each give asks Slurm for its own GRES
// type, so no give takes a device of another kind. After the cool-down every device is
// Slurm's again and the preempted job runs again.
TEST_F(MigE2E, APodTakesASliceOfAPreemptibleJobOnAGpuANonPreemptibleJobShares) {
  // Whole GPUs elsewhere are busy: the whole-GPU pod must come here too.
  for (int i = 1; i < testbed::TestbedNodeCount(); ++i) SubmitOn(StrCat("node", i), 8, false);
  const std::string keep = SubmitTyped("1g.10gb", 4, /*preemptible=*/false);
  const std::string take = SubmitTyped("1g.10gb", 3, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  ApplyMigTemplate("skb-e2e-mig-1g", "1g.10gb", 1);
  CreateClaimPod("mig-1g", "skb-e2e-mig-1g", "mig");
  // The placeholder asked Slurm for one 1g.10gb slice, and holds it.
  ASSERT_NO_FATAL_FAILURE(
      ExpectOnAPreemptedSlice("mig-1g", take, "1g.10gb pod, a preemptible job's slice"));
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
  EXPECT_EQ(HoldsOn(mig_node_), 14);

  ApplyMigTemplate("skb-e2e-mig-3g", "3g.40gb", 1);
  CreateClaimPod("mig-3g", "skb-e2e-mig-3g", "mig");
  double took = SecondsUntilRunning("mig-3g", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod mig-3g").out << Placeholders() << "\n"
                     << daemon_->LogTail();
  std::printf("3g.40gb pod, an idle slice -> Running: %.2f s\n", took);
  EXPECT_THAT(ClaimDevices("mig-3g"), MatchesRegex(StrCat(mig_node_, "/gpu-7-mig-9-[04]-4")));
  EXPECT_THAT(Placeholders(), HasSubstr("gpu:3g.40gb:1")) << Placeholders();

  CreatePod("whole-2", 2);
  took = SecondsUntilRunning("whole-2", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod whole-2").out << Placeholders() << "\n"
                     << daemon_->LogTail();
  std::printf("2-GPU pod, idle whole GPUs beside the slices -> Running: %.2f s\n", took);
  EXPECT_EQ(PodField("whole-2", ".spec.nodeName"), mig_node_);
  EXPECT_THAT(ClaimDevices("whole-2"),
              MatchesRegex(StrCat(mig_node_, "/gpu-[0-5] ", mig_node_, "/gpu-[0-5]")));
  EXPECT_THAT(Placeholders(), HasSubstr("gpu:h100:2")) << Placeholders();
  EXPECT_EQ(HoldsOn(mig_node_), 11);
  EXPECT_EQ(Restarts(take), 1) << "only the first give preempted";
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);

  // bridgectl names each slice's owner.
  const nlohmann::json n = BridgectlNode(mig_node_);
  ASSERT_TRUE(n.is_object());
  ASSERT_EQ(n["gpuOwners"].size(), 15u) << n.dump();
  int k8s = 0;
  for (const auto& g : n["gpuOwners"]) k8s += g["owner"] == "k8s";
  EXPECT_EQ(k8s, 4) << n.dump();

  // The pods leave: after the cool-down every device goes back, and the requeued job,
  // pending for want of a third slice, runs again.
  for (const char* pod : {"mig-1g", "mig-3g", "whole-2"}) {
    Shell(StrCat("kubectl delete pod ", pod, " --wait=false"));
  }
  ASSERT_TRUE(
      WaitFor([&] { return HoldsOn(mig_node_) == 15 && Placeholders().empty(); }, seconds(120)))
      << Placeholders() << "\n"
      << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([&] { return JobField(take, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
}

// A pod written for the device plugin's mixed MIG strategy asks nvidia.com/mig-1g.10gb: 1, a
// resource the site serves through DRA with a DeviceClass of 1g.10gb slices
// (extendedResourceName; kube-scheduler generates the pod's claim). Every slice of GPU 6 is
// busy, six in a job that cannot be preempted and one in a preemptible job: the bridge reads
// the request as one 1g.10gb slice (gpu_sharing.mig_extended_resource_prefix), asks Slurm for
// gpu:1g.10gb:1, and the pod runs on the preemptible job's slice.
TEST_F(MigE2E, APodAskingAMigExtendedResourceTakesASliceOfAPreemptibleJob) {
  const std::string device_class = "mig-1g-10gb.nvidia.com";
  ASSERT_EQ(Shell(StrCat("kubectl apply -f - <<'EOF'\n"
                         "apiVersion: resource.k8s.io/v1\n"
                         "kind: DeviceClass\n"
                         "metadata:\n  name: ",
                         device_class,
                         "\nspec:\n  extendedResourceName: nvidia.com/mig-1g.10gb\n"
                         "  selectors:\n  - cel:\n      expression: \"device.driver == "
                         "'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
                         "'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"\n"
                         "EOF"))
                .exit_code,
            0);
  const std::string keep = SubmitTyped("1g.10gb", 6, /*preemptible=*/false);
  const std::string take = SubmitTyped("1g.10gb", 1, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  nlohmann::json pod = testbed::PodManifest(testbed::InferenceTestPod("mig-ext", "lending", 0));
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"nvidia.com/mig-1g.10gb", "1"}}},
                                               {"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_NO_FATAL_FAILURE(ExpectOnAPreemptedSlice(
      "mig-ext", take, "nvidia.com/mig-1g.10gb pod, a preemptible job's slice"));
  EXPECT_EQ(HoldsOn(mig_node_), 14);
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);

  Shell("kubectl delete pod mig-ext --wait=false");
  EXPECT_TRUE(
      WaitFor([&] { return HoldsOn(mig_node_) == 15 && Placeholders().empty(); }, seconds(120)))
      << Placeholders() << "\n"
      << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([&] { return JobField(take, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  Shell(StrCat("kubectl delete deviceclass --ignore-not-found ", device_class));
}

}  // namespace
}  // namespace skb::lending_e2e

// SPDX-License-Identifier: Apache-2.0
// GPU-granular sharing end to end, on the testbed in dra mode (SKB_TESTBED_GPU_ALLOCATION=dra:
// every node publishes 8 devices of driver gpu.nvidia.com, nvidia.com/gpu is served through
// DRA): the real daemon with gpu_sharing on, real kube-scheduler placing the pods, real
// slurmctld running the jobs and the placeholders, the invariant sampled per device (a
// Slurm job's GRES index vs an allocated claim on that device) for the whole test.
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/e2e/bridge/gpu_sharing_fixture.h"

namespace skb::lending_e2e {
namespace {

TEST_F(GpuSharingE2E, APodTakesTwoGpusOfThePreemptibleJobNextToANonPreemptibleOne) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string take = SubmitOn("node1", 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  CreatePod("share-2", 2);
  const double took = SecondsUntilRunning("share-2", seconds(90));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod share-2").out << Placeholders() << "\n"
                     << Shell("squeue").out << daemon_->LogTail();
  std::printf("2-GPU pod created -> Running with a preemption: %.2f s (grace %d s)\n", took,
              kGraceSeconds);
  EXPECT_EQ(PodField("share-2", ".spec.nodeName"), "node1");
  // The preemptible job was signalled, then requeued; the other one never stopped.
  EXPECT_THAT(Signals(take), HasSubstr("USR1"));
  EXPECT_TRUE(WaitFor([&] { return Restarts(take) >= 1; }, seconds(30))) << Shell("squeue").out;
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
  EXPECT_EQ(Signals(keep), "");
  // Slurm shows what Kubernetes holds: a placeholder of 2 GPUs on node1; Kubernetes shows
  // what Slurm holds: 6 of node1's devices under the bridge's holds.
  EXPECT_THAT(Placeholders(), HasSubstr("RUNNING node1"));
  EXPECT_EQ(HoldsOn("node1"), 6);
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("GpusLent"));

  // bridgectl shows node1 GPU by GPU: the kept job on 4, the pod on 2 (through the
  // placeholder), the requeued job's other 2 idle (it asks 4 and only -w node1 fits it).
  nlohmann::json n1;
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        return n1.is_object() && n1["gpuOwners"].size() == 8 &&
               n1["gpuOwners"].dump().find("to-") == std::string::npos;
      },
      seconds(30)))
      << n1.dump();
  EXPECT_EQ(n1["gpuMode"], "gpu");
  std::map<std::string, int> owners;
  int keep_gpus = 0, pod_gpus = 0;
  for (const auto& g : n1["gpuOwners"]) {
    ++owners[g["owner"].get<std::string>()];
    if (g["owner"] == "slurm" && std::to_string(g["jobId"].get<uint32_t>()) == keep) ++keep_gpus;
    if (g["owner"] == "k8s" && g["pods"] == nlohmann::json::array({"default/share-2"})) {
      ++pod_gpus;
      EXPECT_GT(g["sinceUnix"].get<int64_t>(), 0) << g.dump();
    }
  }
  EXPECT_EQ(keep_gpus, 4) << n1.dump();
  EXPECT_EQ(pod_gpus, 2) << n1.dump();
  EXPECT_EQ(owners["k8s"], 2) << n1.dump();
  EXPECT_EQ(owners["slurm"] + owners["idle"], 6) << n1.dump();
  const nlohmann::json n2 = BridgectlNode("node2");
  EXPECT_EQ(n2["gpuMode"], "gpu") << n2.dump() << "every testbed node publishes its devices";
  auto table = RunCommand(
      {testbed::BridgectlBinary(), "--socket", daemon_->socket(), "get", "nodes"}, seconds(30));
  EXPECT_THAT(table.out, HasSubstr(" / k8s 2")) << table.out;
  auto describe = RunCommand(
      {testbed::BridgectlBinary(), "--socket", daemon_->socket(), "describe", "node", "node1"},
      seconds(30));
  EXPECT_THAT(describe.out, HasSubstr("GPU mode:       gpu")) << describe.out;
  EXPECT_THAT(describe.out, ::testing::ContainsRegex(StrCat(" slurm +", keep, " ")))
      << describe.out;
  EXPECT_THAT(describe.out,
              ::testing::ContainsRegex(" k8s +[0-9]+ \\(placeholder\\) +default/share-2"))
      << describe.out;
  // The metrics count the same: node1's 2 GPUs lent, the other 30 of the 4 shared nodes
  // Slurm's, none double-booked.
  const std::string metrics = Metrics();
  EXPECT_THAT(metrics, HasSubstr("skb_shared_gpus{owner=\"k8s\"} 2")) << metrics;
  EXPECT_THAT(metrics, HasSubstr("skb_shared_gpus{owner=\"slurm\"} 30")) << metrics;
  EXPECT_THAT(metrics, HasSubstr("skb_shared_nodes{mode=\"shared\"} 4")) << metrics;
  EXPECT_THAT(metrics, HasSubstr("skb_shared_gpu_violations 0")) << metrics;
}

TEST_F(GpuSharingE2E, AOneGpuPodTakesAnIdleGpuWithoutPreemptionAndItGoesBackAfterTheCooldown) {
  FillOtherNodes();
  const std::string job = SubmitOn("node1", 5, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;

  CreatePod("share-1", 1);
  const double took = SecondsUntilRunning("share-1", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod share-1").out << Placeholders() << "\n"
                     << daemon_->LogTail();
  std::printf("1-GPU pod created -> Running on an idle GPU: %.2f s\n", took);
  EXPECT_EQ(PodField("share-1", ".spec.nodeName"), "node1");
  EXPECT_EQ(Signals(job), "");
  EXPECT_EQ(Restarts(job), 0);
  EXPECT_EQ(JobField(job, "JobState"), "RUNNING");
  EXPECT_EQ(HoldsOn("node1"), 7);

  // The pod leaves: after the cool-down the device is held for Slurm again and the
  // placeholder ends.
  ASSERT_TRUE(kube_
                  ->Delete(k8s::Resource::Pods(), "default", "share-1",
                           k8s::DeleteOptions{.grace_period_seconds = 0})
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return Placeholders().empty() && HoldsOn("node1") == 8; }, seconds(90)))
      << Placeholders() << "\n"
      << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("GpusReturned"));
  EXPECT_EQ(JobField(job, "JobState"), "RUNNING");
}

// A pod asking its GPUs through a ResourceClaimTemplate of the GPU DeviceClass (no
// nvidia.com/gpu at all) is a trigger like any other: kube-controller-manager generates its
// claim, the bridge counts the claim's 2 GPUs and frees them next to a non-preemptible job
// by preempting the preemptible one; kube-scheduler allocates the claim on the freed devices.
TEST_F(GpuSharingE2E, APodAskingThroughAResourceClaimTemplateGetsGpusFreed) {
  ApplyClaimTemplate("skb-e2e-two-gpus", "gpu", "gpu.nvidia.com", 2);
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string take = SubmitOn("node1", 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  ASSERT_NO_FATAL_FAILURE(CreateClaimPod("tmpl-2", "skb-e2e-two-gpus"));
  ExpectGivenByPreemptionOn("tmpl-2", "node1", take, "2-GPU pod through a ResourceClaimTemplate");
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
  // Its generated claim holds two of node1's devices, and no nvidia.com/gpu was asked.
  const std::string claim =
      PodField("tmpl-2", ".status.resourceClaimStatuses[0].resourceClaimName");
  ASSERT_FALSE(claim.empty());
  EXPECT_EQ(Trim(Shell(StrCat("kubectl get resourceclaim -n default ", claim,
                              " -o jsonpath='{.status.allocation.devices.results[*].pool}'"))
                     .out),
            "node1 node1");
  EXPECT_EQ(PodField("tmpl-2", ".spec.containers[0].resources.requests"), "");
}

// A pod pinned to a node (nodeSelector on kubernetes.io/hostname) gets GPUs freed on that
// node, even by a preemption, while another node has idle GPUs it may not use.
TEST_F(GpuSharingE2E, APinnedPodGetsGpusFreedOnItsNodeNotOnAnIdleOne) {
  const std::string take = SubmitOn("node1", 8, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;

  testbed::TestPod pod = testbed::InferenceTestPod("pinned", "lending", 2);
  pod.node_selector = "node1";
  CreatePod(pod);
  ExpectGivenByPreemptionOn("pinned", "node1", take, "2-GPU pod pinned to a full node");
}

// The tests' own taint key (reset_lending.sh removes skb-e2e/ taints a killed test left).
constexpr char kTaint[] = "skb-e2e/maintenance";

// A node tainted NoSchedule that the pod does not tolerate gets no give, though its GPUs are
// idle: the GPUs are freed on the next node by a preemption instead, where the pod runs.
TEST_F(GpuSharingE2E, ANodeTaintedAgainstThePodGetsNoGive) {
  struct Untaint {
    ~Untaint() { Shell(StrCat("kubectl taint node node1 ", kTaint, "-")); }
  } untaint;
  ASSERT_EQ(
      Shell(StrCat("kubectl taint node node1 --overwrite ", kTaint, "=true:NoSchedule")).exit_code,
      0);
  for (int i = 3; i <= testbed::TestbedNodeCount(); ++i) SubmitOn(StrCat("node", i), 8, false);
  const std::string take = SubmitOn("node2", 8, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  // The bridge has seen the taint (its node cache is what a give is judged against).
  ASSERT_TRUE(WaitFor(
      [&] {
        return testbed::Bridgectl(daemon_->socket(), {"describe", "node", "node1"})
                   .out.find(kTaint) != std::string::npos;
      },
      seconds(30)));

  CreatePod("untolerant", 2);
  ExpectGivenByPreemptionOn("untolerant", "node2", take, "2-GPU pod beside a tainted idle node");
}

// A pod kube-scheduler cannot place on the GPUs freed for it (it asks more CPU than any node
// has, a fit the bridge does not judge): the give returns after the cool-down, recorded on the
// node, and the node gets no give for the pod again within the back-off, while the pod stays
// pending and every other node is full of work the bridge may not take.
TEST_F(GpuSharingE2E, AGiveThePodCannotUseIsNotRepeatedWithinTheBackoff) {
  FillOtherNodes();
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_NO_FATAL_FAILURE(CreateUnplaceablePod("too-big", 1));

  // The give: a placeholder on node1, one hold lifted.
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 7; }, seconds(60))) << Placeholders() << "\n"
                                                                           << daemon_->LogTail();
  const auto lent = Steady::now();
  // Unused for the cool-down: recorded on the node, then the GPU goes back.
  auto recorded = [&] {
    return Shell(
               "kubectl get node node1 -o jsonpath='{.metadata.annotations.slurm-k8s-bridge\\.io/"
               "unused-gives}'")
        .out;
  };
  ASSERT_TRUE(WaitFor([&] { return Placeholders().empty() && HoldsOn("node1") == 8; }, seconds(90)))
      << Placeholders() << "\n"
      << daemon_->LogTail();
  std::printf("lent -> returned unused: %.1f s\n",
              std::chrono::duration<double>(Steady::now() - lent).count());
  EXPECT_THAT(recorded(), HasSubstr("default/too-big/")) << daemon_->LogTail();
  EXPECT_EQ(PodField("too-big", ".status.phase"), "Pending");
  EXPECT_THAT(Shell("kubectl get events -n default --field-selector involvedObject.name=too-big "
                    "-o jsonpath='{range .items[*]}{.type}/{.reason}{\"\\n\"}{end}'")
                  .out,
              HasSubstr("Warning/GiveUnused"));

  // Three cool-downs later the pod still waits, no give was tried again, and its reason
  // says why.
  const auto until = Steady::now() + seconds(3 * kCooldownSeconds);
  while (Steady::now() < until) {
    ASSERT_EQ(Placeholders(), "") << "a second give for a pod that cannot use it";
    std::this_thread::sleep_for(milliseconds(500));
  }
  EXPECT_EQ(HoldsOn("node1"), 8);
  EXPECT_THAT(Shell("kubectl get events -n default --field-selector "
                    "involvedObject.name=too-big,reason=GpusNotFreed -o "
                    "custom-columns=M:.message --no-headers")
                  .out,
              HasSubstr("give(s) there went unused"));
}

// The driver stops publishing node1's ResourceSlice (a driver upgrade, a node whose GPUs
// vanish), then publishes it again: node1 leaves GPU sharing (the device lane drops its holds,
// then the node lane takes the node and makes its reservation), and comes back (every GPU
// held for Slurm, the reservation retired without a lend, the node handed over again), where
// a pending pod then gets a GPU by a give. No device is ever claimed by both sides.
TEST_F(GpuSharingE2E, ANodeLeavesGpuSharingWhenItsSliceGoesAndIsHandedOverAgainWhenItReturns) {
  // A node's Events outlive a test (an hour): only new double-booking reports count.
  auto double_booked = [&] {
    const std::string events = NodeEvents("node1");
    size_t n = 0;
    for (size_t at = events.find("GpuDoubleBooked"); at != std::string::npos;
         at = events.find("GpuDoubleBooked", at + 1)) {
      ++n;
    }
    return n;
  };
  const size_t double_booked_before = double_booked();
  const std::string saved = dir_ + "/node1-slice.json";
  ASSERT_EQ(Shell(StrCat("kubectl get resourceslice node1-gpu.nvidia.com -o json | jq "
                         "'del(.metadata.resourceVersion, .metadata.uid, "
                         ".metadata.creationTimestamp, .metadata.managedFields, .status)' > ",
                         saved))
                .exit_code,
            0);
  struct Republish {
    std::string file;
    ~Republish() { Shell(StrCat("kubectl apply -f ", file, " >/dev/null 2>&1")); }
  } republish{saved};
  auto reservation = [&] {
    return Trim(Shell("kubectl get pod -n slurm-bridge reserve-node1 --ignore-not-found "
                      "-o jsonpath='{.metadata.name} {.status.phase}'")
                    .out);
  };
  // The handover's record on the node (set when the node lane hands it over, removed when it
  // takes it back).
  auto shared_since = [&] {
    return Shell(
               "kubectl get node node1 -o jsonpath='{.metadata.annotations."
               "slurm-k8s-bridge\\.io/gpu-shared-since}'")
        .out;
  };
  ASSERT_EQ(reservation(), "") << "a shared node has no reservation";
  ASSERT_NE(shared_since(), "");

  // Leaving: the holds go, then the node lane takes the node back and makes its reservation.
  ASSERT_EQ(Shell("kubectl delete resourceslice node1-gpu.nvidia.com").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 0 && !reservation().empty(); }, seconds(60)))
      << Shell("kubectl get devicetaintrules").out << NodeEvents("node1") << daemon_->LogTail();
  EXPECT_EQ(shared_since(), "");
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("GpuSharingEnded"));
  EXPECT_EQ(HoldsOn("node2"), 8) << "the other nodes stay shared";

  // Returning: every GPU held for Slurm, the reservation retired, the node handed over.
  ASSERT_EQ(Shell(StrCat("kubectl create -f ", saved)).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] { return HoldsOn("node1") == 8 && reservation().empty() && !shared_since().empty(); },
      seconds(90)))
      << reservation() << "\n"
      << Shell("kubectl get devicetaintrules").out << NodeEvents("node1") << daemon_->LogTail();
  const std::string taints =
      Shell("kubectl get node node1 -o jsonpath='{.spec.taints[*].key}'").out;
  EXPECT_THAT(taints, ::testing::Not(HasSubstr("slurm-k8s-bridge.io/"))) << taints;
  EXPECT_EQ(double_booked(), double_booked_before) << NodeEvents("node1");

  // The device lane plans node1 again: a pod pinned to it gets an idle GPU.
  testbed::TestPod pod = testbed::InferenceTestPod("back", "lending", 1);
  pod.node_selector = "node1";
  CreatePod(pod);
  const double took = SecondsUntilRunning("back", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod back").out << daemon_->LogTail();
  EXPECT_EQ(HoldsOn("node1"), 7);
}

// Quotas count a pod's ResourceClaims. team-a trains (root's default account): its floor
// covers the non-preemptible jobs, so the preemptible one on node1 is borrowed. serving
// (namespace default) is guaranteed 4 GPUs. Its first pod, asking 4 GPUs through a
// ResourceClaimTemplate, is within the guarantee and takes the borrowed job's GPUs; once it
// runs, its claim's 4 devices are serving's usage, so the next claim pod is beyond the
// guarantee: it may take no job's GPUs, and the bridge says so on the pod.
class GpuSharingQuotaE2E : public GpuSharingE2E {
 protected:
  GpuSharingQuotaE2E() {
    extra_overlay_["quotas"] = {
        {"tenants",
         {{{"name", "team-a"},
           {"slurm_accounts", {"team-a"}},
           {"guaranteed", 8 * (testbed::TestbedNodeCount() - 1) + 4}},
          {{"name", "serving"}, {"kubernetes_namespaces", {"default"}}, {"guaranteed", 4}}}}};
  }
};

TEST_F(GpuSharingQuotaE2E, AClaimPodWithinItsGuaranteeTakesABorrowedJobsGpusAndTheNextOneWaits) {
  ApplyClaimTemplate("skb-e2e-four-gpus", "gpu", "gpu.nvidia.com", 4);
  ApplyClaimTemplate("skb-e2e-one-gpu", "gpu", "gpu.nvidia.com", 1);
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string take = SubmitOn("node1", 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  CreateClaimPod("claims-4", "skb-e2e-four-gpus");
  const double took = SecondsUntilRunning("claims-4", seconds(90));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod claims-4").out << Placeholders() << "\n"
                     << Shell("squeue").out << daemon_->LogTail();
  EXPECT_EQ(PodField("claims-4", ".spec.nodeName"), "node1");
  EXPECT_THAT(Signals(take), HasSubstr("USR1"));
  EXPECT_TRUE(WaitFor([&] { return Restarts(take) >= 1; }, seconds(30))) << Shell("squeue").out;

  // Its claim's devices are serving's usage: 4 of 4, all Kubernetes.
  std::string table;
  EXPECT_TRUE(WaitFor(
      [&] {
        table = testbed::Bridgectl(daemon_->socket(), {"get", "quotas"}).out;
        return table.find("4 (0/4)") != std::string::npos;
      },
      seconds(20)))
      << table;
  EXPECT_THAT(table, ::testing::ContainsRegex("serving +4 +- +4 \\(0/4\\) +0 +0 +0")) << table;

  // The next claim pod would borrow: nothing idle is left, and no job's GPUs may be taken.
  const std::string placeholders = Placeholders();
  CreateClaimPod("claims-1", "skb-e2e-one-gpu");
  // This pod's Events only (by uid: an earlier run's pod of the same name had its own).
  const std::string uid = PodField("claims-1", ".metadata.uid");
  std::string events;
  EXPECT_TRUE(WaitFor(
      [&] {
        events =
            Shell(StrCat("kubectl get events -n default --field-selector "
                         "involvedObject.uid=",
                         uid, ",reason=GpusNotFreed -o custom-columns=M:.message --no-headers"))
                .out;
        return events.find("(quotas)") != std::string::npos;
      },
      seconds(30)))
      << events << daemon_->LogTail();
  EXPECT_THAT(events,
              HasSubstr("default/claims-1 may take no job's GPUs: tenant serving uses 4 of its 4 "
                        "GPUs guaranteed: this pod's 1 GPU would be borrowed (quotas); node node"));
  std::this_thread::sleep_for(seconds(kGraceSeconds + 5));
  EXPECT_EQ(PodField("claims-1", ".status.phase"), "Pending");
  EXPECT_EQ(Placeholders(), placeholders) << "no give was started for it";
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
  // What the pod's owner sees: kubectl describe lists Events by the pod's uid.
  EXPECT_THAT(Shell("kubectl describe pod claims-1").out, HasSubstr("GpusNotFreed"));
  EXPECT_THAT(Shell("kubectl describe pod claims-4").out, HasSubstr("GpusLent"));
  table = testbed::Bridgectl(daemon_->socket(), {"get", "quotas"}).out;
  EXPECT_THAT(table, ::testing::ContainsRegex("serving +4 +- +4 \\(0/4\\) +0 +1 +0")) << table;
  for (const char* pod : {"claims-4", "claims-1"}) {
    Shell(StrCat("kubectl delete pod -n default ", pod, " --wait=false"));
  }
}

// Crash-safety of a give and a return, end to end: the bridge is killed (SIGKILL, the
// SKB_TEST_CRASH_AFTER hook) right after each step of the device lane takes effect, down for
// a moment, then restarted. The flow must finish as if nothing happened: the pod runs on
// the GPUs of the preemptible job, which is requeued once and runs again after the return,
// every device is held for Slurm again, no placeholder is left, and the per-device sampler
// sees no double booking throughout.
struct GiveStep {
  const char* reason;  // the Event reason of the device lane's action after which it dies
  bool returning;      // a step of the return (after the pod left)
};
void PrintTo(const GiveStep& s, std::ostream* os) { *os << s.reason; }

class GpuSharingCrashE2E : public GpuSharingE2E, public ::testing::WithParamInterface<GiveStep> {};

TEST_P(GpuSharingCrashE2E, TheRestartedBridgeFinishesTheGiveAndTheReturn) {
  const GiveStep step = GetParam();
  FillOtherNodes();
  const std::string victim = SubmitOn("node1", 8, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;

  ASSERT_NO_FATAL_FAILURE(RestartArmedToCrashAfter(step.reason));

  CreatePod("crash-2", 2);
  auto pod_runs = [&] {
    return WaitFor([&] { return PodField("crash-2", ".status.phase") == "Running"; },
                   seconds(kGraceSeconds + 60), milliseconds(200));
  };
  auto pod_leaves = [&] {
    return kube_
        ->Delete(k8s::Resource::Pods(), "default", "crash-2",
                 k8s::DeleteOptions{.grace_period_seconds = 0})
        .ok();
  };
  if (step.returning) {
    ASSERT_TRUE(pod_runs()) << Shell("kubectl describe pod crash-2").out << Placeholders()
                            << daemon_->LogTail();
    ASSERT_TRUE(pod_leaves());
  }
  ASSERT_NO_FATAL_FAILURE(AwaitCrashThenRestart(
      step.reason, seconds(step.returning ? kCooldownSeconds + 60 : kGraceSeconds + 60)));
  if (!step.returning) {
    ASSERT_TRUE(pod_runs()) << Shell("kubectl describe pod crash-2").out << Placeholders() << "\n"
                            << Shell("squeue").out << daemon_->LogTail();
    EXPECT_EQ(PodField("crash-2", ".spec.nodeName"), "node1");
    ASSERT_TRUE(pod_leaves());
  }
  // The return: every device held for Slurm again, no placeholder, the victim runs again.
  ASSERT_TRUE(
      WaitFor([&] { return Placeholders().empty() && HoldsOn("node1") == 8 && AllRunning(); },
              seconds(kCooldownSeconds + 90)))
      << Placeholders() << "\n"
      << Shell("squeue; kubectl get devicetaintrules").out << daemon_->LogTail();
  EXPECT_EQ(Restarts(victim), 1) << "requeued once, never lost";
  EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
  for (const std::string& id : jobs_) {
    EXPECT_THAT(JobField(id, "JobState"), ::testing::Not(::testing::AnyOf("FAILED", "CANCELLED")))
        << id;
  }
  EXPECT_EQ(Holds(), 8 * testbed::TestbedNodeCount());
}

// The give: the placeholder submitted, the victim signalled, preempted, the holds lifted;
// the return: the idle time recorded, the devices held again, the placeholder ended.
INSTANTIATE_TEST_SUITE_P(Steps, GpuSharingCrashE2E,
                         ::testing::Values(GiveStep{"GpusLending", false},
                                           GiveStep{"CheckpointSignalled", false},
                                           GiveStep{"SlurmJobsPreempted", false},
                                           GiveStep{"GpusLent", false}, GiveStep{"GpusIdle", true},
                                           GiveStep{"GpusReturning", true},
                                           GiveStep{"GpusReturned", true}),
                         [](const auto& p) { return std::string(p.param.reason); });

// Leader failover mid-give: two replicas; the leader is killed (SIGKILL, holding the Lease)
// right after it sent the victim the checkpoint signal, with the placeholder pending and
// the grace running. The standby takes the Lease and, from what the give recorded in
// Slurm and Kubernetes alone, preempts the victim once, lifts the holds of the devices
// Slurm gave the placeholder, and later returns them.
class GpuSharingFailoverE2E : public GpuSharingE2E {
 protected:
  GpuSharingFailoverE2E() { replicas_ = 2; }
};

TEST_F(GpuSharingFailoverE2E, TheStandbyTakesOverMidGiveAndFinishesTheGiveAndTheReturn) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string take = SubmitOn("node1", 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string keep_start = JobField(keep, "StartTime");

  CreatePod("failover-2", 2);
  ASSERT_TRUE(WaitFor([&] { return Signals(take).find("USR1") != std::string::npos; }, seconds(30),
                      milliseconds(50)))
      << Placeholders() << daemon_->LogTail();
  ASSERT_THAT(Placeholders(), HasSubstr("PENDING")) << "the give is under way";
  const auto t0 = Steady::now();
  daemon_->Kill();
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "bridge-b"; }, seconds(30), milliseconds(50)))
      << LeaseHolder();
  std::printf("failover mid-give: the standby holds the Lease %.2f s after the leader died\n",
              std::chrono::duration<double>(Steady::now() - t0).count());

  ASSERT_TRUE(WaitFor([&] { return PodField("failover-2", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 60), milliseconds(200)))
      << Shell("kubectl describe pod failover-2").out << Placeholders() << "\n"
      << Shell("squeue").out << standby_->LogTail();
  EXPECT_EQ(PodField("failover-2", ".spec.nodeName"), "node1");
  EXPECT_TRUE(WaitFor([&] { return Restarts(take) >= 1; }, seconds(30))) << Shell("squeue").out;
  EXPECT_EQ(HoldsOn("node1"), 6);
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);

  ASSERT_TRUE(kube_
                  ->Delete(k8s::Resource::Pods(), "default", "failover-2",
                           k8s::DeleteOptions{.grace_period_seconds = 0})
                  .ok());
  ASSERT_TRUE(
      WaitFor([&] { return Placeholders().empty() && HoldsOn("node1") == 8 && AllRunning(); },
              seconds(kCooldownSeconds + 90)))
      << Placeholders() << "\n"
      << Shell("squeue; kubectl get devicetaintrules").out << standby_->LogTail();
  EXPECT_EQ(Restarts(take), 1) << "preempted once by the two replicas together";
  EXPECT_EQ(JobField(keep, "StartTime"), keep_start);
  EXPECT_EQ(Holds(), 8 * testbed::TestbedNodeCount());
}

}  // namespace
}  // namespace skb::lending_e2e

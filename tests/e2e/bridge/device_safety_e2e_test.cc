// SPDX-License-Identifier: Apache-2.0
// GPU-granular sharing when the world misbehaves (dra label): a GPU driver that republishes
// its pool in several slices or with its GPUs' order changed, an admin who gives the
// placeholder partition a time limit, deletes or edits a hold, cancels a placeholder or sets
// a node DOWN under a give. Each test is one way to a GPU given to both schedulers that the
// device lane must close; the oracle (tests/testbed/oracle.h), which shares no code with the
// bridge, watches every test for a double booking, beside the invariant sampler.
#include <csignal>
#include <functional>
#include <nlohmann/json.hpp>

#include "tests/e2e/bridge/gpu_sharing_fixture.h"

namespace skb::lending_e2e {
namespace {

class DeviceSafetyE2E : public GpuSharingE2E {
 protected:
  // How many times the bridge recorded Event `reason` on node `node` so far (a repeated
  // Event is one object with a count).
  int EventCount(const std::string& node, const std::string& reason) {
    const std::string out =
        Shell(StrCat("kubectl get events -n default --field-selector involvedObject.name=", node,
                     ",reason=", reason, " -o jsonpath='{range .items[*]}{.count}{\"\\n\"}{end}'"))
            .out;
    int total = 0;
    for (const auto& line : StrSplit(out, '\n', /*skip_empty=*/true)) {
      total += std::max(1, std::atoi(std::string(line).c_str()));
    }
    return total;
  }

  // node1 full of a preemptible 8-GPU job, the pod `infer` given 2 of its GPUs by
  // preemption; returns {the job, the running placeholder}.
  std::pair<std::string, std::string> GiveInferByPreemptionOnNode1() {
    FillOtherNodes();
    const std::string victim = SubmitOn("node1", 8, /*preemptible=*/true);
    EXPECT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
    EXPECT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
    CreatePod("infer", 2);
    ExpectGivenByPreemptionOn("infer", "node1", victim, "give");
    const std::string placeholder = Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o %i").out);
    EXPECT_FALSE(placeholder.empty()) << Placeholders();
    return {victim, placeholder};
  }

  // The admin's scancel of `placeholder` while the bridge is paused (SIGSTOP), so that
  // Slurm is surely the faster: returns once Slurm runs `job` (on the pod's GPUs), the
  // bridge resumed. Unpaused, the bridge's new placeholder (allocated at once at
  // submission) usually wins against slurmctld's next scheduling pass and nothing is
  // double-booked at all. Double bookings are expected for 40 s from here.
  void CancelWhileTheBridgeIsPaused(const std::string& placeholder, const std::string& job) {
    struct Resume {
      pid_t pid;
      ~Resume() { kill(pid, SIGCONT); }
    } resume{daemon_->pid()};
    double_booking_window_ = DoubleBookingWindow{Steady::now(), seconds(40)};
    ASSERT_EQ(kill(daemon_->pid(), SIGSTOP), 0);
    ASSERT_EQ(Shell(StrCat("scancel ", placeholder)).exit_code, 0);
    ASSERT_TRUE(WaitFor([&] { return JobField(job, "JobState") == "RUNNING"; }, seconds(20)))
        << Shell("squeue").out;
    ASSERT_EQ(JobField(job, "NodeList"), "node1");
  }

  // Every other node full, and node1 running a 5-GPU job that may not be preempted (its 3
  // other GPUs idle, each held for Slurm): returns the job.
  std::string FiveOfNode1sGpusBusy() {
    FillOtherNodes();
    const std::string keep = SubmitOn("node1", 5, /*preemptible=*/false);
    EXPECT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
    EXPECT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
    return keep;
  }
  // node1's idle GPUs as bridgectl shows them, once there are `want` (fewer after 30 s).
  std::vector<std::string> IdleGpusOfNode1(size_t want) {
    std::vector<std::string> idle;
    nlohmann::json n1;
    EXPECT_TRUE(WaitFor(
        [&] {
          idle.clear();
          n1 = BridgectlNode("node1");
          if (!n1.is_object()) return false;
          for (const auto& g : n1["gpuOwners"]) {
            if (g["owner"] == "idle") idle.push_back(g["device"].get<std::string>());
          }
          return idle.size() == want;
        },
        seconds(30)))
        << n1.dump();
    return idle;
  }

  // The live (pending or running) placeholders, one id per line; with `health_only`, those
  // whose record names a GPU's health only.
  std::string LiveHolds(bool health_only) {
    const std::string live = Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING,PENDING -o %i").out);
    if (!health_only) return live;
    std::vector<std::string> ids;
    for (const auto& id : StrSplit(live, '\n', /*skip_empty=*/true)) {
      if (JobField(std::string(id), "AdminComment").find("health=") != std::string::npos) {
        ids.emplace_back(id);
      }
    }
    return StrJoin(ids, "\n");
  }
  // Waits up to `limit` until exactly one such placeholder is live, on GRES index `index`;
  // a failure shows them, Slurm's jobs with their indices, the holds and the bridge's log.
  ::testing::AssertionResult OneHoldOn(const std::string& index, bool health_only, seconds limit) {
    const bool one = WaitFor(
        [&] {
          const std::string ids = LiveHolds(health_only);
          return !ids.empty() && ids.find('\n') == std::string::npos &&
                 testbed::SlurmGpuIndices(ids) == index;
        },
        limit);
    if (one) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "not one live hold on index " << index << ":\n"
           << LiveHolds(health_only) << "\n"
           << Shell("squeue; scontrol -d show job | grep -E 'JobId|IDX'").out
           << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  }

  // A 1-GPU inference pod `waits` pinned to node1.
  void CreateWaitsOnNode1() {
    testbed::TestPod pod = testbed::InferenceTestPod("waits", "lending", 1);
    pod.node_selector = "node1";
    CreatePod(pod);
  }
  // The messages of the pod's GpusNotFreed Events (why the bridge freed no GPU for it).
  std::string WaitingReasonOf(const std::string& pod) {
    return Shell(StrCat("kubectl get events -n default --field-selector involvedObject.name=", pod,
                        ",reason=GpusNotFreed -o custom-columns=M:.message --no-headers"))
        .out;
  }

  // For `d`, sampled throughout: "" while every GPU of node1 keeps its hold and the pod
  // `waits` is placed nowhere; else what broke first.
  std::string Node1HeldAndWaitsUnplacedFor(seconds d) {
    return HoldsFor(
        [&]() -> std::string {
          const int holds = HoldsOn("node1");
          if (holds != 8) return StrCat(holds, " holds on node1");
          const std::string node = PodField("waits", ".spec.nodeName");
          return node.empty() ? "" : StrCat("the pod was placed on ", node);
        },
        d);
  }
};

// A driver that republishes node1's pool in two ResourceSlices of a new generation, one
// slice at a time (3 s apart), while an 8-GPU job that may not be preempted runs there and
// a high-priority pod pinned to node1 waits for a GPU. Read slice by slice, the new pool
// looked like "1 of 2" and the node left GPU sharing with every hold dropped: the pod was
// allocated a GPU the job ran on. Read as kube-scheduler reads it, the pool is unreadable
// while it is incomplete (every hold stays, nothing is planned, a Warning says so) and whole
// again after: node1's 8 holds stay throughout and the pod never gets a GPU there.
TEST_F(DeviceSafetyE2E, APoolRepublishedInSeveralSlicesKeepsEveryHold) {
  struct Join {
    ~Join() { testbed::TestbedCommand({"driver-join", "node1"}); }
  } join;
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 8, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60)))
      << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  CreateWaitsOnNode1();
  // The bridge has seen the pod and frees nothing for it (the only job may not be taken).
  ASSERT_TRUE(WaitFor(
      [&] {
        return Shell(
                   "kubectl get events -n default --field-selector "
                   "involvedObject.name=waits,reason=GpusNotFreed --no-headers")
                   .out.size() > 0;
      },
      seconds(60)))
      << daemon_->LogTail();

  const int unreadable = EventCount("node1", "GpusUnreadable");
  const int readable = EventCount("node1", "GpusReadable");
  const int ended = EventCount("node1", "GpuSharingEnded");
  const auto split = testbed::TestbedCommand({"driver-split", "node1", "2", "3"});
  ASSERT_EQ(split.exit_code, 0) << split.out << split.err;
  ASSERT_EQ(Trim(Shell("kubectl get resourceslices --no-headers | grep -c '^node1-'").out), "2");

  // Throughout the republication and after it: every hold stays and the pod gets nothing.
  const std::string broke = Node1HeldAndWaitsUnplacedFor(seconds(15));
  EXPECT_EQ(broke, "") << Shell("kubectl get devicetaintrules").out << NodeEvents("node1")
                       << daemon_->LogTail();
  // One Warning while it could not be read, one Normal when it could again, and the node
  // never left GPU sharing.
  EXPECT_EQ(EventCount("node1", "GpusUnreadable"), unreadable + 1) << NodeEvents("node1");
  EXPECT_EQ(EventCount("node1", "GpusReadable"), readable + 1) << NodeEvents("node1");
  EXPECT_EQ(EventCount("node1", "GpuSharingEnded"), ended) << NodeEvents("node1");
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("has 1 of 2 slices"));
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
}

// The driver republishes node1's pool with gpu-0 and gpu-1 on each other's PCI bus, as on a
// board whose kernel numbered those two GPUs' minors against their bus order. gres.conf's
// File=/dev/nvidia0..7 and AutoDetect=nvml's bus order then give the two GPUs each other's
// Slurm index, and nothing the bridge reads tells which one this node's slurmd uses: the
// bridge trusted the names and went on handing node1's GPUs out by index (on a node that
// autodetects, a pod got the GPU a job holds). Now node1 is no longer shared GPU by GPU
// (bridgectl says why), its GPUs stay held for Slurm and a pod pinned to it gets none of
// them; with the buses back in minor order the node is shared again and the pod gets one of
// its idle GPUs.
TEST_F(DeviceSafetyE2E, ANodeWhoseGpuOrderCannotBeToldIsNotSharedGpuByGpu) {
  struct Restore {
    bool swapped = false;
    ~Restore() {
      if (swapped) testbed::TestbedCommand({"driver-reorder", "node1"});
    }
  } restore;
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 6, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
  ASSERT_EQ(BridgectlNode("node1")["gpuMode"], "gpu");

  const auto swap = testbed::TestbedCommand({"driver-reorder", "node1"});
  ASSERT_EQ(swap.exit_code, 0) << swap.out << swap.err;
  restore.swapped = true;
  nlohmann::json n1;
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        return n1.is_object() && n1["gpuMode"] == "node";
      },
      seconds(30)))
      << n1.dump() << daemon_->LogTail();
  EXPECT_THAT(n1["gpuModeReason"].get<std::string>(),
              HasSubstr("the GPUs' minors are not in PCI bus order (gpu-1@0000:18:00.0 "
                        "gpu-0@0000:2a:00.0"));
  EXPECT_THAT(n1["gpuModeReason"].get<std::string>(), HasSubstr("gpu_sharing.gres_order"));

  CreateWaitsOnNode1();
  const std::string broke = Node1HeldAndWaitsUnplacedFor(seconds(10));
  EXPECT_EQ(broke, "") << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  EXPECT_EQ(Placeholders(), "");

  // The buses back in minor order: node1 is shared again and the pod gets an idle GPU.
  const auto back = testbed::TestbedCommand({"driver-reorder", "node1"});
  ASSERT_EQ(back.exit_code, 0) << back.out << back.err;
  restore.swapped = false;
  const double took = SecondsUntilRunning("waits", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod waits").out << daemon_->LogTail();
  EXPECT_EQ(PodField("waits", ".spec.nodeName"), "node1");
  EXPECT_EQ(BridgectlNode("node1")["gpuMode"], "gpu");
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
}

// The lifted-GPU race with a cool-down longer than the test: an unused give returning to
// Slurm would end the race the test watches, and with it the GPUs `first` is owed.
class LiftedGpusE2E : public DeviceSafetyE2E {
 protected:
  LiftedGpusE2E() { extra_overlay_["lending"]["cooldown"] = "60s"; }
};

// Two pods race for lifted GPUs. `first` (2 GPUs, and more CPU than any node has, so
// kube-scheduler never places it) gets a give on node1, the only node with free GPUs; its two
// lifted GPUs stay idle. Then `second` (2 GPUs) comes. The bridge counted one of first's
// lifted GPUs toward second and lifted only one more: second ran on two of the three, and
// first was left one GPU short, waiting behind a placeholder that still "served" it. Now
// second gets two GPUs of its own, so at least two lifted GPUs stay free for first; and
// should kube-scheduler put second on first's GPUs, first gets a give of its own.
TEST_F(LiftedGpusE2E, GpusLiftedForAPodThatWaitsAreNotCountedForAnother) {
  FillOtherNodes();
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_NO_FATAL_FAILURE(CreateUnplaceablePod("first", 2));
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 6; }, seconds(60))) << Placeholders() << "\n"
                                                                           << daemon_->LogTail();

  CreatePod("second", 2);
  const double took = SecondsUntilRunning("second", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod second").out << Placeholders()
                     << daemon_->LogTail();
  EXPECT_EQ(PodField("second", ".spec.nodeName"), "node1");
  // Lifted GPUs no pod uses: at least first's two, throughout (second's placeholder asked
  // for two GPUs of its own; had second landed on first's, first got a give again).
  auto free_lifted = [&] { return 8 - HoldsOn("node1") - 2; };
  ASSERT_TRUE(WaitFor([&] { return free_lifted() >= 2; }, seconds(30)))
      << free_lifted() << " free lifted GPU(s)\n"
      << Placeholders() << "\n"
      << daemon_->LogTail();
  const std::string broke = HoldsFor(
      [&]() -> std::string {
        const int free = free_lifted();
        return free >= 2 ? "" : StrCat(free, " free lifted GPU(s) for first");
      },
      seconds(5));
  EXPECT_EQ(broke, "") << Placeholders() << "\n" << daemon_->LogTail();
  // One placeholder for each pod, whichever GPUs kube-scheduler put `second` on (a taken
  // placeholder is handed to the pod that took it, and `first` gets one of its own).
  std::map<std::string, int> served;
  const std::string ids = Trim(Shell("squeue -h -n skb-gpu-hold -o %i").out);
  for (const auto& id : StrSplit(ids, '\n', /*skip_empty=*/true)) {
    const std::string record = JobField(std::string(id), "AdminComment");
    for (const char* pod : {"default/first", "default/second"}) {
      if (record.find(pod) != std::string::npos) ++served[pod];
    }
    std::printf("placeholder %s: %s\n", std::string(id).c_str(), record.c_str());
  }
  EXPECT_EQ(served["default/first"], 1);
  EXPECT_EQ(served["default/second"], 1);
  std::printf("second ran after %.1f s\n", took);
  EXPECT_EQ(PodField("first", ".status.phase"), "Pending");
}

// An operator turns gpu_sharing off (the daemon restarted with the section off) while a
// give is live: a 2-GPU pod runs on node1 beside a 6-GPU job that may not be preempted. The
// old bridge then ran without its device lane: node1's placeholder and the pod's lifted GPUs
// were left as they were, for good. Now the daemon sees its holds and winds GPU sharing
// down: the lifted GPUs are held for Slurm again at once (the pod keeps running on them), no
// pod gets a give, and when the pod goes its placeholder ends; node1's GPUs stay held for
// Slurm, and bridgectl says sharing is off.
TEST_F(DeviceSafetyE2E, GpuSharingTurnedOffUnderALiveGiveWindsItDown) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 6, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
  testbed::TestPod kept = testbed::InferenceTestPod("kept", "lending", 2);
  kept.node_selector = "node1";
  CreatePod(kept);
  ASSERT_GE(SecondsUntilRunning("kept", seconds(60)), 0)
      << Shell("kubectl describe pod kept").out << Placeholders() << daemon_->LogTail();
  ASSERT_EQ(HoldsOn("node1"), 6);
  const std::string placeholder = Placeholders();
  ASSERT_THAT(placeholder, HasSubstr("RUNNING node1"));

  ASSERT_NO_FATAL_FAILURE(RestartDaemonWith({{"gpu_sharing", {{"enabled", false}}}}));
  EXPECT_THAT(daemon_->Log(), HasSubstr("gpu_sharing_off winding_down=true"));
  // The lifted GPUs held for Slurm again; the pod keeps them, its placeholder stays.
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(30)))
      << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  testbed::TestPod late = testbed::InferenceTestPod("late", "lending", 1);
  late.node_selector = "node1";
  CreatePod(late);
  const std::string broke = HoldsFor(
      [&]() -> std::string {
        if (PodField("kept", ".status.phase") != "Running") return "kept stopped running";
        if (!PodField("late", ".spec.nodeName").empty()) return "late was placed";
        if (Placeholders() != placeholder) return StrCat("placeholders now: ", Placeholders());
        return HoldsOn("node1") == 8 ? "" : StrCat(HoldsOn("node1"), " holds on node1");
      },
      seconds(8));
  EXPECT_EQ(broke, "") << daemon_->LogTail();

  // The pod goes: its placeholder ends; the GPUs stay held for Slurm, nothing else moves.
  ASSERT_EQ(Shell("kubectl delete pod kept --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Placeholders().empty(); }, seconds(60)))
      << Placeholders() << daemon_->LogTail();
  EXPECT_EQ(HoldsOn("node1"), 8);
  EXPECT_EQ(PodField("late", ".spec.nodeName"), "");
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  const nlohmann::json n1 = BridgectlNode("node1");
  EXPECT_EQ(n1["gpuMode"], "node") << n1.dump();
  EXPECT_THAT(n1.value("gpuModeReason", ""), HasSubstr("gpu_sharing is off")) << n1.dump();
}

// The GPU driver's health check taints an idle GPU of node1 (gpu-unhealthy: XID 79, as
// NVIDIA's driver with NVMLDeviceHealthCheck does). kube-scheduler gives it to no pod; the
// bridge keeps it from Slurm too: Slurm cannot be asked for one GRES index, so health holds
// go on node1's free GPUs together and the one Slurm places on the bad GPU stays. Slurm then
// places a new job on the node's good GPU, never the bad one; a pod pinned to node1 gets a
// good GPU by a give; bridgectl shows the bad GPU out of both with its taint, and an Event
// names it. Once the driver clears it, its health hold ends and it is Slurm's again.
TEST_F(DeviceSafetyE2E, AGpuTheDriverTaintsIsHeldFromSlurmTooAndTheNodesOtherGpusServeBoth) {
  const std::string keep = FiveOfNode1sGpusBusy();
  const std::vector<std::string> idle = IdleGpusOfNode1(3);
  ASSERT_EQ(idle.size(), 3u);
  nlohmann::json n1;
  const std::string bad = idle[1];
  struct Heal {
    std::string index;
    ~Heal() {
      if (!index.empty()) testbed::TestbedCommand({"gpu-healthy", "node1", index});
    }
  } heal{bad.substr(4)};
  const int held_events = EventCount("node1", "GpuHeldUnhealthy");
  const int healthy_events = EventCount("node1", "GpuHealthy");
  const auto sick = testbed::TestbedCommand({"gpu-unhealthy", "node1", heal.index});
  ASSERT_EQ(sick.exit_code, 0) << sick.out << sick.err;
  const auto tainted_at = Steady::now();

  // One health hold left, on the bad GPU's index; bridgectl shows it out of both.
  const std::string taint = "gpu.nvidia.com/xid=79:NoSchedule";
  ASSERT_TRUE(OneHoldOn(heal.index, /*health_only=*/false, seconds(30)));
  std::printf("tainted -> held from Slurm: %.1f s\n",
              std::chrono::duration<double>(Steady::now() - tainted_at).count());
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        for (const auto& g : n1["gpuOwners"]) {
          if (g["device"] == bad) return g["owner"] == "out" && g["health"] == taint;
        }
        return false;
      },
      seconds(30)))
      << n1.dump();
  EXPECT_EQ(EventCount("node1", "GpuHeldUnhealthy"), held_events + 1) << NodeEvents("node1");
  EXPECT_THAT(NodeEvents("node1"), HasSubstr(StrCat(bad, " (index ", heal.index, ", ", taint)));
  // The node's condition sums it up for tools that read only nodes.
  const auto devices_condition = [] {
    return Shell(
               "kubectl get node node1 -o jsonpath='{range "
               ".status.conditions[?(@.type==\"GPUDevicesHealthy\")]}{.status} {.message}{end}'")
        .out;
  };
  EXPECT_TRUE(WaitFor(
      [&] {
        return devices_condition().starts_with(
            StrCat("False 1 of 8 GPUs out of service, kept from Slurm and Kubernetes: ", bad,
                   " (index ", heal.index));
      },
      seconds(30)))
      << devices_condition();

  // Slurm places a new job on a good GPU of node1, never the bad one.
  const std::string small = SubmitOn("node1", 1, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return JobField(small, "JobState") == "RUNNING"; }, seconds(30)))
      << Shell("squeue").out;
  const std::string small_index = testbed::SlurmGpuIndices(small);
  EXPECT_NE(small_index, heal.index);
  EXPECT_FALSE(small_index.empty());

  // A pod pinned to node1 gets the last good GPU, by a give.
  CreateWaitsOnNode1();
  const double took = SecondsUntilRunning("waits", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod waits").out << Placeholders()
                     << daemon_->LogTail();
  EXPECT_EQ(PodField("waits", ".spec.nodeName"), "node1");
  // The pod's device, as bridgectl reads its claim: a good one.
  std::string got;
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        for (const auto& g : n1["gpuOwners"]) {
          for (const auto& p : g.value("pods", nlohmann::json::array())) {
            if (p == "default/waits") got = g["device"].get<std::string>();
          }
        }
        return !got.empty();
      },
      seconds(30)))
      << n1.dump();
  EXPECT_NE(got, bad);

  // The driver finds it healthy again (its kubelet plugin restarted): its health hold ends.
  const auto healed = testbed::TestbedCommand({"gpu-healthy", "node1", heal.index});
  ASSERT_EQ(healed.exit_code, 0) << healed.out << healed.err;
  heal.index.clear();
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string ids = LiveHolds(/*health_only=*/false);
        // The give's placeholder stays (the pod runs); no health hold is left.
        return ids.find('\n') == std::string::npos && !ids.empty() &&
               JobField(ids, "AdminComment").find("health=") == std::string::npos;
      },
      seconds(30)))
      << LiveHolds(/*health_only=*/false) << Placeholders() << daemon_->LogTail();
  EXPECT_EQ(EventCount("node1", "GpuHealthy"), healthy_events + 1) << NodeEvents("node1");
  EXPECT_TRUE(WaitFor([&] { return devices_condition().starts_with("True "); }, seconds(30)))
      << devices_condition();
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(JobField(small, "JobState"), "RUNNING");
  Shell(StrCat("scancel ", small));
}

// The driver taints a GPU under a preemptible job on node1, where a job that may not be
// preempted and a pod (given node1's idle GPU) run on the others. The job gets a give's
// treatment from a health hold that follows it: checkpoint signal, grace, requeue. The hold
// takes its GPUs and shrinks until only the bad one is held, from Slurm by the hold and from
// Kubernetes by the driver's taint and the bridge's; the other job and the pod run
// throughout. Once the driver clears it, the GPU is Slurm's again and the requeued job runs.
TEST_F(DeviceSafetyE2E, APreemptibleJobOnAGpuTheDriverTaintsIsRequeuedAndTheGpuHeld) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 3, /*preemptible=*/false);
  const std::string victim = SubmitOn("node1", 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
  CreateWaitsOnNode1();  // node1's idle GPU, by a give
  ASSERT_GE(SecondsUntilRunning("waits", seconds(60)), 0)
      << Shell("kubectl describe pod waits").out << Placeholders() << daemon_->LogTail();
  const std::string victim_gpus = testbed::SlurmGpuIndices(victim);
  ASSERT_FALSE(victim_gpus.empty()) << Shell(StrCat("scontrol -d show job ", victim)).out;
  struct Heal {
    std::string index;
    ~Heal() {
      if (!index.empty()) testbed::TestbedCommand({"gpu-healthy", "node1", index});
    }
  } heal{std::to_string(std::atoi(victim_gpus.c_str()))};  // the victim's first GPU
  const std::string bad = StrCat("gpu-", heal.index);
  const int under_events = EventCount("node1", "GpuUnhealthyUnderJob");
  const auto sick = testbed::TestbedCommand({"gpu-unhealthy", "node1", heal.index, "48"});
  ASSERT_EQ(sick.exit_code, 0) << sick.out << sick.err;
  const auto tainted_at = Steady::now();

  // Signalled, then requeued after its grace; a Warning names the GPU and the job.
  ASSERT_TRUE(WaitFor([&] { return Restarts(victim) >= 1; }, seconds(90)))
      << Shell("squeue").out << Placeholders() << daemon_->LogTail();
  std::printf("tainted -> victim requeued: %.1f s\n",
              std::chrono::duration<double>(Steady::now() - tainted_at).count());
  EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
  EXPECT_EQ(EventCount("node1", "GpuUnhealthyUnderJob"), under_events + 1) << NodeEvents("node1");
  EXPECT_THAT(NodeEvents("node1"), HasSubstr(StrCat(bad, " (index ", heal.index,
                                                    ", gpu.nvidia.com/xid=48:NoSchedule) "
                                                    "under job ",
                                                    victim, ": the job is checkpoint-signalled")));
  EXPECT_THAT(JobField(victim, "AdminComment"), HasSubstr(StrCat("@health:node1:", bad)));

  // One health hold left, on the bad GPU alone; the requeued job waits (node1 has 3 GPUs
  // for it, not 4); the other job and the pod still run.
  ASSERT_TRUE(OneHoldOn(heal.index, /*health_only=*/true, seconds(60)));
  std::printf("tainted -> only the bad GPU held: %.1f s\n",
              std::chrono::duration<double>(Steady::now() - tainted_at).count());
  nlohmann::json n1;
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        for (const auto& g : n1["gpuOwners"]) {
          if (g["device"] == bad) return g["owner"] == "out";
        }
        return false;
      },
      seconds(30)))
      << n1.dump();
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(PodField("waits", ".status.phase"), "Running");
  EXPECT_EQ(JobField(victim, "JobState"), "PENDING");

  // The driver clears it: its hold ends, and the requeued job runs on node1 again.
  const auto healed = testbed::TestbedCommand({"gpu-healthy", "node1", heal.index});
  ASSERT_EQ(healed.exit_code, 0) << healed.out << healed.err;
  heal.index.clear();
  ASSERT_TRUE(WaitFor([&] { return JobField(victim, "JobState") == "RUNNING"; }, seconds(90)))
      << Shell("squeue").out << Placeholders() << daemon_->LogTail();
  EXPECT_TRUE(LiveHolds(/*health_only=*/true).empty()) << LiveHolds(/*health_only=*/true);
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  EXPECT_EQ(PodField("waits", ".status.phase"), "Running");
}

// The driver taints a GPU under a job that may not be preempted: the bridge says so (a
// Warning), never signals it, and a health hold that follows it waits, pending, for its
// GPUs. A job queued behind it for node1 never gets the bad GPU: when the job ends, Slurm
// starts the hold first (top priority), the hold shrinks to the bad GPU, and the queued job
// runs on the good ones.
TEST_F(DeviceSafetyE2E, AGpuTaintedUnderAJobThatMayNotBePreemptedIsHeldTheMomentItEnds) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string other = SubmitOn("node1", 4, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
  const std::string keep_gpus = testbed::SlurmGpuIndices(keep);
  ASSERT_FALSE(keep_gpus.empty());
  struct Heal {
    std::string index;
    ~Heal() {
      if (!index.empty()) testbed::TestbedCommand({"gpu-healthy", "node1", index});
    }
  } heal{std::to_string(std::atoi(keep_gpus.c_str()))};
  const std::string bad = StrCat("gpu-", heal.index);
  const int under_events = EventCount("node1", "GpuUnhealthyUnderJob");
  const auto sick = testbed::TestbedCommand({"gpu-unhealthy", "node1", heal.index});
  ASSERT_EQ(sick.exit_code, 0) << sick.out << sick.err;

  // Reported; the hold that follows the job pends.
  ASSERT_TRUE(WaitFor(
      [&] { return EventCount("node1", "GpuUnhealthyUnderJob") == under_events + 1; }, seconds(30)))
      << NodeEvents("node1") << daemon_->LogTail();
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("which may not be preempted"));
  const std::string follow = Trim(Shell("squeue -h -n skb-gpu-hold -t PENDING -o %i").out);
  ASSERT_FALSE(follow.empty()) << Placeholders();
  EXPECT_THAT(JobField(follow, "AdminComment"), HasSubstr(StrCat(";under=", keep)));
  // A job for node1's GPUs queued behind the two.
  const std::string next = SubmitOn("node1", 3, /*preemptible=*/false);
  // Never signalled, for as long as the hold waits.
  const std::string broke = HoldsFor(
      [&]() -> std::string {
        if (!Signals(keep).empty()) return "the job was signalled";
        if (JobField(keep, "JobState") != "RUNNING") return "the job stopped";
        return JobField(follow, "JobState") == "PENDING" ? "" : "the hold left PENDING";
      },
      seconds(8));
  EXPECT_EQ(broke, "") << Placeholders() << daemon_->LogTail();

  // The job ends: the hold starts on its GPUs at once, then only the bad one stays held, and
  // the queued job runs on good GPUs.
  ASSERT_EQ(Shell(StrCat("scancel ", keep)).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return JobField(next, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out << Placeholders() << daemon_->LogTail();
  const std::string next_gpus = testbed::SlurmGpuIndices(next);
  EXPECT_EQ(next_gpus.find(heal.index), std::string::npos)
      << "job " << next << " got GPUs " << next_gpus << ", the bad one is " << heal.index;
  ASSERT_TRUE(OneHoldOn(heal.index, /*health_only=*/false, seconds(60)));
  EXPECT_EQ(JobField(other, "JobState"), "RUNNING");
  EXPECT_TRUE(Signals(keep).empty());
  Shell(StrCat("scancel ", next));
}

// An admin takes one idle GPU of node1 out by hand (`bridgectl drain node1 --gpu N`, with
// the admin's kubeconfig): a DeviceTaintRule on that device, read by the bridge like the
// driver's taint: a health hold keeps it from Slurm, bridgectl shows why, and the node's
// GPUDevicesHealthy condition counts it. `undrain --gpu` gives it back to both.
TEST_F(DeviceSafetyE2E, AnAdminDrainsOneGpuWithBridgectlAndGetsItBack) {
  const std::string keep = FiveOfNode1sGpusBusy();
  const std::vector<std::string> idle = IdleGpusOfNode1(3);
  ASSERT_EQ(idle.size(), 3u);
  nlohmann::json n1;
  const std::string gpu = idle[2];
  const std::string index = gpu.substr(4);
  const char* kubeconfig = std::getenv("KUBECONFIG");
  ASSERT_NE(kubeconfig, nullptr);
  const auto bridgectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {testbed::BridgectlBinary(), "--kubeconfig", kubeconfig});
    return RunCommand(args, seconds(30));
  };
  struct Undrain {
    std::function<void()> f;
    ~Undrain() { f(); }
  } undrain{[&] { bridgectl({"undrain", "node1", "--gpu", index}); }};
  const auto drained = bridgectl({"drain", "node1", "--gpu", index, "--reason", "e2e RMA"});
  ASSERT_EQ(drained.exit_code, 0) << drained.out << drained.err;
  EXPECT_THAT(drained.out,
              HasSubstr(StrCat("drained ", gpu, " (DeviceTaintRule skb-drain.node1.", gpu, ")")));

  // Held from Slurm on its index alone; bridgectl and the node's condition say why.
  ASSERT_TRUE(OneHoldOn(index, /*health_only=*/false, seconds(30)));
  ASSERT_TRUE(WaitFor(
      [&] {
        n1 = BridgectlNode("node1");
        for (const auto& g : n1["gpuOwners"]) {
          if (g["device"] == gpu) {
            return g["owner"] == "out" &&
                   g.value("health", "").starts_with("drained: e2e RMA (bridgectl drain by ");
          }
        }
        return false;
      },
      seconds(30)))
      << n1.dump();
  const auto condition = [] {
    return Shell(
               "kubectl get node node1 -o jsonpath='{range "
               ".status.conditions[?(@.type==\"GPUDevicesHealthy\")]}{.status} {.reason}{end}'")
        .out;
  };
  EXPECT_TRUE(WaitFor([&] { return condition() == "False GpusOutOfService"; }, seconds(30)))
      << condition();
  // Again with the same words: nothing changes.
  const auto again = bridgectl({"drain", "node1", "--gpu", gpu, "--reason", "e2e RMA"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already drained"));

  const auto back = bridgectl({"undrain", "node1", "--gpu", index});
  ASSERT_EQ(back.exit_code, 0) << back.out << back.err;
  EXPECT_THAT(back.out, HasSubstr("undrained"));
  ASSERT_TRUE(WaitFor([&] { return Placeholders().empty(); }, seconds(30)))
      << Placeholders() << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([&] { return condition() == "True AllGpusInService"; }, seconds(30)))
      << condition();
  EXPECT_EQ(HoldsOn("node1"), 8);
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
  const auto none = bridgectl({"undrain", "node1", "--gpu", index});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_THAT(none.out, HasSubstr("no drain"));
}

// An admin gives the placeholder partition a time limit (MaxTime=10 minutes): a placeholder
// would be ended by Slurm while its pod still runs, and the requeued victim (pending,
// eligible, fitting exactly) would start on the pod's GPUs. No give starts on such a
// partition: the pod waits with the reason, and once MaxTime is UNLIMITED again it gets its
// GPU through a placeholder that itself has no time limit (a partition's DefaultTime never
// applies to it).
TEST_F(DeviceSafetyE2E, NoGiveThroughAPlaceholderPartitionWithATimeLimit) {
  struct Unlimited {
    ~Unlimited() { Shell("scontrol update partitionname=skb-gpu-hold MaxTime=UNLIMITED"); }
  } unlimited;
  FillOtherNodes();
  SubmitOn("node1", 5, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const int refused = EventCount("node1", "GivesRefused");
  const int allowed = EventCount("node1", "GivesAllowed");
  ASSERT_EQ(Shell("scontrol update partitionname=skb-gpu-hold MaxTime=10").exit_code, 0);
  // The bridge has seen it (a Warning on every node of the partition) before the pod comes.
  ASSERT_TRUE(
      WaitFor([&] { return EventCount("node1", "GivesRefused") == refused + 1; }, seconds(60)))
      << NodeEvents("node1") << daemon_->LogTail();
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("has MaxTime=10 min"));
  CreateWaitsOnNode1();
  auto waiting = [&] { return WaitingReasonOf("waits"); };
  ASSERT_TRUE(
      WaitFor([&] { return waiting().find("MaxTime=10 min") != std::string::npos; }, seconds(60)))
      << waiting() << Placeholders() << daemon_->LogTail();
  EXPECT_EQ(Placeholders(), "") << "a give through a partition that would end it";
  EXPECT_EQ(HoldsOn("node1"), 8);

  ASSERT_EQ(Shell("scontrol update partitionname=skb-gpu-hold MaxTime=UNLIMITED").exit_code, 0);
  EXPECT_TRUE(
      WaitFor([&] { return EventCount("node1", "GivesAllowed") == allowed + 1; }, seconds(60)))
      << NodeEvents("node1");
  const double took = SecondsUntilRunning("waits", seconds(60));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod waits").out << Placeholders()
                     << daemon_->LogTail();
  EXPECT_EQ(PodField("waits", ".spec.nodeName"), "node1");
  EXPECT_EQ(Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o %l").out), "UNLIMITED");
}

// Another admin deletes or edits one of the bridge's holds (a GPU a non-preemptible job is
// using, a pod waiting for a GPU of that node): the apiserver refuses both, naming the
// bridge (the chart's hold-rule guard, installed on the testbed as the chart renders it).
// An edit that gets through (a user the guard exempts sets the effect to None) is read for
// what it says: the bridge makes it the hold again, and the pod never gets the job's GPU.
TEST_F(DeviceSafetyE2E, AHoldDeletedOrEditedBySomeoneElseIsRefusedOrPutBack) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 8, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(60))) << daemon_->LogTail();
  const std::string rule = "slurm-hold.node1.gpu-3";

  // Through (the testbed's admin is exempt, as the bridge is): the effect set to None. No
  // pod waits yet, so the moment it takes the bridge to see it cannot hand the GPU out.
  auto effect = [&] {
    return Shell(
               StrCat("kubectl get devicetaintrule ", rule, " -o jsonpath='{.spec.taint.effect}'"))
        .out;
  };
  ASSERT_EQ(Shell(StrCat("kubectl patch devicetaintrule ", rule,
                         " --type=merge -p '{\"spec\":{\"taint\":{\"effect\":\"None\"}}}'"))
                .exit_code,
            0);
  EXPECT_TRUE(WaitFor([&] { return effect() == "NoSchedule"; }, seconds(30)))
      << effect() << daemon_->LogTail();
  EXPECT_THAT(daemon_->LogTail(), HasSubstr("hold_restored node=node1 device=gpu-3"));

  // Anyone else is refused, while a pod waits for a GPU of node1.
  CreateWaitsOnNode1();
  const std::string as_other = "kubectl --as=another-admin --as-group=system:masters ";
  auto deleted = Shell(StrCat(as_other, "delete devicetaintrule ", rule));
  EXPECT_NE(deleted.exit_code, 0) << deleted.out;
  EXPECT_THAT(deleted.err, HasSubstr("is a hold of slurm-k8s-bridge")) << deleted.err;
  auto edited = Shell(StrCat(as_other, "patch devicetaintrule ", rule,
                             " --type=merge -p '{\"spec\":{\"taint\":{\"effect\":\"None\"}}}'"));
  EXPECT_NE(edited.exit_code, 0) << edited.out;
  EXPECT_THAT(edited.err, HasSubstr("only the bridge may update it")) << edited.err;
  auto relabelled = Shell(StrCat(as_other, "label devicetaintrule ", rule,
                                 " app.kubernetes.io/managed-by=someone-else --overwrite"));
  EXPECT_NE(relabelled.exit_code, 0) << relabelled.out;
  const std::string broke = Node1HeldAndWaitsUnplacedFor(seconds(5));
  EXPECT_EQ(broke, "");
  EXPECT_EQ(effect(), "NoSchedule");
  EXPECT_EQ(JobField(keep, "JobState"), "RUNNING");
}

// An admin cancels the placeholder of a give (scancel) while its 2-GPU pod runs on node1
// and the give's victim (8 GPUs, preemptible, requeued, eligible) waits: Slurm starts the
// victim on the pod's GPUs, here while the bridge is paused. The bridge ends it: a new
// placeholder for the pod is pending at the top priority before the victim is requeued at
// once, and takes the GPUs when they free; the pod keeps running, the victim is pending
// again (not lost), and the double booking stops within seconds and does not come back.
TEST_F(DeviceSafetyE2E, APlaceholderCancelledByAnAdminIsReplacedAndTheJobOnItsGpusRequeued) {
  const auto given = GiveInferByPreemptionOnNode1();
  if (HasFailure()) return;
  const std::string& victim = given.first;
  const std::string& before = given.second;
  ASSERT_EQ(JobField(victim, "JobState"), "PENDING") << Shell("squeue").out;
  const int restarts = Restarts(victim);
  const int restored = EventCount("node1", "GiveRestored");
  const int ended = EventCount("node1", "DoubleBookingEnded");
  // The victim eligible now (as after Slurm's requeue delay): when the placeholder goes,
  // Slurm starts it on the pod's GPUs at once (it fits exactly), as in the repro.
  ASSERT_EQ(Shell(StrCat("scontrol update jobid=", victim, " StartTime=now")).exit_code, 0);

  ASSERT_NO_FATAL_FAILURE(CancelWhileTheBridgeIsPaused(before, victim));

  // A new placeholder for the pod runs on node1, and the victim is pending again.
  auto replaced = [&] {
    const std::string now = Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o '%i %N'").out);
    return !now.empty() && now.rfind(before + " ", 0) != 0 &&
           now.find(" node1") != std::string::npos && JobField(victim, "JobState") == "PENDING";
  };
  ASSERT_TRUE(WaitFor(replaced, seconds(20)))
      << Placeholders() << "\n"
      << Shell("squeue").out << NodeEvents("node1") << daemon_->LogTail();
  EXPECT_EQ(EventCount("node1", "GiveRestored"), restored + 1) << NodeEvents("node1");
  // Slurm started the victim on the pod's GPUs: requeued once more (not lost), with its
  // Event. (Were the bridge ever faster than slurmctld, nothing would need requeueing and
  // this would say so.)
  EXPECT_EQ(Restarts(victim), restarts + 1) << Shell("squeue").out;
  EXPECT_EQ(EventCount("node1", "DoubleBookingEnded"), ended + 1) << NodeEvents("node1");
  EXPECT_EQ(PodField("infer", ".status.phase"), "Running");

  // From here on nothing is double-booked (the window ends well before the test does) and
  // the pod keeps its placeholder.
  const std::string broke = HoldsFor(
      [&]() -> std::string {
        if (PodField("infer", ".status.phase") != "Running") return "the pod stopped";
        if (JobField(victim, "JobState") == "RUNNING") return "the victim runs again";
        return Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o %i").out).empty()
                   ? "no placeholder runs"
                   : "";
      },
      seconds(25));
  EXPECT_EQ(broke, "") << Placeholders() << "\n" << Shell("squeue").out << daemon_->LogTail();
}

// As above, but the job Slurm starts on the pod's GPUs may not be preempted (an 8-GPU job
// pinned to node1, submitted while the give ran; the give's own victim is held): one of the
// two must go and the job may not, so the pod is evicted. The job keeps running, the
// victim is still pending (not lost), and the double booking ends within seconds.
TEST_F(DeviceSafetyE2E, APodOnALostGivesGpusIsEvictedWhenTheJobSlurmStartedThereMayNotBePreempted) {
  const auto given = GiveInferByPreemptionOnNode1();
  if (HasFailure()) return;
  const std::string& victim = given.first;
  const std::string& before = given.second;
  ASSERT_EQ(Shell(StrCat("scontrol hold ", victim)).exit_code, 0);
  const std::string strict = SubmitOn("node1", 8, /*preemptible=*/false);
  ASSERT_TRUE(WaitFor([&] { return JobField(strict, "JobState") == "PENDING"; }, seconds(20)));
  const int ended = EventCount("node1", "DoubleBookingEnded");

  ASSERT_NO_FATAL_FAILURE(CancelWhileTheBridgeIsPaused(before, strict));

  // The pod goes (evicted: a bare pod is deleted), the job stays.
  ASSERT_TRUE(WaitFor([&] { return Shell("kubectl get pod infer -n default").exit_code != 0; },
                      seconds(30)))
      << Shell("kubectl get pod infer -n default -o wide").out << NodeEvents("node1")
      << daemon_->LogTail();
  EXPECT_EQ(EventCount("node1", "DoubleBookingEnded"), ended + 1) << NodeEvents("node1");
  EXPECT_THAT(NodeEvents("node1"), HasSubstr("which may not be preempted"));
  EXPECT_EQ(JobField(strict, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(strict), 0);
  EXPECT_EQ(JobField(victim, "JobState"), "PENDING") << "not lost";
  // The pod's GPUs held for Slurm again: all of node1's.
  EXPECT_TRUE(WaitFor([&] { return HoldsOn("node1") == 8; }, seconds(30)))
      << Shell("kubectl get devicetaintrules").out << daemon_->LogTail();
  Shell(StrCat("scontrol release ", victim));
}

// node1 fails under a give (its slurmd stopped, and the admin sets it DOWN, as slurmctld does
// once a node stops answering): slurmctld ends every job on it, the give's placeholder among
// them (NODE_FAIL; a placeholder is never requeued), while the give's 2-GPU pod keeps running
// and the give's victim (8 GPUs, preemptible, eligible) waits. Were nothing done, the victim
// would start on the pod's GPUs as soon as node1 is back (it fits exactly). The bridge
// restores the hold while node1 is down: a new placeholder for the pod, pending at the top
// priority, which Slurm starts first when node1 is back (slurmd started, the node resumed).
// The victim stays pending (never started on the pod's GPUs, not lost), and nothing is
// double-booked at any moment (no window is declared).
TEST_F(DeviceSafetyE2E, APlaceholderEndedByANodeFailureIsReplacedBeforeTheNodeIsBack) {
  struct Back {
    ~Back() {
      testbed::TestbedCommand({"start", "slurmd-node1"});
      Shell("scontrol update nodename=node1 state=resume 2>/dev/null");
    }
  } back;
  const auto given = GiveInferByPreemptionOnNode1();
  if (HasFailure()) return;
  const std::string& victim = given.first;
  const std::string& before = given.second;
  ASSERT_EQ(JobField(victim, "JobState"), "PENDING") << Shell("squeue").out;
  const int restarts = Restarts(victim);
  const int restored = EventCount("node1", "GiveRestored");
  ASSERT_EQ(Shell(StrCat("scontrol update jobid=", victim, " StartTime=now")).exit_code, 0);

  const auto stopped = testbed::TestbedCommand({"stop", "slurmd-node1"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  ASSERT_EQ(Shell("scontrol update nodename=node1 state=down reason=skb-e2e-node-failed").exit_code,
            0);
  ASSERT_TRUE(WaitFor([&] { return JobField(before, "JobState") == "NODE_FAIL"; }, seconds(30)))
      << Shell(StrCat("scontrol show job ", before)).out;
  // While node1 is down: a new placeholder for the pod, pending, and its Event.
  auto pending_new = [&] {
    const std::string now = Trim(Shell("squeue -h -n skb-gpu-hold -t PENDING -o %i").out);
    return !now.empty() && now != before;
  };
  ASSERT_TRUE(WaitFor(pending_new, seconds(30)))
      << Placeholders() << "\n"
      << Shell("squeue; sinfo -N").out << NodeEvents("node1") << daemon_->LogTail();
  EXPECT_EQ(EventCount("node1", "GiveRestored"), restored + 1) << NodeEvents("node1");
  EXPECT_EQ(PodField("infer", ".status.phase"), "Running");
  EXPECT_EQ(JobField(victim, "JobState"), "PENDING");

  // node1 back: slurmd started (ReturnToService=2 returns it on registration), resumed.
  const auto started = testbed::TestbedCommand({"start", "slurmd-node1"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  Shell("scontrol update nodename=node1 state=resume 2>/dev/null");
  // Slurm starts the new placeholder on node1 first; the victim stays pending.
  auto replaced = [&] {
    const std::string now = Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o '%i %N'").out);
    return !now.empty() && now.find(" node1") != std::string::npos;
  };
  ASSERT_TRUE(WaitFor(replaced, seconds(60)))
      << Placeholders() << "\n"
      << Shell("squeue; sinfo -N").out << NodeEvents("node1") << daemon_->LogTail();
  const std::string broke = HoldsFor(
      [&]() -> std::string {
        if (PodField("infer", ".status.phase") != "Running") return "the pod stopped";
        if (JobField(victim, "JobState") != "PENDING") {
          return StrCat("the victim is ", JobField(victim, "JobState"));
        }
        return Trim(Shell("squeue -h -n skb-gpu-hold -t RUNNING -o %i").out).empty()
                   ? "no placeholder runs"
                   : "";
      },
      seconds(15));
  EXPECT_EQ(broke, "") << Placeholders() << "\n" << Shell("squeue").out << daemon_->LogTail();
  EXPECT_EQ(Restarts(victim), restarts) << "the victim was started on the pod's GPUs";
}

}  // namespace
}  // namespace skb::lending_e2e

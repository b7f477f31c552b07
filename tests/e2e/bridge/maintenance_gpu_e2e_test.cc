// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle (src/health/maintenance.h) on a node shared GPU by GPU (the testbed in
// dra mode): a pod holding two of node1's GPUs through a ResourceClaim (the device lane's
// placeholder holds them in Slurm) beside a requeueable Slurm job on four others. Both
// schedulers drain: the pod is evicted and its GPUs go back to Slurm (the placeholder ends,
// or Slurm would never see the node idle), the job is requeued after the deadline; Slurm
// reboots the node, the check job passes, and the node serves both again: the job runs there
// again and a new pod lands there. Read with kubectl, scontrol and squeue; the per-device
// sampler and the oracle watch throughout.
#include "tests/e2e/bridge/gpu_sharing_fixture.h"
#include "tests/e2e/bridge/maintenance_fixture.h"

namespace skb::lending_e2e {
namespace {

class MaintenanceGpuE2E : public MaintenanceFixture<GpuSharingE2E> {
 protected:
  // node1: FillOtherNodes keeps every other node full of work no give may take.
  MaintenanceGpuE2E() : MaintenanceFixture("node1") {}

  bool PodGone(const std::string& name) {
    return Shell(StrCat("kubectl get pod -n default ", name, " --no-headers 2>&1"))
               .out.find("NotFound") != std::string::npos;
  }
};

TEST_F(MaintenanceGpuE2E, APodAndAJobOnASharedNodeDrainTheNodeRebootsAndBothComeBack) {
  ApplyClaimTemplate("skb-e2e-maint-gpus", "gpu", "gpu.nvidia.com", 2);
  FillOtherNodes();
  const std::string job = SubmitOn(node_, 4, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_NO_FATAL_FAILURE(CreateClaimPod("maint-1", "skb-e2e-maint-gpus"));
  ASSERT_GE(SecondsUntilRunning("maint-1", seconds(90)), 0)
      << Shell("kubectl describe pod maint-1").out << Placeholders() << "\n"
      << daemon_->LogTail();
  ASSERT_EQ(PodField("maint-1", ".spec.nodeName"), node_);
  EXPECT_THAT(Placeholders(), HasSubstr(StrCat("RUNNING ", node_)));
  EXPECT_EQ(HoldsOn(node_), 6);
  EXPECT_EQ(Restarts(job), 0) << "the pod took idle GPUs";
  const long boot_before = BootTime();
  ASSERT_GT(boot_before, 0) << "Slurm shows no BootTime of the node";
  const int reboots_before = Reboots();

  const auto asked = Steady::now();
  auto r = Bridgectl({"maintenance", "reboot", node_, "--reason", "e2e driver 580"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("True/Draining", seconds(20)));
  EXPECT_TRUE(WaitFor([&] { return !InService(); }, seconds(20))) << SlurmState();
  EXPECT_TRUE(WaitFor([&] { return Tainted(); }, seconds(20))) << Taints();
  // The pod is evicted and its GPUs go back to Slurm; the job keeps running to the deadline.
  EXPECT_TRUE(WaitFor([&] { return PodGone("maint-1"); }, seconds(30)))
      << Shell("kubectl get pod -n default maint-1 -o wide").out;
  ASSERT_TRUE(WaitPhase("True/Rebooting", seconds(90)));
  EXPECT_EQ(Placeholders(), "") << "the placeholder outlived the drain";
  EXPECT_GE(Restarts(job), 1) << "the job was requeued at the deadline";
  ASSERT_TRUE(WaitPhase("True/Checking", seconds(90)));
  EXPECT_TRUE(RebootedSince(boot_before))
      << "Slurm saw the node boot again: BootTime " << BootTime() << ", before " << boot_before;
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(90)));
  PrintPhases("maintenance cycle on a shared node", asked);
  EXPECT_EQ(Reboots(), reboots_before + 1);

  // Back to both: the job runs on the node again, every device is Slurm's (held from new
  // claims), and a new pod gets two of them.
  ExpectGivenBack();
  ExpectRunsAgain(job);
  EXPECT_TRUE(WaitFor([&] { return HoldsOn(node_) == 8; }, seconds(30)))
      << Shell("kubectl get devicetaintrules").out;
  ASSERT_NO_FATAL_FAILURE(CreateClaimPod("maint-2", "skb-e2e-maint-gpus"));
  const double took = SecondsUntilRunning("maint-2", seconds(90));
  ASSERT_GE(took, 0) << Shell("kubectl describe pod maint-2").out << Placeholders() << "\n"
                     << Shell("squeue").out << daemon_->LogTail();
  std::printf("a new pod after the cycle -> Running: %.2f s\n", took);
  EXPECT_EQ(PodField("maint-2", ".spec.nodeName"), node_);
  EXPECT_EQ(JobField(job, "JobState"), "RUNNING");
  const std::string events = NodeEvents(node_);
  for (const char* reason : {"MaintenanceEviction", "GpusReturned", "MaintenanceDeadlinePassed",
                             "SlurmNodeRebootRequested", "MaintenanceCompleted"}) {
    EXPECT_THAT(events, HasSubstr(reason)) << events;
  }
}

}  // namespace
}  // namespace skb::lending_e2e

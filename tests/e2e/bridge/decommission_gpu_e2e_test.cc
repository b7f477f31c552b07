// SPDX-License-Identifier: Apache-2.0
// `slurm-k8s-bridge --decommission` on a node shared GPU by GPU (label dra), in the middle of
// a give: a pod runs on two of node1's GPUs beside a non-preemptible and a preemptible job,
// and a second pod waits for the preemptible job's GPUs (signalled, in its grace). The
// decommission keeps both schedulers' work running and closes the node to both, and leaves
// nothing of the bridge (read with kubectl, sinfo and squeue); the per-device sampler and
// the oracle look for the whole test.
#include "tests/e2e/bridge/decommission_checks.h"
#include "tests/e2e/bridge/gpu_sharing_fixture.h"

namespace skb::lending_e2e {
namespace {

class DecommissionGpuE2E : public GpuSharingE2E {
 protected:
  // The give's victim stays in its grace while the bridge is stopped.
  DecommissionGpuE2E() { extra_overlay_["lending"] = {{"default_grace", "120s"}}; }
};

TEST_F(DecommissionGpuE2E, MidGiveOnASharedNodeEachSideKeepsItsWorkAndNeitherTakesMore) {
  FillOtherNodes();
  const std::string keep = SubmitOn("node1", 4, /*preemptible=*/false);
  const std::string take = SubmitOn("node1", 2, /*preemptible=*/true);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  CreatePod("share-1", 2);  // node1's two idle GPUs, no preemption
  ASSERT_GE(SecondsUntilRunning("share-1", seconds(60)), 0)
      << Shell("kubectl describe pod share-1").out << Placeholders() << daemon_->LogTail();
  ASSERT_EQ(PodField("share-1", ".spec.nodeName"), "node1");
  CreatePod("give-2", 2);  // only the preemptible job's GPUs can serve it
  ASSERT_TRUE(WaitFor([&] { return !Signals(take).empty(); }, seconds(60)))
      << Placeholders() << "\n"
      << Shell("squeue").out << daemon_->LogTail();
  daemon_->Stop();

  auto run = RunCommand(
      {skb::testbed::DaemonBinary(), "--config", daemon_->ConfigPath(), "--decommission"},
      seconds(120));
  std::printf("%s", run.out.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("node1: shared (Slurm jobs "));
  EXPECT_THAT(run.out, HasSubstr("pod default/share-1 uses its GPUs"));
  EXPECT_EQ(decommission_e2e::LeftOfTheBridge(), "");

  // No job lost, none moved: the victim was signalled, never requeued.
  for (const auto& id : jobs_) EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << "job " << id;
  EXPECT_EQ(Restarts(take), 0);
  EXPECT_EQ(Signals(keep), "");
  EXPECT_EQ(PodField("share-1", ".status.phase"), "Running");
  // node1 closed to both: cordoned, and drained in Slurm in the site's words.
  EXPECT_EQ(Trim(Shell("kubectl get node node1 -o jsonpath={.spec.unschedulable}").out), "true");
  EXPECT_THAT(Trim(Shell("sinfo -h -N -n node1 -o %E | head -1").out),
              HasSubstr("decommissioned: shared by both schedulers"));
  // Neither scheduler takes more of node1 (10 s, the samplers throughout): the waiting pod
  // stays pending, a 1-GPU job for node1 waits.
  const std::string more = SubmitOn("node1", 1, /*preemptible=*/true);
  EXPECT_EQ(HoldsFor(
                [&] {
                  if (PodField("give-2", ".status.phase") == "Running")
                    return std::string("give-2 runs");
                  if (JobField(more, "JobState") == "RUNNING") return StrCat("job ", more, " runs");
                  return std::string();
                },
                seconds(10)),
            "");
}

}  // namespace
}  // namespace skb::lending_e2e

// SPDX-License-Identifier: Apache-2.0
// `slurm-k8s-bridge --decommission` on the testbed, run in the middle of the flows it must
// not break: every job keeps running or waiting (none lost), no GPU goes to both schedulers
// (the sampler and the oracle look for the whole test, the decommission included), and
// afterwards nothing of the bridge is left, as an operator would look for it with kubectl,
// sinfo and squeue -- never through the bridge's own readers.
#include "tests/e2e/bridge/decommission_checks.h"
#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

class DecommissionE2E : public LendingE2E {
 protected:
  // A grace long enough that the lend is still under way (the victim signalled, not yet
  // requeued) when the bridge is stopped.
  DecommissionE2E() { extra_overlay_ = {{"lending", {{"default_grace", "120s"}}}}; }

  testbed::CommandResult Decommission(const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = {skb::testbed::DaemonBinary(), "--config",
                                     daemon_->ConfigPath(), "--decommission"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv, seconds(120));
  }
};

TEST_F(DecommissionE2E, MidLendEveryJobRunsOnItsNodeStaysSlurmsAndNothingOfTheBridgeIsLeft) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  CreateInferencePod("infer-a");
  // The lend under way: kube-scheduler preempted a reservation, the bridge drained the node
  // and signalled its job, which is in its grace.
  std::string victim;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : jobs_) {
          if (!Signals(id).empty()) victim = id;
        }
        return !victim.empty();
      },
      seconds(60)))
      << Shell("kubectl get pods -A -o wide; squeue").out << daemon_->LogTail();
  const std::string node = JobNode(victim);
  ASSERT_FALSE(node.empty());
  EXPECT_THAT(Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out),
              HasSubstr("k8s-bridge: lent to default/infer-a"));
  daemon_->Stop();

  // What it would do, then the run.
  auto dry = Decommission({"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_THAT(dry.out, HasSubstr(StrCat("would cordon ", node, " in Kubernetes")));
  EXPECT_NE(decommission_e2e::LeftOfTheBridge(), "") << "the dry run changed something";
  auto run = Decommission();
  std::printf("%s", run.out.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(StrCat(node, ": Slurm's (Slurm job ", victim, " runs there)")));
  EXPECT_EQ(decommission_e2e::LeftOfTheBridge(), "");

  // No job lost: each runs where it ran, the victim too (signalled, never requeued).
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << "job " << id;
  }
  EXPECT_EQ(Restarts(victim), 0);
  EXPECT_EQ(JobNode(victim), node);
  // The node stays Slurm's: cordoned, so the pod that was to take it waits (looked at for
  // 10 s; the sampler and the oracle look throughout).
  EXPECT_EQ(
      Trim(Shell(StrCat("kubectl get node ", node, " -o jsonpath={.spec.unschedulable}")).out),
      "true");
  EXPECT_EQ(HoldsFor(
                [&] {
                  const std::string phase = PodField("infer-a", ".status.phase");
                  return phase == "Running"
                             ? StrCat("infer-a runs on ", PodField("infer-a", ".spec.nodeName"))
                             : "";
                },
                seconds(10)),
            "");
  // Slurm places work on the node as before the bridge: its lend drain was resumed.
  EXPECT_THAT(Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out),
              ::testing::Not(HasSubstr("k8s-bridge")));

  // A second run finds nothing to do.
  auto again = Decommission();
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing of the bridge is left"));
}

TEST_F(DecommissionE2E, ALentNodeStaysKubernetesWithItsPodAndSlurmKeepsOffIt) {
  // One job fewer than nodes: the pod takes the idle node, lent without a preemption.
  const int busy = testbed::TestbedNodeCount() - 1;
  for (int i = 0; i < busy; ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  // The idle node's reservation is the cheapest victim once the classes follow the jobs.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = ReservationClasses();
        return c["slurm-preemptible"] == busy && c["slurm-idle"] == 1;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  CreateInferencePod("infer-b");
  ASSERT_TRUE(
      WaitFor([&] { return PodField("infer-b", ".status.phase") == "Running"; }, seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  const std::string node = PodField("infer-b", ".spec.nodeName");
  daemon_->Stop();

  auto run = Decommission();
  std::printf("%s", run.out.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(StrCat(node, ": Kubernetes' (pod default/infer-b uses its GPUs)")));
  EXPECT_EQ(decommission_e2e::LeftOfTheBridge(), "");
  // The pod runs on; Slurm keeps off its node, drained in the site's words.
  EXPECT_EQ(PodField("infer-b", ".status.phase"), "Running");
  EXPECT_THAT(Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out),
              HasSubstr("decommissioned: held by Kubernetes: pod default/infer-b uses its GPUs"));
  // A job that fits only there waits rather than joining the pod's GPUs (10 s).
  const std::string waiting = Submit("gpu");
  EXPECT_EQ(HoldsFor(
                [&] {
                  const std::string where = JobNode(waiting);
                  return where.empty() ? "" : StrCat("job ", waiting, " started on ", where);
                },
                seconds(10)),
            "");
  for (const auto& id : jobs_) {
    const std::string state = JobField(id, "JobState");
    EXPECT_TRUE(state == "RUNNING" || state == "PENDING") << "job " << id << " " << state;
  }
}

TEST_F(DecommissionE2E, ItRefusesWhileABridgeHoldsTheLease) {
  // A bridge elected through its Lease: the decommission sees it renewed and changes nothing.
  daemon_->Stop();
  daemon_ = std::make_unique<testbed::BridgeDaemon>(skb::testbed::DaemonBinary(), overlay_,
                                                    std::vector<std::string>{"--identity", "b1"});
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "b1"; }, seconds(30)));
  const std::string before = decommission_e2e::LeftOfTheBridge();
  auto run = Decommission();
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("a bridge is running"));
  EXPECT_THAT(run.err, HasSubstr("'b1'"));
  EXPECT_EQ(decommission_e2e::LeftOfTheBridge(), before);
}

}  // namespace
}  // namespace skb::lending_e2e

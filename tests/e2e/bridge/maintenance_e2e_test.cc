// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle (src/health/maintenance.h) end to end on the testbed, asked for as
// an admin asks (`bridgectl maintenance reboot`) and read back as an admin reads it (kubectl,
// scontrol, sinfo): a node with a running Slurm job drains in both schedulers, its job is
// requeued after the deadline (not lost: it runs again on the node once it is back), Slurm
// reboots the node through the testbed's RebootProgram (its slurmd killed and started with a
// new boot time), the check job runs inside the maintenance reservation, and the node is
// given back; a check that fails keeps the node out until `bridgectl maintenance retry`; a
// bridge killed after a step of any phase finishes the cycle after a restart. The same cycle
// on a node shared GPU by GPU: maintenance_gpu_e2e_test.cc.
//
// The lending fixture's sampler and oracle watch invariant 1 throughout. Node: node3.
#include <filesystem>
#include <fstream>

#include "tests/e2e/bridge/maintenance_fixture.h"

namespace skb::lending_e2e {
namespace {

class MaintenanceE2E : public MaintenanceFixture<LendingE2E> {
 protected:
  MaintenanceE2E() : MaintenanceFixture("node3") {}

  // From Draining to Checking, with requeueable job `job` on the node at the start.
  void RunsThroughCheckingFrom(const std::string& job, long boot_before) {
    ASSERT_TRUE(WaitPhase("True/Rebooting", seconds(60)));
    EXPECT_GE(Restarts(job), 1) << "the job was requeued at the deadline";
    ASSERT_TRUE(WaitPhase("True/Checking", seconds(90)));
    EXPECT_TRUE(RebootedSince(boot_before))
        << "Slurm saw the node boot again: BootTime " << BootTime() << ", before " << boot_before;
  }

  // A requeueable whole-node job running on the node.
  std::string RunningJob() {
    const std::string job = Submit("gpu", {"USR1"}, {"-w", node_});
    EXPECT_TRUE(WaitFor([&] { return JobField(job, "JobState") == "RUNNING"; }, seconds(60)))
        << Shell("squeue").out;
    return job;
  }
};

TEST_F(MaintenanceE2E, ARebootRequestDrainsRebootsChecksAndGivesTheNodeBackWithItsJob) {
  const std::string job = RunningJob();
  if (HasFailure()) return;
  const long boot_before = BootTime();
  ASSERT_GT(boot_before, 0) << "Slurm shows no BootTime of the node";

  const auto asked = Steady::now();
  auto r = Bridgectl({"maintenance", "reboot", node_, "--reason", "e2e firmware 2.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Draining: Slurm drained with the request's words, the node tainted, the job kept until
  // the deadline.
  ASSERT_TRUE(WaitPhase("True/Draining", seconds(20)));
  ASSERT_TRUE(WaitFor([&] { return !InService(); }, seconds(20))) << SlurmState();
  EXPECT_THAT(SlurmState(), HasSubstr("e2e firmware 2.1"));
  EXPECT_TRUE(WaitFor([&] { return Tainted(); }, seconds(20))) << Taints();
  EXPECT_EQ(JobField(job, "JobState"), "RUNNING") << "the job gets the deadline";

  RunsThroughCheckingFrom(job, boot_before);
  if (HasFatalFailure()) return;
  EXPECT_THAT(Reservations(), HasSubstr(StrCat("skb-maint-", node_)));
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(90)));
  // The cycle's own steps beside the deadline (4 s), the reboot (3 s powered off) and the
  // check job (its time in Slurm: scheduling, slurmd's prolog and the command): read from
  // when each phase first showed (100 ms polls of kubectl).
  const std::string check_id =
      Trim(Shell("squeue -h -a -n skb-maint-check -t all -o %i | tail -1").out);
  PrintPhases("maintenance cycle", asked);
  std::printf("check job %s: %s to %s\n", check_id.c_str(), JobField(check_id, "StartTime").c_str(),
              JobField(check_id, "EndTime").c_str());

  // Given back, and the requeued job runs on the node again.
  ExpectGivenBack();
  ExpectRunsAgain(job);
  const std::string events = NodeEvents(node_);
  for (const char* reason :
       {"MaintenanceDraining", "MaintenanceDeadlinePassed", "MaintenanceRebooting",
        "SlurmNodeRebootRequested", "MaintenanceChecking", "MaintenanceCheckSubmitted",
        "MaintenanceCompleted"}) {
    EXPECT_THAT(events, HasSubstr(reason)) << events;
  }
}

TEST_F(MaintenanceE2E, AFailedCheckKeepsTheNodeOutUntilRetried) {
  std::filesystem::create_directories(std::filesystem::path(check_fails_).parent_path());
  std::ofstream(check_fails_) << "e2e: ECC errors on GPU 5\n";
  auto r = Bridgectl({"maintenance", "reboot", node_, "--reason", "e2e memory test"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("True/CheckFailed", seconds(120)));
  // Out of both schedulers, and it stays so.
  const std::string held = HoldsFor(
      [&]() -> std::string {
        if (SlurmState().find("drain") == std::string::npos) return "resumed: " + SlurmState();
        if (!Tainted()) return "untainted";
        if (Condition("SlurmMaintenance") != "True/CheckFailed") {
          return "phase " + Condition("SlurmMaintenance");
        }
        return "";
      },
      seconds(5));
  EXPECT_EQ(held, "");
  EXPECT_THAT(SlurmState(), HasSubstr("CheckFailed"));
  EXPECT_THAT(NodeEvents(node_), HasSubstr("MaintenanceCheckFailed"));
  EXPECT_THAT(Reservations(), ::testing::Not(HasSubstr("skb-maint-")));

  // Mended: a retry runs the cycle again, and this time the node comes back.
  std::filesystem::remove(check_fails_);
  r = Bridgectl({"maintenance", "retry", node_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(150)));
  EXPECT_EQ(Condition("RebootRequested"), "False/MaintenanceCompleted");
  EXPECT_TRUE(WaitFor([&] { return InService(); }, seconds(20))) << SlurmState();
}

// The bridge killed (SIGKILL) right after one step of the cycle, with a requeueable job on
// the node, and started again 2 s later: the restarted bridge reads the phase back from the
// node's condition and Slurm's own state and finishes the cycle, rebooting the node once,
// running one check job, and the job runs on the node again.
struct CrashPoint {
  const char* phase;  // the phase the step belongs to
  const char* after;  // the step's Event reason (SKB_TEST_CRASH_AFTER)
};
void PrintTo(const CrashPoint& c, std::ostream* os) { *os << c.phase << "/" << c.after; }

class MaintenanceCrashE2E : public MaintenanceE2E,
                            public ::testing::WithParamInterface<CrashPoint> {};

TEST_P(MaintenanceCrashE2E, TheRestartedBridgeFinishesTheCycleOnceWithoutLosingTheJob) {
  const std::string job = RunningJob();
  if (HasFailure()) return;
  RestartArmedToCrashAfter(GetParam().after);
  if (HasFatalFailure()) return;
  const long boot_before = BootTime();
  ASSERT_GT(boot_before, 0) << "Slurm shows no BootTime of the node";
  const int reboots_before = Reboots();
  const std::set<std::string> checks_before = CheckJobs();
  const auto asked = Steady::now();
  auto r = Bridgectl({"maintenance", "reboot", node_, "--reason", "e2e kernel"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  AwaitCrashThenRestart(GetParam().after, seconds(60), [&] {
    EXPECT_EQ(Condition("SlurmMaintenance"), StrCat("True/", GetParam().phase))
        << "killed in another phase";
  });
  if (HasFatalFailure()) return;
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(120)));
  std::printf("killed after %s: %.1f s from the request to Completed\n", GetParam().after,
              std::chrono::duration<double>(seen_["False/Completed"] - asked).count());
  EXPECT_TRUE(RebootedSince(boot_before))
      << "BootTime " << BootTime() << ", before " << boot_before;
  ExpectGivenBack();
  ExpectRunsAgain(job);
  // Rebooted once: the restarted bridge did not ask Slurm again; one check job ran.
  EXPECT_EQ(Reboots(), reboots_before + 1);
  std::vector<std::string> checks;
  for (const std::string& id : CheckJobs()) {
    if (!checks_before.count(id)) checks.push_back(id);
  }
  EXPECT_EQ(checks.size(), 1u) << StrJoin(checks, ", ");
}

INSTANTIATE_TEST_SUITE_P(EachPhase, MaintenanceCrashE2E,
                         ::testing::Values(CrashPoint{"Draining", "MaintenanceDraining"},
                                           CrashPoint{"Draining", "MaintenanceDeadlinePassed"},
                                           CrashPoint{"Rebooting", "MaintenanceRebooting"},
                                           CrashPoint{"Rebooting", "SlurmNodeRebootRequested"},
                                           CrashPoint{"Checking", "MaintenanceChecking"},
                                           CrashPoint{"Checking", "MaintenanceCheckSubmitted"}),
                         [](const auto& p) { return std::string(p.param.after); });

}  // namespace
}  // namespace skb::lending_e2e

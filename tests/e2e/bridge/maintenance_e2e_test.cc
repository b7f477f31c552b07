// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle (src/health/maintenance.h) end to end on the testbed, asked for as
// an admin asks (`bridgectl maintenance reboot`) and read back as an admin reads it (kubectl,
// scontrol, sinfo): a node with a running Slurm job drains in both schedulers, its job is
// requeued after the deadline (not lost: it runs again on the node once it is back), Slurm
// reboots the node through the testbed's RebootProgram (its slurmd killed and started with a
// new boot time), the check job runs inside the maintenance reservation, and the node is
// given back; a check that fails keeps the node out until `bridgectl maintenance retry`; a
// bridge killed once the reboot is asked for finishes the cycle after a restart.
//
// The lending fixture's sampler and oracle watch invariant 1 throughout. Node: node3.
#include <filesystem>
#include <fstream>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

constexpr char kNode[] = "node3";

class MaintenanceE2E : public LendingE2E {
 protected:
  void SetUp() override {
    const char* check = std::getenv("SKB_TESTBED_CHECK_COMMAND");
    ASSERT_NE(check, nullptr) << "SKB_TESTBED_CHECK_COMMAND not set: a testbed from before the "
                                 "maintenance cycle? scripts/testbed down && scripts/testbed up";
    check_fails_ = StrCat(*testbed::TestbedDir(), "/node-state/", kNode, ".check-fails");
    // Short phases: jobs get 4 s, a reboot here takes ~3 s.
    extra_overlay_ = {{"health",
                       {{"maintenance",
                         {{"deadline", "4s"},
                          {"drain_timeout", "2m"},
                          {"reboot", {{"by", "slurm"}, {"timeout", "2m"}}},
                          {"check", {{"command", check}, {"timeout", "1m"}}}}}}}};
    LendingE2E::SetUp();
  }

  void TearDown() override {
    std::filesystem::remove(check_fails_);
    LendingE2E::TearDown();
  }

  // The node's condition of `type` as "Status/Reason", "" when absent.
  static std::string Condition(const std::string& type) {
    std::string s = Trim(
        RunCommand({"kubectl", "get", "node", kNode, "-o",
                    StrCat("jsonpath={.status.conditions[?(@.type==\"", type,
                           "\")].status}/{.status.conditions[?(@.type==\"", type, "\")].reason}")},
                   seconds(30))
            .out);
    return s == "/" ? "" : s;
  }

  static std::string Taints() {
    return RunCommand({"kubectl", "get", "node", kNode, "-o", "jsonpath={.spec.taints[*].key}"},
                      seconds(30))
        .out;
  }

  // sinfo's "STATE|REASON" of the node ("drained|k8s-bridge: ...").
  static std::string SlurmState() {
    return Trim(Shell(StrCat("sinfo -h -N -n ", kNode, " -o '%T|%E' | head -1")).out);
  }

  static std::string BootTime() {
    std::string out = Shell(StrCat("scontrol show node ", kNode)).out;
    auto at = out.find("BootTime=");
    return at == std::string::npos ? "" : out.substr(at + 9, out.find_first_of(" \n", at) - at - 9);
  }

  static std::string Reservations() {
    return Shell("scontrol -o show reservation 2>/dev/null | grep -o 'ReservationName=[^ ]*'").out;
  }

  // How often slurmd ran the testbed's RebootProgram for the node.
  static int Reboots() {
    return std::atoi(Trim(Shell(StrCat("grep -c 'slurmd asks to reboot ", kNode, "$' ",
                                       *testbed::TestbedDir(), "/logs/reboot.log 2>/dev/null"))
                              .out)
                         .c_str());
  }

  testbed::CommandResult Bridgectl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {skb::testbed::BridgectlBinary(), "--socket",
                                     daemon_->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(30));
  }

  // Waits for SlurmMaintenance to read `want` ("True/Checking", "False/Completed"), up to
  // `limit`; the message says where it stood.
  ::testing::AssertionResult WaitPhase(const std::string& want, seconds limit) {
    if (WaitFor([&] { return Condition("SlurmMaintenance") == want; }, limit, milliseconds(100))) {
      seen_[want] = Steady::now();
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "SlurmMaintenance is '" << Condition("SlurmMaintenance") << "', not '" << want
           << "' after " << limit.count() << " s; Slurm: " << SlurmState()
           << "; reservations: " << Reservations() << "\n"
           << Shell("squeue -a -o '%i %j %T %N %r'").out << daemon_->LogTail(3000);
  }

  // The whole cycle, from a request to the node given back, with a requeueable job on the
  // node at the start (returns its id).
  void RunsThroughCheckingFrom(const std::string& job, const std::string& boot_before) {
    ASSERT_TRUE(WaitPhase("True/Rebooting", seconds(60)));
    EXPECT_GE(Restarts(job), 1) << "the job was requeued at the deadline";
    ASSERT_TRUE(WaitPhase("True/Checking", seconds(90)));
    EXPECT_NE(BootTime(), boot_before) << "Slurm saw the node boot again";
  }

  // Seconds from the phase `from` was first seen to `to` (as WaitPhase saw them).
  double Between(const std::string& from, const std::string& to) {
    return std::chrono::duration<double>(seen_[to] - seen_[from]).count();
  }

  std::string check_fails_;
  std::map<std::string, Steady::time_point> seen_;  // when WaitPhase first saw each phase
};

TEST_F(MaintenanceE2E, ARebootRequestDrainsRebootsChecksAndGivesTheNodeBackWithItsJob) {
  const std::string job = Submit("gpu", {"USR1"}, {"-w", kNode});
  ASSERT_TRUE(WaitFor([&] { return JobField(job, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  const std::string boot_before = BootTime();
  ASSERT_FALSE(boot_before.empty());

  const auto asked = Steady::now();
  auto r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e firmware 2.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Draining: Slurm drained with the request's words, the node tainted, the job kept until
  // the deadline.
  ASSERT_TRUE(WaitPhase("True/Draining", seconds(20)));
  ASSERT_TRUE(WaitFor([] { return SlurmState().find("drain") != std::string::npos; }, seconds(20)))
      << SlurmState();
  EXPECT_THAT(SlurmState(), HasSubstr("e2e firmware 2.1"));
  EXPECT_TRUE(
      WaitFor([] { return Taints().find("slurm-k8s-bridge.io/maintenance") != std::string::npos; },
              seconds(20)))
      << Taints();
  EXPECT_EQ(JobField(job, "JobState"), "RUNNING") << "the job gets the deadline";

  RunsThroughCheckingFrom(job, boot_before);
  if (HasFatalFailure()) return;
  EXPECT_THAT(Reservations(), HasSubstr(StrCat("skb-maint-", kNode)));
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(90)));
  // The cycle's own steps beside the deadline (4 s), the reboot (3 s powered off) and the
  // check job (its time in Slurm: scheduling, slurmd's prolog and the command): read from
  // when each phase first showed (100 ms polls of kubectl).
  const std::string check_id =
      Trim(Shell("squeue -h -a -n skb-maint-check -t all -o %i | tail -1").out);
  std::printf(
      "maintenance cycle: %.1f s from the request to Completed: to Draining %.1f s, Draining "
      "%.1f s (deadline 4 s), Rebooting %.1f s, Checking %.1f s (check job %s: %s to %s)\n",
      std::chrono::duration<double>(seen_["False/Completed"] - asked).count(),
      std::chrono::duration<double>(seen_["True/Draining"] - asked).count(),
      Between("True/Draining", "True/Rebooting"), Between("True/Rebooting", "True/Checking"),
      Between("True/Checking", "False/Completed"), check_id.c_str(),
      JobField(check_id, "StartTime").c_str(), JobField(check_id, "EndTime").c_str());

  // Given back: the request closed, resumed in Slurm, untainted, the reservation gone, and
  // the requeued job runs on the node again.
  EXPECT_EQ(Condition("RebootRequested"), "False/MaintenanceCompleted");
  EXPECT_TRUE(WaitFor(
      [] {
        return SlurmState().find("drain") == std::string::npos &&
               SlurmState().find("down") == std::string::npos;
      },
      seconds(20)))
      << SlurmState();
  EXPECT_TRUE(
      WaitFor([] { return Taints().find("slurm-k8s-bridge.io/maintenance") == std::string::npos; },
              seconds(20)))
      << Taints();
  EXPECT_THAT(Reservations(), ::testing::Not(HasSubstr("skb-maint-")));
  EXPECT_TRUE(WaitFor([&] { return JobField(job, "JobState") == "RUNNING"; }, seconds(90)))
      << "job " << job << " after the cycle: " << JobField(job, "JobState") << " "
      << JobField(job, "Reason");
  const std::string events = NodeEvents(kNode);
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
  auto r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e memory test"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("True/CheckFailed", seconds(120)));
  // Out of both schedulers, and it stays so.
  const std::string held = HoldsFor(
      [&]() -> std::string {
        if (SlurmState().find("drain") == std::string::npos) return "resumed: " + SlurmState();
        if (Taints().find("slurm-k8s-bridge.io/maintenance") == std::string::npos) {
          return "untainted";
        }
        if (Condition("SlurmMaintenance") != "True/CheckFailed") {
          return "phase " + Condition("SlurmMaintenance");
        }
        return "";
      },
      seconds(5));
  EXPECT_EQ(held, "");
  EXPECT_THAT(SlurmState(), HasSubstr("CheckFailed"));
  EXPECT_THAT(NodeEvents(kNode), HasSubstr("MaintenanceCheckFailed"));
  EXPECT_THAT(Reservations(), ::testing::Not(HasSubstr("skb-maint-")));

  // Mended: a retry runs the cycle again, and this time the node comes back.
  std::filesystem::remove(check_fails_);
  r = Bridgectl({"maintenance", "retry", kNode});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(150)));
  EXPECT_EQ(Condition("RebootRequested"), "False/MaintenanceCompleted");
  EXPECT_TRUE(WaitFor([] { return SlurmState().find("drain") == std::string::npos; }, seconds(20)))
      << SlurmState();
}

TEST_F(MaintenanceE2E, ABridgeKilledOnceTheRebootIsAskedFinishesTheCycle) {
  RestartArmedToCrashAfter("SlurmNodeRebootRequested");
  if (HasFatalFailure()) return;
  const std::string boot_before = BootTime();
  const int reboots_before = Reboots();
  auto r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e kernel"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  AwaitCrashThenRestart("SlurmNodeRebootRequested", seconds(60));
  if (HasFatalFailure()) return;
  ASSERT_TRUE(WaitPhase("False/Completed", seconds(120)));
  EXPECT_NE(BootTime(), boot_before);
  EXPECT_EQ(Condition("RebootRequested"), "False/MaintenanceCompleted");
  EXPECT_TRUE(WaitFor([] { return SlurmState().find("drain") == std::string::npos; }, seconds(20)))
      << SlurmState();
  // Rebooted once: the restarted bridge did not ask Slurm again.
  EXPECT_EQ(Reboots(), reboots_before + 1);
}

}  // namespace
}  // namespace skb::lending_e2e

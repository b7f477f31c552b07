// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle's e2e fixture (src/health/maintenance.h) over either node fixture:
// LendingE2E (whole nodes, maintenance_e2e_test.cc) or GpuSharingE2E (a node shared GPU by
// GPU, maintenance_gpu_e2e_test.cc). Short phases, and what an admin reads of the cycle:
// the node's conditions and taints with kubectl, its state, boot time and reservations with
// scontrol and sinfo, the testbed's reboot log.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {

template <class Base>
class MaintenanceFixture : public Base {
 protected:
  explicit MaintenanceFixture(std::string node) : node_(std::move(node)) {}

  void SetUp() override {
    const char* check = std::getenv("SKB_TESTBED_CHECK_COMMAND");
    ASSERT_NE(check, nullptr) << "SKB_TESTBED_CHECK_COMMAND not set: a testbed from before the "
                                 "maintenance cycle? scripts/testbed down && scripts/testbed up";
    check_fails_ = StrCat(*testbed::TestbedDir(), "/node-state/", node_, ".check-fails");
    // Short phases: jobs get 4 s, a reboot here takes ~3 s.
    this->extra_overlay_["health"] = {{"maintenance",
                                       {{"deadline", "4s"},
                                        {"drain_timeout", "2m"},
                                        {"reboot", {{"by", "slurm"}, {"timeout", "2m"}}},
                                        {"check", {{"command", check}, {"timeout", "1m"}}}}}};
    Base::SetUp();
  }

  void TearDown() override {
    if (!check_fails_.empty()) std::filesystem::remove(check_fails_);
    Base::TearDown();
  }

  // The node's condition of `type` as "Status/Reason", "" when absent.
  std::string Condition(const std::string& type) const {
    std::string s = Trim(
        RunCommand({"kubectl", "get", "node", node_, "-o",
                    StrCat("jsonpath={.status.conditions[?(@.type==\"", type,
                           "\")].status}/{.status.conditions[?(@.type==\"", type, "\")].reason}")},
                   seconds(30))
            .out);
    return s == "/" ? "" : s;
  }

  std::string Taints() const {
    return RunCommand({"kubectl", "get", "node", node_, "-o", "jsonpath={.spec.taints[*].key}"},
                      seconds(30))
        .out;
  }
  bool Tainted() const {
    return Taints().find("slurm-k8s-bridge.io/maintenance") != std::string::npos;
  }

  // sinfo's "STATE|REASON" of the node ("drained|k8s-bridge: ...").
  std::string SlurmState() const {
    return Trim(Shell(StrCat("sinfo -h -N -n ", node_, " -o '%T|%E' | head -1")).out);
  }
  // Slurm schedules on it again: neither drained nor down.
  bool InService() const {
    const std::string s = SlurmState();
    return s.find("drain") == std::string::npos && s.find("down") == std::string::npos;
  }

  // Slurm's BootTime of the node, in seconds since the epoch (0 when none shows). One boot reads
  // up to a second apart (slurmd sends now less its uptime, in whole seconds, at each
  // registration): a new boot is one more than a second after the old (Rebooted).
  long BootTime() const {
    return std::atol(Trim(Shell(StrCat("t=$(scontrol show node ", node_,
                                       " | grep -o 'BootTime=[^ ]*' | cut -d= -f2); "
                                       "[ -n \"$t\" ] && date -d \"$t\" +%s || echo 0"))
                              .out)
                         .c_str());
  }
  // Slurm shows a boot after `boot_before`. A down node that is resumed shows no BootTime until
  // its slurmd registers again (22.05: "IDLE+NOT_RESPONDING BootTime=None" for about a second,
  // as the bridge resumes a rebooted node): the boot time is waited for, up to 10 s.
  bool RebootedSince(long boot_before) const {
    long now = BootTime();
    for (int i = 0; i < 100 && now == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      now = BootTime();
    }
    return now > boot_before + 1;
  }

  static std::string Reservations() {
    return Shell("scontrol -o show reservation 2>/dev/null | grep -o 'ReservationName=[^ ]*'").out;
  }

  // How often slurmd ran the testbed's RebootProgram for the node.
  int Reboots() const {
    return std::atoi(Trim(Shell(StrCat("grep -c 'slurmd asks to reboot ", node_, "$' ",
                                       *testbed::TestbedDir(), "/logs/reboot.log 2>/dev/null"))
                              .out)
                         .c_str());
  }

  // The ids of the check jobs Slurm still shows (MinJobAge keeps ended ones for 2 minutes).
  static std::set<std::string> CheckJobs() {
    std::set<std::string> out;
    const std::string ids = Shell("squeue -h -a -t all -n skb-maint-check -o %i").out;
    for (const auto& id : StrSplit(ids, '\n', /*skip_empty=*/true)) {
      out.insert(Trim(std::string(id)));
    }
    return out;
  }

  testbed::CommandResult Bridgectl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {skb::testbed::BridgectlBinary(), "--socket",
                                     this->daemon_->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(30));
  }

  // Waits for SlurmMaintenance to read `want` ("True/Checking", "False/Completed"), up to
  // `limit`; the message says where it stood.
  ::testing::AssertionResult WaitPhase(const std::string& want, seconds limit) {
    if (WaitFor([&] { return Condition("SlurmMaintenance") == want; }, limit, milliseconds(100))) {
      seen_.try_emplace(want, Steady::now());
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "SlurmMaintenance is '" << Condition("SlurmMaintenance") << "', not '" << want
           << "' after " << limit.count() << " s; Slurm: " << SlurmState()
           << "; reservations: " << Reservations() << "\n"
           << Shell("squeue -a -o '%i %j %T %N %r'").out << this->daemon_->LogTail(3000);
  }

  // Seconds from the phase `from` was first seen to `to` (as WaitPhase saw them).
  double Between(const std::string& from, const std::string& to) {
    return std::chrono::duration<double>(seen_[to] - seen_[from]).count();
  }

  // The phases' durations as WaitPhase saw them, from `asked` (the request) on.
  void PrintPhases(const char* what, Steady::time_point asked) {
    std::printf(
        "%s: %.1f s from the request to Completed: to Draining %.1f s, Draining %.1f s "
        "(deadline 4 s), Rebooting %.1f s, Checking %.1f s\n",
        what, std::chrono::duration<double>(seen_["False/Completed"] - asked).count(),
        std::chrono::duration<double>(seen_["True/Draining"] - asked).count(),
        Between("True/Draining", "True/Rebooting"), Between("True/Rebooting", "True/Checking"),
        Between("True/Checking", "False/Completed"));
  }

  // Given back once Completed: the request closed, Slurm schedules there, no taint, no
  // maintenance reservation.
  void ExpectGivenBack() {
    EXPECT_EQ(Condition("RebootRequested"), "False/MaintenanceCompleted");
    EXPECT_TRUE(WaitFor([&] { return InService(); }, seconds(20))) << SlurmState();
    EXPECT_TRUE(WaitFor([&] { return !Tainted(); }, seconds(20))) << Taints();
    EXPECT_THAT(Reservations(), ::testing::Not(HasSubstr("skb-maint-")));
  }

  // Job `id` (requeued by the cycle) runs on the node again.
  void ExpectRunsAgain(const std::string& id) {
    EXPECT_GE(this->Restarts(id), 1) << "job " << id << " was requeued at the deadline";
    EXPECT_TRUE(WaitFor([&] { return this->JobField(id, "JobState") == "RUNNING"; }, seconds(90)))
        << "job " << id << " after the cycle: " << this->JobField(id, "JobState") << " "
        << this->JobField(id, "Reason");
    EXPECT_EQ(this->JobField(id, "NodeList"), node_);
  }

  const std::string node_;
  std::string check_fails_;
  std::map<std::string, Steady::time_point> seen_;  // when WaitPhase first saw each phase
};

}  // namespace skb::lending_e2e

// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle's Slurm side (src/health/maintenance.h) against the testbed's real
// slurmctld and slurmd: LibSlurmClient::RebootNode through the testbed's RebootProgram
// (scripts/lib/testbed/reboot-node, a power cycle of the node's slurmd with a new boot time),
// the maintenance reservation, and the check job inside it (scripts/lib/testbed/check-node,
// SKB_TESTBED_CHECK_COMMAND), with what slurmctld shows of each:
//   (a) an idle node is rebooted at once and comes back DOWN, its boot time after the request
//       and its reboot flags cleared; the boot time stays across a slurmd restart;
//   (b) a reboot asked while a job runs waits for the job (ASAP), then happens;
//   (c) the reservation keeps other jobs off the idle node until it is deleted;
//   (d) the check job runs in the reservation and its exit code reads back.
//
// Run after `scripts/testbed up --no-bridge` and `eval "$(scripts/testbed env)"`. Every test
// gives node3 back as it found it: its jobs cancelled, the reservation deleted, a reboot
// still waiting cancelled (one under way is waited for), the node resumed.
#include "src/health/maintenance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "bridge/slurm/libslurm_client.h"
#include "src/base/strings.h"
#include "tests/integration/slurm/slurm_test_util.h"
#include "tests/testbed/testbed_support.h"

namespace skb::bridge::slurm {
namespace {

using skb::slurm::JobState;
using skb::slurm::NodeBaseState;
using skb::testbed::CommandResult;
using skb::testbed::HoldsFor;
using skb::testbed::JobJanitor;
using skb::testbed::RunCommand;
using skb::testbed::Sbatch;
using skb::testbed::WaitFor;
using std::chrono::seconds;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kNode[] = "node3";
constexpr char kReservation[] = "skb-test-maint-node3";
constexpr char kRebootReason[] = "k8s-bridge: maintenance test reboot";
// A reboot here takes ~4 s (3 s powered off); slurmctld gives up after ResumeTimeout (60 s).
constexpr seconds kRebootTimeout{90};

class SlurmMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = skb::testbed::TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = *dir;
    const char* conf = std::getenv("SLURM_CONF");
    ASSERT_NE(conf, nullptr) << "SLURM_CONF not set: eval \"$(scripts/testbed env)\"";
    const char* check = std::getenv("SKB_TESTBED_CHECK_COMMAND");
    ASSERT_NE(check, nullptr) << "SKB_TESTBED_CHECK_COMMAND not set: a testbed from before the "
                                 "maintenance cycle? scripts/testbed down && scripts/testbed up";
    check_command_ = check;
    client_ = std::make_unique<LibSlurmClient>(LibSlurmClient::Options{
        .conf = conf, .call_timeout = seconds(20), .verify_timeout = seconds(10)});
    const CommandResult show = RunCommand({"scontrol", "show", "config"}, seconds(30));
    ASSERT_THAT(show.out, HasSubstr("reboot-node"))
        << "the testbed's slurm.conf has no RebootProgram (started before it had one): "
           "scripts/testbed down && scripts/testbed up";
    // A run that crashed (its TearDown never ran) may have left node3 in any of the states
    // below; every test assumes an idle node3 that takes work.
    Restore();
    ASSERT_TRUE(NodeTakesWork()) << kNode << " does not take work: " << state_;
  }

  void TearDown() override {
    if (client_) Restore();  // SetUp got as far as the client
  }

  // node3 as the tests found it (see the file comment). Bounded: a reboot under way ends
  // within kRebootTimeout.
  void Restore() {
    janitor_.CancelAll();
    for (uint32_t id : check_jobs_) (void)client_->CancelJob(id);
    check_jobs_.clear();
    RunCommand({"scancel", "--quiet", StrCat("--name=", health::kMaintenanceCheckJobName)},
               seconds(30));
    RunCommand({"scancel", "--quiet", "--name=skb-test"}, seconds(30));
    std::filesystem::remove(CheckFailsFile());
    RunCommand({"scontrol", "cancel_reboot", kNode}, seconds(30));
    WaitFor(
        [&] {
          auto n = client_->LoadNode(kNode);
          auto gone = client_->DeleteReservation(kReservation);
          return n.ok() && !n->reboot_requested && !n->reboot_issued && gone.ok();
        },
        kRebootTimeout);
    auto n = client_->LoadNode(kNode);
    if (n.ok() && (n->drain || n->base_state == NodeBaseState::kDown)) {
      RunCommand({"scontrol", "update", StrCat("nodename=", kNode), "state=resume"}, seconds(30));
    }
    NodeTakesWork();
  }

  // Waits until node3 is idle, responding and undrained; state_ says what it was last.
  bool NodeTakesWork() {
    return WaitFor(
        [&] {
          auto n = client_->LoadNode(kNode);
          state_ = n.ok() ? n->StateString() : std::string(n.status().message());
          return n.ok() && !n->Unavailable() && !n->reboot_requested && !n->reboot_issued &&
                 n->base_state == NodeBaseState::kIdle;
        },
        seconds(60));
  }

  std::string CheckFailsFile() const { return StrCat(dir_, "/node-state/", kNode, ".check-fails"); }

  NodeView Node() {
    auto n = client_->LoadNode(kNode);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : NodeView{};
  }

  std::optional<JobView> Job(uint32_t id) {
    auto j = client_->LoadJob(id);
    if (!j.ok()) return std::nullopt;
    return *j;
  }

  // A job on node3 sleeping until cancelled.
  uint32_t SleepJob(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {StrCat("--nodelist=", kNode), "--job-name=skb-test",
                                     "--gres=gpu:1"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--wrap", "sleep 3600"});
    std::string err;
    std::string id = Sbatch(args, &janitor_, &err);
    EXPECT_FALSE(id.empty()) << err;
    return id.empty() ? 0 : static_cast<uint32_t>(std::stoul(id));
  }

  bool WaitState(uint32_t id, JobState want, seconds timeout = seconds(60)) {
    return WaitFor(
        [&] {
          auto j = Job(id);
          return j && j->state == want && !j->completing;
        },
        timeout);
  }

  // Waits until job `id` has ended (and is no longer completing); nullopt when it did not.
  std::optional<JobView> WaitEnded(uint32_t id, seconds timeout = seconds(120)) {
    std::optional<JobView> last;
    const bool ended = WaitFor(
        [&] {
          last = Job(id);
          return last && last->state != JobState::kPending && last->state != JobState::kRunning &&
                 !last->completing;
        },
        timeout);
    if (!ended) return std::nullopt;
    return last;
  }

  // Waits until node3 is back from a reboot asked for at `asked` (boot time after it, reboot
  // flags cleared); returns the node, or nullopt with state_ set.
  std::optional<NodeView> WaitRebooted(std::time_t asked, skb::slurm::UnixTime boot_before) {
    std::optional<NodeView> back;
    const bool done = WaitFor(
        [&] {
          auto n = client_->LoadNode(kNode);
          if (!n.ok()) return false;
          state_ =
              StrCat(n->StateString(), " boot_time=", n->boot_time, " reason='", n->reason, "'");
          if (n->reboot_requested || n->reboot_issued || !n->BootedSince(boot_before) ||
              n->boot_time < asked) {
            return false;
          }
          back = *n;
          return true;
        },
        kRebootTimeout);
    if (!done) return std::nullopt;
    return back;
  }

  CheckJobSpec Check(const std::string& command) {
    return {.node = kNode,
            .reservation = kReservation,
            .command = command,
            .gpus = 8,
            .time_limit_minutes = 5,
            .output = StrCat(dir_, "/logs/maintenance-test-check.out")};
  }

  StatusOr<CheckJobSubmission> SubmitCheck(const CheckJobSpec& spec) {
    StatusOr<CheckJobSubmission> s = client_->SubmitCheckJob(spec);
    if (s.ok()) check_jobs_.push_back(s->job_id);
    return s;
  }

  static std::string UserName() {
    passwd* pw = getpwuid(getuid());
    return pw != nullptr ? pw->pw_name : "";
  }

  std::string dir_;
  std::string check_command_;
  std::string state_;
  std::unique_ptr<LibSlurmClient> client_;
  JobJanitor janitor_;
  std::vector<uint32_t> check_jobs_;
};

TEST_F(SlurmMaintenanceTest, RefusesWhatIsNotTheBridgesOrIsEmpty) {
  EXPECT_EQ(client_->RebootNode(kNode, "admin reboot").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->RebootNode("node99", kRebootReason).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->SubmitCheckJob(Check("")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      client_->CreateMaintenanceReservation({.name = kReservation, .node = kNode, .minutes = 0})
          .status()
          .code(),
      StatusCode::kInvalidArgument);
  StatusOr<WriteOutcome> none = client_->DeleteReservation(kReservation);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, WriteOutcome::kUnchanged);
  EXPECT_FALSE(Node().reboot_requested);
}

TEST_F(SlurmMaintenanceTest, AnIdleNodeRebootsAtOnceAndComesBackDownWithANewBootTime) {
  const NodeView before = Node();
  ASSERT_GT(before.boot_time, 0) << "slurmctld reports no boot time for " << kNode;
  const std::time_t asked = std::time(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<WriteOutcome> r = client_->RebootNode(kNode, kRebootReason);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, WriteOutcome::kChanged);
  // Requested or under way (the node powers off for 3 s): asked again, nothing changes.
  StatusOr<WriteOutcome> again = client_->RebootNode(kNode, kRebootReason);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, WriteOutcome::kUnchanged);
  const NodeView asked_state = Node();
  EXPECT_TRUE(asked_state.reboot_requested || asked_state.reboot_issued)
      << asked_state.StateString();

  std::optional<NodeView> back = WaitRebooted(asked, before.boot_time);
  ASSERT_TRUE(back) << kNode << " did not come back from its reboot in " << kRebootTimeout.count()
                    << " s: " << state_ << " (" << dir_ << "/logs/reboot.log)";
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("reboot_round_trip_s", StrCat(took));
  std::cout << "reboot round trip: " << took << " s (request to DOWN with the new boot time)\n";
  // nextstate=DOWN: down, the ASAP drain lifted, the bridge's reason kept (so the bridge
  // resumes it) with Slurm's notes after it.
  EXPECT_EQ(back->base_state, NodeBaseState::kDown) << back->StateString();
  EXPECT_FALSE(back->drain) << back->StateString();
  EXPECT_GE(back->boot_time, asked);
  EXPECT_THAT(back->reason, StartsWith(kRebootReason));
  EXPECT_THAT(back->reason, HasSubstr("reboot complete"));
  EXPECT_TRUE(back->DrainedByBridge());

  StatusOr<WriteOutcome> resumed = client_->ResumeNode(kNode);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(*resumed, WriteOutcome::kChanged);
  ASSERT_TRUE(NodeTakesWork()) << kNode << " does not take work after the reboot: " << state_;

  // The node keeps its boot time when its slurmd restarts (no second reboot shows).
  const CommandResult restart = skb::testbed::Testbed(StrCat("restart slurmd-", kNode));
  ASSERT_EQ(restart.exit_code, 0) << restart.err;
  ASSERT_TRUE(NodeTakesWork()) << kNode << " does not take work after a slurmd restart: " << state_;
  EXPECT_NEAR(Node().boot_time, back->boot_time, 1);
}

TEST_F(SlurmMaintenanceTest, ARebootAskedWhileAJobRunsWaitsForTheJob) {
  const uint32_t job = SleepJob();
  ASSERT_TRUE(WaitState(job, JobState::kRunning));
  const NodeView before = Node();
  const std::time_t asked = std::time(nullptr);
  StatusOr<WriteOutcome> r = client_->RebootNode(kNode, kRebootReason);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, WriteOutcome::kChanged);
  const NodeView requested = Node();
  EXPECT_TRUE(requested.reboot_requested) << requested.StateString();
  EXPECT_TRUE(requested.drain) << "ASAP drains the node: " << requested.StateString();
  EXPECT_EQ(client_->RebootNode(kNode, kRebootReason).value(), WriteOutcome::kUnchanged);

  // slurmctld looks for nodes to reboot in its background pass (every few seconds): throughout
  // 10 s the job runs on and the node is not rebooted.
  const std::string held = HoldsFor(
      [&]() -> std::string {
        auto j = Job(job);
        if (!j || j->state != JobState::kRunning) return "the job stopped running";
        auto n = client_->LoadNode(kNode);
        if (!n.ok()) return std::string(n.status().message());
        if (n->reboot_issued || n->BootedSince(before.boot_time) || !n->reboot_requested) {
          return StrCat("the node rebooted under its job: ", n->StateString(),
                        " boot_time=", n->boot_time);
        }
        return "";
      },
      seconds(10));
  EXPECT_EQ(held, "");

  // The job ends: the reboot happens.
  ASSERT_EQ(client_->CancelJob(job).value(), WriteOutcome::kChanged);
  std::optional<NodeView> back = WaitRebooted(asked, before.boot_time);
  ASSERT_TRUE(back) << kNode << " did not reboot once its job ended: " << state_;
  EXPECT_EQ(back->base_state, NodeBaseState::kDown) << back->StateString();
  EXPECT_EQ(client_->ResumeNode(kNode).value(), WriteOutcome::kChanged);
}

TEST_F(SlurmMaintenanceTest, TheReservationKeepsOtherJobsOffTheIdleNodeUntilDeleted) {
  const MaintenanceReservationSpec spec{.name = kReservation, .node = kNode, .minutes = 15};
  StatusOr<WriteOutcome> created = client_->CreateMaintenanceReservation(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, WriteOutcome::kChanged);
  EXPECT_EQ(client_->CreateMaintenanceReservation(spec).value(), WriteOutcome::kUnchanged);
  MaintenanceReservationSpec elsewhere = spec;
  elsewhere.node = "node4";
  EXPECT_EQ(client_->CreateMaintenanceReservation(elsewhere).status().code(),
            StatusCode::kFailedPrecondition);
  const CommandResult show =
      RunCommand({"scontrol", "show", "reservation", kReservation}, seconds(30));
  EXPECT_THAT(show.out, HasSubstr(StrCat("Nodes=", kNode)));
  EXPECT_THAT(show.out, HasSubstr("MAINT"));
  EXPECT_THAT(show.out, HasSubstr("IGNORE_JOBS"));
  EXPECT_THAT(show.out, HasSubstr(StrCat("Users=", UserName())));

  const uint32_t job = SleepJob();
  // Considered and left pending: slurmctld says why.
  std::optional<JobView> pending;
  ASSERT_TRUE(WaitFor(
      [&] {
        pending = Job(job);
        return pending && pending->state == JobState::kPending && !pending->state_reason.empty() &&
               pending->state_reason != "None";
      },
      seconds(60)))
      << "job " << job
      << " was not considered: " << (pending ? JobStateName(pending->state) : "unknown");
  EXPECT_THAT(pending->state_reason, AnyOf(HasSubstr("ReqNodeNotAvail"), HasSubstr("Resv"),
                                           HasSubstr("Reservation"), HasSubstr("Resources")));
  const std::string stays = HoldsFor(
      [&]() -> std::string {
        auto j = Job(job);
        if (!j || j->state != JobState::kPending) return "the job left PENDING";
        return "";
      },
      seconds(5));
  EXPECT_EQ(stays, "") << "on an idle " << kNode << " in a maintenance reservation";
  EXPECT_EQ(Node().base_state, NodeBaseState::kIdle) << "nothing runs on " << kNode;

  StatusOr<WriteOutcome> deleted = client_->DeleteReservation(kReservation);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, WriteOutcome::kChanged);
  EXPECT_EQ(client_->DeleteReservation(kReservation).value(), WriteOutcome::kUnchanged);
  EXPECT_TRUE(WaitState(job, JobState::kRunning))
      << "job " << job << " did not start once the reservation was gone: "
      << (Job(job) ? Job(job)->state_reason : "unknown");
}

TEST_F(SlurmMaintenanceTest, TheCheckJobRunsInTheReservationOnceAndItsExitCodeReadsBack) {
  ASSERT_TRUE(
      client_->CreateMaintenanceReservation({.name = kReservation, .node = kNode, .minutes = 15})
          .ok());

  // Idempotent while pending or running.
  StatusOr<CheckJobSubmission> long_check = SubmitCheck(Check("sleep 600"));
  ASSERT_TRUE(long_check.ok()) << long_check.status();
  EXPECT_EQ(long_check->outcome, WriteOutcome::kChanged);
  StatusOr<CheckJobSubmission> again = SubmitCheck(Check("sleep 600"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->job_id, long_check->job_id);
  EXPECT_EQ(again->outcome, WriteOutcome::kUnchanged);
  ASSERT_TRUE(WaitState(long_check->job_id, JobState::kRunning))
      << "the check job did not start in the reservation: "
      << (Job(long_check->job_id) ? Job(long_check->job_id)->state_reason : "unknown");
  const JobView running = *Job(long_check->job_id);
  EXPECT_EQ(running.name, health::kMaintenanceCheckJobName);
  EXPECT_EQ(running.nodes, std::vector<std::string>{kNode});
  EXPECT_EQ(running.required_nodes, std::vector<std::string>{kNode});
  EXPECT_EQ(running.reservation, kReservation);
  EXPECT_EQ(running.AllocatedGpus(), 8);
  EXPECT_FALSE(running.requeue);
  EXPECT_EQ(SubmitCheck(Check("sleep 600")).value().job_id, long_check->job_id);
  // Slurm keeps a reservation a job runs in.
  EXPECT_EQ(client_->DeleteReservation(kReservation).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_EQ(client_->CancelJob(long_check->job_id).value(), WriteOutcome::kChanged);
  ASSERT_TRUE(WaitEnded(long_check->job_id));

  // The testbed's check passes...
  StatusOr<CheckJobSubmission> pass = SubmitCheck(Check(check_command_));
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(pass->outcome, WriteOutcome::kChanged);
  EXPECT_NE(pass->job_id, long_check->job_id);
  std::optional<JobView> passed = WaitEnded(pass->job_id);
  ASSERT_TRUE(passed) << "the check job " << pass->job_id << " did not end";
  EXPECT_EQ(passed->state, JobState::kComplete) << JobStateName(passed->state);
  EXPECT_EQ(passed->exit_code, 0);
  EXPECT_EQ(passed->exit_signal, 0);

  // ... and fails, exit 1, with the check-fails file.
  std::filesystem::create_directories(std::filesystem::path(CheckFailsFile()).parent_path());
  std::ofstream(CheckFailsFile()) << "injected by SlurmMaintenanceTest\n";
  StatusOr<CheckJobSubmission> fail = SubmitCheck(Check(check_command_));
  ASSERT_TRUE(fail.ok()) << fail.status();
  EXPECT_EQ(fail->outcome, WriteOutcome::kChanged);
  std::optional<JobView> failed = WaitEnded(fail->job_id);
  ASSERT_TRUE(failed) << "the check job " << fail->job_id << " did not end";
  EXPECT_EQ(failed->state, JobState::kFailed) << JobStateName(failed->state);
  EXPECT_EQ(failed->exit_code, 1);
  EXPECT_THAT(
      skb::testbed::ReadAll(Check("").output),
      HasSubstr("failure injected (" + CheckFailsFile() + "): injected by SlurmMaintenanceTest"));
}

}  // namespace
}  // namespace skb::bridge::slurm

// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/fake_slurm_client.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/devices/observe.h"
#include "src/devices/placeholder_record.h"
#include "src/health/maintenance.h"
#include "src/ownership/time_codec.h"

namespace skb::bridge::slurm {
namespace {

using skb::slurm::JobState;
using skb::slurm::NodeBaseState;

PlaceholderSpec Spec(const std::string& pod, const std::string& node, int64_t gpus) {
  return {
      .node = node,
      .gpus = gpus,
      .partition = "skb-gpu-hold",
      .admin_comment = devices::FormatPlaceholderRecord({.node = node, .pod = pod, .gpus = gpus})};
}

TEST(FakeSlurmClientTest, SubmitPlaceholderIsIdempotentPerPod) {
  FakeSlurmClient slurm;
  JobView train;
  train.job_id = 1200;
  train.state = JobState::kRunning;
  slurm.AddJob(train);

  StatusOr<PlaceholderSubmission> submitted = slurm.SubmitPlaceholder(Spec("infer/a", "node3", 2));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_EQ(submitted->outcome, WriteOutcome::kChanged);
  const std::optional<uint32_t> first = submitted->job_id;
  EXPECT_EQ(*first, 1201u);
  JobView j = slurm.Job(*first);
  EXPECT_EQ(j.name, devices::kPlaceholderJobName);
  EXPECT_EQ(j.state, JobState::kPending);
  EXPECT_TRUE(devices::IsPlaceholder(j));

  // Asked again (the poll has not seen it yet), pending or running: the same job, unchanged.
  StatusOr<PlaceholderSubmission> again = slurm.SubmitPlaceholder(Spec("infer/a", "node3", 2));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->job_id, *first);
  EXPECT_EQ(again->outcome, WriteOutcome::kUnchanged);
  ASSERT_TRUE(slurm.StartJob(*first, "node3", {4, 5}));
  EXPECT_EQ(slurm.Job(*first).gpu_indices.at("node3"), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(slurm.SubmitPlaceholder(Spec("infer/a", "node3", 2)).value().job_id, *first);
  // Another pod gets its own; once the first ends, its pod may get a new one.
  EXPECT_EQ(slurm.SubmitPlaceholder(Spec("infer/b", "node3", 1)).value().job_id, *first + 1);
  ASSERT_TRUE(slurm.CancelJob(*first).ok());
  EXPECT_EQ(slurm.SubmitPlaceholder(Spec("infer/a", "node3", 2)).value().job_id, *first + 2);
  EXPECT_EQ(slurm.Writes(), (std::vector<std::string>{
                                "SubmitPlaceholder node3 gpus=2 -> 1201",
                                "SubmitPlaceholder node3 gpus=1 -> 1202",
                                "CancelJob 1201",
                                "SubmitPlaceholder node3 gpus=2 -> 1203",
                            }));
}

TEST(FakeSlurmClientTest, SubmitPlaceholderRefusesWhatIsNoPlaceholder) {
  FakeSlurmClient slurm;
  PlaceholderSpec no_record = Spec("infer/a", "node3", 2);
  no_record.admin_comment = "hold it";
  EXPECT_EQ(slurm.SubmitPlaceholder(no_record).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(slurm.SubmitPlaceholder(Spec("infer/a", "node3", 0)).status().code(),
            StatusCode::kInvalidArgument);
  PlaceholderSpec other_node = Spec("infer/a", "node3", 2);
  other_node.node = "node4";  // the record says node3
  EXPECT_EQ(slurm.SubmitPlaceholder(other_node).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(slurm.Writes().empty());
}

NodeView DrainedForMaintenance(const std::string& name) {
  NodeView n;
  n.name = name;
  n.base_state = NodeBaseState::kIdle;
  n.drain = true;
  n.reason = "k8s-bridge: maintenance: drained";
  return n;
}

TEST(FakeSlurmClientTest, RebootNodeIsRequestedOnceAndComesBackDownAsSlurmLeavesIt) {
  FakeSlurmClient slurm;
  slurm.AddNode(DrainedForMaintenance("node3"));
  EXPECT_EQ(slurm.RebootNode("node3", "admin says so").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(slurm.RebootNode("node9", "k8s-bridge: reboot").status().code(), StatusCode::kNotFound);

  StatusOr<WriteOutcome> asked = slurm.RebootNode("node3", "k8s-bridge: reboot");
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(*asked, WriteOutcome::kChanged);
  NodeView n = slurm.Node("node3");
  EXPECT_TRUE(n.reboot_requested);
  EXPECT_TRUE(n.drain);
  EXPECT_EQ(n.reason, "k8s-bridge: reboot");
  // Requested, then under way: asking again changes nothing.
  EXPECT_EQ(slurm.RebootNode("node3", "k8s-bridge: reboot").value(), WriteOutcome::kUnchanged);
  ASSERT_TRUE(slurm.IssueReboot("node3"));
  n = slurm.Node("node3");
  EXPECT_FALSE(n.reboot_requested);
  EXPECT_TRUE(n.reboot_issued);
  EXPECT_EQ(n.base_state, NodeBaseState::kDown);
  EXPECT_EQ(slurm.RebootNode("node3", "k8s-bridge: reboot").value(), WriteOutcome::kUnchanged);

  ASSERT_TRUE(slurm.CompleteReboot("node3", 1'700'000'100));
  n = slurm.Node("node3");
  EXPECT_FALSE(n.reboot_requested);
  EXPECT_FALSE(n.reboot_issued);
  EXPECT_FALSE(n.drain);
  EXPECT_EQ(n.base_state, NodeBaseState::kDown);
  EXPECT_EQ(n.boot_time, 1'700'000'100);
  EXPECT_EQ(n.reason, "k8s-bridge: reboot : reboot issued : reboot complete");
  EXPECT_TRUE(n.DrainedByBridge());
  // The bridge's DOWN is resumed like its drain.
  EXPECT_EQ(slurm.ResumeNode("node3").value(), WriteOutcome::kChanged);
  EXPECT_EQ(slurm.Node("node3").base_state, NodeBaseState::kIdle);
  EXPECT_FALSE(slurm.Node("node3").Unavailable());
  EXPECT_EQ(slurm.Writes(),
            (std::vector<std::string>{"RebootNode node3 k8s-bridge: reboot", "ResumeNode node3"}));
}

TEST(FakeSlurmClientTest, ARebootBehindSlurmsBackMovesOnlyTheBootTime) {
  FakeSlurmClient slurm;
  slurm.AddNode(DrainedForMaintenance("node3"));
  ASSERT_TRUE(slurm.CompleteReboot("node3", 1'700'000'200));
  NodeView n = slurm.Node("node3");
  EXPECT_EQ(n.boot_time, 1'700'000'200);
  EXPECT_TRUE(n.drain);
  EXPECT_EQ(n.base_state, NodeBaseState::kIdle);
  EXPECT_EQ(n.reason, "k8s-bridge: maintenance: drained");
  EXPECT_FALSE(slurm.CompleteReboot("node9", 1));
}

TEST(FakeSlurmClientTest, MaintenanceReservationIsCreatedOnceAndDeletedOnce) {
  FakeSlurmClient slurm;
  slurm.AddNode(DrainedForMaintenance("node3"));
  slurm.AddNode(DrainedForMaintenance("node4"));
  const MaintenanceReservationSpec spec{
      .name = "skb-maint-node3", .node = "node3", .user = "slurm", .minutes = 15};
  EXPECT_EQ(slurm.CreateMaintenanceReservation(spec).value(), WriteOutcome::kChanged);
  EXPECT_EQ(slurm.CreateMaintenanceReservation(spec).value(), WriteOutcome::kUnchanged);
  MaintenanceReservationSpec elsewhere = spec;
  elsewhere.node = "node4";
  EXPECT_EQ(slurm.CreateMaintenanceReservation(elsewhere).status().code(),
            StatusCode::kFailedPrecondition);
  MaintenanceReservationSpec no_time = spec;
  no_time.minutes = 0;
  EXPECT_EQ(slurm.CreateMaintenanceReservation(no_time).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(slurm.Reservations(), (std::vector<std::string>{"skb-maint-node3"}));

  EXPECT_EQ(slurm.DeleteReservation("skb-maint-node3").value(), WriteOutcome::kChanged);
  EXPECT_EQ(slurm.DeleteReservation("skb-maint-node3").value(), WriteOutcome::kUnchanged);
  EXPECT_TRUE(slurm.Reservations().empty());
  EXPECT_EQ(slurm.Writes(), (std::vector<std::string>{
                                "CreateMaintenanceReservation skb-maint-node3 node3",
                                "DeleteReservation skb-maint-node3",
                            }));
}

TEST(FakeSlurmClientTest, CheckJobIsSubmittedOncePerNodeAndEndsWithItsExitCode) {
  FakeSlurmClient slurm;
  SimulatedClock clock(ownership::FromUnix(1'800'000'000));
  slurm.SetClock(&clock);
  slurm.AddNode(DrainedForMaintenance("node3"));
  ASSERT_TRUE(
      slurm.CreateMaintenanceReservation({.name = "skb-maint-node3", .node = "node3"}).ok());
  const CheckJobSpec spec{.node = "node3",
                          .reservation = "skb-maint-node3",
                          .command = "/usr/sbin/nhc",
                          .gpus = 8,
                          .time_limit_minutes = 10};
  EXPECT_EQ(slurm.SubmitCheckJob({.node = "node3"}).status().code(), StatusCode::kInvalidArgument);

  StatusOr<CheckJobSubmission> first = slurm.SubmitCheckJob(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome, WriteOutcome::kChanged);
  JobView j = slurm.Job(first->job_id);
  EXPECT_EQ(j.name, health::kMaintenanceCheckJobName);
  EXPECT_EQ(j.state, JobState::kPending);
  EXPECT_EQ(j.required_nodes, (std::vector<std::string>{"node3"}));
  EXPECT_EQ(j.reservation, "skb-maint-node3");
  EXPECT_FALSE(j.requeue);

  // Pending, then running: the same job.
  StatusOr<CheckJobSubmission> again = slurm.SubmitCheckJob(spec);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->job_id, first->job_id);
  EXPECT_EQ(again->outcome, WriteOutcome::kUnchanged);
  ASSERT_TRUE(slurm.StartJob(first->job_id, "node3", {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(slurm.SubmitCheckJob(spec).value().job_id, first->job_id);
  // Slurm keeps a reservation a job runs in.
  EXPECT_EQ(slurm.DeleteReservation("skb-maint-node3").status().code(),
            StatusCode::kFailedPrecondition);

  ASSERT_TRUE(slurm.FinishJob(first->job_id, 1));
  j = slurm.Job(first->job_id);
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.exit_code, 1);
  // Once it ended, a new check is a new job.
  clock.Advance(std::chrono::seconds(10));
  StatusOr<CheckJobSubmission> next = slurm.SubmitCheckJob(spec);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->outcome, WriteOutcome::kChanged);
  EXPECT_NE(next->job_id, first->job_id);
  ASSERT_TRUE(slurm.FinishJob(next->job_id, 0));
  EXPECT_EQ(slurm.Job(next->job_id).state, JobState::kComplete);
  // Asked with the cycle's start: one that ended since is this cycle's, and stays the one.
  CheckJobSpec since = spec;
  since.submitted_since = slurm.Job(next->job_id).submit_time;
  StatusOr<CheckJobSubmission> ended = slurm.SubmitCheckJob(since);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->job_id, next->job_id);
  EXPECT_EQ(ended->outcome, WriteOutcome::kUnchanged);
  EXPECT_EQ(slurm.DeleteReservation("skb-maint-node3").value(), WriteOutcome::kChanged);
  EXPECT_EQ(slurm.Writes(), (std::vector<std::string>{
                                "CreateMaintenanceReservation skb-maint-node3 node3",
                                "SubmitCheckJob node3 skb-maint-node3",
                                "SubmitCheckJob node3 skb-maint-node3",
                                "DeleteReservation skb-maint-node3",
                            }));
}

}  // namespace
}  // namespace skb::bridge::slurm

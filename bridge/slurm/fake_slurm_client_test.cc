// SPDX-License-Identifier: Apache-2.0
#include "bridge/slurm/fake_slurm_client.h"

#include <gtest/gtest.h>

#include "src/devices/observe.h"
#include "src/devices/placeholder_record.h"

namespace skb::bridge::slurm {
namespace {

using skb::slurm::JobState;

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

}  // namespace
}  // namespace skb::bridge::slurm

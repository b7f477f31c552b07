// SPDX-License-Identifier: Apache-2.0
// The ownership actions' checks at the source, on fakes (against the real systems:
// tests/integration/reconcile/action_executor_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/reconcile/action_executor.h"
#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;

class ReleaseCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    slurm::NodeView n;
    n.name = "node3";
    n.base_state = skb::slurm::NodeBaseState::kIdle;
    n.drain = true;
    n.reason = "k8s-bridge: lent to default/infer";
    slurm_.AddNode(n);
    nlohmann::json pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata",
                           {{"name", "reserve-node3"},
                            {"namespace", "slurm-bridge"},
                            {"labels", {{ownership::kRoleLabel, ownership::kReservationRole}}},
                            {"finalizers", {ownership::kFinalizer}}}}};
    auto created = kube_.Create(k8s::Resource::Pods(), "slurm-bridge", pod);
    ASSERT_TRUE(created.ok()) << created.status();
    release_.op = plan::ReleaseReservationPod{};
    release_.node = "node3";
    release_.As<plan::ReleaseReservationPod>().pod = {"slurm-bridge", "reserve-node3",
                                                      (*created)["metadata"]["uid"]};
    release_.As<plan::ReleaseReservationPod>().check = plan::ReleaseCheck::kNoSlurmJobs;
  }

  // The reservation's finalizers; none once it is gone.
  std::vector<std::string> Finalizers() {
    auto pod = kube_.Get(k8s::Resource::Pods(), "slurm-bridge", "reserve-node3");
    if (!pod.ok()) {
      EXPECT_EQ(pod.status().code(), StatusCode::kNotFound) << pod.status();
      return {};
    }
    return (*pod)["metadata"].value("finalizers", std::vector<std::string>{});
  }

  SimulatedClock clock_{Clock::TimePoint{} + std::chrono::hours(1'000'000)};
  slurm::FakeSlurmClient slurm_;
  k8s::FakeKubeClient kube_;
  k8s::DiscardingEventRecorder events_;
  ActionExecutor exec_{&slurm_, &kube_, &events_, &clock_};
  plan::Action release_;
};

TEST_F(ReleaseCheckTest, ReleasesADrainedNodeWithoutJobs) {
  StatusOr<Effect> e = exec_.Execute(release_);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, Effect::kChanged);
  EXPECT_TRUE(Finalizers().empty());
  e = exec_.Execute(release_);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, Effect::kUnchanged) << "gone: nothing to do";
}

// The release planned again before the pod cache saw the first one (the pod still
// terminating, held by another controller's finalizer): it shortens the deletion again
// and reports no change, so the lend is counted once (skb_lend_duration_seconds).
TEST_F(ReleaseCheckTest, AReleaseRepeatedOnATerminatingPodChangesNothing) {
  auto added = kube_.Patch(
      k8s::Resource::Pods(), "slurm-bridge", "reserve-node3", k8s::PatchType::kJsonPatch,
      nlohmann::json::array(
          {{{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", "example.com/audit"}}}));
  ASSERT_TRUE(added.ok()) << added.status();
  StatusOr<Effect> e = exec_.Execute(release_);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, Effect::kChanged);
  EXPECT_EQ(Finalizers(), std::vector<std::string>{"example.com/audit"});
  e = exec_.Execute(release_);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(*e, Effect::kUnchanged);
}

// The planner saw the lend drain; an admin resumed the node before the release ran. Slurm
// shows no job yet, but would start one beside the pod the GPUs go to: not released.
TEST_F(ReleaseCheckTest, ANodeResumedSinceThePlanIsNotReleased) {
  slurm::NodeView n = slurm_.Node("node3");
  n.drain = false;
  n.reason.clear();
  slurm_.AddNode(n);
  Status s = exec_.Execute(release_).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("no longer drained"));
  EXPECT_EQ(Finalizers(), std::vector<std::string>{ownership::kFinalizer});
}

// A job Slurm started before the drain was read is seen by the job check that follows it.
TEST_F(ReleaseCheckTest, AJobOnTheNodeBlocksTheRelease) {
  skb::slurm::JobView j;
  j.job_id = 42;
  j.state = skb::slurm::JobState::kRunning;
  j.nodes = {"node3"};
  slurm_.AddJob(j);
  Status s = exec_.Execute(release_).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_EQ(Finalizers(), std::vector<std::string>{ownership::kFinalizer});
}

}  // namespace
}  // namespace skb::bridge

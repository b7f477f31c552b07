// SPDX-License-Identifier: Apache-2.0
#include "src/plan/action.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skb::plan {
namespace {

Action Make(Chain chain, std::string reason) {
  Action a;
  a.chain = chain;
  a.event_reason = std::move(reason);
  return a;
}

// A failure stops the rest of its own chain and nothing else: the refused reservation
// create does not hold back the health drain, the requeue that needs the failed drain does
// not run.
TEST(RunChainsTest, AFailureStopsOnlyItsOwnChain) {
  const std::vector<Action> actions = {
      Make(Chain::kOwnership, "create"),    // fails
      Make(Chain::kHealth, "drain"),        // fails
      Make(Chain::kOwnership, "annotate"),  // skipped: after the failed create
      Make(Chain::kHealth, "requeue"),      // skipped: after the failed drain
      Make(Chain::kStatus, "condition"),   Make(Chain::kFeatures, "features"),
  };
  std::vector<std::string> ran;
  RunChains(actions, [&](const Action& a) {
    ran.push_back(a.event_reason);
    if (a.event_reason == "create") return FailedPreconditionError("namespace gone");
    if (a.event_reason == "drain") return UnavailableError("slurmctld busy");
    return OkStatus();
  });
  EXPECT_EQ(ran, (std::vector<std::string>{"create", "drain", "condition", "features"}));
}

TEST(RunChainsTest, EverythingRunsInOrderWhenNothingFails) {
  const std::vector<Action> actions = {Make(Chain::kHealth, "a"), Make(Chain::kOwnership, "b"),
                                       Make(Chain::kHealth, "c")};
  std::vector<std::string> ran;
  RunChains(actions, [&](const Action& a) {
    ran.push_back(a.event_reason);
    return OkStatus();
  });
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "c"}));
}

// An action is its operation plus what every action carries: the kind, its fields and the
// way a log line shows it all come from the one struct.
TEST(ActionTest, KindAndFieldsComeFromItsOperation) {
  Action a;
  a.op = PreemptSlurmJobs{
      .job_ids = {7, 8}, .mode = JobPreemptMode::kRequeueHold, .preemptor = "ml/infer-0"};
  a.node = "node3";
  a.event_type = EventType::kWarning;
  EXPECT_EQ(a.Kind(), "PreemptSlurmJobs");
  EXPECT_EQ(a.Kind(), PreemptSlurmJobs::kName);
  EXPECT_TRUE(a.Is<PreemptSlurmJobs>());
  EXPECT_FALSE(a.Is<SignalSlurmJobs>());
  EXPECT_EQ(a.Get<SignalSlurmJobs>(), nullptr);
  ASSERT_NE(a.Get<PreemptSlurmJobs>(), nullptr);
  EXPECT_EQ(a.Get<PreemptSlurmJobs>()->job_ids, (std::vector<uint32_t>{7, 8}));
  EXPECT_EQ(ToString(a),
            "PreemptSlurmJobs node3 jobs=7,8 mode=requeue_hold for=ml/infer-0 [Warning]");

  a.op = RemoveNodeTaint{{"slurm-k8s-bridge.io/busy", "", "NoSchedule"}};
  a.event_type = EventType::kNormal;
  EXPECT_EQ(ToString(a), "RemoveNodeTaint node3 taint=slurm-k8s-bridge.io/busy:NoSchedule");
  a.op = ReleaseReservationPod{.pod = {"slurm-bridge", "reserve-node3", "u1"},
                               .check = ReleaseCheck::kSwapTaint};
  EXPECT_EQ(ToString(a),
            "ReleaseReservationPod node3 pod=slurm-bridge/reserve-node3 check=swap-taint");
}

// The `mode` label of skb_preemptions_total: a requeue-hold counts as a requeue.
TEST(PreemptionModeLabelTest, CancelOrRequeue) {
  EXPECT_EQ(PreemptionModeLabel(JobPreemptMode::kRequeue), "requeue");
  EXPECT_EQ(PreemptionModeLabel(JobPreemptMode::kRequeueHold), "requeue");
  EXPECT_EQ(PreemptionModeLabel(JobPreemptMode::kCancel), "cancel");
}

}  // namespace
}  // namespace skb::plan

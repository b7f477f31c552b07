// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/preemption_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge::cli {
namespace {

using nlohmann::json;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A core/v1 Event as the bridge's recorder writes it about a node.
json Event(std::string node, std::string reason, std::string message, std::string first,
           std::string type = "Normal", int count = 1, std::string last = "") {
  return {{"metadata", {{"name", node + "." + reason}, {"namespace", "default"}}},
          {"involvedObject", {{"kind", "Node"}, {"name", node}}},
          {"reason", reason},
          {"message", message},
          {"type", type},
          {"count", count},
          {"firstTimestamp", first},
          {"lastTimestamp", last.empty() ? first : last},
          {"source", {{"component", "slurm-k8s-bridge"}}}};
}

// The Events of one lend of node2 to inference/web-0 with job 12 requeued, as
// the executor records them (messages as the planner words them).
std::vector<json> OneLend() {
  return {
      Event("node2", "LendingToKubernetes",
            "Node node2 is lent to Kubernetes (inference/web-0): reservation deleted",
            "2026-11-22T06:00:00Z"),
      Event("node2", "SlurmNodeLent",
            "Drained Slurm node node2: lent to Kubernetes (inference/web-0)",
            "2026-11-22T06:00:00Z", "Warning"),
      Event("node2", "SlurmJobsSignalled",
            "Sent SIGUSR1 to Slurm job(s) 12,13 on node node2 to checkpoint: the node is lent to "
            "Kubernetes (inference/web-0) (jobs 12,13)",
            "2026-11-22T06:00:01Z"),
      Event("node2", "CheckpointGraceStarted",
            "Grace period started for Slurm jobs on node node2: they are preempted when it ends",
            "2026-11-22T06:00:01Z"),
      Event("node2", "SlurmJobsPreempted",
            "Requeued Slurm job(s) 12,13 on node node2: the node is lent to Kubernetes "
            "(inference/web-0) (jobs 12,13)",
            "2026-11-22T06:00:31Z"),
      Event("node2", "ReservationReleased",
            "Released reservation slurm-bridge/reserve-node2: Slurm shows no job on node node2; "
            "its GPUs go to Kubernetes (inference/web-0)",
            "2026-11-22T06:00:33Z"),
      Event("node2", "ReturnedToSlurm", "Node node2 belongs to Slurm again",
            "2026-11-22T06:10:00Z"),
  };
}

TEST(PreemptionHistory, RebuildsALendFromItsEvents) {
  auto h = PreemptionsFromEvents(OneLend());
  ASSERT_EQ(h.size(), 1u);
  const Preemption& p = h[0];
  EXPECT_EQ(p.node, "node2");
  EXPECT_EQ(p.lent_to, "inference/web-0");
  EXPECT_THAT(p.signalled, ElementsAre("12", "13"));
  EXPECT_THAT(p.preempted, ElementsAre("12", "13"));
  EXPECT_EQ(p.preempt_mode, "Requeued");
  ASSERT_TRUE(p.released.has_value());
  ASSERT_TRUE(p.returned.has_value());
  EXPECT_EQ(Outcome(p), "returned to Slurm");
  EXPECT_TRUE(p.warnings.size() == 1 && p.warnings[0].rfind("SlurmNodeLent", 0) == 0);
  std::string t = Render(PreemptionsListing(h, false));
  EXPECT_THAT(t, HasSubstr("LENT-AT"));
  EXPECT_THAT(t, ContainsRegex("2026-11-22T06:00:00Z +node2 +inference/web-0 +12,13 +requeued "
                               "12,13 +2026-11-22T06:00:33Z +returned to Slurm"));
  EXPECT_THAT(t, HasSubstr("2026-11-22T06:10:00Z"));
  json j = PreemptionsJson(h);
  EXPECT_EQ(j["preemptions"][0]["outcome"], "returned to Slurm");
  EXPECT_EQ(j["preemptions"][0]["releasedAt"], "2026-11-22T06:00:33Z");
}

TEST(PreemptionHistory, SeparatesLendsAndNodesAndKeepsOpenOnes) {
  std::vector<json> ev = OneLend();
  // The second lend of node2 repeats an identical message: the recorder folded it into the
  // first Event (count 2, lastTimestamp moved).
  ev.back() = Event("node2", "ReturnedToSlurm", "Node node2 belongs to Slurm again",
                    "2026-11-22T06:10:00Z", "Normal", 2, "2026-11-22T06:30:00Z");
  ev.push_back(Event("node2", "LendingToKubernetes",
                     "Node node2 is lent to Kubernetes (inference/web-1): reservation deleted",
                     "2026-11-22T06:20:00Z"));
  ev.push_back(Event("node2", "ReservationReleased",
                     "Released reservation slurm-bridge/reserve-node2: Slurm shows no job on "
                     "node node2; its GPUs go to Kubernetes (inference/web-1)",
                     "2026-11-22T06:20:01Z"));
  // node4: a lend still waiting for protected work.
  ev.push_back(Event("node4", "LendBlockedByProtectedJobs",
                     "Node node4 is being lent to Kubernetes (batch/x) but Slurm job(s) 7 may not "
                     "be preempted (admitted as not preemptible): the node is drained and nothing "
                     "is signalled; the lend completes when they end",
                     "2026-11-22T06:25:00Z", "Warning"));
  // Noise: other reasons, other kinds.
  ev.push_back(Event("node4", "ReservationCreated", "Created reservation", "2026-11-22T05:00:00Z"));
  json pod_event = Event("web-0", "SlurmJobsPreempted", "x", "2026-11-22T06:00:31Z");
  pod_event["involvedObject"]["kind"] = "Pod";
  ev.push_back(pod_event);
  auto h = PreemptionsFromEvents(ev);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].lent_to, "inference/web-0");
  EXPECT_EQ(h[1].lent_to, "inference/web-1");
  EXPECT_TRUE(h[1].signalled.empty());
  ASSERT_TRUE(h[1].returned.has_value());
  EXPECT_EQ(Outcome(h[1]), "returned to Slurm");
  EXPECT_EQ(h[2].node, "node4");
  EXPECT_EQ(Outcome(h[2]), "waiting for protected job(s) 7");
  EXPECT_EQ(Render(PreemptionsListing({}, false)),
            "No preemptions in the Events the apiserver keeps.\n");
}

TEST(PreemptionHistory, ALendWithoutARecordedReturnEndsWhereTheNextStarts) {
  // node3 was given back by hand (no return Event), then lent again and returned.
  std::vector<json> ev = {
      Event("node3", "LendingToKubernetes", "Node node3 is lent to Kubernetes (default/a): x",
            "2026-11-22T06:00:00Z"),
      Event("node3", "ReservationReleased",
            "Released reservation r: Slurm shows no job on node node3; its GPUs go to "
            "Kubernetes (default/a)",
            "2026-11-22T06:00:00Z"),
      Event("node3", "LendingToKubernetes", "Node node3 is lent to Kubernetes (default/b): x",
            "2026-11-22T06:05:00Z"),
      Event("node3", "SlurmJobsPreempted",
            "Requeued Slurm job(s) 35 on node node3: the node is lent to Kubernetes (default/b) "
            "(jobs 35)",
            "2026-11-22T06:05:05Z"),
      Event("node3", "ReturnedToSlurm", "Node node3 belongs to Slurm again",
            "2026-11-22T06:06:00Z"),
  };
  auto h = PreemptionsFromEvents(ev);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].lent_to, "default/a");
  EXPECT_EQ(Outcome(h[0]), "no return recorded");
  EXPECT_FALSE(h[0].returned.has_value());
  EXPECT_EQ(h[1].lent_to, "default/b");
  EXPECT_THAT(h[1].preempted, ElementsAre("35"));
  EXPECT_EQ(Outcome(h[1]), "returned to Slurm");
}

}  // namespace
}  // namespace skb::bridge::cli

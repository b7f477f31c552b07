// SPDX-License-Identifier: Apache-2.0
// The reconcile step on in-memory Slurm and Kubernetes: one retry rule for what the
// executor returns (IsRetryable: back-off, no Warning; terminal: a Warning and a later
// look), the after-action hook, and the owner each node's last plan counts under.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "bridge/reconcile/reconciler.h"
#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "src/base/strings.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Clock::TimePoint kNow = Clock::TimePoint{} + std::chrono::hours(24 * 365 * 50);

class CountingEvents final : public k8s::EventRecorder {
 public:
  void Record(const k8s::ObjectReference&, k8s::EventType type, const std::string& reason,
              const std::string&) override {
    MutexLock lock(&mu_);
    reasons_.push_back(StrCat(type == k8s::EventType::kWarning ? "Warning " : "Normal ", reason));
  }
  std::vector<std::string> reasons() {
    MutexLock lock(&mu_);
    return reasons_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> reasons_ GUARDED_BY(mu_);
};

class ReconcilerUnitTest : public ::testing::Test {
 protected:
  ReconcilerUnitTest()
      : clock_(kNow),
        queue_(clock_),
        status_queue_(clock_),
        executor_(&slurm_, &kube_, &events_, &clock_),
        reconciler_(cfg_, inventory::NodeNameMap{}, &clock_, &executor_, &queue_) {
    reconciler_.SetStatusQueue(&status_queue_);
    slurm::NodeView s;
    s.name = "node1";
    s.base_state = skb::slurm::NodeBaseState::kIdle;
    slurm_.AddNode(s);
    reconciler_.SetSlurmNodes({s});
    inventory::K8sNode k;
    k.name = "node1";
    k.gpu_capacity = k.gpu_allocatable = 8;
    // Maintenance requested: the health planner drains the node.
    k.conditions = {{cfg_.health.maintenance_condition, "True", "Planned", "fan", kNow},
                    {"SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding", kNow},
                    {"SlurmDrained", "False", "NotDrained", "", kNow}};
    reconciler_.UpdateK8sNode(k);
    while (queue_.Get()) {
    }
  }

  config::Config cfg_;
  SimulatedClock clock_;
  reconcile::WorkQueue queue_;
  reconcile::WorkQueue status_queue_;
  slurm::FakeSlurmClient slurm_;
  k8s::FakeKubeClient kube_;
  CountingEvents events_;
  ActionExecutor executor_;
  Reconciler reconciler_;
};

TEST_F(ReconcilerUnitTest, ActsOnThePlanAndCallsTheHookAfterEachAction) {
  std::vector<std::string> after;
  reconciler_.SetAfterAction([&](const plan::Action& a) { after.push_back(a.event_reason); });
  ReconcileResult r = reconciler_.ReconcileNode("node1");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.plan.owner, plan::NodeOwner::kUnhealthy);
  EXPECT_THAT(after, ElementsAre("SlurmNodeDrained"));
  EXPECT_TRUE(slurm_.Node("node1").drain);
  EXPECT_THAT(events_.reasons(), ElementsAre("Warning SlurmNodeDrained"));
  EXPECT_EQ(queue_.Failures("node1"), 0);
  auto totals = reconciler_.OwnerTotals();
  EXPECT_EQ(totals["unhealthy"], std::make_pair(size_t{1}, int64_t{8}));
}

// skb_node_owner_since_timestamp_seconds: a node's time in an owner counts from its first
// plan with that owner; plans that keep the owner do not restart it, a new owner does.
TEST_F(ReconcilerUnitTest, ANodesOwnerCountsFromItsFirstPlanWithThatOwner) {
  EXPECT_THAT(reconciler_.OwnersSince(), IsEmpty()) << "nothing planned yet";
  const Clock::TimePoint first = clock_.Now();
  ASSERT_TRUE(reconciler_.ReconcileNode("node1").status.ok());
  clock_.Advance(std::chrono::minutes(7));
  ASSERT_TRUE(reconciler_.ReconcileNode("node1").status.ok());  // still unhealthy
  auto owners = reconciler_.OwnersSince();
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners["node1"].owner, "unhealthy");
  EXPECT_EQ(owners["node1"].since, first);

  // Maintenance over: the node is Slurm's again, counted from now.
  inventory::K8sNode k;
  k.name = "node1";
  k.gpu_capacity = k.gpu_allocatable = 8;
  k.conditions = {{cfg_.health.maintenance_condition, "False", "Done", "", kNow},
                  {"SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding", kNow}};
  reconciler_.UpdateK8sNode(k);
  const Clock::TimePoint second = clock_.Now();
  ASSERT_TRUE(reconciler_.ReconcileNode("node1").status.ok());
  clock_.Advance(std::chrono::seconds(30));
  owners = reconciler_.OwnersSince();
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_NE(owners["node1"].owner, "unhealthy");
  EXPECT_EQ(owners["node1"].since, second);
}

// Guaranteed quotas: a change in the jobs within their tenant's guarantee plans the nodes
// of the jobs it touches again (every component's node for a heterogeneous job), and the
// merged node carries its jobs' standing; the same facts again plan nothing. A pending pod
// that turns borrowing plans the node it is nominated to.
TEST_F(ReconcilerUnitTest, AChangeInTheQuotaFactsPlansTheNodesItTouchesAgain) {
  queue_.Done("node1");  // the fixture took it
  auto running = [](uint32_t id, std::string node) {
    slurm::JobView j;
    j.job_id = id;
    j.state = skb::slurm::JobState::kRunning;
    j.nodes = {std::move(node)};
    j.gpus_per_node = 4;
    return j;
  };
  slurm::JobView leader = running(11, "node3"), component = running(12, "node4");
  leader.het_job_id = component.het_job_id = 11;
  component.het_job_offset = 1;
  reconciler_.SetSlurmJobs({running(5, "node1"), running(6, "node2"), leader, component});
  auto drain = [&] {
    std::set<std::string> keys;
    while (auto key = queue_.Get()) {
      keys.insert(*key);
      queue_.Done(*key);
    }
    return keys;
  };
  drain();

  // Job 99 runs nowhere the reconciler knows (yet): SetSlurmJobs will mark its node.
  reconciler_.SetQuotaFacts({.guaranteed_jobs = {{5, "team-a"}, {99, "team-b"}}});
  EXPECT_THAT(drain(), ElementsAre("node1"));
  EXPECT_EQ(reconciler_.Node("node1").guaranteed_jobs, (ownership::GuaranteedJobs{{5, "team-a"}}));
  EXPECT_THAT(reconciler_.Node("node2").guaranteed_jobs, IsEmpty());

  reconciler_.SetQuotaFacts({.guaranteed_jobs = {{5, "team-a"}, {99, "team-b"}}});
  EXPECT_THAT(drain(), IsEmpty());

  // Job 5 moves to another tenant, component 12 enters: node1, and both nodes of the
  // heterogeneous job (node3's planner judges component 11 by the whole job).
  reconciler_.SetQuotaFacts({.guaranteed_jobs = {{5, "team-b"}, {12, "team-a"}}});
  EXPECT_THAT(drain(), ElementsAre("node1", "node3", "node4"));
  EXPECT_EQ(reconciler_.Node("node3").guaranteed_jobs, (ownership::GuaranteedJobs{{12, "team-a"}}));

  // A pending pod nominated to node2 turns borrowing: node2 is planned again, and its merged
  // view says why the pod borrows.
  inventory::GpuPod pod;
  pod.namespace_name = "serving";
  pod.name = "serve-3";
  pod.gpus = 8;
  pod.phase = "Pending";
  pod.nominated_node_name = "node2";
  reconciler_.UpdatePod(pod);
  drain();
  reconciler_.SetQuotaFacts({.guaranteed_jobs = {{5, "team-b"}, {12, "team-a"}},
                             .borrowing_pods = {{"serving/serve-3", "beyond"}}});
  EXPECT_THAT(drain(), ElementsAre("node2"));
  EXPECT_EQ(reconciler_.Node("node2").borrowing_nominated,
            (std::map<std::string, std::string>{{"serving/serve-3", "beyond"}}));
}

TEST_F(ReconcilerUnitTest, TimeoutsAreRetriedWithBackOffAndNoWarning) {
  slurm_.FailNext("DrainNode", DeadlineExceededError("slurmctld too slow"));
  ReconcileResult r = reconciler_.ReconcileNode("node1");
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(queue_.Failures("node1"), 1) << "rate-limited requeue";
  EXPECT_THAT(events_.reasons(), IsEmpty());
  ASSERT_TRUE(queue_.NextReadyTime().has_value());
  EXPECT_LT(*queue_.NextReadyTime(), kNow + kRefusedRecheck);
}

TEST_F(ReconcilerUnitTest, RefusalsRecordAWarningAndLookAgainLater) {
  slurm_.FailNext("DrainNode", PermissionDeniedError("not an operator"));
  ReconcileResult r = reconciler_.ReconcileNode("node1");
  EXPECT_EQ(r.status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(queue_.Failures("node1"), 0);
  EXPECT_THAT(events_.reasons(), ElementsAre("Warning DrainSlurmNodeFailed"));
  ASSERT_TRUE(queue_.NextReadyTime().has_value());
  EXPECT_EQ(*queue_.NextReadyTime(), kNow + kRefusedRecheck);
}

TEST_F(ReconcilerUnitTest, StatusLaneWritesOnlyConditions) {
  slurm::NodeView down;
  down.name = "node1";
  down.base_state = skb::slurm::NodeBaseState::kDown;
  reconciler_.SetSlurmNodes({down});
  ReconcileResult r = reconciler_.WriteNodeStatus("node1");
  ASSERT_FALSE(r.plan.actions.empty());
  for (const auto& a : r.plan.actions) EXPECT_EQ(a.Kind(), plan::SetNodeCondition::kName);
  EXPECT_TRUE(slurm_.Writes().empty()) << "no Slurm action from the status lane";
}

// Job-list refreshes take half the client's rate at most, and never more than 10 writes/s.
TEST(ReconcilerRefreshFloor, GrowsWithTheNodesAndTheSmallerOfHalfTheRateAndTenPerSecond) {
  struct Lone {
    explicit Lone(double qps)
        : clock(kNow), queue(clock), executor(&slurm, &kube, &events, &clock) {
      cfg.kubernetes.qps = qps;
      reconciler.emplace(cfg, inventory::NodeNameMap{}, &clock, &executor, &queue);
    }
    config::Config cfg;
    SimulatedClock clock;
    reconcile::WorkQueue queue;
    slurm::FakeSlurmClient slurm;
    k8s::FakeKubeClient kube;
    CountingEvents events;
    ActionExecutor executor;
    std::optional<Reconciler> reconciler;
  };
  const auto floor = [](double qps, int nodes) {
    Lone lone(qps);
    for (int i = 0; i < nodes; ++i) {
      inventory::K8sNode k;
      k.name = StrCat("node", i);
      lone.reconciler->UpdateK8sNode(k);
    }
    return std::chrono::duration_cast<std::chrono::seconds>(
        lone.reconciler->MinReservationUpdateInterval());
  };
  EXPECT_EQ(floor(20, 1000), std::chrono::seconds(100)) << "half of 20 qps: 10/s";
  EXPECT_EQ(floor(100, 5000), std::chrono::seconds(500)) << "a raised limit: still 10/s";
  EXPECT_EQ(floor(100, 1000), std::chrono::seconds(100));
  EXPECT_EQ(floor(4, 100), std::chrono::seconds(50)) << "half of 4 qps: 2/s";
}

TEST_F(ReconcilerUnitTest, StatusLaneWritesANodesConditionsInOnePatch) {
  ASSERT_TRUE(kube_
                  .Create(k8s::Resource::Nodes(), "",
                          {{"apiVersion", "v1"},
                           {"kind", "Node"},
                           {"metadata", {{"name", "node1"}}},
                           {"status", {{"conditions", nlohmann::json::array()}}}})
                  .ok());
  slurm::NodeView down;
  down.name = "node1";
  down.base_state = skb::slurm::NodeBaseState::kDown;
  down.drain = true;
  down.reason = "bad fan";
  reconciler_.SetSlurmNodes({down});
  const int64_t before = kube_.resource_version();
  ReconcileResult r = reconciler_.WriteNodeStatus("node1");
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.plan.actions.size(), 2u) << "SlurmNodeHealthy and SlurmDrained both flip";
  EXPECT_EQ(kube_.resource_version(), before + 1) << "one status patch";
  EXPECT_EQ(r.executed, 2);
  ASSERT_EQ(r.outcomes.size(), 2u);
  for (const auto& [index, effect] : r.outcomes) EXPECT_EQ(effect.value(), Effect::kChanged);
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["conditions"].size(), 2u);

  // A write that fails fails each condition's outcome, and each says so. (The cache has
  // not seen the first write yet: the same two conditions are planned again.)
  ASSERT_TRUE(kube_.Delete(k8s::Resource::Nodes(), "", "node1").ok());
  r = reconciler_.WriteNodeStatus("node1");
  EXPECT_EQ(r.status.code(), StatusCode::kNotFound) << r.status;
  ASSERT_EQ(r.outcomes.size(), 2u);
  for (const auto& [index, effect] : r.outcomes) EXPECT_FALSE(effect.ok());
  EXPECT_EQ(r.executed, 0);
  int warnings = 0;
  for (const auto& reason : events_.reasons())
    warnings += reason == "Warning SetNodeConditionFailed";
  EXPECT_EQ(warnings, 2);
}

// Switching modes: the node lane hands an eligible clean node over at its first plan (so
// the device lane plans it a pass later), and the device lane reads that back from the
// reconciler's World; a node no longer eligible is the node lane's again.
TEST(ReconcilerHandover, AnEligibleCleanNodeIsHandedOverAndTakenBackWhenItLeaves) {
  config::Config cfg;
  cfg.lending.enabled = true;
  SimulatedClock clock(kNow);
  reconcile::WorkQueue queue(clock);
  slurm::FakeSlurmClient slurm;
  k8s::FakeKubeClient kube;
  CountingEvents events;
  ActionExecutor executor(&slurm, &kube, &events, &clock, cfg.lending);
  Reconciler reconciler(cfg, inventory::NodeNameMap{}, &clock, &executor, &queue);
  slurm::NodeView s;
  s.name = "node1";
  s.base_state = skb::slurm::NodeBaseState::kIdle;
  s.gpus = {{"h100", 8}};
  slurm.AddNode(s);
  reconciler.SetSlurmNodes({s});
  const nlohmann::json node1 = {{"kind", "Node"}, {"metadata", {{"name", "node1"}}}};
  ASSERT_TRUE(kube.Create(k8s::Resource::Nodes(), "", node1).ok());
  inventory::K8sNode k;
  k.name = "node1";
  k.gpu_capacity = k.gpu_allocatable = 8;
  k.conditions = {{"Ready", "True", "KubeletReady", "", kNow}};
  reconciler.UpdateK8sNode(k);
  EXPECT_EQ(reconciler.PairedNodes().at("node1").handover, plan::Handover::kNodeLane)
      << "not planned yet";

  reconciler.SetGpuSharing({{"node1", {.eligible = true}}});
  ReconcileResult r = reconciler.ReconcileNode("node1");
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.plan.owner, plan::NodeOwner::kGpuShared);
  EXPECT_EQ(reconciler.PairedNodes().at("node1").handover, plan::Handover::kHandedOver);
  EXPECT_THAT(events.reasons(), Contains("Normal GpuSharingStarted"));
  auto node = kube.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  const std::string since =
      (*node)["metadata"]["annotations"].value(ownership::kGpuSharedSinceAnnotation, "");
  EXPECT_FALSE(since.empty());

  k.annotations[ownership::kGpuSharedSinceAnnotation] = since;  // the informer's view
  reconciler.UpdateK8sNode(k);
  reconciler.SetGpuSharing({});
  r = reconciler.ReconcileNode("node1");
  EXPECT_EQ(r.plan.owner, plan::NodeOwner::kSlurm);
  EXPECT_EQ(reconciler.PairedNodes().at("node1").handover, plan::Handover::kNodeLane);
  EXPECT_THAT(events.reasons(), Contains("Normal GpuSharingEnded"));
}

}  // namespace
}  // namespace skb::bridge

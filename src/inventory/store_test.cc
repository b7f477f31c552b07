// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::inventory {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kLent[] = "example.org/lent-at";
constexpr char kSlurmNameLabel[] = "example.org/slurm-node-name";

K8sNode K(std::string name) {
  K8sNode k;
  k.name = std::move(name);
  k.gpu_capacity = k.gpu_allocatable = 8;
  return k;
}

K8sNode Labelled(std::string name, std::string slurm_name) {
  K8sNode k = K(std::move(name));
  k.labels[kSlurmNameLabel] = std::move(slurm_name);
  return k;
}

slurm::NodeView S(std::string name) {
  slurm::NodeView s;
  s.name = std::move(name);
  return s;
}

slurm::JobView J(uint32_t id, std::vector<std::string> nodes,
                 slurm::JobState st = slurm::JobState::kRunning) {
  slurm::JobView j;
  j.job_id = id;
  j.nodes = std::move(nodes);
  j.state = st;
  return j;
}

GpuPod P(std::string name, std::string node, std::string nominated = "") {
  GpuPod p;
  p.namespace_name = "ns";
  p.name = std::move(name);
  p.node_name = std::move(node);
  p.nominated_node_name = std::move(nominated);
  p.gpus = 8;
  return p;
}

NodeNameMap LabelMode() {
  NodeNameMap m;
  m.mode = NodeNameMap::Mode::kLabel;
  m.label = kSlurmNameLabel;
  return m;
}

std::vector<uint32_t> Ids(const std::vector<slurm::JobView>& jobs) {
  std::vector<uint32_t> ids;
  for (const auto& j : jobs) ids.push_back(j.job_id);
  return ids;
}

std::vector<std::string> Names(const std::vector<GpuPod>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p.name);
  return out;
}

class StoreTest : public ::testing::Test {
 protected:
  // node1..node3 on both sides.
  void ThreeNodes() {
    for (const char* n : {"node1", "node2", "node3"}) store_.UpdateK8sNode(K(n));
    store_.SetSlurmNodes({S("node1"), S("node2"), S("node3")});
  }

  Store store_{NodeNameMap{}, kLent};
};

TEST_F(StoreTest, AKubernetesNodeRelabelledToAnotherSlurmNameLeavesItsOldOne) {
  Store store(LabelMode(), kLent);
  EXPECT_THAT(store.UpdateK8sNode(Labelled("k8s-a", "gpu1")), ElementsAre("gpu1"));
  EXPECT_THAT(store.UpdateK8sNode(Labelled("k8s-a", "gpu2")), ElementsAre("gpu2", "gpu1"));
  EXPECT_FALSE(store.Node("gpu1").k8s);
  EXPECT_EQ(store.Node("gpu2").k8s->name, "k8s-a");
  // Without the label it pairs under its own name.
  EXPECT_THAT(store.UpdateK8sNode(K("k8s-a")), ElementsAre("k8s-a", "gpu2"));
  EXPECT_THAT(store.RemoveK8sNode("k8s-a"), ElementsAre("k8s-a"));
  EXPECT_THAT(store.k8s_nodes(), IsEmpty());
}

// A pod's node is named by the Slurm name its Kubernetes node paired under (here by label),
// bound or else nominated; a pod that moves marks both nodes.
TEST_F(StoreTest, PodsMarkAndJoinTheNodeTheirKubernetesNodePairedUnder) {
  Store store(LabelMode(), kLent);
  store.UpdateK8sNode(Labelled("k8s-a", "gpu1"));
  store.UpdateK8sNode(Labelled("k8s-b", "gpu2"));
  EXPECT_THAT(store.UpdatePod(P("web", "", "k8s-a")), ElementsAre("gpu1"));
  EXPECT_THAT(store.Node("gpu1").nominated_pods, ::testing::SizeIs(1));
  EXPECT_THAT(store.UpdatePod(P("web", "k8s-b")), ElementsAre("gpu2", "gpu1"));
  EXPECT_THAT(store.UpdatePod(P("unscheduled", "")), IsEmpty());
  EXPECT_THAT(Names(store.Node("gpu2").pods), ElementsAre("web"));
  EXPECT_THAT(store.Node("gpu1").nominated_pods, IsEmpty());
  EXPECT_THAT(store.RemovePod("ns", "web"), ElementsAre("gpu2"));
  EXPECT_THAT(store.RemovePod("ns", "web"), IsEmpty());
  EXPECT_THAT(store.Node("gpu2").pods, IsEmpty());
}

// A pod that asks for no GPU resource and uses ResourceClaims (DRA) joins its node's
// claim_pods, not the GPU pods the node lane's planners count; unbound, it joins nothing.
TEST_F(StoreTest, APodUsingClaimsAloneJoinsItsNodesClaimPods) {
  ThreeNodes();
  GpuPod claim = P("dra", "node1");
  claim.gpus = 0;
  claim.claims = {"ns/dra-gpu-x7"};
  EXPECT_THAT(store_.UpdatePod(claim), ElementsAre("node1"));
  EXPECT_THAT(store_.Node("node1").pods, IsEmpty());
  EXPECT_THAT(Names(store_.Node("node1").claim_pods), ElementsAre("dra"));
  claim.node_name = "";
  claim.nominated_node_name = "node2";
  store_.UpdatePod(claim);
  EXPECT_THAT(store_.Node("node1").claim_pods, IsEmpty());
  EXPECT_THAT(store_.Node("node2").nominated_pods, IsEmpty());
}

// The reservations' informer keeps a terminal reservation the live pods' cache dropped, and
// its view of a pod both caches hold wins.
TEST_F(StoreTest, TheReservationsViewOfAPodWinsOverTheLivePodsView) {
  ThreeNodes();
  GpuPod live = P("reservation-node1", "node1");
  live.phase = "Running";
  GpuPod failed = live;
  failed.phase = "Failed";
  store_.UpdatePod(live);
  EXPECT_THAT(store_.UpdateReservation(failed), ElementsAre("node1"));
  ASSERT_THAT(store_.Node("node1").pods, ::testing::SizeIs(1));
  EXPECT_EQ(store_.Node("node1").pods[0].phase, "Failed");
  EXPECT_THAT(store_.RemoveReservation("ns", "reservation-node1"), ElementsAre("node1"));
  EXPECT_EQ(store_.Node("node1").pods[0].phase, "Running");
}

TEST_F(StoreTest, ASlurmNodeIsMarkedWhenWhatThePlannerReadsOfItChanges) {
  EXPECT_THAT(store_.SetSlurmNodes({S("node1"), S("node2")}), ElementsAre("node1", "node2"));
  slurm::NodeView drained = S("node2");
  drained.drain = true;
  drained.reason = "admin";
  slurm::NodeView other = S("node1");
  other.gpus = {{"h100", 8}};  // not read by the planner's fingerprint
  EXPECT_THAT(store_.SetSlurmNodes({other, drained}), ElementsAre("node2"));
  EXPECT_THAT(store_.SetSlurmNodes({drained}), ElementsAre("node1"));
  EXPECT_THAT(store_.SetSlurmNodes({drained}), IsEmpty());
}

TEST_F(StoreTest, AJobMarksItsNodesOldAndNewWhenItStartsMovesOrEnds) {
  ThreeNodes();
  EXPECT_THAT(store_.SetSlurmJobs({J(1, {"node1"}), J(2, {"node2"}, slurm::JobState::kPending)}),
              ElementsAre("node1"));
  EXPECT_THAT(store_.SetSlurmJobs({J(1, {"node1"})}), IsEmpty());
  EXPECT_THAT(store_.SetSlurmJobs({J(1, {"node2", "node3"})}),
              ElementsAre("node1", "node2", "node3"));
  EXPECT_THAT(store_.SetSlurmJobs({J(1, {"node2", "node3"}, slurm::JobState::kComplete)}),
              ElementsAre("node2", "node3"));
  EXPECT_THAT(store_.Node("node2").jobs, IsEmpty());
}

// Jobs holding resources join every node they list (running, suspended, completing); pending
// jobs and nodes no side knows get nothing.
TEST_F(StoreTest, OnlyJobsHoldingANodeJoinIt) {
  ThreeNodes();
  slurm::JobView completing = J(4, {"node3"}, slurm::JobState::kComplete);
  completing.completing = true;
  store_.SetSlurmJobs({J(1, {"node1", "node2"}), J(2, {"node2"}, slurm::JobState::kPending),
                       J(3, {"node2"}, slurm::JobState::kSuspended), completing, J(5, {"node9"})});
  const Inventory inv = store_.Snapshot();
  EXPECT_THAT(Ids(inv.Find("node1")->jobs), ElementsAre(1u));
  EXPECT_THAT(Ids(inv.Find("node2")->jobs), ElementsAre(1u, 3u));
  EXPECT_THAT(Ids(inv.Find("node3")->jobs), ElementsAre(4u));
  EXPECT_THAT(inv.Find("node3")->ended_jobs, IsEmpty());
  EXPECT_EQ(inv.Find("node9"), nullptr);
}

// A change of one component of a heterogeneous job marks the nodes of every component, and
// each node holding one is given them all.
TEST_F(StoreTest, AHeterogeneousJobIsMarkedAndMergedWhole) {
  ThreeNodes();
  slurm::JobView leader = J(11, {"node1"}), other = J(12, {"node2"});
  leader.het_job_id = other.het_job_id = 11;
  other.het_job_offset = 1;
  store_.SetSlurmJobs({leader, other, J(13, {"node3"})});
  slurm::JobView suspended = other;
  suspended.state = slurm::JobState::kSuspended;
  EXPECT_THAT(store_.SetSlurmJobs({leader, suspended, J(13, {"node3"})}),
              ElementsAre("node1", "node2"));
  for (const char* name : {"node1", "node2"}) {
    EXPECT_THAT(Ids(store_.Node(name).jobs), ::testing::SizeIs(1)) << name;
    EXPECT_THAT(Ids(store_.Node(name).het_jobs), ElementsAre(11u, 12u)) << name;
  }
  EXPECT_THAT(store_.Node("node3").het_jobs, IsEmpty());
}

// Ended jobs are kept (and mark their nodes once) only when one of their nodes is lent: a
// lend requeues the jobs its signal ended. Pending and requeuing jobs have not ended.
TEST_F(StoreTest, EndedJobsAreKeptOnlyForLentNodes) {
  ThreeNodes();
  K8sNode lent = K("node2");
  lent.annotations[kLent] = "1000";
  store_.UpdateK8sNode(lent);
  slurm::JobView requeuing = J(9, {"node2"}, slurm::JobState::kFailed);
  requeuing.requeue_pending = true;
  const std::vector<slurm::JobView> jobs = {
      J(7, {"node2"}, slurm::JobState::kFailed), J(8, {"node1"}, slurm::JobState::kCancelled),
      requeuing, J(10, {"node2"}, slurm::JobState::kPending), J(11, {"node2"})};
  EXPECT_THAT(store_.SetSlurmJobs(jobs), ElementsAre("node2"));
  EXPECT_THAT(store_.SetSlurmJobs(jobs), IsEmpty());
  const ManagedNode n = store_.Node("node2");
  EXPECT_THAT(Ids(n.ended_jobs), ElementsAre(7u));
  EXPECT_THAT(Ids(n.jobs), ElementsAre(11u));
  EXPECT_THAT(store_.Node("node1").ended_jobs, IsEmpty());

  Store no_lending(NodeNameMap{}, "");
  no_lending.UpdateK8sNode(lent);
  no_lending.SetSlurmJobs(jobs);
  EXPECT_THAT(no_lending.Node("node2").ended_jobs, IsEmpty());
}

TEST_F(StoreTest, AGpuSharingViewMarksTheNodesWhoseViewChanged) {
  ThreeNodes();
  EXPECT_THAT(store_.SetGpuSharing({{"node1", {.eligible = true}}, {"node2", {.eligible = true}}}),
              ElementsAre("node1", "node2"));
  EXPECT_THAT(store_.SetGpuSharing({{"node1", {.eligible = true}}, {"node2", {.eligible = true}}}),
              IsEmpty());
  EXPECT_THAT(store_.SetGpuSharing({{"node1", {.eligible = true, .all_held = true}}}),
              ElementsAre("node1", "node2"));
  EXPECT_TRUE(store_.Node("node1").gpu_sharing.all_held);
  EXPECT_FALSE(store_.Node("node2").gpu_sharing.eligible);
}

// Guaranteed quotas: a change in the jobs within their tenant's guarantee marks the nodes of
// the jobs it touches (every component's node for a heterogeneous job); the same facts again
// mark nothing. A pending pod that turns borrowing marks the node it is nominated to, a
// reclaim the node it takes back (by its Kubernetes name).
TEST_F(StoreTest, AChangeInTheQuotaFactsMarksTheNodesItTouches) {
  Store store(LabelMode(), kLent);
  for (const char* n : {"node1", "node2", "node3", "node4"}) {
    store.UpdateK8sNode(Labelled(std::string("k8s-") + n, n));
  }
  slurm::JobView leader = J(11, {"node3"}), component = J(12, {"node4"});
  leader.het_job_id = component.het_job_id = 11;
  component.het_job_offset = 1;
  store.SetSlurmJobs({J(5, {"node1"}), J(6, {"node2"}), leader, component});

  // Job 99 holds no node the store knows (yet): SetSlurmJobs will mark its node.
  EXPECT_THAT(store.SetQuotaFacts({.guaranteed_jobs = {{5, "team-a"}, {99, "team-b"}}}),
              ElementsAre("node1"));
  EXPECT_EQ(store.Node("node1").guaranteed_jobs, (GuaranteedJobs{{5, "team-a"}}));
  EXPECT_THAT(store.Node("node2").guaranteed_jobs, IsEmpty());
  EXPECT_THAT(store.SetQuotaFacts({.guaranteed_jobs = {{5, "team-a"}, {99, "team-b"}}}), IsEmpty());
  EXPECT_THAT(store.SetQuotaFacts({.guaranteed_jobs = {{5, "team-b"}, {12, "team-a"}}}),
              ElementsAre("node1", "node3", "node4"));
  EXPECT_EQ(store.Node("node3").guaranteed_jobs, (GuaranteedJobs{{12, "team-a"}}));

  GpuPod pod = P("serve-3", "", "k8s-node2");
  pod.phase = "Pending";
  store.UpdatePod(pod);
  QuotaFacts facts = {.guaranteed_jobs = {{5, "team-b"}, {12, "team-a"}},
                      .borrowing_pods = {{"ns/serve-3", "beyond"}}};
  EXPECT_THAT(store.SetQuotaFacts(facts), ElementsAre("node2"));
  EXPECT_EQ(store.Node("node2").borrowing_nominated,
            (std::map<std::string, std::string>{{"ns/serve-3", "beyond"}}));

  facts.reclaims["k8s-node1"] = {.tenant = "team-a", .job_id = 40};
  EXPECT_THAT(store.SetQuotaFacts(facts), ElementsAre("node1"));
  ASSERT_TRUE(store.Node("node1").reclaim);
  EXPECT_EQ(store.Node("node1").reclaim->job_id, 40u);
}

// Node(name) and Snapshot() are one merge: every node of the snapshot is the node Node()
// gives, overlays included, and the snapshot lists every node either side knows.
TEST_F(StoreTest, TheSnapshotHoldsTheNodesNodeMerges) {
  Store store(LabelMode(), kLent);
  K8sNode lent = Labelled("k8s-a", "gpu1");
  lent.annotations[kLent] = "1000";
  store.UpdateK8sNode(lent);
  store.UpdateK8sNode(Labelled("k8s-b", "gpu2"));
  store.UpdateK8sNode(K("k8s-only"));
  store.SetSlurmNodes({S("gpu1"), S("gpu2"), S("slurm-only")});
  slurm::JobView leader = J(11, {"gpu1"}), other = J(12, {"gpu2"});
  leader.het_job_id = other.het_job_id = 11;
  other.het_job_offset = 1;
  store.SetSlurmJobs(
      {leader, other, J(3, {"gpu1", "slurm-only"}), J(4, {"gpu1"}, slurm::JobState::kCancelled)});
  store.UpdatePod(P("bound", "k8s-b"));
  store.UpdatePod(P("waiting", "", "k8s-a"));
  // A pod on a Kubernetes node the store has not seen joins by the name rule alone.
  store.UpdatePod(P("by-name", "slurm-only"));
  store.SetGpuSharing({{"gpu2", {.eligible = true}}});
  store.SetQuotaFacts({.guaranteed_jobs = {{12, "team-a"}},
                       .borrowing_pods = {{"ns/waiting", "beyond"}},
                       .reclaims = {{"k8s-b", {.tenant = "team-a"}}}});

  const Inventory inv = store.Snapshot();
  std::vector<std::string> names;
  for (const ManagedNode& n : inv.nodes()) names.push_back(n.name);
  EXPECT_THAT(names, ElementsAre("gpu1", "gpu2", "k8s-only", "slurm-only"));
  for (const ManagedNode& s : inv.nodes()) {
    const ManagedNode n = store.Node(s.name);
    EXPECT_EQ(s.k8s.has_value(), n.k8s.has_value()) << s.name;
    EXPECT_EQ(s.slurm.has_value(), n.slurm.has_value()) << s.name;
    EXPECT_EQ(s.jobs, n.jobs) << s.name;
    EXPECT_EQ(s.het_jobs, n.het_jobs) << s.name;
    EXPECT_EQ(s.ended_jobs, n.ended_jobs) << s.name;
    EXPECT_EQ(Names(s.pods), Names(n.pods)) << s.name;
    EXPECT_EQ(Names(s.nominated_pods), Names(n.nominated_pods)) << s.name;
    EXPECT_EQ(s.guaranteed_jobs, n.guaranteed_jobs) << s.name;
    EXPECT_EQ(s.borrowing_nominated, n.borrowing_nominated) << s.name;
    EXPECT_EQ(s.reclaim, n.reclaim) << s.name;
    EXPECT_EQ(s.gpu_sharing, n.gpu_sharing) << s.name;
  }
  const ManagedNode& gpu1 = *inv.Find("gpu1");
  EXPECT_THAT(Ids(gpu1.jobs), ElementsAre(3u, 11u));
  EXPECT_THAT(Ids(gpu1.het_jobs), ElementsAre(11u, 12u));
  EXPECT_THAT(Ids(gpu1.ended_jobs), ElementsAre(4u));
  EXPECT_THAT(Names(gpu1.nominated_pods), ElementsAre("waiting"));
  EXPECT_EQ(gpu1.guaranteed_jobs, (GuaranteedJobs{{12, "team-a"}}));
  EXPECT_EQ(gpu1.borrowing_nominated.count("ns/waiting"), 1u);
  const ManagedNode& gpu2 = *inv.Find("gpu2");
  EXPECT_THAT(Names(gpu2.pods), ElementsAre("bound"));
  EXPECT_TRUE(gpu2.gpu_sharing.eligible);
  ASSERT_TRUE(gpu2.reclaim);
  EXPECT_EQ(gpu2.reclaim->tenant, "team-a");
  EXPECT_THAT(Names(inv.Find("slurm-only")->pods), ElementsAre("by-name"));
  EXPECT_THAT(Ids(inv.Find("slurm-only")->jobs), ElementsAre(3u));
  EXPECT_FALSE(store.Node("unknown").k8s);
}

}  // namespace
}  // namespace skb::inventory

// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/inventory_queries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"
#include "src/ownership/time_codec.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;
using inventory::K8sNode;
using inventory::ManagedNode;
using std::chrono::hours;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Clock::TimePoint kNow = Clock::TimePoint{} + hours(24 * 365 * 50);

inventory::NodeCondition Cond(std::string type, std::string status, std::string message = "") {
  return {std::move(type), std::move(status), "Reason", std::move(message), kNow - hours(1)};
}

struct Cluster {
  std::vector<K8sNode> k8s;
  std::vector<slurm::NodeView> slurm;
  std::vector<slurm::JobView> jobs;
  std::vector<inventory::GpuPod> pods;
};

K8sNode Node(std::string name) {
  K8sNode k;
  k.name = std::move(name);
  k.labels[kGpuProductLabel] = "NVIDIA-H100-80GB-HBM3";
  k.gpu_capacity = k.gpu_allocatable = 8;
  k.conditions = {Cond("Ready", "True")};
  return k;
}

slurm::NodeView SlurmNode(std::string name) {
  slurm::NodeView s;
  s.name = std::move(name);
  s.base_state = slurm::NodeBaseState::kIdle;
  s.active_features = {"h100"};
  return s;
}

class InventoryQueriesTest : public ::testing::Test {
 protected:
  InventoryQueries Queries(
      std::function<std::shared_ptr<const std::vector<slurm::JobView>>()> jobs = nullptr) {
    std::function<std::optional<devices::Observation>()> devices;
    if (devices_) devices = [this] { return devices_; };
    return InventoryQueries(
        {.snapshot =
             [this] {
               return inventory::Inventory::Build(c_.k8s, c_.slurm, c_.jobs, c_.pods,
                                                  inventory::NodeNameMap{});
             },
         .plan =
             [this](const std::string& n) {
               return plan_for_ = n, health::NodePlan{.explanation = {"rule x: fine"}};
             },
         .leader = [] { return std::string("bridge-0"); },
         .jobs = std::move(jobs),
         .ready = [](std::string* why) { return *why = "ready", true; },
         .devices = std::move(devices),
         .clock = &clock_},
        &cfg_);
  }
  v1::Response Ask(v1::Request req) {
    v1::Response resp;
    EXPECT_TRUE(Queries().Handle(req, &resp));
    return resp;
  }

  // node1 for Slurm; node2 drained for a lend to inference/web-0.
  void TwoNodesSecondLent() {
    c_.k8s = {Node("node1"), Node("node2")};
    c_.slurm = {SlurmNode("node1"), SlurmNode("node2")};
    c_.slurm[1].drain = true;
    c_.slurm[1].reason = "k8s-bridge: lent to inference/web-0";
  }

  config::Config cfg_;
  SimulatedClock clock_{kNow};
  Cluster c_;
  std::optional<devices::Observation> devices_;  // set: gpu_sharing is on
  std::string plan_for_;
};

TEST_F(InventoryQueriesTest, ListsEveryNodeWithItsOwnerHealthAndWork) {
  c_.k8s = {Node("node1"), Node("node2"), Node("node3")};
  c_.k8s[1].conditions.push_back(Cond("GPUHealthy", "False", "XID 79"));
  c_.slurm = {SlurmNode("node1"), SlurmNode("node2"), SlurmNode("node3"), SlurmNode("node9")};
  c_.slurm[1].drain = true;
  c_.slurm[1].reason = "k8s-bridge: GPUHealthy=False: XID 79";
  c_.slurm[2].drain = true;
  c_.slurm[2].reason = "k8s-bridge: lent to inference/web-0";
  slurm::JobView job;
  job.job_id = 42;
  job.state = slurm::JobState::kRunning;
  job.nodes = {"node1"};
  c_.jobs = {job};
  c_.pods = {{.namespace_name = "inference",
              .name = "web-0",
              .node_name = "node3",
              .gpus = 8,
              .phase = "Running"}};
  v1::Request req;
  req.mutable_list_nodes();
  v1::Response resp = Ask(req);
  ASSERT_TRUE(resp.has_list_nodes());
  const auto& l = resp.list_nodes();
  EXPECT_EQ(l.leader(), "bridge-0");
  EXPECT_TRUE(l.ready());
  ASSERT_EQ(l.nodes_size(), 4);
  EXPECT_EQ(l.nodes(0).name(), "node1");
  EXPECT_EQ(l.nodes(0).owner(), "slurm");
  EXPECT_EQ(l.nodes(0).gpus(), 8);
  EXPECT_EQ(l.nodes(0).gpu_model(), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(l.nodes(0).k8s_health(), "Ready");
  EXPECT_THAT(l.nodes(0).jobs(), ElementsAre(42u));
  EXPECT_THAT(l.nodes(0).features(), ElementsAre("h100"));
  EXPECT_EQ(l.nodes(1).owner(), "unhealthy");
  EXPECT_THAT(l.nodes(1).k8s_health(), HasSubstr("GPUHealthy=False"));
  EXPECT_EQ(l.nodes(2).owner(), "k8s");
  EXPECT_THAT(l.nodes(2).pods(), ElementsAre("inference/web-0"));
  EXPECT_EQ(l.nodes(3).name(), "node9");
  EXPECT_EQ(l.nodes(3).owner(), "unknown") << "only Slurm knows node9";
  EXPECT_FALSE(l.nodes(3).in_kubernetes());
}

TEST_F(InventoryQueriesTest, DescribesByEitherNameWithConditionsAndTheWhy) {
  c_.k8s = {Node("gpu-1")};
  c_.k8s[0].taints = {{"nvidia.com/gpu.health", "unhealthy", "NoSchedule"}};
  c_.k8s[0].unschedulable = true;
  c_.slurm = {SlurmNode("gpu-1")};
  v1::Request req;
  req.mutable_describe_node()->set_name("gpu-1");
  v1::Response resp = Ask(req);
  ASSERT_TRUE(resp.has_describe_node()) << resp.DebugString();
  const auto& d = resp.describe_node();
  EXPECT_EQ(plan_for_, "gpu-1");
  EXPECT_THAT(d.explanation(), ElementsAre("rule x: fine"));
  ASSERT_EQ(d.conditions_size(), 1);
  EXPECT_EQ(d.conditions(0).type(), "Ready");
  EXPECT_THAT(d.taints(), ElementsAre("nvidia.com/gpu.health=unhealthy:NoSchedule"));
  EXPECT_TRUE(d.unschedulable());
}

TEST_F(InventoryQueriesTest, UnknownNodeIsNotFoundAndOtherBodiesAreNotOurs) {
  c_.k8s = {Node("node1")};
  v1::Request req;
  req.mutable_describe_node()->set_name("nope");
  v1::Response resp = Ask(req);
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(resp.error().code(), v1::Error::NOT_FOUND);
  EXPECT_THAT(resp.error().message(), HasSubstr("'nope'"));
  v1::Request ping;
  ping.mutable_ping();
  v1::Response unused;
  EXPECT_FALSE(Queries().Handle(ping, &unused));
}

TEST_F(InventoryQueriesTest, ListsJobsWithTheirNodesOwnerAndPreemptionPolicy) {
  cfg_.lending.enabled = true;
  cfg_.admission.preemptible_partitions = {"scavenger"};
  TwoNodesSecondLent();
  slurm::JobView run;
  run.job_id = 42;
  run.user_name = "alice";
  run.partition = "scavenger";
  run.state = slurm::JobState::kRunning;
  run.nodes = {"node1"};
  run.gpus_per_node = 2;
  run.requeue = true;
  run.admin_comment = "k8s-bridge-preempted=1000,2000@inference/web-0";
  slurm::JobView pending;
  pending.job_id = 43;
  pending.user_id = 1001;
  pending.partition = "gpu";
  pending.state = slurm::JobState::kPending;
  pending.state_reason = "Resources";
  slurm::JobView done;
  done.job_id = 41;
  done.state = slurm::JobState::kComplete;
  c_.jobs = {run};
  auto all = std::make_shared<const std::vector<slurm::JobView>>(
      std::vector<slurm::JobView>{pending, run, done});
  InventoryQueries q = Queries([&] { return all; });
  v1::Request req;
  req.mutable_list_jobs();
  v1::Response resp;
  ASSERT_TRUE(q.Handle(req, &resp));
  ASSERT_TRUE(resp.has_list_jobs()) << resp.DebugString();
  const auto& l = resp.list_jobs();
  EXPECT_EQ(l.leader(), "bridge-0");
  ASSERT_EQ(l.jobs_size(), 2) << "the finished job only with --all";
  const auto& r = l.jobs(0);
  EXPECT_EQ(r.job_id(), 42u);
  EXPECT_EQ(r.user(), "alice");
  EXPECT_EQ(r.state(), "RUNNING");
  EXPECT_THAT(r.nodes(), ElementsAre("node1"));
  EXPECT_EQ(r.owner(), "slurm");
  EXPECT_TRUE(r.preemptible()) << r.preemptible_why();
  EXPECT_THAT(r.preemptible_why(), HasSubstr("scavenger"));
  EXPECT_EQ(r.preemptions(), 2u);
  EXPECT_EQ(r.last_preempted_unix(), 2000);
  const auto& p = l.jobs(1);
  EXPECT_EQ(p.job_id(), 43u);
  EXPECT_EQ(p.user(), "") << "no name: bridgectl looks up the uid";
  EXPECT_EQ(p.user_id(), 1001u);
  EXPECT_EQ(p.state_reason(), "Resources");
  EXPECT_EQ(p.owner(), "");
  EXPECT_FALSE(p.preemptible());
  req.mutable_list_jobs()->set_all(true);
  v1::Response every;
  ASSERT_TRUE(q.Handle(req, &every));
  EXPECT_EQ(every.list_jobs().jobs_size(), 3);
  EXPECT_EQ(every.list_jobs().jobs(0).job_id(), 41u);

  // Within its tenant's guarantee the lend never takes it, and get jobs says so.
  const v1::JobSummary kept = SummarizeJob(run, {{"node1", "slurm"}}, cfg_, kNow, {{42, "team-a"}});
  EXPECT_FALSE(kept.preemptible());
  EXPECT_EQ(kept.preemptible_why(), "runs within tenant team-a's guarantee (quotas)");
}

TEST_F(InventoryQueriesTest, JobsOnLentNodesShowTheOwnerAndWithoutAJobFeedTheSnapshotJobs) {
  TwoNodesSecondLent();
  slurm::JobView j;
  j.job_id = 7;
  j.state = slurm::JobState::kRunning;
  j.nodes = {"node1", "node2"};
  c_.jobs = {j};
  v1::Request req;
  req.mutable_list_jobs();
  v1::Response resp = Ask(req);
  ASSERT_EQ(resp.list_jobs().jobs_size(), 1) << "listed once although it holds two nodes";
  EXPECT_EQ(resp.list_jobs().jobs(0).owner(), "slurm,k8s");
  EXPECT_FALSE(resp.list_jobs().jobs(0).preemptible());
  EXPECT_THAT(resp.list_jobs().jobs(0).preemptible_why(), HasSubstr("lending is off"));
}

// node1 shared GPU by GPU (8 DRA devices, no nvidia.com/gpu allocatable): job 42 on GPUs
// 0-2, 3-4 idle (Slurm's), placeholder 77 on 5-7 with inference/web-0 on 5-6; node2 not.
devices::Observation SharedNode1() {
  devices::NodeDevices n;
  n.node = "node1";
  n.model = "NVIDIA-H100-80GB-HBM3";
  for (int64_t i = 0; i < 8; ++i) {
    n.devices.push_back({.index = i, .name = StrCat("gpu-", i), .k8s_hold = i < 5});
  }
  devices::NodeJob job;
  job.view.job_id = 42;
  job.view.state = slurm::JobState::kRunning;
  job.view.start_time = 1700000000;
  job.indices = {0, 1, 2};
  n.jobs = {job};
  n.placeholders = {{.job_id = 77,
                     .pod = "inference/web-0",
                     .gpus = 3,
                     .running = true,
                     .indices = {5, 6, 7},
                     .start = kNow - hours(1)}};
  n.claims = {{.pod = "inference/web-0", .devices = {"gpu-5", "gpu-6"}}};
  devices::Observation o;
  o.nodes = {n};
  o.node_granular["node2"] = "no ResourceSlice of driver gpu.nvidia.com";
  return o;
}

TEST_F(InventoryQueriesTest, ListsEachSharedGpuWithItsOwnerWorkAndSince) {
  c_.k8s = {Node("node1"), Node("node2")};
  c_.k8s[0].gpu_capacity = c_.k8s[0].gpu_allocatable = 0;  // DRA: no extended resource
  c_.k8s[0].labels.clear();
  c_.slurm = {SlurmNode("node1"), SlurmNode("node2")};
  devices_ = SharedNode1();
  v1::Request req;
  req.mutable_list_nodes();
  const v1::Response resp = Ask(req);
  ASSERT_EQ(resp.list_nodes().nodes_size(), 2);
  const v1::NodeSummary& n1 = resp.list_nodes().nodes(0);
  EXPECT_EQ(n1.gpu_mode(), "gpu");
  EXPECT_EQ(n1.gpu_mode_reason(), "");
  EXPECT_EQ(n1.gpus(), 8) << "the device count when Kubernetes has no allocatable";
  EXPECT_EQ(n1.gpu_model(), "NVIDIA-H100-80GB-HBM3");
  ASSERT_EQ(n1.gpu_owners_size(), 8);
  std::vector<std::string> owners;
  std::vector<uint32_t> jobs;
  for (const auto& g : n1.gpu_owners()) {
    owners.push_back(g.owner());
    jobs.push_back(g.job_id());
  }
  EXPECT_THAT(owners,
              ElementsAre("slurm", "slurm", "slurm", "idle", "idle", "k8s", "k8s", "held-for-k8s"));
  EXPECT_THAT(jobs, ElementsAre(42u, 42u, 42u, 0u, 0u, 77u, 77u, 77u));
  EXPECT_EQ(n1.gpu_owners(6).index(), 6);
  EXPECT_EQ(n1.gpu_owners(6).device(), "gpu-6");
  EXPECT_THAT(n1.gpu_owners(6).pods(), ElementsAre("inference/web-0"));
  EXPECT_EQ(n1.gpu_owners(7).pods_size(), 0);
  EXPECT_EQ(n1.gpu_owners(0).since_unix(), 1700000000);
  EXPECT_EQ(n1.gpu_owners(3).since_unix(), 0) << "an idle GPU has no start to show";
  EXPECT_EQ(n1.gpu_owners(5).since_unix(), ownership::ToUnix(kNow - hours(1)));
  const v1::NodeSummary& n2 = resp.list_nodes().nodes(1);
  EXPECT_EQ(n2.gpu_mode(), "node");
  EXPECT_EQ(n2.gpu_mode_reason(), "no ResourceSlice of driver gpu.nvidia.com");
  EXPECT_EQ(n2.gpu_owners_size(), 0);
  EXPECT_EQ(n2.owner(), "slurm") << "the whole-node owner as before";
}

TEST_F(InventoryQueriesTest, AMoveInFlightAndGpuSharingOffAreNamed) {
  c_.k8s = {Node("node1")};
  c_.slurm = {SlurmNode("node1")};
  v1::Request req;
  req.mutable_describe_node()->set_name("node1");
  const v1::Response off = Ask(req);
  EXPECT_EQ(off.describe_node().node().gpu_mode(), "node");
  EXPECT_EQ(off.describe_node().node().gpu_mode_reason(), "gpu_sharing is off");
  devices_ = SharedNode1();
  // The give of GPU 7 has not lifted the Slurm-side hold yet: both sides hold it.
  devices_->nodes[0].devices[7].k8s_hold = true;
  const v1::Response on = Ask(req);
  ASSERT_TRUE(on.has_describe_node()) << on.DebugString();
  const v1::NodeSummary& n = on.describe_node().node();
  EXPECT_EQ(n.gpu_mode(), "gpu");
  ASSERT_EQ(n.gpu_owners_size(), 8);
  EXPECT_EQ(n.gpu_owners(7).owner(), "to-k8s");
  EXPECT_EQ(n.gpu_owners(7).job_id(), 77u);
  EXPECT_EQ(n.gpus(), 8) << "Kubernetes' allocatable wins when it has one";
}

}  // namespace
}  // namespace skb::bridge

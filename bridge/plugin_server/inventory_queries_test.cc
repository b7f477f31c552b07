#include "bridge/plugin_server/inventory_queries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;
using inventory::K8sNode;
using inventory::ManagedNode;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using std::chrono::hours;

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
  InventoryQueries Queries() {
    return InventoryQueries(
        {.snapshot =
             [this] {
               return inventory::Inventory::Build(c_.k8s, c_.slurm, c_.jobs, c_.pods,
                                                  inventory::NodeNameMap{});
             },
         .plan = [this](const std::string& n) { return plan_for_ = n, health::NodePlan{
                                                           .explanation = {"rule x: fine"}}; },
         .leader = [] { return std::string("bridge-0"); },
         .ready = [](std::string* why) { return *why = "ready", true; },
         .clock = &clock_},
        &cfg_);
  }
  v1::Response Ask(v1::Request req) {
    v1::Response resp;
    EXPECT_TRUE(Queries().Handle(req, &resp));
    return resp;
  }

  config::Config cfg_;
  SimulatedClock clock_{kNow};
  Cluster c_;
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
  c_.pods = {{.namespace_name = "inference", .name = "web-0", .node_name = "node3", .gpus = 8,
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

}  // namespace
}  // namespace skb::bridge

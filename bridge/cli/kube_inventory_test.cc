// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/kube_inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bridge/cli/format.h"
#include "k8s/fake_kube_client.h"
#include "k8s/time_format.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message = "") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", "2026-11-29T06:00:00Z"}};
}

json Node(const std::string& name, json conditions, json annotations = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}},
            {"annotations", std::move(annotations)}}},
          {"status",
           {{"conditions", std::move(conditions)},
            {"capacity", {{"nvidia.com/gpu", "8"}}},
            {"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

json Pod(const std::string& ns, const std::string& name, const std::string& node, int gpus,
         const std::string& phase, json labels = json::object(),
         json annotations = json::object()) {
  json requests = json::object();
  if (gpus > 0) requests["nvidia.com/gpu"] = std::to_string(gpus);
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"labels", std::move(labels)},
        {"annotations", std::move(annotations)}}},
      {"spec",
       {{"nodeName", node},
        {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", requests}}}}})}}},
      {"status", {{"phase", phase}}}};
}

const Clock::TimePoint kNow = Clock::TimePoint{} + std::chrono::hours(24 * 365 * 57);

class KubeInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const json published =
        json::array({Condition("Ready", "True", "KubeletReady"),
                     Condition("SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding")});
    // node1: Slurm's, two jobs on it.
    json n1 = published;
    n1.push_back(Condition("SlurmDrained", "False", "NotDrained"));
    Add(k8s::Resource::Nodes(), "", Node("node1", n1));
    Add(k8s::Resource::Pods(), "slurm-bridge",
        Pod("slurm-bridge", "reserve-node1", "node1", 8, "Running",
            {{"slurm-k8s-bridge.io/role", "reservation"}},
            {{"slurm-k8s-bridge.io/jobs", "7 alice ml 8 1700000000;9 bob ml 8 1700000100"},
             {"slurm-k8s-bridge.io/jobs-updated-at", "1700000200"},
             {"slurm-k8s-bridge.io/slurm-node", "gpu1"}}));
    // node2: lent to default/infer-a, which runs there.
    json n2 = published;
    n2.push_back(Condition("SlurmDrained", "True", "DrainedByBridge",
                           "k8s-bridge: lent to default/infer-a"));
    Add(k8s::Resource::Nodes(), "",
        Node("node2", n2,
             {{"slurm-k8s-bridge.io/lent-at", "1700000000"},
              {"slurm-k8s-bridge.io/lent-to", "default/infer-a"}}));
    Add(k8s::Resource::Pods(), "default", Pod("default", "infer-a", "node2", 8, "Running"));
    // Not GPU pods, or over: not listed.
    Add(k8s::Resource::Pods(), "default", Pod("default", "web", "node2", 0, "Running"));
    Add(k8s::Resource::Pods(), "default", Pod("default", "old", "node2", 1, "Succeeded"));
    // A node the bridge never wrote on: not one of its nodes.
    Add(k8s::Resource::Nodes(), "", Node("cpu1", json::array({Condition("Ready", "True", "")})));
  }
  void Add(const k8s::Resource& r, const std::string& ns, const json& obj) {
    auto s = kube_.Create(r, ns, obj);
    ASSERT_TRUE(s.ok()) << s.status();
  }
  KubeView View() {
    auto v = ReadKubeView(kube_, kNow);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : KubeView{};
  }

  k8s::FakeKubeClient kube_;
};

TEST_F(KubeInventoryTest, ListsTheNodesTheBridgePublishedWithTheOwnerItsRecordsSay) {
  const api::v1::ListNodesResponse r = NodesFromKubernetes(View());
  EXPECT_EQ(r.source(), "kubernetes");
  ASSERT_EQ(r.nodes_size(), 2);
  const api::v1::NodeSummary& slurm = r.nodes(0);
  EXPECT_EQ(slurm.name(), "gpu1");  // the Slurm name its reservation carries
  EXPECT_EQ(slurm.k8s_name(), "node1");
  EXPECT_EQ(slurm.owner(), "slurm");
  EXPECT_EQ(slurm.gpus(), 8);
  EXPECT_EQ(slurm.slurm_state(), "?");
  EXPECT_THAT(slurm.jobs(), ElementsAre(7u, 9u));
  EXPECT_THAT(slurm.pods(), ElementsAre("slurm-bridge/reserve-node1"));
  EXPECT_THAT(slurm.unknown(), Not(Contains("jobs")));
  const api::v1::NodeSummary& lent = r.nodes(1);
  EXPECT_EQ(lent.name(), "node2");
  EXPECT_EQ(lent.owner(), "k8s");
  EXPECT_EQ(lent.slurm_state(), "?+drain");
  EXPECT_EQ(lent.slurm_reason(), "k8s-bridge: lent to default/infer-a");
  EXPECT_THAT(lent.pods(), ElementsAre("default/infer-a"));
  EXPECT_THAT(lent.unknown(), Contains("jobs"));

  // Printed by the daemon's format code, the unknowns as "?" and a note saying where from.
  const std::string table = Render(NodesListing(r, /*wide=*/true));
  EXPECT_THAT(table, HasSubstr("node2  H100-80GB-HBM3x8  k8s    Ready  ?+drain"));
  EXPECT_THAT(table, HasSubstr("from Kubernetes"));
  EXPECT_EQ(NodesJson(r)["source"], "kubernetes");
  EXPECT_EQ(NodesJson(r)["nodes"][1]["unknown"][0], "jobs");
}

TEST_F(KubeInventoryTest, TheLeaseSaysWhetherWhatWasPublishedIsKeptUpToDate) {
  api::v1::ListNodesResponse r = NodesFromKubernetes(View());
  EXPECT_FALSE(r.ready());
  EXPECT_THAT(r.ready_reason(), HasSubstr("Lease slurm-bridge/slurm-k8s-bridge was not read"));
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "slurm-k8s-bridge"}, {"namespace", "slurm-bridge"}}},
                {"spec",
                 {{"holderIdentity", "bridge-a"},
                  {"leaseDurationSeconds", 15},
                  {"renewTime", k8s::FormatTime(kNow - std::chrono::seconds(3))}}}};
  Add(k8s::Resource::Leases(), "slurm-bridge", lease);
  r = NodesFromKubernetes(View());
  EXPECT_TRUE(r.ready()) << r.ready_reason();
  EXPECT_EQ(r.leader(), "bridge-a");
  lease["spec"]["renewTime"] = k8s::FormatTime(kNow - std::chrono::seconds(95));
  ASSERT_TRUE(kube_.Update(k8s::Resource::Leases(), "slurm-bridge", lease).ok());
  const KubeView stale = View();
  r = NodesFromKubernetes(stale);
  EXPECT_FALSE(r.ready());
  EXPECT_THAT(r.ready_reason(), HasSubstr("has not renewed it for 95s"));
  EXPECT_THAT(Render(NodesListing(r, false)), HasSubstr("may be stale"));
  auto d = DescribeFromKubernetes(stale, "node2");
  ASSERT_TRUE(d.ok());
  EXPECT_THAT(d->explanation(0), HasSubstr("may be stale"));
}

TEST_F(KubeInventoryTest, DescribeByEitherNameShowsTheRecordsAndTheBridgesEventsButNoPlan) {
  KubeView view = View();
  view.events.push_back({{"involvedObject", {{"kind", "Node"}, {"name", "node1"}}},
                         {"type", "Normal"},
                         {"reason", "ReservationCreated"},
                         {"message", "Created reservation slurm-bridge/reserve-node1"},
                         {"lastTimestamp", "2026-11-29T06:01:00Z"}});
  auto d = DescribeFromKubernetes(view, "gpu1");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->node().k8s_name(), "node1");
  EXPECT_EQ(d->source(), "kubernetes");
  EXPECT_THAT(d->explanation(), Contains(HasSubstr("owner: slurm")));
  EXPECT_THAT(d->explanation(), Contains(HasSubstr("as of 2023-11-14T22:16:40Z")));
  ASSERT_EQ(d->events_size(), 1);
  const std::string text = DescribeText(*d);
  EXPECT_THAT(text, HasSubstr("Source:"));
  EXPECT_THAT(text, HasSubstr("Normal ReservationCreated: Created reservation"));
  EXPECT_THAT(text, HasSubstr("only the daemon plans"));
  EXPECT_THAT(text, Not(HasSubstr("the node is where the rules want it")));
  EXPECT_THAT(text, HasSubstr("SlurmNodeHealthy"));
  EXPECT_TRUE(DescribeFromKubernetes(view, "node1").ok());
  auto missing = DescribeFromKubernetes(view, "cpu1");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(KubeInventoryTest, ALendUnderWayAndAReturn) {
  ASSERT_TRUE(kube_
                  .Patch(k8s::Resource::Pods(), "slurm-bridge", "reserve-node1",
                         k8s::PatchType::kJsonMerge,
                         {{"metadata", {{"finalizers", {"slurm-k8s-bridge.io/reservation"}}}}})
                  .ok());
  ASSERT_TRUE(kube_.Delete(k8s::Resource::Pods(), "slurm-bridge", "reserve-node1", {}).ok());
  Add(k8s::Resource::Pods(), "slurm-bridge",
      Pod("slurm-bridge", "reserve-node2", "node2", 8, "Pending",
          {{"slurm-k8s-bridge.io/role", "reservation"}}, {{"slurm-k8s-bridge.io/jobs", ""}}));
  const api::v1::ListNodesResponse r = NodesFromKubernetes(View());
  ASSERT_EQ(r.nodes_size(), 2);
  EXPECT_EQ(r.nodes(0).owner(), "lending");
  EXPECT_EQ(r.nodes(1).owner(), "returning");
  EXPECT_THAT(r.nodes(1).pods(), ElementsAre("slurm-bridge/reserve-node2", "default/infer-a"));
}

}  // namespace
}  // namespace skb::bridge::cli

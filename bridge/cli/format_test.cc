#include "bridge/cli/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;
using ::testing::HasSubstr;
using ::testing::Not;

v1::ListNodesResponse TwoNodes() {
  v1::ListNodesResponse r;
  r.set_leader("bridge-0");
  r.set_ready(true);
  auto* a = r.add_nodes();
  a->set_name("node1");
  a->set_gpu_model("NVIDIA-H100-80GB-HBM3");
  a->set_gpus(8);
  a->set_owner("slurm");
  a->set_k8s_health("Ready");
  a->set_slurm_state("mixed");
  a->add_jobs(12);
  a->add_jobs(13);
  auto* b = r.add_nodes();
  b->set_name("node2");
  b->set_gpus(4);
  b->set_owner("unhealthy");
  b->set_k8s_health("GPUHealthy=False: XID 79");
  b->set_slurm_state("idle+drain");
  b->set_slurm_reason("k8s-bridge: GPUHealthy=False: XID 79");
  return r;
}

TEST(Format, TablePadsColumnsAndTrimsLines) {
  EXPECT_EQ(Table({{"A", "BB", "C"}, {"long", "x", ""}}), "A     BB  C\nlong  x\n");
}

TEST(Format, NodesTableShowsModelTimesCountAndJobs) {
  std::string t = NodesTable(TwoNodes(), false);
  EXPECT_THAT(t, HasSubstr("NODE"));
  EXPECT_THAT(t, HasSubstr("H100-80GB-HBM3x8"));
  EXPECT_THAT(t, HasSubstr("12,13"));
  EXPECT_THAT(t, HasSubstr("k8s-bridge: GPUHealthy=False: XID 79"));
  EXPECT_THAT(t, Not(HasSubstr("FEATURES")));
  EXPECT_THAT(NodesTable(TwoNodes(), true), HasSubstr("FEATURES"));
  auto not_ready = TwoNodes();
  not_ready.set_ready(false);
  not_ready.set_ready_reason("pod cache not synced");
  EXPECT_THAT(NodesTable(not_ready, false), HasSubstr("not ready: pod cache not synced"));
}

TEST(Format, JsonKeepsEveryField) {
  nlohmann::json j = NodesJson(TwoNodes());
  EXPECT_EQ(j["leader"], "bridge-0");
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["jobs"], nlohmann::json::array({12, 13}));
  EXPECT_EQ(j["nodes"][1]["slurmReason"], "k8s-bridge: GPUHealthy=False: XID 79");
}

TEST(Format, DescribeSaysWhyAndWhatItWouldDo) {
  v1::DescribeNodeResponse d;
  *d.mutable_node() = TwoNodes().nodes(1);
  d.add_explanation("condition GPUHealthy=False fires: drain");
  auto* c = d.add_conditions();
  c->set_type("GPUHealthy");
  c->set_status("False");
  c->set_message("XID 79");
  std::string t = DescribeText(d);
  EXPECT_THAT(t, HasSubstr("Owner:          unhealthy"));
  EXPECT_THAT(t, HasSubstr("condition GPUHealthy=False fires: drain"));
  EXPECT_THAT(t, HasSubstr("none (the node is where the rules want it)"));
  EXPECT_THAT(t, HasSubstr("XID 79"));
  d.add_planned_actions("DrainSlurmNode node2");
  EXPECT_THAT(DescribeText(d), HasSubstr("  DrainSlurmNode node2"));
  EXPECT_EQ(DescribeJson(d)["plannedActions"][0], "DrainSlurmNode node2");
}

}  // namespace
}  // namespace skb::bridge::cli

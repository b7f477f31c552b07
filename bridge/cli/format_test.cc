// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;
using ::testing::ContainsRegex;
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
  std::string t = Render(NodesListing(TwoNodes(), false));
  EXPECT_THAT(t, HasSubstr("NODE"));
  EXPECT_THAT(t, HasSubstr("H100-80GB-HBM3x8"));
  EXPECT_THAT(t, HasSubstr("12,13"));
  EXPECT_THAT(t, HasSubstr("k8s-bridge: GPUHealthy=False: XID 79"));
  EXPECT_THAT(t, Not(HasSubstr("FEATURES")));
  EXPECT_THAT(Render(NodesListing(TwoNodes(), true)), HasSubstr("FEATURES"));
  auto not_ready = TwoNodes();
  not_ready.set_ready(false);
  not_ready.set_ready_reason("pod cache not synced");
  EXPECT_THAT(Render(NodesListing(not_ready, false)), HasSubstr("not ready: pod cache not synced"));
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

// node1 shared GPU by GPU: job 42 on 0-2, 3 idle, placeholder 77 for inference/web-0 on
// 4-6 (pods on 4-5), 7 moving to Kubernetes.
v1::NodeSummary SharedNode() {
  v1::NodeSummary n;
  n.set_name("node1");
  n.set_gpus(8);
  n.set_owner("slurm");
  n.set_gpu_mode("gpu");
  const char* owners[] = {"slurm", "slurm", "slurm",        "idle",
                          "k8s",   "k8s",   "held-for-k8s", "to-k8s"};
  for (int i = 0; i < 8; ++i) {
    v1::GpuOwner* g = n.add_gpu_owners();
    g->set_index(i);
    g->set_device("gpu-" + std::to_string(i));
    g->set_owner(owners[i]);
    if (i < 3) g->set_job_id(42);
    if (i < 3) g->set_since_unix(1700000000);
    if (i >= 4) g->set_job_id(77);
    if (i >= 4) g->set_since_unix(1700003600);
    if (i == 4 || i == 5) g->add_pods("inference/web-0");
    if (i == 3) g->set_health("gpu.nvidia.com/xid=79:NoSchedule");
  }
  return n;
}

TEST(Format, SharedNodeShowsItsSplitWholeNodesTheirOwner) {
  EXPECT_EQ(GpuSplit(SharedNode()), "slurm 4 (1 idle) / k8s 3 (1 held) / moving 1");
  v1::NodeSummary all_slurm = SharedNode();
  for (auto& g : *all_slurm.mutable_gpu_owners()) g.set_owner("slurm");
  EXPECT_EQ(GpuSplit(all_slurm), "slurm 8 / k8s 0");
  v1::ListNodesResponse r = TwoNodes();
  *r.add_nodes() = SharedNode();
  r.mutable_nodes(0)->set_gpu_mode("node");
  r.mutable_nodes(0)->set_gpu_mode_reason("no ResourceSlice of driver gpu.nvidia.com");
  const std::string t = Render(NodesListing(r, false));
  EXPECT_THAT(t,
              ContainsRegex("\nnode1 +8 +slurm 4 \\(1 idle\\) / k8s 3 \\(1 held\\) / moving 1 "));
  EXPECT_THAT(t, ContainsRegex("\nnode2 +4 +unhealthy "));
  EXPECT_THAT(t, ContainsRegex("\nnode1 +H100-80GB-HBM3x8 +slurm ")) << "a whole node: its owner";
  EXPECT_THAT(t, Not(HasSubstr("MODE")));
  const std::string wide = Render(NodesListing(r, true));
  EXPECT_THAT(wide, HasSubstr("MODE"));
  const nlohmann::json j = NodesJson(r);
  EXPECT_EQ(j["nodes"][0]["gpuMode"], "node");
  EXPECT_EQ(j["nodes"][0]["gpuModeReason"], "no ResourceSlice of driver gpu.nvidia.com");
  EXPECT_EQ(j["nodes"][0]["gpuOwners"], nlohmann::json::array());
  const nlohmann::json& g = j["nodes"][2]["gpuOwners"];
  ASSERT_EQ(g.size(), 8u);
  EXPECT_EQ(g[4]["owner"], "k8s");
  EXPECT_EQ(g[4]["jobId"], 77);
  EXPECT_EQ(g[4]["pods"], nlohmann::json::array({"inference/web-0"}));
  EXPECT_EQ(g[0]["sinceUnix"], 1700000000);
  EXPECT_EQ(g[3]["device"], "gpu-3");
}

TEST(Format, DescribeListsEachGpuAndTheMode) {
  v1::DescribeNodeResponse d;
  *d.mutable_node() = SharedNode();
  const std::string t = DescribeText(d);
  EXPECT_THAT(t, HasSubstr("Owner:          slurm 4 (1 idle) / k8s 3 (1 held) / moving 1"));
  EXPECT_THAT(t, HasSubstr("GPU mode:       gpu (shared GPU by GPU)"));
  EXPECT_THAT(t, HasSubstr("GPU owners:\n"
                           "  INDEX  DEVICE  OWNER         JOB               PODS             SINCE"
                           "                 HEALTH\n"
                           "  0      gpu-0   slurm         42                -                "
                           "2023-11-14T22:13:20Z  healthy\n"));
  // The driver's health taint on an idle GPU (a GPU the driver's NVML check found bad).
  EXPECT_THAT(t, ContainsRegex("  3      gpu-3   idle          -                 -  +-  +"
                               "gpu.nvidia.com/xid=79:NoSchedule\n"));
  EXPECT_THAT(t, HasSubstr("  7      gpu-7   to-k8s        77 (placeholder)  -    "));
  EXPECT_THAT(t, HasSubstr("  4      gpu-4   k8s           77 (placeholder)  inference/web-0"));
  EXPECT_EQ(DescribeJson(d)["node"]["gpuOwners"][6]["owner"], "held-for-k8s");
  EXPECT_EQ(DescribeJson(d)["node"]["gpuOwners"][6]["health"], "healthy");
  EXPECT_EQ(DescribeJson(d)["node"]["gpuOwners"][3]["health"], "gpu.nvidia.com/xid=79:NoSchedule");
  v1::DescribeNodeResponse whole;
  *whole.mutable_node() = TwoNodes().nodes(0);
  whole.mutable_node()->set_gpu_mode("node");
  whole.mutable_node()->set_gpu_mode_reason("gpu_sharing is off");
  const std::string w = DescribeText(whole);
  EXPECT_THAT(w, HasSubstr("GPU mode:       node (whole node: gpu_sharing is off)"));
  EXPECT_THAT(w, Not(HasSubstr("GPU owners:")));
  EXPECT_THAT(w, HasSubstr("Owner:          slurm"));
}

v1::ListJobsResponse TwoJobs() {
  v1::ListJobsResponse r;
  r.set_leader("bridge-0");
  r.set_ready(true);
  auto* a = r.add_jobs();
  a->set_job_id(12);
  a->set_display_id("12");
  a->set_user("alice");
  a->set_partition("gpu");
  a->set_state("RUNNING");
  a->add_nodes("node1");
  a->add_nodes("node2");
  a->set_gpus_per_node(4);
  a->set_owner("slurm");
  a->set_preemptible(true);
  a->set_preemptible_why("partition gpu is preemptible");
  a->set_preemptions(2);
  a->set_preemptions_in_window(1);
  a->set_start_time_unix(1700000000);
  auto* b = r.add_jobs();
  b->set_job_id(13);
  b->set_display_id("10_[3-9]");
  b->set_user("bob");
  b->set_partition("gpu");
  b->set_state("PENDING");
  b->set_state_reason("Resources");
  b->set_gpus_per_node(1);
  b->set_preemptible(false);
  b->set_preemptible_why("preempted 4 times in 6h (anti-thrash)");
  return r;
}

TEST(Format, JobsTableShowsOwnerPreemptibilityAndWhy) {
  std::string t = Render(JobsListing(TwoJobs(), false));
  EXPECT_THAT(t, HasSubstr("JOBID"));
  EXPECT_THAT(t, HasSubstr("PREEMPTIBLE"));
  EXPECT_THAT(t, HasSubstr("node1,node2"));
  EXPECT_THAT(t, HasSubstr("2 (1 recent)"));
  EXPECT_THAT(t, HasSubstr("partition gpu is preemptible"));
  EXPECT_THAT(t, HasSubstr("10_[3-9]"));
  EXPECT_THAT(t, HasSubstr("(anti-thrash)"));
  // 4 GPUs on each of two nodes; a pending job shows what it asks for.
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(t.substr(at, nl - at));
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[1], HasSubstr("  8  "));
  EXPECT_THAT(lines[1], HasSubstr("yes"));
  EXPECT_THAT(lines[2], HasSubstr("  no  "));
  EXPECT_THAT(t, Not(HasSubstr("RESTARTS")));
  std::string wide = Render(JobsListing(TwoJobs(), true));
  EXPECT_THAT(wide, HasSubstr("RESTARTS"));
  EXPECT_THAT(wide, HasSubstr("Resources"));
  EXPECT_THAT(wide, HasSubstr("2023-11-14T22:13:20Z"));
  auto capped = TwoJobs();
  capped.set_omitted(5);
  EXPECT_THAT(Render(JobsListing(capped, false)), HasSubstr("5 more jobs not listed"));
}

TEST(Format, JobsJsonKeepsEveryField) {
  nlohmann::json j = JobsJson(TwoJobs());
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["jobId"], 12);
  EXPECT_EQ(j["jobs"][0]["nodes"], nlohmann::json::array({"node1", "node2"}));
  EXPECT_EQ(j["jobs"][0]["preemptible"], true);
  EXPECT_EQ(j["jobs"][0]["preemptions"], 2);
  EXPECT_EQ(j["jobs"][1]["preemptibleWhy"], "preempted 4 times in 6h (anti-thrash)");
  EXPECT_EQ(j["jobs"][1]["stateReason"], "Resources");
  EXPECT_EQ(j["omitted"], 0);
}

TEST(Format, NoHeadersLeavesTheRowsAndNothingElse) {
  auto not_ready = TwoNodes();
  not_ready.set_ready(false);
  not_ready.set_ready_reason("pod cache not synced");
  const Listing l = NodesListing(not_ready, false);
  const std::string rows = Render(l, /*headers=*/false);
  EXPECT_EQ(Render(l), Table(l.rows) + l.notes);
  EXPECT_THAT(l.notes, HasSubstr("not ready: pod cache not synced"));
  EXPECT_THAT(rows, Not(HasSubstr("NODE")));
  EXPECT_THAT(rows, Not(HasSubstr("not ready")));
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = rows.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(rows.substr(at, nl - at));
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], ::testing::StartsWith("node1  "));
  EXPECT_THAT(lines[1], ::testing::StartsWith("node2  "));
  EXPECT_THAT(Render(JobsListing(TwoJobs(), true), false), Not(HasSubstr("JOBID")));
  EXPECT_EQ(Render(NodesListing(v1::ListNodesResponse(), false), false), "");
}

TEST(Format, NamesAreKindSlashName) {
  EXPECT_EQ(Names(NodesListing(TwoNodes(), false)), "node/node1\nnode/node2\n");
  EXPECT_EQ(Names(JobsListing(TwoJobs(), false)), "job/12\njob/10_[3-9]\n");
}

TEST(Format, GetNodeNameKeepsOneRowBySlurmOrKubernetesName) {
  auto r = TwoNodes();
  r.mutable_nodes(1)->set_k8s_name("node2.example.com");
  ASSERT_TRUE(KeepOnlyNode(&r, "node2.example.com"));
  ASSERT_EQ(r.nodes_size(), 1);
  EXPECT_EQ(r.nodes(0).name(), "node2");
  EXPECT_EQ(r.leader(), "bridge-0");
  auto all = TwoNodes();
  ASSERT_TRUE(KeepOnlyNode(&all, "node1"));
  const std::string t = Render(NodesListing(all, false));
  EXPECT_THAT(t, HasSubstr("node1"));
  EXPECT_THAT(t, Not(HasSubstr("node2")));
  auto none = TwoNodes();
  EXPECT_FALSE(KeepOnlyNode(&none, "node9"));
  EXPECT_EQ(none.nodes_size(), 0);
}

}  // namespace
}  // namespace skb::bridge::cli

// SPDX-License-Identifier: Apache-2.0
// The invariant oracle's pure parts on hand-made input: Slurm's GRES detail and TRES, the
// job states that hold, the identity file, the claim results, the rule in both modes, the
// kubeconfig; and its accounting when it cannot read at all (no testbed needed).
#include "tests/testbed/oracle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <slurm/slurm.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace skb::oracle {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// ---- Slurm's strings ----

std::vector<int64_t> Indices(std::string_view list) {
  std::vector<int64_t> out;
  std::string error;
  EXPECT_TRUE(ParseIndexList(list, &out, &error)) << error;
  return out;
}

TEST(OracleGres, IndexListsAsBitFmtWritesThem) {
  EXPECT_THAT(Indices(""), IsEmpty());
  EXPECT_THAT(Indices("3"), ElementsAre(3));
  EXPECT_THAT(Indices("0-2,5,7-8"), ElementsAre(0, 1, 2, 5, 7, 8));
  EXPECT_THAT(Indices("13-14"), ElementsAre(13, 14));
}

TEST(OracleGres, MalformedIndexListsFail) {
  for (const char* bad : {"a", "1-0", "0,0", "3,1", "0-", "-1", "0,,1", "1,", ",1", "0-1,1", "1 ",
                          "+1", "0-7...", "N/A", "99999999999999999999"}) {
    std::vector<int64_t> out;
    std::string error;
    EXPECT_FALSE(ParseIndexList(bad, &out, &error)) << bad;
    EXPECT_THAT(error, HasSubstr("index list")) << bad;
  }
}

std::vector<GresEntry> Detail(std::string_view s) {
  std::vector<GresEntry> out;
  std::string error;
  EXPECT_TRUE(ParseGresDetail(s, &out, &error)) << error;
  return out;
}

TEST(OracleGres, DetailEntriesOfEveryForm) {
  EXPECT_THAT(Detail(""), IsEmpty());
  auto typed = Detail("gpu:h100:2(IDX:0-1)");
  ASSERT_THAT(typed, SizeIs(1));
  EXPECT_EQ(typed[0].name, "gpu");
  EXPECT_EQ(typed[0].type, "h100");
  EXPECT_EQ(typed[0].count, 2u);
  EXPECT_TRUE(typed[0].indexed);
  EXPECT_THAT(typed[0].indices, ElementsAre(0, 1));

  auto untyped = Detail("gpu:3(IDX:0,2,5)");
  ASSERT_THAT(untyped, SizeIs(1));
  EXPECT_EQ(untyped[0].type, "");
  EXPECT_THAT(untyped[0].indices, ElementsAre(0, 2, 5));

  // Several entries, and a LIST with commas inside one of them.
  auto mig = Detail("gpu:h100:3(IDX:0-1,4),gpu:1g.10gb:1(IDX:6),mps:50(IDX:0)");
  ASSERT_THAT(mig, SizeIs(3));
  EXPECT_THAT(mig[0].indices, ElementsAre(0, 1, 4));
  EXPECT_EQ(mig[1].type, "1g.10gb");
  EXPECT_THAT(mig[1].indices, ElementsAre(6));
  EXPECT_EQ(mig[2].name, "mps");
  EXPECT_EQ(mig[2].count, 50u);  // a shared GRES counts shares, not indices

  auto cnt = Detail("gpu:h100(CNT:2)");
  ASSERT_THAT(cnt, SizeIs(1));
  EXPECT_FALSE(cnt[0].indexed);
  EXPECT_EQ(cnt[0].count, 2u);
  EXPECT_EQ(cnt[0].type, "h100");
}

TEST(OracleGres, MalformedDetailFailsWhole) {
  for (const char* bad :
       {"gpu:h100:2(IDX:0-1", "gpu:h100:2", "gpu:h100:x(IDX:0)", "gpu:h100:2(IDX:0-1),",
        "gpu:h100:2(IDX:0-1)x", "(IDX:0)", "gpu:a:b:2(IDX:0)", "gpu:h100:2(FOO:1)",
        "gpu:h100:8(IDX:0-7...)", "gpu::2(IDX:0-1)", "gpu:h100:2(IDX:1-0)", "gpu h100:1(IDX:0)",
        "gpu:h100:1(CNT:1)x", "gpu:h100:1(IDX:0),,gpu:h100:1(IDX:1)", "gpu:a:1(CNT:1)"}) {
    std::vector<GresEntry> out;
    std::string error;
    EXPECT_FALSE(ParseGresDetail(bad, &out, &error)) << bad;
    EXPECT_THAT(out, IsEmpty()) << bad;
    EXPECT_THAT(error, HasSubstr(bad)) << "the error quotes the string";
  }
}

TEST(OracleGres, TresGpus) {
  std::optional<uint64_t> n;
  std::string error;
  ASSERT_TRUE(TresGpus("cpu=1,mem=1G,node=1,billing=1,gres/gpu=8,gres/gpu:h100=8", &n, &error));
  EXPECT_EQ(n, 8u);
  ASSERT_TRUE(TresGpus("cpu=1,mem=1G,node=1", &n, &error));
  EXPECT_FALSE(n.has_value());
  ASSERT_TRUE(TresGpus("", &n, &error));
  EXPECT_FALSE(n.has_value());
  EXPECT_FALSE(TresGpus("gres/gpu=x", &n, &error));
  EXPECT_FALSE(TresGpus("gres/gpu=1,gres/gpu=2", &n, &error));
}

TEST(OracleSlurm, WhichStatesHold) {
  EXPECT_TRUE(JobHolds(JOB_RUNNING));
  EXPECT_TRUE(JobHolds(JOB_SUSPENDED));
  EXPECT_TRUE(JobHolds(JOB_RUNNING | JOB_CONFIGURING));
  EXPECT_TRUE(JobHolds(JOB_COMPLETE | JOB_COMPLETING));
  EXPECT_TRUE(JobHolds(JOB_CANCELLED | JOB_COMPLETING));
  EXPECT_TRUE(JobHolds(JOB_PENDING | JOB_COMPLETING));  // requeued, epilog still running
  EXPECT_FALSE(JobHolds(JOB_PENDING));
  EXPECT_FALSE(JobHolds(JOB_COMPLETE));
  EXPECT_FALSE(JobHolds(JOB_CANCELLED));
  EXPECT_FALSE(JobHolds(JOB_PREEMPTED));
  EXPECT_TRUE(DetailShown(JOB_RUNNING));
  EXPECT_FALSE(DetailShown(JOB_COMPLETE | JOB_COMPLETING));
  EXPECT_EQ(JobStateText(JOB_CANCELLED | JOB_COMPLETING), "CANCELLED+COMPLETING");
  EXPECT_EQ(JobStateText(JOB_RUNNING), "RUNNING");
  EXPECT_EQ(JobStateText(99), "STATE_99");
}

TEST(OracleSlurm, TheReadersWireRoundTrips) {
  SlurmJob j;
  j.job_id = 42;
  j.job_state = JOB_RUNNING;
  j.name = "train";
  j.partition = "gpu";
  j.nodes = "node[1-2]";
  j.node_list = {"node1", "node2"};
  j.gres_detail = {std::string("gpu:h100:1(IDX:3)"), std::nullopt};
  j.tres_alloc = "gres/gpu=1";
  SlurmJob back;
  std::string error;
  ASSERT_TRUE(FromJson(ToJson(j), &back, &error)) << error;
  EXPECT_EQ(back.job_id, 42u);
  EXPECT_EQ(back.node_list, j.node_list);
  EXPECT_EQ(back.gres_detail, j.gres_detail);
  EXPECT_EQ(back.tres_alloc, j.tres_alloc);
  json broken = ToJson(j);
  broken.erase("gres_detail");
  EXPECT_FALSE(FromJson(broken, &back, &error));
  EXPECT_THAT(error, HasSubstr("unreadable"));
}

// ---- Identity ----

// The testbed's record for node1 (8 whole GPUs) and node2 (the MIG node: 0-5 whole, slices
// of GPU 6 at 6.., of GPU 7 at 13-14), as write_gpu_identity writes it.
json IdentityJson() {
  json id;
  for (const char* n : {"node1", "node2"}) {
    const std::string node = n;
    json& e = id[node];
    e["driver"] = "gpu.nvidia.com";
    e["pool"] = node;
    e["parent"] = json::object();
    const int whole = node == "node2" ? 6 : 8;
    for (int g = 0; g < whole; ++g) {
      e["by_gres_index"][std::to_string(g)] = node + "/gpu" + std::to_string(g);
      e["by_device"]["gpu-" + std::to_string(g)] = node + "/gpu" + std::to_string(g);
    }
  }
  json& mig = id["node2"];
  for (int s = 0; s < 7; ++s) {
    const std::string phys = "node2/gpu6/mig-" + std::to_string(s) + "+1";
    mig["by_gres_index"][std::to_string(6 + s)] = phys;
    mig["by_device"]["gpu-6-mig-19-" + std::to_string(s) + "-1"] = phys;
    mig["parent"][phys] = "node2/gpu6";
  }
  mig["by_gres_index"]["13"] = "node2/gpu7/mig-0+4";
  mig["by_device"]["gpu-7-mig-9-0-4"] = "node2/gpu7/mig-0+4";
  mig["parent"]["node2/gpu7/mig-0+4"] = "node2/gpu7";
  return id;
}

GpuIdentity Identity(json j = IdentityJson()) {
  GpuIdentity id;
  std::string error;
  EXPECT_TRUE(ParseGpuIdentity(j, &id, &error)) << error;
  return id;
}

TEST(OracleIdentity, ReadsTheTestbedsRecord) {
  const GpuIdentity id = Identity();
  ASSERT_EQ(id.nodes.size(), 2u);
  EXPECT_EQ(id.nodes.at("node1").by_gres_index.at(3), "node1/gpu3");
  EXPECT_EQ(id.nodes.at("node2").by_gres_index.at(7), "node2/gpu6/mig-1+1");
  EXPECT_EQ(id.nodes.at("node2").by_device.at("gpu-6-mig-19-1-1"), "node2/gpu6/mig-1+1");
  EXPECT_EQ(id.ParentOf("node2/gpu6/mig-1+1"), "node2/gpu6");
  EXPECT_EQ(id.ParentOf("node1/gpu3"), "");
}

TEST(OracleIdentity, RefusesWhatItCannotTrust) {
  auto refused = [](json j) {
    GpuIdentity id;
    std::string error;
    const bool ok = ParseGpuIdentity(j, &id, &error);
    return !ok && !error.empty();
  };
  EXPECT_TRUE(refused(json::array()));
  EXPECT_TRUE(refused(json::object()));
  json j = IdentityJson();
  j["node1"]["by_gres_index"]["x"] = "node1/gpux";
  EXPECT_TRUE(refused(j));
  j = IdentityJson();
  j["node1"]["by_gres_index"]["01"] = "node1/gpu1";
  EXPECT_TRUE(refused(j));
  j = IdentityJson();
  j["node1"]["by_device"]["gpu-0"] = 5;
  EXPECT_TRUE(refused(j));
  j = IdentityJson();
  j["node1"].erase("pool");
  EXPECT_TRUE(refused(j));
}

// ---- The rule, dra mode ----

SlurmJob Job(uint32_t id, uint32_t state, const std::string& node, const std::string& detail,
             const std::string& partition = "gpu") {
  SlurmJob j;
  j.job_id = id;
  j.job_state = state;
  j.partition = partition;
  j.nodes = node;
  j.node_list = {node};
  if (!detail.empty()) j.gres_detail = {detail};
  return j;
}

json Claim(const std::string& name, const std::vector<std::pair<std::string, std::string>>& devs,
           const std::string& driver = "gpu.nvidia.com") {
  json results = json::array();
  for (const auto& [pool, device] : devs) {
    results.push_back({{"request", "gpu"}, {"driver", driver}, {"pool", pool}, {"device", device}});
  }
  return {{"metadata", {{"namespace", "default"}, {"name", name}}},
          {"status",
           {{"allocation", {{"devices", {{"results", results}}}}},
            {"reservedFor", {{{"resource", "pods"}, {"name", name + "-pod"}}}}}}};
}

struct Dra {
  GpuIdentity identity = Identity();
  OracleOptions options;
  IndexMemory memory;
  std::vector<std::string> Check(const std::vector<SlurmJob>& jobs, const std::vector<json>& claims,
                                 const std::vector<json>& slices = {}) {
    return DeviceViolations(jobs, claims, slices, identity, options, &memory);
  }
};

TEST(OracleDeviceRule, AJobsGpuInAnAllocatedClaimIsAViolationNamingTheGpu) {
  Dra d;
  const auto found =
      d.Check({Job(12, JOB_RUNNING, "node1", "gpu:h100:2(IDX:3-4)")},
              {Claim("infer", {{"node1", "gpu-4"}}), Claim("ok", {{"node1", "gpu-5"}})});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("GPU node1/gpu4"));
  EXPECT_THAT(found[0], HasSubstr("Slurm job 12 (RUNNING; GRES index 4 on node1)"));
  EXPECT_THAT(found[0], HasSubstr("claim default/infer (reserved for pods infer-pod"));
  EXPECT_THAT(d.Check({Job(12, JOB_RUNNING, "node1", "gpu:h100:2(IDX:3-4)")},
                      {Claim("other-node", {{"node2", "gpu-4"}})}),
              IsEmpty());
}

TEST(OracleDeviceRule, PlaceholdersAreExcusedOthersInTheSamePartitionNameAreNot) {
  Dra d;
  const std::vector<json> claims = {Claim("infer", {{"node1", "gpu-3"}})};
  EXPECT_THAT(d.Check({Job(7, JOB_RUNNING, "node1", "gpu:h100:1(IDX:3)", "skb-gpu-hold")}, claims),
              IsEmpty());
  EXPECT_THAT(d.Check({Job(8, JOB_RUNNING, "node1", "gpu:h100:1(IDX:3)", "gpu")}, claims),
              SizeIs(1));
  d.options.placeholder_partition = "hold";
  EXPECT_THAT(d.Check({Job(9, JOB_RUNNING, "node1", "gpu:h100:1(IDX:3)", "skb-gpu-hold")}, claims),
              SizeIs(1));
}

TEST(OracleDeviceRule, TwoClaimsOnOneGpu) {
  Dra d;
  const auto found =
      d.Check({}, {Claim("a", {{"node1", "gpu-2"}}), Claim("b", {{"node1", "gpu-2"}})});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("GPU node1/gpu2: claim default/a"));
  EXPECT_THAT(found[0], HasSubstr("claim default/b"));
  // Unallocated claims hold nothing.
  json pending = Claim("c", {{"node1", "gpu-2"}});
  pending["status"].erase("allocation");
  EXPECT_THAT(d.Check({}, {Claim("a", {{"node1", "gpu-2"}}), pending}), IsEmpty());
}

TEST(OracleDeviceRule, FailsClosedOnWhatItCannotMap) {
  Dra d;
  // Unreadable GRES detail: the job is named, whatever claims there are.
  auto found = d.Check({Job(21, JOB_RUNNING, "node1", "gpu:h100:2(IDX:3-")}, {});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("Slurm job 21 (RUNNING): on node1: GRES detail"));
  // An index the identity file does not list.
  found = d.Check({Job(22, JOB_RUNNING, "node1", "gpu:h100:1(IDX:8)")}, {});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("GRES index 8 on node1 has no entry in gpu-identity.json"));
  // A node it does not list.
  found = d.Check({Job(23, JOB_RUNNING, "node9", "gpu:h100:1(IDX:0)")}, {});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("node9"));
  // GPUs counted without indices.
  found = d.Check({Job(24, JOB_RUNNING, "node1", "gpu:h100(CNT:2)")}, {});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("2 GPUs but no indices"));
  // A count that disagrees with its indices.
  found = d.Check({Job(25, JOB_RUNNING, "node1", "gpu:h100:3(IDX:0-1)")}, {});
  ASSERT_THAT(found, SizeIs(1));
  // Fewer details than nodes.
  SlurmJob two = Job(26, JOB_RUNNING, "node1", "gpu:h100:1(IDX:0)");
  two.nodes = "node[1-2]";
  two.node_list = {"node1", "node2"};
  EXPECT_THAT(d.Check({two}, {}), SizeIs(1));
  // A node list libslurm could not expand.
  SlurmJob unexpanded = Job(27, JOB_RUNNING, "node1", "gpu:h100:1(IDX:0)");
  unexpanded.nodes_expanded = false;
  EXPECT_THAT(d.Check({unexpanded}, {}), SizeIs(1));
  // TRES and detail disagree.
  SlurmJob tres = Job(28, JOB_RUNNING, "node1", "gpu:h100:1(IDX:0)");
  tres.tres_alloc = "cpu=1,gres/gpu=2";
  EXPECT_THAT(d.Check({tres}, {}), SizeIs(1));
  // RUNNING with GPUs and no detail at all.
  SlurmJob hidden = Job(29, JOB_RUNNING, "node1", "");
  hidden.tres_alloc = "cpu=1,gres/gpu=2";
  EXPECT_THAT(d.Check({hidden}, {}), SizeIs(1));
  // A claim's device the identity file does not list, and a result missing its device.
  found = d.Check({}, {Claim("x", {{"node1", "gpu-9"}})});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("node1/gpu-9 of gpu.nvidia.com has no entry"));
  json broken = Claim("y", {{"node1", "gpu-1"}});
  broken["status"]["allocation"]["devices"]["results"][0].erase("device");
  EXPECT_THAT(d.Check({}, {broken}), SizeIs(1));
  // A published device without an identity.
  const json slice = {{"metadata", {{"name", "node1-gpu.nvidia.com"}}},
                      {"spec",
                       {{"driver", "gpu.nvidia.com"},
                        {"pool", {{"name", "node1"}}},
                        {"devices", {{{"name", "gpu-0"}}, {{"name", "gpu-8"}}}}}}};
  found = d.Check({}, {}, {slice});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("publishes device node1/gpu-8"));
  // Other drivers' claims and slices are not GPUs it records.
  EXPECT_THAT(d.Check({}, {Claim("nic", {{"node1", "eth0"}}, "nic.example.com")}), IsEmpty());
  // A job without GPUs holds none.
  EXPECT_THAT(d.Check({Job(30, JOB_RUNNING, "node1", "")}, {Claim("a", {{"node1", "gpu-0"}})}),
              IsEmpty());
}

TEST(OracleDeviceRule, ACompletingJobHoldsWhatItWasLastShownHolding) {
  Dra d;
  const json claim = Claim("infer", {{"node1", "gpu-3"}});
  // Seen RUNNING on GPU 3 (no claim yet), then COMPLETING (slurmctld sends no detail).
  EXPECT_THAT(d.Check({Job(31, JOB_RUNNING, "node1", "gpu:h100:1(IDX:3)")}, {}), IsEmpty());
  auto found = d.Check({Job(31, JOB_COMPLETE | JOB_COMPLETING, "node1", "")}, {claim});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("COMPLETED+COMPLETING; GRES index 3 on node1; indices as last"));
  EXPECT_THAT(d.Check({Job(31, JOB_COMPLETE | JOB_COMPLETING, "node1", "")},
                      {Claim("infer", {{"node1", "gpu-4"}})}),
              IsEmpty());
  // Gone from Slurm: forgotten.
  EXPECT_THAT(d.Check({}, {}), IsEmpty());
  EXPECT_TRUE(d.memory.empty());
  // Never seen with its detail, GPUs in its TRES: every GPU of its node.
  SlurmJob unseen = Job(32, JOB_CANCELLED | JOB_COMPLETING, "node1", "");
  unseen.tres_alloc = "cpu=1,gres/gpu=2";
  found = d.Check({unseen}, {claim});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("every GPU of its nodes"));
  // No GPU in its TRES: none.
  unseen.tres_alloc = "cpu=1";
  EXPECT_THAT(d.Check({unseen}, {claim}), IsEmpty());
  // Finished and not completing: nothing.
  EXPECT_THAT(d.Check({Job(33, JOB_COMPLETE, "node1", "")}, {claim}), IsEmpty());
}

TEST(OracleDeviceRule, MigSlicesByTheirOwnIdsAndAgainstTheirParent) {
  Dra d;
  // GRES index 7 is slice 1 of GPU 6: its device is gpu-6-mig-19-1-1.
  auto found = d.Check({Job(41, JOB_RUNNING, "node2", "gpu:1g.10gb:1(IDX:7)")},
                       {Claim("slice", {{"node2", "gpu-6-mig-19-1-1"}})});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("GPU node2/gpu6/mig-1+1"));
  // The neighbouring slice is another GPU.
  EXPECT_THAT(d.Check({Job(41, JOB_RUNNING, "node2", "gpu:1g.10gb:1(IDX:7)")},
                      {Claim("slice", {{"node2", "gpu-6-mig-19-2-1"}})}),
              IsEmpty());
  // Were the parent ever published whole and allocated, it would clash with its slices.
  json id = IdentityJson();
  id["node2"]["by_device"]["gpu-6"] = "node2/gpu6";
  d.identity = Identity(id);
  found = d.Check({Job(42, JOB_RUNNING, "node2", "gpu:1g.10gb:1(IDX:7)")},
                  {Claim("whole", {{"node2", "gpu-6"}})});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("GPU node2/gpu6/mig-1+1 (and its parent node2/gpu6)"));
  // Two slices of one parent do not clash with each other.
  EXPECT_THAT(d.Check({}, {Claim("a", {{"node2", "gpu-6-mig-19-0-1"}}),
                           Claim("b", {{"node2", "gpu-6-mig-19-1-1"}})}),
              IsEmpty());
}

// ---- The rule, device-plugin mode ----

json Pod(const std::string& ns, const std::string& name, const json& quantity,
         const std::string& resource = "nvidia.com/gpu", bool reservation = false) {
  json p = {
      {"metadata", {{"namespace", ns}, {"name", name}, {"labels", json::object()}}},
      {"spec",
       {{"nodeName", "node1"},
        {"containers", {{{"name", "main"}, {"resources", {{"limits", {{resource, quantity}}}}}}}}}},
      {"status", {{"phase", "Running"}}}};
  if (reservation) p["metadata"]["labels"]["slurm-k8s-bridge.io/role"] = "reservation";
  return p;
}

json NodeObj() {
  return {{"metadata", {{"name", "node1"}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", "7"}, {"cpu", "32"}}},
            {"capacity", {{"nvidia.com/gpu", "8"}}}}}};
}

std::vector<std::string> Nodes(const std::vector<SlurmJob>& jobs, const std::vector<json>& pods,
                               OracleOptions o = {}) {
  const std::vector<json> nodes = {NodeObj()};
  return NodeViolations(jobs, pods, &nodes, o);
}

TEST(OracleNodeRule, AJobAndAGpuPodOnOneNode) {
  const std::vector<SlurmJob> jobs = {Job(5, JOB_RUNNING, "node1", "")};
  auto found = Nodes(jobs, {Pod("default", "infer", "1")});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("node node1 (allocatable nvidia.com/gpu=7, capacity "
                                  "nvidia.com/gpu=8): Slurm job 5 (RUNNING)"));
  EXPECT_THAT(found[0], HasSubstr("pod default/infer [nvidia.com/gpu=1]"));
  // COMPLETING and SUSPENDED hold; PENDING and finished do not.
  EXPECT_THAT(
      Nodes({Job(6, JOB_COMPLETE | JOB_COMPLETING, "node1", "")}, {Pod("default", "infer", "1")}),
      SizeIs(1));
  EXPECT_THAT(Nodes({Job(6, JOB_SUSPENDED, "node1", "")}, {Pod("default", "infer", "1")}),
              SizeIs(1));
  EXPECT_THAT(Nodes({Job(6, JOB_PENDING, "node1", "")}, {Pod("default", "infer", "1")}), IsEmpty());
  EXPECT_THAT(Nodes({Job(6, JOB_COMPLETE, "node1", "")}, {Pod("default", "infer", "1")}),
              IsEmpty());
  // Another node's job.
  EXPECT_THAT(Nodes({Job(6, JOB_RUNNING, "node2", "")}, {Pod("default", "infer", "1")}), IsEmpty());
}

// The nodes only describe a finding (the oracle reads them after a sample that found one):
// without them the rule finds the same, and says it did not read the GPUs; a node Kubernetes
// does not list is said to be so.
TEST(OracleNodeRule, TheNodesDescribeAFindingAndDoNotMakeIt) {
  const std::vector<SlurmJob> jobs = {Job(5, JOB_RUNNING, "node1", "")};
  const std::vector<json> pods = {Pod("default", "infer", "1")};
  auto unread = NodeViolations(jobs, pods, nullptr, {});
  ASSERT_THAT(unread, SizeIs(1));
  EXPECT_THAT(unread[0], HasSubstr("node node1 (its GPUs not read): Slurm job 5 (RUNNING)"));
  const std::vector<json> none;
  auto absent = NodeViolations(jobs, pods, &none, {});
  ASSERT_THAT(absent, SizeIs(1));
  EXPECT_THAT(absent[0], HasSubstr("node node1 (not in Kubernetes)"));
  EXPECT_THAT(NodeViolations({Job(6, JOB_PENDING, "node1", "")}, pods, nullptr, {}), IsEmpty());
}

TEST(OracleNodeRule, WhatCountsAsAGpuPod) {
  const std::vector<SlurmJob> jobs = {Job(5, JOB_RUNNING, "node1", "")};
  EXPECT_THAT(Nodes(jobs, {Pod("slurm-bridge", "reserve", "8", "nvidia.com/gpu", true)}),
              IsEmpty());
  EXPECT_THAT(Nodes(jobs, {Pod("default", "fake-reserve", "8", "nvidia.com/gpu", true)}),
              SizeIs(1));
  EXPECT_THAT(Nodes(jobs, {Pod("default", "cpu", "0")}), IsEmpty());
  EXPECT_THAT(Nodes(jobs, {Pod("default", "cpu", "2", "cpu")}), IsEmpty());
  EXPECT_THAT(Nodes(jobs, {Pod("default", "mig", "1", "nvidia.com/mig-1g.10gb")}), SizeIs(1));
  EXPECT_THAT(Nodes(jobs, {Pod("default", "int", 1)}), SizeIs(1));
  // A request and its equal limit are named once.
  json both = Pod("default", "both", "2");
  both["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", "2"}};
  auto named = Nodes(jobs, {both});
  ASSERT_THAT(named, SizeIs(1));
  EXPECT_THAT(named[0], HasSubstr("pod default/both [nvidia.com/gpu=2]"));
  // An init container's ask and the pod's own resources count.
  json init = Pod("default", "init", "0");
  init["spec"]["initContainers"] = {
      {{"name", "warm"}, {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}};
  EXPECT_THAT(Nodes(jobs, {init}), SizeIs(1));
  json pod_level = Pod("default", "podlevel", "0");
  pod_level["spec"]["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}}}};
  EXPECT_THAT(Nodes(jobs, {pod_level}), SizeIs(1));
  // Not Running (the server filters; it checks again).
  json pending = Pod("default", "pending", "1");
  pending["status"]["phase"] = "Pending";
  EXPECT_THAT(Nodes(jobs, {pending}), IsEmpty());
  // An unreadable quantity is named, with or without a job.
  auto found = Nodes({}, {Pod("default", "weird", "lots")});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("pod default/weird on node1: unreadable GPU quantity"));
  // The resources are an option.
  OracleOptions amd;
  amd.gpu_resources = {"amd.com/gpu"};
  EXPECT_THAT(Nodes(jobs, {Pod("default", "nv", "1")}, amd), IsEmpty());
  EXPECT_THAT(Nodes(jobs, {Pod("default", "mi300", "1", "amd.com/gpu")}, amd), SizeIs(1));
}

TEST(OracleNodeRule, Quantities) {
  EXPECT_EQ(QuantitySign(json("1")), 1);
  EXPECT_EQ(QuantitySign(json("0")), 0);
  EXPECT_EQ(QuantitySign(json("0.0")), 0);
  EXPECT_EQ(QuantitySign(json("500m")), 1);
  EXPECT_EQ(QuantitySign(json("1Ki")), 1);
  EXPECT_EQ(QuantitySign(json("1e3")), 1);
  EXPECT_EQ(QuantitySign(json("-1")), -1);
  EXPECT_EQ(QuantitySign(json(2)), 1);
  EXPECT_FALSE(QuantitySign(json("")).has_value());
  EXPECT_FALSE(QuantitySign(json("1x")).has_value());
  EXPECT_FALSE(QuantitySign(json("m")).has_value());
  EXPECT_FALSE(QuantitySign(json(true)).has_value());
  EXPECT_TRUE(IsGpuResource("nvidia.com/mig-3g.40gb", {"nvidia.com/mig-*"}));
  EXPECT_FALSE(IsGpuResource("nvidia.com/gpux", {"nvidia.com/gpu"}));
}

// ---- Kubernetes access ----

TEST(OracleKube, KubeconfigWithEmbeddedOrFileCredentials) {
  const std::string embedded = R"(apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: /nope}
- name: skb-testbed
  cluster:
    server: https://127.0.0.1:16443
    certificate-authority-data: Q0EtUEVN
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
contexts:
- name: skb-testbed
  context: {cluster: skb-testbed, user: admin}
current-context: skb-testbed
)";
  KubeAccess a;
  std::string error;
  ASSERT_TRUE(ParseKubeconfig(embedded, &a, &error)) << error;
  EXPECT_EQ(a.server, "https://127.0.0.1:16443");
  EXPECT_EQ(a.ca_pem, "CA-PEM");
  EXPECT_EQ(a.cert_pem, "CERT");
  EXPECT_EQ(a.key_pem, "KEY");

  const std::string files = R"(clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", certificate-authority: /ca.crt}
users:
- name: u
  user: {client-certificate: /u.crt, client-key: /u.key}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)";
  ASSERT_TRUE(ParseKubeconfig(files, &a, &error)) << error;
  EXPECT_EQ(a.ca_file, "/ca.crt");
  EXPECT_EQ(a.cert_file, "/u.crt");
  EXPECT_EQ(a.key_file, "/u.key");

  for (const std::string& bad :
       {std::string("current-context: x\n"), files.substr(0, files.find("current-context")),
        std::string(files).replace(files.find("https"), 5, "http "),
        std::string(files).replace(files.find("client-key: /u.key"), 18, "token: abc")}) {
    EXPECT_FALSE(ParseKubeconfig(bad, &a, &error)) << bad;
  }
}

TEST(OracleKube, Base64) {
  std::string out;
  ASSERT_TRUE(Base64Decode("aGVsbG8=", &out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(Base64Decode("aGVs\nbG8h", &out));
  EXPECT_EQ(out, "hello!");
  EXPECT_FALSE(Base64Decode("aGVsbG8", &out));
  EXPECT_FALSE(Base64Decode("aG=sbG8=", &out));
  EXPECT_FALSE(Base64Decode("a*==", &out));
}

// ---- The oracle's accounting ----

TEST(OracleRun, NoReadIsNoEvidenceAndTheReportLineIsTheOraclesOwn) {
  char path[] = "/tmp/skb-oracle-report-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  setenv("SKB_SAMPLER_REPORT", path, 1);
  {
    OracleOptions o;
    o.period = std::chrono::milliseconds(20);
    o.kubeconfig = "/nonexistent/kubeconfig";
    Oracle oracle(o);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    oracle.Stop();
    EXPECT_EQ(oracle.samples(), 0);
    EXPECT_GT(oracle.failed_reads(), 0);
    EXPECT_FALSE(oracle.RateCheck(0.9));  // 0 of 0 answered ticks is still a failure
    EXPECT_THAT(oracle.RateReport(), HasSubstr("no kubeconfig"));
  }
  unsetenv("SKB_SAMPLER_REPORT");
  std::ifstream f(path);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  unlink(path);
  EXPECT_THAT(line,
              ::testing::StartsWith(
                  "OracleRun.NoReadIsNoEvidenceAndTheReportLineIsTheOraclesOwn [oracle]\t0\t"));
  EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 12) << line;  // InvariantSampler's 13
}

}  // namespace
}  // namespace skb::oracle

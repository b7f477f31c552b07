// SPDX-License-Identifier: Apache-2.0
#include "src/admission/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/slurm/syntax.h"

namespace skb::admission {
namespace {

using Availability = NodeFacts::Availability;

// Four h100 nodes with 8 GPUs in partitions gpu and urgent, plus one l40s node with 4 in
// partition inference only.
Inventory TestInventory() {
  Inventory inv;
  inv.known = true;
  inv.default_partition = "gpu";
  for (int i = 1; i <= 4; ++i) {
    inv.nodes.push_back({"node" + std::to_string(i),
                         {{"h100", 8}},
                         {"h100", "nvlink"},
                         {"gpu", "urgent"},
                         Availability::kAvailable,
                         ""});
  }
  inv.nodes.push_back(
      {"node5", {{"l40s", 4}}, {"l40s"}, {"inference"}, Availability::kAvailable, ""});
  return inv;
}

struct Case {
  std::string name;
  JobRequest job;
  bool accept;
  std::string message_has;  // substring of user_message ("" = must be empty)
};

TEST(Decide, TableOfRequests) {
  Policy policy;
  policy.preemptible_partitions = {"gpu"};
  const Case cases[] = {
      {"no gres at all", {}, true, ""},
      {"valid typed per node", {.tres_per_node = "gres:gpu:h100:2"}, true, ""},
      {"untyped", {.tres_per_node = "gres:gpu:8"}, true, ""},
      {"gpu:0 is no request", {.tres_per_node = "gres:gpu:0"}, true, ""},
      {"typed zero", {.tres_per_node = "gres:gpu:a100:0"}, true, ""},
      {"unknown gres name is Slurm's business", {.tres_per_node = "gres:foo:1"}, true, ""},
      {"malformed gres is Slurm's business", {.tres_per_node = "gres:gpu:x:y:z"}, true, ""},
      {"absent type",
       {.tres_per_node = "gres:gpu:a100:2"},
       false,
       "k8s-bridge: no node in partition gpu has gpu type a100; available: h100 x8 on 4 nodes"},
      {"absent type, all partitions",
       {.partition = "gpu,inference", .tres_per_node = "gres:gpu:a100:1"},
       false,
       "no node has gpu type a100; available: h100 x8 on 4 nodes, l40s x4 on 1 node"},
      {"too many per node",
       {.tres_per_node = "gres:gpu:h100:16"},
       false,
       "asks for 16 GPUs of type h100 per node but no node in partition gpu has more than 8"},
      {"too many untyped per node", {.tres_per_node = "gres:gpu:9"}, false, "more than 8"},
      {"type exists only in another partition",
       {.partition = "inference", .tres_per_node = "gres:gpu:h100:1"},
       false,
       "no node in partition inference has gpu type h100; available: l40s x4 on 1 node"},
      {"per task too many", {.tres_per_task = "gres:gpu:12"}, false, "per task"},
      {"per socket too many", {.tres_per_socket = "gres:gpu:h100:9"}, false, "per socket"},
      {"per job fits across nodes", {.tres_per_job = "gres:gpu:h100:32"}, true, ""},
      {"per job too many", {.tres_per_job = "gres:gpu:h100:33"}, false, "together have 32"},
      {"known constraint", {.features = "h100&nvlink"}, true, ""},
      {"unknown constraint",
       {.features = "h100&infiniband"},
       false,
       "unknown feature 'infiniband' in --constraint; features of the nodes in partition gpu: "
       "h100, nvlink"},
      {"garbage constraint is Slurm's business", {.features = "a;b"}, true, ""},
      {"array job judged like any job",
       {.tres_per_node = "gres:gpu:a100:1", .array_spec = "0-99"},
       false,
       "gpu type a100"},
      {"het component", {.tres_per_node = "gres:gpu:h100:8", .het_component = true}, true, ""},
      {"unknown partition not judged",
       {.partition = "nope", .tres_per_node = "gres:gpu:a100:1"},
       true,
       ""},
  };
  for (const auto& c : cases) {
    Decision d = Decide(c.job, TestInventory(), policy);
    EXPECT_EQ(d.accept, c.accept) << c.name << ": " << d.user_message;
    if (c.message_has.empty()) {
      EXPECT_EQ(d.user_message, "") << c.name;
    } else {
      EXPECT_THAT(d.user_message, ::testing::HasSubstr(c.message_has)) << c.name;
    }
    EXPECT_EQ(d.admin_comment.has_value(), c.accept) << c.name;
  }
}

// Each refusal says why, so that the plugin answers with the Slurm code that says it.
TEST(Decide, EachRefusalNamesItsKind) {
  Policy policy;
  policy.preemptible_partitions = {"gpu"};
  const std::pair<JobRequest, Refusal> cases[] = {
      {{.tres_per_node = "gres:gpu:h100:2"}, Refusal::kNone},
      {{.tres_per_node = "gres:gpu:a100:2"}, Refusal::kGresType},
      {{.tres_per_node = "gres:gpu:h100:16"}, Refusal::kNodeConfig},
      {{.tres_per_job = "gres:gpu:h100:33"}, Refusal::kNodeConfig},
      {{.features = "h100&infiniband"}, Refusal::kFeature},
  };
  for (const auto& [job, want] : cases) {
    Decision d = Decide(job, TestInventory(), policy);
    EXPECT_EQ(d.refusal, want) << d.user_message;
    EXPECT_EQ(d.accept, want == Refusal::kNone) << d.user_message;
  }
}

TEST(Decide, NodeLentOrUnhealthyIsAcceptedWithANote) {
  Inventory inv = TestInventory();
  inv.nodes[1].availability = Availability::kLent;
  inv.nodes[1].why = "idle+drain: k8s-bridge: lent to infer/llm-0";
  inv.nodes[2].availability = Availability::kUnhealthy;
  inv.nodes[2].why = "down*: Not responding";
  JobRequest job{.tres_per_node = "gres:gpu:h100:1", .required_nodes = {"node1", "node2", "node3"}};
  Decision d = Decide(job, inv, Policy{});
  EXPECT_TRUE(d.accept);
  EXPECT_THAT(d.user_message, ::testing::HasSubstr("node node2 is lent to Kubernetes"));
  EXPECT_THAT(d.user_message, ::testing::HasSubstr("node node3 is unavailable (down*"));
  EXPECT_THAT(d.user_message, ::testing::Not(::testing::HasSubstr("node1")));
}

TEST(Decide, AnnotatesPreemptibleFromPolicyKeepingTheExistingComment) {
  Policy policy;
  policy.preemptible_partitions = {"gpu"};
  policy.preemptible_qos = {"scavenger"};
  auto note = [&](JobRequest job) {
    Decision d = Decide(job, TestInventory(), policy);
    EXPECT_TRUE(d.accept);
    return d.admin_comment.value_or("<none>");
  };
  EXPECT_EQ(note({}), "k8s-bridge:preemptible=true,partitions=gpu,qos=");  // the default
  EXPECT_EQ(note({.partition = "urgent"}), "k8s-bridge:preemptible=false,partitions=urgent,qos=");
  EXPECT_EQ(note({.partition = "gpu,urgent"}),
            "k8s-bridge:preemptible=false,partitions=gpu+urgent,qos=");
  EXPECT_EQ(note({.partition = "urgent", .qos = "scavenger"}),
            "k8s-bridge:preemptible=true,partitions=urgent,qos=scavenger");
  EXPECT_EQ(note({.partition = "urgent", .admin_comment = "ops ticket 7"}),
            "ops ticket 7 k8s-bridge:preemptible=false,partitions=urgent,qos=");
  JobRequest with_signal{.partition = "urgent"};
  with_signal.signal = slurm::SignalSpec{10, 300, false};
  EXPECT_EQ(note(with_signal), "k8s-bridge:preemptible=false,signal=10@300,partitions=urgent,qos=");
}

TEST(Decide, PassesThePlaceholderThroughUnchanged) {
  Policy policy;
  policy.preemptible_partitions = {"gpu"};
  const std::string record = "skb-gpu-hold:v1;node=node1;pod=infer/a;gpus=2";
  // Even a request it would reject otherwise (more GPUs than a node has, a lent node).
  JobRequest hold{.partition = "skb-gpu-hold",
                  .tres_per_node = "gres/gpu:99",
                  .required_nodes = {"node3"},
                  .admin_comment = record,
                  .name = "skb-gpu-hold"};
  for (const Inventory& inv : {TestInventory(), Inventory{}}) {
    Decision d = Decide(hold, inv, policy);
    EXPECT_TRUE(d.accept);
    EXPECT_EQ(d.user_message, "");
    EXPECT_EQ(d.admin_comment, std::nullopt);  // the plugin leaves it as submitted
  }
  // Named so without a record (a user's job): an ordinary job.
  JobRequest named = hold;
  named.partition = "gpu";
  named.admin_comment.clear();
  EXPECT_FALSE(Decide(named, TestInventory(), policy).accept);
}

TEST(Decide, WithoutInventoryOnlyAnnotates) {
  Decision d = Decide({.tres_per_node = "gres:gpu:a100:99"}, Inventory{}, Policy{});
  EXPECT_TRUE(d.accept);
  EXPECT_EQ(d.user_message, "");
  EXPECT_EQ(d.admin_comment, "k8s-bridge:preemptible=false,qos=");  // no default partition known
}

TEST(InventoryFromSlurm, ClassifiesNodes) {
  std::vector<slurm::NodeView> nodes(3);
  nodes[0].name = "a";
  nodes[0].base_state = slurm::NodeBaseState::kIdle;
  nodes[1].name = "b";
  nodes[1].base_state = slurm::NodeBaseState::kIdle;
  nodes[1].drain = true;
  nodes[1].reason = "k8s-bridge: lent to ns/pod";
  nodes[2].name = "c";
  nodes[2].base_state = slurm::NodeBaseState::kIdle;
  nodes[2].drain = true;
  nodes[2].reason = "bad dimm";
  Inventory inv = InventoryFromSlurm(nodes, "gpu");
  ASSERT_EQ(inv.nodes.size(), 3u);
  EXPECT_EQ(inv.nodes[0].availability, Availability::kAvailable);
  EXPECT_EQ(inv.nodes[1].availability, Availability::kLent);
  EXPECT_EQ(inv.nodes[2].availability, Availability::kUnhealthy);
  EXPECT_EQ(inv.nodes[2].why, "idle+drain: bad dimm");
}

TEST(DescribeGpus, GroupsByTypeAndCount) {
  Inventory inv = TestInventory();
  std::vector<const NodeFacts*> all;
  for (const auto& n : inv.nodes) all.push_back(&n);
  EXPECT_EQ(DescribeGpus(all), "h100 x8 on 4 nodes, l40s x4 on 1 node");
  EXPECT_EQ(DescribeGpus({}), "no GPUs");
}

}  // namespace
}  // namespace skb::admission

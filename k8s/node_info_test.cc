// SPDX-License-Identifier: Apache-2.0
#include "k8s/node_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/testdata.h"

namespace skb::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(NodeInfo, ReadsARealisticNode) {
  auto n = ParseNode(testdata::RealisticNode());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->meta.name, "node3");
  EXPECT_EQ(n->meta.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(n->meta.annotations.at("slurm-k8s-bridge.io/owner"), "slurm");
  EXPECT_FALSE(n->unschedulable);
  ASSERT_EQ(n->taints.size(), 1u);
  EXPECT_EQ(n->taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(n->taints[0].effect, "NoSchedule");
  EXPECT_EQ(n->Ready(), "True");
  ASSERT_NE(FindCondition(n->conditions, "GpuHealthy"), nullptr);
  EXPECT_EQ(FindCondition(n->conditions, "GpuHealthy")->reason, "AllGpusHealthy");
  EXPECT_EQ(n->AllocatableGpus(), 8);
  EXPECT_EQ(n->CapacityGpus(), 8);
  EXPECT_EQ(n->allocatable.at("cpu").MilliValue(), 223500);
  EXPECT_TRUE(n->issues.empty());
}

// The device plugin's "mixed" strategy: one resource per MIG profile; allocatable wins over
// capacity, a profile at 0 is none.
TEST(NodeInfo, SlicesAreTheMigResources) {
  nlohmann::json node = {{"metadata", {{"name", "mig1"}}},
                         {"status",
                          {{"capacity",
                            {{"nvidia.com/gpu", "6"},
                             {"nvidia.com/mig-1g.10gb", "7"},
                             {"nvidia.com/mig-2g.20gb", "3"},
                             {"nvidia.com/mig-3g.40gb", "2"}}},
                           {"allocatable",
                            {{"nvidia.com/gpu", "6"},
                             {"nvidia.com/mig-1g.10gb", "6"},
                             {"nvidia.com/mig-2g.20gb", "0"}}}}}};
  auto n = ParseNode(node);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->Slices(), (std::map<std::string, int64_t>{{"nvidia.com/mig-1g.10gb", 6},
                                                         {"nvidia.com/mig-3g.40gb", 2}}));
  EXPECT_EQ(n->AllocatableGpus(), 6);
}

TEST(NodeInfo, UnexpectedTypesAreSkippedWithReasons) {
  json node = {
      {"metadata", {{"name", "n1"}, {"labels", {{"ok", "yes"}, {"bad", 5}}}, {"finalizers", "x"}}},
      {"spec", {{"unschedulable", "true"}, {"taints", json::array({"oops", {{"key", "k"}}})}}},
      {"status",
       {{"conditions", json::array({{{"type", "Ready"}, {"status", true}}, {{"status", "True"}}})},
        {"capacity", {{"nvidia.com/gpu", 8}}},
        {"allocatable", {{"nvidia.com/gpu", "eight"}, {"cpu", "4"}}}}}};
  auto n = ParseNode(node);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->meta.labels.size(), 1u);
  EXPECT_FALSE(n->unschedulable);  // "true" as a string is not trusted to mean true
  EXPECT_TRUE(n->taints.empty());
  ASSERT_EQ(n->conditions.size(), 1u);
  EXPECT_EQ(n->conditions[0].status, "");  // wrong type: left empty, not "1" or "true"
  EXPECT_EQ(n->AllocatableGpus(), 0);
  EXPECT_EQ(n->allocatable.at("cpu").Value(), 4);
  std::vector<std::string> fields;
  for (const FieldIssue& i : n->issues) fields.push_back(i.field + ": " + i.problem);
  EXPECT_THAT(fields, ::testing::IsSupersetOf({
                          "metadata.labels[bad]: expected a string, got number",
                          "metadata.finalizers: expected a list, got string",
                          "spec.unschedulable: expected a boolean, got string",
                          "spec.taints[0]: expected an object, got string",
                          "status.conditions[0].status: expected a string, got boolean",
                          "status.capacity[nvidia.com/gpu]: expected a quantity string, got number",
                      }));
  bool bad_quantity = false;
  for (const FieldIssue& i : n->issues) {
    bad_quantity |= i.field == "status.allocatable[nvidia.com/gpu]" &&
                    i.problem.find("invalid quantity") != std::string::npos;
  }
  EXPECT_TRUE(bad_quantity);
}

TEST(NodeInfo, NoNameIsAnError) {
  EXPECT_THAT(ParseNode(json::object()).status().message(), HasSubstr("no metadata.name"));
  EXPECT_THAT(ParseNode(json::array()).status().message(), HasSubstr("not an object"));
  EXPECT_FALSE(ParseNode({{"metadata", {{"name", 3}}}}).ok());
  EXPECT_FALSE(ParseNode({{"metadata", "x"}}).ok());
}

}  // namespace
}  // namespace skb::k8s

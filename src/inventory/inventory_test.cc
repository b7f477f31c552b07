// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::inventory {
namespace {

using ::testing::ElementsAre;

K8sNode K(std::string name, int64_t gpus = 8) {
  K8sNode k;
  k.name = std::move(name);
  k.gpu_capacity = k.gpu_allocatable = gpus;
  return k;
}

slurm::NodeView S(std::string name) {
  slurm::NodeView s;
  s.name = std::move(name);
  return s;
}

GpuPod P(std::string name, std::string node, int64_t gpus) {
  GpuPod p;
  p.namespace_name = "ns";
  p.name = std::move(name);
  p.node_name = std::move(node);
  p.gpus = gpus;
  return p;
}

std::vector<std::string> Names(const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& n : inv.nodes()) out.push_back(n.name);
  return out;
}

TEST(Inventory, MergesBothSidesByName) {
  Inventory inv = Inventory::Build({K("node2"), K("node1"), K("k8s-only")},
                                   {S("node1"), S("node2"), S("slurm-only")}, {}, {}, {});
  EXPECT_THAT(Names(inv), ElementsAre("k8s-only", "node1", "node2", "slurm-only"));
  EXPECT_TRUE(inv.Find("node1")->k8s && inv.Find("node1")->slurm);
  EXPECT_FALSE(inv.Find("k8s-only")->slurm);
  EXPECT_FALSE(inv.Find("slurm-only")->k8s);
  EXPECT_EQ(inv.Find("nope"), nullptr);
  EXPECT_EQ(inv.TotalGpus(), 16);  // only nodes both sides know
}

TEST(Inventory, AttachesPodsByKubernetesNameThroughTheNameMap) {
  NodeNameMap names;
  names.mode = NodeNameMap::Mode::kStripDomain;
  names.strip_suffix = ".gpu.example";
  names.explicit_names = {{"odd-name", "node7"}};
  Inventory inv =
      Inventory::Build({K("node1.gpu.example"), K("odd-name")}, {S("node1"), S("node7")}, {},
                       {P("a", "node1.gpu.example", 1), P("b", "odd-name", 8), P("pending", "", 2),
                        P("elsewhere", "node3", 1)},
                       names);
  EXPECT_THAT(Names(inv), ElementsAre("node1", "node7"));
  ASSERT_EQ(inv.Find("node1")->pods.size(), 1u);
  EXPECT_EQ(inv.Find("node1")->pods[0].name, "a");
  EXPECT_EQ(inv.Find("node7")->pods[0].name, "b");
  EXPECT_EQ(inv.Find("node7")->k8s->name, "odd-name");
}

TEST(NodeNameMap, IdentityExplicitAndSuffix) {
  NodeNameMap m;
  EXPECT_EQ(m.SlurmName("node1"), "node1");
  m.mode = NodeNameMap::Mode::kStripDomain;
  m.strip_suffix = ".x";
  EXPECT_EQ(m.SlurmName("node1.x"), "node1");
  EXPECT_EQ(m.SlurmName(".x"), ".x");  // never an empty name
  m.explicit_names = {{"a.x", "special"}};
  EXPECT_EQ(m.SlurmName("a.x"), "special");
}

}  // namespace
}  // namespace skb::inventory

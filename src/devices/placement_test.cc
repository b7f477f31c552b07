// SPDX-License-Identifier: Apache-2.0
// A pod's required placement judged as kube-scheduler's NodeAffinity and TaintToleration
// filters do.
#include "src/devices/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/ownership/schema.h"

namespace skb::devices {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

using Req = NodeSelectorRequirement;
using inventory::Taint;
const std::map<std::string, std::string> kLabels = {
    {"zone", "a"}, {"pool", "inference"}, {"gpu-memory-gb", "80"}};

bool Fits(const NodePlacement& p, const std::string& node = "n1",
          const std::map<std::string, std::string>& labels = kLabels,
          const std::vector<Taint>& taints = {}) {
  return !WhyNotPlaceable(p, node, labels, taints).has_value();
}

// Why a pod with `p` may not run on node n1 (kLabels) with `taints`.
std::optional<std::string> WhyNot(const NodePlacement& p, const std::vector<Taint>& taints) {
  return WhyNotPlaceable(p, "n1", kLabels, taints);
}

NodePlacement Term(std::vector<Req> reqs) { return {.terms = {std::move(reqs)}}; }

TEST(Placement, NoConstraintFitsAnyNodeEvenWithoutLabels) {
  EXPECT_TRUE(Fits({}));
  EXPECT_TRUE(Fits({}, "n1", {}));
}

TEST(Placement, NodeSelectorNeedsEveryLabelEqual) {
  EXPECT_TRUE(Fits({.node_selector = {{"zone", "a"}, {"pool", "inference"}}}));
  EXPECT_THAT(WhyNot({.node_selector = {{"zone", "b"}}}, {}),
              Optional(HasSubstr("nodeSelector zone=b")));
  EXPECT_FALSE(Fits({.node_selector = {{"rack", "r1"}}}));
}

TEST(Placement, EachOperatorAsTheSchedulerReadsIt) {
  EXPECT_TRUE(Fits(Term({{.key = "zone", .op = "In", .values = {"b", "a"}}})));
  EXPECT_FALSE(Fits(Term({{.key = "zone", .op = "In", .values = {"b"}}})));
  EXPECT_TRUE(Fits(Term({{.key = "zone", .op = "NotIn", .values = {"b"}}})));
  EXPECT_TRUE(Fits(Term({{.key = "rack", .op = "NotIn", .values = {"r1"}}})))
      << "a node without the label is not in the set";
  EXPECT_TRUE(Fits(Term({{.key = "pool", .op = "Exists"}})));
  EXPECT_FALSE(Fits(Term({{.key = "rack", .op = "Exists"}})));
  EXPECT_TRUE(Fits(Term({{.key = "rack", .op = "DoesNotExist"}})));
  EXPECT_TRUE(Fits(Term({{.key = "gpu-memory-gb", .op = "Gt", .values = {"40"}}})));
  EXPECT_FALSE(Fits(Term({{.key = "gpu-memory-gb", .op = "Lt", .values = {"40"}}})));
  EXPECT_FALSE(Fits(Term({{.key = "zone", .op = "Gt", .values = {"1"}}}))) << "not an integer";
  EXPECT_FALSE(Fits(Term({{.key = "zone", .op = "Near", .values = {"a"}}})));
  EXPECT_TRUE(Fits(Term({{.key = "metadata.name", .op = "In", .values = {"n1"}, .field = true}})));
  EXPECT_FALSE(
      Fits(Term({{.key = "metadata.name", .op = "NotIn", .values = {"n1"}, .field = true}})));
}

TEST(Placement, TermsAreOredTheirRequirementsAndedAndAnEmptyTermMatchesNothing) {
  NodePlacement p{.terms = {{{.key = "zone", .op = "In", .values = {"b"}}},
                            {{.key = "zone", .op = "In", .values = {"a"}},
                             {.key = "pool", .op = "In", .values = {"inference"}}}}};
  EXPECT_TRUE(Fits(p));
  p.terms[1].push_back({.key = "rack", .op = "Exists"});
  EXPECT_THAT(WhyNot(p, {}), Optional(HasSubstr("required node affinity")));
  EXPECT_FALSE(Fits(NodePlacement{.terms = {{}}}));
  // Selector and affinity both apply.
  EXPECT_FALSE(
      Fits({.node_selector = {{"zone", "b"}}, .terms = {{{.key = "zone", .op = "Exists"}}}}));
}

const Taint kMaintenance = {
    .key = "nvidia.com/maintenance", .value = "true", .effect = "NoSchedule"};

TEST(Placement, EachTolerationRuleAsKubernetesMatchesIt) {
  // Equal: the same key and value ("" is Equal too); Exists: any value of the key.
  EXPECT_TRUE(
      Tolerates({.key = "nvidia.com/maintenance", .op = "Equal", .value = "true"}, kMaintenance));
  EXPECT_TRUE(Tolerates({.key = "nvidia.com/maintenance", .value = "true"}, kMaintenance));
  EXPECT_FALSE(
      Tolerates({.key = "nvidia.com/maintenance", .op = "Equal", .value = "false"}, kMaintenance));
  EXPECT_FALSE(Tolerates({.key = "nvidia.com/maintenance", .op = "Equal"}, kMaintenance));
  EXPECT_TRUE(Tolerates({.key = "nvidia.com/maintenance", .op = "Exists"}, kMaintenance));
  EXPECT_FALSE(Tolerates({.key = "dedicated", .op = "Exists"}, kMaintenance));
  // An empty key with Exists matches every taint.
  EXPECT_TRUE(Tolerates({.op = "Exists"}, kMaintenance));
  EXPECT_TRUE(Tolerates({.op = "Exists"}, {.key = "x", .value = "y", .effect = "NoExecute"}));
  // An empty effect matches every effect; a named one only itself.
  EXPECT_TRUE(Tolerates({.key = "nvidia.com/maintenance", .op = "Exists", .effect = "NoSchedule"},
                        kMaintenance));
  EXPECT_FALSE(Tolerates({.key = "nvidia.com/maintenance", .op = "Exists", .effect = "NoExecute"},
                         kMaintenance));
  EXPECT_FALSE(Tolerates({.op = "Exists", .effect = "NoExecute"}, kMaintenance));
  EXPECT_FALSE(
      Tolerates({.key = "nvidia.com/maintenance", .op = "Near", .value = "true"}, kMaintenance))
      << "an operator this code does not know";
}

TEST(Placement, EveryNoScheduleAndNoExecuteTaintMustBeTolerated) {
  const Taint evict = {.key = "node.kubernetes.io/unreachable", .effect = "NoExecute"};
  EXPECT_TRUE(Fits({}, "n1", kLabels, {}));
  EXPECT_THAT(WhyNot({}, {kMaintenance}),
              Optional(HasSubstr("node n1: taint nvidia.com/maintenance=true:NoSchedule not "
                                 "tolerated")));
  EXPECT_THAT(WhyNot({}, {evict}),
              Optional(HasSubstr("taint node.kubernetes.io/unreachable:NoExecute not tolerated")))
      << "without a value, as kubectl shows it";
  // Each taint by some toleration: one tolerated taint does not let the other through.
  NodePlacement p{.tolerations = {{.key = "nvidia.com/maintenance", .op = "Exists"}}};
  EXPECT_TRUE(Fits(p, "n1", kLabels, {kMaintenance}));
  EXPECT_THAT(WhyNot(p, {kMaintenance, evict}), Optional(HasSubstr("unreachable:NoExecute")));
  p.tolerations.push_back({.key = "node.kubernetes.io/unreachable", .op = "Exists"});
  EXPECT_TRUE(Fits(p, "n1", kLabels, {kMaintenance, evict}));
  EXPECT_TRUE(Fits({.tolerations = {{.op = "Exists"}}}, "n1", kLabels, {kMaintenance, evict}));
  // The node's affinity is judged as well.
  p.node_selector = {{"zone", "b"}};
  EXPECT_FALSE(Fits(p, "n1", kLabels, {kMaintenance, evict}));
}

TEST(Placement, PreferNoScheduleNeverExcludesANode) {
  EXPECT_TRUE(
      Fits({}, "n1", kLabels,
           {{.key = "nvidia.com/maintenance", .value = "true", .effect = "PreferNoSchedule"}}));
}

// The bridge's own node taints keep a give off the node as any other: the give removes none
// of them.
TEST(Placement, TheBridgesOwnNodeTaintsCountToo) {
  for (const char* key :
       {ownership::kSwapTaintKey, ownership::kBusyTaintKey, ownership::kReclaimTaintKey}) {
    EXPECT_THAT(WhyNot({}, {{.key = key, .effect = "NoSchedule"}}), Optional(HasSubstr(key)));
  }
}

}  // namespace
}  // namespace skb::devices

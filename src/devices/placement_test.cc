// A pod's required placement judged as kube-scheduler's NodeAffinity filter does.
#include "src/devices/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::devices {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

using Req = NodeSelectorRequirement;
const std::map<std::string, std::string> kLabels = {
    {"zone", "a"}, {"pool", "inference"}, {"gpu-memory-gb", "80"}};

bool Fits(const NodePlacement& p, const std::string& node = "n1",
          const std::map<std::string, std::string>& labels = kLabels) {
  return !WhyNotPlaceable(p, node, labels).has_value();
}

NodePlacement Term(std::vector<Req> reqs) { return {.terms = {std::move(reqs)}}; }

TEST(Placement, NoConstraintFitsAnyNodeEvenWithoutLabels) {
  EXPECT_TRUE(Fits({}));
  EXPECT_TRUE(Fits({}, "n1", {}));
}

TEST(Placement, NodeSelectorNeedsEveryLabelEqual) {
  EXPECT_TRUE(Fits({.node_selector = {{"zone", "a"}, {"pool", "inference"}}}));
  EXPECT_THAT(WhyNotPlaceable({.node_selector = {{"zone", "b"}}}, "n1", kLabels),
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
  EXPECT_THAT(WhyNotPlaceable(p, "n1", kLabels), Optional(HasSubstr("required node affinity")));
  EXPECT_FALSE(Fits(NodePlacement{.terms = {{}}}));
  // Selector and affinity both apply.
  EXPECT_FALSE(
      Fits({.node_selector = {{"zone", "b"}}, .terms = {{{.key = "zone", .op = "Exists"}}}}));
}

}  // namespace
}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
#include "src/plan/features.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

inventory::ManagedNode Node(std::map<std::string, std::string> labels,
                            std::vector<std::string> features) {
  inventory::ManagedNode n;
  n.name = "node1";
  n.k8s = inventory::K8sNode{};
  n.k8s->name = "node1";
  n.k8s->labels = std::move(labels);
  n.slurm = slurm::NodeView{};
  n.slurm->name = "node1";
  n.slurm->features = features;
  n.slurm->active_features = features;
  return n;
}

TEST(Features, LabelsBecomeFeaturesAndAdminFeaturesStay) {
  auto n = Node({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                 {"topology.kubernetes.io/zone", "EU West/1a"}},
                {"ib", "nvlink"});
  EXPECT_THAT(DesiredFeatures(n, FeaturesConfig::Defaults()),
              ElementsAre("h100", "ib", "nvlink", "zone_eu_west_1a"));
  auto a = PlanFeatures(n, FeaturesConfig::Defaults());
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->Kind(), plan::SetSlurmFeatures::kName);
  EXPECT_THAT(a->As<plan::SetSlurmFeatures>().features,
              ElementsAre("h100", "ib", "nvlink", "zone_eu_west_1a"));
  EXPECT_THAT(a->event_message, HasSubstr("h100,ib,nvlink,zone_eu_west_1a"));
}

TEST(Features, ChangedLabelReplacesTheOldFeatureAndConverges) {
  auto n = Node({{"topology.kubernetes.io/zone", "b"}}, {"ib", "zone_a", "h100"});
  // h100 is managed (a product value) and no product label says so any more: dropped.
  EXPECT_THAT(DesiredFeatures(n, FeaturesConfig::Defaults()), ElementsAre("ib", "zone_b"));
  n.slurm->features = n.slurm->active_features = {"ib", "zone_b"};
  EXPECT_FALSE(PlanFeatures(n, FeaturesConfig::Defaults()).has_value());
}

TEST(Features, UnknownProductGivesNoFeatureAndInactiveFeaturesAreFixed) {
  auto n = Node({{"nvidia.com/gpu.product", "Mystery-GPU"}}, {"ib"});
  EXPECT_FALSE(PlanFeatures(n, FeaturesConfig::Defaults()).has_value());
  n.slurm->active_features = {};
  auto a = PlanFeatures(n, FeaturesConfig::Defaults());
  ASSERT_TRUE(a.has_value());
  EXPECT_THAT(a->As<plan::SetSlurmFeatures>().features, ElementsAre("ib"));
}

TEST(Features, OneSidedNodesAndEmptyConfigPlanNothing) {
  auto n = Node({{"topology.kubernetes.io/zone", "a"}}, {});
  n.slurm.reset();
  EXPECT_FALSE(PlanFeatures(n, FeaturesConfig::Defaults()).has_value());
  EXPECT_FALSE(PlanFeatures(Node({{"topology.kubernetes.io/zone", "a"}}, {}), {}).has_value());
}

TEST(Features, Sanitize) {
  EXPECT_EQ(SanitizeFeature("NVIDIA H100/80GB"), "nvidia_h100_80gb");
  EXPECT_EQ(SanitizeFeature(std::string(100, 'a')).size(), 64u);
  EXPECT_EQ(SanitizeFeature("ok-1.2_x"), "ok-1.2_x");
}

Status Read(std::string_view text, FeaturesConfig* cfg) {
  nlohmann::json j = nlohmann::json::parse(text);
  return ReadFeaturesConfig(config::JsonReader(j, "features"), cfg);
}

TEST(FeaturesConfig, ReadsAndValidates) {
  FeaturesConfig cfg = FeaturesConfig::Defaults();
  ASSERT_TRUE(Read(R"({"labels": [{"label": "gpu", "values": {"A100 80GB": "a100"}},
                                  {"label": "rack", "prefix": "r_"}]})",
                   &cfg)
                  .ok());
  ASSERT_EQ(cfg.labels.size(), 2u);
  EXPECT_EQ(cfg.labels[0].values.at("A100 80GB"), "a100");
  EXPECT_THAT(Read(R"({"labels": [{"label": "rack"}]})", &cfg).message(),
              HasSubstr("'features.labels[0].prefix': needed"));
  EXPECT_THAT(Read(R"({"labels": [{"label": "x", "values": {"a": "Bad Name"}}]})", &cfg).message(),
              HasSubstr("feature 'Bad Name'"));
  EXPECT_THAT(Read(R"({"labels": [{"label": "x", "values": {"a": 1}}]})", &cfg).message(),
              HasSubstr("'features.labels[0].values.a': expected a string"));
  EXPECT_THAT(Read(R"({"labels": [{"label": "x", "prefix": "Zone "}]})", &cfg).message(),
              HasSubstr("may only contain"));
}

}  // namespace
}  // namespace skb::plan

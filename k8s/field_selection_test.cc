#include "k8s/field_selection.h"

#include <gtest/gtest.h>

#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/testdata.h"

namespace skb::k8s {
namespace {

// The trimmed object must read exactly like the full one through the views: the selection
// keeps everything the bridge uses.
TEST(FieldSelection, NodeViewUnchangedAndObjectSmaller) {
  nlohmann::json full = testdata::RealisticNode();
  nlohmann::json trimmed = SelectNodeFields(nlohmann::json(full));
  EXPECT_LT(trimmed.dump().size() * 2, full.dump().size());
  EXPECT_FALSE(trimmed["metadata"].contains("managedFields"));
  EXPECT_FALSE(trimmed["status"].contains("images"));
  auto a = ParseNode(full);
  auto b = ParseNode(trimmed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->meta.labels, b->meta.labels);
  EXPECT_EQ(a->meta.resource_version, b->meta.resource_version);
  EXPECT_EQ(a->AllocatableGpus(), b->AllocatableGpus());
  EXPECT_EQ(a->allocatable.at("cpu"), b->allocatable.at("cpu"));
  EXPECT_EQ(a->allocatable.at("memory"), b->allocatable.at("memory"));
  EXPECT_FALSE(b->allocatable.count("hugepages-2Mi"));
  EXPECT_EQ(a->conditions.size(), b->conditions.size());
  EXPECT_EQ(a->taints.size(), b->taints.size());
  EXPECT_EQ(a->Ready(), b->Ready());
}

TEST(FieldSelection, PodViewUnchangedAndObjectSmaller) {
  nlohmann::json full = testdata::RealisticPod();
  nlohmann::json trimmed = SelectPodFields(nlohmann::json(full));
  EXPECT_LT(trimmed.dump().size() * 2, full.dump().size());
  auto a = ParsePod(full);
  auto b = ParsePod(trimmed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->node_name, b->node_name);
  EXPECT_EQ(a->priority, b->priority);
  EXPECT_EQ(a->GpuRequest(), b->GpuRequest());
  EXPECT_EQ(a->phase, b->phase);
  EXPECT_EQ(a->conditions.size(), b->conditions.size());
  EXPECT_TRUE(trimmed["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(trimmed["spec"]["containers"][0].contains("env"));
}

TEST(FieldSelection, NonObjectsPassThrough) {
  EXPECT_EQ(SelectPodFields(nlohmann::json(5)), nlohmann::json(5));
  EXPECT_EQ(SelectNodeFields({{"metadata", "x"}})["metadata"], nlohmann::json::object());
}

}  // namespace
}  // namespace skb::k8s

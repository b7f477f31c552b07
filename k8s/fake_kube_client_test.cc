// SPDX-License-Identifier: Apache-2.0
// The in-memory apiserver's patch semantics, where tests of code above it depend on them: a
// strategic merge patch of node conditions keeps every other controller's condition (the
// bridge's SetNodeCondition relies on it against the real apiserver too).
#include "k8s/fake_kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

using nlohmann::json;

json Node() {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "n1"}, {"finalizers", {"a"}}}},
          {"status",
           {{"conditions",
             {{{"type", "Ready"}, {"status", "True"}},
              {{"type", "GPUHealthy"}, {"status", "False"}, {"reason", "Xid"}}}},
            {"capacity", {{"nvidia.com/gpu", "8"}}}}}};
}

TEST(FakeKubeClientPatch, StrategicMergeMergesConditionsByTypeAndFinalizersAsASet) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Nodes(), "", Node()).ok());
  json patch = {{"metadata", {{"finalizers", {"b", "a"}}}},
                {"status",
                 {{"conditions",
                   {{{"type", "GPUHealthy"}, {"status", "True"}, {"reason", nullptr}},
                    {{"type", "SlurmDrained"}, {"status", "False"}}}}}}};
  auto got =
      fake.Patch(Resource::Nodes(), "", "n1", PatchType::kStrategicMerge, patch, {}, "status");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["metadata"]["finalizers"], json({"a", "b"}));
  EXPECT_EQ((*got)["status"]["conditions"],
            json({{{"type", "Ready"}, {"status", "True"}},
                  {{"type", "GPUHealthy"}, {"status", "True"}},
                  {{"type", "SlurmDrained"}, {"status", "False"}}}));
  EXPECT_EQ((*got)["status"]["capacity"]["nvidia.com/gpu"], "8");

  // $patch: delete removes one item; a list without a merge key is replaced whole.
  patch = {
      {"status",
       {{"conditions", {{{"type", "Ready"}, {"$patch", "delete"}}}}, {"volumesInUse", {"x"}}}}};
  got = fake.Patch(Resource::Nodes(), "", "n1", PatchType::kStrategicMerge, patch);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ((*got)["status"]["conditions"].size(), 2u);
  EXPECT_EQ((*got)["status"]["conditions"][0]["type"], "GPUHealthy");
  EXPECT_EQ((*got)["status"]["volumesInUse"], json({"x"}));
}

TEST(FakeKubeClientPatch, AJsonMergePatchReplacesLists) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Resource::Nodes(), "", Node()).ok());
  json patch = {{"status", {{"conditions", {{{"type", "SlurmDrained"}, {"status", "False"}}}}}}};
  auto got = fake.Patch(Resource::Nodes(), "", "n1", PatchType::kJsonMerge, patch);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["status"]["conditions"].size(), 1u);
}

// Label selectors as the apiserver reads the two forms the bridge uses: key=value, and !key
// (the label absent); any other form is an error, never a silent match-all.
TEST(FakeKubeClientList, SelectsByLabelValueAndByALabelsAbsence) {
  FakeKubeClient fake;
  json a = Node(), b = Node();
  a["metadata"]["name"] = "a";
  a["metadata"]["labels"] = {{"app", "x"}};
  b["metadata"]["name"] = "b";
  b["metadata"]["labels"] = {{"app", "x"}, {"drained-by", "bridgectl"}};
  ASSERT_TRUE(fake.Create(Resource::Nodes(), "", a).ok());
  ASSERT_TRUE(fake.Create(Resource::Nodes(), "", b).ok());
  ListOptions o;
  o.label_selector = "app=x,!drained-by";
  auto list = fake.List(Resource::Nodes(), "", o);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]["metadata"]["name"], "a");
  o.label_selector = "app in (x)";
  EXPECT_FALSE(fake.List(Resource::Nodes(), "", o).ok());
}

}  // namespace
}  // namespace skb::k8s

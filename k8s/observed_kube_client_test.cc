// SPDX-License-Identifier: Apache-2.0
#include "k8s/observed_kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "k8s/api_error.h"
#include "k8s/fake_kube_client.h"

namespace skb::k8s {
namespace {

using ::testing::ElementsAre;

TEST(ObservedKubeClient, ReportsEveryRequestWithItsOutcomeAndForwardsTheResult) {
  FakeKubeClient fake;
  std::vector<std::string> seen;
  ObservedKubeClient kube(&fake, [&](const RequestInfo& r, const Status& s) {
    seen.push_back(std::string(r.verb) + " " + r.resource->resource +
                   (r.subresource.empty() ? "" : "/" + std::string(r.subresource)) +
                   (r.write() ? " write " : " read ") +
                   (s.ok() ? "ok" : std::to_string(HttpCodeOf(s).value_or(0))));
  });
  nlohmann::json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ns"}}}};
  ASSERT_TRUE(kube.Create(Resource::Pods(), "ns", pod).ok());
  auto got = kube.Get(Resource::Pods(), "ns", "p");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["metadata"]["name"], "p");
  EXPECT_FALSE(kube.Get(Resource::Pods(), "ns", "missing").ok());
  ASSERT_TRUE(kube.Patch(Resource::Pods(), "ns", "p", PatchType::kJsonMerge,
                         {{"metadata", {{"labels", {{"a", "b"}}}}}})
                  .ok());
  ASSERT_TRUE(kube.List(Resource::Pods(), "ns", {}).ok());
  ASSERT_TRUE(kube.Delete(Resource::Pods(), "ns", "p").ok());
  EXPECT_THAT(seen,
              ElementsAre("create pods write ok", "get pods read ok", "get pods read 404",
                          "patch pods write ok", "list pods read ok", "delete pods write ok"));
}

// The start observer sees a request before it is sent, so a watch counts while it is open
// (the outcome observer sees it only when it ends, which for a live watch is never).
TEST(ObservedKubeClient, ReportsARequestAsItStartsSoAnOpenWatchIsSeen) {
  FakeKubeClient fake;
  std::vector<std::string> started;
  std::vector<std::string> ended;
  auto name = [](const RequestInfo& r) { return std::string(r.verb) + " " + r.resource->resource; };
  ObservedKubeClient kube(
      &fake, [&](const RequestInfo& r, const Status&) { ended.push_back(name(r)); },
      [&](const RequestInfo& r) { started.push_back(name(r)); });
  nlohmann::json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ns"}}}};
  ASSERT_TRUE(kube.Create(Resource::Pods(), "ns", pod).ok());
  ListOptions from_start;
  from_start.resource_version = "100";
  std::vector<std::string> started_while_open;
  std::vector<std::string> ended_while_open;
  ASSERT_TRUE(kube.Watch(
                      Resource::Pods(), "ns", from_start,
                      [&](WatchEvent&&) {
                        started_while_open = started;
                        ended_while_open = ended;
                        return false;  // ends the watch
                      },
                      nullptr)
                  .ok());
  EXPECT_THAT(started_while_open, ElementsAre("create pods", "watch pods"));
  EXPECT_THAT(ended_while_open, ElementsAre("create pods"));
  EXPECT_THAT(ended, ElementsAre("create pods", "watch pods"));
}

}  // namespace
}  // namespace skb::k8s

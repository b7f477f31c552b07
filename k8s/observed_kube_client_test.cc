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

}  // namespace
}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
#include "k8s/resource.h"

#include <gtest/gtest.h>

namespace skb::k8s {
namespace {

TEST(Resource, PathsForCoreGroupAndNamedGroups) {
  EXPECT_EQ(ResourcePath(Resource::Nodes(), "ignored", "node1", "status"),
            "/api/v1/nodes/node1/status");
  EXPECT_EQ(ResourcePath(Resource::Pods(), "", ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(Resource::Pods(), "slurm", "reserve-node1", "eviction"),
            "/api/v1/namespaces/slurm/pods/reserve-node1/eviction");
  EXPECT_EQ(ResourcePath(Resource::Leases(), "kube-system", "bridge"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/bridge");
  Resource crd{"example.com", "v1alpha1", "widgets", "Widget", false};
  EXPECT_EQ(ResourcePath(crd, "", "w"), "/apis/example.com/v1alpha1/widgets/w");
  EXPECT_EQ(crd.ApiVersion(), "example.com/v1alpha1");
  EXPECT_EQ(Resource::Pods().ApiVersion(), "v1");
  EXPECT_EQ(Resource::Leases().Name(), "leases.coordination.k8s.io");
}

TEST(Resource, DynamicResourceAllocationPaths) {
  EXPECT_EQ(ResourcePath(Resource::ResourceSlices(), "ignored", "node1-gpu.nvidia.com"),
            "/apis/resource.k8s.io/v1/resourceslices/node1-gpu.nvidia.com");
  EXPECT_EQ(ResourcePath(Resource::ResourceClaims(), "", ""),
            "/apis/resource.k8s.io/v1/resourceclaims");
  EXPECT_EQ(ResourcePath(Resource::ResourceClaims(), "ml", "two-extended-resources-r4tqr"),
            "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/two-extended-resources-r4tqr");
  EXPECT_EQ(ResourcePath(Resource::DeviceTaintRules(), "ignored", "r"),
            "/apis/resource.k8s.io/v1/devicetaintrules/r");
  EXPECT_EQ(Resource::DeviceTaintRules().ApiVersion(), "resource.k8s.io/v1");
  EXPECT_EQ(Resource::DeviceTaintRules().kind, "DeviceTaintRule");
}

TEST(Resource, EncodesSegmentsAndQueryValues) {
  EXPECT_EQ(UrlEncode("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
  EXPECT_EQ(UrlEncode("node-1.x_y~"), "node-1.x_y~");
  EXPECT_EQ(ResourcePath(Resource::Nodes(), "", "a/b"), "/api/v1/nodes/a%2Fb");
}

}  // namespace
}  // namespace skb::k8s

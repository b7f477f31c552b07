// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/priority_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_kube_client.h"

namespace skb::bridge {
namespace {

using ::testing::HasSubstr;

TEST(EnsurePriorityClasses, CreatesMissingClassesThatNeverPreempt) {
  k8s::FakeKubeClient kube;
  ownership::LendingConfig cfg;
  ASSERT_TRUE(EnsurePriorityClasses(&kube, cfg).ok());
  auto idle = kube.Get(k8s::Resource::PriorityClasses(), "", "slurm-idle");
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_EQ((*idle)["value"], 1000);
  EXPECT_EQ((*idle)["preemptionPolicy"], "Never");
  EXPECT_TRUE(kube.Get(k8s::Resource::PriorityClasses(), "", "slurm-protected").ok());
  EXPECT_TRUE(EnsurePriorityClasses(&kube, cfg).ok()) << "idempotent";
}

TEST(EnsurePriorityClasses, AClassWithAnotherValueIsAClearError) {
  k8s::FakeKubeClient kube;
  ownership::LendingConfig cfg;
  ASSERT_TRUE(kube.Create(k8s::Resource::PriorityClasses(), "",
                          {{"apiVersion", "scheduling.k8s.io/v1"},
                           {"kind", "PriorityClass"},
                           {"metadata", {{"name", "slurm-preemptible"}}},
                           {"value", 5}})
                  .ok());
  Status s = EnsurePriorityClasses(&kube, cfg);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("slurm-preemptible has value 5"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("lending.priority_classes.preemptible.value"));
}

}  // namespace
}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// The fixture of bridgectl's node-command tests (node_drain_test.cc,
// node_maintenance_test.cc): a FakeKubeClient holding node3, Ready, whose conditions the
// tests read by type and write as the kubelet, the daemon or an admin with kubectl would.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "k8s/fake_kube_client.h"
#include "src/base/clock.h"

namespace skb::bridge::cli::cli_test {

inline const Clock::TimePoint kNow = Clock::TimePoint{} + std::chrono::hours(24 * 365 * 50);

class NodeFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", "node3"}}},
        {"status",
         {{"conditions",
           nlohmann::json::array(
               {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::Nodes(), "", node).ok());
  }
  // The node's conditions by type.
  std::map<std::string, nlohmann::json> Conditions() {
    std::map<std::string, nlohmann::json> out;
    auto n = kube_.Get(k8s::Resource::Nodes(), "", "node3");
    EXPECT_TRUE(n.ok());
    for (const nlohmann::json& c : (*n)["status"]["conditions"]) {
      out[c["type"].get<std::string>()] = c;
    }
    return out;
  }
  // What the kubelet, the daemon or an admin with kubectl would write.
  void SetConditions(nlohmann::json conditions) {
    ASSERT_TRUE(kube_
                    .Patch(k8s::Resource::Nodes(), "", "node3", k8s::PatchType::kJsonMerge,
                           {{"status", {{"conditions", std::move(conditions)}}}})
                    .ok());
  }

  k8s::FakeKubeClient kube_;
};

}  // namespace skb::bridge::cli::cli_test

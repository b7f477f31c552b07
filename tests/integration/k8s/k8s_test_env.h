// SPDX-License-Identifier: Apache-2.0
// Shared setup of the k8s/ integration tests: a RestClient for the testbed's admin
// kubeconfig, unique `k8stest-` names, and a namespace that is deleted afterwards.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "k8s/kube_client.h"
#include "k8s/rest_config.h"

namespace skb::k8s::testing {

// The admin RestConfig of the testbed ($KUBECONFIG), or a fatal test failure.
RestConfig AdminConfig();
std::unique_ptr<KubeClient> AdminClient();

// "k8stest-<what>-<pid>-<counter>": unique across runs and within one.
std::string UniqueName(const std::string& what);

// A fixture with a fresh namespace (deleted in TearDown) and a client.
class K8sTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::unique_ptr<KubeClient> client_;
  std::string ns_;
};

}  // namespace skb::k8s::testing

// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/k8s/k8s_test_env.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::k8s::testing {

RestConfig AdminConfig() {
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr || !skb::testbed::TestbedDir().ok()) {
    ADD_FAILURE() << "KUBECONFIG/SKB_TESTBED_DIR not set: run eval \"$(scripts/testbed env)\"";
    return {};
  }
  auto cfg = LoadKubeconfig(kubeconfig, "");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  if (!cfg.ok()) return {};
  cfg->qps = 50;
  cfg->burst = 100;
  return *cfg;
}

std::unique_ptr<KubeClient> AdminClient() {
  auto client = NewRestClient(AdminConfig());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::string UniqueName(const std::string& what) {
  static std::atomic<int> counter{0};
  return StrCat("k8stest-", what, "-", getpid(), "-", counter++);
}

void K8sTest::SetUp() {
  client_ = AdminClient();
  ASSERT_NE(client_, nullptr);
  ns_ = UniqueName("ns");
  auto created =
      client_->Create(Resource::Namespaces(), "",
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}});
  ASSERT_TRUE(created.ok()) << created.status();
  // Pods created before kube-controller-manager made the namespace's default ServiceAccount
  // are refused (serviceaccount "default" not found).
  bool has_account = false;
  for (int i = 0; i < 300 && !has_account; ++i) {
    has_account = client_->Get(Resource::ServiceAccounts(), ns_, "default").ok();
    if (!has_account) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(has_account) << "namespace " << ns_ << " has no default ServiceAccount after 60 s";
}

void K8sTest::TearDown() {
  if (client_ == nullptr) return;
  auto deleted = client_->Delete(Resource::Namespaces(), "", ns_, {});
  EXPECT_TRUE(deleted.ok()) << deleted.status();
}

}  // namespace skb::k8s::testing

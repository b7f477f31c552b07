#include "tests/integration/k8s/k8s_test_env.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

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
}

void K8sTest::TearDown() {
  if (client_ == nullptr) return;
  auto deleted = client_->Delete(Resource::Namespaces(), "", ns_, {});
  EXPECT_TRUE(deleted.ok()) << deleted.status();
}

}  // namespace skb::k8s::testing

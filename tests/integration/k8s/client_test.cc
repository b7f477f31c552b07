// SPDX-License-Identifier: Apache-2.0
// RestClient against the testbed's real kube-apiserver: CRUD, every patch kind, the status
// and eviction subresources, pagination, typed errors (conflict, already exists, not found,
// forbidden, unauthenticated, TLS, unreachable).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/api_error.h"
#include "k8s/json_selection.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"
#include "tests/integration/k8s/k8s_test_env.h"
#include "tests/testbed/testbed_support.h"

namespace skb::k8s::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json NodeObject(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", {{"k8stest", "yes"}}}}},
      {"spec", {{"taints", json::array({{{"key", "k8stest/keep"}, {"effect", "NoSchedule"}}})}}}};
}

// A pod no scheduler will place (the node selector matches nothing), so eviction and
// deletion take effect immediately and no kubelet is involved.
json PendingPod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "k8stest"}}}}},
          {"spec",
           {{"nodeSelector", {{"k8stest/nowhere", "true"}}},
            {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

class NodeTest : public K8sTest {
 protected:
  void SetUp() override {
    K8sTest::SetUp();
    node_ = UniqueName("node");
    auto created = client_->Create(Resource::Nodes(), "", NodeObject(node_));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void TearDown() override {
    if (client_ != nullptr)
      client_->Delete(Resource::Nodes(), "", node_, {}).status().IgnoreError();
    K8sTest::TearDown();
  }
  std::string node_;
};

TEST_F(NodeTest, CreateGetListUpdateDelete) {
  auto got = client_->Get(Resource::Nodes(), "", node_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["metadata"]["labels"]["k8stest"], "yes");

  ListOptions by_label;
  by_label.label_selector = "k8stest=yes";
  auto list = client_->List(Resource::Nodes(), "", by_label);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_FALSE(list->resource_version.empty());
  bool found = false;
  for (const json& n : list->items) found |= n["metadata"]["name"] == node_;
  EXPECT_TRUE(found);

  ListOptions by_field;
  by_field.field_selector = "metadata.name=" + node_;
  auto one = client_->List(Resource::Nodes(), "", by_field);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->items.size(), 1u);

  // The node lifecycle controller may touch a new node (taints) between our read and write:
  // a conflict then is correct behaviour, and the caller re-reads and retries.
  json updated;
  StatusOr<json> put = InternalError("not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto current = client_->Get(Resource::Nodes(), "", node_);
    ASSERT_TRUE(current.ok()) << current.status();
    updated = *current;
    updated["metadata"]["labels"]["k8stest-updated"] = "1";
    put = client_->Update(Resource::Nodes(), "", updated);
    if (put.ok() || !IsConflict(put.status())) break;
  }
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ((*put)["metadata"]["labels"]["k8stest-updated"], "1");

  // The same object again, now stale: the apiserver refuses it as a conflict.
  auto stale = client_->Update(Resource::Nodes(), "", updated);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status();
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);
  EXPECT_EQ(HttpCodeOf(stale.status()), 409);

  auto dup = client_->Create(Resource::Nodes(), "", NodeObject(node_));
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(IsAlreadyExists(dup.status())) << dup.status();
  EXPECT_THAT(dup.status().message(), HasSubstr("already exists"));

  auto del = client_->Delete(Resource::Nodes(), "", node_, {});
  ASSERT_TRUE(del.ok()) << del.status();
  auto gone = client_->Get(Resource::Nodes(), "", node_);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(IsNotFound(gone.status()));
  EXPECT_EQ(ReasonOf(gone.status()), "NotFound");
  EXPECT_THAT(gone.status().message(), HasSubstr(node_));
}

TEST_F(NodeTest, EveryPatchKind) {
  // JSON merge patch.
  auto merged = client_->Patch(Resource::Nodes(), "", node_, PatchType::kJsonMerge,
                               {{"metadata", {{"labels", {{"merge", "1"}}}}}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ((*merged)["metadata"]["labels"]["merge"], "1");
  EXPECT_EQ((*merged)["metadata"]["labels"]["k8stest"], "yes");

  // Strategic merge: metadata.finalizers is a merge list, so a second patch adds to the first
  // (a JSON merge patch would replace the list).
  for (const char* f : {"k8stest/a", "k8stest/b"}) {
    auto strategic = client_->Patch(Resource::Nodes(), "", node_, PatchType::kStrategicMerge,
                                    {{"metadata", {{"finalizers", json::array({f})}}}});
    ASSERT_TRUE(strategic.ok()) << strategic.status();
  }
  auto with_finalizers = client_->Get(Resource::Nodes(), "", node_);
  ASSERT_TRUE(with_finalizers.ok());
  EXPECT_THAT((*with_finalizers)["metadata"]["finalizers"].get<std::vector<std::string>>(),
              ::testing::UnorderedElementsAre("k8stest/a", "k8stest/b"));
  auto cleared = client_->Patch(Resource::Nodes(), "", node_, PatchType::kJsonMerge,
                                {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_FALSE((*cleared)["metadata"].contains("finalizers"));

  // RFC 6902 JSON patch.
  auto jsonpatch = client_->Patch(
      Resource::Nodes(), "", node_, PatchType::kJsonPatch,
      json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"jp", "1"}}}}}));
  ASSERT_TRUE(jsonpatch.ok()) << jsonpatch.status();
  EXPECT_EQ((*jsonpatch)["metadata"]["annotations"]["jp"], "1");

  // Server-side apply with a field manager; a second manager conflicts unless forced.
  json applied = {{"apiVersion", "v1"},
                  {"kind", "Node"},
                  {"metadata", {{"name", node_}, {"labels", {{"applied", "a"}}}}}};
  PatchOptions mine;
  mine.field_manager = "k8stest-a";
  auto apply = client_->Patch(Resource::Nodes(), "", node_, PatchType::kApply, applied, mine);
  ASSERT_TRUE(apply.ok()) << apply.status();
  EXPECT_EQ((*apply)["metadata"]["labels"]["applied"], "a");
  applied["metadata"]["labels"]["applied"] = "b";
  PatchOptions theirs;
  theirs.field_manager = "k8stest-b";
  auto conflict = client_->Patch(Resource::Nodes(), "", node_, PatchType::kApply, applied, theirs);
  ASSERT_FALSE(conflict.ok());
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status();
  theirs.force = true;
  auto forced = client_->Patch(Resource::Nodes(), "", node_, PatchType::kApply, applied, theirs);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["metadata"]["labels"]["applied"], "b");

  // Bad patches are refused before or by the server with a clear error.
  EXPECT_EQ(
      client_->Patch(Resource::Nodes(), "", node_, PatchType::kApply, applied, {}).status().code(),
      StatusCode::kInvalidArgument);
  auto invalid = client_->Patch(Resource::Nodes(), "", node_, PatchType::kJsonPatch,
                                json::array({{{"op", "explode"}, {"path", "/x"}}}));
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument) << invalid.status();
}

TEST_F(NodeTest, StatusSubresourceAddsACondition) {
  json cond = {{"type", "K8sTestHealthy"},
               {"status", "False"},
               {"reason", "GpuFellOff"},
               {"message", "k8stest"},
               {"lastHeartbeatTime", "2026-01-01T00:00:00Z"},
               {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
  auto patched = client_->Patch(Resource::Nodes(), "", node_, PatchType::kStrategicMerge,
                                {{"status", {{"conditions", json::array({cond})}}}}, {}, "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
  auto got = client_->Get(Resource::Nodes(), "", node_, "status");
  ASSERT_TRUE(got.ok()) << got.status();
  bool found = false;
  for (const json& c : (*got)["status"]["conditions"]) {
    if (c["type"] == "K8sTestHealthy") {
      found = true;
      EXPECT_EQ(c["reason"], "GpuFellOff");
    }
  }
  EXPECT_TRUE(found) << got->dump();
  // A spec change through the status subresource is ignored by the apiserver.
  auto ignored = client_->Patch(Resource::Nodes(), "", node_, PatchType::kJsonMerge,
                                {{"spec", {{"unschedulable", true}}}}, {}, "status");
  ASSERT_TRUE(ignored.ok()) << ignored.status();
  EXPECT_FALSE((*ignored)["spec"].value("unschedulable", false));
}

TEST_F(K8sTest, PodCreateEvictAndDeleteWithPreconditions) {
  const std::string a = UniqueName("pod");
  auto pod = client_->Create(Resource::Pods(), ns_, PendingPod(a));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ((*pod)["metadata"]["namespace"], ns_);

  auto evicted = EvictPod(*client_, ns_, a);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  auto after = client_->Get(Resource::Pods(), ns_, a);
  EXPECT_TRUE(!after.ok() ? IsNotFound(after.status()) : after->contains("metadata"));
  auto missing = EvictPod(*client_, ns_, "k8stest-no-such-pod");
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();

  const std::string b = UniqueName("pod");
  auto pod_b = client_->Create(Resource::Pods(), ns_, PendingPod(b));
  ASSERT_TRUE(pod_b.ok()) << pod_b.status();
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  auto refused = client_->Delete(Resource::Pods(), ns_, b, wrong_uid);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(IsConflict(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("the UID in the precondition"));

  // The scheduler updates the pod's status (Unschedulable) asynchronously: use the current
  // version, and re-read if it moved between our read and the delete.
  StatusOr<json> deleted = InternalError("not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto current = client_->Get(Resource::Pods(), ns_, b);
    ASSERT_TRUE(current.ok()) << current.status();
    DeleteOptions right;
    right.precondition_uid = (*current)["metadata"]["uid"].get<std::string>();
    right.precondition_resource_version =
        (*current)["metadata"]["resourceVersion"].get<std::string>();
    right.grace_period_seconds = 0;
    right.propagation_policy = "Background";
    deleted = client_->Delete(Resource::Pods(), ns_, b, right);
    if (deleted.ok() || !IsConflict(deleted.status())) break;
  }
  ASSERT_TRUE(deleted.ok()) << deleted.status();
}

TEST_F(K8sTest, PaginationWithLimitAndContinue) {
  for (int i = 0; i < 5; ++i) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", StrCat("k8stest-cm-", i)}}},
               {"data", {{"i", StrCat(i)}}}};
    ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, cm).ok());
  }
  ListOptions page;
  page.limit = 2;
  auto first = client_->List(Resource::ConfigMaps(), ns_, page);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->items.size(), 2u);
  EXPECT_FALSE(first->continue_token.empty());
  auto all = ListAll(*client_, Resource::ConfigMaps(), ns_, page);
  ASSERT_TRUE(all.ok()) << all.status();
  int ours = 0;
  for (const json& cm : all->items)
    ours += cm["metadata"]["name"].get<std::string>().rfind("k8stest-cm-", 0) == 0;
  EXPECT_EQ(ours, 5);
}

// What the informer's paged relist relies on: every page of a continued list is served from
// the first page's snapshot and carries its resourceVersion (a write between pages is not in
// the list, so watching from that resourceVersion delivers it); item_selection decodes only
// the selected fields of each item and keeps the list's metadata.
TEST_F(K8sTest, ContinuedPagesShareOneSnapshotAndItemSelectionTrimsItems) {
  for (int i = 0; i < 5; ++i) {
    json cm = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", {{"name", StrCat("k8stest-cm-", i)}, {"labels", {{"k8stest", "page"}}}}},
        {"data", {{"i", StrCat(i)}}}};
    ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, cm).ok());
  }
  const JsonSelection names = JsonSelection::Fields(
      {{"metadata", JsonSelection::Fields({{"name", {}}, {"resourceVersion", {}}})}});
  ListOptions o;
  o.label_selector = "k8stest=page";
  o.limit = 2;
  o.item_selection = &names;
  auto first = client_->List(Resource::ConfigMaps(), ns_, o);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->items.size(), 2u);
  ASSERT_FALSE(first->continue_token.empty());
  ASSERT_FALSE(first->resource_version.empty());
  EXPECT_EQ(first->items[0],
            json({{"metadata",
                   {{"name", "k8stest-cm-0"},
                    {"resourceVersion", first->items[0]["metadata"]["resourceVersion"]}}}}));

  json late = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "k8stest-cm-9"}, {"labels", {{"k8stest", "page"}}}}}};
  ASSERT_TRUE(client_->Create(Resource::ConfigMaps(), ns_, late).ok());

  std::vector<std::string> seen;
  for (const json& item : first->items) seen.push_back(item["metadata"]["name"]);
  o.continue_token = first->continue_token;
  while (!o.continue_token.empty()) {
    auto page = client_->List(Resource::ConfigMaps(), ns_, o);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->resource_version, first->resource_version);
    for (const json& item : page->items) {
      seen.push_back(item["metadata"]["name"]);
      EXPECT_FALSE(item.contains("data"));
    }
    o.continue_token = page->continue_token;
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("k8stest-cm-0", "k8stest-cm-1", "k8stest-cm-2",
                                           "k8stest-cm-3", "k8stest-cm-4"));
}

TEST_F(K8sTest, ExpiredResourceVersionIsOutOfRange) {
  // resourceVersion 1 is expired only once the watch cache starts past it: on Kubernetes
  // 1.37 the caches of a fresh cluster are filled at its very first revision and a watch
  // from 1 is served. Restarting the apiserver over a compacted etcd expires it for sure.
  auto expire = skb::testbed::RunCommand(
      {StrCat(skb::testbed::SourceDir(), "/scripts/testbed"), "expire-watches"},
      std::chrono::seconds(180));
  ASSERT_EQ(expire.exit_code, 0) << expire.out << expire.err;
  ListOptions old;
  old.resource_version = "1";
  old.timeout_seconds = 5;
  std::atomic<bool> cancel{false};
  Status s = client_->Watch(
      Resource::ConfigMaps(), ns_, old, [](WatchEvent&&) { return true; }, &cancel);
  EXPECT_TRUE(IsResourceExpired(s)) << s;
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
}

TEST(K8sErrors, UnauthenticatedTlsAndUnreachable) {
  RestConfig bad_token = AdminConfig();
  bad_token.client_cert_pem.clear();
  bad_token.client_key_pem.clear();
  bad_token.bearer_token = "k8stest-not-a-token";
  auto c1 = NewRestClient(bad_token);
  ASSERT_TRUE(c1.ok());
  auto r1 = (*c1)->Get(Resource::Nodes(), "", "node1");
  EXPECT_EQ(r1.status().code(), StatusCode::kUnauthenticated) << r1.status();
  EXPECT_THAT(r1.status().message(), ::testing::Not(HasSubstr("k8stest-not-a-token")));

  RestConfig no_ca = AdminConfig();
  no_ca.ca_pem.clear();  // the testbed's CA is not in the system store
  auto c2 = NewRestClient(no_ca);
  ASSERT_TRUE(c2.ok());
  auto r2 = (*c2)->Get(Resource::Nodes(), "", "node1");
  EXPECT_EQ(r2.status().code(), StatusCode::kFailedPrecondition) << r2.status();

  RestConfig unreachable = AdminConfig();
  unreachable.server = "https://127.0.0.1:1";
  auto c3 = NewRestClient(unreachable);
  ASSERT_TRUE(c3.ok());
  auto r3 = (*c3)->Get(Resource::Nodes(), "", "node1");
  EXPECT_EQ(r3.status().code(), StatusCode::kUnavailable) << r3.status();
}

TEST_F(K8sTest, ServiceAccountWithoutPatchNodeStatusIsForbidden) {
  const std::string sa = "k8stest-reader";
  ASSERT_TRUE(
      client_
          ->Create(Resource::ServiceAccounts(), ns_,
                   {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", sa}}}})
          .ok());
  const std::string role = UniqueName("role");
  ASSERT_TRUE(client_
                  ->Create(Resource::ClusterRoles(), "",
                           {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                            {"kind", "ClusterRole"},
                            {"metadata", {{"name", role}}},
                            {"rules", json::array({{{"apiGroups", {""}},
                                                    {"resources", {"nodes"}},
                                                    {"verbs", {"get", "list", "watch"}}}})}})
                  .ok());
  ASSERT_TRUE(
      client_
          ->Create(
              Resource::ClusterRoleBindings(), "",
              {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "ClusterRoleBinding"},
               {"metadata", {{"name", role}}},
               {"roleRef",
                {{"apiGroup", "rbac.authorization.k8s.io"},
                 {"kind", "ClusterRole"},
                 {"name", role}}},
               {"subjects",
                json::array({{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", ns_}}})}})
          .ok());
  auto token = client_->CreateSubresource(Resource::ServiceAccounts(), ns_, sa, "token",
                                          {{"apiVersion", "authentication.k8s.io/v1"},
                                           {"kind", "TokenRequest"},
                                           {"spec", {{"expirationSeconds", 600}}}});
  ASSERT_TRUE(token.ok()) << token.status();

  RestConfig as_sa = AdminConfig();
  as_sa.client_cert_pem.clear();
  as_sa.client_key_pem.clear();
  as_sa.bearer_token = (*token)["status"]["token"].get<std::string>();
  auto sa_client = NewRestClient(as_sa);
  ASSERT_TRUE(sa_client.ok());
  // Allowed: read nodes (RBAC propagation is immediate in the authorizer's cache, but give it
  // a moment on a loaded machine).
  StatusOr<json> read = InternalError("not tried");
  for (int i = 0; i < 50 && !read.ok(); ++i) {
    read = (*sa_client)->Get(Resource::Nodes(), "", "node1");
    if (!read.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(read.ok()) << read.status();
  auto patch = (*sa_client)
                   ->Patch(Resource::Nodes(), "", "node1", PatchType::kStrategicMerge,
                           {{"status", {{"conditions", json::array()}}}}, {}, "status");
  ASSERT_FALSE(patch.ok());
  EXPECT_TRUE(IsForbidden(patch.status())) << patch.status();
  EXPECT_EQ(patch.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(HttpCodeOf(patch.status()), 403);
  EXPECT_THAT(patch.status().message(), HasSubstr("cannot patch resource \"nodes/status\""));
  EXPECT_THAT(patch.status().message(), ::testing::Not(HasSubstr(as_sa.bearer_token)));

  client_->Delete(Resource::ClusterRoleBindings(), "", role, {}).status().IgnoreError();
  client_->Delete(Resource::ClusterRoles(), "", role, {}).status().IgnoreError();
}

}  // namespace
}  // namespace skb::k8s::testing

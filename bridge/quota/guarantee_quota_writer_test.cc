// SPDX-License-Identifier: Apache-2.0
// GuaranteeQuotaWriter against FakeKubeClient: the ResourceQuotas it creates, updates and
// deletes, counted through a client that counts (and can fail) writes.
#include "bridge/quota/guarantee_quota_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/fake_kube_client.h"
#include "k8s/forwarding_kube_client.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
namespace {

using json = nlohmann::json;
using Rooms = std::map<std::string, quota::NamespaceRoom>;

// Forwards to a FakeKubeClient, counting the writes; fails the next `fail_writes` of them.
class CountingKubeClient final : public k8s::ForwardingKubeClient {
 public:
  using ForwardingKubeClient::ForwardingKubeClient;
  int writes = 0;
  int fail_writes = 0;

  StatusOr<json> Create(const k8s::Resource& r, const std::string& ns, const json& obj,
                        const k8s::WriteOptions& o) override {
    RETURN_IF_ERROR(Write());
    return ForwardingKubeClient::Create(r, ns, obj, o);
  }
  StatusOr<json> Update(const k8s::Resource& r, const std::string& ns, const json& obj,
                        const k8s::WriteOptions& o, const std::string& sub) override {
    RETURN_IF_ERROR(Write());
    return ForwardingKubeClient::Update(r, ns, obj, o, sub);
  }
  StatusOr<json> Patch(const k8s::Resource& r, const std::string& ns, const std::string& name,
                       k8s::PatchType t, const json& p, const k8s::PatchOptions& o,
                       const std::string& sub) override {
    RETURN_IF_ERROR(Write());
    return ForwardingKubeClient::Patch(r, ns, name, t, p, o, sub);
  }
  StatusOr<json> Delete(const k8s::Resource& r, const std::string& ns, const std::string& name,
                        const k8s::DeleteOptions& o) override {
    RETURN_IF_ERROR(Write());
    return ForwardingKubeClient::Delete(r, ns, name, o);
  }
  StatusOr<json> CreateSubresource(const k8s::Resource& r, const std::string& ns,
                                   const std::string& name, const std::string& sub,
                                   const json& body) override {
    RETURN_IF_ERROR(Write());
    return ForwardingKubeClient::CreateSubresource(r, ns, name, sub, body);
  }

 private:
  Status Write() {
    ++writes;
    if (fail_writes > 0) {
      --fail_writes;
      return UnavailableError("injected: apiserver unavailable");
    }
    return OkStatus();
  }
};

class GuaranteeQuotaWriterTest : public ::testing::Test {
 protected:
  GuaranteeQuotaWriterTest() {
    cfg_.lending.enabled = true;
    AddClass("slurm-protected", 1'000'000'000);
    AddClass("inference", 100'000);
  }

  void AddClass(const std::string& name, int64_t value) {
    ASSERT_TRUE(fake_
                    .Create(k8s::Resource::PriorityClasses(), "",
                            {{"apiVersion", "scheduling.k8s.io/v1"},
                             {"kind", "PriorityClass"},
                             {"metadata", {{"name", name}}},
                             {"value", value}})
                    .ok());
  }

  StatusOr<json> Quota(const std::string& ns) {
    return fake_.Get(k8s::Resource::ResourceQuotas(), ns, ownership::kGuaranteeQuotaName);
  }

  config::Config cfg_;
  k8s::FakeKubeClient fake_;
  CountingKubeClient kube_{&fake_};
  bool leading_ = true;
  GuaranteeQuotaWriter writer_{&cfg_, &kube_, [this] { return leading_; }};
};

TEST_F(GuaranteeQuotaWriterTest, CreatesTheQuotaScopedToTheProtectedClasses) {
  GuaranteeQuotaWriter::Result r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.created, 1);
  EXPECT_EQ(r.failed, 0);
  auto rq = Quota("web");
  ASSERT_TRUE(rq.ok()) << rq.status();
  EXPECT_EQ((*rq)["metadata"]["labels"][ownership::kManagedByLabel], "slurm-k8s-bridge");
  EXPECT_EQ((*rq)["metadata"]["labels"][ownership::kTenantLabel], "a");
  EXPECT_EQ((*rq)["spec"]["hard"], json({{"requests.nvidia.com/gpu", "6"}}));
  EXPECT_EQ((*rq)["spec"]["scopeSelector"]["matchExpressions"][0]["values"],
            json({"slurm-protected"}));
}

TEST_F(GuaranteeQuotaWriterTest, UpdatesWhenTheRoomChangesAndWritesNothingWhenItDoesNot) {
  ASSERT_EQ(writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}}).created, 1);
  const int after_create = kube_.writes;
  GuaranteeQuotaWriter::Result same = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(same.writes(), 0);
  EXPECT_EQ(kube_.writes, after_create);

  GuaranteeQuotaWriter::Result changed = writer_.Pass({{"web", {.tenant = "a", .gpus = 2}}});
  EXPECT_EQ(changed.updated, 1);
  EXPECT_EQ((*Quota("web"))["spec"]["hard"]["requests.nvidia.com/gpu"], "2");
  // A new protected class widens the scope.
  AddClass("critical", 2'000'000'000);
  EXPECT_EQ(writer_.Pass({{"web", {.tenant = "a", .gpus = 2}}}).updated, 1);
  EXPECT_EQ((*Quota("web"))["spec"]["scopeSelector"]["matchExpressions"][0]["values"],
            json({"critical", "slurm-protected"}));
}

TEST_F(GuaranteeQuotaWriterTest, DeletesItsOwnWhenTheTenantGoesOrNoClassIsProtected) {
  ASSERT_EQ(
      writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}, {"batch", {.tenant = "a", .gpus = 6}}})
          .created,
      2);
  GuaranteeQuotaWriter::Result r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.deleted, 1);
  EXPECT_FALSE(Quota("batch").ok());
  EXPECT_TRUE(Quota("web").ok());

  ASSERT_TRUE(fake_.Delete(k8s::Resource::PriorityClasses(), "", "slurm-protected").ok());
  r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.deleted, 1);
  EXPECT_EQ(r.created, 0);
  EXPECT_FALSE(Quota("web").ok());
  EXPECT_EQ(writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}}).writes(), 0);
}

TEST_F(GuaranteeQuotaWriterTest, NeverTouchesAQuotaWithoutItsLabel) {
  json theirs =
      quota::GuaranteeQuotaObject("web", {.tenant = "a", .gpus = 99}, {"x"}, "nvidia.com/gpu");
  theirs["metadata"]["labels"].erase(ownership::kManagedByLabel);
  ASSERT_TRUE(fake_.Create(k8s::Resource::ResourceQuotas(), "web", theirs).ok());
  json other = theirs;
  other["metadata"]["name"] = "team-quota";
  other["metadata"]["namespace"] = "old";
  ASSERT_TRUE(fake_.Create(k8s::Resource::ResourceQuotas(), "old", other).ok());

  GuaranteeQuotaWriter::Result r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.failed, 1) << "the name is taken: the create fails, nothing is replaced";
  EXPECT_EQ(r.updated + r.deleted, 0);
  EXPECT_EQ((*Quota("web"))["spec"]["hard"]["requests.nvidia.com/gpu"], "99");
  EXPECT_EQ(writer_.Pass({}).writes(), 0);
  EXPECT_TRUE(fake_.Get(k8s::Resource::ResourceQuotas(), "old", "team-quota").ok());
  EXPECT_TRUE(Quota("web").ok());
}

TEST_F(GuaranteeQuotaWriterTest, AFollowerWritesNothing) {
  leading_ = false;
  GuaranteeQuotaWriter::Result r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_TRUE(r.skipped);
  EXPECT_EQ(kube_.writes, 0);
  EXPECT_FALSE(Quota("web").ok());
}

TEST_F(GuaranteeQuotaWriterTest, AFailedWriteIsRetriedOnTheNextPass) {
  kube_.fail_writes = 1;
  GuaranteeQuotaWriter::Result r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.failed, 1);
  EXPECT_FALSE(Quota("web").ok());
  r = writer_.Pass({{"web", {.tenant = "a", .gpus = 6}}});
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.created, 1);
  EXPECT_TRUE(Quota("web").ok());
  // A failed list, too: nothing written, the next pass does it.
  fake_.FailNextListOrWatch(1, UnavailableError("injected"));
  r = writer_.Pass({{"web", {.tenant = "a", .gpus = 1}}});
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.writes(), 0);
  EXPECT_EQ(writer_.Pass({{"web", {.tenant = "a", .gpus = 1}}}).updated, 1);
}

}  // namespace
}  // namespace skb::bridge

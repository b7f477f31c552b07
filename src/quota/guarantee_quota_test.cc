// SPDX-License-Identifier: Apache-2.0
#include "src/quota/guarantee_quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/ownership/schema.h"

namespace skb::quota {
namespace {

using json = nlohmann::json;

QuotaConfig Tenants(const char* tenants) {
  auto c = ParseQuotaConfig(json::parse(tenants));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : QuotaConfig{};
}

// Work as Observe leaves it: a Slurm job (account: its Slurm account) or a pod (account: its
// namespace), running or pending.
ObservedWork Job(std::string tenant, int gpus, bool preemptible, bool running = true) {
  ObservedWork w;
  w.work.id = "slurm/1";
  w.work.tenant = std::move(tenant);
  w.work.side = Side::kSlurm;
  w.work.gpus = gpus;
  w.work.preemptible = preemptible;
  w.running = running;
  return w;
}

ObservedWork Pod(std::string tenant, std::string ns, int gpus, bool preemptible,
                 bool running = true) {
  ObservedWork w;
  w.work.id = "k8s/" + ns + "/p";
  w.work.tenant = std::move(tenant);
  w.work.side = Side::kKubernetes;
  w.work.gpus = gpus;
  w.work.preemptible = preemptible;
  w.account = std::move(ns);
  w.running = running;
  return w;
}

Observation With(std::vector<ObservedWork> work) {
  Observation o;
  o.work = std::move(work);
  return o;
}

TEST(GuaranteeQuotas, SingleNamespaceGetsTheWholeFloorItsOwnPodsAreCountedByTheQuota) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "a", "kubernetes_namespaces": ["web"], "guaranteed": 8}]})");
  // Its own namespace's pods are left to the ResourceQuota; preemptible work counts nowhere.
  Observation o = With(
      {Pod("a", "web", 4, false), Pod("a", "web", 2, true), Job("a", 3, /*preemptible=*/true)});
  EXPECT_EQ(GuaranteeQuotas(c, o),
            (std::map<std::string, NamespaceRoom>{{"web", {.tenant = "a", .gpus = 8}}}));
  EXPECT_EQ(NonPreemptibleRoom(c, o), (std::map<std::string, int64_t>{{"a", 4}}));
}

TEST(GuaranteeQuotas, TwoNamespacesEachLeaveTheOthersPodsOut) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "a", "kubernetes_namespaces": ["web", "batch"], "guaranteed": 8}]})");
  // Pending pods count as much as running ones: the other namespace's quota admitted them.
  Observation o = With({Pod("a", "web", 3, false), Pod("a", "batch", 1, false, /*running=*/false)});
  EXPECT_EQ(GuaranteeQuotas(c, o),
            (std::map<std::string, NamespaceRoom>{{"batch", {.tenant = "a", .gpus = 5}},
                                                  {"web", {.tenant = "a", .gpus = 7}}}));
  EXPECT_EQ(NonPreemptibleRoom(c, o).at("a"), 4);
}

TEST(GuaranteeQuotas, PerTypeFloorsCountAsTheirSum) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "a", "kubernetes_namespaces": ["web"], "guaranteed": {"a100": 8, "h100": 4}}]})");
  EXPECT_EQ(GuaranteeQuotas(c, With({})).at("web").gpus, 12);
}

TEST(GuaranteeQuotas, ATenantWithoutNamespaceHasNoQuota) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "hpc", "slurm_accounts": ["phys"], "guaranteed": 8},
    {"name": "a", "kubernetes_namespaces": ["web"], "guaranteed": 2}]})");
  std::map<std::string, NamespaceRoom> q = GuaranteeQuotas(c, With({Job("hpc", 4, false)}));
  EXPECT_EQ(q, (std::map<std::string, NamespaceRoom>{{"web", {.tenant = "a", .gpus = 2}}}));
  EXPECT_EQ(NonPreemptibleRoom(c, With({Job("hpc", 4, false)})),
            (std::map<std::string, int64_t>{{"a", 2}, {"hpc", 4}}));
}

TEST(GuaranteeQuotas, SlurmJobsThatCannotBePreemptedTakeTheRoom) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "a", "slurm_accounts": ["team-a"], "kubernetes_namespaces": ["web"],
     "guaranteed": 8}]})");
  // Running jobs only: a pending job holds nothing yet.
  Observation o =
      With({Job("a", 6, false), Job("a", 2, false, /*running=*/false), Job("b", 4, false)});
  EXPECT_EQ(GuaranteeQuotas(c, o).at("web").gpus, 2);
  EXPECT_EQ(NonPreemptibleRoom(c, o).at("a"), 2);
}

TEST(GuaranteeQuotas, RoomIsNeverBelowZero) {
  QuotaConfig c = Tenants(R"({"tenants": [
    {"name": "a", "slurm_accounts": ["team-a"], "kubernetes_namespaces": ["web", "batch"],
     "guaranteed": 4}]})");
  Observation o = With({Job("a", 4, false), Pod("a", "batch", 2, false)});
  EXPECT_EQ(GuaranteeQuotas(c, o).at("web").gpus, 0);
  EXPECT_EQ(GuaranteeQuotas(c, o).at("batch").gpus, 0);
  EXPECT_EQ(NonPreemptibleRoom(c, o).at("a"), 0);
}

TEST(EnforcesOnKubernetes, NeedsQuotasLendingAndTheResourceQuotaMode) {
  // (Not `cfg.ok() ? *cfg : config::Config{}`: GCC 12 then warns maybe-uninitialized.)
  auto parse = [](const char* text) {
    auto cfg = config::ParseConfig(text);
    EXPECT_TRUE(cfg.ok()) << cfg.status();
    config::Config out;
    if (cfg.ok()) out = *std::move(cfg);
    return out;
  };
  EXPECT_TRUE(EnforcesOnKubernetes(parse(R"({"lending": {"enabled": true},
    "quotas": {"tenants": [{"name": "a", "kubernetes_namespaces": ["web"]}]}})")));
  EXPECT_FALSE(EnforcesOnKubernetes(parse(R"({"lending": {"enabled": false},
    "quotas": {"tenants": [{"name": "a", "kubernetes_namespaces": ["web"]}]}})")));
  EXPECT_FALSE(EnforcesOnKubernetes(parse(R"({"lending": {"enabled": true},
    "quotas": {"kubernetes_enforcement": "off",
               "tenants": [{"name": "a", "kubernetes_namespaces": ["web"]}]}})")));
  EXPECT_FALSE(EnforcesOnKubernetes(parse(R"({"lending": {"enabled": true}})")));
}

// What the writer is asked to hold: every tenant namespace's room, never one in the
// reservation namespace (reservation pods hold whole nodes at the protected class), and
// nothing at all (so the quotas an earlier configuration left go) when not enforcing.
TEST(WantedGuaranteeQuotas, EveryTenantNamespaceButTheReservationsAndNoneWhenNotEnforcing) {
  auto parse = [](bool lending) {
    auto cfg = config::ParseConfig(std::string(R"({"lending": {"enabled": )") +
                                   (lending ? "true" : "false") +
                                   R"(, "namespace": "slurm-bridge"}, "quotas": {"tenants": [
      {"name": "a", "kubernetes_namespaces": ["web", "slurm-bridge"], "guaranteed": 8}]}})");
    EXPECT_TRUE(cfg.ok()) << cfg.status();
    config::Config out;
    if (cfg.ok()) out = *std::move(cfg);
    return out;
  };
  const Observation o = With({Pod("a", "web", 3, false)});
  const config::Config on = parse(true);
  ASSERT_EQ(on.lending.namespace_name, "slurm-bridge");
  EXPECT_EQ(GuaranteeQuotas(on.quotas, o).count("slurm-bridge"), 1u) << "the tenant names it";
  EXPECT_EQ(WantedGuaranteeQuotas(on, o),
            (std::map<std::string, NamespaceRoom>{{"web", {.tenant = "a", .gpus = 8}}}));
  EXPECT_EQ(WantedGuaranteeQuotas(parse(false), o), (std::map<std::string, NamespaceRoom>{}));
}

TEST(ProtectedClassNames, KeepsClassesAtOrAboveTheThresholdSorted) {
  std::vector<json> classes = {
      {{"metadata", {{"name", "system-node-critical"}}}, {"value", 2000001000}},
      {{"metadata", {{"name", "inference"}}}, {"value", 100000}},
      {{"metadata", {{"name", "slurm-protected"}}}, {"value", 1000000000}},
      {{"metadata", {{"name", "broken"}}}},
  };
  EXPECT_EQ(ProtectedClassNames(classes, 1'000'000'000),
            (std::vector<std::string>{"slurm-protected", "system-node-critical"}));
  EXPECT_TRUE(ProtectedClassNames(classes, 3'000'000'000).empty());
}

TEST(GuaranteeQuotaObject, IsScopedToTheClassesAndLabelled) {
  json rq = GuaranteeQuotaObject("web", {.tenant = "a", .gpus = 3}, {"p1", "p2"}, "nvidia.com/gpu");
  EXPECT_EQ(rq["metadata"]["name"], ownership::kGuaranteeQuotaName);
  EXPECT_EQ(rq["metadata"]["namespace"], "web");
  EXPECT_EQ(rq["metadata"]["labels"][ownership::kManagedByLabel], "slurm-k8s-bridge");
  EXPECT_EQ(rq["metadata"]["labels"][ownership::kTenantLabel], "a");
  EXPECT_EQ(rq["spec"]["hard"], json({{"requests.nvidia.com/gpu", "3"}}));
  EXPECT_EQ(rq["spec"]["scopeSelector"]["matchExpressions"],
            json::parse(R"([{"scopeName": "PriorityClass", "operator": "In",
                             "values": ["p1", "p2"]}])"));
  EXPECT_TRUE(IsOurGuaranteeQuota(rq));
  json listed = rq;
  listed["metadata"]["resourceVersion"] = "7";
  listed["status"] = {{"used", {{"requests.nvidia.com/gpu", "1"}}}};
  EXPECT_TRUE(SameGuaranteeQuota(listed, rq));
  EXPECT_FALSE(SameGuaranteeQuota(listed, GuaranteeQuotaObject("web", {.tenant = "a", .gpus = 2},
                                                               {"p1", "p2"}, "nvidia.com/gpu")));
  EXPECT_FALSE(SameGuaranteeQuota(listed, GuaranteeQuotaObject("web", {.tenant = "b", .gpus = 3},
                                                               {"p1", "p2"}, "nvidia.com/gpu")));
  listed["metadata"]["labels"].erase(ownership::kManagedByLabel);
  EXPECT_FALSE(IsOurGuaranteeQuota(listed));
}

}  // namespace
}  // namespace skb::quota

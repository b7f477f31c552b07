// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/quota_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;
using ::testing::HasSubstr;

v1::ListQuotasResponse TwoTenants() {
  v1::ListQuotasResponse r;
  r.set_enabled(true);
  r.set_ready(true);
  auto* a = r.add_tenants();
  a->set_name("team-a");
  a->set_guaranteed(8);
  a->set_limit(-1);
  a->set_in_use_slurm(12);
  a->set_borrowed(4);
  a->set_pending(2);
  a->add_slurm_accounts("team-a");
  a->set_weight(1);
  auto* none = r.add_tenants();
  none->set_limit(-1);
  none->set_in_use_kubernetes(1);
  none->set_borrowed(1);
  return r;
}

TEST(QuotasTable, OneLinePerTenantWithTheInUseSplit) {
  EXPECT_EQ(Render(QuotasListing(TwoTenants(), false)),
            "TENANT  GUARANTEED  LIMIT  IN-USE(SLURM/K8S)  BORROWED  PENDING  RECLAIMING\n"
            "team-a  8           -      12 (12/0)          4         2        0\n"
            "(none)  0           -      1 (0/1)            1         0        0\n");
  EXPECT_THAT(Render(QuotasListing(TwoTenants(), true)), HasSubstr("ACCOUNTS  NAMESPACES  WEIGHT"));
  EXPECT_THAT(Render(QuotasListing(v1::ListQuotasResponse(), false)), HasSubstr("quotas are off"));
  // -o name: the tenants of the config (work of no tenant has no name); --no-headers: rows.
  EXPECT_EQ(Names(QuotasListing(TwoTenants(), false)), "tenant/team-a\n");
  EXPECT_EQ(Render(QuotasListing(TwoTenants(), false), /*headers=*/false),
            "team-a  8  -  12 (12/0)  4  2  0\n(none)  0  -  1 (0/1)    1  0  0\n");
  const Listing off = QuotasListing(v1::ListQuotasResponse(), false);
  EXPECT_EQ(Render(off, false), "");
  EXPECT_THAT(off.notes, HasSubstr("quotas are off"));
  nlohmann::json j = QuotasJson(TwoTenants());
  EXPECT_EQ(j["tenants"][0]["borrowed"], 4);
  EXPECT_TRUE(j["tenants"][0]["limit"].is_null());
}

TEST(TenantText, ListsEachJobAndPodWithWhy) {
  v1::DescribeTenantResponse r;
  *r.mutable_tenant() = TwoTenants().tenants(0);
  auto* w = r.add_work();
  w->set_id("slurm/7");
  w->set_side("slurm");
  w->set_state("running");
  w->set_standing("borrowed");
  w->set_gpus(4);
  w->set_where("node3");
  w->set_preemptible(true);
  w->set_preemptible_why("partition gpu is preemptible");
  w->set_why("beyond the 8 GPUs guaranteed");
  const std::string text = TenantText(r);
  EXPECT_THAT(text, HasSubstr("Tenant:           team-a\n"));
  EXPECT_THAT(text, HasSubstr("In use:           12 GPUs (Slurm 12, Kubernetes 0), 4 borrowed\n"));
  EXPECT_THAT(text, HasSubstr("  slurm/7  running  4     node3  borrowed  yes\n"));
  EXPECT_THAT(text, HasSubstr("  slurm/7: beyond the 8 GPUs guaranteed; preemptible: partition gpu "
                              "is preemptible\n"));
  EXPECT_EQ(TenantJson(r)["work"][0]["standing"], "borrowed");
}

// A tenant with per-type floors (a100 8, h100 4; h100 limited to 6) beside a plain one.
v1::ListQuotasResponse Typed() {
  v1::ListQuotasResponse r = TwoTenants();
  r.mutable_tenants()->DeleteSubrange(1, 1);
  auto* t = r.add_tenants();
  t->set_name("train");
  t->set_guaranteed(12);
  t->set_limit(-1);
  t->set_in_use_slurm(11);
  t->set_borrowed(1);
  t->set_per_type(true);
  auto type = [&](const char* name, int64_t g, int64_t limit, int64_t in_use, int64_t borrowed,
                  int64_t pending) {
    auto* q = t->add_types();
    q->set_type(name);
    q->set_guaranteed(g);
    q->set_limit(limit);
    q->set_in_use(in_use);
    q->set_borrowed(borrowed);
    q->set_pending(pending);
  };
  type("", 0, -1, 1, 1, 0);
  type("a100", 8, -1, 8, 0, 0);
  type("h100", 4, 6, 2, 0, 2);
  return r;
}

TEST(QuotasTable, PerTypeFloorsGetAColumnOfInUseOverGuaranteed) {
  EXPECT_EQ(Render(QuotasListing(Typed(), false)),
            "TENANT  GUARANTEED  LIMIT  IN-USE(SLURM/K8S)  BORROWED  PENDING  RECLAIMING  "
            "BY-TYPE(IN-USE/GUARANTEED)\n"
            "team-a  8           -      12 (12/0)          4         2        0           -\n"
            "train   12          -      11 (11/0)          1         0        0           "
            "(unknown) 1/0, a100 8/8, h100 2/4\n");
  nlohmann::json j = QuotasJson(Typed());
  EXPECT_EQ(j["tenants"][0]["perType"], false);
  EXPECT_EQ(j["tenants"][1]["perType"], true);
  EXPECT_EQ(j["tenants"][1]["types"][2], (nlohmann::json{{"type", "h100"},
                                                         {"guaranteed", 4},
                                                         {"limit", 6},
                                                         {"inUse", 2},
                                                         {"borrowed", 0},
                                                         {"pending", 2}}));
  EXPECT_TRUE(j["tenants"][1]["types"][1]["limit"].is_null());
}

TEST(TenantText, PerTypeFloorsLimitsAndUsageAreNamed) {
  v1::DescribeTenantResponse r;
  *r.mutable_tenant() = Typed().tenants(1);
  auto* w = r.add_work();
  w->set_id("slurm/9");
  w->set_state("running");
  w->set_gpus(2);
  w->set_gpu_type("h100");
  w->set_where("n3");
  w->set_standing("guaranteed");
  auto* p = r.add_work();
  p->set_id("slurm/10");
  p->set_state("pending");
  p->set_gpus(2);
  const std::string text = TenantText(r);
  EXPECT_THAT(text, HasSubstr("Guaranteed:       12 GPUs: a100 8, h100 4 (per GPU type; other "
                              "types borrow)\n"));
  EXPECT_THAT(text, HasSubstr("Limit:            h100 6 GPUs (per GPU type)\n"));
  EXPECT_THAT(text, HasSubstr("By type:\n"
                              "  TYPE       GUARANTEED  LIMIT  IN-USE  BORROWED  PENDING\n"
                              "  (unknown)  0           -      1       1         0\n"
                              "  a100       8           -      8       0         0\n"
                              "  h100       4           6      2       0         2\n"));
  EXPECT_THAT(text, HasSubstr("  slurm/9   running  2     h100  n3     guaranteed  no\n"));
  EXPECT_THAT(text, HasSubstr("  slurm/10  pending  2     any   -      -           no\n"));
  EXPECT_EQ(TenantJson(r)["work"][0]["gpuType"], "h100");
  // A floor of any type: usage by type, no floor per type.
  v1::DescribeTenantResponse plain;
  *plain.mutable_tenant() = TwoTenants().tenants(0);
  auto* q = plain.mutable_tenant()->add_types();
  q->set_type("a100");
  q->set_limit(-1);
  q->set_in_use(12);
  EXPECT_THAT(TenantText(plain), HasSubstr("  a100  -           -      12      0         0\n"));
  EXPECT_THAT(TenantText(plain), HasSubstr("Guaranteed:       8 GPUs\n"));
}

}  // namespace
}  // namespace skb::bridge::cli

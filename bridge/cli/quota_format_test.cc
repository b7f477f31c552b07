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

}  // namespace
}  // namespace skb::bridge::cli

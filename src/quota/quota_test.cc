#include "src/quota/quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::quota {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

QuotaConfig TwoTenants() {
  auto c = ParseQuotaConfig(nlohmann::json::parse(R"({"tenants": [
    {"name": "a", "slurm_accounts": ["team-a"], "kubernetes_namespaces": ["a-inf"],
     "guaranteed": 16},
    {"name": "b", "slurm_accounts": ["team-b"], "kubernetes_namespaces": ["b-inf"],
     "guaranteed": 16, "limit": 24, "weight": 2}]})"));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

Work Job(std::string id, std::string tenant, int gpus, int64_t started, bool preemptible = true,
         int64_t priority = 0) {
  Work w;
  w.id = std::move(id);
  w.tenant = std::move(tenant);
  w.side = Side::kSlurm;
  w.gpus = gpus;
  w.started_at = started;
  w.preemptible = preemptible;
  w.priority = priority;
  w.work_lost_s = 0;
  return w;
}

Work Pod(std::string id, std::string tenant, int gpus, int64_t started) {
  Work w = Job(std::move(id), std::move(tenant), gpus, started);
  w.side = Side::kKubernetes;
  return w;
}

TEST(ParseQuotaConfig, ReadsTenantsAndLooksThemUp) {
  QuotaConfig c = TwoTenants();
  ASSERT_EQ(c.tenants.size(), 2u);
  EXPECT_EQ(c.tenants[1].limit, 24);
  EXPECT_EQ(c.tenants[1].weight, 2);
  EXPECT_EQ(c.ForAccount("team-b")->name, "b");
  EXPECT_EQ(c.ForNamespace("a-inf")->name, "a");
  EXPECT_EQ(c.ForAccount("team-z"), nullptr);
  EXPECT_TRUE(c.enabled());
  auto off = ParseQuotaConfig(nlohmann::json());
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled());
}

TEST(ParseQuotaConfig, RefusesWhatCannotBeMeant) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guarantee": 4}]})",
       "quotas.tenants[0].guarantee"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"]},
                       {"name": "a", "slurm_accounts": ["y"]}]})",
       "defined twice"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"]},
                       {"name": "b", "slurm_accounts": ["x"]}]})",
       "account 'x' belongs to two tenants"},
      {R"({"tenants": [{"name": "a", "kubernetes_namespaces": ["n"]},
                       {"name": "b", "kubernetes_namespaces": ["n"]}]})",
       "namespace 'n' belongs to two tenants"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": 8, "limit": 4}]})",
       "below guaranteed"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": -1}]})", "guaranteed"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "weight": 0}]})", "weight"},
      {R"({"tenants": [{"slurm_accounts": ["x"]}]})", "needs a name"},
      {R"({"tenants": [{"name": "a"}]})", "at least one Slurm account or namespace"},
      {R"([1])", "must be an object"},
  };
  for (const Case& k : cases) {
    auto c = ParseQuotaConfig(nlohmann::json::parse(k.json));
    ASSERT_FALSE(c.ok()) << k.json;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr(k.error)) << k.json;
  }
}

TEST(Classify, FillsTheFloorInRankOrderAndBorrowsTheRest) {
  QuotaConfig c = TwoTenants();
  // a: 8 (not preemptible, started last) + 8 (oldest) + 8 (newest) = 24 > floor 16.
  std::vector<Work> running = {Job("slurm/3", "a", 8, 300), Job("slurm/1", "a", 8, 100),
                               Job("slurm/9", "a", 8, 900, /*preemptible=*/false),
                               Pod("k8s/b-inf/p", "b", 4, 50), Job("slurm/7", "", 2, 10)};
  Classification k = Classify(c, running);
  EXPECT_EQ(k.standing["slurm/9"], Standing::kGuaranteed);  // cannot be preempted: first
  EXPECT_EQ(k.standing["slurm/1"], Standing::kGuaranteed);  // oldest next
  EXPECT_EQ(k.standing["slurm/3"], Standing::kBorrowed);
  EXPECT_EQ(k.standing["k8s/b-inf/p"], Standing::kGuaranteed);
  EXPECT_EQ(k.standing["slurm/7"], Standing::kBorrowed);  // no tenant
  EXPECT_EQ(k.usage["a"].in_use_slurm, 24);
  EXPECT_EQ(k.usage["a"].borrowed, 8);
  EXPECT_EQ(k.usage["b"].in_use_kubernetes, 4);
  EXPECT_EQ(k.usage["b"].borrowed, 0);
  EXPECT_DOUBLE_EQ(k.usage["a"].over_per_weight, 8);
  EXPECT_DOUBLE_EQ(k.usage["b"].over_per_weight, -6);  // (4 - 16) / weight 2
}

TEST(Classify, AnItemThatDoesNotFitWholeAndEverythingAfterItIsBorrowed) {
  QuotaConfig c = TwoTenants();
  Classification k = Classify(
      c, {Job("slurm/1", "a", 12, 1), Job("slurm/2", "a", 8, 2), Job("slurm/3", "a", 2, 3)});
  EXPECT_EQ(k.standing["slurm/1"], Standing::kGuaranteed);
  EXPECT_EQ(k.standing["slurm/2"], Standing::kBorrowed);
  // 2 GPUs would still fit the floor, but it ranks after a borrowed item: the floor is a
  // prefix of the rank order, so what is guaranteed does not depend on item sizes.
  EXPECT_EQ(k.standing["slurm/3"], Standing::kBorrowed);
}

TEST(PlanStart, IdleGpusWithinOrBeyondTheFloor) {
  QuotaConfig c = TwoTenants();
  Classification k = Classify(c, {Job("slurm/1", "a", 12, 0)});
  Decision within = PlanStart(c, k, Job("slurm/2", "a", 4, 100), 8, {}, 1000, {});
  EXPECT_TRUE(within.start);
  EXPECT_EQ(within.rule, Rule::kWithinGuarantee);
  EXPECT_EQ(within.standing, Standing::kGuaranteed);
  Decision borrow = PlanStart(c, k, Job("slurm/3", "a", 8, 100), 8, {}, 1000, {});
  EXPECT_TRUE(borrow.start);
  EXPECT_EQ(borrow.rule, Rule::kBorrowIdle);
  EXPECT_EQ(borrow.standing, Standing::kBorrowed);
  EXPECT_THAT(borrow.explanation, HasSubstr("may be reclaimed"));
}

TEST(PlanStart, ReclaimsBorrowedWorkOfTheMostOverTenantFirstAndNeverMoreThanNeeded) {
  QuotaConfig c = TwoTenants();
  QuotaConfig three = c;
  three.tenants.push_back({"c", {"team-c"}, {}, 4, std::nullopt, 1.0});
  std::vector<Work> running = {
      Job("slurm/a1", "a", 16, 0),  // a's floor
      Job("slurm/a2", "a", 4, 10),  // a borrows 4 ...
      Job("slurm/a3", "a", 4, 20),  // ... and 8 in all
      Job("slurm/c1", "c", 4, 0),   // c's floor
      Job("slurm/c2", "c", 2, 5),   // c borrows 2
  };
  Classification k = Classify(three, running);
  // b (0 of 16 in use) asks 6 on a full node: a is 8 over, c 2 over: a gives first.
  Decision d = PlanStart(three, k, Pod("k8s/b-inf/q", "b", 6, 100), 0, running, 10'000, {});
  ASSERT_TRUE(d.start) << d.explanation;
  EXPECT_EQ(d.rule, Rule::kReclaim);
  // Among a's borrowed items: same priority, same work lost, youngest first.
  EXPECT_THAT(d.victims, ElementsAre("slurm/a3", "slurm/a2"));
  EXPECT_EQ(d.victim_gpus, 8);
}

TEST(PlanStart, NeverTakesGuaranteedNotPreemptibleOrYoungWork) {
  QuotaConfig c = TwoTenants();
  std::vector<Work> running = {Job("slurm/a1", "a", 16, 0),
                               Job("slurm/a2", "a", 4, 9'900),  // borrowed, young
                               Job("slurm/a3", "a", 4, 0, /*preemptible=*/false)};
  Classification k = Classify(c, running);
  // a3 cannot be preempted: it ranks first into the floor, and a1 (16) no longer fits
  // whole, so a1 and a2 are borrowed; a2 is younger than the minimum run time.
  EXPECT_EQ(k.standing["slurm/a3"], Standing::kGuaranteed);
  ReclaimOptions opt;
  opt.min_run_time_s = 600;
  // On a node where only a2 and a3 run, nothing may be taken.
  Decision d =
      PlanStart(c, k, Pod("k8s/b-inf/q", "b", 4, 0), 0, {running[1], running[2]}, 10'000, opt);
  EXPECT_FALSE(d.start);
  EXPECT_EQ(d.rule, Rule::kNothingToReclaim);
  EXPECT_TRUE(d.victims.empty());
  Decision ok = PlanStart(c, k, Pod("k8s/b-inf/q", "b", 16, 0), 0, running, 10'000, opt);
  EXPECT_TRUE(ok.start);
  EXPECT_THAT(ok.victims, ElementsAre("slurm/a1"));
}

TEST(PlanStart, BeyondTheFloorWaitsAndTakesNothing) {
  QuotaConfig c = TwoTenants();
  std::vector<Work> running = {Job("slurm/a1", "a", 16, 0), Pod("k8s/b-inf/p", "b", 16, 0),
                               Job("slurm/x", "", 8, 0)};
  Classification k = Classify(c, running);
  Decision d = PlanStart(c, k, Pod("k8s/b-inf/q", "b", 2, 0), 0, running, 10'000, {});
  EXPECT_FALSE(d.start);
  EXPECT_EQ(d.rule, Rule::kWaitForIdle);
  EXPECT_TRUE(d.victims.empty());
}

TEST(PlanStart, LimitAndNotPreemptibleWorkBeyondTheFloorAreRefused) {
  QuotaConfig c = TwoTenants();
  Classification k = Classify(c, {Pod("k8s/b-inf/p", "b", 20, 0)});
  Decision limit = PlanStart(c, k, Pod("k8s/b-inf/q", "b", 8, 0), 64, {}, 0, {});
  EXPECT_FALSE(limit.start);
  EXPECT_EQ(limit.rule, Rule::kAtLimit);
  EXPECT_THAT(limit.explanation, HasSubstr("limit 24"));
  Classification ka = Classify(c, {Job("slurm/a1", "a", 16, 0)});
  Decision srun =
      PlanStart(c, ka, Job("slurm/a2", "a", 1, 0, /*preemptible=*/false), 64, {}, 0, {});
  EXPECT_FALSE(srun.start);
  EXPECT_EQ(srun.rule, Rule::kNotPreemptibleBeyondFloor);
  EXPECT_EQ(RuleName(srun.rule), "NotPreemptibleBeyondGuarantee");
}

TEST(PlanStart, QuotasOffOnlyAsksForIdleGpus) {
  QuotaConfig off;
  Decision d = PlanStart(off, Classify(off, {}), Job("slurm/1", "a", 4, 0), 4, {}, 0, {});
  EXPECT_TRUE(d.start);
  EXPECT_EQ(d.rule, Rule::kNoQuotas);
}

TEST(OrderPending, WithinTheFloorFirstThenTheLeastBorrowingTenant) {
  QuotaConfig c = TwoTenants();
  Classification k = Classify(c, {Job("slurm/a1", "a", 20, 0), Pod("k8s/b-inf/p", "b", 14, 0)});
  std::vector<Work> pending = {Job("slurm/a2", "a", 1, 1),     // a borrows more: last
                               Pod("k8s/b-inf/q", "b", 4, 2),  // b beyond floor
                               Pod("k8s/b-inf/r", "b", 2, 3),  // b within floor
                               Job("slurm/x", "", 1, 0)};      // no tenant: after all
  EXPECT_THAT(OrderPending(c, k, pending), ElementsAre(2, 1, 0, 3));
}

}  // namespace
}  // namespace skb::quota

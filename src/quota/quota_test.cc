// SPDX-License-Identifier: Apache-2.0
#include "src/quota/quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"

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
  three.tenants.push_back({.name = "c", .slurm_accounts = {"team-c"}, .guaranteed = 4});
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

// Per-type floors: tenant "train" is guaranteed 8 a100 and 4 h100; "serve" keeps a floor of
// any type (a number), the mixed configuration.
QuotaConfig Typed() {
  auto c = ParseQuotaConfig(nlohmann::json::parse(R"({"tenants": [
    {"name": "train", "slurm_accounts": ["ml"], "guaranteed": {"a100": 8, "h100": 4},
     "limit": {"h100": 6}},
    {"name": "serve", "kubernetes_namespaces": ["inf"], "guaranteed": 4, "limit": 20}]})"));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

Work On(Work w, std::string type) {
  w.gpu_type = std::move(type);
  return w;
}

TEST(ParseQuotaConfig, ReadsPerTypeFloorsAndLimitsBesidePlainNumbers) {
  QuotaConfig c = Typed();
  const Tenant& train = c.tenants[0];
  EXPECT_TRUE(train.per_type());
  EXPECT_EQ(train.guaranteed, 12);  // the sum: what "GPUs guaranteed in all" counts
  EXPECT_EQ(train.guaranteed_by_type, (std::map<std::string, int>{{"a100", 8}, {"h100", 4}}));
  EXPECT_EQ(train.limit, std::nullopt) << "a per-type limit limits the types it names only";
  EXPECT_EQ(train.limit_by_type, (std::map<std::string, int>{{"h100", 6}}));
  EXPECT_EQ(train.FloorFor("a100"), 8);
  EXPECT_EQ(train.FloorFor("v100"), 0) << "a type it names no floor for";
  EXPECT_EQ(train.FloorFor(""), 0) << "a type not known";
  const Tenant& serve = c.tenants[1];
  EXPECT_FALSE(serve.per_type());
  EXPECT_EQ(serve.FloorFor("h100"), 4) << "a number is a floor of any type";
  EXPECT_EQ(serve.FloorFor(""), 4);
  EXPECT_EQ(serve.limit, 20);

  std::vector<std::string> lines = DescribeQuotaConfig(c);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("2 tenant(s), 16 GPUs guaranteed"));
  EXPECT_THAT(lines[1], HasSubstr("guaranteed=a100:8,h100:4 limit=h100:6 weight=1 (floors per "
                                  "GPU type: work on another type, or of a type not known, "
                                  "borrows)"));
  EXPECT_THAT(lines[2], HasSubstr("guaranteed=4 limit=20 weight=1"));
  EXPECT_THAT(lines[2], ::testing::Not(HasSubstr("per GPU type")));
  EXPECT_THAT(lines[3], HasSubstr("kubernetes_enforcement=resource_quota"));
}

TEST(ParseQuotaConfig, ReadsKubernetesEnforcement) {
  const char* tenants = R"("tenants": [{"name": "a", "kubernetes_namespaces": ["web"]}])";
  auto parse = [&](const std::string& extra) {
    return ParseQuotaConfig(nlohmann::json::parse(StrCat("{", tenants, extra, "}")));
  };
  StatusOr<QuotaConfig> def = parse("");
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->kubernetes_enforcement, QuotaConfig::KubernetesEnforcement::kResourceQuota);
  StatusOr<QuotaConfig> off = parse(R"(, "kubernetes_enforcement": "off")");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->kubernetes_enforcement, QuotaConfig::KubernetesEnforcement::kOff);
  EXPECT_THAT(DescribeQuotaConfig(*off).back(), HasSubstr("kubernetes_enforcement=off"));
  StatusOr<QuotaConfig> bad = parse(R"(, "kubernetes_enforcement": "webhook")");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("quotas.kubernetes_enforcement"));
}

TEST(ParseQuotaConfig, PerTypeErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* error;
  } cases[] = {
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"h100": -1}}]})",
       "quotas.tenants[0].guaranteed.h100"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"h100": 2.5}}]})",
       "quotas.tenants[0].guaranteed.h100': expected an integer"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"h100": "4"}}]})",
       "quotas.tenants[0].guaranteed.h100"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"any": 4}}]})",
       "quotas.tenants[0].guaranteed.any': \"any\" is not a GPU type"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"": 4}}]})",
       "a GPU type needs a name"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {}}]})",
       "quotas.tenants[0].guaranteed': names no GPU type"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": "8"}]})",
       "quotas.tenants[0].guaranteed': expected a number of GPUs or an object of GPU type"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": [8]}]})", "got array"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"h100": 4},
                        "limit": {"h100": 2}}]})",
       "quotas.tenants[0].limit.h100': limit 2 is below guaranteed 4 (guaranteed.h100)"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": {"h100": 4,
                        "a100": 4}, "limit": 6}]})",
       "quotas.tenants[0].limit': limit 6 is below guaranteed 8"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"], "limit": {"any": 2}}]})",
       "quotas.tenants[0].limit.any"},
      {R"({"tenants": [{"name": "a", "slurm_accounts": ["x"],
                        "guaranteed": {"a": 600000, "b": 600000}}]})",
       "quotas.tenants[0].guaranteed': the types add up to 1200000 GPUs"},
  };
  for (const Case& k : cases) {
    auto c = ParseQuotaConfig(nlohmann::json::parse(k.json));
    ASSERT_FALSE(c.ok()) << k.json;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(c.status().message(), HasSubstr(k.error)) << k.json;
  }
  // A per-type limit beside a plain floor: the floor is of any type, so nothing to compare.
  EXPECT_TRUE(ParseQuotaConfig(nlohmann::json::parse(
                                   R"({"tenants": [{"name": "a", "slurm_accounts": ["x"],
                                       "guaranteed": 8, "limit": {"h100": 2}}]})"))
                  .ok());
}

TEST(Classify, EachTypeFillsItsOwnFloorAndOtherTypesBorrow) {
  QuotaConfig c = Typed();
  std::vector<Work> running = {
      On(Job("slurm/1", "train", 8, 100), "a100"),  // a100 floor full
      On(Job("slurm/2", "train", 4, 200), "a100"),  // beyond the a100 floor
      On(Job("slurm/3", "train", 2, 300), "h100"),  // within the h100 floor (2 of 4)
      On(Job("slurm/4", "train", 2, 50), "v100"),   // a type with no floor
      On(Job("slurm/5", "train", 1, 10), ""),       // type not known
      On(Pod("k8s/inf/p", "serve", 4, 0), "h100"),  // a plain floor: any type
  };
  Classification k = Classify(c, running);
  EXPECT_EQ(k.standing["slurm/1"], Standing::kGuaranteed);
  EXPECT_EQ(k.standing["slurm/2"], Standing::kBorrowed);
  EXPECT_EQ(k.standing["slurm/3"], Standing::kGuaranteed)
      << "the a100 floor being full does not touch the h100 floor";
  EXPECT_EQ(k.standing["slurm/4"], Standing::kBorrowed);
  EXPECT_EQ(k.standing["slurm/5"], Standing::kBorrowed);
  EXPECT_EQ(k.standing["k8s/inf/p"], Standing::kGuaranteed);
  const TenantUsage& u = k.usage["train"];
  EXPECT_TRUE(u.per_type);
  EXPECT_EQ(u.in_use(), 17);
  EXPECT_EQ(u.borrowed, 7);
  EXPECT_EQ(u.by_type.at("a100").guaranteed, 8);
  EXPECT_EQ(u.by_type.at("a100").in_use, 12);
  EXPECT_EQ(u.by_type.at("a100").borrowed, 4);
  EXPECT_DOUBLE_EQ(u.by_type.at("a100").over_per_weight, 4);
  EXPECT_EQ(u.by_type.at("h100").in_use, 2);
  EXPECT_EQ(u.by_type.at("h100").limit, 6);
  EXPECT_DOUBLE_EQ(u.by_type.at("h100").over_per_weight, -2);
  EXPECT_EQ(u.by_type.at("v100").borrowed, 2);
  EXPECT_EQ(u.by_type.at("").borrowed, 1);
  EXPECT_FALSE(k.usage["serve"].per_type);
  EXPECT_EQ(k.usage["serve"].by_type.at("h100").in_use, 4);
  EXPECT_DOUBLE_EQ(k.usage["serve"].by_type.at("h100").over_per_weight, 0);  // the whole's
}

TEST(Classify, APlainFloorCountsWorkOfEveryTypeAsToday) {
  QuotaConfig c = TwoTenants();
  Classification k =
      Classify(c, {On(Job("slurm/1", "a", 8, 1), "a100"), On(Job("slurm/2", "a", 8, 2), "h100"),
                   On(Job("slurm/3", "a", 2, 3), "")});
  EXPECT_EQ(k.standing["slurm/1"], Standing::kGuaranteed);
  EXPECT_EQ(k.standing["slurm/2"], Standing::kGuaranteed);
  EXPECT_EQ(k.standing["slurm/3"], Standing::kBorrowed);  // 18 > 16, whatever the types
  EXPECT_EQ(k.usage["a"].borrowed, 2);
}

TEST(PlanStart, DecidesWithinOrBorrowedOnTheFloorOfTheTypeAsked) {
  QuotaConfig c = Typed();
  Classification k = Classify(c, {On(Job("slurm/1", "train", 8, 0), "a100")});
  // a100 floor full: more a100 borrows, even though 4 h100 are still guaranteed.
  Decision a100 = PlanStart(c, k, On(Job("slurm/2", "train", 2, 0), "a100"), 8, {}, 0, {});
  EXPECT_EQ(a100.rule, Rule::kBorrowIdle);
  EXPECT_EQ(a100.standing, Standing::kBorrowed);
  EXPECT_THAT(a100.explanation, HasSubstr("tenant train borrows idle a100 GPUs beyond its 8 "
                                          "guaranteed: it may be reclaimed"));
  Decision h100 = PlanStart(c, k, On(Job("slurm/3", "train", 4, 0), "h100"), 8, {}, 0, {});
  EXPECT_EQ(h100.rule, Rule::kWithinGuarantee);
  EXPECT_THAT(h100.explanation, HasSubstr("stays within its 4 guaranteed h100 GPUs"));
  // A type with no floor: beyond it at once, and a job that cannot be preempted is refused.
  Decision v100 = PlanStart(c, k, On(Job("slurm/4", "train", 1, 0, /*preemptible=*/false), "v100"),
                            8, {}, 0, {});
  EXPECT_EQ(v100.rule, Rule::kNotPreemptibleBeyondFloor);
  EXPECT_THAT(v100.explanation, HasSubstr("uses 0 of 0 guaranteed v100 GPUs"));
  // Any type: judged on the floor with the most room (h100: 4 left), and says so.
  Decision any = PlanStart(c, k, Job("slurm/5", "train", 4, 0), 8, {}, 0, {});
  EXPECT_EQ(any.rule, Rule::kWithinGuarantee);
  EXPECT_THAT(any.explanation, HasSubstr("4 guaranteed h100 GPUs"));
  EXPECT_EQ(FloorOf(c, k, Job("slurm/5", "train", 4, 0)).type, "h100");
  Decision too_big = PlanStart(c, k, Job("slurm/6", "train", 5, 0), 8, {}, 0, {});
  EXPECT_EQ(too_big.rule, Rule::kBorrowIdle) << "no single type has room for 5";
}

TEST(PlanStart, APerTypeLimitCapsThatTypeOnly) {
  QuotaConfig c = Typed();
  Classification k = Classify(c, {On(Job("slurm/1", "train", 5, 0), "h100")});
  Decision h100 = PlanStart(c, k, On(Job("slurm/2", "train", 2, 0), "h100"), 8, {}, 0, {});
  EXPECT_FALSE(h100.start);
  EXPECT_EQ(h100.rule, Rule::kAtLimit);
  EXPECT_THAT(h100.explanation, HasSubstr("tenant train uses 5 of its limit 6 h100 GPUs"));
  EXPECT_TRUE(PlanStart(c, k, On(Job("slurm/3", "train", 2, 0), "a100"), 8, {}, 0, {}).start)
      << "no a100 limit";
  EXPECT_TRUE(PlanStart(c, k, On(Job("slurm/4", "train", 1, 0), "h100"), 8, {}, 0, {}).start);
}

TEST(PlanStart, ReclaimsOnlyWorkOnGpusOfTheTypeItNeeds) {
  QuotaConfig c = Typed();
  std::vector<Work> running = {
      On(Pod("k8s/inf/big", "serve", 4, 0), "a100"),  // serve's floor (4, any type)
      On(Pod("k8s/inf/a1", "serve", 4, 10), "a100"),  // serve borrows a100
      On(Pod("k8s/inf/h1", "serve", 4, 20), "h100"),  // serve borrows h100
      On(Pod("k8s/inf/u1", "serve", 4, 30), ""),      // serve borrows, type not known
      On(Job("slurm/x", "", 4, 40), "h100"),          // no tenant: borrows h100
  };
  Classification k = Classify(c, running);
  ASSERT_EQ(k.standing["k8s/inf/big"], Standing::kGuaranteed);
  // train asks 4 h100 on a full place where every kind of borrowed work runs: only h100
  // work is taken (work of no tenant first: it is the most over), never a100 or unknown.
  Decision h100 =
      PlanStart(c, k, On(Job("slurm/t1", "train", 4, 0), "h100"), 0, running, 10'000, {});
  ASSERT_TRUE(h100.start) << h100.explanation;
  EXPECT_EQ(h100.rule, Rule::kReclaim);
  EXPECT_THAT(h100.victims, ElementsAre("slurm/x"));
  EXPECT_THAT(h100.explanation, HasSubstr("is within its 4 guaranteed h100 GPUs: 4 borrowed h100 "
                                          "GPUs are reclaimed"));
  // 8 h100: both h100 items and nothing else; 12 h100: there are not 12, nothing is taken.
  Decision h8 = PlanStart(c, k, On(Job("slurm/t2", "train", 4, 0), "h100"), 4, running, 10'000, {});
  EXPECT_TRUE(h8.start);
  EXPECT_TRUE(h8.victims.empty()) << "4 idle h100 GPUs are enough";
  QuotaConfig wide = c;
  wide.tenants[0].guaranteed_by_type["h100"] = 12;
  wide.tenants[0].limit_by_type.clear();
  Classification kw = Classify(wide, running);
  Decision h12 =
      PlanStart(wide, kw, On(Job("slurm/t3", "train", 12, 0), "h100"), 0, running, 10'000, {});
  EXPECT_FALSE(h12.start);
  EXPECT_EQ(h12.rule, Rule::kNothingToReclaim);
  EXPECT_THAT(h12.explanation, HasSubstr("here only 8 h100 GPUs are idle or borrowed by others"));
  // a100: only the borrowed a100 pod, never serve's guaranteed one.
  Decision a100 =
      PlanStart(c, k, On(Job("slurm/t4", "train", 8, 0), "a100"), 4, running, 10'000, {});
  ASSERT_TRUE(a100.start) << a100.explanation;
  EXPECT_THAT(a100.victims, ElementsAre("k8s/inf/a1"));
  // Asking any type under per-type floors: the type with the most room (a100: 8) and only
  // its work.
  Decision any = PlanStart(c, k, Job("slurm/t5", "train", 4, 0), 0, running, 10'000, {});
  ASSERT_TRUE(any.start) << any.explanation;
  EXPECT_THAT(any.victims, ElementsAre("k8s/inf/a1"));
  // Under a plain floor, demand of a type still takes only that type; demand of any type
  // takes any, the unknown type included (serve is the most over).
  QuotaConfig plain = TwoTenants();
  std::vector<Work> mixed = {On(Job("slurm/a1", "a", 16, 0), "h100"),
                             On(Job("slurm/a2", "a", 4, 10), "a100"),
                             On(Job("slurm/a3", "a", 4, 20), "")};
  Classification kp = Classify(plain, mixed);
  Decision typed =
      PlanStart(plain, kp, On(Pod("k8s/b-inf/q", "b", 4, 0), "a100"), 0, mixed, 10'000, {});
  ASSERT_TRUE(typed.start);
  EXPECT_THAT(typed.victims, ElementsAre("slurm/a2"));
  Decision untyped = PlanStart(plain, kp, Pod("k8s/b-inf/r", "b", 4, 0), 0, mixed, 10'000, {});
  ASSERT_TRUE(untyped.start);
  EXPECT_THAT(untyped.victims, ElementsAre("slurm/a3")) << "youngest first, any type";
  Decision unknown_only =
      PlanStart(plain, kp, On(Pod("k8s/b-inf/s", "b", 4, 0), "v100"), 0, mixed, 10'000, {});
  EXPECT_FALSE(unknown_only.start) << "work of unknown type is never taken for typed demand";
}

TEST(PlanStart, VictimsComeFromTheTenantMostOverTheFloorOfTheirType) {
  auto parsed = ParseQuotaConfig(nlohmann::json::parse(R"({"tenants": [
    {"name": "x", "slurm_accounts": ["x"], "guaranteed": {"a100": 8, "h100": 0}},
    {"name": "y", "slurm_accounts": ["y"], "guaranteed": 6},
    {"name": "z", "slurm_accounts": ["z"], "guaranteed": {"h100": 8}}]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const QuotaConfig& c = *parsed;
  // x runs 6 a100 (2 below its a100 floor) and 3 h100 (3 over its h100 floor of 0): in
  // all it is 1 over, but on h100 it borrows 3. y (plain floor 6) runs 8 h100: 2 over.
  std::vector<Work> running = {On(Job("x1", "x", 6, 0), "a100"), On(Job("x2", "x", 3, 0), "h100"),
                               On(Job("y1", "y", 6, 0), "h100"), On(Job("y2", "y", 2, 0), "h100")};
  Classification k = Classify(c, running);
  ASSERT_EQ(k.standing["x2"], Standing::kBorrowed);
  ASSERT_EQ(k.standing["y2"], Standing::kBorrowed);
  EXPECT_DOUBLE_EQ(OverPerWeight(k, running[1]), 3);
  Decision d = PlanStart(c, k, On(Job("z1", "z", 2, 0), "h100"), 0, running, 10'000, {});
  ASSERT_TRUE(d.start) << d.explanation;
  EXPECT_THAT(d.victims, ElementsAre("x2")) << "x borrows 3 h100, y 2";
}

TEST(OrderPending, WithinTheFloorIsJudgedPerType) {
  QuotaConfig c = Typed();
  Classification k = Classify(c, {On(Job("slurm/1", "train", 8, 0), "a100")});
  std::vector<Work> pending = {On(Job("slurm/2", "train", 2, 1), "a100"),   // beyond (a100)
                               On(Job("slurm/3", "train", 2, 2), "h100"),   // within (h100)
                               On(Job("slurm/4", "train", 2, 3), "v100")};  // beyond (no floor)
  EXPECT_THAT(OrderPending(c, k, pending), ElementsAre(1, 0, 2));
}

TEST(GpusOfType, NamesTheTypeWhenThereIsOne) {
  EXPECT_EQ(GpusOfType(1, ""), "1 GPU");
  EXPECT_EQ(GpusOfType(4, ""), "4 GPUs");
  EXPECT_EQ(GpusOfType(4, "h100"), "4 h100 GPUs");
}

}  // namespace
}  // namespace skb::quota

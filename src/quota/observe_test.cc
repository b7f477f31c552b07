#include "src/quota/observe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/ownership/policy.h"

namespace skb::quota {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

const Clock::TimePoint kNow = ownership::FromUnix(1'700'000'000);

config::Config TwoTenants() {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]},
    "quotas": {"tenants": [
      {"name": "a", "slurm_accounts": ["team-a"], "kubernetes_namespaces": ["a-inf"],
       "guaranteed": 8},
      {"name": "b", "slurm_accounts": ["team-b"], "kubernetes_namespaces": ["b-inf"],
       "guaranteed": 8, "limit": 12}]}})");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  return *cfg;
}

slurm::JobView RunningJob(uint32_t id, std::string account, std::vector<std::string> nodes,
                          int64_t gpus_per_node, int64_t started, bool requeue = true) {
  slurm::JobView j;
  j.job_id = id;
  j.account = std::move(account);
  j.partition = "gpu";
  j.state = slurm::JobState::kRunning;
  j.nodes = std::move(nodes);
  j.gpus_per_node = gpus_per_node;
  j.start_time = started;
  j.priority = 100;
  j.requeue = requeue;
  return j;
}

inventory::GpuPod Pod(std::string ns, std::string name, std::string node, int64_t gpus,
                      int32_t priority = 1'000'000) {
  inventory::GpuPod p;
  p.namespace_name = std::move(ns);
  p.name = std::move(name);
  p.node_name = std::move(node);
  p.gpus = gpus;
  p.priority = priority;
  p.phase = p.node_name.empty() ? "Pending" : "Running";
  return p;
}

const ObservedWork& Find(const Observation& o, const std::string& id) {
  for (const auto& w : o.work) {
    if (w.work.id == id) return w;
  }
  ADD_FAILURE() << "no work " << id;
  static ObservedWork none;
  return none;
}

// Tenant a fills 4 nodes of 4 GPUs (8 borrowed), b's pod runs on a fifth node, a pending
// pod of b and a pending job of a ask for more; a pod on an unmanaged node and the
// reservation pod are not counted.
TEST(Observe, SplitsEachTenantsWorkAtItsFloor) {
  config::Config cfg = TwoTenants();
  std::vector<slurm::JobView> jobs = {
      RunningJob(1, "team-a", {"n1", "n2"}, 4, 1000),
      RunningJob(2, "team-a", {"n3"}, 4, 2000),
      RunningJob(3, "team-a", {"n4"}, 4, 500, /*requeue=*/false),
  };
  slurm::JobView pending = RunningJob(4, "team-a", {}, 2, 0);
  pending.state = slurm::JobState::kPending;
  jobs.push_back(pending);
  slurm::JobView held = pending;
  held.job_id = 5;
  held.priority = 0;  // held: no demand
  jobs.push_back(held);
  inventory::GpuPod reservation = Pod("slurm-bridge", "reserve-n1", "n1", 4);
  reservation.reservation = true;
  std::vector<inventory::GpuPod> pods = {Pod("b-inf", "serve-0", "n5", 4),
                                         Pod("b-inf", "serve-1", "", 4),
                                         Pod("b-inf", "elsewhere", "cpu-node", 4), reservation};
  Observation o = Observe(cfg, jobs, pods, {"n1", "n2", "n3", "n4", "n5"}, kNow);

  // Job 3 cannot be preempted (--no-requeue): it fills the floor first; then the longest
  // running (job 1, 8 GPUs) would not fit whole, so it and everything after it borrows.
  EXPECT_EQ(o.classification.standing.at("slurm/3"), Standing::kGuaranteed);
  EXPECT_EQ(o.classification.standing.at("slurm/1"), Standing::kBorrowed);
  EXPECT_EQ(o.classification.standing.at("slurm/2"), Standing::kBorrowed);
  EXPECT_EQ(o.classification.standing.at("k8s/b-inf/serve-0"), Standing::kGuaranteed);
  EXPECT_FALSE(o.classification.standing.count("k8s/b-inf/elsewhere"));
  EXPECT_FALSE(o.classification.standing.count("k8s/slurm-bridge/reserve-n1"));
  EXPECT_FALSE(o.classification.standing.count("slurm/5"));

  std::vector<TenantRow> rows = TenantRows(cfg.quotas, o);
  ASSERT_EQ(rows.size(), 2u);  // no work outside the tenants
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_EQ(rows[0].in_use_slurm, 16);
  EXPECT_EQ(rows[0].in_use_kubernetes, 0);
  EXPECT_EQ(rows[0].borrowed, 12);
  EXPECT_EQ(rows[0].pending, 2);
  EXPECT_EQ(rows[1].name, "b");
  EXPECT_EQ(rows[1].in_use_kubernetes, 4);
  EXPECT_EQ(rows[1].borrowed, 0);
  EXPECT_EQ(rows[1].pending, 4);
  EXPECT_EQ(rows[1].limit, 12);

  EXPECT_THAT(Find(o, "slurm/3").preemptible_why, HasSubstr("--no-requeue"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/3")),
              HasSubstr("within the 8 GPUs guaranteed: 0 GPUs of tenant a's work rank before"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/2")),
              HasSubstr("beyond the 8 GPUs guaranteed: 12 GPUs of tenant a's work rank before"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "k8s/b-inf/serve-1")),
              HasSubstr("pending: would run guaranteed (WithinGuarantee)"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/4")),
              HasSubstr("pending: would run borrowed (BorrowIdle)"));

  // What the planners keep from other tenants' demand: the running jobs within the floor
  // (not the pod: Kubernetes' own priority protects it; not pending work).
  EXPECT_EQ(GuaranteedJobs(o), (std::map<uint32_t, std::string>{{3, "a"}}));
}

// Quotas off: nothing is guaranteed, every job is judged by the lending policy alone.
TEST(Observe, NoTenantsGuaranteeNoJob) {
  auto cfg = config::ParseConfig(R"({"admission": {"preemptible_partitions": ["gpu"]}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  Observation o = Observe(*cfg, {RunningJob(1, "team-a", {"n1"}, 4, 1000)}, {}, {"n1"}, kNow);
  EXPECT_THAT(GuaranteedJobs(o), IsEmpty());
}

TEST(Observe, WorkOfNoTenantBorrowsAndGetsARowOfItsOwn) {
  config::Config cfg = TwoTenants();
  Observation o = Observe(cfg, {RunningJob(7, "physics", {"n1"}, 2, 10)},
                          {Pod("default", "p", "n2", 1)}, {"n1", "n2"}, kNow);
  EXPECT_EQ(o.classification.standing.at("slurm/7"), Standing::kBorrowed);
  std::vector<TenantRow> rows = TenantRows(cfg.quotas, o);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].name, "");
  EXPECT_EQ(rows[2].in_use_slurm, 2);
  EXPECT_EQ(rows[2].in_use_kubernetes, 1);
  EXPECT_EQ(rows[2].borrowed, 3);
  EXPECT_THAT(WhyStanding(cfg.quotas, o, o.work[0]), HasSubstr("account physics is in no tenant"));
}

TEST(Observe, APodAtTheProtectedClassCannotBePreempted) {
  config::Config cfg = TwoTenants();
  Observation o =
      Observe(cfg, {}, {Pod("a-inf", "critical", "n1", 1, 2'000'000'000)}, {"n1"}, kNow);
  ASSERT_EQ(o.work.size(), 1u);
  EXPECT_FALSE(o.work[0].work.preemptible);
  EXPECT_THAT(o.work[0].preemptible_why, HasSubstr("at or above the protected class"));
}

TEST(AdviseSubmit, SaysWithinOrBorrowedAndRefusesWhatCannotBePreemptedBeyondTheFloor) {
  config::Config cfg = TwoTenants();
  Observation o = Observe(cfg, {RunningJob(1, "team-a", {"n1"}, 6, 1000)}, {}, {"n1"}, kNow);
  const Classification& c = o.classification;

  SubmitAdvice within = AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 2});
  EXPECT_FALSE(within.refuse);
  EXPECT_EQ(within.rule, Rule::kWithinGuarantee);
  EXPECT_THAT(within.message, HasSubstr("tenant a uses 6 of its 8 GPUs guaranteed"));
  EXPECT_THAT(within.message, HasSubstr("within the guarantee"));

  SubmitAdvice borrowed = AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 4});
  EXPECT_FALSE(borrowed.refuse);
  EXPECT_EQ(borrowed.rule, Rule::kBorrowIdle);
  EXPECT_THAT(borrowed.message, HasSubstr("would be borrowed"));
  EXPECT_THAT(borrowed.message, HasSubstr("may be preempted"));

  SubmitAdvice refused = AdviseSubmit(
      cfg.quotas, c,
      {.account = "team-a", .gpus = 4, .preemptible = false, .preemptible_why = "--no-requeue"});
  EXPECT_TRUE(refused.refuse);
  EXPECT_EQ(refused.rule, Rule::kNotPreemptibleBeyondFloor);
  EXPECT_THAT(refused.message, HasSubstr("refused: tenant a uses 6 of its 8 GPUs guaranteed"));
  EXPECT_THAT(refused.message, HasSubstr("(--no-requeue)"));

  // Within the floor, work that cannot be preempted is fine.
  EXPECT_FALSE(
      AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 2, .preemptible = false}).refuse);
  // Not a tenant's: it can only borrow, so a job that cannot be preempted is refused.
  SubmitAdvice stranger =
      AdviseSubmit(cfg.quotas, c, {.account = "physics", .gpus = 1, .preemptible = false});
  EXPECT_TRUE(stranger.refuse);
  EXPECT_THAT(stranger.message, HasSubstr("account physics (in no tenant)"));
  // No account named, no GPUs, quotas off: nothing refused.
  EXPECT_FALSE(
      AdviseSubmit(cfg.quotas, c, {.account = "", .gpus = 8, .preemptible = false}).refuse);
  EXPECT_THAT(AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 0}).message, IsEmpty());
  EXPECT_THAT(AdviseSubmit(QuotaConfig{}, c, {.account = "team-a", .gpus = 9}).message, IsEmpty());
}

TEST(DescribeQuotaConfig, ListsEveryTenant) {
  config::Config cfg = TwoTenants();
  std::vector<std::string> lines = DescribeQuotaConfig(cfg.quotas);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("2 tenant(s), 16 GPUs guaranteed"));
  EXPECT_THAT(lines[2], HasSubstr("tenant b: slurm_accounts=team-b kubernetes_namespaces=b-inf "
                                  "guaranteed=8 limit=12 weight=1"));
  EXPECT_THAT(DescribeQuotaConfig(QuotaConfig{})[0], HasSubstr("off"));
}

TEST(ParseConfig, TheQuotasSectionIsStrictAndNamesTheKey) {
  auto bad = config::ParseConfig(
      R"({"quotas": {"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranted": 4}]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("quotas.tenants[0].guaranted"));
  auto limit = config::ParseConfig(
      R"({"quotas": {"tenants": [{"name": "a", "slurm_accounts": ["x"], "guaranteed": 4,
          "limit": 2}]}})");
  ASSERT_FALSE(limit.ok());
  EXPECT_THAT(limit.status().message(), HasSubstr("quotas.tenants[0].limit"));
  EXPECT_FALSE(config::ParseConfig("{}")->quotas.enabled());
}

}  // namespace
}  // namespace skb::quota

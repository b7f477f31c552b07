// SPDX-License-Identifier: Apache-2.0
#include "src/quota/observe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/devices/placeholder_record.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::quota {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

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
// What a reclaim may take back: a node lent (its lent-at annotation) or still carrying the
// reclaim taint, with its GPUs; a node Slurm has is none.
TEST(LentNodeOf, ALentOrReclaimingNodeWithItsGpus) {
  inventory::K8sNode node;
  node.name = "k8s-1";
  node.gpu_allocatable = 8;
  EXPECT_EQ(LentNodeOf(node), std::nullopt) << "Slurm's";
  node.annotations[ownership::kLentAtAnnotation] = "2026-11-29T03:00:00Z";
  EXPECT_EQ(LentNodeOf(node), (LentNode{.name = "k8s-1", .gpus = 8, .reclaiming = false}));
  node.annotations.clear();
  node.taints.push_back({.key = ownership::kReclaimTaintKey, .value = "", .effect = "NoSchedule"});
  EXPECT_EQ(LentNodeOf(node), (LentNode{.name = "k8s-1", .gpus = 8, .reclaiming = true}))
      << "the lent-at is gone but the reclaim is not over";
}

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

// A multi-node job counts what each node holds (its first node's count times the node count
// before: 3 + 2 GPUs read as 6), and a pending one its whole request (4 per node on 2 nodes
// read as 4 before).
TEST(Observe, AMultiNodeJobCountsEachNodesGpusAndAPendingOneItsWholeRequest) {
  config::Config cfg = TwoTenants();
  slurm::JobView uneven = RunningJob(1, "team-a", {"n1", "n2"}, 3, 1000);
  uneven.gpu_indices = {{"n1", {0, 1, 2}}, {"n2", {6, 7}}};
  slurm::JobView even = RunningJob(2, "team-a", {"n3", "n4"}, 2, 1000);  // no indices listed
  slurm::JobView pending = RunningJob(3, "team-b", {}, 4, 0);
  pending.state = slurm::JobState::kPending;
  pending.state_reason = "Resources";
  pending.requested_gpus = 8;
  slurm::JobView pending_unknown = pending;
  pending_unknown.job_id = 4;
  pending_unknown.requested_gpus = 0;  // not read: its per-node count stands
  Observation o =
      Observe(cfg, {uneven, even, pending, pending_unknown}, {}, {"n1", "n2", "n3", "n4"}, kNow);
  EXPECT_EQ(Find(o, "slurm/1").work.gpus, 5);
  EXPECT_EQ(Find(o, "slurm/2").work.gpus, 4);
  EXPECT_EQ(Find(o, "slurm/3").work.gpus, 8);
  EXPECT_EQ(Find(o, "slurm/4").work.gpus, 4);
  EXPECT_EQ(o.pending_gpus.at("b"), 12);
}

TEST(Observe, ThePlaceholderOfASharedNodeIsNotCountedBesideItsPod) {
  config::Config cfg = TwoTenants();
  // The placeholder (an allocation, as the bridge submits it) holds 2 GPUs of n1 in Slurm
  // for pod a-inf/p, which runs on them: 2 GPUs in use, the pod's.
  slurm::JobView hold = RunningJob(9, "team-a", {"n1"}, 2, 1000, /*requeue=*/false);
  hold.name = devices::kPlaceholderJobName;
  hold.partition = cfg.gpu_sharing.placeholder.partition;
  hold.batch = false;
  hold.admin_comment =
      devices::FormatPlaceholderRecord({.node = "n1", .pod = "a-inf/p", .gpus = 2});
  Observation o = Observe(cfg, {hold}, {Pod("a-inf", "p", "n1", 2)}, {"n1"}, kNow);
  std::vector<TenantRow> rows = TenantRows(cfg.quotas, o);
  ASSERT_GE(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_EQ(rows[0].in_use_slurm, 0);
  EXPECT_EQ(rows[0].in_use_kubernetes, 2);
  EXPECT_EQ(o.classification.standing.count("slurm/9"), 0u);
  // A job that only has the placeholder's name (no record) is counted like any other; one in
  // another partition with its record is still the placeholder (the partition was renamed).
  slurm::JobView impostor = hold;
  impostor.admin_comment = "";
  o = Observe(cfg, {impostor}, {}, {"n1"}, kNow);
  EXPECT_EQ(TenantRows(cfg.quotas, o)[0].in_use_slurm, 2);
  slurm::JobView moved = hold;
  moved.partition = "gpu";
  o = Observe(cfg, {moved}, {Pod("a-inf", "p", "n1", 2)}, {"n1"}, kNow);
  EXPECT_EQ(TenantRows(cfg.quotas, o)[0].in_use_slurm, 0);
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
  // No account named: judged on the submitting user's default account, and told so.
  SubmitAdvice defaulted = AdviseSubmit(cfg.quotas, c,
                                        {.account = "team-a",
                                         .account_is_default = true,
                                         .gpus = 4,
                                         .preemptible = false,
                                         .preemptible_why = "--no-requeue"});
  EXPECT_TRUE(defaulted.refuse);
  EXPECT_THAT(defaulted.message,
              HasSubstr("tenant a (no --account given: your default account team-a) uses 6 of "
                        "its 8 GPUs guaranteed"));
  // No account named and no default known, no GPUs, quotas off: nothing refused.
  EXPECT_FALSE(
      AdviseSubmit(cfg.quotas, c, {.account = "", .gpus = 8, .preemptible = false}).refuse);
  EXPECT_THAT(AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 0}).message, IsEmpty());
  EXPECT_THAT(AdviseSubmit(QuotaConfig{}, c, {.account = "team-a", .gpus = 9}).message, IsEmpty());
}

// Lending off: the bridge never preempts a Slurm job for another tenant, so nothing beyond
// the floor is called preemptible and nothing is refused for it; within the floor and at the
// limit the advice is as with lending on.
TEST(AdviseSubmit, WithLendingOffTheFloorIsReportedNotEnforced) {
  config::Config cfg = TwoTenants();
  Observation o = Observe(cfg, {RunningJob(1, "team-a", {"n1"}, 6, 1000)}, {}, {"n1"}, kNow);
  const Classification& c = o.classification;
  for (bool preemptible : {true, false}) {
    SubmitAdvice beyond = AdviseSubmit(cfg.quotas, c,
                                       {.account = "team-a",
                                        .gpus = 4,
                                        .preemptible = preemptible,
                                        .preemptible_why = "--no-requeue",
                                        .bridge_preempts = false});
    EXPECT_FALSE(beyond.refuse) << preemptible;
    EXPECT_THAT(beyond.message, HasSubstr("tenant a uses 6 of its 8 GPUs guaranteed"));
    EXPECT_THAT(beyond.message, HasSubstr("lending is off"));
    EXPECT_THAT(beyond.message, Not(HasSubstr("may be preempted")));
  }
  SubmitAdvice within = AdviseSubmit(
      cfg.quotas, c,
      {.account = "team-a", .gpus = 2, .preemptible = false, .bridge_preempts = false});
  EXPECT_EQ(within.rule, Rule::kWithinGuarantee);
  EXPECT_THAT(within.message, HasSubstr("within the guarantee"));
  EXPECT_FALSE(
      AdviseSubmit(
          cfg.quotas, c,
          {.account = "physics", .gpus = 1, .preemptible = false, .bridge_preempts = false})
          .refuse);
}

TEST(DescribeQuotaConfig, ListsEveryTenant) {
  config::Config cfg = TwoTenants();
  std::vector<std::string> lines = DescribeQuotaConfig(cfg.quotas);
  ASSERT_EQ(lines.size(), 4u);  // and kubernetes_enforcement
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

// Tenant a (guaranteed 8) runs 4 GPUs and has a job pending for resources; b (guaranteed 8)
// runs 8 in Slurm and borrows with pods on lent nodes.
class PlanReclaimsTest : public ::testing::Test {
 protected:
  PlanReclaimsTest() {
    jobs_ = {RunningJob(1, "team-a", {"n1"}, 4, 1000),
             RunningJob(2, "team-b", {"n2", "n3"}, 4, 1000)};
    slurm::JobView pending = RunningJob(10, "team-a", {}, 4, 0);
    pending.state = slurm::JobState::kPending;
    pending.state_reason = "Resources";
    pending.submit_time = 5000;
    jobs_.push_back(pending);
  }
  std::vector<Reclaim> Plan(const std::vector<inventory::GpuPod>& pods,
                            const std::vector<LentNode>& lent, ReclaimOptions options = {}) {
    options.min_run_time_s = 0;
    Observation o = Observe(cfg_, jobs_, pods, {"n1", "n2", "n3", "n4", "n5", "n6"}, kNow);
    return PlanReclaims(cfg_.quotas, o, lent, ownership::ToUnix(kNow), options);
  }

  config::Config cfg_ = TwoTenants();
  std::vector<slurm::JobView> jobs_;
};

TEST_F(PlanReclaimsTest, ATenantBelowItsGuaranteeTakesBackANodeBorrowedByAnother) {
  std::vector<Reclaim> r =
      Plan({Pod("b-inf", "serve-0", "n4", 4, 100)}, {{.name = "n4", .gpus = 4}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].node, "n4");
  EXPECT_EQ(r[0].tenant, "a");
  EXPECT_EQ(r[0].job_id, 10u);
  EXPECT_EQ(r[0].gpus, 4);
  EXPECT_EQ(r[0].victims, std::vector<std::string>{"b-inf/serve-0"});
  EXPECT_EQ(r[0].victim_tenants, std::vector<std::string>{"b"});
  EXPECT_EQ(r[0].victim_gpus, 4);
  EXPECT_THAT(r[0].why, HasSubstr("tenant a uses 4 of its 8 GPUs guaranteed and job 10 (4 GPUs) "
                                  "waits for resources: borrowed pod(s) b-inf/serve-0 (tenant b, "
                                  "4 GPUs) are evicted"));
}

TEST_F(PlanReclaimsTest, AnIdleLentNodeIsTakenBeforeOneWithPodsAndOneReclaimingBeforeBoth) {
  std::vector<inventory::GpuPod> pods = {Pod("b-inf", "serve-0", "n4", 4, 100)};
  std::vector<Reclaim> r = Plan(pods, {{.name = "n4", .gpus = 4}, {.name = "n5", .gpus = 4}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].node, "n5");
  EXPECT_THAT(r[0].victims, IsEmpty());
  EXPECT_THAT(r[0].why, HasSubstr("the lent node is idle"));

  r = Plan(pods, {{.name = "n4", .gpus = 4, .reclaiming = true}, {.name = "n5", .gpus = 4}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].node, "n4") << "a reclaim under way is kept: no flip-flop between nodes";
}

TEST_F(PlanReclaimsTest, NothingIsTakenThatIsNotBorrowedPreemptibleAndOldEnough) {
  // b's own pod within b's floor (b runs 8 in Slurm: the job ranks first, the pod borrows;
  // with b's Slurm job gone the pod is within the floor).
  jobs_.erase(jobs_.begin() + 1);
  EXPECT_THAT(Plan({Pod("b-inf", "serve-0", "n4", 4, 100)}, {{.name = "n4", .gpus = 4}}), IsEmpty())
      << "within b's guarantee";
  jobs_.insert(jobs_.begin() + 1, RunningJob(2, "team-b", {"n2", "n3"}, 4, 1000));
  EXPECT_THAT(Plan({Pod("b-inf", "serve-0", "n4", 4)}, {{.name = "n4", .gpus = 4}}), IsEmpty())
      << "at the protected class: cannot be preempted";
  EXPECT_THAT(Plan({Pod("a-inf", "mine", "n4", 4, 100)}, {{.name = "n4", .gpus = 4}}), IsEmpty())
      << "a's own pod";
  EXPECT_THAT(Plan({Pod("b-inf", "serve-0", "n4", 4, 100), Pod("b-inf", "keep", "n4", 4)},
                   {{.name = "n4", .gpus = 8}}),
              IsEmpty())
      << "one pod on the node cannot go: the node cannot return";
  EXPECT_THAT(Plan({}, {{.name = "n4", .gpus = 2}}), IsEmpty()) << "too small for the job";
}

TEST_F(PlanReclaimsTest, OnlyDemandWithinTheGuaranteeThatWaitsForResourcesReclaims) {
  const std::vector<LentNode> lent = {{.name = "n4", .gpus = 8}, {.name = "n5", .gpus = 8}};
  jobs_.back().state_reason = "BeginTime";
  EXPECT_THAT(Plan({}, lent), IsEmpty()) << "a requeued job waiting for its begin time";
  jobs_.back().state_reason = "ReqNodeNotAvail, UnavailableNodes:n4";
  EXPECT_EQ(Plan({}, lent).size(), 1u);
  jobs_.back().gpus_per_node = 8;  // 4 + 8 > 8: beyond a's guarantee
  EXPECT_THAT(Plan({}, lent), IsEmpty());
  jobs_.back().gpus_per_node = 4;
  jobs_.back().account = "nobody";
  EXPECT_THAT(Plan({}, lent), IsEmpty()) << "work of no tenant has no guarantee";
}

TEST_F(PlanReclaimsTest, TwoPendingJobsTakeTwoNodesUpToTheGuaranteeAndTheRowsSayIt) {
  jobs_[0].state = slurm::JobState::kComplete;  // a runs nothing: 8 GPUs of room
  slurm::JobView second = jobs_.back();
  second.job_id = 11;
  second.submit_time = 6000;
  jobs_.push_back(second);
  slurm::JobView third = second;
  third.job_id = 12;
  jobs_.push_back(third);
  Observation o = Observe(cfg_, jobs_, {}, {"n4", "n5", "n6"}, kNow);
  o.reclaims = PlanReclaims(
      cfg_.quotas, o,
      {{.name = "n4", .gpus = 4}, {.name = "n5", .gpus = 4}, {.name = "n6", .gpus = 4}},
      ownership::ToUnix(kNow), {});
  ASSERT_EQ(o.reclaims.size(), 2u) << "the third would pass the guarantee";
  EXPECT_EQ(o.reclaims[0].job_id, 10u);
  EXPECT_EQ(o.reclaims[1].job_id, 11u);
  EXPECT_NE(o.reclaims[0].node, o.reclaims[1].node);
  EXPECT_EQ(TenantRows(cfg_.quotas, o)[0].reclaiming, 8);
  EXPECT_THAT(WhyStanding(cfg_.quotas, o, Find(o, "slurm/10")),
              HasSubstr("; node n4 is being taken back for it (Reclaim)"));
  EXPECT_THAT(WhyStanding(cfg_.quotas, o, Find(o, "slurm/12")),
              ::testing::Not(HasSubstr("taken back")));
}

// Per-type floors: tenant a is guaranteed 4 a100 and 4 h100 GPUs, b keeps 8 of any type.
config::Config Typed() {
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]},
    "quotas": {"tenants": [
      {"name": "a", "slurm_accounts": ["team-a"], "kubernetes_namespaces": ["a-inf"],
       "guaranteed": {"a100": 4, "h100": 4}},
      {"name": "b", "slurm_accounts": ["team-b"], "kubernetes_namespaces": ["b-inf"],
       "guaranteed": 8}]}})");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  return *cfg;
}

// Node types: n1, n2 a100 (Slurm names), n3 h100; the Kubernetes names k-n1... pair with
// them; n9 has no type known.
const std::map<std::string, std::string, std::less<>> kTypes = {
    {"n1", "a100"}, {"n2", "a100"}, {"n3", "h100"}, {"k-n1", "a100"}, {"k-n3", "h100"}};

TEST(Observe, RunningWorkIsOfItsNodesTypeAndPendingWorkOfTheTypeItAsks) {
  config::Config cfg = Typed();
  slurm::JobView pending = RunningJob(4, "team-a", {}, 2, 0);
  pending.state = slurm::JobState::kPending;
  pending.gpu_type = "h100";
  slurm::JobView untyped = RunningJob(5, "team-a", {"n9"}, 1, 900);
  untyped.gpu_type = "";  // a node with no type known, a job with no typed GRES
  slurm::JobView allocated = RunningJob(6, "team-a", {"n8"}, 1, 950);
  allocated.gpu_type = "h100";  // no node type known, but Slurm said what it allocated
  inventory::GpuPod wants = Pod("a-inf", "wants", "", 2);
  wants.gpu_model = "a100";
  inventory::GpuPod picky = Pod("a-inf", "picky", "k-n3", 1);
  picky.gpu_model = "a100";  // its node says h100: the node wins
  Observation o = Observe(cfg,
                          {RunningJob(1, "team-a", {"n1"}, 4, 100),
                           RunningJob(2, "team-a", {"n2"}, 2, 200), pending, untyped, allocated},
                          {Pod("a-inf", "serve", "k-n3", 2), wants, picky},
                          {"n1", "n2", "n3", "n9", "k-n1", "k-n3"}, kNow, kTypes);
  EXPECT_EQ(Find(o, "slurm/1").work.gpu_type, "a100");
  EXPECT_EQ(Find(o, "slurm/4").work.gpu_type, "h100");
  EXPECT_EQ(Find(o, "slurm/5").work.gpu_type, "");
  EXPECT_EQ(Find(o, "slurm/6").work.gpu_type, "h100");
  EXPECT_EQ(Find(o, "k8s/a-inf/serve").work.gpu_type, "h100");
  EXPECT_EQ(Find(o, "k8s/a-inf/wants").work.gpu_type, "a100");
  EXPECT_EQ(Find(o, "k8s/a-inf/picky").work.gpu_type, "h100");

  // a100: job 1 fills the floor, job 2 borrows; h100: the pods (at the protected class, so
  // first: picky 1, serve 2) and job 6 (1) fit its 4; job 5 (type not known) borrows.
  const Classification& c = o.classification;
  EXPECT_EQ(c.standing.at("slurm/1"), Standing::kGuaranteed);
  EXPECT_EQ(c.standing.at("slurm/2"), Standing::kBorrowed);
  EXPECT_EQ(c.standing.at("slurm/6"), Standing::kGuaranteed);
  EXPECT_EQ(c.standing.at("k8s/a-inf/serve"), Standing::kGuaranteed);
  EXPECT_EQ(c.standing.at("k8s/a-inf/picky"), Standing::kGuaranteed);
  EXPECT_EQ(c.standing.at("slurm/5"), Standing::kBorrowed);

  std::vector<TenantRow> rows = TenantRows(cfg.quotas, o);
  ASSERT_EQ(rows.size(), 2u);  // a, b (no work of no tenant)
  EXPECT_TRUE(rows[0].per_type);
  EXPECT_FALSE(rows[1].per_type);
  EXPECT_EQ(rows[0].guaranteed, 8);
  EXPECT_EQ(rows[0].pending, 4);
  ASSERT_EQ(rows[0].types.size(), 3u);
  EXPECT_EQ(rows[0].types[0], (TypeRow{.type = "", .in_use = 1, .borrowed = 1}));
  EXPECT_EQ(rows[0].types[1],
            (TypeRow{.type = "a100", .guaranteed = 4, .in_use = 6, .borrowed = 2, .pending = 2}));
  EXPECT_EQ(rows[0].types[2],
            (TypeRow{.type = "h100", .guaranteed = 4, .in_use = 4, .borrowed = 0, .pending = 2}));

  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/2")),
              HasSubstr("beyond the 4 a100 GPUs guaranteed: 4 GPUs of tenant a's a100 work rank "
                        "before it"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/6")),
              HasSubstr("within the 4 h100 GPUs guaranteed: 3 GPUs of tenant a's h100 work"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/5")),
              HasSubstr("tenant a's floors are per GPU type and name none for GPUs of a type not "
                        "known; it borrows idle GPUs and may be reclaimed"));
  EXPECT_THAT(WhyStanding(cfg.quotas, o, Find(o, "slurm/4")),
              HasSubstr("pending: would run borrowed (BorrowIdle): tenant a borrows idle h100 "
                        "GPUs beyond its 4 guaranteed"));
  // The pending a100 pod would pass the a100 floor: borrowed, and the planners are told why.
  EXPECT_EQ(BorrowingPendingPods(cfg.quotas, o),
            (std::map<std::string, std::string>{
                {"a-inf/wants",
                 "tenant a uses 6 of its 4 a100 GPUs guaranteed: this pod's 2 GPUs would be "
                 "borrowed"}}));
  // At submit: h100 is full, a100 is full; any type: judged on the type with the most room.
  SubmitAdvice h100 =
      AdviseSubmit(cfg.quotas, c, {.account = "team-a", .gpus = 1, .gpu_type = "h100"});
  EXPECT_EQ(h100.rule, Rule::kBorrowIdle);
  EXPECT_THAT(h100.message, HasSubstr("tenant a uses 4 of its 4 h100 GPUs guaranteed"));
  SubmitAdvice v100 = AdviseSubmit(cfg.quotas, c,
                                   {.account = "team-a",
                                    .gpus = 1,
                                    .gpu_type = "v100",
                                    .preemptible = false,
                                    .preemptible_why = "--no-requeue"});
  EXPECT_TRUE(v100.refuse);
  EXPECT_THAT(v100.message, HasSubstr("refused: tenant a uses 0 of its 0 v100 GPUs guaranteed"));
}

// Tenant a (per-type: 4 a100, 4 h100) waits with job 10; b runs within its floor in Slurm
// and borrows lent nodes with pods of every type.
class TypedReclaimsTest : public ::testing::Test {
 protected:
  std::vector<Reclaim> Plan(const std::string& job_type, int64_t gpus = 4) {
    std::vector<slurm::JobView> jobs = {RunningJob(2, "team-b", {"n2", "n1"}, 4, 1000)};
    slurm::JobView pending = RunningJob(10, "team-a", {}, gpus, 0);
    pending.state = slurm::JobState::kPending;
    pending.state_reason = "Resources";
    pending.gpu_type = job_type;
    jobs.push_back(pending);
    std::vector<inventory::GpuPod> pods = {Pod("b-inf", "on-a100", "k-a", 4, 100),
                                           Pod("b-inf", "on-h100", "k-h", 4, 100),
                                           Pod("b-inf", "on-unknown", "k-u", 4, 100)};
    const std::map<std::string, std::string, std::less<>> types = {
        {"n1", "a100"}, {"n2", "a100"}, {"k-a", "a100"}, {"k-h", "h100"}};
    Observation o = Observe(cfg_, jobs, pods, {"n1", "n2", "k-a", "k-h", "k-u"}, kNow, types);
    std::vector<LentNode> lent = {{.name = "k-a", .gpus = 4, .gpu_type = "a100"},
                                  {.name = "k-h", .gpus = 4, .gpu_type = "h100"},
                                  {.name = "k-u", .gpus = 4}};
    return PlanReclaims(cfg_.quotas, o, lent, ownership::ToUnix(kNow), {.min_run_time_s = 0});
  }
  config::Config cfg_ = Typed();
};

TEST_F(TypedReclaimsTest, AJobAskingATypeTakesBackOnlyANodeOfThatType) {
  std::vector<Reclaim> h100 = Plan("h100");
  ASSERT_EQ(h100.size(), 1u);
  EXPECT_EQ(h100[0].node, "k-h");
  EXPECT_EQ(h100[0].victims, std::vector<std::string>{"b-inf/on-h100"});
  EXPECT_THAT(h100[0].why, HasSubstr("tenant a uses 0 of its 4 h100 GPUs guaranteed and job 10 "
                                     "(4 h100 GPUs) waits for resources"));
  std::vector<Reclaim> a100 = Plan("a100");
  ASSERT_EQ(a100.size(), 1u);
  EXPECT_EQ(a100[0].node, "k-a");
  EXPECT_THAT(Plan("v100"), IsEmpty()) << "no node of the type, and no floor for it";
  EXPECT_THAT(Plan("h100", 5), IsEmpty()) << "beyond the h100 floor (and the nodes)";
}

TEST_F(TypedReclaimsTest, AJobAskingAnyTypeTakesANodeOfATypeWithRoomNeverOneOfUnknownType) {
  std::vector<Reclaim> any = Plan("");
  ASSERT_EQ(any.size(), 1u);
  EXPECT_NE(any[0].node, "k-u") << "a node of a type not known counts against no floor";
  // Both a100 and h100 have room; the victims tie (one pod of b, 4 GPUs, b over by the
  // same): the name decides.
  EXPECT_EQ(any[0].node, "k-a");
}

TEST_F(TypedReclaimsTest, APlainFloorTakesAnyNodeForAnyTypeButOnlyItsTypeForATypedJob) {
  // Swap the roles: b (a plain floor of 8) waits, a borrows on the lent nodes.
  auto cfg = config::ParseConfig(R"({
    "admission": {"preemptible_partitions": ["gpu"]},
    "quotas": {"tenants": [
      {"name": "a", "kubernetes_namespaces": ["a-inf"], "guaranteed": {"a100": 0}},
      {"name": "b", "slurm_accounts": ["team-b"], "guaranteed": 8}]}})");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  auto plan = [&](const std::string& type) {
    slurm::JobView pending = RunningJob(10, "team-b", {}, 4, 0);
    pending.state = slurm::JobState::kPending;
    pending.state_reason = "Resources";
    pending.gpu_type = type;
    Observation o = Observe(*cfg, {pending},
                            {Pod("a-inf", "x", "k-u", 4, 100), Pod("a-inf", "y", "k-h", 4, 100)},
                            {"k-h", "k-u"}, kNow, {{"k-h", "h100"}});
    return PlanReclaims(
        cfg->quotas, o,
        {{.name = "k-h", .gpus = 4, .gpu_type = "h100"}, {.name = "k-u", .gpus = 4}},
        ownership::ToUnix(kNow), {.min_run_time_s = 0});
  };
  std::vector<Reclaim> any = plan("");
  ASSERT_EQ(any.size(), 1u);
  EXPECT_THAT(any[0].why, HasSubstr("tenant b uses 0 of its 8 GPUs guaranteed"));
  std::vector<Reclaim> h100 = plan("h100");
  ASSERT_EQ(h100.size(), 1u);
  EXPECT_EQ(h100[0].node, "k-h");
  EXPECT_THAT(plan("a100"), IsEmpty());
}

}  // namespace
}  // namespace skb::quota

#include "src/ownership/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"

namespace skb::ownership {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Clock::TimePoint kNow = FromUnix(1'700'000'000);

slurm::JobView Job(uint32_t id, std::string admin_comment = "k8s-bridge:preemptible=true") {
  slurm::JobView j;
  j.job_id = id;
  j.state = slurm::JobState::kRunning;
  j.requeue = true;
  j.gpus_per_node = 8;
  j.admin_comment = std::move(admin_comment);
  return j;
}

TEST(UnixTime, RoundTrips) {
  EXPECT_EQ(ToUnix(FromUnix(1'700'000'123)), 1'700'000'123);
  EXPECT_EQ(ToUnix(FromUnix(5) + std::chrono::milliseconds(999)), 5);
}

// A signal sent at 100.9 s is stamped 100 (whole seconds): the grace must still be whole,
// so it runs from 101 and a 2 s grace ends at 103, not at 102 (1.1 s after the signal).
TEST(UnixTime, TheGraceRunsFromTheSecondAfterTheStamp) {
  const Clock::TimePoint sent = FromUnix(100) + std::chrono::milliseconds(900);
  const Clock::TimePoint stamp = FromUnix(ToUnix(sent));
  EXPECT_EQ(stamp, FromUnix(100));
  const Clock::TimePoint ends = GraceEnds(stamp, std::chrono::seconds(2));
  EXPECT_EQ(ends, FromUnix(103));
  EXPECT_GE(ends - sent, std::chrono::seconds(2));
  EXPECT_LE(ends - sent, std::chrono::seconds(3));
}

TEST(PreemptionRecord, RecordsKeepsTheLatestAndPreservesOtherText) {
  LendingConfig cfg;
  cfg.max_preemptions = 2;
  std::string c = RecordPreemption("k8s-bridge:preemptible=true", 100, "ml/infer-1", cfg);
  EXPECT_EQ(c, "k8s-bridge:preemptible=true k8s-bridge-preempted=100@ml/infer-1");
  c = RecordPreemption(c, 200, "ml/infer 2", cfg);
  c = RecordPreemption(c, 300, "kubernetes", cfg);
  c = RecordPreemption(c, 400, "kubernetes", cfg);
  EXPECT_EQ(c, "k8s-bridge:preemptible=true k8s-bridge-preempted=200,300,400@kubernetes");
  EXPECT_THAT(PreemptionTimes(c), ElementsAre(200, 300, 400));
  // Recording the same preemption again (a retried action) changes nothing.
  EXPECT_EQ(RecordPreemption(c, 400, "kubernetes", cfg), c);
  // Text around the token survives; the token is found only at a word start.
  std::string mid = RecordPreemption("note k8s-bridge-preempted=5@x tail", 6, "y", cfg);
  EXPECT_EQ(mid, "note k8s-bridge-preempted=5,6@y tail");
  EXPECT_TRUE(PreemptionTimes("xk8s-bridge-preempted=5").empty());
  EXPECT_EQ(RecordPreemption("", 7, "p", cfg), "k8s-bridge-preempted=7@p");
  // Garbage is ignored, not trusted.
  EXPECT_THAT(PreemptionTimes("k8s-bridge-preempted=1,x,-3,2@"), ElementsAre(1, 2));
}

TEST(PreemptionRecord, CountsWithinTheWindow) {
  LendingConfig cfg;
  cfg.preemption_window = hours(1);
  slurm::JobView j = Job(1);
  j.admin_comment = StrCat("k8s-bridge-preempted=", ToUnix(kNow - hours(2)), ",",
                           ToUnix(kNow - minutes(30)), ",", ToUnix(kNow - minutes(1)), "@x");
  EXPECT_EQ(PreemptionsInWindow(j, cfg, kNow), 2);
}

TEST(GraceFor, JobSignalThenDefaultCappedByMax) {
  LendingConfig cfg;
  cfg.default_grace = seconds(60);
  cfg.max_grace = minutes(5);
  slurm::JobView j = Job(1);
  EXPECT_EQ(GraceFor(j, cfg), seconds(60));
  j.signal = slurm::SignalSpec{12, 120, false};
  EXPECT_EQ(GraceFor(j, cfg), seconds(120));
  j.signal->seconds = 3600;
  EXPECT_EQ(GraceFor(j, cfg), minutes(5));
  j.signal->seconds = 0;
  EXPECT_EQ(GraceFor(j, cfg), seconds(0));
}

// The admission note holds while the job stays where it was admitted; a job an admin moves
// afterwards (scontrol update partition=/qos=) is judged where it is now, saying why.
// What a researcher reads at submit: the signal, its lead time, and what follows.
TEST(DescribePreemption, NamesTheSignalItsLeadTimeAndWhatFollows) {
  JobPolicy p;
  p.signal = 10;
  p.grace = std::chrono::seconds(60);
  EXPECT_EQ(DescribePreemption(p),
            "it gets SIGUSR1 60s before it is requeued (it runs again later)");
  p.signal = 15;
  p.grace = std::chrono::minutes(5);
  p.scope = plan::SignalScope::kBatchOnly;
  p.mode = plan::JobPreemptMode::kCancel;
  EXPECT_EQ(DescribePreemption(p),
            "it gets SIGTERM (its batch shell only) 300s before it is cancelled");
  p.signal = 42;
  p.scope = plan::SignalScope::kSteps;
  p.mode = plan::JobPreemptMode::kRequeueHold;
  EXPECT_EQ(DescribePreemption(p),
            "it gets signal 42 (its steps, not the batch shell) 300s before it is requeued and "
            "held (until released)");
}

TEST(PolicyFor, AJobMovedSinceAdmissionIsJudgedWhereItIsNow) {
  config::Config cfg;
  cfg.admission.preemptible_qos = {"scavenger"};
  cfg.admission.preemptible_partitions = {"gpu"};
  auto job = [](std::string note, std::string partition, std::string qos) {
    slurm::JobView j = Job(7, std::move(note));
    j.partition = std::move(partition);
    j.qos = std::move(qos);
    return j;
  };
  // Where it was admitted: the note decides (even against today's lists: the promise).
  JobPolicy p =
      PolicyFor(job("k8s-bridge:preemptible=true,partitions=gpu,qos=", "gpu", "normal"), cfg, kNow);
  EXPECT_TRUE(p.preemptible);
  EXPECT_EQ(p.why, "admitted as preemptible in partition gpu");
  p = PolicyFor(job("k8s-bridge:preemptible=false,partitions=gpu+urgent,qos=", "gpu", "normal"),
                cfg, kNow);
  EXPECT_FALSE(p.preemptible) << "started in one of the partitions it asked for";
  // Admitted preemptible in gpu, moved to urgent before it started: protected now.
  p = PolicyFor(job("k8s-bridge:preemptible=true,partitions=gpu,qos=", "urgent", "normal"), cfg,
                kNow);
  EXPECT_FALSE(p.preemptible);
  EXPECT_EQ(p.why,
            "moved to partition urgent after admission in gpu: in no preemptible partition "
            "or QOS");
  // Admitted protected in urgent, moved to the scavenger QOS: preemptible now.
  p = PolicyFor(
      job("k8s-bridge:preemptible=false,partitions=urgent,qos=high", "urgent", "scavenger"), cfg,
      kNow);
  EXPECT_TRUE(p.preemptible);
  EXPECT_EQ(p.why,
            "moved to QOS scavenger after admission in QOS high: QOS scavenger is "
            "preemptible");
  // Admitted with the default QOS: the QOS it runs under is that default unless preemptible.
  p = PolicyFor(job("k8s-bridge:preemptible=false,partitions=urgent,qos=", "urgent", "normal"), cfg,
                kNow);
  EXPECT_FALSE(p.preemptible);
  EXPECT_EQ(p.why, "admitted as not preemptible in partition urgent");
  p = PolicyFor(job("k8s-bridge:preemptible=false,partitions=urgent,qos=", "urgent", "scavenger"),
                cfg, kNow);
  EXPECT_TRUE(p.preemptible);
  EXPECT_THAT(p.why, HasSubstr("in QOS scavenger, not the one it was admitted with"));
  // A note from before the record existed is taken as it is, wherever the job is.
  p = PolicyFor(job("k8s-bridge:preemptible=true", "urgent", "normal"), cfg, kNow);
  EXPECT_TRUE(p.preemptible);
}

TEST(PolicyFor, PreemptibilitySignalAndMode) {
  config::Config cfg;
  cfg.admission.preemptible_qos = {"scavenger"};
  cfg.admission.preemptible_partitions = {"spot"};
  cfg.lending.partition_modes["spot"] = plan::JobPreemptMode::kCancel;
  cfg.lending.qos_modes["scavenger"] = plan::JobPreemptMode::kRequeueHold;

  JobPolicy p = PolicyFor(Job(1), cfg, kNow);
  EXPECT_TRUE(p.preemptible) << p.why;
  EXPECT_EQ(p.signal, 10);
  EXPECT_EQ(p.scope, plan::SignalScope::kFull);
  EXPECT_EQ(p.mode, plan::JobPreemptMode::kRequeue);

  EXPECT_FALSE(PolicyFor(Job(1, "k8s-bridge:preemptible=false"), cfg, kNow).preemptible);

  // Not admitted by the bridge: the admission lists decide, and unknown means protected.
  slurm::JobView j = Job(2, "");
  EXPECT_FALSE(PolicyFor(j, cfg, kNow).preemptible);
  EXPECT_THAT(PolicyFor(j, cfg, kNow).why, HasSubstr("not admitted"));
  j.qos = "scavenger";
  p = PolicyFor(j, cfg, kNow);
  EXPECT_TRUE(p.preemptible);
  EXPECT_EQ(p.mode, plan::JobPreemptMode::kRequeueHold);  // QOS wins over partition
  j.qos.clear();
  j.partition = "spot";
  p = PolicyFor(j, cfg, kNow);
  EXPECT_TRUE(p.preemptible);
  EXPECT_EQ(p.mode, plan::JobPreemptMode::kCancel);

  // Its own --signal, batch shell only.
  j = Job(3, "k8s-bridge:preemptible=true,signal=12@30:B");
  j.signal = slurm::SignalSpec{12, 30, true};
  p = PolicyFor(j, cfg, kNow);
  EXPECT_EQ(p.signal, 12);
  EXPECT_EQ(p.scope, plan::SignalScope::kBatchOnly);
  EXPECT_EQ(p.grace, seconds(30));

  // --no-requeue cannot be requeued: protected, unless its mode cancels.
  j = Job(4);
  j.requeue = false;
  EXPECT_FALSE(PolicyFor(j, cfg, kNow).preemptible);
  EXPECT_THAT(PolicyFor(j, cfg, kNow).why, HasSubstr("--no-requeue"));
  j.partition = "spot";
  EXPECT_TRUE(PolicyFor(j, cfg, kNow).preemptible);

  // Neither can an interactive job (srun/salloc): Slurm requeues batch jobs only.
  j = Job(6);
  j.batch = false;
  EXPECT_FALSE(PolicyFor(j, cfg, kNow).preemptible);
  EXPECT_THAT(PolicyFor(j, cfg, kNow).why, HasSubstr("interactive"));
  j.partition = "spot";
  EXPECT_TRUE(PolicyFor(j, cfg, kNow).preemptible) << "cancelling it is what its mode says";

  // Anti-thrash: more than max_preemptions in the window.
  cfg.lending.max_preemptions = 2;
  j = Job(5);
  j.admin_comment += StrCat(" k8s-bridge-preempted=", ToUnix(kNow - minutes(3)), ",",
                            ToUnix(kNow - minutes(2)), "@x");
  EXPECT_TRUE(PolicyFor(j, cfg, kNow).preemptible);
  j.admin_comment = RecordPreemption(j.admin_comment, ToUnix(kNow - minutes(1)), "y", cfg.lending);
  p = PolicyFor(j, cfg, kNow);
  EXPECT_FALSE(p.preemptible);
  EXPECT_THAT(p.why, HasSubstr("anti-thrash"));
  // ... and free again once the window has passed.
  EXPECT_TRUE(PolicyFor(j, cfg, kNow + cfg.lending.preemption_window).preemptible);
}

TEST(ClassFor, IdlePreemptibleProtected) {
  config::Config cfg;
  std::string why;
  EXPECT_EQ(ClassFor({}, cfg, kNow, &why), ReservationClass::kIdle);
  EXPECT_THAT(why, HasSubstr("no Slurm job"));
  EXPECT_EQ(ClassFor({Job(1), Job(2)}, cfg, kNow), ReservationClass::kPreemptible);
  EXPECT_EQ(ClassFor({Job(1), Job(2, "k8s-bridge:preemptible=false")}, cfg, kNow, &why),
            ReservationClass::kProtected);
  EXPECT_THAT(why, HasSubstr("job 2"));
  slurm::JobView done = Job(3, "");
  done.state = slurm::JobState::kComplete;  // no longer holds the node
  EXPECT_EQ(ClassFor({done}, cfg, kNow), ReservationClass::kIdle);
  slurm::JobView completing = Job(4);
  completing.completing = true;
  EXPECT_EQ(ClassFor({completing}, cfg, kNow), ReservationClass::kPreemptible);
}

TEST(ClassNames, MapBothWays) {
  LendingConfig cfg;
  EXPECT_EQ(ClassByPriorityClassName("slurm-protected", cfg), ReservationClass::kProtected);
  EXPECT_EQ(ClassByPriorityClassName("slurm-idle", cfg), ReservationClass::kIdle);
  EXPECT_FALSE(ClassByPriorityClassName("other", cfg).has_value());
  EXPECT_EQ(ClassByName("preemptible"), ReservationClass::kPreemptible);
  EXPECT_FALSE(ClassByName("x").has_value());
  EXPECT_EQ(ClassRef(ReservationClass::kPreemptible, cfg).name, "slurm-preemptible");
}

VictimCandidate Node(std::string name, int64_t gpus, int32_t prio, int start_min_ago,
                     std::vector<JobCost> jobs = {}) {
  return {std::move(name), gpus, prio, kNow - minutes(start_min_ago), std::move(jobs)};
}

TEST(PickVictims, LowestPriorityThenKubeSchedulerTieBreak) {
  std::vector<VictimCandidate> nodes = {
      Node("busy", 8, 2000, 50, {{8, kNow - hours(5)}}),
      Node("idle-old", 8, 1000, 60),
      Node("idle-new", 8, 1000, 5),
      Node("protected", 8, 1'000'000'000, 1),
      Node("small", 4, 1000, 1),
  };
  // One 8-GPU pod at inference priority: the newest idle node (kube-scheduler picks the
  // latest-started victim among equals); the 4-GPU node does not fit.
  EXPECT_THAT(PickVictims(nodes, {8, 1, 100'000}, kNow), ElementsAre(2));
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow), ElementsAre(2, 1, 0));
  // Never the protected node, however large the demand.
  EXPECT_THAT(PickVictims(nodes, {8, 10, 100'000}, kNow), ElementsAre(2, 1, 0));
  // A demand below the preemptible class takes idle nodes only.
  EXPECT_THAT(PickVictims(nodes, {1, 10, 1500}, kNow), ElementsAre(4, 2, 1));
  EXPECT_TRUE(PickVictims(nodes, {16, 1, 100'000}, kNow).empty());
  EXPECT_TRUE(PickVictims(nodes, {8, 0, 100'000}, kNow).empty());
}

TEST(PickVictims, LeastWorkLostPrefersSmallAndFreshNodes) {
  std::vector<VictimCandidate> nodes = {
      Node("long", 8, 2000, 1, {{8, kNow - hours(10)}}),
      Node("short", 8, 2000, 300, {{8, kNow - minutes(10)}}),
      Node("big", 16, 2000, 1, {{1, kNow - minutes(1)}}),
  };
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow, VictimOrder::kLeastWorkLost),
              ElementsAre(1, 0, 2));
  EXPECT_THAT(PickVictims(nodes, {8, 3, 100'000}, kNow, VictimOrder::kKubeScheduler),
              ElementsAre(2, 0, 1));
  EXPECT_DOUBLE_EQ(WorkLost(nodes[1], kNow), 8 * 600.0);
}

TEST(ShouldReturn, CooldownMinLendHealthAndPods) {
  LendingConfig cfg;
  cfg.cooldown = minutes(2);
  cfg.min_lend_time = minutes(5);
  const Clock::TimePoint lent = kNow - minutes(10);
  EXPECT_TRUE(ShouldReturn(lent, kNow - minutes(3), false, true, cfg, kNow).now);
  ReturnDecision d = ShouldReturn(lent, kNow - minutes(1), false, true, cfg, kNow);
  EXPECT_FALSE(d.now);
  EXPECT_EQ(d.at, kNow + minutes(1));
  EXPECT_THAT(d.why, HasSubstr("cool-down"));
  d = ShouldReturn(kNow - minutes(4), kNow - minutes(3), false, true, cfg, kNow);
  EXPECT_EQ(d.at, kNow + minutes(1));
  EXPECT_THAT(d.why, HasSubstr("minimum lend time"));
  EXPECT_FALSE(ShouldReturn(lent, kNow - minutes(3), true, true, cfg, kNow).now);
  d = ShouldReturn(lent, kNow - minutes(3), false, false, cfg, kNow);
  EXPECT_FALSE(d.now);
  EXPECT_FALSE(d.at.has_value());
  EXPECT_THAT(d.why, HasSubstr("unhealthy"));
  EXPECT_FALSE(ShouldReturn(lent, std::nullopt, false, true, cfg, kNow).now);
}

// A heterogeneous job is preempted whole (by its leader's id): preemptible only if every
// component is, with the longest grace of any, the leader's signal; and its cost is every
// component's GPUs on every node.
TEST(HeterogeneousJob, IsJudgedAsAWhole) {
  config::Config cfg;
  slurm::JobView leader = Job(11), other = Job(12);
  leader.het_job_id = other.het_job_id = 11;
  other.het_job_offset = 1;
  leader.nodes = {"node1"};
  other.nodes = {"node2", "node3"};
  other.gpu_indices = {{"node2", {0, 1}}, {"node3", {4}}};
  other.signal = slurm::SignalSpec{12, 300, false};
  const std::vector<slurm::JobView> all = {other, leader, Job(13)};

  const std::vector<const slurm::JobView*> whole = WholeJob(other, all);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0]->job_id, 12u) << "the job asked about first";
  EXPECT_EQ(whole[1]->job_id, 11u);
  EXPECT_EQ(WholeJob(Job(13), all).size(), 1u);
  EXPECT_EQ(WholeJobId(other), 11u);
  EXPECT_EQ(WholeJobGpus(whole), 8 + 3);  // leader: 8 per node on 1 node; other: 3 indices
  EXPECT_EQ(DescribeWhole(whole),
            "heterogeneous job 11 (components 11 on node1, 12 on node2,node3)");
  EXPECT_EQ(DescribeWhole(WholeJob(Job(13), all)), "");

  JobPolicy p = PolicyForWhole(whole, cfg, kNow);
  EXPECT_TRUE(p.preemptible) << p.why;
  EXPECT_EQ(p.grace, seconds(300)) << "the longest grace of any component";
  EXPECT_EQ(p.signal, cfg.lending.checkpoint_signal) << "the leader's: one call signals all";

  // One component protected: the whole job is, whichever component is asked about.
  std::vector<slurm::JobView> guarded = all;
  guarded[0].admin_comment = "k8s-bridge:preemptible=false";
  for (const slurm::JobView& j : {guarded[0], guarded[1]}) {
    JobPolicy g = PolicyForWhole(WholeJob(j, guarded), cfg, kNow);
    EXPECT_FALSE(g.preemptible);
    EXPECT_THAT(g.why, HasSubstr("component 12 of heterogeneous job 11"));
  }
  // And so is the reservation class of the leader's node, which sees only the leader.
  std::string why;
  EXPECT_EQ(ClassFor({guarded[1]}, cfg, kNow, &why, guarded), ReservationClass::kProtected);
  EXPECT_THAT(why, HasSubstr("component 12"));
  EXPECT_EQ(ClassFor({guarded[1]}, cfg, kNow, &why), ReservationClass::kPreemptible)
      << "without the other components only the leader is seen";
}

}  // namespace
}  // namespace skb::ownership

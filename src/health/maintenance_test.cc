// SPDX-License-Identifier: Apache-2.0
// The maintenance cycle's planner (src/health/maintenance.h) through PlanNodeHealth, its
// entry point, with the executor and Slurm played by the node model
// (src/plan/testing/node_model.h) and the reboot and the check job by the test.
#include "src/health/maintenance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/time_codec.h"
#include "src/plan/testing/node_model.h"

namespace skb::health {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;
using inventory::NodeCondition;
using plan::Action;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const Clock::TimePoint kStart = Clock::TimePoint{} + hours(24 * 365 * 50);

class MaintenanceTest : public ::testing::Test {
 protected:
  MaintenanceTest() {
    cfg_.check_command = "/usr/sbin/nhc";
    n_.name = "node3";
    inventory::K8sNode k;
    k.name = "node3";
    k.conditions = {{"Ready", "True", "KubeletReady", "", kStart - hours(1)}};
    k.gpu_capacity = k.gpu_allocatable = 8;
    n_.k8s = k;
    slurm::NodeView s;
    s.name = "node3";
    s.base_state = slurm::NodeBaseState::kIdle;
    s.gres = "gpu:h100:8";
    s.gpus = {{"h100", 8}};
    s.boot_time = ownership::ToUnix(kStart - hours(24));
    n_.slurm = s;
  }

  void Request(std::string status = "True", std::string message = "firmware 1.2") {
    SetCond({std::string(cfg_.reboot_condition), status, "AdminRequest", message, now_});
  }

  void SetCond(NodeCondition c) {
    for (auto& cur : n_.k8s->conditions) {
      if (cur.type == c.type) {
        cur = std::move(c);
        return;
      }
    }
    n_.k8s->conditions.push_back(std::move(c));
  }

  const NodeCondition* Cond(std::string_view type) const { return n_.k8s->FindCondition(type); }
  std::string Phase() const {
    const NodeCondition* c = Cond(kMaintenanceCondition);
    return c == nullptr ? "" : StrCat(c->status, "/", c->reason);
  }

  // One pass: plans, applies every action through the model, returns the maintenance
  // actions' kinds (the published Slurm conditions left out).
  std::vector<std::string> Pass() {
    plan_ = PlanNodeHealth(n_, cfg_, now_);
    std::vector<std::string> kinds;
    for (const Action& a : plan_.actions) {
      config::Config c;
      c.health = cfg_;
      Status st = plan::testing::ApplyAction(a, &n_, c, now_, &log_);
      EXPECT_TRUE(st.ok()) << st << " " << plan::ToString(a);
      if (a.cause != plan::Cause::kMaintenance) continue;
      kinds.push_back(std::string(a.Kind()));
      if (a.Is<plan::SetNodeCondition>()) {
        kinds.back() = StrCat("Set ", a.As<plan::SetNodeCondition>().condition.type, "=",
                              a.As<plan::SetNodeCondition>().condition.status, "/",
                              a.As<plan::SetNodeCondition>().condition.reason);
      }
    }
    return kinds;
  }

  std::string Dump() const {
    std::string s;
    for (const auto& a : plan_.actions) StrAppend(&s, "\n  ", plan::ToString(a));
    for (const auto& e : plan_.explanation) StrAppend(&s, "\n  # ", e);
    return s;
  }

  void Advance(Clock::Duration d) { now_ += d; }

  // Slurm carries the reboot out: the node registers again with a new boot time, DOWN
  // (nextstate=DOWN) with Slurm's words appended to the reason.
  void Reboot() {
    ASSERT_TRUE(n_.slurm->reboot_requested) << "no reboot was asked for";
    Advance(seconds(30));
    n_.slurm->reboot_requested = false;
    n_.slurm->boot_time = ownership::ToUnix(now_) - 5;
    n_.slurm->base_state = slurm::NodeBaseState::kDown;
    n_.slurm->drain = false;
    n_.slurm->reason += " : reboot issued : reboot complete";
    Advance(seconds(1));
  }

  slurm::JobView& RunCheckJob(uint32_t id = 900) {
    slurm::JobView j;
    j.job_id = id;
    j.name = kMaintenanceCheckJobName;
    j.state = slurm::JobState::kRunning;
    j.nodes = {"node3"};
    j.submit_time = ownership::ToUnix(now_);
    n_.jobs.push_back(j);
    return n_.jobs.back();
  }

  void EndCheckJob(slurm::JobState state, int exit_code) {
    ASSERT_FALSE(n_.jobs.empty());
    slurm::JobView j = n_.jobs.back();
    n_.jobs.pop_back();
    j.state = state;
    j.exit_code = exit_code;
    n_.ended_jobs.push_back(j);
  }

  // Drives a fresh request to the point where the check job runs.
  void ToChecking() {
    Request();
    Pass();
    Pass();
    ASSERT_EQ(Phase(), "True/Rebooting") << Dump();
    Reboot();
    Pass();
    ASSERT_EQ(Phase(), "True/Checking") << Dump();
    RunCheckJob();
  }

  HealthConfig cfg_;
  ManagedNode n_;
  Clock::TimePoint now_ = kStart;
  plan::NodePlan plan_;
  plan::testing::Log log_;
};

slurm::JobView Job(uint32_t id, bool requeue = true) {
  slurm::JobView j;
  j.job_id = id;
  j.state = slurm::JobState::kRunning;
  j.requeue = requeue;
  j.nodes = {"node3"};
  j.gpus_per_node = 4;
  return j;
}

TEST_F(MaintenanceTest, AFullCycleDrainsRebootsChecksAndGivesTheNodeBackToBoth) {
  n_.jobs = {Job(7)};
  GpuPod pod;
  pod.namespace_name = "ml";
  pod.name = "infer-0";
  pod.uid = "u1";
  pod.node_name = "node3";
  pod.gpus = 2;
  pod.phase = "Running";
  n_.pods = {pod};
  Request();

  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Draining", "DrainSlurmNode",
                                  "SetNodeTaint", "EvictPod"))
      << Dump();
  EXPECT_THAT(n_.slurm->reason, HasSubstr("maintenance: RebootRequested=True: firmware 1.2"));
  EXPECT_EQ(log_.evictions["ml/infer-0"], 1);
  // Nothing more while the job has its deadline and the pod terminates.
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();
  ASSERT_TRUE(plan_.recheck_at);
  EXPECT_EQ(*plan_.recheck_at, kStart + cfg_.maintenance_deadline);
  n_.pods.clear();  // the eviction's grace ended

  Advance(cfg_.maintenance_deadline);
  EXPECT_THAT(Pass(), ElementsAre("RequeueSlurmJobs")) << Dump();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"))
      << Dump();
  EXPECT_EQ(log_.reboots, 1);
  EXPECT_THAT(Pass(), IsEmpty()) << "the reboot is under way" << Dump();

  Reboot();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Checking", "CreateSlurmReservation",
                                  "ResumeSlurmNode", "SubmitCheckJob"))
      << Dump();
  EXPECT_EQ(n_.slurm->base_state, slurm::NodeBaseState::kIdle);
  EXPECT_THAT(log_.reservations, ElementsAre("skb-maint-node3"));
  // The check job is pending (the inventory shows jobs that hold the node): asked again,
  // which the client answers with the one already submitted.
  EXPECT_THAT(Pass(), ElementsAre("CreateSlurmReservation", "SubmitCheckJob")) << Dump();
  RunCheckJob();
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();

  Advance(minutes(1));
  EndCheckJob(slurm::JobState::kComplete, 0);
  EXPECT_THAT(Pass(), ElementsAre("DeleteSlurmReservation", "RemoveNodeTaint",
                                  "Set RebootRequested=False/MaintenanceCompleted",
                                  "Set SlurmMaintenance=False/Completed"))
      << Dump();
  EXPECT_THAT(log_.reservations, IsEmpty());
  EXPECT_THAT(n_.k8s->taints, IsEmpty());
  EXPECT_FALSE(n_.slurm->drain);
  EXPECT_THAT(Cond(kMaintenanceCondition)->message, HasSubstr("check job 900 ended COMPLETED"));
  // The cycle is over: the next pass plans nothing of it.
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();
  EXPECT_EQ(log_.reboots, 1);
  EXPECT_EQ(log_.check_jobs, 2);
}

// A pod holding GPUs through ResourceClaims alone (a node shared GPU by GPU) is evicted like
// a GPU pod, and the reboot waits until it is gone.
TEST_F(MaintenanceTest, APodUsingClaimsIsEvictedAndTheRebootWaitsForIt) {
  GpuPod pod;
  pod.namespace_name = "ml";
  pod.name = "dra-0";
  pod.uid = "u2";
  pod.node_name = "node3";
  pod.phase = "Running";
  pod.claims = {"ml/dra-0-gpu-x7"};
  n_.claim_pods = {pod};
  Request();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Draining", "DrainSlurmNode",
                                  "SetNodeTaint", "EvictPod"))
      << Dump();
  EXPECT_EQ(log_.evictions["ml/dra-0"], 1);
  Advance(cfg_.maintenance_deadline);
  EXPECT_THAT(Pass(), IsEmpty()) << "the pod still terminates" << Dump();
  n_.claim_pods.clear();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"))
      << Dump();
}

TEST_F(MaintenanceTest, EveryPhaseResumesFromItsRecordAlone) {
  // What a restarted bridge has: the condition and Slurm's state, nothing in memory. Each
  // phase, planned twice on the same input, asks for the same actions (idempotent), and a
  // bridge that restarts mid-reboot neither asks for a second reboot nor skips the check.
  Request();
  Pass();
  const std::vector<std::string> again = Pass();
  EXPECT_THAT(again, ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"));
  // The executor's reboot failed (slurmctld down): the next pass asks again.
  n_.slurm->reboot_requested = false;
  --log_.reboots;
  EXPECT_THAT(Pass(), ElementsAre("RebootSlurmNode")) << Dump();
  Reboot();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Checking", "CreateSlurmReservation",
                                  "ResumeSlurmNode", "SubmitCheckJob"));
  EXPECT_EQ(log_.reboots, 1);
}

TEST_F(MaintenanceTest, AFailedCheckKeepsTheNodeOutUntilARetryOrTheRequestClears) {
  ToChecking();
  EndCheckJob(slurm::JobState::kFailed, 1);
  EXPECT_THAT(Pass(), ElementsAre("DeleteSlurmReservation", "DrainSlurmNode",
                                  "Set SlurmMaintenance=True/CheckFailed"))
      << Dump();
  EXPECT_TRUE(n_.slurm->drain);
  EXPECT_THAT(n_.slurm->reason, HasSubstr("maintenance CheckFailed: check job 900 ended FAILED"));
  EXPECT_THAT(Cond(kMaintenanceCondition)->message, HasSubstr("bridgectl maintenance retry"));
  ASSERT_EQ(n_.k8s->taints.size(), 1u);
  EXPECT_THAT(Pass(), IsEmpty()) << "it stays out" << Dump();

  // The retry (bridgectl maintenance retry): the cycle starts again at Draining.
  Advance(minutes(5));
  SetCond({std::string(kMaintenanceCondition), "True", std::string(kPhaseDraining), "retry", now_});
  // Still drained and empty: straight on to the reboot.
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"))
      << Dump();
  EXPECT_EQ(log_.reboots, 2);
}

TEST_F(MaintenanceTest, ClearingTheRequestAfterAFailureGivesTheNodeBackAsItIs) {
  ToChecking();
  EndCheckJob(slurm::JobState::kFailed, 1);
  Pass();
  Request("False");
  EXPECT_THAT(Pass(), ElementsAre("DeleteSlurmReservation", "ResumeSlurmNode", "RemoveNodeTaint",
                                  "Set SlurmMaintenance=False/Cancelled"))
      << Dump();
  EXPECT_FALSE(n_.slurm->drain);
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();
}

TEST_F(MaintenanceTest, ARequestWithdrawnWhileDrainingUndoesTheDrainAndTheTaint) {
  n_.jobs = {Job(7)};
  Request();
  Pass();
  ASSERT_TRUE(n_.slurm->drain);
  Advance(minutes(3));
  Request("False");
  EXPECT_THAT(Pass(), ElementsAre("DeleteSlurmReservation", "ResumeSlurmNode", "RemoveNodeTaint",
                                  "Set SlurmMaintenance=False/Cancelled"))
      << Dump();
  EXPECT_FALSE(n_.slurm->drain);
  EXPECT_THAT(n_.k8s->taints, IsEmpty());
  EXPECT_THAT(n_.jobs, ::testing::SizeIs(1)) << "the job kept running";
  EXPECT_EQ(log_.reboots, 0);
}

TEST_F(MaintenanceTest, AJobThatCannotBeRequeuedTimesTheDrainOut) {
  n_.jobs = {Job(7, /*requeue=*/false)};
  Request();
  Pass();
  Advance(cfg_.maintenance_deadline);
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();
  EXPECT_THAT(plan_.explanation, ::testing::Contains(HasSubstr("job 7 cannot be requeued")));
  Advance(cfg_.drain_timeout - cfg_.maintenance_deadline);
  EXPECT_THAT(Pass(), ElementsAre("DrainSlurmNode", "Set SlurmMaintenance=True/DrainTimedOut"))
      << Dump();
  EXPECT_THAT(Cond(kMaintenanceCondition)->message, HasSubstr("1 Slurm job(s) and 0 pod(s)"));
  EXPECT_EQ(log_.reboots, 0);
}

TEST_F(MaintenanceTest, ANodeThatDoesNotComeBackTimesTheRebootOut) {
  Request();
  Pass();
  Pass();
  Advance(cfg_.reboot_timeout);
  EXPECT_THAT(Pass(), ElementsAre("DrainSlurmNode", "Set SlurmMaintenance=True/RebootTimedOut"))
      << Dump();
  EXPECT_TRUE(n_.slurm->drain);
}

// CI caught it on the testbed: a node that registered after its reboot is "not responding"
// for about a second, its reboot flags already cleared. Asked again then, Slurm would reboot
// it a second time.
TEST_F(MaintenanceTest, ANodeBackButNotYetRespondingIsNotRebootedAgain) {
  Request();
  Pass();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"))
      << Dump();
  Reboot();
  n_.slurm->not_responding = true;
  EXPECT_THAT(Pass(), IsEmpty()) << "booted since the phase began: waits" << Dump();
  EXPECT_EQ(log_.reboots, 1);
  n_.slurm->not_responding = false;
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Checking", "CreateSlurmReservation",
                                  "ResumeSlurmNode", "SubmitCheckJob"))
      << Dump();
  EXPECT_EQ(log_.reboots, 1);
}

// A restarted bridge's first pass in Checking submitted the check job before the phase's
// record was written: the record's time is later than the job's submission. That job is
// still this cycle's (submitted after the reboot): no second one beside it, and its result
// ends the cycle. A check job from before the reboot is not.
TEST_F(MaintenanceTest, ACheckJobSubmittedBeforeThePhasesRecordIsStillThisCyclesOnly) {
  ToChecking();
  const int64_t boot = n_.slurm->boot_time;
  n_.jobs.back().submit_time = boot + 1;
  SetCond({std::string(kMaintenanceCondition), "True", "Checking", "", now_ + seconds(3)});
  Advance(seconds(5));
  EXPECT_THAT(Pass(), ::testing::Not(::testing::Contains("SubmitCheckJob"))) << Dump();
  EndCheckJob(slurm::JobState::kComplete, 0);
  EXPECT_THAT(Pass(), ::testing::Contains("Set SlurmMaintenance=False/Completed")) << Dump();
  // The submission itself carries the boot: an ended job since then is found at the source.
  ToChecking();
  n_.jobs.back().submit_time = n_.slurm->boot_time - 60;  // an earlier cycle's
  Advance(seconds(5));
  const std::vector<std::string> kinds = Pass();
  EXPECT_THAT(kinds, ::testing::Contains("SubmitCheckJob")) << Dump();
  for (const Action& a : plan_.actions) {
    if (a.Is<plan::SubmitCheckJob>()) {
      EXPECT_EQ(a.As<plan::SubmitCheckJob>().submitted_since, n_.slurm->boot_time);
    }
  }
}

TEST_F(MaintenanceTest, ACheckWithoutAResultInItsTimeFails) {
  ToChecking();
  Advance(cfg_.check_timeout + minutes(2));
  EXPECT_THAT(Pass(), ElementsAre("DeleteSlurmReservation", "DrainSlurmNode",
                                  "Set SlurmMaintenance=True/CheckFailed"))
      << Dump();
  EXPECT_THAT(Cond(kMaintenanceCondition)->message, HasSubstr("job 900 still RUNNING"));
}

TEST_F(MaintenanceTest, TheSiteRebootsWhenItOwnsReboots) {
  cfg_.reboot_by = HealthConfig::RebootBy::kSite;
  Request();
  Pass();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting")) << Dump();
  EXPECT_THAT(Pass(), IsEmpty());
  // The site's remediation power-cycles the node: slurmd registers with a new boot time
  // (the bridge's drain stays: no nextstate was asked for).
  Advance(minutes(4));
  n_.slurm->boot_time = ownership::ToUnix(now_);
  Advance(seconds(5));
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Checking", "CreateSlurmReservation",
                                  "ResumeSlurmNode", "SubmitCheckJob"))
      << Dump();
  EXPECT_EQ(log_.reboots, 0);
}

TEST_F(MaintenanceTest, WithoutACheckTheNodeIsGivenBackOnceItRebooted) {
  cfg_.check_command.clear();
  Request();
  Pass();
  Pass();
  Reboot();
  EXPECT_THAT(Pass(), ElementsAre("ResumeSlurmNode", "RemoveNodeTaint",
                                  "Set RebootRequested=False/MaintenanceCompleted",
                                  "Set SlurmMaintenance=False/Completed"))
      << Dump();
  EXPECT_EQ(n_.slurm->base_state, slurm::NodeBaseState::kIdle);
  EXPECT_THAT(log_.reservations, IsEmpty());
}

TEST_F(MaintenanceTest, AnotherSignalAtTheEndKeepsTheNodeDrainedForIt) {
  ToChecking();
  SetCond({"GPUHealthy", "False", "XID", "XID 79 on GPU 2", now_});
  EndCheckJob(slurm::JobState::kComplete, 0);
  std::vector<std::string> kinds = Pass();
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds[1], "DrainSlurmNode") << Dump();
  EXPECT_THAT(n_.slurm->reason, HasSubstr("GPUHealthy=False: XID 79 on GPU 2"));
  EXPECT_EQ(Phase(), "False/Completed");
  // The health planner has the node again, and keeps the drain while the signal fires.
  EXPECT_THAT(Pass(), IsEmpty()) << Dump();
  EXPECT_TRUE(n_.slurm->drain);
}

TEST_F(MaintenanceTest, AnAdminsDrainIsKeptAndStillCountsAsDrained) {
  n_.slurm->drain = true;
  n_.slurm->reason = "bad DIMM";
  n_.slurm->reason_uid = 1000;
  Request();
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Draining", "SetNodeTaint")) << Dump();
  EXPECT_EQ(n_.slurm->reason, "bad DIMM");
  EXPECT_THAT(Pass(), ElementsAre("Set SlurmMaintenance=True/Rebooting", "RebootSlurmNode"));
}

TEST_F(MaintenanceTest, AnUnknownPhaseStartsTheCycleAgain) {
  SetCond({std::string(kMaintenanceCondition), "True", "Upgrading", "", now_});
  EXPECT_THAT(Pass(),
              ElementsAre("Set SlurmMaintenance=True/Draining", "DrainSlurmNode", "SetNodeTaint"))
      << Dump();
}

}  // namespace
}  // namespace skb::health

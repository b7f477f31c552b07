// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/job_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>

#include "src/base/strings.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/test_support.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using test_support::kNow;
using test_support::PolicyJob;
using ::testing::HasSubstr;

TEST(GraceFor, JobSignalThenDefaultCappedByMax) {
  LendingConfig cfg;
  cfg.default_grace = seconds(60);
  cfg.max_grace = minutes(5);
  slurm::JobView j = PolicyJob(1);
  EXPECT_EQ(GraceFor(j, cfg), seconds(60));
  j.signal = slurm::SignalSpec{12, 120, false};
  EXPECT_EQ(GraceFor(j, cfg), seconds(120));
  j.signal->seconds = 3600;
  EXPECT_EQ(GraceFor(j, cfg), minutes(5));
  j.signal->seconds = 0;
  EXPECT_EQ(GraceFor(j, cfg), seconds(0));
}

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

// The admission note holds while the job stays where it was admitted; a job an admin moves
// afterwards (scontrol update partition=/qos=) is judged where it is now, saying why.
TEST(PolicyFor, AJobMovedSinceAdmissionIsJudgedWhereItIsNow) {
  config::Config cfg;
  cfg.admission.preemptible_qos = {"scavenger"};
  cfg.admission.preemptible_partitions = {"gpu"};
  auto job = [](std::string note, std::string partition, std::string qos) {
    slurm::JobView j = PolicyJob(7, std::move(note));
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

  JobPolicy p = PolicyFor(PolicyJob(1), cfg, kNow);
  EXPECT_TRUE(p.preemptible) << p.why;
  EXPECT_EQ(p.signal, 10);
  EXPECT_EQ(p.scope, plan::SignalScope::kFull);
  EXPECT_EQ(p.mode, plan::JobPreemptMode::kRequeue);

  EXPECT_FALSE(PolicyFor(PolicyJob(1, "k8s-bridge:preemptible=false"), cfg, kNow).preemptible);

  // Not admitted by the bridge: the admission lists decide, and unknown means protected.
  slurm::JobView j = PolicyJob(2, "");
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
  j = PolicyJob(3, "k8s-bridge:preemptible=true,signal=12@30:B");
  j.signal = slurm::SignalSpec{12, 30, true};
  p = PolicyFor(j, cfg, kNow);
  EXPECT_EQ(p.signal, 12);
  EXPECT_EQ(p.scope, plan::SignalScope::kBatchOnly);
  EXPECT_EQ(p.grace, seconds(30));

  // --no-requeue cannot be requeued: protected, unless its mode cancels.
  j = PolicyJob(4);
  j.requeue = false;
  EXPECT_FALSE(PolicyFor(j, cfg, kNow).preemptible);
  EXPECT_THAT(PolicyFor(j, cfg, kNow).why, HasSubstr("--no-requeue"));
  j.partition = "spot";
  EXPECT_TRUE(PolicyFor(j, cfg, kNow).preemptible);

  // Neither can an interactive job (srun/salloc): Slurm requeues batch jobs only.
  j = PolicyJob(6);
  j.batch = false;
  EXPECT_FALSE(PolicyFor(j, cfg, kNow).preemptible);
  EXPECT_THAT(PolicyFor(j, cfg, kNow).why, HasSubstr("interactive"));
  j.partition = "spot";
  EXPECT_TRUE(PolicyFor(j, cfg, kNow).preemptible) << "cancelling it is what its mode says";

  // Anti-thrash: more than max_preemptions in the window.
  cfg.lending.max_preemptions = 2;
  j = PolicyJob(5);
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

}  // namespace
}  // namespace skb::ownership

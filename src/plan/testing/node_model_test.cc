// SPDX-License-Identifier: Apache-2.0
#include "src/plan/testing/node_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/reservation.h"
#include "src/ownership/return_decision.h"
#include "src/ownership/schema.h"
#include "src/ownership/test_support.h"
#include "src/ownership/time_codec.h"
#include "src/plan/planner.h"

namespace skb::plan::testing {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;
using ownership::test_support::BareNode;
using ownership::test_support::Cfg;
using ownership::test_support::Job;
using ownership::test_support::kNow;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

Action Of(Operation op) {
  Action a;
  a.op = std::move(op);
  a.node = "node1";
  return a;
}

// Plans the node with the daemon's planner and carries the plan out (the kubelet runs
// between rounds) until nothing is left to do; the last plan.
NodePlan Converge(ManagedNode* n, const config::Config& cfg, Clock::TimePoint now, Log* log) {
  for (int round = 0; round < 8; ++round) {
    NodePlan p = PlanNode(*n, cfg, now);
    if (p.actions.empty()) return p;
    for (const Action& a : p.actions) {
      Status s = ApplyAction(a, n, cfg, now, log);
      EXPECT_TRUE(s.ok()) << s;
    }
    RunKubelet(n, now);
  }
  ADD_FAILURE() << "no convergence";
  return PlanNode(*n, cfg, now);
}

const GpuPod* Reservation(const ManagedNode& n) {
  for (const GpuPod& p : n.pods) {
    if (p.reservation) return &p;
  }
  return nullptr;
}

TEST(NodeModel, ABareNodeGetsARunningReservation) {
  const config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  Log log;
  EXPECT_EQ(Converge(&n, cfg, kNow, &log).owner, plan::NodeOwner::kSlurm);
  const GpuPod* r = Reservation(n);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->phase, "Running");
  EXPECT_EQ(r->started, kNow);
  EXPECT_EQ(r->priority, cfg.lending.idle_class.value);
  // The health planner's status conditions were published too.
  EXPECT_NE(n.k8s->FindCondition("SlurmDrained"), nullptr);
}

// The whole cycle through the daemon's planner: kube-scheduler deletes the reservation for
// a nominated pod; the job is signalled, preempted after its grace (its admin comment
// records it), the reservation released; the node idles and returns after the cool-down.
TEST(NodeModel, CarriesALendAndItsReturnOut) {
  const config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.jobs = {Job(7)};
  Log log;
  Converge(&n, cfg, kNow, &log);
  ASSERT_NE(Reservation(n), nullptr);

  GpuPod* r = &n.pods.front();
  r->terminating = true;
  r->deletion_time = kNow + ownership::ReservationGrace(cfg.lending);
  GpuPod preemptor;
  preemptor.namespace_name = "ml";
  preemptor.name = "infer-0";
  preemptor.gpus = 8;
  preemptor.phase = "Pending";
  preemptor.priority = 500'000;
  preemptor.nominated_node_name = "node1";
  n.nominated_pods = {preemptor};
  NodePlan p = Converge(&n, cfg, kNow, &log);
  EXPECT_EQ(p.owner, plan::NodeOwner::kLending);
  EXPECT_TRUE(n.slurm->drain);
  EXPECT_EQ(log.signals[7], 1);
  ASSERT_TRUE(p.recheck_at.has_value());

  const Clock::TimePoint graced = *p.recheck_at;
  p = Converge(&n, cfg, graced, &log);
  EXPECT_EQ(log.preemptions[7], 1);
  ASSERT_EQ(log.requeued.size(), 1u);
  EXPECT_THAT(log.requeued[0].admin_comment, HasSubstr("ml/infer-0"));
  EXPECT_TRUE(n.jobs.empty());
  EXPECT_EQ(Reservation(n), nullptr) << "released and gone";
  EXPECT_EQ(p.owner, plan::NodeOwner::kKubernetes);

  // The pod ran and left at once: idle from then, back after the minimum lend time. Its
  // reservation is made kReservationLead before; the node is resumed when the time is up.
  n.nominated_pods.clear();
  p = Converge(&n, cfg, graced, &log);
  ASSERT_TRUE(p.recheck_at.has_value());
  EXPECT_EQ(*p.recheck_at, kNow + cfg.lending.min_lend_time - ownership::kReservationLead);
  p = Converge(&n, cfg, *p.recheck_at, &log);
  EXPECT_TRUE(n.slurm->drain) << "Kubernetes' until the minimum lend time is up";
  ASSERT_NE(Reservation(n), nullptr);
  ASSERT_TRUE(p.recheck_at.has_value());
  EXPECT_EQ(*p.recheck_at, kNow + cfg.lending.min_lend_time);
  p = Converge(&n, cfg, *p.recheck_at, &log);
  EXPECT_EQ(p.owner, plan::NodeOwner::kSlurm);
  EXPECT_FALSE(n.slurm->drain);
  ASSERT_NE(Reservation(n), nullptr);
  EXPECT_EQ(Reservation(n)->phase, "Running");
  EXPECT_FALSE(n.k8s->annotations.count(ownership::kLentAtAnnotation));
}

TEST(NodeModel, RefusesWhatTheExecutorRefuses) {
  const config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.jobs = {Job(7)};
  Log log;
  const ReservationSpec spec =
      ownership::BuildReservation(n, ownership::ReservationClass::kIdle, cfg, kNow);
  ASSERT_TRUE(ApplyAction(Of(CreateReservationPod{spec}), &n, cfg, kNow, &log).ok());
  EXPECT_EQ(ApplyAction(Of(CreateReservationPod{spec}), &n, cfg, kNow, &log).code(),
            StatusCode::kFailedPrecondition);
  const PodRef ref{spec.namespace_name, spec.name, n.pods.front().uid};
  Status s = ApplyAction(Of(ReleaseReservationPod{.pod = ref}), &n, cfg, kNow, &log);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("job 7 holds the node"));
  EXPECT_EQ(ApplyAction(Of(ReleaseReservationPod{.pod = ref, .check = ReleaseCheck::kSwapTaint}),
                        &n, cfg, kNow, &log)
                .code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      ApplyAction(Of(ResumeSlurmNode{"k8s-bridge: lent to ml/x"}), &n, cfg, kNow, &log).code(),
      StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      ApplyAction(Of(PatchPodAnnotations{.pod = {"ns", "gone", "u"}}), &n, cfg, kNow, &log).code(),
      StatusCode::kFailedPrecondition);
}

TEST(NodeModel, UntrappedJobsDieOfTheSignalAndAreRequeuedFromTheEnded) {
  const config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.jobs = {Job(7)};
  Log log;
  log.untrapped = {7};
  ASSERT_TRUE(
      ApplyAction(Of(SignalSlurmJobs{.job_ids = {7}, .signal = 10}), &n, cfg, kNow, &log).ok());
  EXPECT_TRUE(n.jobs.empty());
  ASSERT_EQ(n.ended_jobs.size(), 1u);
  EXPECT_EQ(n.ended_jobs[0].exit_signal, 10);
  const PreemptSlurmJobs again{.job_ids = {7},
                               .preemptor = "ml/p",
                               .at_unix = ownership::ToUnix(kNow),
                               .ended_after_signal = true};
  ASSERT_TRUE(ApplyAction(Of(again), &n, cfg, kNow, &log).ok());
  EXPECT_TRUE(n.ended_jobs.empty());
  EXPECT_EQ(log.preemptions[7], 1);
  EXPECT_EQ(ownership::PreemptionTimes(log.requeued.at(0).admin_comment).size(), 1u);
}

TEST(NodeModel, KubeletEndsReleasedPodsAndKillsPastTheDeadline) {
  ManagedNode n = BareNode();
  const config::Config cfg = Cfg();
  const ReservationSpec spec =
      ownership::BuildReservation(n, ownership::ReservationClass::kIdle, cfg, kNow);
  GpuPod released = PodOfSpec(spec, "Running", "u1");
  released.terminating = true;
  released.finalizers.clear();
  GpuPod held = PodOfSpec(spec, "Running", "u2");
  held.terminating = true;
  held.deletion_time = kNow - seconds(1);
  n.pods = {released, held};
  RunKubelet(&n, kNow);
  ASSERT_EQ(n.pods.size(), 1u);
  EXPECT_EQ(n.pods[0].uid, "u2");
  EXPECT_EQ(n.pods[0].phase, "Failed");

  // A new reservation finds the GPUs taken by a running pod: refused.
  n.pods = {PodOfSpec(spec, "Pending", "u3")};
  GpuPod k8s;
  k8s.gpus = 1;
  k8s.phase = "Running";
  n.pods.insert(n.pods.begin(), k8s);
  RunKubelet(&n, kNow + minutes(1));
  EXPECT_EQ(n.pods[1].phase, "Failed");
}

}  // namespace
}  // namespace skb::plan::testing

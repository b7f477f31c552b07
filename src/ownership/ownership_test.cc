// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/ownership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "src/base/strings.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/reservation.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/return_decision.h"
#include "src/ownership/schema.h"
#include "src/ownership/test_support.h"
#include "src/ownership/time_codec.h"
#include "src/plan/action_testing.h"
#include "src/plan/testing/node_model.h"

namespace skb::ownership {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;
using plan::Action;
using plan::testing::AnnotationsOf;
using plan::testing::HasTaint;
using plan::testing::JobIdsOf;
using plan::testing::Log;
using plan::testing::PodOf;
using plan::testing::PodOfSpec;
using plan::testing::RunKubelet;
using plan::testing::TaintOf;
using std::chrono::minutes;
using std::chrono::seconds;
using test_support::BareNode;
using test_support::Cfg;
using test_support::Job;
using test_support::kNow;
using test_support::kNs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The reservation pod as the bridge creates it (via BuildReservation), Running.
GpuPod Reservation(const ManagedNode& n, const config::Config& cfg, ReservationClass cls,
                   Clock::TimePoint created = kNow - minutes(10)) {
  plan::ReservationSpec spec = BuildReservation(n, cls, cfg, created);
  return PodOfSpec(spec, "Running", StrCat("uid-", spec.name, "-", ToUnix(created)));
}

GpuPod K8sPod(std::string name, std::string phase = "Running", std::string node = "node1") {
  GpuPod p;
  p.namespace_name = "ml";
  p.name = std::move(name);
  p.node_name = std::move(node);
  p.gpus = 8;
  p.phase = std::move(phase);
  p.priority = 500'000;
  return p;
}

// A node Slurm owns, running `jobs`, with an up-to-date reservation of the right class.
ManagedNode SlurmNode(std::vector<slurm::JobView> jobs = {}, const config::Config& cfg = Cfg()) {
  ManagedNode n = BareNode();
  n.jobs = std::move(jobs);
  if (!n.jobs.empty()) n.slurm->base_state = slurm::NodeBaseState::kAllocated;
  n.pods.push_back(Reservation(n, cfg, ClassFor(n.jobs, cfg, kNow)));
  return n;
}

GpuPod* Res(ManagedNode* n) {
  for (GpuPod& p : n->pods) {
    if (p.labels.count(kRoleLabel)) return &p;
  }
  return nullptr;
}

// kube-scheduler preempted the reservation for `preemptor` (nominated to the node).
void Preempted(ManagedNode* n, Clock::TimePoint at, const config::Config& cfg,
               std::string preemptor = "infer-0") {
  GpuPod* r = Res(n);
  r->terminating = true;
  r->deletion_time = at + ReservationGrace(cfg.lending);
  if (!preemptor.empty()) {
    GpuPod p = K8sPod(std::move(preemptor), "Pending", "");
    p.nominated_node_name = "node1";
    n->nominated_pods.push_back(p);
  }
}

void Drained(ManagedNode* n, std::string reason, Clock::TimePoint at = kNow - minutes(20)) {
  n->slurm->drain = true;
  n->slurm->reason = std::move(reason);
  n->slurm->reason_time = ToUnix(at);
}

// A node lent to Kubernetes some time ago, reservation gone.
ManagedNode LentNode(Clock::TimePoint lent_at = kNow - minutes(20)) {
  ManagedNode n = BareNode();
  Drained(&n, "k8s-bridge: lent to ml/infer-0", lent_at);
  n.k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(lent_at));
  n.k8s->annotations[kLentToAnnotation] = "ml/infer-0";
  return n;
}

// The executor, applied to the model (plan/testing/node_model.h): a source-side
// precondition it violates, or an action the ownership planner never plans, is a test
// failure.
void Apply(const Action& a, ManagedNode* n, const config::Config& cfg, Clock::TimePoint now,
           Log* log) {
  ASSERT_FALSE(a.Is<plan::RequeueSlurmJobs>() || a.Is<plan::SetNodeCondition>() ||
               a.Is<plan::SetSlurmFeatures>())
      << "not an ownership action: " << plan::ToString(a);
  const Status s = plan::testing::ApplyAction(a, n, cfg, now, log);
  ASSERT_TRUE(s.ok()) << s;
}

// kube-scheduler: binds nominated pods once the GPUs are free in its count and no
// NoSchedule taint of the bridge is on the node.
void Scheduler(ManagedNode* n) {
  if (n->nominated_pods.empty()) return;
  if (HasTaint(*n, kSwapTaintKey) || HasTaint(*n, kBusyTaintKey) ||
      HasTaint(*n, kReclaimTaintKey)) {
    return;
  }
  // The swap-guard admission policy refuses every binding to a guarded node.
  if (n->k8s->labels.count(kSwapGuardLabel)) return;
  // The device lane's holds (DeviceTaintRules) keep every GPU out of new allocations.
  if (n->gpu_sharing.all_held) return;
  int64_t used = 0;
  for (const GpuPod& p : n->pods) {
    if (p.phase != "Succeeded" && p.phase != "Failed") used += p.gpus;
  }
  GpuPod& p = n->nominated_pods.front();
  if (used + p.gpus > n->k8s->gpu_allocatable) return;
  p.node_name = "node1";
  p.phase = "Running";
  p.nominated_node_name.clear();
  n->pods.push_back(p);
  n->nominated_pods.erase(n->nominated_pods.begin());
}

// Invariant 1 and the bridge's guard: a Slurm job and a running Kubernetes GPU pod never
// share the node; and whenever Slurm work is on the node, the GPUs are counted by a
// reservation, or the node carries the busy taint (a lend: Kubernetes is meant to come), or
// the swap taint together with the swap guard (a swap: nothing may come, not even a pod
// that tolerates the taint or names the node).
void CheckInvariants(const ManagedNode& n, const std::string& when) {
  bool jobs = false;
  for (const auto& j : n.jobs) jobs |= j.HoldsNodes();
  if (!jobs) return;
  bool counted = false;
  for (const GpuPod& p : n.pods) {
    if (p.labels.count(kRoleLabel) && p.phase != "Failed" && p.phase != "Succeeded" &&
        !p.finalizers.empty()) {
      counted = true;
    }
    EXPECT_FALSE(!p.labels.count(kRoleLabel) && p.phase == "Running")
        << "double booking " << when << ": pod " << p.name << " runs beside Slurm jobs";
  }
  const bool swap_guarded = HasTaint(n, kSwapTaintKey) && n.k8s->labels.count(kSwapGuardLabel);
  EXPECT_TRUE(counted || swap_guarded || HasTaint(n, kBusyTaintKey) || n.gpu_sharing.all_held)
      << "Slurm jobs on the node but its GPUs are free in Kubernetes' count " << when;
}

std::string Dump(const OwnershipPlan& p) {
  std::string s = StrCat("\n  state ", OwnerStateName(p.state));
  for (const auto& a : p.actions) StrAppend(&s, "\n  ", plan::ToString(a));
  for (const auto& e : p.explanation) StrAppend(&s, "\n  # ", e);
  return s;
}

std::vector<std::string_view> Kinds(const OwnershipPlan& p) {
  std::vector<std::string_view> k;
  for (const auto& a : p.actions) k.push_back(a.Kind());
  return k;
}

const Action* FindAction(const OwnershipPlan& p, std::string_view kind) {
  for (const auto& a : p.actions) {
    if (a.Kind() == kind) return &a;
  }
  return nullptr;
}

// Plans and applies until the plan is empty; fails after `max_rounds`.
void Converge(ManagedNode* n, const config::Config& cfg, Clock::TimePoint now, Log* log,
              int max_rounds = 4) {
  for (int round = 0; round < max_rounds; ++round) {
    OwnershipPlan p = PlanOwnership(*n, cfg, now);
    if (p.actions.empty()) return;
    for (const Action& a : p.actions) Apply(a, n, cfg, now, log);
  }
  ADD_FAILURE() << "no convergence in " << max_rounds
                << " rounds:" << Dump(PlanOwnership(*n, cfg, now));
}

// ---- One plan per situation: what it asks for, and that carrying it out converges ----

struct Case {
  std::string name;
  std::function<void(ManagedNode*, config::Config*)> setup;
  OwnerState state;
  std::vector<std::string_view> want;
  std::function<void(const OwnershipPlan&, const ManagedNode&)> check = nullptr;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PlanTable : public ::testing::TestWithParam<Case> {};

TEST_P(PlanTable, PlansThenConverges) {
  const Case& c = GetParam();
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  c.setup(&n, &cfg);
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(OwnerStateName(p.state), OwnerStateName(c.state)) << Dump(p);
  EXPECT_EQ(Kinds(p), c.want) << Dump(p);
  EXPECT_FALSE(p.explanation.empty());
  for (const auto& a : p.actions) {
    EXPECT_EQ(a.node, "node1");
    EXPECT_FALSE(a.event_reason.empty()) << plan::ToString(a);
    EXPECT_FALSE(a.event_message.empty()) << plan::ToString(a);
  }
  if (c.check) c.check(p, n);
  // Deterministic, and idempotent once carried out (at the same instant).
  EXPECT_EQ(PlanOwnership(n, cfg, kNow).actions, p.actions);
  Log log;
  Converge(&n, cfg, kNow, &log);
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"DisabledDoesNothing",
       [](ManagedNode*, config::Config* cfg) { cfg->lending.enabled = false; },
       OwnerState::kDisabled,
       {}},
      {"NewIdleNodeGetsAnIdleReservation", [](ManagedNode*, config::Config*) {},
       OwnerState::kSlurm,
       {plan::CreateReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         const plan::ReservationSpec& s = p.actions[0].As<plan::CreateReservationPod>().reservation;
         EXPECT_EQ(s.priority_class_name, "slurm-idle");
         EXPECT_EQ(s.namespace_name, kNs);
         EXPECT_EQ(s.name, "reserve-node1");
         EXPECT_EQ(s.node, "node1");
         EXPECT_EQ(s.gpus, 8);
         EXPECT_EQ(s.gpu_resource, "nvidia.com/gpu");
         EXPECT_THAT(s.finalizers, ElementsAre(kFinalizer));
         EXPECT_EQ(s.labels.at(kRoleLabel), kReservationRole);
         EXPECT_EQ(s.labels.at(kClassLabel), "idle");
         // max_grace + release_timeout + outage_allowance.
         EXPECT_EQ(s.termination_grace_seconds, 10 * 60 + 5 * 60 + 60 * 60);
         EXPECT_THAT(s.tolerations, ElementsAre(plan::TolerationSpec{"", "Exists", "", ""}));
         EXPECT_THAT(s.command.back(), HasSubstr(kReleasedAnnotation));
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kNormal);
       }},
      {"MissingReservationWithProtectedJobIsRecreatedAtOnce",
       [](ManagedNode* n, config::Config*) { n->jobs = {Job(7, false)}; },
       OwnerState::kSlurm,
       {plan::CreateReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::CreateReservationPod>().reservation.priority_class_name, "slurm-protected");
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
         EXPECT_THAT(p.actions[0].As<plan::CreateReservationPod>().reservation.annotations.at(kJobsAnnotation),
                     HasSubstr("7 alice ml 8 "));
       }},
      {"SteadySlurmNodeNeedsNothing",
       [](ManagedNode* n, config::Config*) { *n = SlurmNode({Job(1), Job(2)}); },
       OwnerState::kSlurm,
       {}},
      {"NewJobListIsWrittenWhenTheIntervalAllows",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->jobs.push_back(Job(2));
       },
       OwnerState::kSlurm,
       {plan::PatchPodAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_THAT(AnnotationsOf(p.actions[0]).set.at(kJobsAnnotation), HasSubstr(";2 alice"));
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kJobsUpdatedAtAnnotation),
                   StrCat(ToUnix(kNow)));
       }},
      {"NewJobListWaitsForTheInterval",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         Res(n)->annotations[kJobsUpdatedAtAnnotation] = StrCat(ToUnix(kNow - seconds(10)));
         n->jobs.push_back(Job(2));
       },
       OwnerState::kSlurm,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(50));
       }},
      {"ProtectedJobSwapsTheReservationAtOnce",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->jobs.push_back(Job(2, false));
       },
       OwnerState::kSwapping,
       {plan::SetNodeTaint::kName, plan::PatchPodAnnotations::kName,
        plan::DeleteReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(TaintOf(p.actions[0]), (plan::TaintSpec{kSwapTaintKey, "", "NoSchedule"}));
         EXPECT_EQ(AnnotationsOf(p.actions[1]).set.at(kReplacingAnnotation), "true");
         EXPECT_THAT(p.actions[2].event_message, HasSubstr("slurm-protected"));
       }},
      {"IdleToPreemptibleIsLazyFirstRecordsTheWish",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode();
         n->jobs = {Job(1)};
       },
       OwnerState::kSlurm,
       {plan::PatchPodAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kClassWantedAnnotation),
                   StrCat("preemptible@", ToUnix(kNow)));
       }},
      {"IdleToPreemptibleSwapsAfterTheDelay",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode();
         n->jobs = {Job(1)};
         Res(n)->annotations[kClassWantedAnnotation] =
             StrCat("preemptible@", ToUnix(kNow - seconds(61)));
       },
       OwnerState::kSwapping,
       {plan::SetNodeTaint::kName, plan::PatchPodAnnotations::kName,
        plan::DeleteReservationPod::kName}},
      {"ProtectedToIdleWaitsForTheDowngradeDelay",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1, false)});
         n->jobs.clear();
         Res(n)->annotations[kClassWantedAnnotation] = StrCat("idle@", ToUnix(kNow - seconds(61)));
       },
       OwnerState::kSlurm,
       {plan::PatchPodAnnotations::kName},  // the job list only
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(300 - 61));
         EXPECT_FALSE(AnnotationsOf(p.actions[0]).set.count(kClassWantedAnnotation));
       }},
      {"FailedReservationIsReplacedAtOnce",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         Res(n)->phase = "Failed";
       },
       OwnerState::kSwapping,
       // The failed pod counts nothing: the admission guard first, then the taint.
       {plan::PatchNodeAnnotations::kName, plan::SetNodeTaint::kName,
        plan::PatchPodAnnotations::kName, plan::DeleteReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::PatchNodeAnnotations>().labels.set.at(kSwapGuardLabel), "true");
         EXPECT_EQ(p.actions[3].event_type, plan::EventType::kWarning);
       }},
      // A GPU recovered (XID cleared): allocatable grew past what the reservation holds,
      // and a pod would fit beside it. Replaced under the guard, sized to the node.
      {"ReservationSmallerThanTheNodeIsReplaced",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         Res(n)->gpus = 7;  // made while the node offered 7
       },
       OwnerState::kSwapping,
       {plan::SetNodeTaint::kName, plan::PatchPodAnnotations::kName,
        plan::DeleteReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(TaintOf(p.actions[0]).key, kSwapTaintKey);
         EXPECT_THAT(p.actions[2].event_message, HasSubstr("holds 7 GPUs, the node has 8"));
       }},
      // A GPU lost: the reservation holds more than the node offers, which leaves no room
      // beside it; a swap would only open the guard's window. Kept.
      {"ReservationLargerThanTheNodeIsKept",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         Res(n)->annotations[kJobsAnnotation] = FormatJobList(n->jobs);
         n->k8s->gpu_capacity = n->k8s->gpu_allocatable = 7;
       },
       OwnerState::kSlurm,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         bool explained = false;
         for (const auto& e : p.explanation) explained |= e.find("holds 8 GPUs") != std::string::npos;
         EXPECT_TRUE(explained);
       }},
      {"SwapReleasesTheOldPodUnderTheTaint",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
         Res(n)->annotations[kReplacingAnnotation] = "true";
         Res(n)->terminating = true;
       },
       OwnerState::kSwapping,
       {plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::ReleaseReservationPod>().check, plan::ReleaseCheck::kSwapTaint);
       }},
      // The guards are admission policies reading their parameters from an informer: a pod
      // can be bound in the milliseconds before the apiserver sees them (two clean runs). One
      // a lend would not let take the jobs (here: below lending.inference_threshold) is
      // evicted, the jobs are left alone, and no new reservation comes while it is there.
      {"APodBoundDuringASwapThatMayNotTakeTheJobsIsEvicted",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->pods.clear();  // the old reservation released
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
         GpuPod p = K8sPod("waiting", "Pending");
         p.priority = 0;
         n->pods.push_back(p);
       },
       OwnerState::kSwapping,
       {plan::EvictPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::EvictPod>().pod.name, "waiting");
         EXPECT_EQ(p.actions[0].event_reason, "SwapGuardBreached");
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
       }},
      // The same from a cache that has not yet seen the swap's taint and guard label (CI:
      // the node watch lagged behind the pod watch, and the lend preempted the job): the
      // pod is evicted all the same, and the node guarded; no lend.
      {"APodOnANodeWithoutItsReservationThatMayNotTakeTheJobsIsEvicted",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->pods.clear();
         GpuPod p = K8sPod("waiting", "Running");
         p.priority = 0;
         n->pods.push_back(p);
       },
       OwnerState::kSwapping,
       {plan::EvictPod::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::EvictPod>().pod.name, "waiting");
         EXPECT_EQ(p.actions[0].event_reason, "SwapGuardBreached");
         EXPECT_EQ(p.actions[1].As<plan::PatchNodeAnnotations>().labels.set.at(kSwapGuardLabel),
                   "true");
       }},
      // A pod that may take the jobs is lent the node, as before.
      {"APodOnANodeWithoutItsReservationThatMayTakeTheJobsIsLentTheNode",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->pods.clear();
         n->pods.push_back(K8sPod("infer-0", "Running"));
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SetNodeTaint::kName, plan::PreemptSlurmJobs::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].event_reason, "ReservationMissing");
       }},
      // Once it is leaving, nothing more: the guard stays, the replacement waits for it.
      {"ASwapWaitsForTheEvictedPodToGo",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->pods.clear();
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
         GpuPod p = K8sPod("waiting", "Running");
         p.priority = 0;
         p.terminating = true;
         n->pods.push_back(p);
       },
       OwnerState::kSwapping,
       {},
       {}},
      // The mark is read as present or not: a garbled value (an admin's edit, a truncated
      // write) keeps the swap a swap instead of turning it into a lend.
      {"AGarbledReplacingMarkIsStillASwap",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
         Res(n)->annotations[kReplacingAnnotation] = "";
         Res(n)->terminating = true;
       },
       OwnerState::kSwapping,
       {plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::ReleaseReservationPod>().check, plan::ReleaseCheck::kSwapTaint);
       }},
      // The release is the moment the old pod stops counting: the guard goes on first, in
      // the same chain (a failed label write holds the release back).
      {"SwapGuardGoesOnBeforeTheOldPodIsReleased",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         Res(n)->annotations[kReplacingAnnotation] = "true";
         Res(n)->terminating = true;
       },
       OwnerState::kSwapping,
       {plan::PatchNodeAnnotations::kName, plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::PatchNodeAnnotations>().labels.set.at(kSwapGuardLabel), "true");
         EXPECT_EQ(p.actions[0].event_reason, "SwapGuardOn");
         EXPECT_EQ(p.actions[0].chain, p.actions[1].chain);
       }},
      {"SwapCreatesTheNewPodWhenTheOldIsGone",
       [](ManagedNode* n, config::Config*) {
         n->jobs = {Job(1, false)};
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
       },
       OwnerState::kSwapping,
       {plan::CreateReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::CreateReservationPod>().reservation.priority_class_name, "slurm-protected");
       }},
      {"SwapEndsWhenTheNewPodRuns",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1, false)});
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
       },
       OwnerState::kSlurm,
       {plan::RemoveNodeTaint::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[1].As<plan::PatchNodeAnnotations>().labels.remove, std::vector<std::string>{kSwapGuardLabel});
         EXPECT_EQ(p.actions[1].event_reason, "SwapGuardOff");
       }},
      {"SwapWaitsForTheNewPodToRun",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1, false)});
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         n->k8s->labels[kSwapGuardLabel] = "true";
         Res(n)->phase = "Pending";
       },
       OwnerState::kSlurm,
       {}},
      // A guard left without a swap (written by hand, or a swap finished by an older
      // bridge) would refuse every binding to the node: removed.
      {"SwapGuardWithoutASwapIsRemoved",
       [](ManagedNode* n, config::Config*) {
         *n = SlurmNode({Job(1)});
         Res(n)->annotations[kJobsAnnotation] = FormatJobList(n->jobs);
         n->k8s->labels[kSwapGuardLabel] = "true";
       },
       OwnerState::kSlurm,
       {plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::PatchNodeAnnotations>().labels.remove, std::vector<std::string>{kSwapGuardLabel});
       }},
      {"PreemptedReservationStartsTheLend",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1), Job(2)});
         Preempted(n, kNow - seconds(1), *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SignalSlurmJobs::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kLentToAnnotation), "ml/infer-0");
         EXPECT_EQ(p.actions[1].As<plan::DrainSlurmNode>().reason, "k8s-bridge: lent to ml/infer-0");
         EXPECT_THAT(JobIdsOf(p.actions[2]), ElementsAre(1, 2));
         EXPECT_EQ(p.actions[2].As<plan::SignalSlurmJobs>().signal, 10);
         // To the millisecond, and the grace ends exactly 60 s later.
         EXPECT_EQ(AnnotationsOf(p.actions[3]).set.at(kSignalledAtAnnotation),
                   StrCat("1:", FormatUnixMillis(kNow), ",2:", FormatUnixMillis(kNow)));
         EXPECT_EQ(p.recheck_at, kNow + seconds(60));
       }},
      {"JobsWithTheirOwnSignalGetItAndTheirGrace",
       [](ManagedNode* n, config::Config* cfg) {
         slurm::JobView j = Job(1);
         j.signal = slurm::SignalSpec{12, 20, true};
         *n = SlurmNode({j, Job(2)});
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SignalSlurmJobs::kName, plan::SignalSlurmJobs::kName,
        plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[2].As<plan::SignalSlurmJobs>().signal, 10);
         EXPECT_THAT(JobIdsOf(p.actions[2]), ElementsAre(2));
         EXPECT_EQ(p.actions[3].As<plan::SignalSlurmJobs>().signal, 12);
         EXPECT_EQ(p.actions[3].As<plan::SignalSlurmJobs>().scope, plan::SignalScope::kBatchOnly);
         EXPECT_EQ(p.recheck_at, kNow + seconds(20));
       }},
      // Its grace is over and the job still holds the node: guarded now, an hour before the
      // kill deadline, then preempted (the taint first: it stays if the preemption fails).
      {"GraceOverTaintsThenPreemptsWithAComment",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)});
         Preempted(n, kNow - seconds(70), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0");
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - seconds(70)));
         n->k8s->annotations[kLentToAnnotation] = "ml/infer-0";
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", ToUnix(kNow - seconds(61)));  // 60 s of grace from the next second: over now
       },
       OwnerState::kLending,
       {plan::SetNodeTaint::kName, plan::PreemptSlurmJobs::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(TaintOf(p.actions[0]).key, kBusyTaintKey);
         EXPECT_EQ(p.actions[0].event_reason, "SlurmWorkRemains");
         EXPECT_THAT(p.actions[0].event_message,
                     HasSubstr("job(s) 1 outlived their grace after the checkpoint signal"));
         EXPECT_EQ(p.actions[1].As<plan::PreemptSlurmJobs>().mode, plan::JobPreemptMode::kRequeue);
         EXPECT_EQ(p.actions[1].As<plan::PreemptSlurmJobs>().at_unix, ToUnix(kNow));
         EXPECT_EQ(p.actions[1].As<plan::PreemptSlurmJobs>().preemptor, "ml/infer-0");
       }},
      {"EmptyNodeReleasesTheReservation",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode();
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[2].As<plan::ReleaseReservationPod>().check, plan::ReleaseCheck::kNoSlurmJobs);
       }},
      {"InterruptedSwapTaintIsRemovedOnceSlurmLeft",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode();
         n->k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
         // Deleted by hand before the swap annotated it, long enough ago that no preemptor
         // is waited for.
         Preempted(n, kNow - std::chrono::seconds(5), *cfg, "");
       },
       OwnerState::kLending,
       // The taint goes before the release: after it, it would keep the preemptor off.
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::RemoveNodeTaint::kName, plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(TaintOf(p.actions[2]).key, kSwapTaintKey);
       }},
      // The busy taint went on when the job outlived its grace; the job is gone now. It comes
      // off before the release: left on after it (a bridge that dies right after the
      // release), kube-scheduler finds the preemptor no room here and preempts elsewhere.
      {"BusyTaintComesOffBeforeTheRelease",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode();
         Preempted(n, kNow - std::chrono::seconds(5), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0", kNow - std::chrono::seconds(5));
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - std::chrono::seconds(5)));
         n->k8s->annotations[kLentToAnnotation] = "ml/infer-0";
         n->k8s->taints.push_back({kBusyTaintKey, "", "NoSchedule"});
       },
       OwnerState::kLending,
       {plan::RemoveNodeTaint::kName, plan::ReleaseReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(TaintOf(p.actions[0]).key, kBusyTaintKey);
         EXPECT_EQ(p.actions[1].As<plan::ReleaseReservationPod>().check, plan::ReleaseCheck::kNoSlurmJobs);
       }},
      {"CompletingJobHoldsTheRelease",
       [](ManagedNode* n, config::Config* cfg) {
         slurm::JobView j = Job(1);
         j.completing = true;
         *n = SlurmNode({j});
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName}},
      {"ProtectedJobBlocksTheLendWithAWarning",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1), Job(2, false)});
         Preempted(n, kNow - std::chrono::seconds(5), *cfg, "");  // kubectl delete: none
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SetNodeTaint::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kLentToAnnotation), "kubernetes");
         EXPECT_EQ(TaintOf(p.actions[2]).key, kBusyTaintKey);
         EXPECT_EQ(AnnotationsOf(p.actions[3]).set.at(kLendBlockedAnnotation), "2");
         EXPECT_EQ(p.actions[3].event_type, plan::EventType::kWarning);
         EXPECT_EQ(FindAction(p, plan::SignalSlurmJobs::kName), nullptr);
       }},
      {"NoRequeueJobIsProtectedToo",
       [](ManagedNode* n, config::Config* cfg) {
         slurm::JobView j = Job(1);
         j.requeue = false;
         *n = SlurmNode({j});
         Preempted(n, kNow, *cfg);
       },
       // Protected: a pod's preemption is refused (guard, replace), never a lend.
       OwnerState::kSwapping,
       {plan::SetNodeTaint::kName, plan::PatchNodeAnnotations::kName,
        plan::PatchPodAnnotations::kName}},
      {"AdminDrainIsNeverOverwritten",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode();
         Drained(n, "bad fan");
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::ReleaseReservationPod::kName}},
      {"HealthDrainIsReplacedByTheLendDrain",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode();
         Drained(n, "k8s-bridge: GPUHealthy=False: XID 79");
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::ReleaseReservationPod::kName}},
      {"KillDeadlineNearTaintsTheNode",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)});
         Preempted(n, kNow - ReservationGrace(cfg->lending) + seconds(10), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0");
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - minutes(15)));
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", ToUnix(kNow - seconds(30)));
         n->slurm->drain = true;
       },
       OwnerState::kLending,
       {plan::SetNodeTaint::kName}},
      // A second short of its grace: no taint yet, a recheck when the grace ends.
      {"SignalledJobWithinItsGraceIsNotGuardedYet",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)});
         Preempted(n, kNow - seconds(70), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0");
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - seconds(70)));
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", ToUnix(kNow - seconds(59)));
       },
       OwnerState::kLending,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(2));
       }},
      // A signal recorded to the millisecond (what the bridge writes): the grace ends 60 s
      // after it, not at the next whole second; a millisecond short, nothing yet.
      {"TheGraceEndsToTheMillisecond",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)});
         Preempted(n, kNow - seconds(70), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0");
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - seconds(70)));
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat(
             "1:", FormatUnixMillis(kNow - seconds(60) + std::chrono::milliseconds(1)));
       },
       OwnerState::kLending,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + std::chrono::milliseconds(1));
       }},
      {"TheGraceOfASignalRecordedToTheMillisecondIsOverWhenItEnds",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)});
         Preempted(n, kNow - seconds(70), *cfg);
         Drained(n, "k8s-bridge: lent to ml/infer-0");
         n->k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - seconds(70)));
         n->k8s->annotations[kLentToAnnotation] = "ml/infer-0";
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", FormatUnixMillis(kNow - seconds(60)));
       },
       OwnerState::kLending,
       {plan::SetNodeTaint::kName, plan::PreemptSlurmJobs::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[1].As<plan::PreemptSlurmJobs>().since_unix, ToUnix(kNow - seconds(60)));
       }},
      {"LentNodeWithoutPodsStartsTheCooldown",
       [](ManagedNode* n, config::Config*) { *n = LentNode(); },
       OwnerState::kKubernetes,
       {plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kIdleSinceAnnotation),
                   FormatUnixMillis(kNow));
         EXPECT_EQ(p.recheck_at, kNow + minutes(2) - kReservationLead);
       }},
      {"LentNodeInUseStaysLent",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(1)));
         n->pods.push_back(K8sPod("infer-0"));
       },
       OwnerState::kKubernetes,
       {plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_THAT(AnnotationsOf(p.actions[0]).remove, ElementsAre(kIdleSinceAnnotation));
       }},
      {"CooledDownNodeReturns",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
       },
       OwnerState::kKubernetes,
       {plan::CreateReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::CreateReservationPod>().reservation.priority_class_name, "slurm-idle");
       }},
      {"APodThatTookTheReservationsNameBlocksTheReturnWithAWarning",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
         GpuPod p = K8sPod("reserve-node1", "Succeeded");  // ended: no longer uses the GPUs
         p.namespace_name = kNs;
         n->pods.push_back(p);
       },
       OwnerState::kKubernetes,
       {plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
         EXPECT_EQ(p.actions[0].event_reason, "ReturnBlocked");
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kReturnBlockedAnnotation),
                   "slurm-bridge/reserve-node1");
       }},
      {"AFinalizerRemovedByHandIsPutBackFirst",
       [](ManagedNode* n, config::Config* cfg) {
         *n = SlurmNode({Job(1)}, *cfg);
         Res(n)->finalizers.clear();
         Res(n)->phase = "Running";
       },
       OwnerState::kSlurm,
       {plan::RestoreFinalizer::kName},
       [](const OwnershipPlan& p, const ManagedNode& n) {
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
         EXPECT_EQ(PodOf(p.actions[0]).uid, n.pods[0].uid);
       }},
      {"MinimumLendTimeHoldsTheReturn",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode(kNow - minutes(4));
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
       },
       OwnerState::kKubernetes,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + minutes(1) - kReservationLead);
       }},
      {"UnhealthyNodeDoesNotReturn",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
         n->k8s->unschedulable = true;  // kubectl drain / cordon
       },
       OwnerState::kKubernetes,
       {}},
      {"NominatedPodKeepsTheNodeLent",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         GpuPod p = K8sPod("infer-1", "Pending", "");
         p.nominated_node_name = "node1";
         n->nominated_pods.push_back(p);
       },
       OwnerState::kKubernetes,
       {}},
      {"RunningReservationResumesTheLentNode",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
       },
       OwnerState::kReturning,
       {plan::ResumeSlurmNode::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].As<plan::ResumeSlurmNode>().expected_reason, "k8s-bridge: lent to ml/infer-0");
         EXPECT_THAT(AnnotationsOf(p.actions[1]).remove,
                     ElementsAre(kLentAtAnnotation, kLentToAnnotation, kIdleSinceAnnotation));
       }},
      // The reservation is created kReservationLead before the cool-down ends (a kubelet
      // starts it meanwhile) and Slurm resumes the node when the cool-down ends, to the
      // instant, not when the reservation happens to run.
      {"TheReturnBeginsItsReservationALeadBeforeTheCoolDownEnds",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] =
             StrCat(ToUnix(kNow - cfg->lending.cooldown + kReservationLead));
       },
       OwnerState::kKubernetes,
       {plan::CreateReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_THAT(p.actions[0].event_message, HasSubstr("Slurm's in 5s"));
       }},
      {"TheReturnDoesNotBeginBeforeItsLead",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] =
             StrCat(ToUnix(kNow - cfg->lending.cooldown + kReservationLead + seconds(1)));
       },
       OwnerState::kKubernetes,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(1));
       }},
      {"ARunningReservationWaitsForTheCoolDownsEnd",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] =
             StrCat(ToUnix(kNow - cfg->lending.cooldown + seconds(2)));
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
       },
       OwnerState::kReturning,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(2));
         EXPECT_THAT(Dump(p), HasSubstr("Slurm resumes the node in 2s, when the cool-down ends"));
       }},
      // The idle-since keeps milliseconds: the node resumes when its cool-down ends, not at
      // the whole second before or after.
      {"TheCoolDownEndsToTheMillisecond",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = FormatUnixMillis(
             kNow - cfg->lending.cooldown + seconds(2) - std::chrono::milliseconds(750));
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
       },
       OwnerState::kReturning,
       {},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + std::chrono::milliseconds(1250));
       }},
      {"PendingReservationHoldsTheResume",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
         n->pods.back().phase = "Pending";
       },
       OwnerState::kReturning,
       {}},
      {"GpuPodArrivingFirstAbandonsTheReturn",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow - minutes(3)));
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
         n->pods.back().phase = "Pending";
         n->pods.push_back(K8sPod("infer-9"));
       },
       OwnerState::kReturning,
       {plan::DeleteReservationPod::kName, plan::PatchNodeAnnotations::kName}},
      {"RefusedReservationAbandonsTheReturnWithAWarning",
       [](ManagedNode* n, config::Config* cfg) {
         *n = LentNode();
         n->pods.push_back(Reservation(*n, *cfg, ReservationClass::kIdle, kNow));
         n->pods.back().phase = "Failed";
       },
       OwnerState::kReturning,
       {plan::DeleteReservationPod::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
       }},
      {"ForeignPodWithTheReservationsNameIsNeverTouched",
       [](ManagedNode* n, config::Config*) {
         GpuPod p = K8sPod("reserve-node1");
         p.namespace_name = kNs;
         n->pods.push_back(p);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
         EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kLentToAnnotation),
                   "slurm-bridge/reserve-node1");
         for (const auto& a : p.actions) EXPECT_THROW(PodOf(a), std::logic_error) << plan::ToString(a);
       }},
      {"FinalizerRemovedByHandWithAPodRunningPreemptsAtOnce",
       [](ManagedNode* n, config::Config*) {
         n->jobs = {Job(1)};
         n->pods.push_back(K8sPod("infer-0"));
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SetNodeTaint::kName, plan::PreemptSlurmJobs::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
         EXPECT_EQ(p.actions[3].event_type, plan::EventType::kWarning);
       }},
      {"FinalizerRemovedByHandMidLendKeepsGoingUnderTheTaint",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode(kNow - seconds(10));
         n->jobs = {Job(1)};
         n->k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", ToUnix(kNow - seconds(10)));
       },
       OwnerState::kKubernetes,
       {plan::SetNodeTaint::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.recheck_at, kNow + seconds(51));
       }},
      {"AdminResumedALentNodeIsDrainedAgain",
       [](ManagedNode* n, config::Config*) {
         *n = LentNode();
         n->slurm->drain = false;
         n->slurm->reason.clear();
         n->pods.push_back(K8sPod("infer-0"));
       },
       OwnerState::kKubernetes,
       {plan::DrainSlurmNode::kName}},
      {"NominatedPodOnANodeWithoutReservationLendsIt",
       [](ManagedNode* n, config::Config*) {
         GpuPod p = K8sPod("infer-3", "Pending", "");
         p.nominated_node_name = "node1";
         n->nominated_pods.push_back(p);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_EQ(p.actions[1].As<plan::DrainSlurmNode>().reason, "k8s-bridge: lent to ml/infer-3");
       }},
      {"SuspendedJobIsPreemptedWithoutSignal",
       [](ManagedNode* n, config::Config* cfg) {
         slurm::JobView j = Job(1);
         j.state = slurm::JobState::kSuspended;
         *n = SlurmNode({j});
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::PreemptSlurmJobs::kName}},
      {"HeterogeneousJobIsPreemptedByItsLeader",
       [](ManagedNode* n, config::Config* cfg) {
         slurm::JobView a = Job(11), b = Job(12);
         a.het_job_id = b.het_job_id = 11;
         b.het_job_offset = 1;
         *n = SlurmNode({a, b});
         Preempted(n, kNow, *cfg);
       },
       OwnerState::kLending,
       {plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
        plan::SignalSlurmJobs::kName, plan::PatchNodeAnnotations::kName},
       [](const OwnershipPlan& p, const ManagedNode&) {
         EXPECT_THAT(JobIdsOf(p.actions[2]), ElementsAre(11));
       }},
  };
  return *cases;
}

INSTANTIATE_TEST_SUITE_P(Ownership, PlanTable, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& tp) { return tp.param.name; });

// ---- Heterogeneous jobs ----------------------------------------------------------------

// Component 12 of heterogeneous job 11 runs on node1, its leader 11 on node2: what node1's
// planner gets from the inventory (ManagedNode::het_jobs).
ManagedNode HetNode(bool leader_preemptible, const config::Config& cfg = Cfg()) {
  slurm::JobView leader = Job(11, leader_preemptible), here = Job(12);
  leader.het_job_id = here.het_job_id = 11;
  here.het_job_offset = 1;
  leader.nodes = {"node2"};
  ManagedNode n = SlurmNode({here}, cfg);
  n.het_jobs = {leader, here};
  return n;
}

const Action* Find(const OwnershipPlan& p, std::string_view kind) {
  for (const Action& a : p.actions) {
    if (a.Kind() == kind) return &a;
  }
  return nullptr;
}

// Deletes the node's reservation by hand (a lend, not a preemption) and expects the lend to
// wait for its protected work: nothing signalled or preempted, a LendBlockedByProtectedJobs
// Event whose message names `named`.
void ExpectALendByHandWaits(ManagedNode* n, const config::Config& cfg, std::string_view named) {
  Res(n)->terminating = true;
  Res(n)->deletion_time =
      kNow - minutes(1) + cfg.lending.max_grace + cfg.lending.release_timeout + seconds(1);
  OwnershipPlan p = PlanOwnership(*n, cfg, kNow);
  EXPECT_EQ(Find(p, plan::SignalSlurmJobs::kName), nullptr) << Dump(p);
  EXPECT_EQ(Find(p, plan::PreemptSlurmJobs::kName), nullptr) << Dump(p);
  bool blocked = false;
  for (const Action& a : p.actions) {
    blocked |= a.event_reason == "LendBlockedByProtectedJobs" &&
               a.event_message.find(named) != std::string::npos;
  }
  EXPECT_TRUE(blocked) << Dump(p);
}

// A lend of the node of a non-leader component signals and preempts it: the executor acts
// on the whole job through its leader, and the Events say which components and nodes that
// reaches (node2's planner then sees its component end like any other job).
TEST(HeterogeneousJob, ALendOfAComponentsNodeSignalsAndRequeuesTheWholeJob) {
  const config::Config cfg = Cfg();
  ManagedNode n = HetNode(/*leader_preemptible=*/true);
  EXPECT_EQ(ClassFor(n.jobs, cfg, kNow, nullptr, n.het_jobs), ReservationClass::kPreemptible);
  Preempted(&n, kNow, cfg);
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  const Action* sig = Find(p, plan::SignalSlurmJobs::kName);
  ASSERT_NE(sig, nullptr) << Dump(p);
  EXPECT_THAT(JobIdsOf(*sig), ElementsAre(12));
  EXPECT_THAT(sig->event_message,
              HasSubstr("heterogeneous job 11 (components 11 on node2, 12 on node1) is "
                        "signalled as a whole"));

  n.k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow));
  n.k8s->annotations[kLentToAnnotation] = "ml/infer-0";
  Drained(&n, "k8s-bridge: lent to ml/infer-0", kNow);
  n.k8s->annotations[kSignalledAtAnnotation] = StrCat("12:", ToUnix(kNow));
  p = PlanOwnership(n, cfg, GraceEnds(kNow, /*exact=*/false, cfg.lending.default_grace));
  const Action* pre = Find(p, plan::PreemptSlurmJobs::kName);
  ASSERT_NE(pre, nullptr) << Dump(p);
  EXPECT_THAT(JobIdsOf(*pre), ElementsAre(12));
  EXPECT_THAT(pre->event_message, HasSubstr("is requeued as a whole"));
}

// The leader on node2 may not be preempted: node1's reservation is protected (a lend of it
// would requeue the leader too), and a lend of node1 (kubectl, not a preemption) waits.
TEST(HeterogeneousJob, AProtectedComponentElsewhereProtectsTheNodeOfEveryOther) {
  const config::Config cfg = Cfg();
  ManagedNode n = HetNode(/*leader_preemptible=*/false);
  std::string why;
  EXPECT_EQ(ClassFor(n.jobs, cfg, kNow, &why, n.het_jobs), ReservationClass::kProtected);
  EXPECT_THAT(why, HasSubstr("heterogeneous job 11"));
  ExpectALendByHandWaits(&n, cfg, "heterogeneous job 11");

  // Preempted by a pod instead: refused, the node is not even drained.
  ManagedNode m = HetNode(/*leader_preemptible=*/false);
  Preempted(&m, kNow, cfg);
  OwnershipPlan p = PlanOwnership(m, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kSwapping) << Dump(p);
  EXPECT_EQ(Find(p, plan::DrainSlurmNode::kName), nullptr) << Dump(p);
}

// The grace is the longest of any component's (one signal reaches them all).
TEST(HeterogeneousJob, TheGraceIsTheLongestOfAnyComponent) {
  const config::Config cfg = Cfg();
  ManagedNode n = HetNode(/*leader_preemptible=*/true);
  n.het_jobs[0].signal = slurm::SignalSpec{10, 300, false};
  Preempted(&n, kNow, cfg);
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  ASSERT_NE(Find(p, plan::SignalSlurmJobs::kName), nullptr) << Dump(p);
  EXPECT_EQ(p.recheck_at, kNow + seconds(300));
}

// ---- Guaranteed quotas ------------------------------------------------------------------

// A job within its tenant's guarantee (ManagedNode::guaranteed_jobs, from the quota
// classification) is never taken for another's demand, though the lending policy would
// preempt it: its node's reservation is protected, so kube-scheduler's preemption cannot
// pick it, and a lend of the node by anyone else (kubectl, a drain) waits for the job
// instead of signalling it.
TEST(GuaranteedQuota, AJobWithinItsTenantsGuaranteeProtectsItsNodeAndHoldsALend) {
  const config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(7)}, cfg);
  std::string why;
  EXPECT_EQ(ClassFor(n.jobs, cfg, kNow, &why, n.het_jobs, n.guaranteed_jobs),
            ReservationClass::kPreemptible);
  n.guaranteed_jobs = {{7, "team-a"}};
  EXPECT_EQ(ClassFor(n.jobs, cfg, kNow, &why, n.het_jobs, n.guaranteed_jobs),
            ReservationClass::kProtected);
  EXPECT_EQ(why, "job 7: runs within tenant team-a's guarantee (quotas)");

  ExpectALendByHandWaits(&n, cfg, "team-a's guarantee");

  // The same lend once the job is borrowed (its tenant's other work took the floor):
  // signalled.
  n.guaranteed_jobs.clear();
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  const Action* sig = Find(p, plan::SignalSlurmJobs::kName);
  ASSERT_NE(sig, nullptr) << Dump(p);
  EXPECT_THAT(JobIdsOf(*sig), ElementsAre(7));
}

// A heterogeneous job is preempted whole: one component within its tenant's guarantee,
// even on another node, protects the node of every other component.
TEST(GuaranteedQuota, AGuaranteedComponentElsewhereProtectsTheWholeJob) {
  const config::Config cfg = Cfg();
  ManagedNode n = HetNode(/*leader_preemptible=*/true);
  n.guaranteed_jobs = {{11, "team-a"}};  // the leader, on node2
  std::string why;
  EXPECT_EQ(ClassFor(n.jobs, cfg, kNow, &why, n.het_jobs, n.guaranteed_jobs),
            ReservationClass::kProtected);
  EXPECT_EQ(why,
            "job 12: component 11 of heterogeneous job 11 (preempted as a whole): runs within "
            "tenant team-a's guarantee (quotas)");
  // A job the lending policy already keeps says its own reason, not the quota's.
  ManagedNode m = SlurmNode({Job(8, /*preemptible=*/false)}, cfg);
  m.guaranteed_jobs = {{8, "team-a"}};
  ClassFor(m.jobs, cfg, kNow, &why, m.het_jobs, m.guaranteed_jobs);
  EXPECT_THAT(why, Not(HasSubstr("guarantee"))) << why;
}

// ---- Bad input -------------------------------------------------------------------------

// The caller's floor (a large cluster at a modest client rate) stretches the job-list
// refresh interval; a floor below the configured interval changes nothing.
TEST(PlanOwnership, JobListRefreshWaitsForTheLongerOfIntervalAndFloor) {
  config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(1)});
  Res(&n)->annotations[kJobsUpdatedAtAnnotation] = StrCat(ToUnix(kNow - seconds(90)));
  n.jobs.push_back(Job(2));
  // 90 s since the last refresh, configured 60 s: due.
  EXPECT_EQ(Kinds(PlanOwnership(n, cfg, kNow, seconds(30))),
            std::vector<std::string_view>{plan::PatchPodAnnotations::kName});
  // A 500 s floor (5,000 nodes at 20 qps): not yet, and a recheck when it is.
  OwnershipPlan p = PlanOwnership(n, cfg, kNow, seconds(500));
  EXPECT_TRUE(p.actions.empty()) << Dump(p);
  EXPECT_EQ(p.recheck_at, kNow + seconds(410));
  EXPECT_THAT(p.explanation, ::testing::Contains(HasSubstr("at most every 500s")));
}

TEST(PlanOwnership, ALendWaitsBrieflyForItsPreemptorToShow) {
  config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(1)});
  Preempted(&n, kNow, cfg, "");  // the victim is deleted, the preemptor not yet seen
  const Clock::TimePoint deleted = kNow;
  OwnershipPlan wait = PlanOwnership(n, cfg, kNow);
  EXPECT_TRUE(wait.actions.empty()) << Dump(wait);
  EXPECT_EQ(wait.recheck_at, deleted + kPreemptorWait);
  EXPECT_THAT(wait.explanation,
              ::testing::Contains(HasSubstr("waiting briefly for the pod that preempted it")));
  // Past the wait the lend goes on without a name ...
  OwnershipPlan late = PlanOwnership(n, cfg, deleted + kPreemptorWait);
  ASSERT_FALSE(late.actions.empty()) << Dump(late);
  EXPECT_EQ(AnnotationsOf(late.actions[0]).set.at(kLentToAnnotation), "kubernetes");
  // ... and once the preemptor shows, at once with its name.
  ManagedNode named = SlurmNode({Job(1)});
  Preempted(&named, kNow, cfg, "infer-a");
  OwnershipPlan now = PlanOwnership(named, cfg, kNow);
  ASSERT_FALSE(now.actions.empty()) << Dump(now);
  EXPECT_THAT(AnnotationsOf(now.actions[0]).set.at(kLentToAnnotation), HasSubstr("infer-a"));
}

TEST(PlanOwnership, OneSidedNodesAreLeftAlone) {
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.slurm.reset();
  EXPECT_TRUE(PlanOwnership(n, cfg, kNow).actions.empty());
  n = BareNode();
  n.k8s.reset();
  EXPECT_TRUE(PlanOwnership(n, cfg, kNow).actions.empty());
}

TEST(PlanOwnership, TheReservationOfADeletedNodeIsReleased) {
  config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(1)}, cfg);
  n.k8s.reset();  // the Kubernetes node was deleted
  EXPECT_TRUE(PlanOwnership(n, cfg, kNow).actions.empty())
      << "a live reservation is left to the garbage collector (owner reference)";
  Res(&n)->terminating = true;  // which deletes it; our finalizer holds it
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].Kind(), plan::ReleaseReservationPod::kName);
  EXPECT_EQ(p.actions[0].As<plan::ReleaseReservationPod>().check, plan::ReleaseCheck::kNodeGone);
  EXPECT_EQ(PodOf(p.actions[0]).uid, n.pods[0].uid);
  std::erase(Res(&n)->finalizers, std::string(kFinalizer));
  EXPECT_TRUE(PlanOwnership(n, cfg, kNow).actions.empty());
}

TEST(PlanOwnership, GarbledAnnotationsAreNotTrusted) {
  config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(1)});
  Preempted(&n, kNow, cfg);
  n.k8s->annotations[kSignalledAtAnnotation] =
      "1:yesterday,x,:5,99999999999:1,1:17.,1:17.2x,1:-3.5";
  n.k8s->annotations[kLentAtAnnotation] = "soon";
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  // lent-at garbled: treated as now and written again (read as now on every plan, the node
  // would never return); signalled-at garbled: the job is signalled as if never signalled
  // (a second checkpoint signal is harmless, a skipped grace is not).
  EXPECT_THAT(Kinds(p),
              ElementsAre(plan::PatchNodeAnnotations::kName, plan::DrainSlurmNode::kName,
                          plan::SignalSlurmJobs::kName, plan::PatchNodeAnnotations::kName))
      << Dump(p);
  EXPECT_EQ(p.actions[0].event_reason, "LendRecordRepaired");
  EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kLentAtAnnotation), StrCat(ToUnix(kNow)));
  n = SlurmNode({Job(1)});
  Res(&n)->annotations[kJobsUpdatedAtAnnotation] = "later";
  Res(&n)->annotations[kClassWantedAnnotation] = "protected@x";
  p = PlanOwnership(n, cfg, kNow);
  EXPECT_THAT(Kinds(p), ElementsAre(plan::PatchPodAnnotations::kName)) << Dump(p);
}

// Times in the future (a typo, a clock far ahead, a hand edit) would never pass: a lent node
// would never return, a refused lend's guard never end, a grace never run out, a class
// change never come. Beyond the clock skew allowance they are garbled: read as now, written
// again with a Warning, and the node moves on from there.
TEST(PlanOwnership, FutureTimesAreGarbledAndWrittenAgain) {
  config::Config cfg = Cfg();
  const std::string future = StrCat(ToUnix(kNow + std::chrono::hours(24 * 365 * 10)));
  ManagedNode n = LentNode(kNow - minutes(20));
  n.k8s->annotations[kLentAtAnnotation] = future;
  n.k8s->annotations[kIdleSinceAnnotation] = future;
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  ASSERT_GE(p.actions.size(), 2u) << Dump(p);
  EXPECT_EQ(p.actions[0].event_reason, "BridgeRecordRepaired");
  EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
  EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kIdleSinceAnnotation), StrCat(ToUnix(kNow)));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr(future));
  EXPECT_EQ(p.actions[1].event_reason, "LendRecordRepaired");
  // Written again from the lend's drain (LentNode drained it 20 minutes ago), not from now.
  EXPECT_EQ(AnnotationsOf(p.actions[1]).set.at(kLentAtAnnotation), StrCat(n.slurm->reason_time));
  Log log;
  for (const auto& a : p.actions) Apply(a, &n, cfg, kNow, &log);
  // Once repaired, the node returns after the cool-down as any other idle lent node.
  p = PlanOwnership(n, cfg, kNow + cfg.lending.cooldown);
  EXPECT_THAT(Kinds(p), ElementsAre(plan::CreateReservationPod::kName)) << Dump(p);

  // Within the clock skew allowance a time is trusted (another replica's clock runs ahead).
  n = LentNode(kNow - minutes(20));
  n.k8s->annotations[kIdleSinceAnnotation] = StrCat(ToUnix(kNow + minutes(2)));
  p = PlanOwnership(n, cfg, kNow);
  EXPECT_TRUE(p.actions.empty()) << Dump(p);

  // A refused lend's guard: kept for the cool-down from now, not for ten years.
  n = SlurmNode({Job(1)}, cfg);
  n.k8s->annotations[kLendRefusedAtAnnotation] = future;
  p = PlanOwnership(n, cfg, kNow);
  ASSERT_FALSE(p.actions.empty());
  EXPECT_EQ(p.actions[0].event_reason, "BridgeRecordRepaired");
  EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kLendRefusedAtAnnotation), StrCat(ToUnix(kNow)));

  // A signal recorded in the future: the job's grace runs from now, and it is preempted
  // when that grace ends.
  n = SlurmNode({Job(1)});
  Preempted(&n, kNow - minutes(1), cfg);
  n.k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - minutes(1)));
  n.k8s->annotations[kSignalledAtAnnotation] = StrCat("1:", future);
  Drained(&n, "k8s-bridge: lent to ml/infer-0", kNow - minutes(1));
  p = PlanOwnership(n, cfg, kNow);
  ASSERT_FALSE(p.actions.empty()) << Dump(p);
  EXPECT_EQ(p.actions[0].event_reason, "BridgeRecordRepaired");
  EXPECT_EQ(AnnotationsOf(p.actions[0]).set.at(kSignalledAtAnnotation),
            StrCat("1:", FormatUnixMillis(kNow)));
  for (const auto& a : p.actions) Apply(a, &n, cfg, kNow, &log);
  p = PlanOwnership(n, cfg, kNow + cfg.lending.default_grace);
  EXPECT_THAT(Kinds(p), Contains(plan::PreemptSlurmJobs::kName)) << Dump(p);

  // A preemption recorded in the future does not count towards max_preemptions for ever.
  slurm::JobView j = Job(2);
  j.admin_comment = StrCat(kPreemptedToken, future, ",", future, ",", future, "@x");
  EXPECT_EQ(PreemptionsInWindow(j, cfg.lending, kNow), 0);
}

TEST(PlanOwnership, UnknownPriorityClassIsReplacedLazily) {
  config::Config cfg = Cfg();
  ManagedNode n = SlurmNode({Job(1)});
  Res(&n)->priority_class_name = "renamed";
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  ASSERT_THAT(Kinds(p), ElementsAre(plan::PatchPodAnnotations::kName)) << Dump(p);
  Log log;
  for (const auto& a : p.actions) Apply(a, &n, cfg, kNow, &log);
  p = PlanOwnership(n, cfg, kNow + cfg.lending.class_upgrade_delay);
  EXPECT_EQ(p.state, OwnerState::kSwapping) << Dump(p);
}

TEST(PlanOwnership, NodeWithoutGpusNeedsNoReservation) {
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.k8s->gpu_capacity = n.k8s->gpu_allocatable = 0;
  n.slurm->gpus.clear();
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_TRUE(p.actions.empty()) << Dump(p);
  EXPECT_THAT(p.explanation.back(), HasSubstr("no GPUs"));
}

// ---- Whole stories over time, with a crash after every possible action ------------------

// Drives one node through time: the planner + executor model, the kubelet, kube-scheduler
// and a preemptor that leaves after `pod_lifetime`. `crash_after` drops the rest of a plan
// after that many actions in total have run (the daemon was killed); the next round plans
// from what it then observes.
struct Story {
  config::Config cfg = Cfg();
  ManagedNode n;
  Clock::TimePoint now = kNow;
  Log log;
  int actions_run = 0;
  int crash_after = -1;
  std::vector<OwnerState> states;
  bool reservation_killed = false;  // the kubelet killed one of ours at its deadline
  // The device lane (gpu_sharing): holds every GPU of the node once the node lane asks.
  bool device_lane = false;
  std::vector<plan::Handover> handovers;

  void World() {
    RunKubelet(&n, now);
    Scheduler(&n);
    for (const GpuPod& p : n.pods) reservation_killed |= p.reservation && p.phase == "Failed";
  }
  void Round() {
    World();
    OwnershipPlan p = PlanOwnership(n, cfg, now);
    if (states.empty() || states.back() != p.state) states.push_back(p.state);
    if (handovers.empty() || handovers.back() != p.handover) handovers.push_back(p.handover);
    if (device_lane && p.handover == plan::Handover::kHoldsWanted) n.gpu_sharing.all_held = true;
    for (const Action& a : p.actions) {
      if (actions_run == crash_after) {
        ++actions_run;  // crash once; the restarted daemon goes on
        break;
      }
      ++actions_run;
      Apply(a, &n, cfg, now, &log);
      CheckInvariants(n, StrCat("after ", plan::ToString(a)));
    }
    CheckInvariants(n, StrCat("at +", ToUnix(now) - ToUnix(kNow), "s"));
  }
  void RunFor(Clock::Duration d, Clock::Duration step = seconds(5)) {
    for (Clock::TimePoint end = now + d; now < end; now += step) Round();
  }
  // The bridge is away: the world goes on, nothing is planned.
  void Outage(Clock::Duration d, Clock::Duration step = seconds(5)) {
    for (Clock::TimePoint end = now + d; now < end; now += step) {
      World();
      CheckInvariants(n, StrCat("during an outage at +", ToUnix(now) - ToUnix(kNow), "s"));
    }
  }
  bool PodRunning(std::string_view name) const {
    for (const GpuPod& p : n.pods) {
      if (p.name == name && p.phase == "Running") return true;
    }
    return false;
  }
  void RemovePod(std::string_view name) {
    std::erase_if(n.pods, [&](const GpuPod& p) { return p.name == name; });
  }
};

// Slurm-owned node with two preemptible jobs -> preempted for an inference pod -> the pod
// runs, leaves -> cool-down -> back to Slurm. Returns the end state for comparison.
Story LendAndReturn(int crash_after) {
  Story s;
  s.crash_after = crash_after;
  s.n = SlurmNode({Job(1), Job(2)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg);
  s.RunFor(seconds(90));  // grace 60s, requeue, release, pod binds
  EXPECT_TRUE(s.PodRunning("infer-0")) << "crash_after=" << crash_after;
  s.RunFor(minutes(5));
  s.RemovePod("infer-0");
  s.RunFor(minutes(6));  // cool-down 2m, min lend 5m: returns
  return s;
}

TEST(Story, LendAndReturnCycle) {
  Story s = LendAndReturn(-1);
  EXPECT_THAT(s.states,
              ElementsAre(OwnerState::kSlurm, OwnerState::kLending, OwnerState::kKubernetes,
                          OwnerState::kReturning, OwnerState::kSlurm));
  EXPECT_EQ(s.log.signals, (std::map<uint32_t, int>{{1, 1}, {2, 1}}));
  EXPECT_EQ(s.log.preemptions, (std::map<uint32_t, int>{{1, 1}, {2, 1}}));
  EXPECT_THAT(s.log.preemptors, ElementsAre("ml/infer-0"));
  ASSERT_EQ(s.log.requeued.size(), 2u);
  // Signalled at +10 s, 60 s of grace to the millisecond: preempted in the 5 s round at
  // +70, when it ends.
  EXPECT_THAT(PreemptionTimes(s.log.requeued[0].admin_comment), ElementsAre(ToUnix(kNow) + 70));
  EXPECT_THAT(s.log.requeued[0].admin_comment, HasSubstr("@ml/infer-0"));
  EXPECT_FALSE(s.n.slurm->drain);
  ASSERT_NE(Res(&s.n), nullptr);
  EXPECT_EQ(Res(&s.n)->phase, "Running");
  EXPECT_EQ(Res(&s.n)->priority_class_name, "slurm-idle");
  EXPECT_TRUE(s.n.k8s->annotations.empty());
  EXPECT_TRUE(s.n.k8s->taints.empty());
  EXPECT_TRUE(PlanOwnership(s.n, s.cfg, s.now).actions.empty());
}

TEST(Story, CrashAfterEveryActionResumesTheLend) {
  const int total = LendAndReturn(-1).actions_run;
  ASSERT_GT(total, 10);
  for (int crash = 0; crash < total; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s = LendAndReturn(crash);
    EXPECT_FALSE(s.n.slurm->drain);
    ASSERT_NE(Res(&s.n), nullptr);
    EXPECT_EQ(Res(&s.n)->phase, "Running");
    EXPECT_TRUE(s.n.k8s->annotations.empty());
    EXPECT_TRUE(s.n.k8s->taints.empty());
    // At least once, at most twice (a crash between signal and record signals again).
    for (uint32_t id : {1u, 2u}) {
      EXPECT_GE(s.log.signals[id], 1);
      EXPECT_LE(s.log.signals[id], 2);
      EXPECT_GE(s.log.preemptions[id], 1);
    }
    EXPECT_TRUE(PlanOwnership(s.n, s.cfg, s.now).actions.empty());
  }
}

// An idle node gets a non-preemptible job -> the reservation is swapped to protected ->
// later the job ends -> the class goes down after the downgrade delay.
Story SwapUpAndDown(int crash_after) {
  Story s;
  s.crash_after = crash_after;
  s.n = SlurmNode();
  s.RunFor(seconds(10));
  s.n.jobs = {Job(5, false)};
  s.RunFor(seconds(30));
  EXPECT_EQ(Res(&s.n)->priority_class_name, "slurm-protected") << "crash_after=" << crash_after;
  s.n.jobs.clear();
  s.RunFor(minutes(7));
  return s;
}

TEST(Story, SwapToProtectedAndBack) {
  Story s = SwapUpAndDown(-1);
  EXPECT_THAT(s.states, ElementsAre(OwnerState::kSlurm, OwnerState::kSwapping, OwnerState::kSlurm,
                                    OwnerState::kSwapping, OwnerState::kSlurm));
  ASSERT_NE(Res(&s.n), nullptr);
  EXPECT_EQ(Res(&s.n)->priority_class_name, "slurm-idle");
  EXPECT_TRUE(s.n.k8s->taints.empty());
  EXPECT_FALSE(s.n.slurm->drain);
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
}

TEST(Story, CrashAfterEveryActionResumesTheSwap) {
  const int total = SwapUpAndDown(-1).actions_run;
  ASSERT_GT(total, 8);
  for (int crash = 0; crash < total; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s = SwapUpAndDown(crash);
    ASSERT_NE(Res(&s.n), nullptr);
    EXPECT_EQ(Res(&s.n)->priority_class_name, "slurm-idle");
    EXPECT_TRUE(s.n.k8s->taints.empty());
    EXPECT_FALSE(s.n.slurm->drain);
    EXPECT_TRUE(s.log.preemptions.empty());
  }
}

// kubectl delete of a reservation (no pod preempted it) while a non-preemptible job runs:
// a lend all the same, but no signal, no requeue; the busy taint guards the node past the
// reservation's kill deadline; when the job ends the lend completes.
TEST(Story, ProtectedJobIsWaitedFor) {
  Story s;
  s.n = SlurmNode({Job(1, false)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg, /*preemptor=*/"");
  s.RunFor(ReservationGrace(s.cfg.lending) + minutes(1));  // past its kill deadline: Failed
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
  EXPECT_TRUE(s.n.slurm->drain);
  EXPECT_TRUE(HasTaint(s.n, kBusyTaintKey));
  GpuPod p = K8sPod("infer-0", "Pending", "");
  p.nominated_node_name = "node1";
  s.n.nominated_pods.push_back(p);  // a pod waits for the node now
  s.RunFor(seconds(30));
  EXPECT_FALSE(s.PodRunning("infer-0"));
  s.n.jobs.clear();  // the job ends
  s.RunFor(seconds(30));
  EXPECT_TRUE(s.PodRunning("infer-0"));
  EXPECT_FALSE(HasTaint(s.n, kBusyTaintKey));
  EXPECT_EQ(s.n.k8s->annotations.count(kLendBlockedAnnotation), 0u);
}

// A pod above the protected class (system-cluster-critical is 2e9) preempts the reservation
// of a node running a non-preemptible job: not a lend. The node is guarded, never drained,
// the job never signalled; the reservation is replaced and the guard stays for the
// cool-down, so the same pod does not preempt the new one at once. A crash after any action
// changes nothing.
TEST(Story, APodAboveTheProtectedClassNeverTakesProtectedWork) {
  for (int crash = -1; crash < 8; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s;
    s.crash_after = crash;
    s.n = SlurmNode({Job(1, false)});
    s.RunFor(seconds(10));
    Preempted(&s.n, s.now, s.cfg, "critical-0");
    s.n.nominated_pods.back().priority = 2'000'000'000;
    s.RunFor(seconds(60));
    EXPECT_TRUE(s.log.signals.empty());
    EXPECT_TRUE(s.log.preemptions.empty());
    EXPECT_FALSE(s.n.slurm->drain);
    EXPECT_FALSE(s.PodRunning("critical-0"));
    ASSERT_NE(Res(&s.n), nullptr);
    EXPECT_FALSE(Res(&s.n)->terminating);
    EXPECT_EQ(Res(&s.n)->priority_class_name, "slurm-protected");
    EXPECT_TRUE(HasTaint(s.n, kSwapTaintKey)) << "the guard stays for the cool-down";
    EXPECT_EQ(s.n.k8s->annotations.count(kLentAtAnnotation), 0u);
    EXPECT_EQ(s.n.k8s->annotations.count(kLendRefusedAtAnnotation), 1u);
    s.RunFor(s.cfg.lending.cooldown);
    EXPECT_FALSE(HasTaint(s.n, kSwapTaintKey));
    EXPECT_EQ(s.n.k8s->annotations.count(kLendRefusedAtAnnotation), 0u);
    EXPECT_FALSE(s.PodRunning("critical-0"));  // the reservation holds the GPUs again
    EXPECT_EQ(s.n.jobs.size(), 1u);
  }
}

// lending.inference_threshold is enforced: a pod below it that preempts the reservation of
// a node with preemptible jobs (kube-scheduler lets any higher priority preempt) takes
// nothing. An idle node is lent to it: nothing is preempted there.
TEST(Story, APodBelowTheInferenceThresholdTakesNoJobs) {
  Story s;
  s.n = SlurmNode({Job(1)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg, "batch-0");
  s.n.nominated_pods.back().priority = s.cfg.lending.inference_threshold - 1;
  s.RunFor(seconds(60));
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
  EXPECT_FALSE(s.n.slurm->drain);
  EXPECT_FALSE(s.PodRunning("batch-0"));
  EXPECT_TRUE(HasTaint(s.n, kSwapTaintKey));

  Story idle;
  idle.n = SlurmNode({});
  idle.RunFor(seconds(10));
  Preempted(&idle.n, idle.now, idle.cfg, "batch-0");
  idle.n.nominated_pods.back().priority = idle.cfg.lending.inference_threshold - 1;
  idle.RunFor(seconds(60));
  EXPECT_TRUE(idle.PodRunning("batch-0"));
}

// Guaranteed quotas: a pod that would run beyond its tenant's guarantee borrows, and borrows
// only idle GPUs. When it preempts the reservation of a node with preemptible jobs, the lend
// is refused (nothing signalled, the reservation back) and the refusal names the quota; an
// idle node is lent to it.
TEST(Story, APodBeyondItsTenantsGuaranteeTakesNoJobsOnlyIdleNodes) {
  const std::string why =
      "tenant team-b uses 16 of its 16 GPUs guaranteed: this pod's 8 GPUs "
      "would be borrowed";
  Story s;
  s.n = SlurmNode({Job(1)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg, "serve-3");
  s.n.borrowing_nominated = {{"ml/serve-3", why}};
  s.RunFor(seconds(60));
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
  EXPECT_FALSE(s.n.slurm->drain);
  EXPECT_FALSE(s.PodRunning("serve-3"));
  ASSERT_NE(Res(&s.n), nullptr);
  EXPECT_FALSE(Res(&s.n)->terminating) << "a new reservation holds the GPUs again";
  EXPECT_EQ(s.n.k8s->annotations.count(kLendRefusedAtAnnotation), 1u);

  // The refusal says why, in the planner's words.
  ManagedNode n = SlurmNode({Job(1)});
  Preempted(&n, kNow, Cfg(), "serve-3");
  n.borrowing_nominated = {{"ml/serve-3", why}};
  OwnershipPlan p = PlanOwnership(n, Cfg(), kNow);
  bool named = false;
  for (const Action& a : p.actions) {
    named |= a.event_message.find(why + ", and borrowed GPUs come only from idle nodes (quotas)") !=
             std::string::npos;
  }
  EXPECT_TRUE(named) << Dump(p);

  Story idle;
  idle.n = SlurmNode({});
  idle.RunFor(seconds(10));
  Preempted(&idle.n, idle.now, idle.cfg, "serve-3");
  idle.n.borrowing_nominated = {{"ml/serve-3", why}};
  idle.RunFor(seconds(60));
  EXPECT_TRUE(idle.PodRunning("serve-3"));
}

// A job that ignores its signal and a Slurm that refuses the requeue: the planner asks
// again every round. The busy taint goes on as soon as the job outlives its grace (not when
// the reservation's kill deadline nears), and keeps the preemptor off the node past the kill.
TEST(Story, RefusedRequeueNeverDoubleBooks) {
  Story s;
  s.n = SlurmNode({Job(1)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg);
  const Clock::TimePoint deleted = s.now;
  std::optional<Clock::TimePoint> tainted;
  int attempts = 0;
  for (Clock::TimePoint end = deleted + ReservationGrace(s.cfg.lending) + minutes(5); s.now < end;
       s.now += seconds(5)) {
    RunKubelet(&s.n, s.now);
    Scheduler(&s.n);
    OwnershipPlan p = PlanOwnership(s.n, s.cfg, s.now);
    for (const Action& a : p.actions) {
      if (a.Kind() == plan::PreemptSlurmJobs::kName) {
        ++attempts;  // Slurm refuses: nothing changes
        continue;
      }
      Apply(a, &s.n, s.cfg, s.now, &s.log);
    }
    if (!tainted && HasTaint(s.n, kBusyTaintKey)) tainted = s.now;
    CheckInvariants(s.n, StrCat("at ", ToUnix(s.now)));
  }
  EXPECT_GT(attempts, 100);
  // Signalled at the deletion (the first round), 60 s grace to the millisecond: tainted in
  // the first round (every 5 s) at or after it ends.
  ASSERT_TRUE(tainted.has_value());
  EXPECT_GE(*tainted, deleted + s.cfg.lending.default_grace);
  EXPECT_LT(*tainted, deleted + s.cfg.lending.default_grace + seconds(5));
  EXPECT_EQ(Res(&s.n)->phase, "Failed") << "the kubelet killed the reservation meanwhile";
  EXPECT_TRUE(HasTaint(s.n, kBusyTaintKey));
  EXPECT_FALSE(s.PodRunning("infer-0"));
}

// The bridge is away from the moment the reservation is deleted (a crash loop, failovers,
// an apiserver outage) for all of lending.outage_allowance. The lend it then runs still
// ends before the kubelet's kill deadline, though the job asks for the longest grace: the
// reservation counts the GPUs until it is released, and the preemptor binds only then.
// (The model's Slurm requeues at once; release_timeout is a real Slurm's allowance.)
TEST(Story, AnOutageWithinTheAllowanceNeverReachesTheKillDeadline) {
  Story s;
  slurm::JobView j = Job(1);
  j.signal = slurm::SignalSpec{.signal = 10, .seconds = 3600};  // capped at max_grace
  s.n = SlurmNode({j});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg);
  s.Outage(s.cfg.lending.outage_allowance);
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_FALSE(s.PodRunning("infer-0"));
  s.RunFor(s.cfg.lending.max_grace - seconds(5));
  EXPECT_EQ(s.log.signals[1], 1);
  EXPECT_TRUE(s.log.preemptions.empty()) << "the job gets its whole grace";
  s.RunFor(seconds(30));
  EXPECT_EQ(s.log.preemptions[1], 1);
  EXPECT_TRUE(s.PodRunning("infer-0"));
  EXPECT_FALSE(s.reservation_killed);
}

// A batch script that does not trap the checkpoint signal dies of it (FAILED): the job
// was preempted all the same and is requeued, never lost (invariant 2). The one that
// traps it is requeued after its grace as usual. A crash after any action changes nothing.
TEST(Story, AJobKilledByTheCheckpointSignalIsRequeuedNotLost) {
  for (int crash = -1; crash < 12; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s;
    s.crash_after = crash;
    s.log.untrapped = {1};
    s.n = SlurmNode({Job(1), Job(2)});
    s.RunFor(seconds(10));
    Preempted(&s.n, s.now, s.cfg);
    s.RunFor(seconds(90));
    EXPECT_TRUE(s.PodRunning("infer-0"));
    EXPECT_EQ(s.log.preemptions[1], 1) << "the job that died of the signal is requeued once";
    EXPECT_EQ(s.log.preemptions[2], 1);
    ASSERT_EQ(s.log.requeued.size(), 2u);
    EXPECT_THAT(s.log.requeued[0].admin_comment + s.log.requeued[1].admin_comment,
                HasSubstr("@ml/infer-0"));
    EXPECT_TRUE(s.n.ended_jobs.empty());
    EXPECT_EQ(s.n.k8s->annotations.count(kSignalledAtAnnotation), 0u);
  }
}

TEST(PlanOwnership, EndedJobsAreRequeuedOnlyForTheRunWeSignalled) {
  const config::Config cfg = Cfg();
  ManagedNode base = SlurmNode({}, cfg);
  Preempted(&base, kNow - seconds(20), cfg);
  Drained(&base, "k8s-bridge: lent to ml/infer-0", kNow - seconds(20));
  base.k8s->annotations[kLentAtAnnotation] = StrCat(ToUnix(kNow - seconds(20)));
  base.k8s->annotations[kLentToAnnotation] = "ml/infer-0";
  base.k8s->annotations[kSignalledAtAnnotation] = StrCat("7:", ToUnix(kNow - seconds(15)));
  auto ended = [&](slurm::JobState state, int64_t start_ago, int64_t end_ago, int sig = 0) {
    slurm::JobView j = Job(7);
    j.state = state;
    j.start_time = ToUnix(kNow - seconds(start_ago));
    j.end_time = ToUnix(kNow - seconds(end_ago));
    j.exit_signal = sig;
    return j;
  };
  auto requeues = [&](const ManagedNode& n) {
    OwnershipPlan p = PlanOwnership(n, cfg, kNow);
    for (const Action& a : p.actions) {
      if (const auto* o = a.Get<plan::PreemptSlurmJobs>(); o && o->ended_after_signal) return true;
    }
    return false;
  };
  {  // died of the signal: requeued, with a Warning naming why, before the release
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kFailed, 600, 10, 10)};
    OwnershipPlan p = PlanOwnership(n, cfg, kNow);
    ASSERT_TRUE(requeues(n)) << Dump(p);
    const Action* a = FindAction(p, plan::PreemptSlurmJobs::kName);
    EXPECT_EQ(a->event_reason, "EndedJobRequeued");
    EXPECT_EQ(a->event_type, plan::EventType::kWarning);
    EXPECT_THAT(a->event_message, HasSubstr("ended FAILED after the checkpoint signal"));
    EXPECT_EQ(a->As<plan::PreemptSlurmJobs>().at_unix, ToUnix(kNow - seconds(15)));
    const Action* release = FindAction(p, plan::ReleaseReservationPod::kName);
    ASSERT_NE(release, nullptr) << Dump(p);
    EXPECT_LT(a, release) << "requeue before the release";
  }
  {  // checkpointed and exited 0 during the grace: requeued too (as Slurm's own preemption)
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kComplete, 600, 5)};
    EXPECT_TRUE(requeues(n));
  }
  {  // its user cancelled it: left cancelled
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kCancelled, 600, 5)};
    OwnershipPlan p = PlanOwnership(n, cfg, kNow);
    EXPECT_FALSE(requeues(n));
    EXPECT_THAT(Dump(p), HasSubstr("cancelled by its user"));
  }
  {  // a later run (requeued meanwhile, started again, ended): not ours to requeue
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kFailed, 10, 5, 10)};
    EXPECT_FALSE(requeues(n));
  }
  {  // ended before the signal: not ours
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kFailed, 600, 100)};
    EXPECT_FALSE(requeues(n));
  }
  {  // --no-requeue: nothing to do, said so
    ManagedNode n = base;
    n.ended_jobs = {ended(slurm::JobState::kFailed, 600, 10, 10)};
    n.ended_jobs[0].requeue = false;
    EXPECT_FALSE(requeues(n));
  }
  {  // not in the annotation (the daemon died between signal and record), but killed by
     // the checkpoint signal during the lend: requeued
    ManagedNode n = base;
    n.k8s->annotations.erase(kSignalledAtAnnotation);
    n.ended_jobs = {ended(slurm::JobState::kFailed, 600, 10, 10)};
    EXPECT_TRUE(requeues(n));
    n.ended_jobs[0].exit_signal = 9;  // killed by something else
    EXPECT_FALSE(requeues(n));
  }
  {  // an ended job on a node that is not being lent: nothing
    ManagedNode n = SlurmNode({}, cfg);
    n.ended_jobs = {ended(slurm::JobState::kFailed, 600, 10, 10)};
    EXPECT_FALSE(requeues(n));
  }
}

// Anti-thrash: a job preempted more than max_preemptions times in the window makes its
// node protected, promptly.
// Quotas take a lent node back for a Slurm tenant below its guarantee: the node is tainted,
// the borrowed pod evicted, and the node returns without the cool-down or the minimum lend
// time; a pod nominated meanwhile does not land (the taint); the taint stays until the job
// the reclaim serves no longer waits.
Story ReclaimForAGuarantee(int crash_after) {
  Story s;
  s.crash_after = crash_after;
  s.n = LentNode(kNow - minutes(1));  // lent a minute ago: min_lend_time has not passed
  GpuPod borrowed = K8sPod("infer-0");
  borrowed.uid = "uid-infer-0";
  s.n.pods = {borrowed};
  s.n.reclaim = inventory::NodeReclaim{.tenant = "a",
                                       .job_id = 7,
                                       .victims = {"ml/infer-0"},
                                       .why = "tenant a uses 0 of its 8 GPUs guaranteed"};
  GpuPod late = K8sPod("infer-1", "Pending", "");
  late.nominated_node_name = "node1";
  s.n.nominated_pods = {late};
  s.RunFor(seconds(30));
  return s;
}

TEST(Story, AReclaimEvictsTheBorrowedPodAndReturnsTheNodeAtOnce) {
  Story s = ReclaimForAGuarantee(-1);
  EXPECT_EQ(s.log.evictions, (std::map<std::string, int>{{"ml/infer-0", 1}}));
  EXPECT_THAT(s.states,
              ElementsAre(OwnerState::kKubernetes, OwnerState::kReturning, OwnerState::kSlurm));
  EXPECT_FALSE(s.n.slurm->drain) << "returned within 30 s, no cool-down";
  ASSERT_NE(Res(&s.n), nullptr);
  EXPECT_EQ(Res(&s.n)->phase, "Running");
  EXPECT_FALSE(s.PodRunning("infer-1")) << "the nominated pod was kept off by the taint";
  EXPECT_TRUE(HasTaint(s.n, kReclaimTaintKey)) << "kept while the job still waits";
  EXPECT_TRUE(PlanOwnership(s.n, s.cfg, s.now).actions.empty());

  s.n.reclaim.reset();  // the job runs
  s.RunFor(seconds(5));
  EXPECT_FALSE(HasTaint(s.n, kReclaimTaintKey));
  EXPECT_TRUE(PlanOwnership(s.n, s.cfg, s.now).actions.empty());
}

TEST(Story, CrashAfterEveryActionResumesTheReclaim) {
  const int total = ReclaimForAGuarantee(-1).actions_run;
  ASSERT_GT(total, 3);
  for (int crash = 0; crash < total; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s = ReclaimForAGuarantee(crash);
    EXPECT_FALSE(s.n.slurm->drain);
    EXPECT_EQ(s.log.evictions.size(), 1u);
    ASSERT_NE(Res(&s.n), nullptr);
    EXPECT_EQ(Res(&s.n)->phase, "Running");
    EXPECT_FALSE(s.PodRunning("infer-1"));
  }
}

TEST(PlanOwnership, AReclaimWaitsForAPodItDidNotPlanForAndACancelledOneDropsTheTaint) {
  config::Config cfg = Cfg();
  ManagedNode n = LentNode(kNow - minutes(1));
  n.pods = {K8sPod("infer-0"), K8sPod("newcomer")};
  n.reclaim = inventory::NodeReclaim{.tenant = "a", .job_id = 7, .victims = {"ml/infer-0"}};
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kKubernetes);
  std::vector<std::string_view> kinds;
  for (const Action& a : p.actions) kinds.push_back(a.Kind());
  EXPECT_THAT(kinds, ::testing::Contains(plan::SetNodeTaint::kName));
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), plan::EvictPod::kName), 1)
      << "only the planned victim: " << Dump(p);
  EXPECT_THAT(kinds, ::testing::Not(::testing::Contains(plan::CreateReservationPod::kName)));
  EXPECT_THAT(Dump(p), HasSubstr("ml/newcomer came after the reclaim was planned"));

  // The reclaim is called off (the job started elsewhere): the taint goes, the node stays
  // lent, the cool-down applies again.
  n.reclaim.reset();
  n.k8s->taints.push_back({kReclaimTaintKey, "", "NoSchedule"});
  n.pods = {};
  p = PlanOwnership(n, cfg, kNow);
  kinds.clear();
  for (const Action& a : p.actions) kinds.push_back(a.Kind());
  EXPECT_THAT(kinds, ::testing::Contains(plan::RemoveNodeTaint::kName));
  EXPECT_THAT(kinds, ::testing::Not(::testing::Contains(plan::CreateReservationPod::kName)));
}

TEST(Story, AntiThrashProtectsARepeatVictim) {
  config::Config cfg = Cfg();
  cfg.lending.max_preemptions = 1;
  slurm::JobView j = Job(1);
  j.admin_comment = RecordPreemption(j.admin_comment, ToUnix(kNow - minutes(30)), "a", cfg.lending);
  ManagedNode n = SlurmNode({j}, cfg);
  EXPECT_EQ(Res(&n)->priority_class_name, "slurm-preemptible");
  EXPECT_TRUE(PlanOwnership(n, cfg, kNow).actions.empty());
  n.jobs[0].admin_comment =
      RecordPreemption(n.jobs[0].admin_comment, ToUnix(kNow - minutes(5)), "b", cfg.lending);
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kSwapping) << Dump(p);
  EXPECT_THAT(FindAction(p, plan::DeleteReservationPod::kName)->event_message,
              HasSubstr("anti-thrash"));
}

// Batching: job churn on a node produces at most one reservation write per interval.
TEST(Story, JobListUpdatesAreBatched) {
  Story s;
  s.n = SlurmNode({Job(1)});
  int writes = 0;
  uint32_t next = 100;
  for (Clock::TimePoint end = s.now + minutes(10); s.now < end; s.now += seconds(1)) {
    s.n.jobs.push_back(Job(next++));                            // a job starts every second...
    if (s.n.jobs.size() > 8) s.n.jobs.erase(s.n.jobs.begin());  // ...and one ends
    OwnershipPlan p = PlanOwnership(s.n, s.cfg, s.now);
    for (const Action& a : p.actions) {
      writes += a.Kind() == plan::PatchPodAnnotations::kName;
      EXPECT_TRUE(a.Kind() != plan::PatchPodAnnotations::kName || a.quiet)
          << "a job-list refresh records no Event: " << plan::ToString(a);
      Apply(a, &s.n, s.cfg, s.now, &s.log);
    }
  }
  // 600 job starts in 10 minutes, a 60s interval: at most 10 (+1 for the first) writes.
  EXPECT_LE(writes, 11);
  EXPECT_GE(writes, 9);
}

// ---- Switching modes: a node eligible for GPU sharing is handed over to the device lane ----

// What the node lane leaves on a node it handed over: its record of the handover, nothing else.
void ExpectHandedOver(const Story& s) {
  const OwnershipPlan p = PlanOwnership(s.n, s.cfg, s.now);
  EXPECT_EQ(p.state, OwnerState::kGpuShared) << Dump(p);
  EXPECT_EQ(p.handover, plan::Handover::kHandedOver);
  EXPECT_TRUE(p.actions.empty()) << "converged" << Dump(p);
  EXPECT_EQ(Res(const_cast<ManagedNode*>(&s.n)), nullptr) << "the reservation is gone";
  EXPECT_FALSE(s.n.slurm->drain);
  EXPECT_THAT(s.n.k8s->annotations,
              ElementsAre(::testing::Pair(kGpuSharedSinceAnnotation, ::testing::_)));
  EXPECT_TRUE(s.n.k8s->taints.empty());
  EXPECT_FALSE(s.n.k8s->labels.count(kSwapGuardLabel));
}

TEST(Handover, ACleanNodeIsHandedOverAtOnceWhateverRunsOnIt) {
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.gpu_sharing.eligible = true;
  n.jobs = {Job(1)};
  n.pods = {K8sPod("infer-0")};  // a pod on GPUs the device lane lent: no lend
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kGpuShared) << Dump(p);
  EXPECT_EQ(p.handover, plan::Handover::kHandedOver);
  ASSERT_EQ(Kinds(p), std::vector<std::string_view>{plan::PatchNodeAnnotations::kName});
  EXPECT_EQ(p.actions[0].event_reason, "GpuSharingStarted");
  Log log;
  Converge(&n, cfg, kNow, &log);
  EXPECT_EQ(n.k8s->annotations.at(kGpuSharedSinceAnnotation), StrCat(ToUnix(kNow)));
  EXPECT_TRUE(log.signals.empty());
}

TEST(Handover, ASlurmNodeWaitsForTheHoldsThenRetiresItsReservationWithoutALend) {
  Story s;
  s.n = SlurmNode({Job(1)});
  s.n.gpu_sharing.eligible = true;
  OwnershipPlan p = PlanOwnership(s.n, s.cfg, s.now);
  EXPECT_EQ(p.state, OwnerState::kSlurm) << Dump(p);
  EXPECT_EQ(p.handover, plan::Handover::kHoldsWanted);
  EXPECT_THAT(p.handover_why, HasSubstr("holds every GPU"));
  EXPECT_TRUE(p.actions.empty()) << "nothing goes before the holds" << Dump(p);

  s.device_lane = true;
  s.RunFor(seconds(30));
  EXPECT_THAT(s.handovers, ElementsAre(plan::Handover::kHoldsWanted, plan::Handover::kHandedOver));
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
  ExpectHandedOver(s);
}

TEST(Handover, ALendNotStartedIsRefusedAndItsReservationRetired) {
  Story s;
  s.n = SlurmNode({Job(1)});
  s.n.gpu_sharing.eligible = true;
  Preempted(&s.n, s.now, s.cfg);
  s.device_lane = true;
  s.RunFor(seconds(30));
  EXPECT_EQ(s.states.front(), OwnerState::kSwapping);
  EXPECT_TRUE(s.log.signals.empty());
  EXPECT_TRUE(s.log.preemptions.empty());
  EXPECT_FALSE(s.PodRunning("infer-0")) << "the preemptor waits for a give of the device lane";
  ExpectHandedOver(s);
}

TEST(Handover, ASwapInFlightEndsWithoutASuccessor) {
  Story s;
  s.n = SlurmNode({Job(1)});
  s.n.jobs.push_back(Job(2, false));  // the reservation is swapped to protected
  s.Round();
  ASSERT_EQ(s.states.back(), OwnerState::kSwapping);
  s.n.gpu_sharing.eligible = true;
  s.device_lane = true;
  s.RunFor(seconds(30));
  EXPECT_TRUE(s.log.preemptions.empty());
  ExpectHandedOver(s);
}

// Lent whole, the node becomes eligible in the middle of its lend: the lend completes, the
// pod runs until it leaves, the node returns on its cool-down, and only then is its
// reservation retired and the node handed over.
Story LentThenEligible(int crash_after) {
  Story s;
  s.crash_after = crash_after;
  s.n = SlurmNode({Job(1), Job(2)});
  s.RunFor(seconds(10));
  Preempted(&s.n, s.now, s.cfg);
  s.RunFor(seconds(20));  // signalled, lent-at recorded
  s.n.gpu_sharing.eligible = true;
  s.device_lane = true;
  s.RunFor(seconds(70));  // the grace ends, requeue, release, the pod binds
  EXPECT_TRUE(s.PodRunning("infer-0")) << "crash_after=" << crash_after;
  s.RunFor(minutes(5));
  s.RemovePod("infer-0");
  s.RunFor(minutes(6));  // cool-down 2m, min lend 5m: returns, then retires
  return s;
}

TEST(Handover, ALentNodeReturnsOnItsCoolDownThenIsHandedOver) {
  Story s = LentThenEligible(-1);
  EXPECT_THAT(s.states,
              ElementsAre(OwnerState::kSlurm, OwnerState::kLending, OwnerState::kKubernetes,
                          OwnerState::kReturning, OwnerState::kSlurm, OwnerState::kSwapping,
                          OwnerState::kGpuShared));
  EXPECT_THAT(s.handovers, ElementsAre(plan::Handover::kNodeLane, plan::Handover::kWinding,
                                       plan::Handover::kHoldsWanted, plan::Handover::kHandedOver));
  EXPECT_EQ(s.log.preemptions, (std::map<uint32_t, int>{{1, 1}, {2, 1}}));
  ExpectHandedOver(s);
}

TEST(Handover, CrashAfterEveryActionStillHandsOver) {
  const int total = LentThenEligible(-1).actions_run;
  ASSERT_GT(total, 10);
  for (int crash = 0; crash < total; ++crash) {
    SCOPED_TRACE(StrCat("crash after action ", crash));
    Story s = LentThenEligible(crash);
    ExpectHandedOver(s);
  }
}

TEST(Handover, GuardLeftWithoutAReservationStaysUntilEveryGpuIsHeld) {
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.jobs = {Job(1)};
  n.gpu_sharing.eligible = true;
  n.k8s->labels[kSwapGuardLabel] = "true";
  n.k8s->taints.push_back({kSwapTaintKey, "", "NoSchedule"});
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.handover, plan::Handover::kHoldsWanted);
  EXPECT_TRUE(p.actions.empty()) << "no reservation is created, the guard stays" << Dump(p);
  n.gpu_sharing.all_held = true;
  Log log;
  Converge(&n, cfg, kNow, &log);
  EXPECT_EQ(PlanOwnership(n, cfg, kNow).state, OwnerState::kGpuShared);
  EXPECT_TRUE(n.k8s->taints.empty());
  EXPECT_FALSE(n.k8s->labels.count(kSwapGuardLabel));
}

TEST(Handover, ALeavingNodeStaysTheDeviceLanesThenTheNodeLaneTakesItAsNew) {
  config::Config cfg = Cfg();
  ManagedNode n = BareNode();
  n.jobs = {Job(1)};
  n.k8s->annotations[kGpuSharedSinceAnnotation] = "1690000000";
  n.gpu_sharing.leaving = true;
  n.gpu_sharing.why = "placeholder 9 runs";
  OwnershipPlan p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kGpuShared);
  EXPECT_TRUE(p.actions.empty());
  EXPECT_THAT(Dump(p), HasSubstr("placeholder 9 runs"));

  n.gpu_sharing = {};
  p = PlanOwnership(n, cfg, kNow);
  EXPECT_EQ(p.state, OwnerState::kSlurm);
  EXPECT_EQ(p.handover, plan::Handover::kNodeLane);
  EXPECT_EQ(Kinds(p), (std::vector<std::string_view>{plan::PatchNodeAnnotations::kName,
                                                     plan::CreateReservationPod::kName}));
  EXPECT_EQ(p.actions[0].event_reason, "GpuSharingEnded");
  Log log;
  Converge(&n, cfg, kNow, &log);
}

}  // namespace
}  // namespace skb::ownership

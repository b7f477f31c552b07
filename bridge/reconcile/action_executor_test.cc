// SPDX-License-Identifier: Apache-2.0
// The action executor against in-memory Slurm and Kubernetes (FakeSlurmClient,
// FakeKubeClient): each action's idempotency, its re-check at the source, and how an error
// maps to a retry (no Event) or a Warning Event. What only the real slurmctld and
// apiserver show is tested on the testbed (tests/integration/reconcile).
#include "bridge/reconcile/action_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <mutex>
#include <vector>

#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/fake_kube_client.h"
#include "src/base/retry.h"
#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
namespace {

using plan::Action;
using plan::Cause;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const Clock::TimePoint kStart = Clock::TimePoint{} + std::chrono::hours(24 * 365 * 50);

struct Recorded {
  std::string object;
  k8s::EventType type;
  std::string reason;
  std::string message;
};

class RecordingEvents final : public k8s::EventRecorder {
 public:
  void Record(const k8s::ObjectReference& object, k8s::EventType type, const std::string& reason,
              const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({StrCat(object.kind, "/", object.name), type, reason, message});
  }
  std::vector<Recorded> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<std::string> reasons() const {
    std::vector<std::string> out;
    for (const auto& e : events()) out.push_back(e.reason);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Recorded> events_;
};

slurm::NodeView IdleNode(std::string name) {
  slurm::NodeView n;
  n.name = std::move(name);
  n.base_state = skb::slurm::NodeBaseState::kIdle;
  return n;
}

slurm::JobView Running(uint32_t id, std::string node) {
  slurm::JobView j;
  j.job_id = id;
  j.state = skb::slurm::JobState::kRunning;
  j.requeue = true;
  j.nodes = {std::move(node)};
  return j;
}

class ActionExecutorUnitTest : public ::testing::Test {
 protected:
  ActionExecutorUnitTest() : clock_(kStart), executor_(&slurm_, &kube_, &events_, &clock_) {
    slurm_.AddNode(IdleNode("node1"));
    EXPECT_TRUE(kube_
                    .Create(k8s::Resource::Nodes(), "",
                            {{"apiVersion", "v1"},
                             {"kind", "Node"},
                             {"metadata", {{"name", "node1"}}},
                             {"spec", nlohmann::json::object()},
                             {"status", {{"conditions", nlohmann::json::array()}}}})
                    .ok());
  }

  static Action Drain(std::string text, Cause cause = Cause::kHealth) {
    Action a;
    a.op = plan::DrainSlurmNode{};
    a.node = "node1";
    a.As<plan::DrainSlurmNode>().reason = health::SlurmReason(text);
    a.cause = cause;
    a.event_type = plan::EventType::kWarning;
    a.event_reason = "SlurmNodeDrained";
    a.event_message = "drained: " + text;
    return a;
  }
  static Action Resume(std::string expected) {
    Action a;
    a.op = plan::ResumeSlurmNode{};
    a.node = "node1";
    a.As<plan::ResumeSlurmNode>().expected_reason = std::move(expected);
    a.event_reason = "SlurmNodeResumed";
    a.event_message = "resumed";
    return a;
  }
  // A RequeueSlurmJobs, SignalSlurmJobs or PreemptSlurmJobs of node1.
  static Action JobsAction(plan::Operation op) {
    Action a;
    a.op = std::move(op);
    a.node = "node1";
    a.event_type = plan::EventType::kWarning;
    a.event_reason = "Jobs";
    a.event_message = "jobs";
    return a;
  }

  SimulatedClock clock_;
  slurm::FakeSlurmClient slurm_;
  k8s::FakeKubeClient kube_;
  RecordingEvents events_;
  ActionExecutor executor_;
};

TEST_F(ActionExecutorUnitTest, DrainIsIdempotentAndRecordsThePlannedEvent) {
  Action a = Drain("GPUHealthy=False: XID 79");
  StatusOr<Effect> first = executor_.Execute(a);
  StatusOr<Effect> second = executor_.Execute(a);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  EXPECT_EQ(*first, Effect::kChanged);
  EXPECT_EQ(*second, Effect::kUnchanged);
  EXPECT_THAT(slurm_.Writes(),
              ElementsAre(StrCat("DrainNode node1 ", a.As<plan::DrainSlurmNode>().reason)));
  ASSERT_EQ(events_.events().size(), 1u) << "the second drain changed nothing";
  EXPECT_EQ(events_.events()[0].type, k8s::EventType::kWarning);
  EXPECT_EQ(events_.events()[0].object, "Node/node1");
}

TEST_F(ActionExecutorUnitTest, LendNeverRewordsAnAdminDrain) {
  slurm::NodeView n = IdleNode("node1");
  n.drain = true;
  n.reason = "bad fan";
  slurm_.AddNode(n);
  Status s = executor_.Execute(Drain("lent to ml/infer-0", Cause::kLend)).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(slurm_.Writes(), IsEmpty());
  EXPECT_THAT(events_.events(), IsEmpty()) << "Aborted is retried, not a Warning";
  // A health drain leaves it too (the client keeps somebody else's drain), with no Event.
  EXPECT_TRUE(executor_.Execute(Drain("cordoned")).ok());
  EXPECT_EQ(slurm_.Node("node1").reason, "bad fan");
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(ActionExecutorUnitTest, LendTakesOverTheBridgesOwnDrain) {
  ASSERT_TRUE(executor_.Execute(Drain("cordoned")).ok());
  Action lend = Drain("lent to ml/infer-0", Cause::kLend);
  ASSERT_TRUE(executor_.Execute(lend).ok());
  EXPECT_EQ(slurm_.Node("node1").reason, lend.As<plan::DrainSlurmNode>().reason);
}

TEST_F(ActionExecutorUnitTest, ResumeOnlyTheDrainThatWasPlanned) {
  Action drain = Drain("cordoned");
  ASSERT_TRUE(executor_.Execute(drain).ok());
  EXPECT_EQ(executor_.Execute(Resume("k8s-bridge: something else")).status().code(),
            StatusCode::kAborted);
  EXPECT_TRUE(slurm_.Node("node1").drain);
  ASSERT_TRUE(executor_.Execute(Resume(drain.As<plan::DrainSlurmNode>().reason)).ok());
  EXPECT_FALSE(slurm_.Node("node1").drain);
  ASSERT_TRUE(executor_.Execute(Resume(drain.As<plan::DrainSlurmNode>().reason)).ok())
      << "not drained: nothing to do";
  EXPECT_THAT(events_.reasons(), ElementsAre("SlurmNodeDrained", "SlurmNodeResumed"));
  EXPECT_EQ(events_.events()[1].type, k8s::EventType::kNormal);
}

TEST_F(ActionExecutorUnitTest, RetryableErrorsRecordNoWarning) {
  for (Status err : {UnavailableError("slurmctld busy"), DeadlineExceededError("timeout"),
                     AbortedError("moved")}) {
    slurm_.FailNext("DrainNode", err);
    Status s = executor_.Execute(Drain("cordoned")).status();
    EXPECT_EQ(s.code(), err.code());
    EXPECT_TRUE(IsRetryable(s));
  }
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(ActionExecutorUnitTest, TerminalErrorsRecordAWarning) {
  slurm_.FailNext("DrainNode", PermissionDeniedError("not an operator"));
  Status s = executor_.Execute(Drain("cordoned")).status();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  ASSERT_EQ(events_.events().size(), 1u);
  EXPECT_EQ(events_.events()[0].reason, "DrainSlurmNodeFailed");
  EXPECT_EQ(events_.events()[0].type, k8s::EventType::kWarning);
  EXPECT_THAT(events_.events()[0].message, HasSubstr("not an operator"));
}

TEST_F(ActionExecutorUnitTest, RequeueSkipsGoneJobsAndNamesTheRequeuedOnes) {
  slurm_.AddJob(Running(7, "node1"));
  ASSERT_TRUE(executor_.Execute(JobsAction(plan::RequeueSlurmJobs{{7, 8}})).ok());
  ASSERT_TRUE(executor_.Execute(JobsAction(plan::RequeueSlurmJobs{{7}})).ok());
  // Eligible at once for another node, not after Slurm's requeue begin time.
  EXPECT_THAT(slurm_.Writes(), ElementsAre("RequeueJob 7 hold=0", "MakeEligibleNow 7"));
  ASSERT_EQ(events_.events().size(), 1u);
  EXPECT_THAT(events_.events()[0].message, HasSubstr("(jobs 7)"));

  slurm::JobView stubborn = Running(9, "node1");
  stubborn.requeue = false;
  slurm_.AddJob(stubborn);
  Status s = executor_.Execute(JobsAction(plan::RequeueSlurmJobs{{9}})).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
}

TEST_F(ActionExecutorUnitTest, SignalOncePerJobWithinTheWindow) {
  slurm_.AddJob(Running(7, "node1"));
  slurm::JobView pending = Running(8, "node1");
  pending.state = skb::slurm::JobState::kPending;
  slurm_.AddJob(pending);
  Action a = JobsAction(plan::SignalSlurmJobs{{7, 8}});
  a.As<plan::SignalSlurmJobs>().signal = SIGUSR1;
  ASSERT_TRUE(executor_.Execute(a).ok());
  ASSERT_TRUE(executor_.Execute(a).ok());
  EXPECT_THAT(slurm_.Writes(), ElementsAre(StrCat("SignalJob 7 ", SIGUSR1, " scope=2")));
  clock_.Advance(std::chrono::seconds(31));
  ASSERT_TRUE(executor_.Execute(a).ok());
  EXPECT_EQ(slurm_.Writes().size(), 2u) << "signalled again once the window passed";
  slurm_.FailNext("SignalJob", UnavailableError("busy"));
  clock_.Advance(std::chrono::seconds(31));
  EXPECT_EQ(executor_.Execute(a).status().code(), StatusCode::kUnavailable);
}

TEST_F(ActionExecutorUnitTest, PreemptRecordsWhyThenRequeuesOnlyWorkOnTheNode) {
  slurm_.AddJob(Running(7, "node1"));
  slurm_.AddJob(Running(8, "node2"));
  Action a = JobsAction(plan::PreemptSlurmJobs{{7, 8, 9}});
  a.As<plan::PreemptSlurmJobs>().preemptor = "ml/infer-0";
  a.As<plan::PreemptSlurmJobs>().at_unix = 1000;
  ASSERT_TRUE(executor_.Execute(a).ok());
  std::vector<std::string> w = slurm_.Writes();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_THAT(w[0], HasSubstr("SetAdminComment 7 "));
  EXPECT_EQ(w[1], "RequeueJob 7 hold=0");
  EXPECT_EQ(w[2], "MakeEligibleNow 7");
  EXPECT_THAT(slurm_.Job(7).admin_comment, HasSubstr("ml/infer-0"));
  ASSERT_TRUE(executor_.Execute(a).ok()) << "already pending: nothing to do";
  EXPECT_EQ(slurm_.Writes().size(), 3u);
  EXPECT_EQ(events_.events().size(), 1u);
}

// A lent node runs component 12 of heterogeneous job 11, whose leader runs elsewhere.
// Slurm signals and requeues such a job only whole, through the leader's id (it refuses a
// component's own): the executor checks the component is here, records the preemption in
// the component's own comment, and acts on the leader, once per job.
TEST_F(ActionExecutorUnitTest, AComponentOnTheNodeSignalsAndRequeuesItsWholeHeterogeneousJob) {
  slurm::JobView leader = Running(11, "node2"), here = Running(12, "node1");
  leader.het_job_id = here.het_job_id = 11;
  here.het_job_offset = 1;
  leader.admin_comment = "k8s-bridge:preemptible=true;partitions=gpu";
  slurm_.AddJob(leader);
  slurm_.AddJob(here);
  Action sig = JobsAction(plan::SignalSlurmJobs{{12}});
  sig.As<plan::SignalSlurmJobs>().signal = SIGUSR1;
  ASSERT_TRUE(executor_.Execute(sig).ok());
  EXPECT_THAT(slurm_.Writes(), ElementsAre(StrCat("SignalJob 11 ", SIGUSR1, " scope=2")));

  Action a = JobsAction(plan::PreemptSlurmJobs{{12}});
  a.As<plan::PreemptSlurmJobs>().preemptor = "ml/infer-0";
  a.As<plan::PreemptSlurmJobs>().at_unix = 1000;
  ASSERT_TRUE(executor_.Execute(a).ok());
  std::vector<std::string> w = slurm_.Writes();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_THAT(w[1], HasSubstr("SetAdminComment 12 "));
  EXPECT_EQ(w[2], "RequeueJob 11 hold=0");
  EXPECT_EQ(w[3], "MakeEligibleNow 11");
  EXPECT_EQ(slurm_.Job(11).state, skb::slurm::JobState::kPending);
  EXPECT_EQ(slurm_.Job(12).state, skb::slurm::JobState::kPending) << "requeued with its leader";
  EXPECT_EQ(slurm_.Job(11).admin_comment, leader.admin_comment) << "the leader's note is kept";
  EXPECT_THAT(events_.events().back().message, HasSubstr("(jobs 11)"));
}

TEST_F(ActionExecutorUnitTest, PreemptRefusedBySlurmIsTerminalUnlessUnavailable) {
  slurm_.AddJob(Running(7, "node1"));
  Action a = JobsAction(plan::PreemptSlurmJobs{{7}});
  slurm_.FailNext("RequeueJob", InvalidArgumentError("job not requeueable"));
  EXPECT_EQ(executor_.Execute(a).status().code(), StatusCode::kFailedPrecondition);
  slurm_.FailNext("RequeueJob", UnavailableError("busy"));
  EXPECT_EQ(executor_.Execute(a).status().code(), StatusCode::kUnavailable);
}

TEST_F(ActionExecutorUnitTest, ReleaseWaitsUntilSlurmHasLeftTheNode) {
  slurm::NodeView n = IdleNode("node1");
  n.drain = true;  // the lend drained it (the release also re-checks that: reconciler tests)
  n.reason = "k8s-bridge: lent to Kubernetes";
  slurm_.AddNode(n);
  slurm_.AddJob(Running(7, "node1"));
  Action a;
  a.op = plan::ReleaseReservationPod{};
  a.node = "node1";
  a.As<plan::ReleaseReservationPod>().pod = {"slurm-bridge", "reserve-node1", "uid-1"};
  a.As<plan::ReleaseReservationPod>().check = plan::ReleaseCheck::kNoSlurmJobs;
  Status s = executor_.Execute(a).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("job 7"));
  slurm_.FailNext("LoadJobs", UnavailableError("busy"));
  EXPECT_EQ(executor_.Execute(a).status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(ActionExecutorUnitTest, FeaturesAreSetOnce) {
  Action a;
  a.op = plan::SetSlurmFeatures{};
  a.node = "node1";
  a.As<plan::SetSlurmFeatures>().features = {"h100", "nvlink"};
  a.cause = Cause::kFeatures;
  a.event_reason = "SlurmFeaturesUpdated";
  EXPECT_EQ(executor_.Execute(a).value(), Effect::kChanged);
  EXPECT_EQ(executor_.Execute(a).value(), Effect::kUnchanged);
  EXPECT_THAT(slurm_.Writes(), ElementsAre("SetFeatures node1 h100,nvlink"));
  EXPECT_THAT(events_.reasons(), ElementsAre("SlurmFeaturesUpdated"));
}

TEST_F(ActionExecutorUnitTest, ConditionEventTypeIsThePlannersAndQuietRecordsNone) {
  Action a;
  a.op = plan::SetNodeCondition{};
  a.node = "node1";
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "True", "DrainedByAdmin", "bad fan"};
  a.As<plan::SetNodeCondition>().condition.transition = plan::ConditionSpec::Transition::kNow;
  a.cause = Cause::kSlurmState;
  a.event_type = plan::EventType::kWarning;
  a.event_reason = "DrainedByAdmin";
  ASSERT_TRUE(executor_.Execute(a).ok());
  a.As<plan::SetNodeCondition>().condition = {"SlurmDrained", "False", "NotDrained", ""};
  a.event_type = plan::EventType::kNormal;
  a.event_reason = "SlurmNodeNotDrained";
  ASSERT_TRUE(executor_.Execute(a).ok());
  a.quiet = true;
  ASSERT_TRUE(executor_.Execute(a).ok());
  auto ev = events_.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, k8s::EventType::kWarning);
  EXPECT_EQ(ev[1].type, k8s::EventType::kNormal);
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["conditions"][0]["status"], "False");
}

TEST_F(ActionExecutorUnitTest, ANodesConditionsGoInOneStatusPatchEachWithItsEvent) {
  auto condition = [](std::string type, std::string status, std::string reason, bool quiet) {
    Action a;
    a.op = plan::SetNodeCondition{};
    a.node = "node1";
    a.As<plan::SetNodeCondition>().condition = {type, status, reason, "m"};
    a.As<plan::SetNodeCondition>().condition.transition = plan::ConditionSpec::Transition::kNow;
    a.cause = Cause::kSlurmState;
    a.event_reason = reason;
    a.quiet = quiet;
    return a;
  };
  const std::vector<Action> both = {condition("SlurmNodeHealthy", "False", "SlurmNodeDown", false),
                                    condition("SlurmDrained", "True", "DrainedByAdmin", true)};
  const int64_t before = kube_.resource_version();
  ASSERT_EQ(executor_.ExecuteConditions(both).value(), Effect::kChanged);
  EXPECT_EQ(kube_.resource_version(), before + 1) << "one write for both conditions";
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  std::map<std::string, std::string> written;
  for (const auto& c : (*node)["status"]["conditions"]) written[c["type"]] = c["status"];
  EXPECT_EQ(written, (std::map<std::string, std::string>{{"SlurmDrained", "True"},
                                                         {"SlurmNodeHealthy", "False"}}));
  EXPECT_THAT(events_.reasons(), ElementsAre("SlurmNodeDown")) << "the quiet one records none";

  // Anything but conditions of one node is refused, and nothing is written.
  std::vector<Action> mixed = both;
  mixed[1].node = "node2";
  EXPECT_EQ(executor_.ExecuteConditions(mixed).status().code(), StatusCode::kInvalidArgument);
  mixed = {both[0], Drain("fan")};
  EXPECT_EQ(executor_.ExecuteConditions(mixed).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kube_.resource_version(), before + 1);
  EXPECT_THAT(slurm_.Writes(), IsEmpty());
}

TEST_F(ActionExecutorUnitTest, TaintIsAddedAndRemovedOnce) {
  Action a;
  a.op = plan::SetNodeTaint{};
  a.node = "node1";
  a.As<plan::SetNodeTaint>().taint = {"slurm-k8s-bridge.io/busy", "", "NoSchedule"};
  a.event_reason = "Tainted";
  ASSERT_TRUE(executor_.Execute(a).ok());
  ASSERT_TRUE(executor_.Execute(a).ok());
  a.op = plan::RemoveNodeTaint{a.As<plan::SetNodeTaint>().taint};
  a.event_reason = "Untainted";
  ASSERT_TRUE(executor_.Execute(a).ok());
  ASSERT_TRUE(executor_.Execute(a).ok());
  EXPECT_THAT(events_.reasons(), ElementsAre("Tainted", "Untainted"));
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE((*node)["spec"]["taints"].empty());
}

TEST_F(ActionExecutorUnitTest, NeverDeletesAPodThatIsNotTheBridges) {
  ASSERT_TRUE(kube_
                  .Create(k8s::Resource::Pods(), "slurm-bridge",
                          {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"metadata", {{"name", "reserve-node1"}, {"namespace", "slurm-bridge"}}},
                           {"spec", {{"nodeName", "node1"}}}})
                  .ok());
  Action a;
  a.op = plan::DeleteReservationPod{};
  a.node = "node1";
  a.As<plan::DeleteReservationPod>().pod = {"slurm-bridge", "reserve-node1", ""};
  a.event_reason = "ReservationDeleted";
  Status s = executor_.Execute(a).status();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(kube_.Get(k8s::Resource::Pods(), "slurm-bridge", "reserve-node1").ok());
  EXPECT_THAT(events_.reasons(), ElementsAre("DeleteReservationPodFailed"));
}

TEST_F(ActionExecutorUnitTest, DeletesOurReservationOnceAndChecksItsUid) {
  auto created =
      kube_.Create(k8s::Resource::Pods(), "slurm-bridge",
                   {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", "reserve-node1"},
                      {"namespace", "slurm-bridge"},
                      {"labels", {{ownership::kRoleLabel, ownership::kReservationRole}}}}},
                    {"spec", {{"nodeName", "node1"}}}});
  ASSERT_TRUE(created.ok());
  Action a;
  a.op = plan::DeleteReservationPod{};
  a.node = "node1";
  a.As<plan::DeleteReservationPod>().pod = {"slurm-bridge", "reserve-node1", "some-other-uid"};
  a.event_reason = "ReservationDeleted";
  EXPECT_EQ(executor_.Execute(a).status().code(), StatusCode::kAborted)
      << "re-created under the name";
  a.As<plan::DeleteReservationPod>().pod.uid = (*created)["metadata"]["uid"];
  ASSERT_TRUE(executor_.Execute(a).ok());
  ASSERT_TRUE(executor_.Execute(a).ok()) << "gone: nothing to do";
  EXPECT_EQ(kube_.Get(k8s::Resource::Pods(), "slurm-bridge", "reserve-node1").status().code(),
            StatusCode::kNotFound);
  EXPECT_THAT(events_.reasons(), ElementsAre("ReservationDeleted", "ReservationDeleted"))
      << "on the node and on the pod";
}

// A swap releases the old reservation (its GPUs stop counting) only under the whole guard:
// the NoSchedule taint and the swap-guard label the admission policy selects nodes by.
TEST_F(ActionExecutorUnitTest, SwapReleaseNeedsTheTaintAndTheGuardLabel) {
  auto created = kube_.Create(k8s::Resource::Pods(), "slurm-bridge",
                              {{"apiVersion", "v1"},
                               {"kind", "Pod"},
                               {"metadata",
                                {{"name", "reserve-node1"},
                                 {"namespace", "slurm-bridge"},
                                 {"labels", {{ownership::kRoleLabel, ownership::kReservationRole}}},
                                 {"finalizers", {ownership::kFinalizer}}}},
                               {"spec", {{"nodeName", "node1"}}}});
  ASSERT_TRUE(created.ok());
  Action release;
  release.op = plan::ReleaseReservationPod{};
  release.node = "node1";
  release.As<plan::ReleaseReservationPod>().pod = {"slurm-bridge", "reserve-node1",
                                                   (*created)["metadata"]["uid"]};
  release.As<plan::ReleaseReservationPod>().check = plan::ReleaseCheck::kSwapTaint;
  release.event_reason = "ReservationReplacing";

  Status s = executor_.Execute(release).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr(ownership::kSwapTaintKey));

  Action taint;
  taint.op = plan::SetNodeTaint{};
  taint.node = "node1";
  taint.As<plan::SetNodeTaint>().taint = {ownership::kSwapTaintKey, "", "NoSchedule"};
  taint.event_reason = "ReservationSwapStarted";
  ASSERT_TRUE(executor_.Execute(taint).ok());
  s = executor_.Execute(release).status();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr(ownership::kSwapGuardLabel));

  Action guard;
  guard.op = plan::PatchNodeAnnotations{};
  guard.node = "node1";
  guard.As<plan::PatchNodeAnnotations>().labels.set[ownership::kSwapGuardLabel] = "true";
  guard.event_reason = "SwapGuardOn";
  ASSERT_TRUE(executor_.Execute(guard).ok());
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["metadata"]["labels"][ownership::kSwapGuardLabel], "true");
  EXPECT_FALSE((*node)["metadata"].contains("annotations")) << "labels only";
  ASSERT_TRUE(executor_.Execute(release).ok());
  EXPECT_EQ(kube_.Get(k8s::Resource::Pods(), "slurm-bridge", "reserve-node1").status().code(),
            StatusCode::kNotFound)
      << "released (finalizer off) and deleted";

  guard.As<plan::PatchNodeAnnotations>().labels = {};
  guard.As<plan::PatchNodeAnnotations>().labels.remove.emplace_back(ownership::kSwapGuardLabel);
  guard.event_reason = "SwapGuardOff";
  ASSERT_TRUE(executor_.Execute(guard).ok());
  node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE((*node)["metadata"]["labels"].contains(ownership::kSwapGuardLabel));
  EXPECT_THAT(events_.reasons(),
              ElementsAre("ReservationSwapStarted", "SwapGuardOn", "ReservationReplacing",
                          "ReservationReplacing", "SwapGuardOff"))
      << "the release on the node and on the pod";
}

TEST_F(ActionExecutorUnitTest, ANodePatchThatIsAlreadyThereChangesNothingAndRecordsNoEvent) {
  Action lend;
  lend.op = plan::PatchNodeAnnotations{};
  lend.node = "node1";
  lend.As<plan::PatchNodeAnnotations>().annotations.set[ownership::kLentAtAnnotation] =
      "1700000000";
  lend.As<plan::PatchNodeAnnotations>().annotations.set[ownership::kLentToAnnotation] =
      "default/infer-a";
  lend.event_reason = "LendingToKubernetes";
  auto first = executor_.Execute(lend);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, Effect::kChanged);
  // Planned again from a cache that has not seen the patch: already there.
  auto again = executor_.Execute(lend);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, Effect::kUnchanged);
  EXPECT_THAT(events_.reasons(), ElementsAre("LendingToKubernetes"));

  Action done;
  done.op = plan::PatchNodeAnnotations{};
  done.node = "node1";
  done.As<plan::PatchNodeAnnotations>().annotations.remove = {ownership::kLentAtAnnotation,
                                                              ownership::kLentToAnnotation};
  done.As<plan::PatchNodeAnnotations>().labels.remove = {
      ownership::kSwapGuardLabel};  // never set: nothing to remove
  done.event_reason = "ReturnedToSlurm";
  EXPECT_EQ(executor_.Execute(done).value(), Effect::kChanged);
  EXPECT_EQ(executor_.Execute(done).value(), Effect::kUnchanged);
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE((*node)["metadata"]["annotations"].contains(ownership::kLentAtAnnotation));
  // A value that differs is written.
  lend.As<plan::PatchNodeAnnotations>().annotations.set[ownership::kLentToAnnotation] =
      "default/infer-b";
  EXPECT_EQ(executor_.Execute(lend).value(), Effect::kChanged);
  EXPECT_THAT(events_.reasons(),
              ElementsAre("LendingToKubernetes", "ReturnedToSlurm", "LendingToKubernetes"));
}

}  // namespace
}  // namespace skb::bridge

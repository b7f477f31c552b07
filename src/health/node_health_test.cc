// SPDX-License-Identifier: Apache-2.0
#include "src/health/node_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/base/strings.h"
#include "src/plan/testing/node_model.h"

namespace skb::health {
namespace {

using inventory::K8sNode;
using inventory::ManagedNode;
using inventory::NodeCondition;
using plan::Action;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Clock::TimePoint kNow = Clock::TimePoint{} + hours(24 * 365 * 50);

NodeCondition Cond(std::string type, std::string status, std::string reason = "",
                   std::string message = "", Clock::TimePoint since = kNow - hours(1)) {
  return {std::move(type), std::move(status), std::move(reason), std::move(message), since};
}

// A healthy, idle node whose Slurm conditions are already published.
ManagedNode Healthy(std::string name = "node1") {
  ManagedNode n;
  n.name = name;
  K8sNode k;
  k.name = name;
  k.conditions = {Cond("Ready", "True", "KubeletReady"),
                  Cond("SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding"),
                  Cond("SlurmDrained", "False", "NotDrained", "")};
  k.gpu_capacity = k.gpu_allocatable = 8;
  n.k8s = k;
  slurm::NodeView s;
  s.name = name;
  s.base_state = slurm::NodeBaseState::kIdle;
  n.slurm = s;
  return n;
}

void SetCondition(ManagedNode* n, NodeCondition c) {
  for (auto& cur : n->k8s->conditions) {
    if (cur.type == c.type) {
      cur = std::move(c);
      return;
    }
  }
  n->k8s->conditions.push_back(std::move(c));
}

void DrainedBy(ManagedNode* n, std::string reason, uint32_t uid = 0) {
  n->slurm->drain = true;
  n->slurm->reason = std::move(reason);
  n->slurm->reason_uid = uid;
}

slurm::JobView RunningJob(uint32_t id, bool requeue = true) {
  slurm::JobView j;
  j.job_id = id;
  j.state = slurm::JobState::kRunning;
  j.requeue = requeue;
  j.gpus_per_node = 8;
  return j;
}

// What the executor would do, applied to the model (plan/testing/node_model.h): used to
// check that planning again after carrying out a plan asks for nothing more. An action of
// another planner, or one whose precondition fails, is a test failure.
void Apply(const Action& a, ManagedNode* n, Clock::TimePoint now) {
  ASSERT_TRUE(a.cause == plan::Cause::kHealth || a.cause == plan::Cause::kMaintenance ||
              a.cause == plan::Cause::kSlurmState)
      << "not a health action: " << plan::ToString(a);
  plan::testing::Log log;
  const Status s = plan::testing::ApplyAction(a, n, config::Config{}, now, &log);
  ASSERT_TRUE(s.ok()) << s;
}

std::vector<std::string_view> Kinds(const NodePlan& p) {
  std::vector<std::string_view> k;
  for (const auto& a : p.actions) k.push_back(a.Kind());
  return k;
}

const Action* Find(const NodePlan& p, std::string_view kind) {
  for (const auto& a : p.actions) {
    if (a.Kind() == kind) return &a;
  }
  return nullptr;
}

std::string Dump(const NodePlan& p) {
  std::string s;
  for (const auto& a : p.actions) StrAppend(&s, "\n  ", plan::ToString(a));
  for (const auto& e : p.explanation) StrAppend(&s, "\n  # ", e);
  return s;
}

struct Case {
  std::string name;
  std::function<void(ManagedNode*, HealthConfig*)> setup;
  std::vector<std::string_view> want;
  std::string want_reason;  // drain reason, condition reason or expected resume reason
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PlanTable : public ::testing::TestWithParam<Case> {};

TEST_P(PlanTable, PlansAndThenConverges) {
  const Case& c = GetParam();
  ManagedNode n = Healthy();
  HealthConfig cfg;
  c.setup(&n, &cfg);
  NodePlan p = PlanNodeHealth(n, cfg, kNow);
  EXPECT_EQ(Kinds(p), c.want) << Dump(p);
  if (!c.want_reason.empty()) {
    ASSERT_FALSE(p.actions.empty()) << Dump(p);
    const Action& a = p.actions.front();
    std::string got = a.Is<plan::DrainSlurmNode>() ? a.As<plan::DrainSlurmNode>().reason
                      : a.Is<plan::ResumeSlurmNode>()
                          ? a.As<plan::ResumeSlurmNode>().expected_reason
                          : a.As<plan::SetNodeCondition>().condition.reason;
    EXPECT_EQ(got, c.want_reason) << Dump(p);
  }
  for (const auto& a : p.actions) {
    EXPECT_EQ(a.node, "node1");
    EXPECT_FALSE(a.event_reason.empty()) << plan::ToString(a);
    EXPECT_FALSE(a.event_message.empty()) << plan::ToString(a);
  }
  // Idempotence: the same input plans the same; carried out, the plan converges within
  // two rounds (a drain is published as a condition once Slurm reports it) and then asks
  // for nothing more.
  EXPECT_EQ(PlanNodeHealth(n, cfg, kNow).actions, p.actions);
  NodePlan again = p;
  for (int round = 0; round < 2 && !again.actions.empty(); ++round) {
    for (const auto& a : again.actions) Apply(a, &n, kNow);
    again = PlanNodeHealth(n, cfg, kNow);
  }
  EXPECT_TRUE(again.actions.empty()) << "still planning after two rounds:" << Dump(again);
  // A drain never undoes itself in the next round, and nothing resumes an admin's drain.
  for (const auto& a : again.actions) EXPECT_NE(a.Kind(), plan::ResumeSlurmNode::kName);
}

INSTANTIATE_TEST_SUITE_P(
    Health, PlanTable,
    ::testing::Values(
        Case{"HealthyNodeNeedsNothing", [](ManagedNode*, HealthConfig*) {}, {}, ""},
        Case{"PublishesMissingSlurmConditions",
             [](ManagedNode* n, HealthConfig*) { n->k8s->conditions.resize(1); },
             {plan::SetNodeCondition::kName, plan::SetNodeCondition::kName},
             "SlurmNodeUp"},
        Case{"GpuUnhealthyDrainsWithReadableReason",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("GPUHealthy", "False", "XidError", "XID 79 on GPU 3"));
             },
             {plan::DrainSlurmNode::kName},
             "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3"},
        Case{"AlreadyDrainedByBridgeOnlyUpdatesCondition",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("GPUHealthy", "False", "XidError", "XID 79 on GPU 3"));
               DrainedBy(n, "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
             },
             {plan::SetNodeCondition::kName},
             "DrainedByBridge"},
        Case{"ChangedSignalRewordsTheBridgesDrain",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("GPUHealthy", "False", "XidError", "XID 48 on GPU 1"));
               DrainedBy(n, "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
             },
             {plan::DrainSlurmNode::kName, plan::SetNodeCondition::kName},
             "k8s-bridge: GPUHealthy=False: XID 48 on GPU 1"},
        Case{"ClearedSignalResumesTheBridgesDrain",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("GPUHealthy", "True"));
               DrainedBy(n, "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
             },
             {plan::ResumeSlurmNode::kName, plan::SetNodeCondition::kName},
             "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3"},
        Case{"AdminDrainIsNeverResumed",
             [](ManagedNode* n, HealthConfig*) { DrainedBy(n, "bad DIMM, ticket 4711", 1000); },
             {plan::SetNodeCondition::kName},
             "DrainedByAdmin"},
        Case{"AdminDrainIsNotOverwrittenBySignal",
             [](ManagedNode* n, HealthConfig*) {
               DrainedBy(n, "bad DIMM", 1000);
               SetCondition(n, Cond("GPUHealthy", "False", "", "XID 79"));
             },
             {plan::SetNodeCondition::kName},
             "DrainedByAdmin"},
        Case{"LendingDrainIsNotTheHealthPlannersToResume",
             [](ManagedNode* n, HealthConfig*) {
               DrainedBy(n, "k8s-bridge: lent to inference/llm-0");
             },
             {plan::SetNodeCondition::kName},
             "DrainedByBridge"},
        Case{"NotReadyWithinGraceWaits",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("Ready", "False", "KubeletNotReady", "", kNow - seconds(10)));
             },
             {},
             ""},
        Case{"NotReadyPastGraceDrainsAndRequeuesRequeueableJobs",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("Ready", "Unknown", "NodeStatusUnknown",
                                    "Kubelet stopped posting node status.", kNow - minutes(2)));
               n->jobs = {RunningJob(11), RunningJob(12, /*requeue=*/false)};
             },
             {plan::DrainSlurmNode::kName, plan::RequeueSlurmJobs::kName},
             "k8s-bridge: Ready=Unknown: Kubelet stopped posting node status."},
        Case{"TaintWithMatchingValueDrains",
             [](ManagedNode* n, HealthConfig*) {
               n->k8s->taints = {{"nvidia.com/gpu.health", "unhealthy", "NoSchedule"}};
             },
             {plan::DrainSlurmNode::kName},
             "k8s-bridge: taint nvidia.com/gpu.health=unhealthy:NoSchedule"},
        Case{"TaintWithOtherValueIsIgnored",
             [](ManagedNode* n, HealthConfig*) {
               n->k8s->taints = {{"nvidia.com/gpu.health", "healthy", "NoSchedule"}};
             },
             {},
             ""},
        Case{"CordonDrains",
             [](ManagedNode* n, HealthConfig*) { n->k8s->unschedulable = true; },
             {plan::DrainSlurmNode::kName},
             "k8s-bridge: cordoned (spec.unschedulable)"},
        Case{"CordonIgnoredByConfig",
             [](ManagedNode* n, HealthConfig* c) {
               n->k8s->unschedulable = true;
               c->cordon.reset();
             },
             {},
             ""},
        Case{"CustomConditionRuleDownNow",
             [](ManagedNode* n, HealthConfig* c) {
               c->conditions.push_back({"KernelDeadlock", {"True"}, {}, Severity::kDownNow});
               SetCondition(n, Cond("KernelDeadlock", "True", "DockerHung", "task hung"));
               n->jobs = {RunningJob(21)};
             },
             {plan::DrainSlurmNode::kName, plan::RequeueSlurmJobs::kName},
             "k8s-bridge: KernelDeadlock=True: task hung"},
        Case{"MostSevereSignalNamesTheDrain",
             [](ManagedNode* n, HealthConfig* c) {
               c->conditions.push_back({"KernelDeadlock", {"True"}, {}, Severity::kDownNow});
               SetCondition(n, Cond("GPUHealthy", "False", "", "XID 79"));
               SetCondition(n, Cond("KernelDeadlock", "True", "", "task hung"));
             },
             {plan::DrainSlurmNode::kName},
             "k8s-bridge: KernelDeadlock=True: task hung (+1 more)"},
        Case{"MaintenanceDrainsAndWaitsForJobs",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("MaintenanceRequested", "True", "FirmwareUpgrade", "",
                                    kNow - minutes(5)));
               n->jobs = {RunningJob(31)};
             },
             {plan::DrainSlurmNode::kName},
             "k8s-bridge: MaintenanceRequested=True: FirmwareUpgrade"},
        Case{"MaintenancePastDeadlineRequeues",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(
                   n, Cond("MaintenanceRequested", "True", "FirmwareUpgrade", "", kNow - hours(2)));
               DrainedBy(n, "k8s-bridge: MaintenanceRequested=True: FirmwareUpgrade");
               n->jobs = {RunningJob(31)};
             },
             {plan::RequeueSlurmJobs::kName, plan::SetNodeCondition::kName},
             ""},
        Case{"MaintenanceWithoutJobsIsReady",
             [](ManagedNode* n, HealthConfig*) {
               SetCondition(n, Cond("MaintenanceRequested", "True", "FirmwareUpgrade"));
               DrainedBy(n, "k8s-bridge: MaintenanceRequested=True: FirmwareUpgrade");
             },
             {plan::SetNodeCondition::kName},
             "ReadyForMaintenance"},
        Case{"SlurmDownShowsInKubernetes",
             [](ManagedNode* n, HealthConfig*) {
               n->slurm->base_state = slurm::NodeBaseState::kDown;
               n->slurm->not_responding = true;
               n->slurm->reason = "Not responding";
             },
             {plan::SetNodeCondition::kName},
             "SlurmNodeNotResponding"},
        Case{"TransientNotRespondingIsNotPublished",
             [](ManagedNode* n, HealthConfig*) { n->slurm->not_responding = true; },
             {},
             ""},
        Case{"SlurmConditionsCanBeTurnedOff",
             [](ManagedNode* n, HealthConfig* c) {
               n->k8s->conditions.resize(1);
               c->slurm_conditions = false;
             },
             {},
             ""}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

TEST(PlanNodeHealth, PendingSignalAsksForARecheckWhenGraceEnds) {
  ManagedNode n = Healthy();
  SetCondition(&n, Cond("Ready", "False", "", "", kNow - seconds(10)));
  NodePlan p = PlanNodeHealth(n, HealthConfig{}, kNow);
  ASSERT_TRUE(p.recheck_at.has_value());
  EXPECT_EQ(*p.recheck_at, kNow + seconds(50));
  EXPECT_THAT(p.explanation, ::testing::Contains(HasSubstr("within grace; fires in 50s")));
  // At the recheck the signal fires.
  NodePlan later = PlanNodeHealth(n, HealthConfig{}, *p.recheck_at);
  EXPECT_THAT(Kinds(later), ElementsAre(plan::DrainSlurmNode::kName));
}

TEST(PlanNodeHealth, MaintenanceDeadlineIsTheRecheck) {
  ManagedNode n = Healthy();
  SetCondition(&n, Cond("MaintenanceRequested", "True", "Reboot", "", kNow - minutes(10)));
  n.jobs = {RunningJob(5)};
  NodePlan p = PlanNodeHealth(n, HealthConfig{}, kNow);
  ASSERT_TRUE(p.recheck_at.has_value());
  EXPECT_EQ(*p.recheck_at, kNow + minutes(50));
}

TEST(PlanNodeHealth, NonRequeueableJobsAreExplained) {
  ManagedNode n = Healthy();
  SetCondition(&n, Cond("Ready", "False", "", "", kNow - hours(1)));
  n.jobs = {RunningJob(12, /*requeue=*/false)};
  NodePlan p = PlanNodeHealth(n, HealthConfig{}, kNow);
  EXPECT_EQ(Find(p, plan::RequeueSlurmJobs::kName), nullptr);
  EXPECT_THAT(p.explanation, ::testing::Contains(HasSubstr("job 12 cannot be requeued")));
}

TEST(PlanNodeHealth, OneSidedNodesAreLeftAlone) {
  ManagedNode only_k8s = Healthy();
  only_k8s.slurm.reset();
  SetCondition(&only_k8s, Cond("GPUHealthy", "False"));
  // Nothing acts on Slurm; the Kubernetes node says it has no Slurm partner, naming both.
  only_k8s.k8s->name = only_k8s.name + ".example.org";
  NodePlan unpaired = PlanNodeHealth(only_k8s, HealthConfig{}, kNow);
  ASSERT_EQ(unpaired.actions.size(), 1u);
  const Action& warn = unpaired.actions[0];
  EXPECT_EQ(warn.Kind(), plan::SetNodeCondition::kName);
  EXPECT_EQ(warn.K8sNode(), only_k8s.k8s->name);
  EXPECT_EQ(warn.As<plan::SetNodeCondition>().condition.status, "Unknown");
  EXPECT_EQ(warn.As<plan::SetNodeCondition>().condition.reason, "SlurmNodeNotFound");
  EXPECT_EQ(warn.event_type, plan::EventType::kWarning);
  EXPECT_THAT(warn.event_message, HasSubstr(only_k8s.k8s->name));
  EXPECT_THAT(warn.event_message, HasSubstr("Slurm node " + only_k8s.name + " "));
  // The daemon's status lane plans the same condition.
  EXPECT_EQ(PlanNodeConditions(only_k8s, HealthConfig{}, kNow).actions, unpaired.actions);
  // Once said, not repeated.
  SetCondition(&only_k8s, Cond(std::string(kSlurmHealthyCondition), "Unknown", "SlurmNodeNotFound",
                               warn.As<plan::SetNodeCondition>().condition.message));
  EXPECT_TRUE(PlanNodeHealth(only_k8s, HealthConfig{}, kNow).actions.empty());
  HealthConfig quiet;
  quiet.slurm_conditions = false;
  only_k8s.k8s->conditions.clear();
  EXPECT_TRUE(PlanNodeHealth(only_k8s, quiet, kNow).actions.empty());
  ManagedNode only_slurm = Healthy();
  only_slurm.k8s.reset();
  EXPECT_TRUE(PlanNodeHealth(only_slurm, HealthConfig{}, kNow).actions.empty());
  EXPECT_THAT(PlanNodeHealth(only_slurm, HealthConfig{}, kNow).explanation,
              ElementsAre(HasSubstr("not a Kubernetes node")));
}

TEST(PlanNodeHealth, AdminDrainMessageNamesTheUser) {
  ManagedNode n = Healthy();
  DrainedBy(&n, "bad DIMM", 1234);
  NodePlan p = PlanNodeHealth(n, HealthConfig{}, kNow);
  const Action* a = Find(p, plan::SetNodeCondition::kName);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.message, "bad DIMM (uid 1234)");
}

// The executor writes lastTransitionTime from what the planner's cache knows, without a GET.
TEST(PlanNodeHealth, ConditionActionsCarryTheTransitionTheCacheKnows) {
  using Transition = plan::ConditionSpec::Transition;
  ManagedNode n = Healthy();
  DrainedBy(&n, "bad DIMM");  // SlurmDrained False -> True: it flips now
  NodePlan flips = PlanNodeHealth(n, HealthConfig{}, kNow);
  const Action* a = Find(flips, plan::SetNodeCondition::kName);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.status, "True");
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.transition, Transition::kNow);

  // Same status, new message: the cached transition stays.
  SetCondition(&n, Cond("SlurmDrained", "True", "DrainedByAdmin", "old", kNow - hours(3)));
  NodePlan kept = PlanNodeHealth(n, HealthConfig{}, kNow);
  a = Find(kept, plan::SetNodeCondition::kName);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.message, "bad DIMM");
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.transition, Transition::kKeep);
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.since, kNow - hours(3));

  // A cached condition without a readable time: the executor must read the node.
  SetCondition(&n, Cond("SlurmDrained", "True", "DrainedByAdmin", "old", Clock::TimePoint{}));
  NodePlan unknown = PlanNodeHealth(n, HealthConfig{}, kNow);
  a = Find(unknown, plan::SetNodeCondition::kName);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->As<plan::SetNodeCondition>().condition.transition, Transition::kUnknown);

  // A condition the node does not carry yet starts now.
  n.k8s->conditions.clear();
  NodePlan first = PlanNodeHealth(n, HealthConfig{}, kNow);
  for (const Action& c : first.actions) {
    if (c.Kind() != plan::SetNodeCondition::kName) continue;
    EXPECT_EQ(c.As<plan::SetNodeCondition>().condition.transition, Transition::kNow)
        << c.As<plan::SetNodeCondition>().condition.type;
  }
}

// A healthy state published for the first time records no Event ("healthy again" would be
// wrong, and it is half the Events of a node's set-up); every other write records one.
TEST(PlanNodeHealth, FirstPublicationOfAHealthyStateIsQuiet) {
  auto quiet = [](const NodePlan& p) {
    std::map<std::string, bool> out;
    for (const Action& a : p.actions) {
      if (a.Kind() == plan::SetNodeCondition::kName)
        out[a.As<plan::SetNodeCondition>().condition.type] = a.quiet;
    }
    return out;
  };
  ManagedNode n = Healthy();
  n.k8s->conditions = {Cond("Ready", "True", "KubeletReady")};
  EXPECT_EQ(quiet(PlanNodeHealth(n, HealthConfig{}, kNow)),
            (std::map<std::string, bool>{{"SlurmDrained", true}, {"SlurmNodeHealthy", true}}));

  // Unhealthy news is news, first time or not.
  DrainedBy(&n, "bad DIMM");
  n.slurm->fail = true;
  EXPECT_EQ(quiet(PlanNodeHealth(n, HealthConfig{}, kNow)),
            (std::map<std::string, bool>{{"SlurmDrained", false}, {"SlurmNodeHealthy", false}}));

  // Healthy again, after it was not: an Event.
  n = Healthy();
  SetCondition(&n, Cond("SlurmNodeHealthy", "False", "SlurmNodeFailed", "Slurm state FAIL"));
  SetCondition(&n, Cond("SlurmDrained", "True", "DrainedByAdmin", "bad DIMM"));
  EXPECT_EQ(quiet(PlanNodeHealth(n, HealthConfig{}, kNow)),
            (std::map<std::string, bool>{{"SlurmDrained", false}, {"SlurmNodeHealthy", false}}));
}

TEST(PlanNodeHealth, DrainRequestedDrainsWhateverTheRulesAndClearsWhenRemoved) {
  ManagedNode n = Healthy();
  SetCondition(&n, Cond("DrainRequested", "True", "BridgectlDrain", "swap PSU (alice)"));
  n.jobs = {RunningJob(7)};
  HealthConfig cfg;
  cfg.conditions.clear();  // an operator's own rule list does not turn it off
  NodePlan p = PlanNodeHealth(n, cfg, kNow);
  const Action* a = Find(p, plan::DrainSlurmNode::kName);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->As<plan::DrainSlurmNode>().reason,
            "k8s-bridge: DrainRequested=True: swap PSU (alice)");
  EXPECT_EQ(Find(p, plan::RequeueSlurmJobs::kName), nullptr) << "a drain lets jobs finish";
  // Status False (or the condition gone): nothing fires.
  SetCondition(&n, Cond("DrainRequested", "False", "BridgectlDrain", ""));
  EXPECT_TRUE(AssessHealth(*n.k8s, cfg, kNow).firing.empty());
  // A configured rule on the type is not counted twice.
  cfg.conditions = {{"DrainRequested", {"True"}, std::chrono::milliseconds(0), Severity::kDrain}};
  SetCondition(&n, Cond("DrainRequested", "True", "BridgectlDrain", "x"));
  EXPECT_EQ(AssessHealth(*n.k8s, cfg, kNow).firing.size(), 1u);
}

TEST(SlurmReason, SanitizesAndLimits) {
  EXPECT_EQ(SlurmReason("GPUHealthy=False: a\nb\tc"), "k8s-bridge: GPUHealthy=False: a b c");
  std::string huge;
  for (int i = 0; i < 200; ++i) huge += "é";  // 2 bytes each
  std::string r = SlurmReason(huge);
  EXPECT_LE(r.size(), kMaxReasonBytes);
  EXPECT_TRUE(r.ends_with("...")) << r;
  // The cut never splits a character: everything before "..." is whole "é"s.
  std::string body = r.substr(12, r.size() - 15);
  EXPECT_EQ(body.size() % 2, 0u);
  EXPECT_EQ(ConditionMessage(std::string(5000, 'x')).size(), 1024u);
  EXPECT_EQ(SlurmReason(""), "k8s-bridge: ");
}

TEST(AssessHealth, EmptyOrHugeConditionMessages) {
  K8sNode k;
  k.conditions = {Cond("GPUHealthy", "False", "", ""),
                  Cond("SomethingElse", "False", "", std::string(100000, 'm'))};
  HealthVerdict v = AssessHealth(k, HealthConfig{}, kNow);
  ASSERT_EQ(v.firing.size(), 1u);
  EXPECT_EQ(v.firing[0].description, "GPUHealthy=False");
}

}  // namespace
}  // namespace skb::health

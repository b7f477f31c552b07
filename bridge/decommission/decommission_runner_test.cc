// SPDX-License-Identifier: Apache-2.0
#include "bridge/decommission/decommission_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bridge/slurm/fake_slurm_client.h"
#include "k8s/api_event_recorder.h"
#include "k8s/fake_kube_client.h"
#include "k8s/time_format.h"
#include "src/base/clock.h"
#include "src/base/strings.h"

namespace skb::bridge::decommission {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kNs[] = "slurm-bridge";

class DecommissionerTest : public ::testing::Test {
 protected:
  DecommissionerTest() : clock_(Clock::TimePoint(std::chrono::seconds(1'800'000'000))) {
    cfg_.kubernetes.namespace_name = kNs;
  }

  Decommissioner Make(bool force = false) {
    return Decommissioner({.config = &cfg_,
                           .kube = &kube_,
                           .slurm = &slurm_,
                           .clock = &clock_,
                           .force = force,
                           .events = &events_});
  }

  // "reason message" of every Event written, after the recorder has written them.
  std::vector<std::string> Events() {
    events_.Flush();
    std::vector<std::string> out;
    auto list = kube_.List(k8s::Resource::Events(), "default", {});
    if (!list.ok()) return out;
    for (const json& e : list->items) {
      out.push_back(StrCat(e.value("reason", ""), " ", e["involvedObject"].value("name", ""), " ",
                           e.value("message", "")));
    }
    return out;
  }

  void AddK8sNode(const std::string& name, json annotations, json labels, json taints,
                  json conditions) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"annotations", annotations}, {"labels", labels}}},
                 {"spec", {{"taints", taints}}},
                 {"status", {{"conditions", conditions}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::Nodes(), "", node).ok());
  }

  void AddPod(const std::string& ns, const std::string& name, const std::string& node, json labels,
              json finalizers, int gpus) {
    json container = {{"name", "c"}, {"image", "x"}};
    if (gpus > 0) container["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name}, {"namespace", ns}, {"labels", labels}, {"finalizers", finalizers}}},
        {"spec", {{"nodeName", node}, {"containers", json::array({container})}}},
        {"status", {{"phase", "Running"}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::Pods(), ns, pod).ok());
  }

  void AddSlurmNode(const std::string& name, const std::string& reason) {
    slurm::NodeView n;
    n.name = name;
    n.base_state = skb::slurm::NodeBaseState::kIdle;
    n.drain = !reason.empty();
    n.reason = reason;
    slurm_.AddNode(n);
  }

  void AddJob(uint32_t id, const std::string& name, skb::slurm::JobState state,
              std::vector<std::string> nodes, const std::string& comment = "") {
    slurm::JobView j;
    j.job_id = id;
    j.name = name;
    j.state = state;
    j.nodes = std::move(nodes);
    j.admin_comment = comment;
    slurm_.AddJob(j);
  }

  void AddLease(const std::string& holder, Clock::TimePoint renewed) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", "slurm-k8s-bridge"}, {"namespace", kNs}}},
                  {"spec",
                   {{"holderIdentity", holder},
                    {"leaseDurationSeconds", 15},
                    {"renewTime", k8s::FormatMicroTime(renewed)}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::Leases(), kNs, lease).ok());
  }

  // A node mid-lend: kube-scheduler preempted node1's reservation (deleted, held by its
  // finalizer) for ml/infer, which waits; the bridge drained node1 to lend it and job 12 is
  // in its grace. Also: a pending placeholder, a hold rule, a tenant's quota, a preempted
  // job's record.
  void MidLend() {
    AddK8sNode("node1",
               {{"slurm-k8s-bridge.io/signalled-at", "1799999990"}, {"site.example/x", "keep"}},
               {{"slurm-k8s-bridge.io/managed", "true"}, {"slurm-k8s-bridge.io/swap-guard", "on"}},
               json::array({{{"key", "slurm-k8s-bridge.io/slurm-busy"}, {"effect", "NoSchedule"}},
                            {{"key", "site.example/gpu"}, {"effect", "NoSchedule"}}}),
               json::array({{{"type", "Ready"}, {"status", "True"}},
                            {{"type", "SlurmDrained"}, {"status", "True"}},
                            {{"type", "SlurmNodeHealthy"}, {"status", "True"}}}));
    AddPod(kNs, "skb-res-node1", "node1", {{"slurm-k8s-bridge.io/role", "reservation"}},
           json::array({"slurm-k8s-bridge.io/reservation"}), 8);
    ASSERT_TRUE(kube_.Delete(k8s::Resource::Pods(), kNs, "skb-res-node1").ok());
    AddSlurmNode("node1", "k8s-bridge: lent to ml/infer");
    AddJob(12, "train", skb::slurm::JobState::kRunning, {"node1"},
           "k8s-bridge:preemptible=true k8s-bridge-preempted=1799999000@ml/old");
    AddJob(30, "skb-gpu-hold", skb::slurm::JobState::kPending, {});
    json rule = {{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "DeviceTaintRule"},
                 {"metadata",
                  {{"name", "skb-hold-node1-gpu-0"},
                   {"labels",
                    {{"app.kubernetes.io/managed-by", "slurm-k8s-bridge"},
                     {"slurm-k8s-bridge.io/node", "node1"}}}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::DeviceTaintRules(), "", rule).ok());
    json quota = {{"apiVersion", "v1"},
                  {"kind", "ResourceQuota"},
                  {"metadata",
                   {{"name", "skb-guarantee"},
                    {"namespace", "team-a"},
                    {"labels", {{"app.kubernetes.io/managed-by", "slurm-k8s-bridge"}}}}}};
    ASSERT_TRUE(kube_.Create(k8s::Resource::ResourceQuotas(), "team-a", quota).ok());
  }

  std::vector<std::string> RunAndSay(Decommissioner& d, bool dry_run, Outcome* out = nullptr) {
    std::vector<std::string> lines;
    auto r = d.Run(dry_run, [&](std::string_view l) { lines.emplace_back(l); });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok() && out != nullptr) *out = *std::move(r);
    return lines;
  }

  void SetUp() override { events_.Start(); }

  config::Config cfg_;
  k8s::FakeKubeClient kube_;
  k8s::ApiEventRecorder events_{&kube_, {}};
  slurm::FakeSlurmClient slurm_;
  SimulatedClock clock_;
};

TEST_F(DecommissionerTest, MidLendTheJobRunsOnTheNodeStaysSlurmsAndNothingOfTheBridgeIsLeft) {
  MidLend();
  Decommissioner d = Make();
  Outcome out;
  std::vector<std::string> lines = RunAndSay(d, /*dry_run=*/false, &out);
  EXPECT_THAT(out.failed, IsEmpty());
  EXPECT_THAT(lines, Contains("node1: Slurm's (Slurm job 12 runs there)"));
  EXPECT_THAT(lines, Contains("done: cordon node1 in Kubernetes"));

  // Kubernetes: cordoned; the site's annotation, taint, label and the Ready condition kept,
  // the node selector's label too; nothing else of the bridge's.
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE((*node)["spec"].value("unschedulable", false));
  EXPECT_EQ((*node)["metadata"]["annotations"], json({{"site.example/x", "keep"}}));
  EXPECT_EQ((*node)["metadata"]["labels"], json({{"slurm-k8s-bridge.io/managed", "true"}}));
  EXPECT_EQ((*node)["spec"]["taints"],
            json::array({{{"key", "site.example/gpu"}, {"effect", "NoSchedule"}}}));
  EXPECT_EQ((*node)["status"]["conditions"],
            json::array({{{"type", "Ready"}, {"status", "True"}}}));
  EXPECT_FALSE(kube_.Get(k8s::Resource::Pods(), kNs, "skb-res-node1").ok());
  EXPECT_FALSE(kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-hold-node1-gpu-0").ok());
  EXPECT_FALSE(kube_.Get(k8s::Resource::ResourceQuotas(), "team-a", "skb-guarantee").ok());

  // Slurm: the lend's drain resumed, the job untouched but for its record, the placeholder
  // cancelled.
  EXPECT_FALSE(slurm_.Node("node1").drain);
  EXPECT_EQ(slurm_.Job(12).state, skb::slurm::JobState::kRunning);
  EXPECT_EQ(slurm_.Job(12).admin_comment, "k8s-bridge:preemptible=true");
  EXPECT_EQ(slurm_.Job(30).state, skb::slurm::JobState::kCancelled);
  // The cordon was written before anything it protects was released.
  const std::vector<std::string> writes = slurm_.Writes();
  EXPECT_THAT(writes, Contains("ResumeNode node1"));

  // Kubernetes records the outcome on the node.
  EXPECT_THAT(Events(), Contains("BridgeDecommissioned node1 slurm-k8s-bridge decommissioned: "
                                 "the node is Slurm's (Slurm job 12 runs there)"));

  // A second run finds nothing.
  Outcome again;
  std::vector<std::string> second = RunAndSay(d, /*dry_run=*/false, &again);
  EXPECT_THAT(again.plan.steps, IsEmpty());
  EXPECT_THAT(second, ElementsAre("nothing of the bridge is left"));
}

TEST_F(DecommissionerTest, ADryRunSaysEveryStepAndChangesNothing) {
  MidLend();
  Decommissioner d = Make();
  std::vector<std::string> lines = RunAndSay(d, /*dry_run=*/true);
  EXPECT_THAT(lines, Contains("would cordon node1 in Kubernetes"));
  EXPECT_THAT(lines, Contains("would cancel placeholder job 30"));
  EXPECT_THAT(slurm_.Writes(), IsEmpty());
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node1");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE((*node)["spec"].value("unschedulable", false));
  EXPECT_TRUE(kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-hold-node1-gpu-0").ok());
}

TEST_F(DecommissionerTest, ARunningBridgeIsRefusedAndAStaleLeaseIsNot) {
  MidLend();
  AddLease("bridge-0", clock_.Now() - std::chrono::seconds(3));
  Decommissioner d = Make();
  auto r = d.Run(/*dry_run=*/false, [](std::string_view) {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("held by 'bridge-0', renewed 3 s ago"));
  EXPECT_THAT(slurm_.Writes(), IsEmpty());
  // --force goes on; so does a Lease not renewed within its duration.
  Decommissioner forced = Make(/*force=*/true);
  EXPECT_TRUE(forced.CheckNoBridgeActs().ok());
  clock_.Advance(std::chrono::seconds(20));
  EXPECT_TRUE(d.CheckNoBridgeActs().ok());
}

TEST_F(DecommissionerTest, AFailedCordonReleasesNothingItProtects) {
  MidLend();
  // node1 goes from Kubernetes once the nodes and pods are read (at the third list, the
  // rules'), so the cordon fails: the reservation, the placeholder and the rule stay.
  int lists = 0;
  kube_.OnList([&](const k8s::ListOptions&) {
    if (++lists == 3) kube_.DeleteSilently(k8s::Resource::Nodes(), "", "node1");
  });
  Decommissioner d = Make();
  Outcome out;
  std::vector<std::string> lines = RunAndSay(d, /*dry_run=*/false, &out);
  ASSERT_FALSE(out.failed.empty());
  EXPECT_EQ(out.failed.front().first, "cordon node1 in Kubernetes");
  EXPECT_THAT(lines,
              Contains(HasSubstr("skipped: release reservation slurm-bridge/skb-res-node1")));
  EXPECT_TRUE(kube_.Get(k8s::Resource::Pods(), kNs, "skb-res-node1").ok());
  EXPECT_TRUE(kube_.Get(k8s::Resource::DeviceTaintRules(), "", "skb-hold-node1-gpu-0").ok());
  EXPECT_EQ(slurm_.Job(30).state, skb::slurm::JobState::kPending);
  EXPECT_TRUE(slurm_.Node("node1").drain);
  EXPECT_THAT(Events(), Contains(HasSubstr("DecommissionIncomplete node1 the node is Slurm's")));
}

TEST_F(DecommissionerTest, ALentNodeWithItsPodStaysKubernetesAndIsDrainedInTheSitesWords) {
  AddK8sNode("node2", {{"slurm-k8s-bridge.io/lent-at", "1799999000"}}, json::object(),
             json::array(), json::array());
  AddPod("ml", "infer", "node2", json::object(), json::array(), 8);
  AddPod("ml", "cpu-only", "node2", json::object(), json::array(), 0);
  AddSlurmNode("node2", "k8s-bridge: lent to ml/infer");
  Decommissioner d = Make();
  Outcome out;
  std::vector<std::string> lines = RunAndSay(d, /*dry_run=*/false, &out);
  EXPECT_THAT(out.failed, IsEmpty());
  EXPECT_THAT(lines, Contains("node2: Kubernetes' (pod ml/infer uses its GPUs)"));
  EXPECT_TRUE(slurm_.Node("node2").drain);
  EXPECT_EQ(slurm_.Node("node2").reason,
            "decommissioned: held by Kubernetes: pod ml/infer uses its GPUs");
  auto node = kube_.Get(k8s::Resource::Nodes(), "", "node2");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE((*node)["spec"].value("unschedulable", false));
  EXPECT_THAT((*node)["metadata"].value("annotations", json::object()).dump(),
              Not(HasSubstr("slurm-k8s-bridge.io")));
  // The pods run on.
  EXPECT_TRUE(kube_.Get(k8s::Resource::Pods(), "ml", "infer").ok());
}

TEST_F(DecommissionerTest, SomebodyElsesObjectsOfTheSameNameAreLeftAlone) {
  // A pod named like a reservation without the role label; a quota of that name that is not
  // the bridge's is not even listed (the selector), nor is a rule without the label.
  AddK8sNode("node3", {{"slurm-k8s-bridge.io/idle-since", "1"}}, json::object(), json::array(),
             json::array());
  AddSlurmNode("node3", "");
  Decommissioner d = Make();
  Plan plan;
  plan.steps.push_back(skb::decommission::ReleaseReservation{{kNs, "skb-res-node3"}});
  AddPod(kNs, "skb-res-node3", "node3", {{"app", "mine"}}, json::array(), 0);
  auto r = d.RunStep(plan.steps.front());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(kube_.Get(k8s::Resource::Pods(), kNs, "skb-res-node3").ok());
  AddJob(44, "train", skb::slurm::JobState::kPending, {});
  auto c = d.RunStep(skb::decommission::CancelPlaceholder{44});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(slurm_.Job(44).state, skb::slurm::JobState::kPending);
}

}  // namespace
}  // namespace skb::bridge::decommission

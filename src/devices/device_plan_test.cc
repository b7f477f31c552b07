// SPDX-License-Identifier: Apache-2.0
#include "src/devices/device_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <variant>

#include "src/base/overloaded.h"
#include "src/base/strings.h"
#include "src/devices/gres.h"
#include "src/devices/test_support.h"
#include "src/health/maintenance.h"
#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using test_support::kNow;

config::Config Cfg() {
  config::Config cfg;
  cfg.lending.enabled = true;
  return cfg;
}

NodeDevices Node(std::string name, int gpus, std::string model = "h100") {
  NodeDevices n;
  n.node = std::move(name);
  n.model = std::move(model);
  for (int i = 0; i < gpus; ++i) n.devices.push_back({i, DeviceName(i), /*k8s_hold=*/true});
  return n;
}

void AddJob(NodeDevices* n, uint32_t id, std::string_view gres, bool preemptible,
            Clock::Duration ran) {
  NodeJob j;
  j.view.job_id = id;
  j.view.state = slurm::JobState::kRunning;
  j.view.requeue = true;
  j.view.nodes = {n->node};
  j.view.start_time = ownership::ToUnix(kNow - ran);
  j.view.admin_comment =
      preemptible ? "k8s-bridge:preemptible=true" : "k8s-bridge:preemptible=false";
  auto idx = ParseGpuIndices(gres);
  EXPECT_TRUE(idx.ok()) << idx.status();
  j.indices = *idx;
  j.view.gpus_per_node = static_cast<int64_t>(j.indices.size());
  n->jobs.push_back(std::move(j));
}

PendingPod Pod(int64_t gpus, std::string name = "ml/infer-0") {
  return {std::move(name), gpus, 1'000'000, ""};
}

// Per device: never a Slurm job and an allocated claim, never a device no side holds.
void ExpectInvariant(const NodeDevices& n) {
  for (const DeviceView& v : Owners(n)) {
    EXPECT_FALSE(v.job != 0 && !v.pods.empty()) << v.name << " used by both sides";
    EXPECT_NE(v.owner, Owner::kUnguarded) << v.name << " held by neither side";
  }
}

Placeholder* FindPlaceholder(NodeDevices* n, uint32_t job_id) {
  for (Placeholder& q : n->placeholders) {
    if (q.job_id == job_id) return &q;
  }
  return nullptr;
}

void SetHolds(NodeDevices* n, const std::vector<std::string>& devices, bool hold) {
  for (Device& d : n->devices) {
    if (std::count(devices.begin(), devices.end(), d.name)) d.k8s_hold = hold;
  }
}

// A fake executor over the node: carries out each action as the daemon would.
void Apply(NodeDevices* n, const std::vector<DeviceAction>& actions) {
  for (const DeviceAction& a : actions) {
    std::visit(
        Overloaded{
            [&](const AddDeviceHold& o) { SetHolds(n, o.devices, true); },
            [&](const RemoveDeviceHold& o) { SetHolds(n, o.devices, false); },
            [&](const DropDeviceHold& o) { SetHolds(n, o.devices, false); },
            [&](const SubmitPlaceholder& o) {
              static uint32_t next_job = 900;  // slurmctld never reuses a job id
              Placeholder p{next_job++, o.pod, o.gpus, o.victims};
              p.profile = o.profile;
              p.health = o.health;
              p.slot = o.slot;
              p.under_job = o.under_job;
              n->placeholders.push_back(std::move(p));
            },
            [&](const SignalJobs& o) {
              const std::vector<uint32_t>& ids = o.jobs.job_ids;
              for (NodeJob& j : n->jobs) {
                if (std::count(ids.begin(), ids.end(), j.view.job_id)) {
                  j.signalled_at = ownership::FromUnixMillis(o.at_ms);
                  j.signalled_exactly = true;
                }
              }
            },
            [&](const plan::PreemptSlurmJobs& o) {
              std::erase_if(n->jobs, [&](const NodeJob& j) {
                return std::count(o.job_ids.begin(), o.job_ids.end(), j.view.job_id) > 0;
              });
            },
            [&](const RecordIdleSince& o) {
              FindPlaceholder(n, o.placeholder_job)->idle_since =
                  o.at_ms == 0 ? std::nullopt : std::optional(ownership::FromUnixMillis(o.at_ms));
            },
            [&](const MarkReturning& o) {
              FindPlaceholder(n, o.placeholder_job)->returning = true;
            },
            [&](const EndPlaceholder& o) {
              std::erase_if(n->placeholders,
                            [&](const Placeholder& q) { return q.job_id == o.placeholder_job; });
            },
            [&](const plan::EvictPod&) {},  // the pod goes later (its claim with it)
            [&](const plan::SetNodeCondition& o) {
              n->devices_condition = test_support::AsWritten(o.condition);
            },
            [&](const RecordUnusedGive& o) {
              if (auto g =
                      AddUnusedGive(n->unused_gives, {o.pod, o.placeholder_job, o.at_unix}, 0)) {
                n->unused_gives = *g;
              }
            },
        },
        a.op);
    ExpectInvariant(*n);
  }
}

// A fake slurmctld: starts each pending placeholder on the lowest free indices of the GRES
// type it asked for (whole GPUs or its MIG profile).
void StartPlaceholders(NodeDevices* n, Clock::TimePoint now) {
  for (Placeholder& p : n->placeholders) {
    if (p.running) continue;
    std::vector<int64_t> free;
    const std::vector<DeviceView> views = Owners(*n);
    for (size_t i = 0; i < views.size(); ++i) {
      const DeviceView& v = views[i];
      if (v.job == 0 && v.placeholder == 0 && n->devices[i].profile == p.profile) {
        free.push_back(n->devices[i].index);
      }
    }
    if (static_cast<int64_t>(free.size()) < p.gpus) continue;
    free.resize(static_cast<size_t>(p.gpus));
    p.running = true;
    p.indices = free;
    p.start = now;
  }
}

std::vector<std::string_view> Kinds(const std::vector<DeviceAction>& actions) {
  std::vector<std::string_view> out;
  for (const DeviceAction& a : actions) out.push_back(a.Kind());
  return out;
}

TEST(Owners, ReadsEachSidesHold) {
  NodeDevices n = Node("node1", 4);
  n.devices[1].k8s_hold = false;
  n.devices[3].k8s_hold = false;
  n.placeholders.push_back({7, "ml/a", 2, {}, true, {2, 3}, kNow});
  std::vector<DeviceView> v = Owners(n);
  EXPECT_EQ(v[0].owner, Owner::kSlurm);
  EXPECT_EQ(v[1].owner, Owner::kUnguarded);
  EXPECT_EQ(v[2].owner, Owner::kToKubernetes);
  EXPECT_EQ(v[3].owner, Owner::kKubernetes);
  n.placeholders[0].returning = true;
  EXPECT_EQ(Owners(n)[2].owner, Owner::kToSlurm);
  EXPECT_EQ(OwnerName(Owner::kToSlurm), "to-slurm");
}

TEST(SelectOnNode, TakesIdleGpusFirstWithoutPreempting) {
  NodeDevices n = Node("node1", 8);
  AddJob(&n, 1, "gpu:4(IDX:0-3)", /*preemptible=*/true, hours(1));
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-4", "gpu-5"));
  EXPECT_THAT(s->victims, IsEmpty());
  EXPECT_EQ(s->work_lost, 0);
}

TEST(SelectOnNode, PreemptsTheFewestPreemptibleJobsLosingTheLeastWork) {
  NodeDevices n = Node("node1", 8);
  AddJob(&n, 1, "gpu:1(IDX:0)", true, hours(10));
  AddJob(&n, 2, "gpu:1(IDX:1)", true, hours(10));
  AddJob(&n, 3, "gpu:h100:2(IDX:2-3)", true, hours(1));
  AddJob(&n, 4, "gpu:4(IDX:4-7)", /*preemptible=*/false, minutes(1));
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, IsEmpty());
  EXPECT_THAT(s->victims, ElementsAre(3u));  // one job, 2 GPU-hours (not 1+2: 20)
  EXPECT_EQ(s->victim_gpus, 2);
  EXPECT_DOUBLE_EQ(s->work_lost, 2 * 3600.0);

  // One idle GPU: a 1-GPU job would do, but the 2-GPU job loses less work.
  NodeDevices m = Node("node2", 4);
  AddJob(&m, 5, "gpu:1(IDX:0)", true, hours(5));
  AddJob(&m, 6, "gpu:2(IDX:1-2)", true, hours(1));
  s = SelectOnNode(m, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-3"));
  EXPECT_THAT(s->victims, ElementsAre(6u));
}

// GPUs 0-1 whole (h100), 2-5 four 1g.10gb slices of GPU 2, 6 a 3g.40gb slice of GPU 3.
NodeDevices MigNode() {
  NodeDevices n = Node("node1", 2);
  n.whole_gres_type = "h100";
  for (int i = 0; i < 4; ++i) {
    n.devices.push_back({.index = 2 + i,
                         .name = StrCat("gpu-2-mig-19-", i, "-1"),
                         .k8s_hold = true,
                         .profile = "1g.10gb"});
  }
  n.devices.push_back(
      {.index = 6, .name = "gpu-3-mig-9-0-4", .k8s_hold = true, .profile = "3g.40gb"});
  return n;
}

PendingPod MigPod(int64_t slices, std::string profile = "1g.10gb") {
  PendingPod p = Pod(slices, "ml/mig-0");
  p.profile = std::move(profile);
  return p;
}

TEST(SelectOnNode, AMigPodTakesSlicesOfItsProfileOnlyAndWholeGpusStayWhole) {
  NodeDevices n = MigNode();
  AddJob(&n, 1, "gpu:1g.10gb:1(IDX:2)", true, hours(1));
  AddJob(&n, 2, "gpu:h100:2(IDX:0-1)", /*preemptible=*/false, hours(1));
  AddJob(&n, 3, "gpu:1g.10gb:3(IDX:3-5)", true, hours(9));
  // The 3g.40gb slice is idle, but it is not what the pod asks for: job 1 loses least.
  auto s = SelectOnNode(n, MigPod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, IsEmpty());
  EXPECT_THAT(s->victims, ElementsAre(1u));
  EXPECT_EQ(s->gres_type, "1g.10gb");
  std::vector<DeviceAction> give = PlanGive(*s, MigPod(1));
  ASSERT_EQ(give.size(), 1u);
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().gres_type, "1g.10gb");
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().profile, "1g.10gb");
  EXPECT_THAT(give[0].event_message,
              HasSubstr("placeholder for 1 1g.10gb slice(s) for ml/mig-0: 0 idle 1g.10gb slices "
                        "and 1 of preemptible job(s) 1"));
  s = SelectOnNode(n, MigPod(1, "3g.40gb"), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-3-mig-9-0-4"));

  // A whole-GPU pod: the slices are neither idle GPUs nor victims' GPUs for it.
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("0 idle GPUs and 1 more needed"));
  EXPECT_THAT(why, HasSubstr("(2 GPUs run non-preemptible"));
  n.jobs.erase(n.jobs.begin() + 1);
  s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-0", "gpu-1"));
  EXPECT_EQ(s->gres_type, "h100");  // so that Slurm cannot give the placeholder a slice

  EXPECT_FALSE(SelectOnNode(n, MigPod(1, "2g.20gb"), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("node node1 has no 2g.20gb slices"));
  n.whole_gres_type.clear();
  EXPECT_FALSE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("whole GPUs of no single Slurm GRES type"));
  // A node without slices: untyped, as before.
  s = SelectOnNode(Node("node2", 2), Pod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gres_type, "");
  EXPECT_FALSE(SelectOnNode(Node("node2", 2), MigPod(1), Cfg(), kNow, &why));
}

TEST(PlanNode, AGiveOfAMigSliceLiftsTheHoldOfTheSliceSlurmPicked) {
  config::Config cfg = Cfg();
  cfg.lending.default_grace = seconds(30);
  NodeDevices n = MigNode();
  AddJob(&n, 1, "gpu:1g.10gb:2(IDX:2-3)", true, hours(1));
  AddJob(&n, 2, "gpu:1g.10gb:2(IDX:4-5)", /*preemptible=*/false, hours(1));
  Clock::TimePoint t = kNow;
  auto s = SelectOnNode(n, MigPod(1), cfg, t);
  ASSERT_TRUE(s);
  ASSERT_THAT(s->victims, ElementsAre(1u));
  Apply(&n, PlanGive(*s, MigPod(1)));
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_EQ(n.placeholders[0].profile, "1g.10gb");
  // Signal, grace, preempt.
  for (int step = 0; step < 3 && !n.jobs.empty() && n.jobs.size() != 1; ++step) {
    NodePlan p = PlanNode(n, cfg, t);
    Apply(&n, p.actions);
    t += seconds(31);
  }
  ASSERT_EQ(n.jobs.size(), 1u);
  EXPECT_EQ(n.jobs[0].view.job_id, 2u);  // the non-preemptible slices' job never stops
  StartPlaceholders(&n, t);
  ASSERT_TRUE(n.placeholders[0].running);
  EXPECT_THAT(n.placeholders[0].indices, ElementsAre(2));
  NodePlan p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RemoveDeviceHold::kName));
  EXPECT_THAT(p.actions[0].As<RemoveDeviceHold>().devices, ElementsAre("gpu-2-mig-19-0-1"));
  Apply(&n, p.actions);
  EXPECT_EQ(Owners(n)[2].owner, Owner::kKubernetes);
  EXPECT_EQ(Owners(n)[3].owner, Owner::kSlurm);  // the victim's other slice goes back to Slurm
  EXPECT_EQ(Owners(n)[0].owner, Owner::kSlurm);
}

TEST(PlanNode, APendingMigGiveCountsOnlyFreeSlicesOfItsProfile) {
  NodeDevices n = MigNode();
  AddJob(&n, 1, "gpu:1g.10gb:4(IDX:2-5)", /*preemptible=*/false, hours(1));
  // A give planned on an idle slice Slurm gave to job 1 meanwhile; whole GPUs and the
  // 3g.40gb slice are free, but they are not what it waits for.
  n.placeholders.push_back({900, "ml/mig-0", 1, {}});
  n.placeholders[0].profile = "1g.10gb";
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(EndPlaceholder::kName));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("(0 free)"));
}

TEST(SelectOnNode, NeverTakesANonPreemptibleJobsGpus) {
  NodeDevices n = Node("node1", 8);
  AddJob(&n, 1, "gpu:4(IDX:0-3)", /*preemptible=*/false, hours(1));
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(5), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("4 GPUs run non-preemptible"));
  auto s = SelectOnNode(n, Pod(4), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-4", "gpu-5", "gpu-6", "gpu-7"));

  // A job that cannot be requeued is not preemptible either (PolicyFor).
  NodeDevices m = Node("node2", 2);
  AddJob(&m, 2, "gpu:2(IDX:0-1)", true, hours(1));
  m.jobs[0].view.requeue = false;
  EXPECT_FALSE(SelectOnNode(m, Pod(1), Cfg(), kNow, &why));
}

// Guaranteed quotas: a job within its tenant's guarantee keeps its GPUs, though the lending
// policy would preempt it; the give takes the borrowed job next to it.
TEST(SelectOnNode, NeverTakesTheGpusOfAJobWithinItsTenantsGuarantee) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));  // loses less work: the first choice
  AddJob(&n, 2, "gpu:2(IDX:2-3)", true, hours(10));
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(1u));
  n.guaranteed_jobs = {{1, "team-a"}};
  s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(2u));
  n.guaranteed_jobs[2] = "team-a";
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(2), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("4 GPUs run non-preemptible"));
}

// A pod beyond its tenant's guarantee borrows: idle GPUs yes, a job's never.
TEST(SelectOnNode, ABorrowingPodTakesIdleGpusButNoJobs) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  PendingPod pod = Pod(2);
  pod.borrowing = "tenant team-b uses 8 of its 8 GPUs guaranteed";
  auto s = SelectOnNode(n, pod, Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->idle, ElementsAre("gpu-2", "gpu-3"));
  pod.gpus = 3;
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, pod, Cfg(), kNow, &why));
  EXPECT_EQ(why,
            "ml/infer-0 may take no job's GPUs: tenant team-b uses 8 of its 8 GPUs guaranteed "
            "(quotas); node node1 has 2 idle GPUs");
  pod.borrowing.clear();
  s = SelectOnNode(n, pod, Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(1u));
}

// Makes n->jobs[i] component `offset` of heterogeneous job `het`, whose other components
// are `others` (on other nodes), as Observe fills it in.
void MakeHet(NodeDevices* n, size_t i, uint32_t het, uint32_t offset,
             std::vector<slurm::JobView> others) {
  NodeJob& j = n->jobs[i];
  j.view.het_job_id = het;
  j.view.het_job_offset = offset;
  j.view.gpu_indices = {{n->node, j.indices}};
  others.push_back(j.view);
  j.het_components = std::move(others);
}

slurm::JobView Component(uint32_t id, uint32_t het, uint32_t offset, std::string node,
                         std::vector<int64_t> indices, bool preemptible) {
  slurm::JobView c;
  c.job_id = id;
  c.het_job_id = het;
  c.het_job_offset = offset;
  c.state = slurm::JobState::kRunning;
  c.requeue = true;
  c.nodes = {node};
  c.gpu_indices = {{node, std::move(indices)}};
  c.start_time = ownership::ToUnix(kNow - hours(1));
  c.admin_comment = preemptible ? "k8s-bridge:preemptible=true" : "k8s-bridge:preemptible=false";
  return c;
}

// Slurm preempts a heterogeneous job whole: a component here is a victim only if every
// component is preemptible, and what it costs is every component's GPUs on every node.
TEST(SelectOnNode, AHeterogeneousJobIsJudgedAndCostedAsAWhole) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 5, "gpu:2(IDX:0-1)", true, hours(1));
  AddJob(&n, 6, "gpu:2(IDX:2-3)", true, hours(1));
  // Job 6 is component 1 of heterogeneous job 20, whose leader holds 8 GPUs on node2.
  MakeHet(&n, 1, 20, 1, {Component(20, 20, 0, "node2", {0, 1, 2, 3, 4, 5, 6, 7}, true)});
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(5u)) << "job 6 would throw away 10 GPU-hours, not 2";
  EXPECT_DOUBLE_EQ(s->work_lost, 2 * 3600.0);
  s = SelectOnNode(n, Pod(4), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(5u, 6u));
  EXPECT_DOUBLE_EQ(s->work_lost, (2 + 10) * 3600.0);
  EXPECT_THAT(s->why, HasSubstr("heterogeneous job 20 (components 20 on node2, 6 on node1) is "
                                "preempted as a whole"));

  // Its leader may not be preempted: neither may job 6, though its own note says it may.
  n.jobs[1].het_components[0].admin_comment = "k8s-bridge:preemptible=false";
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(4), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("2 GPUs run non-preemptible"));
}

// Two components of one heterogeneous job on the same node are one victim: freed together.
TEST(SelectOnNode, ComponentsOnOneNodeAreOneVictim) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 30, "gpu:1(IDX:0)", true, hours(1));
  AddJob(&n, 31, "gpu:1(IDX:1)", true, hours(1));
  AddJob(&n, 7, "gpu:2(IDX:2-3)", true, hours(3));
  MakeHet(&n, 0, 30, 0, {Component(31, 30, 1, "node1", {1}, true)});
  MakeHet(&n, 1, 30, 1, {Component(30, 30, 0, "node1", {0}, true)});
  auto s = SelectOnNode(n, Pod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(30u, 31u)) << "one GPU needed, both components go";
  EXPECT_EQ(s->victim_gpus, 2);
  EXPECT_DOUBLE_EQ(s->work_lost, 2 * 3600.0);
}

// GPUs already lent and idle count toward the pod: the give moves only what is missing.
TEST(SelectOnNode, CountsLentIdleGpusTowardThePod) {
  NodeDevices n = Node("node1", 4);
  n.devices[0].k8s_hold = false;
  n.devices[1].k8s_hold = false;
  n.placeholders.push_back({7, "ml/old", 2, {}, true, {0, 1}, kNow});
  n.claims.push_back({"ml/busy", {"gpu-1"}, true});
  AddJob(&n, 1, "gpu:1(IDX:2)", true, hours(1));
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->lent_idle, ElementsAre("gpu-0"));
  EXPECT_EQ(s->gpus, 1);
  EXPECT_THAT(s->idle, ElementsAre("gpu-3"));
  EXPECT_THAT(s->victims, IsEmpty());
  std::vector<DeviceAction> give = PlanGive(*s, Pod(2));
  ASSERT_EQ(give.size(), 1u);
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().gpus, 1);
}

// GPUs lifted for a pod that kube-scheduler has not placed yet are that pod's: counted for
// a second pod, both would race for them and one would starve unseen. Once the first pod is
// gone or placed elsewhere, they are anyone's again.
TEST(SelectOnNode, GpusLiftedForAPodStillWaitingAreNotCountedForAnother) {
  NodeDevices n = Node("node1", 6);
  n.devices[0].k8s_hold = false;
  n.devices[1].k8s_hold = false;
  n.placeholders.push_back({7, "ml/first", 2, {}, true, {0, 1}, kNow});
  n.placeholders[0].pod_waiting = true;
  auto s = SelectOnNode(n, Pod(2, "ml/second"), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->lent_idle, IsEmpty());
  EXPECT_EQ(s->gpus, 2);
  EXPECT_THAT(s->idle, ElementsAre("gpu-2", "gpu-3"));
  // Its own pod counts them (a placeholder that serves it is ChooseNode's to see).
  s = SelectOnNode(n, Pod(2, "ml/first"), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->lent_idle, ElementsAre("gpu-0"));
  n.placeholders[0].pod_waiting = false;
  s = SelectOnNode(n, Pod(2, "ml/second"), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->lent_idle, ElementsAre("gpu-0"));
  EXPECT_EQ(s->gpus, 1);
}

// kube-scheduler placed another pod on the GPUs lifted for `ml/first`, which still waits:
// the placeholder no longer serves it, and it gets a give of its own (the message says who
// took the first one). While its lifted GPUs are free, it is served and gets none.
TEST(ChooseNode, APodWhoseLiftedGpusWentToAnotherPodGetsAGiveOfItsOwn) {
  NodeDevices n = Node("node1", 6);
  n.devices[0].k8s_hold = false;
  n.devices[1].k8s_hold = false;
  n.placeholders.push_back({7, "ml/first", 2, {}, true, {0, 1}, kNow});
  n.placeholders[0].pod_waiting = true;
  std::vector<NodeDevices> nodes = {n};
  std::string why;
  EXPECT_FALSE(ChooseNode(nodes, Pod(2, "ml/first"), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("a placeholder already serves ml/first"));

  nodes[0].claims.push_back({"ml/thief", {"gpu-0", "gpu-1"}, true});
  const auto s = ChooseNode(nodes, Pod(2, "ml/first"), Cfg(), kNow, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_EQ(s->gpus, 2);
  EXPECT_THAT(s->idle, ElementsAre("gpu-2", "gpu-3"));
  EXPECT_THAT(s->why, HasSubstr("the GPUs placeholder 7 lifted for it on node1 went to ml/thief"));
  // The give hands placeholder 7 to the pod that took its GPUs, then asks for a new one.
  EXPECT_EQ(s->taken_job, 7u);
  EXPECT_EQ(s->taken_by, "ml/thief");
  const std::vector<DeviceAction> give = PlanGive(*s, Pod(2, "ml/first"));
  ASSERT_EQ(give.size(), 1u);
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().taken_job, 7u);
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().taken_by, "ml/thief");
  // Placed at last (no longer waiting): nothing more for it.
  nodes[0].placeholders[0].pod_waiting = false;
  EXPECT_FALSE(ChooseNode(nodes, Pod(2, "ml/first"), Cfg(), kNow, &why));
}

TEST(SelectOnNode, SkipsNodesWithAGiveInFlightOrTheWrongModel) {
  NodeDevices n = Node("node1", 8);
  n.placeholders.push_back({9, "ml/other", 2});
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("a give is in flight"));
  NodeDevices m = Node("node2", 8, "a100");
  PendingPod p = Pod(1);
  p.model = "h100";
  EXPECT_FALSE(SelectOnNode(m, p, Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("wants h100"));
}

// A node whose placeholder partition could end or preempt a placeholder gets no give; the
// pod's waiting reason says why, and another node serves it.
TEST(ChooseNode, NoGiveWhereThePlaceholderPartitionCouldEndAPlaceholder) {
  std::vector<NodeDevices> nodes = {Node("node1", 2), Node("node2", 2)};
  nodes[0].no_gives = "the placeholder partition skb-gpu-hold has MaxTime=60 min";
  std::string why;
  const auto chosen = ChooseNode(nodes, Pod(1), Cfg(), kNow, &why);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->node, "node2");
  nodes[1].no_gives = nodes[0].no_gives;
  EXPECT_FALSE(ChooseNode(nodes, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("node node1: the placeholder partition skb-gpu-hold has MaxTime=60"));
}

// No node can serve: the waiting reason names the nodes that came nearest first (backed off
// for the pod, busy with a move, short of GPUs, unhealthy, not allowed), three at most.
TEST(ChooseNode, TheWaitingReasonNamesTheNearestNodesFirst) {
  config::Config cfg = Cfg();
  std::vector<NodeDevices> nodes = {Node("node1", 2, "a100"), Node("node2", 2), Node("node3", 2),
                                    Node("node4", 2), Node("node5", 2)};
  nodes[1].healthy = false;
  AddJob(&nodes[2], 1, "gpu:2(IDX:0-1)", false, hours(1));
  nodes[3].placeholders.push_back({.job_id = 5, .pod = "ml/other", .gpus = 1});
  nodes[4].unused_gives = {{"ml/infer-0", 9, ownership::ToUnix(kNow)}};
  PendingPod pod = Pod(1);
  pod.model = "h100";
  std::string why;
  EXPECT_FALSE(ChooseNode(nodes, pod, cfg, kNow, &why));
  EXPECT_EQ(why.find("node node5: 1 give(s) there went unused"), 0u) << why;
  EXPECT_THAT(why, HasSubstr("; node node4: a give is in flight (placeholder 5 for ml/other); "
                             "node node3: 0 idle GPUs"));
  EXPECT_THAT(why, HasSubstr("; and 2 more node(s)"));
  EXPECT_THAT(why, Not(HasSubstr("node2"))) << "unhealthy and wrong-model nodes come last";

  std::vector<NodeDevices> one = {nodes[0]};
  EXPECT_FALSE(ChooseNode(one, pod, cfg, kNow, &why));
  EXPECT_EQ(why, "node node1 has a100 GPUs, the pod wants h100");
}

TEST(ChooseNode, PrefersNoPreemptionThenLeastWorkOnPartialNodes) {
  std::vector<NodeDevices> nodes = {Node("node1", 8), Node("node2", 8), Node("node3", 8)};
  AddJob(&nodes[0], 1, "gpu:7(IDX:0-6)", true, hours(3));     // 1 idle
  AddJob(&nodes[1], 2, "gpu:5(IDX:0-4)", false, hours(3));    // 3 idle
  AddJob(&nodes[2], 3, "gpu:8(IDX:0-7)", true, minutes(10));  // 0 idle
  auto s = ChooseNode(nodes, Pod(2), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "node2");
  EXPECT_THAT(s->victims, IsEmpty());
  EXPECT_EQ(s->idle_left, 1);

  // Best fit: a 1-GPU pod goes where one idle GPU is left, not to the node with three.
  s = ChooseNode(nodes, Pod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "node1");
  EXPECT_EQ(s->idle_left, 0);

  // 4 GPUs: node2 cannot (non-preemptible); node1 loses 21 GPU-hours, node3 80 GPU-minutes.
  s = ChooseNode(nodes, Pod(4), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "node3");
  EXPECT_THAT(s->victims, ElementsAre(3u));

  std::string why;
  PendingPod low = Pod(1);
  low.priority = 10;
  EXPECT_FALSE(ChooseNode(nodes, low, Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("below the inference threshold"));
}

// At equal cost, a pod that names no GPU model is given GPUs of the model with the most GPUs
// among the candidates, best fit within it: pods that name the scarcer model can run nowhere
// else (on GPU-type-constrained trace variants the best fit alone packed pods of any model
// onto the small nodes of the scarce models). A pod that names a model is not moved by it,
// and cost comes first: idle GPUs of the scarce model before any preemption.
TEST(ChooseNode, APodOfAnyModelIsKeptOffTheScarcerModel) {
  std::vector<NodeDevices> nodes = {Node("a-t4", 2, "t4"), Node("g2-1", 8, "g2"),
                                    Node("g2-2", 8, "g2")};
  AddJob(&nodes[2], 1, "gpu:6(IDX:0-5)", false, hours(1));  // 2 idle: the best fit of g2
  auto s = ChooseNode(nodes, Pod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "g2-2")
      << "not a-t4 (first by name), though one idle GPU would be left there as well";
  EXPECT_EQ(s->idle_left, 1);

  PendingPod t4 = Pod(1);
  t4.model = "t4";
  s = ChooseNode(nodes, t4, Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "a-t4");

  AddJob(&nodes[1], 2, "gpu:8(IDX:0-7)", true, minutes(5));
  AddJob(&nodes[2], 3, "gpu:2(IDX:6-7)", true, minutes(5));
  s = ChooseNode(nodes, Pod(1), Cfg(), kNow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->node, "a-t4") << "idle GPUs of the scarce model before a preemption";
  EXPECT_THAT(s->victims, IsEmpty());
}

// A GPU the driver tainted (its health) takes no new claim. Slurm picks a placeholder's
// indices: while the tainted GPU is free in Slurm no give goes to its node; a job holding it
// is no victim (its end would free it as well); a lent idle one does not count for the pod.
TEST(ChooseNode, NoGiveCouldBeHandedAGpuTheDriverTainted) {
  std::vector<NodeDevices> nodes = {Node("node1", 4), Node("node2", 4)};
  nodes[0].devices[2].driver_taint = "gpu.nvidia.com/xid=79:NoSchedule";  // free in Slurm
  AddJob(&nodes[1], 1, "gpu:4(IDX:0-3)", true, hours(1));
  std::string why;
  auto s = ChooseNode(nodes, Pod(1), Cfg(), kNow, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_EQ(s->node, "node2") << "a preemption rather than a give that could get gpu-2";
  s = ChooseNode(std::span<const NodeDevices>(nodes).first(1), Pod(1), Cfg(), kNow, &why);
  EXPECT_FALSE(s);
  EXPECT_EQ(why,
            "node node1: gpu-2 carries the driver's taint gpu.nvidia.com/xid=79:NoSchedule and is "
            "free in Slurm, which could hand it to a placeholder");

  // The tainted GPU under a job: that job is no victim, another one is.
  NodeDevices busy = Node("node3", 4);
  AddJob(&busy, 2, "gpu:2(IDX:0-1)", true, minutes(1));  // least work lost, but holds gpu-1
  AddJob(&busy, 3, "gpu:2(IDX:2-3)", true, hours(2));
  busy.devices[1].driver_taint = "gpu.nvidia.com/xid=48:NoSchedule";
  std::vector<NodeDevices> one = {busy};
  s = ChooseNode(one, Pod(2), Cfg(), kNow, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_THAT(s->victims, ElementsAre(3u));

  // Lent to Kubernetes and idle, but tainted: the pod cannot have it; a GPU must still move.
  NodeDevices lent = Node("node4", 4);
  lent.devices[0].k8s_hold = false;
  lent.placeholders.push_back({.job_id = 9,
                               .pod = "ml/gone",
                               .gpus = 1,
                               .running = true,
                               .indices = {0},
                               .start = kNow - hours(1)});
  lent.devices[0].driver_taint = "gpu.nvidia.com/gpu-lost:NoExecute";
  one = {lent};
  s = ChooseNode(one, Pod(2), Cfg(), kNow, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_THAT(s->lent_idle, IsEmpty());
  EXPECT_EQ(s->gpus, 2);
}

// The driver taints a GPU free in Slurm (an XID): Slurm cannot be asked for that index, so
// one 1-GPU health hold per free GPU is submitted together (one Event); Slurm places them
// (lowest indices first here), the one on the bad GPU stays and the others end at once. The
// bad GPU is then out of both schedulers, gives use the node's other GPUs again, and when
// the driver clears it the health hold ends: the GPU is Slurm's again.
TEST(PlanNode, AGpuTheDriverTaintsIsHeldFromSlurmByAHealthHold) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:1(IDX:0)", false, hours(1));
  n.devices[2].driver_taint = "gpu.nvidia.com/xid=79:NoSchedule";
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why)) << "free in Slurm, not held yet";

  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions),
              ElementsAre("SubmitPlaceholder", "SubmitPlaceholder", "SubmitPlaceholder"));
  for (size_t k = 0; k < 3; ++k) {
    const auto& submit = p.actions[k].As<SubmitPlaceholder>();
    EXPECT_EQ(submit.pod, "");
    EXPECT_EQ(submit.gpus, 1);
    EXPECT_EQ(submit.health, "gpu-2");
    EXPECT_EQ(submit.slot, static_cast<int64_t>(k + 1));
    EXPECT_EQ(p.actions[k].quiet, k > 0) << "one Event for the batch";
  }
  EXPECT_EQ(p.actions[0].event_reason, "GpuHeldUnhealthy");
  EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
  EXPECT_THAT(p.actions[0].event_message,
              HasSubstr("gpu-2 (index 2, gpu.nvidia.com/xid=79:NoSchedule)"));
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty()) << "placed first, nothing twice";

  StartPlaceholders(&n, kNow);  // on gpu-1, gpu-2 and gpu-3
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder", "EndPlaceholder"));
  EXPECT_THAT(p.actions[0].As<EndPlaceholder>().devices, ElementsAre("gpu-1"));
  EXPECT_THAT(p.actions[1].As<EndPlaceholder>().devices, ElementsAre("gpu-3"));
  EXPECT_TRUE(p.actions[0].quiet && p.actions[1].quiet);
  Apply(&n, p.actions);
  EXPECT_EQ(Owners(n)[2].owner, Owner::kOut);
  EXPECT_EQ(OwnerName(Owner::kOut), "out");
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty());
  // Gives again, on the good GPUs only.
  auto s = SelectOnNode(n, Pod(2), Cfg(), kNow, &why);
  ASSERT_TRUE(s) << why;
  EXPECT_THAT(s->idle, ElementsAre("gpu-1", "gpu-3"));

  n.devices[2].driver_taint.clear();  // the driver finds it healthy again
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder"));
  EXPECT_THAT(p.actions[0].As<EndPlaceholder>().devices, ElementsAre("gpu-2"));
  EXPECT_EQ(p.actions[0].event_reason, "GpuHealthy");
  EXPECT_FALSE(p.actions[0].quiet);
  Apply(&n, p.actions);
  EXPECT_EQ(Owners(n)[2].owner, Owner::kSlurm);
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty());
}

// A bad GPU under a pod is no health hold's (the pod's return brings it back to Slurm,
// free); health holds still pending when the bad GPU went to a job meanwhile are cancelled,
// and that job is followed instead; a pending health hold does not stop gives on the node as
// a give in flight would.
TEST(PlanNode, AHealthHoldIsSubmittedOnlyWhileTheBadGpuIsFreeInSlurm) {
  NodeDevices n = Node("node1", 4);
  n.devices[1].k8s_hold = false;
  n.placeholders.push_back({.job_id = 7,
                            .pod = "ml/a",
                            .gpus = 1,
                            .running = true,
                            .indices = {1},
                            .start = kNow - minutes(1)});
  n.claims.push_back({"ml/a", {"gpu-1"}, true});
  n.devices[1].driver_taint = "gpu.nvidia.com/gpu-lost:NoSchedule";
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty()) << "under a pod: left to it";

  n.placeholders.clear();  // the pod went, its GPU came back: the bad GPU is free
  n.claims.clear();
  n.devices[1].k8s_hold = true;
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_EQ(p.actions.size(), 4u);
  Apply(&n, p.actions);
  std::string why;
  EXPECT_TRUE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why).has_value() ||
              why.find("in flight") == std::string::npos)
      << why;
  AddJob(&n, 2, "gpu:4(IDX:0-3)", true, seconds(1));  // Slurm was faster: a job took them all
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder", "EndPlaceholder", "EndPlaceholder",
                                            "EndPlaceholder", "SubmitPlaceholder"));
  for (size_t k = 0; k < 4; ++k) EXPECT_TRUE(p.actions[k].quiet);
  EXPECT_EQ(p.actions[4].As<SubmitPlaceholder>().under_job, 2u) << "the job on it is followed";
  Apply(&n, p.actions);
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_EQ(n.placeholders[0].under_job, 2u);
}

// The driver taints a GPU under a preemptible job: the job gets a give's treatment from a
// health hold that follows it (asking for the job's 2 GPUs and the free one, so Slurm starts
// it on the bad GPU too): checkpoint signal, grace, requeue. The hold then shrinks to 1-GPU
// holds, of which only the one on the bad GPU stays; the job on the node's other GPU runs
// throughout, and the bad GPU is Slurm's again once the driver clears it.
TEST(PlanNode, ABadGpuUnderAPreemptibleJobIsHeldOnceTheJobIsRequeued) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  AddJob(&n, 2, "gpu:1(IDX:3)", false, hours(1));
  n.devices[1].driver_taint = "gpu.nvidia.com/xid=79:NoSchedule";
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder"));
  const auto& follow = p.actions[0].As<SubmitPlaceholder>();
  EXPECT_EQ(follow.gpus, 3) << "the job's 2 GPUs and the free one";
  EXPECT_THAT(follow.victims, ElementsAre(1u));
  EXPECT_EQ(follow.under_job, 1u);
  EXPECT_EQ(follow.health, "gpu-1");
  EXPECT_EQ(follow.pod, "");
  EXPECT_EQ(p.actions[0].event_reason, "GpuUnhealthyUnderJob");
  EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
  EXPECT_THAT(p.actions[0].event_message,
              HasSubstr("gpu-1 (index 1, gpu.nvidia.com/xid=79:NoSchedule) under job 1: the job is "
                        "checkpoint-signalled"));
  Apply(&n, p.actions);
  StartPlaceholders(&n, kNow);
  ASSERT_FALSE(n.placeholders[0].running) << "it waits for the job's GPUs";

  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SignalJobs"));
  EXPECT_THAT(p.actions[0].As<SignalJobs>().jobs.job_ids, ElementsAre(1u));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("health hold"));
  Apply(&n, p.actions);
  p = PlanNode(n, Cfg(), kNow + seconds(1));
  EXPECT_THAT(p.actions, IsEmpty()) << "its grace";
  ASSERT_TRUE(p.recheck_at.has_value());

  p = PlanNode(n, Cfg(), *p.recheck_at);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("PreemptSlurmJobs"));
  EXPECT_THAT(p.actions[0].As<plan::PreemptSlurmJobs>().job_ids, ElementsAre(1u));
  EXPECT_EQ(p.actions[0].As<plan::PreemptSlurmJobs>().preemptor, "health:node1:gpu-1");
  Apply(&n, p.actions);
  StartPlaceholders(&n, kNow);  // on gpu-0, gpu-1 and gpu-2
  ASSERT_TRUE(n.placeholders[0].running);
  EXPECT_EQ(Owners(n)[1].owner, Owner::kOut);

  // It shrinks: three 1-GPU holds pend on its GPUs, then it ends and they take them.
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions),
              ElementsAre("SubmitPlaceholder", "SubmitPlaceholder", "SubmitPlaceholder"));
  EXPECT_EQ(p.actions[0].event_reason, "GpuHealthHoldShrinking");
  for (const DeviceAction& a : p.actions) {
    EXPECT_EQ(a.As<SubmitPlaceholder>().gpus, 1);
    EXPECT_EQ(a.As<SubmitPlaceholder>().under_job, 0u);
  }
  Apply(&n, p.actions);
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder"));
  EXPECT_EQ(p.actions[0].As<EndPlaceholder>().placeholder_job, n.placeholders[0].job_id);
  Apply(&n, p.actions);
  StartPlaceholders(&n, kNow);
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder", "EndPlaceholder"));
  EXPECT_THAT(p.actions[0].As<EndPlaceholder>().devices, ElementsAre("gpu-0"));
  EXPECT_THAT(p.actions[1].As<EndPlaceholder>().devices, ElementsAre("gpu-2"));
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty());
  const std::vector<DeviceView> views = Owners(n);
  EXPECT_EQ(views[0].owner, Owner::kSlurm);
  EXPECT_EQ(views[1].owner, Owner::kOut);
  EXPECT_EQ(views[2].owner, Owner::kSlurm);
  EXPECT_EQ(views[3].job, 2u) << "the other job ran throughout";

  n.devices[1].driver_taint.clear();
  p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder"));
  EXPECT_EQ(p.actions[0].event_reason, "GpuHealthy");
  Apply(&n, p.actions);
  EXPECT_EQ(Owners(n)[1].owner, Owner::kSlurm);
}

// Under a job that may not be preempted: reported, left to finish, and held the moment it
// ends (the hold that follows it pends on its GPUs and every free one). Where Slurm gave a
// free GPU to another job meanwhile, the hold cannot start when the job ends: it is
// cancelled and the bad GPU, free now, gets 1-GPU holds. A GPU healthy again before its job
// ended needs no hold.
TEST(PlanNode, ABadGpuUnderAJobThatMayNotBePreemptedIsHeldTheMomentItEnds) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", false, hours(1));
  n.devices[0].driver_taint = "gpu.nvidia.com/xid=48:NoSchedule";
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder"));
  EXPECT_EQ(p.actions[0].As<SubmitPlaceholder>().gpus, 4);
  EXPECT_THAT(p.actions[0].As<SubmitPlaceholder>().victims, IsEmpty());
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("which may not be preempted"));
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, Cfg(), kNow + hours(1)).actions, IsEmpty()) << "never signalled";

  NodeDevices ends = n;
  ends.jobs.clear();
  StartPlaceholders(&ends, kNow);  // Slurm starts it as the job ends: on all four
  ASSERT_TRUE(ends.placeholders[0].running);
  EXPECT_EQ(Owners(ends)[0].owner, Owner::kOut);
  EXPECT_THAT(Kinds(PlanNode(ends, Cfg(), kNow).actions),
              ElementsAre("SubmitPlaceholder", "SubmitPlaceholder", "SubmitPlaceholder",
                          "SubmitPlaceholder"));

  NodeDevices raced = n;
  AddJob(&raced, 2, "gpu:1(IDX:3)", false, seconds(1));  // a free GPU went to another job
  raced.jobs.erase(raced.jobs.begin());                  // and the job ended
  p = PlanNode(raced, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder", "SubmitPlaceholder",
                                            "SubmitPlaceholder", "SubmitPlaceholder"));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("cancelled"));
  EXPECT_EQ(p.actions[1].As<SubmitPlaceholder>().gpus, 1);

  NodeDevices healed = n;
  healed.devices[0].driver_taint.clear();
  p = PlanNode(healed, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EndPlaceholder"));
  EXPECT_TRUE(p.actions[0].quiet);
}

// An admin's drain of one GPU is read like the driver's taint, except that the job on it is
// left to finish (a drain, as of a node): the hold that follows it names no victim; a free
// drained GPU is held at once, and gives avoid the node while it is free in Slurm.
TEST(PlanNode, AnAdminsDrainOfAGpuLetsTheJobOnItFinish) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  n.devices[1].drained = "swap fan (bridgectl drain by alice@login1)";
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder"));
  EXPECT_THAT(p.actions[0].As<SubmitPlaceholder>().victims, IsEmpty());
  EXPECT_EQ(p.actions[0].As<SubmitPlaceholder>().under_job, 1u);
  EXPECT_THAT(p.actions[0].event_message,
              HasSubstr("an admin drained gpu-1 (index 1, drained: swap fan (bridgectl drain by "
                        "alice@login1)) under job 1: left to finish"));

  NodeDevices free = Node("node1", 4);
  free.devices[3].drained = "swap fan";
  std::string why;
  EXPECT_FALSE(SelectOnNode(free, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("gpu-3 is drained (swap fan) and is free in Slurm"));
  p = PlanNode(free, Cfg(), kNow);
  ASSERT_EQ(p.actions.size(), 4u);
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("an admin drained gpu-3 (index 3, drained"));
}

// One condition on the node sums up its GPUs' health for tools that read only nodes: True
// when the driver taints none, False counting and naming the tainted ones; written when it
// differs from what the node has, its transition time kept while its status stays.
TEST(PlanDevicesCondition, CountsAndNamesTheGpusTheDriverTaints) {
  NodeDevices n = Node("node1", 4);
  std::optional<DeviceAction> c = PlanDevicesCondition(n);
  ASSERT_TRUE(c);
  const auto spec = [&] { return c->As<plan::SetNodeCondition>().condition; };
  EXPECT_EQ(spec().type, "GPUDevicesHealthy");
  EXPECT_EQ(spec().status, "True");
  EXPECT_EQ(spec().reason, "AllGpusInService");
  EXPECT_EQ(spec().message,
            "none of the 4 GPUs carries the driver's health taint or an admin's drain");
  EXPECT_EQ(spec().transition, plan::ConditionSpec::Transition::kNow);
  EXPECT_TRUE(c->quiet) << "the per-GPU Events say it";
  Apply(&n, {*c});
  EXPECT_FALSE(PlanDevicesCondition(n)) << "written once";

  n.devices[2].driver_taint = "gpu.nvidia.com/xid=79:NoSchedule";
  n.devices[3].drained = "swap fan (bridgectl drain by alice@login1)";
  c = PlanDevicesCondition(n);
  ASSERT_TRUE(c);
  EXPECT_EQ(spec().status, "False");
  EXPECT_EQ(spec().reason, "GpusOutOfService");
  EXPECT_EQ(spec().message,
            "2 of 4 GPUs out of service, kept from Slurm and Kubernetes: gpu-2 (index 2, "
            "gpu.nvidia.com/xid=79:NoSchedule), gpu-3 (index 3, drained: swap fan (bridgectl "
            "drain by alice@login1))");
  EXPECT_EQ(spec().transition, plan::ConditionSpec::Transition::kNow);
  Apply(&n, {*c});
  n.devices_condition->last_transition = kNow - minutes(5);

  n.devices[3].drained.clear();  // undrained: still False, since 5 min ago
  c = PlanDevicesCondition(n);
  ASSERT_TRUE(c);
  EXPECT_EQ(spec().status, "False");
  EXPECT_THAT(spec().message, HasSubstr("1 of 4 GPUs"));
  EXPECT_EQ(spec().transition, plan::ConditionSpec::Transition::kKeep);
  EXPECT_EQ(spec().since, kNow - minutes(5));
}

TEST(PlanNode, ReportsADeviceBothSidesClaimAndNeverPlansAroundIt) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  n.claims.push_back({"ml/rogue", {"gpu-1"}, true});
  n.claims.push_back({"ml/pending", {"gpu-3"}, /*allocated=*/false});
  NodePlan p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(p.violations, ElementsAre(Violation{"gpu-1",
                                                  "Slurm job 1 runs on it and pod ml/rogue has an "
                                                  "allocated claim on it"}));
  EXPECT_THAT(p.actions, IsEmpty());
  std::string why;
  EXPECT_FALSE(SelectOnNode(n, Pod(1), Cfg(), kNow, &why));
  EXPECT_THAT(why, HasSubstr("gpu-1"));

  // A claim on a Slurm-held device with no job yet is reported too, as is one on an
  // unguarded device; the unguarded device is not re-held under the pod.
  NodeDevices m = Node("node2", 2);
  m.devices[1].k8s_hold = false;
  m.claims.push_back({"ml/a", {"gpu-0"}, true});
  m.claims.push_back({"ml/b", {"gpu-1"}, true});
  p = PlanNode(m, Cfg(), kNow);
  ASSERT_EQ(p.violations.size(), 2u);
  EXPECT_THAT(p.violations[0].what, HasSubstr("Slurm-held device"));
  EXPECT_THAT(p.violations[1].what, HasSubstr("no hold guards"));
  // The lifted device is a give whose placeholder is gone: held again in Slurm (below).
  EXPECT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder"));
}

// An admin's scancel of a give's placeholder (or a node failure, a limit Slurm enforced):
// the pod runs on lifted devices no placeholder holds. Before Slurm starts a job there, a
// placeholder asks for them again, with every GPU free in Slurm beside them (Slurm picks
// the indices); it takes them, the extra ones are lent as in a give, and nothing else moves.
TEST(PlanNode, AGiveWhosePlaceholderEndedIsHeldAgainInSlurm) {
  NodeDevices n = Node("node1", 6);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  SetHolds(&n, {"gpu-3", "gpu-4"}, false);
  n.claims.push_back({"ml/infer-0", {"gpu-3", "gpu-4"}, true});
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_EQ(p.violations.size(), 2u);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder"));
  const auto& submit = p.actions[0].As<SubmitPlaceholder>();
  EXPECT_EQ(submit.pod, "ml/infer-0");
  EXPECT_EQ(submit.gpus, 4) << "the pod's two and the two free beside them (gpu-2, gpu-5)";
  EXPECT_THAT(submit.victims, IsEmpty());
  EXPECT_EQ(p.actions[0].event_reason, "GiveRestored");
  EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("gpu-3,gpu-4"));
  n.placeholders.push_back({950, "ml/infer-0", 4});
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty()) << "one placeholder per pod";
  StartPlaceholders(&n, kNow);
  ASSERT_TRUE(n.placeholders[0].running);
  // Running: it holds the pod's devices; the extra ones are lent, then nothing moves.
  p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(p.violations, IsEmpty());
  ASSERT_THAT(Kinds(p.actions), ElementsAre("RemoveDeviceHold"));
  EXPECT_THAT(p.actions[0].As<RemoveDeviceHold>().devices, ElementsAre("gpu-2", "gpu-5"));
  Apply(&n, p.actions);
  p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(p.actions, IsEmpty());
  ExpectInvariant(n);
}

// Slurm was faster: the requeued victim started on the lost give's GPUs. It is requeued at
// once (no signal, no grace: both use the GPU until it goes), after a placeholder at the top
// priority is pending for its GPUs; a job that may not be preempted is left to end, the
// placeholder then takes its GPUs. The pending placeholder is not cancelled as a give whose
// GPUs went elsewhere, and its victims are never signalled.
TEST(PlanNode, AJobSlurmStartedOnALostGivesGpusIsRequeuedAtOnce) {
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", false, hours(1));
  AddJob(&n, 7, "gpu:2(IDX:2-3)", true, seconds(1));
  SetHolds(&n, {"gpu-2", "gpu-3"}, false);
  n.claims.push_back({"ml/infer-0", {"gpu-2", "gpu-3"}, true});
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_EQ(p.violations.size(), 2u);
  EXPECT_THAT(p.violations[0].what, HasSubstr("Slurm job 7 runs on it"));
  ASSERT_THAT(Kinds(p.actions), ElementsAre("SubmitPlaceholder", "PreemptSlurmJobs"));
  const auto& submit = p.actions[0].As<SubmitPlaceholder>();
  EXPECT_EQ(submit.gpus, 2);
  EXPECT_THAT(submit.victims, ElementsAre(7u));
  const auto& requeue = p.actions[1].As<plan::PreemptSlurmJobs>();
  EXPECT_THAT(requeue.job_ids, ElementsAre(7u));
  EXPECT_EQ(requeue.mode, plan::JobPreemptMode::kRequeue);
  EXPECT_EQ(requeue.preemptor, "ml/infer-0");
  EXPECT_EQ(p.actions[1].event_reason, "DoubleBookingEnded");
  EXPECT_EQ(p.actions[1].event_type, plan::EventType::kWarning);

  // The placeholder is pending, the job still shows running (the poll lags): requeued again,
  // never signalled, and no second placeholder.
  n.placeholders.push_back({951, "ml/infer-0", submit.gpus, submit.victims});
  p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(Kinds(p.actions), ElementsAre("PreemptSlurmJobs"));
  // The job is gone (pending again): the placeholder waits for its GPUs, then takes them.
  std::erase_if(n.jobs, [](const NodeJob& j) { return j.view.job_id == 7; });
  p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(p.actions, IsEmpty()) << "not cancelled as a give whose GPUs went elsewhere";
  StartPlaceholders(&n, kNow);
  ASSERT_TRUE(n.placeholders[0].running);
  EXPECT_THAT(n.placeholders[0].indices, ElementsAre(2, 3));
  p = PlanNode(n, Cfg(), kNow);
  EXPECT_THAT(p.violations, IsEmpty());
  EXPECT_THAT(p.actions, IsEmpty());
  ExpectInvariant(n);

  // Two jobs on the pod's GPUs whose policies differ (one's QOS says requeue and hold): one
  // requeue per mode, each naming only its jobs.
  NodeDevices h = Node("node3", 4);
  AddJob(&h, 5, "gpu:1(IDX:2)", true, seconds(1));
  AddJob(&h, 6, "gpu:1(IDX:3)", true, seconds(1));
  h.jobs[1].view.qos = "scavenger";
  SetHolds(&h, {"gpu-2", "gpu-3"}, false);
  h.claims.push_back({"ml/infer-2", {"gpu-2", "gpu-3"}, true});
  config::Config modes = Cfg();
  modes.lending.qos_modes["scavenger"] = plan::JobPreemptMode::kRequeueHold;
  p = PlanNode(h, modes, kNow);
  ASSERT_THAT(Kinds(p.actions),
              ElementsAre("SubmitPlaceholder", "PreemptSlurmJobs", "PreemptSlurmJobs"));
  EXPECT_THAT(p.actions[0].As<SubmitPlaceholder>().victims, ElementsAre(5u, 6u));
  EXPECT_THAT(p.actions[1].As<plan::PreemptSlurmJobs>().job_ids, ElementsAre(5u));
  EXPECT_EQ(p.actions[1].As<plan::PreemptSlurmJobs>().mode, plan::JobPreemptMode::kRequeue);
  EXPECT_THAT(p.actions[2].As<plan::PreemptSlurmJobs>().job_ids, ElementsAre(6u));
  EXPECT_EQ(p.actions[2].As<plan::PreemptSlurmJobs>().mode, plan::JobPreemptMode::kRequeueHold);
  EXPECT_THAT(p.actions[2].event_message, HasSubstr("jobs 6 started on gpu-2,gpu-3"));

  // The job on the pod's GPUs may not be preempted: the pod is evicted (one of the two must
  // go), and nothing else moves for it: no placeholder, the job never signalled, the
  // preemptible job beside it on the pod's GPUs not requeued for a pod that goes.
  NodeDevices m = Node("node2", 4);
  AddJob(&m, 8, "gpu:1(IDX:2)", false, seconds(1));
  AddJob(&m, 9, "gpu:1(IDX:3)", true, seconds(1));
  SetHolds(&m, {"gpu-2", "gpu-3"}, false);
  m.claims.push_back({"ml/infer-1", {"gpu-2", "gpu-3"}, true});
  p = PlanNode(m, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("EvictPod"));
  EXPECT_EQ(p.actions[0].As<plan::EvictPod>().pod,
            (plan::PodRef{.namespace_name = "ml", .name = "infer-1"}));
  EXPECT_EQ(p.actions[0].event_reason, "DoubleBookingEnded");
  EXPECT_EQ(p.actions[0].event_type, plan::EventType::kWarning);
  EXPECT_THAT(p.actions[0].event_message,
              HasSubstr("jobs 8, which may not be preempted, started on gpu-2,gpu-3"));
  // The pod gone: nobody to evict any more, and its lifted GPUs held for the jobs again.
  m.claims.clear();
  p = PlanNode(m, Cfg(), kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre("AddDeviceHold"));
  EXPECT_THAT(p.actions[0].As<AddDeviceHold>().devices, ElementsAre("gpu-2", "gpu-3"));
}

TEST(DeviceActionTest, KindAndFieldsComeFromItsOperation) {
  DeviceAction a;
  a.op = RemoveDeviceHold{.devices = {"gpu-1", "gpu-2"}, .placeholder_job = 900, .pod = "ml/a"};
  a.node = "node1";
  EXPECT_EQ(a.Kind(), "RemoveDeviceHold");
  EXPECT_EQ(a.Kind(), RemoveDeviceHold::kName);
  EXPECT_TRUE(a.Is<RemoveDeviceHold>());
  EXPECT_FALSE(a.Is<AddDeviceHold>());
  EXPECT_EQ(a.Get<AddDeviceHold>(), nullptr);
  ASSERT_NE(a.Get<RemoveDeviceHold>(), nullptr);
  EXPECT_EQ(a.Get<RemoveDeviceHold>()->placeholder_job, 900u);
  EXPECT_EQ(ToString(a), "RemoveDeviceHold node1 devices=gpu-1,gpu-2 placeholder=900 pod=ml/a");

  // The give's checkpoint signal wraps the node lane's kind; the preemption is the node lane's.
  a.op = SignalJobs{.jobs = {.job_ids = {7, 8}, .signal = 10},
                    .placeholder_job = 900,
                    .pod = "ml/a",
                    .at_ms = 1'800'000'000'000};
  EXPECT_EQ(a.Kind(), "SignalJobs");
  EXPECT_EQ(a.As<SignalJobs>().jobs.signal, 10);
  EXPECT_EQ(ToString(a), "SignalJobs node1 placeholder=900 pod=ml/a jobs=7,8");
  a.op = plan::PreemptSlurmJobs{.job_ids = {7}, .preemptor = "ml/a"};
  EXPECT_EQ(a.Kind(), plan::PreemptSlurmJobs::kName);
  EXPECT_EQ(ToString(a), "PreemptSlurmJobs node1 pod=ml/a jobs=7");
  a.op = RecordIdleSince{.placeholder_job = 900, .at_ms = 0};
  EXPECT_EQ(ToString(a), "RecordIdleSince node1 placeholder=900 at=0");
  a.op = SubmitPlaceholder{.pod = "ml/a", .gpus = 2, .victims = {7}};
  EXPECT_EQ(ToString(a), "SubmitPlaceholder node1 pod=ml/a gpus=2 jobs=7");
}

TEST(PlanNode, HoldsUnguardedIdleDevicesForSlurm) {
  NodeDevices n = Node("node1", 3);
  n.devices[0].k8s_hold = false;
  n.devices[2].k8s_hold = false;
  NodePlan p = PlanNode(n, Cfg(), kNow);
  ASSERT_EQ(p.actions.size(), 1u);
  EXPECT_EQ(p.actions[0].Kind(), AddDeviceHold::kName);
  EXPECT_THAT(p.actions[0].As<AddDeviceHold>().devices, ElementsAre("gpu-0", "gpu-2"));
  EXPECT_EQ(p.actions[0].cause, plan::Cause::kReservation);
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, Cfg(), kNow).actions, IsEmpty());
}

// The grace is counted from the signal's millisecond when the record keeps it, and the plan
// names the instant it ends (the lane wakes then); a record of whole seconds (an older
// version's) counts from the second after its stamp.
TEST(PlanNode, TheGraceEndsToTheMillisecondAndThePlanAsksToBeRunThen) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 8);
  AddJob(&n, 1, "gpu:8(IDX:0-7)", true, hours(2));
  std::vector<NodeDevices> nodes = {n};
  auto s = ChooseNode(nodes, Pod(2), cfg, kNow);
  ASSERT_TRUE(s);
  Apply(&n, PlanGive(*s, Pod(2)));
  const Clock::TimePoint signal = kNow + milliseconds(250);
  NodePlan p = PlanNode(n, cfg, signal);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(SignalJobs::kName));
  EXPECT_EQ(p.actions[0].As<SignalJobs>().at_ms, ownership::ToUnixMillis(signal));
  EXPECT_EQ(p.recheck_at, std::nullopt);
  Apply(&n, p.actions);

  const Clock::TimePoint ends = signal + cfg.lending.default_grace;
  p = PlanNode(n, cfg, ends - milliseconds(1));
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_EQ(p.recheck_at, ends);
  p = PlanNode(n, cfg, ends);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(plan::PreemptSlurmJobs::kName));
  EXPECT_EQ(p.recheck_at, std::nullopt);

  // The same signal recorded in whole seconds: the grace counts from the next second.
  n.jobs[0].signalled_at = ownership::FromUnix(ownership::ToUnix(signal));
  n.jobs[0].signalled_exactly = false;
  const Clock::TimePoint late =
      ownership::GraceEnds(*n.jobs[0].signalled_at, /*exact=*/false, cfg.lending.default_grace);
  EXPECT_EQ(late, kNow + seconds(1) + cfg.lending.default_grace);
  p = PlanNode(n, cfg, ends);
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_EQ(p.recheck_at, late);
  EXPECT_THAT(Kinds(PlanNode(n, cfg, late).actions), ElementsAre(plan::PreemptSlurmJobs::kName));
}

// Two 4-GPU jobs, one preemptible, one not; a 2-GPU pod; then its return. Each pass is
// planned on what the previous one did, and every intermediate state keeps the invariant.
TEST(PlanNode, GivesAndReturnsStepByStepAndConverges) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 8);
  AddJob(&n, 1, "gpu:4(IDX:0-3)", true, hours(2));
  AddJob(&n, 2, "gpu:4(IDX:4-7)", false, hours(2));
  std::vector<NodeDevices> nodes = {n};

  auto s = ChooseNode(nodes, Pod(2), cfg, kNow);
  ASSERT_TRUE(s);
  EXPECT_THAT(s->victims, ElementsAre(1u));
  std::vector<DeviceAction> give = PlanGive(*s, Pod(2));
  ASSERT_THAT(Kinds(give), ElementsAre(SubmitPlaceholder::kName));
  EXPECT_EQ(give[0].As<SubmitPlaceholder>().gpus, 2);
  EXPECT_THAT(give[0].As<SubmitPlaceholder>().victims, ElementsAre(1u));
  Apply(&n, give);
  nodes = {n};
  EXPECT_FALSE(ChooseNode(nodes, Pod(2), cfg, kNow));  // served: planning again asks nothing

  Clock::TimePoint t = kNow;
  NodePlan p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(SignalJobs::kName));
  EXPECT_THAT(p.actions[0].As<SignalJobs>().jobs.job_ids, ElementsAre(1u));
  EXPECT_EQ(p.actions[0].As<SignalJobs>().jobs.signal, cfg.lending.checkpoint_signal);
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());  // the grace runs

  // The signal's second, then the grace.
  t = ownership::GraceEnds(t, /*exact=*/false, cfg.lending.default_grace);
  p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(plan::PreemptSlurmJobs::kName));
  EXPECT_THAT(p.actions[0].As<plan::PreemptSlurmJobs>().job_ids, ElementsAre(1u));
  EXPECT_EQ(p.actions[0].As<plan::PreemptSlurmJobs>().preemptor, "ml/infer-0");
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());  // Slurm has yet to start it

  StartPlaceholders(&n, t);
  ExpectInvariant(n);
  p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RemoveDeviceHold::kName));
  EXPECT_THAT(p.actions[0].As<RemoveDeviceHold>().devices,
              ElementsAre("gpu-0", "gpu-1"));  // Slurm picked, k8s follows
  Apply(&n, p.actions);
  // The job that is not preemptible was never touched.
  ASSERT_EQ(n.jobs.size(), 1u);
  EXPECT_EQ(n.jobs[0].view.job_id, 2u);
  EXPECT_EQ(Owners(n)[0].owner, Owner::kKubernetes);
  EXPECT_EQ(Owners(n)[2].owner, Owner::kSlurm);  // the victim's other GPUs go back to Slurm

  // The pod runs; the idle-since record follows its claim.
  n.claims.push_back({"ml/infer-0", {"gpu-0", "gpu-1"}, true});
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());
  t += hours(1);
  n.claims.clear();
  p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RecordIdleSince::kName));
  EXPECT_TRUE(p.actions[0].quiet);
  Apply(&n, p.actions);
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());  // cool-down

  t += cfg.lending.cooldown;
  p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(MarkReturning::kName, AddDeviceHold::kName));
  // A crash between the two: the next pass holds the devices again.
  Apply(&n, {p.actions[0]});
  NodePlan resumed = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(resumed.actions), ElementsAre(AddDeviceHold::kName));
  EXPECT_THAT(resumed.actions[0].As<AddDeviceHold>().devices, ElementsAre("gpu-0", "gpu-1"));
  // A pod got a claim on the devices just before the hold: the placeholder waits for it.
  n.claims.push_back({"ml/late", {"gpu-1"}, true});
  Apply(&n, resumed.actions);
  EXPECT_EQ(Owners(n)[1].owner, Owner::kToSlurm);
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());
  n.claims.clear();
  p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(EndPlaceholder::kName));
  Apply(&n, p.actions);
  EXPECT_EQ(Owners(n)[0].owner, Owner::kSlurm);
  EXPECT_THAT(PlanNode(n, cfg, t).actions, IsEmpty());
  EXPECT_THAT(PlanNode(n, cfg, t).violations, IsEmpty());
}

// The pod left while its give waited for the victims' grace: the give is cancelled and
// the victim, signalled already, is not preempted.
// The give ChooseNode plans for `pod` on `n` alone, applied; false when it plans none.
bool GiveOn(NodeDevices* n, const PendingPod& pod, const config::Config& cfg, Clock::TimePoint at) {
  std::vector<NodeDevices> nodes = {*n};
  auto s = ChooseNode(nodes, pod, cfg, at);
  if (!s) return false;
  Apply(n, PlanGive(*s, pod));
  return true;
}

TEST(PlanNode, CancelsAPendingGiveWhosePodNoLongerWaits) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 2);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", true, hours(1));
  ASSERT_TRUE(GiveOn(&n, Pod(1), cfg, kNow));
  Apply(&n, PlanNode(n, cfg, kNow).actions);  // signal
  n.placeholders[0].wanted = false;
  NodePlan p = PlanNode(n, cfg, kNow + cfg.lending.default_grace);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(EndPlaceholder::kName));
  EXPECT_EQ(p.actions[0].event_reason, "GiveCancelled");
  Apply(&n, p.actions);
  EXPECT_EQ(n.jobs.size(), 1u);
  EXPECT_THAT(PlanNode(n, cfg, kNow + cfg.lending.default_grace).actions, IsEmpty());
}

// The pod came within a poll of a job's start: its give counted on idle GPUs the job now
// holds. No victim to wait for and too few free GPUs: the give is cancelled at once (not
// after give_timeout) and planning the pod again chooses the job as its victim.
TEST(PlanNode, AGiveWhoseIdleGpusSlurmGaveAwayIsPlannedAgain) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 8);
  ASSERT_TRUE(GiveOn(&n, Pod(2), cfg, kNow));
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_THAT(n.placeholders[0].victims, IsEmpty());
  EXPECT_THAT(PlanNode(n, cfg, kNow).actions, IsEmpty()) << "idle GPUs: it waits for Slurm";
  // Slurm starts a job on all 8 GPUs before the placeholder.
  AddJob(&n, 7, "gpu:8(IDX:0-7)", true, seconds(1));
  NodePlan p = PlanNode(n, cfg, kNow + seconds(2));
  ASSERT_THAT(Kinds(p.actions), ElementsAre(EndPlaceholder::kName));
  EXPECT_EQ(p.actions[0].event_reason, "GiveReplanned");
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("0 free"));
  Apply(&n, p.actions);
  ASSERT_TRUE(GiveOn(&n, Pod(2), cfg, kNow + seconds(2)));
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_THAT(n.placeholders[0].victims, ElementsAre(7u));

  // A give whose victims were requeued and whose GPUs are free again is not cancelled.
  NodeDevices m = Node("node1", 4);
  AddJob(&m, 1, "gpu:4(IDX:0-3)", true, hours(1));
  ASSERT_TRUE(GiveOn(&m, Pod(2), cfg, kNow));
  m.jobs.clear();  // requeued: the placeholder is about to start
  for (const DeviceAction& a : PlanNode(m, cfg, kNow).actions) {
    EXPECT_FALSE(a.Is<EndPlaceholder>()) << ToString(a);
  }
}

TEST(PlanNode, AGiveFromIdleGpusNeedsNoSignal) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 4);
  AddJob(&n, 1, "gpu:1(IDX:0)", true, hours(1));
  std::vector<NodeDevices> nodes = {n};
  auto s = ChooseNode(nodes, Pod(1), cfg, kNow);
  ASSERT_TRUE(s);
  Apply(&n, PlanGive(*s, Pod(1)));
  EXPECT_THAT(PlanNode(n, cfg, kNow).actions, IsEmpty());
  StartPlaceholders(&n, kNow);
  NodePlan p = PlanNode(n, cfg, kNow);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RemoveDeviceHold::kName));
  EXPECT_THAT(p.actions[0].As<RemoveDeviceHold>().devices, ElementsAre("gpu-1"));
  EXPECT_EQ(p.actions[0].event_reason, "GpusLent");
  EXPECT_THAT(ToString(p.actions[0]), HasSubstr("RemoveDeviceHold node1 devices=gpu-1"));
  EXPECT_EQ(n.jobs.size(), 1u);
}

// A give on idle GPUs for a pod, carried to the point where its holds are lifted: the
// placeholder runs on them and the pod (still unscheduled) may use them.
void LendIdleGpus(NodeDevices* n, const PendingPod& pod, const config::Config& cfg,
                  Clock::TimePoint at) {
  std::vector<NodeDevices> nodes = {*n};
  auto s = ChooseNode(nodes, pod, cfg, at);
  ASSERT_TRUE(s);
  ASSERT_THAT(s->victims, IsEmpty());
  Apply(n, PlanGive(*s, pod));
  StartPlaceholders(n, at);
  n->placeholders.back().pod_waiting = true;
  NodePlan p = PlanNode(*n, cfg, at);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RemoveDeviceHold::kName));
  Apply(n, p.actions);
}

// The pod stays unscheduled beside the GPUs lent to it (kube-scheduler rejects the node for a
// rule the bridge does not judge): the give is recorded as unused before it returns, and the
// node gets no give for that pod until the back-off ends, twice as long after a second one.
// Other pods and other nodes are not affected.
TEST(PlanNode, AGiveThePodDidNotUseIsRecordedAndTheNodeBackedOffForThatPod) {
  config::Config cfg = Cfg();
  cfg.gpu_sharing.give_backoff = minutes(10);
  NodeDevices n = Node("node1", 4);
  LendIdleGpus(&n, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  Clock::TimePoint t = kNow;
  Apply(&n, PlanNode(n, cfg, t).actions);  // idle since now: no claim
  t += std::max(cfg.lending.cooldown, cfg.lending.min_lend_time);
  NodePlan p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions),
              ElementsAre(RecordUnusedGive::kName, MarkReturning::kName, AddDeviceHold::kName));
  const DeviceAction& record = p.actions[0];
  EXPECT_EQ(record.As<RecordUnusedGive>().pod, "ml/infer-0");
  EXPECT_EQ(record.As<RecordUnusedGive>().placeholder_job, n.placeholders[0].job_id);
  EXPECT_EQ(record.As<RecordUnusedGive>().at_unix, ownership::ToUnix(t));
  EXPECT_EQ(record.event_type, plan::EventType::kWarning);
  EXPECT_EQ(record.event_reason, "GiveUnused");
  EXPECT_THAT(record.event_message,
              HasSubstr("kube-scheduler did not place the pod on gpu-0,gpu-1"));
  // A crash right after the record: planned again, the record is already there.
  Apply(&n, {record});
  ASSERT_THAT(Kinds(PlanNode(n, cfg, t).actions),
              ElementsAre(RecordUnusedGive::kName, MarkReturning::kName, AddDeviceHold::kName));
  ASSERT_EQ(n.unused_gives.size(), 1u);
  Apply(&n, PlanNode(n, cfg, t).actions);
  EXPECT_EQ(n.unused_gives.size(), 1u) << "one record per give";
  Apply(&n, PlanNode(n, cfg, t).actions);  // the placeholder ends
  ASSERT_THAT(n.placeholders, IsEmpty());

  std::vector<NodeDevices> nodes = {n};
  std::string why;
  EXPECT_FALSE(ChooseNode(nodes, Pod(2), cfg, t, &why));
  EXPECT_THAT(why, HasSubstr("node node1: 1 give(s) there went unused"));
  EXPECT_THAT(why, HasSubstr("backed off until " + ownership::FormatUtc(t + minutes(10))));
  EXPECT_TRUE(ChooseNode(nodes, Pod(2, "ml/other"), cfg, t)) << "another pod still gets a give";
  std::vector<NodeDevices> two = {n, Node("node2", 4)};
  auto elsewhere = ChooseNode(two, Pod(2), cfg, t);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->node, "node2") << "the pod still gets a give on another node";

  // After the back-off the node is tried again; a second unused give doubles the wait.
  t += minutes(10);
  LendIdleGpus(&n, Pod(2), cfg, t);
  if (HasFatalFailure()) return;
  Apply(&n, PlanNode(n, cfg, t).actions);
  t += std::max(cfg.lending.cooldown, cfg.lending.min_lend_time);
  for (int i = 0; i < 3; ++i) Apply(&n, PlanNode(n, cfg, t).actions);
  ASSERT_THAT(n.placeholders, IsEmpty());
  ASSERT_EQ(n.unused_gives.size(), 2u);
  nodes = {n};
  EXPECT_FALSE(ChooseNode(nodes, Pod(2), cfg, t + minutes(19)));
  EXPECT_TRUE(ChooseNode(nodes, Pod(2), cfg, t + minutes(20)));
}

// A return begins kHoldSettle before the cool-down ends (the executor ends the placeholder
// only once the holds have stood that long), so the devices are Slurm's when the cool-down
// ends, not a settle later. The idle-since keeps milliseconds and the plan names the instant
// the return is due: the lane wakes then, not at the next whole second.
TEST(PlanNode, AReturnBeginsAHoldSettleBeforeTheCoolDownEnds) {
  config::Config cfg = Cfg();
  cfg.lending.cooldown = seconds(30);
  cfg.lending.min_lend_time = seconds(1);
  NodeDevices n = Node("node1", 4);
  LendIdleGpus(&n, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  n.placeholders[0].pod_waiting = false;  // it ran and left
  const Clock::TimePoint idle = kNow + milliseconds(1250);
  NodePlan p = PlanNode(n, cfg, idle);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(RecordIdleSince::kName));
  EXPECT_EQ(p.actions[0].As<RecordIdleSince>().at_ms, ownership::ToUnixMillis(idle));
  Apply(&n, p.actions);

  const Clock::TimePoint starts = idle + cfg.lending.cooldown - kHoldSettle;
  p = PlanNode(n, cfg, starts - milliseconds(1));
  EXPECT_THAT(p.actions, IsEmpty());
  EXPECT_EQ(p.recheck_at, starts) << "to the millisecond";
  p = PlanNode(n, cfg, starts);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(MarkReturning::kName, AddDeviceHold::kName));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("held again for 5s before they are Slurm's"));

  // A cool-down no longer than the settle: the return begins as soon as the devices are idle
  // (nothing is open to Kubernetes after the last claim), and ends a settle later.
  cfg.lending.cooldown = seconds(3);
  NodeDevices short_cooldown = Node("node1", 4);
  LendIdleGpus(&short_cooldown, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  short_cooldown.placeholders[0].pod_waiting = false;
  Apply(&short_cooldown, PlanNode(short_cooldown, cfg, idle).actions);  // idle since then
  EXPECT_THAT(Kinds(PlanNode(short_cooldown, cfg, idle).actions),
              ElementsAre(MarkReturning::kName, AddDeviceHold::kName));
}

// The maintenance cycle drains the node in Slurm (unhealthy to the device lane) and taints it
// in Kubernetes, then waits for the node to be free in Slurm. A give whose pod the cycle
// evicted goes back at once, not after the cool-down or once the node is healthy: its
// placeholder is a Slurm job the drain would wait for until drain_timeout. One whose pod still
// runs stays (the cycle evicts the pod first).
TEST(PlanNode, AGiveOnANodeInMaintenanceReturnsAsSoonAsNoPodUsesIt) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 4);
  LendIdleGpus(&n, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  n.placeholders[0].pod_waiting = false;
  n.claims.push_back({"ml/infer-0", {"gpu-0", "gpu-1"}, true});
  n.healthy = false;  // the cycle's Slurm drain
  n.taints.push_back({std::string(health::kMaintenanceTaintKey), "", "NoSchedule"});
  EXPECT_THAT(Kinds(PlanNode(n, cfg, kNow).actions), IsEmpty()) << "the pod still runs";

  n.claims.clear();  // evicted: its claim went with it
  Clock::TimePoint t = kNow + seconds(1);
  Apply(&n, PlanNode(n, cfg, t).actions);  // idle since now
  NodePlan p = PlanNode(n, cfg, t);
  ASSERT_THAT(Kinds(p.actions), ElementsAre(MarkReturning::kName, AddDeviceHold::kName));
  EXPECT_THAT(p.actions[0].event_message, HasSubstr("the node is in maintenance"));
  Apply(&n, p.actions);
  ASSERT_THAT(Kinds(PlanNode(n, cfg, t).actions), ElementsAre(EndPlaceholder::kName));
  Apply(&n, PlanNode(n, cfg, t).actions);
  EXPECT_THAT(n.placeholders, IsEmpty());
  EXPECT_EQ(Owners(n)[0].owner, Owner::kSlurm);

  // Without the taint the same drained node keeps the give (it returns once healthy).
  NodeDevices drained = Node("node1", 4);
  LendIdleGpus(&drained, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  drained.placeholders[0].pod_waiting = false;
  drained.healthy = false;
  Apply(&drained, PlanNode(drained, cfg, t).actions);
  EXPECT_THAT(PlanNode(drained, cfg, t + hours(1)).actions, IsEmpty());
}

// A give the pod used (it ran there, then left) and a return forced by the node's health
// are not the pod's failures: nothing is recorded.
TEST(PlanNode, AUsedGiveOrAReturnForHealthRecordsNothing) {
  const config::Config cfg = Cfg();
  const Clock::TimePoint later = kNow + std::max(cfg.lending.cooldown, cfg.lending.min_lend_time);
  NodeDevices used = Node("node1", 4);
  LendIdleGpus(&used, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  used.placeholders[0].pod_waiting = false;  // it ran on the node and left
  Apply(&used, PlanNode(used, cfg, kNow).actions);
  ASSERT_THAT(Kinds(PlanNode(used, cfg, later).actions),
              ElementsAre(MarkReturning::kName, AddDeviceHold::kName));

  NodeDevices sick = Node("node1", 4);
  LendIdleGpus(&sick, Pod(2), cfg, kNow);
  if (HasFatalFailure()) return;
  sick.healthy = false;
  for (const DeviceAction& a : PlanNode(sick, cfg, kNow).actions) {
    EXPECT_FALSE(a.Is<RecordUnusedGive>()) << ToString(a);
  }
}

// A give whose placeholder did not start within give_timeout while its pod still waits is
// recorded as unused before it is cancelled; one whose pod is gone is only cancelled.
TEST(PlanNode, AGiveThatTimedOutIsRecordedAsUnusedWhileItsPodWaits) {
  const config::Config cfg = Cfg();
  NodeDevices n = Node("node1", 2);
  AddJob(&n, 1, "gpu:2(IDX:0-1)", false, hours(1));  // nothing frees the GPUs
  n.placeholders.push_back({.job_id = 77, .pod = "ml/infer-0", .gpus = 1, .running = false});
  Placeholder& p = n.placeholders[0];
  p.wanted = false;
  p.timed_out = true;
  p.pod_waiting = true;
  NodePlan plan = PlanNode(n, cfg, kNow);
  ASSERT_THAT(Kinds(plan.actions), ElementsAre(RecordUnusedGive::kName, EndPlaceholder::kName));
  EXPECT_THAT(plan.actions[0].event_message, HasSubstr("did not start within give_timeout"));
  EXPECT_EQ(plan.actions[1].event_reason, "GiveCancelled");
  EXPECT_THAT(plan.actions[1].event_message, HasSubstr("did not start within give_timeout (600s)"));

  p.pod_waiting = false;  // gone
  ASSERT_THAT(Kinds(PlanNode(n, cfg, kNow).actions), ElementsAre(EndPlaceholder::kName));
}

// A give's victim that ended after its checkpoint signal (died of it, or checkpointed and
// exited) is requeued like a preempted one, as on whole nodes: only the run we signalled,
// not a cancelled one, not one Slurm cannot requeue, and without a recorded signal time only
// a job the signal itself ended.
TEST(PlanNode, AVictimThatEndedAfterItsSignalIsRequeued) {
  const config::Config cfg = Cfg();
  const Clock::TimePoint signalled = kNow - seconds(20);
  auto ended = [&](slurm::JobState state, Clock::Duration started_before, bool recorded = true) {
    NodeDevices n = Node("node1", 8);
    EndedVictim e;
    e.view.job_id = 41;
    e.view.state = state;
    e.view.requeue = true;
    e.view.nodes = {"node1"};
    e.view.start_time = ownership::ToUnix(signalled - started_before);
    e.view.end_time = ownership::ToUnix(signalled + seconds(1));
    e.view.exit_signal = 10;
    e.view.admin_comment = "k8s-bridge:preemptible=true";
    e.signalled_at = signalled;
    e.pod = "ml/infer-0";
    e.recorded = recorded;
    n.ended_victims.push_back(e);
    return n;
  };
  auto requeues = [&](const NodeDevices& n) {
    std::vector<DeviceAction> out;
    for (const DeviceAction& a : PlanNode(n, cfg, kNow).actions) {
      if (a.Is<plan::PreemptSlurmJobs>()) out.push_back(a);
    }
    return out;
  };

  std::vector<DeviceAction> r = requeues(ended(slurm::JobState::kFailed, minutes(5)));
  ASSERT_EQ(r.size(), 1u);
  const plan::PreemptSlurmJobs& requeue = r[0].As<plan::PreemptSlurmJobs>();
  EXPECT_TRUE(requeue.ended_after_signal);
  EXPECT_EQ(requeue.job_ids, std::vector<uint32_t>{41});
  EXPECT_EQ(requeue.mode, plan::JobPreemptMode::kRequeue);
  EXPECT_EQ(requeue.at_unix, ownership::ToUnix(signalled));
  EXPECT_EQ(requeue.since_unix, ownership::ToUnix(signalled));
  EXPECT_EQ(r[0].event_reason, "EndedJobRequeued");
  EXPECT_EQ(r[0].event_type, plan::EventType::kWarning);
  EXPECT_EQ(requeue.preemptor, "ml/infer-0");
  // Checkpointed and exited 0: the same.
  EXPECT_EQ(requeues(ended(slurm::JobState::kComplete, minutes(5))).size(), 1u);
  // Cancelled by its user: left so.
  EXPECT_THAT(requeues(ended(slurm::JobState::kCancelled, minutes(5))), IsEmpty());
  // A run that started after the signal is another run.
  EXPECT_THAT(requeues(ended(slurm::JobState::kFailed, -seconds(5))), IsEmpty());
  // Slurm may not requeue it (--no-requeue).
  NodeDevices no_requeue = ended(slurm::JobState::kFailed, minutes(5));
  no_requeue.ended_victims[0].view.requeue = false;
  EXPECT_THAT(requeues(no_requeue), IsEmpty());
  // No recorded signal time: only a job our signal (SIGUSR1, 10) ended.
  EXPECT_EQ(requeues(ended(slurm::JobState::kFailed, minutes(5), false)).size(), 1u);
  NodeDevices other_signal = ended(slurm::JobState::kFailed, minutes(5), false);
  other_signal.ended_victims[0].view.exit_signal = 9;
  EXPECT_THAT(requeues(other_signal), IsEmpty());
}

}  // namespace
}  // namespace skb::devices

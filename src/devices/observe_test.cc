// SPDX-License-Identifier: Apache-2.0
#include "src/devices/observe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/strings.h"
#include "src/devices/test_support.h"
#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using test_support::kNow;

config::Config Cfg() { return test_support::SharingOn(); }

slurm::NodeView SlurmNode(std::string name, int gpus) {
  slurm::NodeView n;
  n.name = std::move(name);
  n.base_state = slurm::NodeBaseState::kMixed;
  n.gpus = {{"h100", gpus}};
  return n;
}

std::vector<SliceDevice> Slice(int gpus) {
  std::vector<SliceDevice> out;
  // As NVIDIA's driver publishes them: no minor attribute, each GPU's PCI bus id (minors
  // in bus order, as on most boards).
  for (int i = 0; i < gpus; ++i) {
    out.push_back(
        {.name = DeviceName(i), .type = "gpu", .pci_bus_id = StrCat("0000:", 10 + i, ":00.0")});
  }
  return out;
}

slurm::JobView Job(uint32_t id, std::string node, std::vector<int64_t> idx) {
  slurm::JobView j;
  j.job_id = id;
  j.name = "train";
  j.partition = "gpu";
  j.state = slurm::JobState::kRunning;
  j.nodes = {node};
  j.gpu_indices[node] = std::move(idx);
  j.start_time = 1'699'999'000;
  return j;
}

slurm::JobView PlaceholderJob(uint32_t id, const PlaceholderRecord& r, bool running,
                              std::vector<int64_t> idx = {}) {
  slurm::JobView j;
  j.job_id = id;
  j.name = kPlaceholderJobName;
  j.partition = "skb-gpu-hold";
  j.state = running ? slurm::JobState::kRunning : slurm::JobState::kPending;
  j.admin_comment = FormatPlaceholderRecord(r);
  j.submit_time = 1'699'999'900;
  if (running) {
    j.nodes = {r.node};
    j.gpu_indices[r.node] = std::move(idx);
    j.start_time = 1'699'999'950;
  }
  return j;
}

World TwoNodes() {
  World w;
  w.slurm_nodes = {SlurmNode("node1", 8), SlurmNode("node2", 8), SlurmNode("node3", 8)};
  w.paired = {{"node1", {.name = "node1"}}, {"node2", {.name = "node2.k8s"}}};  // not node3
  w.slices = {{"node1", Slice(8)}, {"node2.k8s", Slice(8)}};
  return w;
}

TEST(ObserveTest, JoinsJobsPlaceholdersHoldsAndClaimsPerDevice) {
  World w = TwoNodes();
  w.held["node1"] = {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"};
  w.jobs = {Job(10, "node1", {0, 1, 2, 3}),
            PlaceholderJob(20, {.node = "node1", .pod = "ml/infer", .gpus = 2, .victims = {11}},
                           /*running=*/true, {6, 7})};
  w.claims["node1"] = {{.pod = "ml/infer", .devices = {"gpu-6", "gpu-7"}, .allocated = true}};
  w.pod_node = {{"ml/infer", "node1"}};
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes.size(), 2u);
  const NodeDevices& n = o.nodes[0];
  EXPECT_EQ(n.node, "node1");
  EXPECT_EQ(n.model, "h100");
  ASSERT_EQ(n.devices.size(), 8u);
  EXPECT_TRUE(n.devices[5].k8s_hold);
  EXPECT_FALSE(n.devices[6].k8s_hold);
  ASSERT_EQ(n.jobs.size(), 1u);
  EXPECT_EQ(n.jobs[0].view.job_id, 10u);
  EXPECT_THAT(n.jobs[0].indices, ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_TRUE(n.placeholders[0].running);
  EXPECT_TRUE(n.placeholders[0].wanted);
  EXPECT_THAT(n.placeholders[0].indices, ElementsAre(6, 7));
  EXPECT_EQ(n.claims.size(), 1u);
  // Owners: the job's devices and the idle ones are Slurm's, the placeholder's are lent.
  const std::vector<DeviceView> views = Owners(n);
  EXPECT_EQ(views[0].owner, Owner::kSlurm);
  EXPECT_EQ(views[0].job, 10u);
  EXPECT_EQ(views[6].owner, Owner::kKubernetes);
  EXPECT_EQ(views[6].placeholder, 20u);
  // node2 is paired under its Kubernetes name; node3 is not managed at all.
  EXPECT_EQ(o.nodes[1].node, "node2");
  EXPECT_FALSE(o.node_granular.count("node3"));
}

// What a pending pod's placement is judged against: the Kubernetes node's labels and taints,
// and the gives there that went unused, by Slurm name.
// node1 with GPUs 0-1 whole and GPU 2 in two 1g.10gb slices, as gres.conf and the driver
// describe them (gpu_sharing.gres_files names the slices' MIG UUIDs).
TEST(ObserveTest, AMigNodeKnowsEachSlicesProfileAndTheWholeGpusType) {
  config::Config cfg = Cfg();
  cfg.gpu_sharing.gres_files["node1"] = {
      {.files = {"/dev/nvidia0"}},
      {.files = {"/dev/nvidia1"}},
      {.files = {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap282",
                 "/dev/nvidia-caps/nvidia-cap283"},
       .type = "1g.10gb",
       .mig_uuid = "MIG-a"},
      {.files = {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap291",
                 "/dev/nvidia-caps/nvidia-cap292"},
       .type = "1g.10gb",
       .mig_uuid = "MIG-b"}};
  World w;
  slurm::NodeView sn = SlurmNode("node1", 2);
  sn.gpus = {{"h100", 2}, {"1g.10gb", 2}};
  w.slurm_nodes = {sn};
  w.paired = {{"node1", {.name = "node1"}}};
  w.slices["node1"] = {
      {.name = "gpu-0", .type = "gpu"},
      {.name = "gpu-1", .type = "gpu"},
      {.name = "gpu-2-mig-19-1-1", .type = "mig", .uuid = "MIG-b", .profile = "1g.10gb"},
      {.name = "gpu-2-mig-19-0-1", .type = "mig", .uuid = "MIG-a", .profile = "1g.10gb"}};
  PlaceholderRecord r{.node = "node1", .pod = "ml/mig", .gpus = 1, .profile = "1g.10gb"};
  w.jobs = {Job(10, "node1", {3}), PlaceholderJob(20, r, /*running=*/true, {2})};
  const Observation o = Observe(w, cfg, kNow);
  ASSERT_EQ(o.nodes.size(), 1u) << (o.node_granular.empty() ? "" : o.node_granular.begin()->second);
  const NodeDevices& n = o.nodes[0];
  ASSERT_EQ(n.devices.size(), 4u);
  EXPECT_EQ(n.devices[2].name, "gpu-2-mig-19-0-1");
  EXPECT_EQ(n.devices[2].profile, "1g.10gb");
  EXPECT_EQ(n.devices[0].profile, "");
  EXPECT_EQ(n.whole_gres_type, "h100");
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_EQ(n.placeholders[0].profile, "1g.10gb");

  // Whole GPUs of two types beside the slices: no type a whole-GPU placeholder could name.
  w.slurm_nodes[0].gpus = {{"h100", 1}, {"a100", 1}, {"1g.10gb", 2}};
  EXPECT_EQ(Observe(w, cfg, kNow).nodes[0].whole_gres_type, "");
  // Without gres_files the node's slices cannot be proven: node granularity, and why.
  cfg.gpu_sharing.gres_files.clear();
  const Observation unproven = Observe(w, cfg, kNow);
  EXPECT_TRUE(unproven.nodes.empty());
  EXPECT_THAT(unproven.node_granular.at("node1"), HasSubstr("GPU mapping not proven"));
}

TEST(ObserveTest, EachNodeCarriesItsKubernetesLabelsTaintsAndUnusedGives) {
  World w = TwoNodes();
  w.paired["node2"].labels = {{"zone", "b"}};
  w.paired["node2"].taints = {
      {.key = "nvidia.com/maintenance", .value = "true", .effect = "NoSchedule"}};
  w.paired["node2"].unused_gives = {{"ml/a", 7, 100}};
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes.size(), 2u);
  EXPECT_THAT(o.nodes[0].labels, IsEmpty());
  EXPECT_THAT(o.nodes[0].taints, IsEmpty());
  EXPECT_EQ(o.nodes[1].k8s_node, "node2.k8s");
  EXPECT_EQ(o.nodes[1].labels.at("zone"), "b");
  EXPECT_EQ(o.nodes[1].taints, w.paired["node2"].taints);
  EXPECT_THAT(o.nodes[0].unused_gives, IsEmpty());
  EXPECT_EQ(o.nodes[1].unused_gives, w.paired["node2"].unused_gives);
}

// The driver's taint on a published device reaches the device at its GRES index.
TEST(ObserveTest, EachDeviceCarriesTheDriversTaint) {
  World w = TwoNodes();
  w.slices["node2.k8s"][5].taint = "gpu.nvidia.com/xid=79:NoSchedule";
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes.size(), 2u);
  ASSERT_EQ(o.nodes[1].devices.size(), 8u);
  EXPECT_EQ(o.nodes[1].devices[5].name, "gpu-5");
  EXPECT_EQ(o.nodes[1].devices[5].driver_taint, "gpu.nvidia.com/xid=79:NoSchedule");
  EXPECT_EQ(o.nodes[1].devices[4].driver_taint, "");
  for (const Device& d : o.nodes[0].devices) EXPECT_EQ(d.driver_taint, "") << d.name;
}

TEST(ObserveTest, NodesWithoutAProvenMappingStayNodeGranularAndSayWhy) {
  World w = TwoNodes();
  w.slices.erase("node2.k8s");
  w.slices["node1"] = Slice(7);  // Slurm has 8 GPUs: one device is missing
  const Observation o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.nodes, IsEmpty());
  EXPECT_THAT(o.node_granular.at("node1"), HasSubstr("mapping not proven"));
  EXPECT_THAT(o.node_granular.at("node2"), HasSubstr("no ResourceSlice of driver gpu.nvidia.com"));
}

TEST(ObserveTest, OnlyHandedOverNodesAreSharedTheOthersWaitForTheNodeLane) {
  World w = TwoNodes();
  w.paired["node1"].handover = plan::Handover::kWinding;
  w.paired["node1"].handover_why = "it returns to Slurm: lent to Kubernetes until its cool-down";
  w.paired["node2"].handover = plan::Handover::kHoldsWanted;
  w.paired["node2"].handover_why = "the device lane holds every GPU";
  w.held["node2.k8s"] = {DeviceName(0)};
  Observation o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.nodes, IsEmpty());
  EXPECT_EQ(o.node_granular.at("node1"),
            "waiting for the node lane to hand it over: it returns to Slurm: lent to Kubernetes "
            "until its cool-down");
  ASSERT_EQ(o.handing_over.size(), 1u) << "only the one whose node lane wants the holds";
  EXPECT_EQ(o.handing_over[0].node, "node2");
  EXPECT_EQ(o.sharing.at("node1"), (inventory::GpuSharingView{.eligible = true}));
  EXPECT_EQ(o.sharing.at("node2"), (inventory::GpuSharingView{.eligible = true}));

  for (int i = 0; i < 8; ++i) w.held["node2.k8s"].insert(DeviceName(i));
  w.paired["node1"].handover = plan::Handover::kNodeLane;
  w.paired["node1"].handover_why.clear();
  o = Observe(w, Cfg(), kNow);
  EXPECT_TRUE(o.sharing.at("node2").all_held);
  EXPECT_THAT(o.node_granular.at("node1"), HasSubstr("has not planned it as eligible yet"));
  EXPECT_EQ(FindNode(o, "node2"), &o.handing_over[0]);
  EXPECT_EQ(FindNode(o, "node3"), nullptr);
}

TEST(ObserveTest, ANodeNoLongerEligibleStaysWhileTheLaneHasPlaceholdersOrHoldsThere) {
  World w = TwoNodes();
  w.slices.erase("node1");  // the driver no longer publishes node1
  w.held["node1"] = {DeviceName(0), DeviceName(1)};
  w.jobs = {PlaceholderJob(20, {.node = "node1", .pod = "ml/infer", .gpus = 1}, true, {2})};
  Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.leaving.size(), 1u);
  EXPECT_EQ(o.leaving[0].placeholders.size(), 1u);
  ASSERT_EQ(o.leaving[0].devices.size(), 2u);
  EXPECT_EQ(o.leaving[0].devices[0].index, -1) << "no mapping: by name only";
  EXPECT_TRUE(o.sharing.at("node1").leaving);
  EXPECT_THAT(o.node_granular.at("node1"),
              HasSubstr("leaving GPU sharing (no ResourceSlice of driver gpu.nvidia.com)"));

  w.jobs.clear();
  w.held.clear();
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.leaving, IsEmpty());
  EXPECT_FALSE(o.sharing.count("node1")) << "the node lane's again";
}

// gpu_sharing off while an earlier run's holds and placeholders remain: every node that has
// any leaves GPU sharing (its lent GPUs come back as in a return), the others are simply
// node-granular; no node is shared.
TEST(ObserveTest, WithGpuSharingOffEveryNodeWindsDownWhatIsLeft) {
  World w = TwoNodes();
  w.held["node1"] = {DeviceName(0)};
  w.jobs = {PlaceholderJob(20, {.node = "node1", .pod = "ml/infer", .gpus = 1}, true, {2})};
  config::Config cfg = Cfg();
  cfg.gpu_sharing.enabled = false;
  const Observation o = Observe(w, cfg, kNow);
  EXPECT_THAT(o.nodes, IsEmpty());
  EXPECT_THAT(o.handing_over, IsEmpty());
  ASSERT_EQ(o.leaving.size(), 1u);
  EXPECT_EQ(o.leaving[0].node, "node1");
  EXPECT_EQ(o.leaving[0].placeholders.size(), 1u);
  EXPECT_THAT(o.node_granular.at("node1"), HasSubstr("leaving GPU sharing (gpu_sharing is off)"));
  EXPECT_EQ(o.node_granular.at("node2"), "gpu_sharing is off");
  EXPECT_FALSE(o.sharing.count("node2"));
}

TEST(ObserveTest, ANodeWhosePoolCannotBeReadKeepsItsHoldsAndPlaceholdersAndIsNotPlanned) {
  World w = TwoNodes();
  w.slices.erase("node1");
  w.unreadable["node1"] = "pool generation 2 has 1 of 2 slices (the driver is still publishing)";
  w.held["node1"] = {DeviceName(0), DeviceName(1)};
  w.jobs = {PlaceholderJob(20, {.node = "node1", .pod = "ml/infer", .gpus = 1}, true, {2})};
  Observation o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.leaving, IsEmpty()) << "frozen, not wound down";
  EXPECT_EQ(FindNode(o, "node1"), nullptr) << "nothing planned on it";
  ASSERT_TRUE(o.sharing.count("node1"));
  EXPECT_TRUE(o.sharing.at("node1").leaving) << "the node lane keeps off it";
  EXPECT_THAT(o.unreadable.at("node1"), HasSubstr("1 placeholder(s) and 2 hold(s) stay"));
  EXPECT_THAT(o.node_granular.at("node1"), HasSubstr("has 1 of 2 slices"));
  EXPECT_NE(FindNode(o, "node2"), nullptr) << "the other node is planned as before";

  w.unreadable.clear();  // it reads again (one slice of 8 devices): planned again
  w.slices["node1"] = Slice(8);
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.unreadable, IsEmpty());
  EXPECT_NE(FindNode(o, "node1"), nullptr);
}

TEST(ObserveTest, ANodeWithAJobWhoseGpuIndicesCannotBeReadIsFrozen) {
  World w = TwoNodes();
  slurm::JobView j = Job(31, "node2", {});
  j.gpu_indices.clear();
  j.unreadable_gpus["node2"] = "GRES \"gpu:h100:2(IDX:0-x)\": bad index";
  w.jobs = {j};
  w.held["node2.k8s"] = {DeviceName(0)};
  Observation o = Observe(w, Cfg(), kNow);
  EXPECT_EQ(FindNode(o, "node2"), nullptr) << "not planned: its idle GPUs may be the job's";
  EXPECT_THAT(o.unreadable.at("node2"),
              HasSubstr("the GPU indices of Slurm job 31 cannot be read (GRES"));
  EXPECT_TRUE(o.sharing.at("node2").leaving) << "the node lane keeps off it";
  EXPECT_THAT(o.leaving, IsEmpty()) << "its hold stays";
  EXPECT_NE(FindNode(o, "node1"), nullptr);

  w.jobs[0].state = slurm::JobState::kComplete;  // it ended: its GPUs no longer matter
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(o.unreadable, IsEmpty());
  EXPECT_NE(FindNode(o, "node2"), nullptr);
}

TEST(ObserveTest, APlaceholderPartitionThatCouldEndOrPreemptAPlaceholderRefusesNewGives) {
  World w = TwoNodes();
  slurm::PartitionView hold{.name = "skb-gpu-hold", .nodes = {"node1", "node2", "node3"}};
  w.partitions = {hold};
  w.partitions_known = true;
  Observation o = Observe(w, Cfg(), kNow);
  EXPECT_EQ(FindNode(o, "node1")->no_gives, "");

  w.partitions[0].max_time_minutes = 60;
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(FindNode(o, "node1")->no_gives, HasSubstr("has MaxTime=60 min"));
  EXPECT_NE(FindNode(o, "node1"), nullptr) << "still planned: its holds and returns go on";

  w.partitions[0] = hold;
  w.partitions[0].preempt_mode = slurm::PreemptMode::kRequeue;
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(FindNode(o, "node2")->no_gives, HasSubstr("PreemptMode=REQUEUE"));

  w.partitions[0] = hold;
  w.partitions[0].nodes = {"node2"};
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(FindNode(o, "node1")->no_gives, HasSubstr("does not include the node"));
  EXPECT_EQ(FindNode(o, "node2")->no_gives, "");

  w.partitions = {};
  o = Observe(w, Cfg(), kNow);
  EXPECT_THAT(FindNode(o, "node1")->no_gives, HasSubstr("does not exist in Slurm"));
}

// A job named like a placeholder is one only with its record (which only Slurm operators and
// the bridge's SlurmUser can write into an AdminComment); without, it holds its GPUs as an
// ordinary job and is reported. A placeholder outside the configured partition (the
// partition was renamed in the configuration under a live give) is still honoured: read as
// an ordinary job, its GPUs would be Slurm's and it could be a give's victim.
TEST(ObserveTest, APlaceholderIsKnownByItsRecordAndOneInAnotherPartitionIsStillHonoured) {
  World w = TwoNodes();
  slurm::JobView moved = Job(30, "node1", {0, 1});
  moved.name = kPlaceholderJobName;  // submitted when the partition was still "gpu"
  moved.admin_comment = FormatPlaceholderRecord({.node = "node1", .pod = "a/b", .gpus = 2});
  slurm::JobView unrecorded = Job(31, "node1", {2});
  unrecorded.name = kPlaceholderJobName;
  unrecorded.partition = "skb-gpu-hold";
  w.jobs = {moved, unrecorded};
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes.size(), 2u);
  ASSERT_EQ(o.nodes[0].placeholders.size(), 1u);
  EXPECT_EQ(o.nodes[0].placeholders[0].job_id, 30u);
  EXPECT_EQ(o.nodes[0].placeholders[0].indices, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(o.nodes[0].jobs.size(), 1u) << "the one without a record holds its GPU as a job";
  EXPECT_EQ(o.nodes[0].jobs[0].view.job_id, 31u);
  EXPECT_THAT(o.misplaced.at(30), HasSubstr("runs in partition gpu, not skb-gpu-hold"));
  EXPECT_EQ(o.suspicious.count(30), 0u);
  EXPECT_THAT(o.suspicious.at(31), HasSubstr("no readable placeholder record"));
}

TEST(ObserveTest, APendingGiveIsWantedWhileItsPodWaitsAndNotAfterTheTimeout) {
  World w = TwoNodes();
  const PlaceholderRecord r{.node = "node2",
                            .pod = "ml/infer",
                            .gpus = 2,
                            .victims = {10},
                            .signalled_at = 1'699'999'990};
  w.jobs = {Job(10, "node2", {0, 1, 2, 3}), PlaceholderJob(20, r, /*running=*/false)};
  w.pod_node = {{"ml/infer", ""}};
  Observation o = Observe(w, Cfg(), kNow);
  const NodeDevices& n = o.nodes[1];
  ASSERT_EQ(n.placeholders.size(), 1u);
  EXPECT_FALSE(n.placeholders[0].running);
  EXPECT_TRUE(n.placeholders[0].wanted);
  EXPECT_TRUE(n.placeholders[0].pod_waiting);
  EXPECT_FALSE(n.placeholders[0].timed_out);
  ASSERT_EQ(n.jobs.size(), 1u);
  EXPECT_EQ(n.jobs[0].signalled_at, ownership::FromUnix(1'699'999'990));

  w.pod_node = {{"ml/infer", "node1"}};  // placed elsewhere meanwhile
  EXPECT_FALSE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].wanted);
  EXPECT_FALSE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].pod_waiting);
  w.pod_node = {{"ml/infer", "node2.k8s"}};  // placed on the give's node: wanted, not waiting
  EXPECT_TRUE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].wanted);
  EXPECT_FALSE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].pod_waiting);
  w.pod_node.clear();  // gone
  EXPECT_FALSE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].wanted);
  EXPECT_FALSE(Observe(w, Cfg(), kNow).nodes[1].placeholders[0].pod_waiting);
  w.pod_node = {{"ml/infer", ""}};
  const Placeholder late =
      Observe(w, Cfg(), kNow + std::chrono::minutes(11)).nodes[1].placeholders[0];
  EXPECT_FALSE(late.wanted);
  EXPECT_TRUE(late.timed_out);
  EXPECT_TRUE(late.pod_waiting) << "a give that timed out for a pod that still waits went unused";
}

// A health hold names no pod: it is the bridge's (never an ordinary job), carries its device
// and slot, and is never cancelled as a give whose pod is gone or that waited too long.
TEST(ObserveTest, AHealthHoldIsAPlaceholderOfNoPod) {
  World w = TwoNodes();
  const PlaceholderRecord r{.node = "node2", .gpus = 1, .health = "gpu-5", .slot = 3};
  w.jobs = {PlaceholderJob(20, r, /*running=*/true, {5}), PlaceholderJob(21, r, false)};
  w.jobs[1].admin_comment =
      FormatPlaceholderRecord({.node = "node2", .gpus = 1, .health = "gpu-5", .slot = 4});
  const Observation o = Observe(w, Cfg(), kNow + std::chrono::hours(2));
  EXPECT_THAT(o.suspicious, IsEmpty());
  const NodeDevices& n = o.nodes[1];
  ASSERT_EQ(n.placeholders.size(), 2u);
  EXPECT_EQ(n.placeholders[0].health, "gpu-5");
  EXPECT_EQ(n.placeholders[0].slot, 3);
  EXPECT_THAT(n.placeholders[0].indices, ElementsAre(5));
  EXPECT_EQ(n.placeholders[0].pod, "");
  EXPECT_FALSE(n.placeholders[1].running);
  EXPECT_TRUE(n.placeholders[1].wanted);
  EXPECT_FALSE(n.placeholders[1].timed_out);
  EXPECT_THAT(n.jobs, IsEmpty()) << "not an ordinary job";
}

TEST(ObserveTest, CompletingJobsStillHoldTheirGpusAndEndedOnesDoNot) {
  World w = TwoNodes();
  slurm::JobView completing = Job(10, "node1", {0, 1});
  completing.state = slurm::JobState::kComplete;
  completing.completing = true;
  slurm::JobView ended = Job(11, "node1", {2, 3});
  ended.state = slurm::JobState::kComplete;
  w.jobs = {completing, ended};
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes[0].jobs.size(), 1u);
  EXPECT_EQ(o.nodes[0].jobs[0].view.job_id, 10u);
}

// A give's victims that ended (not pending, not on their GPUs any more) are handed to the
// planner with their signal time: recorded on the placeholder, or without one (the daemon
// died before recording it) the placeholder's submission, for a job a signal ended only.
TEST(ObserveTest, VictimsThatEndedAfterTheSignalAreSeenWithTheirSignalTime) {
  World w = TwoNodes();
  slurm::JobView died = Job(41, "node1", {0, 1});
  died.state = slurm::JobState::kFailed;
  died.exit_signal = 10;
  slurm::JobView requeued = Job(42, "node1", {2, 3});
  requeued.state = slurm::JobState::kPending;
  slurm::JobView running = Job(43, "node1", {4, 5});
  PlaceholderRecord signalled{.node = "node1",
                              .pod = "ml/a",
                              .gpus = 6,
                              .victims = {41, 42, 43},
                              .signalled_at = 1'700'000'000};
  slurm::JobView exited = Job(44, "node2", {0});
  exited.state = slurm::JobState::kComplete;  // exit 0: no signal ended it
  slurm::JobView killed = Job(45, "node2", {1});
  killed.state = slurm::JobState::kFailed;
  killed.exit_signal = 10;
  PlaceholderRecord unrecorded{.node = "node2", .pod = "ml/b", .gpus = 2, .victims = {44, 45}};
  w.jobs = {died,
            requeued,
            running,
            PlaceholderJob(50, signalled, false),
            exited,
            killed,
            PlaceholderJob(51, unrecorded, false)};
  const Observation o = Observe(w, Cfg(), kNow);
  ASSERT_EQ(o.nodes.size(), 2u);
  ASSERT_EQ(o.nodes[0].ended_victims.size(), 1u);
  const EndedVictim& e = o.nodes[0].ended_victims[0];
  EXPECT_EQ(e.view.job_id, 41u);
  EXPECT_EQ(ownership::ToUnix(e.signalled_at), 1'700'000'000);
  EXPECT_EQ(e.pod, "ml/a");
  EXPECT_TRUE(e.recorded);
  ASSERT_EQ(o.nodes[1].ended_victims.size(), 1u);
  EXPECT_EQ(o.nodes[1].ended_victims[0].view.job_id, 45u);
  EXPECT_FALSE(o.nodes[1].ended_victims[0].recorded);
  EXPECT_EQ(ownership::ToUnix(o.nodes[1].ended_victims[0].signalled_at), 1'699'999'900);
}

TEST(ApplyBorrowingTest, QuotasMarkTheBorrowingPods) {
  World w;
  w.pending = {{.pod = "a/within", .gpus = 2},
               {.pod = "a/over", .gpus = 2},
               {.pod = "a/claims", .gpus = 3, .claim_gpus = 2},
               {.pod = "a/both", .gpus = 1, .claim_gpus = 1}};
  w.pending[0].borrowing = "stale";
  ApplyBorrowing({{"a/over", "tenant a uses 8 of its 8 GPUs guaranteed"},
                  {"a/both", "tenant a uses 8 of its 8 GPUs guaranteed"}},
                 &w);
  EXPECT_EQ(w.pending[0].borrowing, "");
  EXPECT_EQ(w.pending[1].borrowing, "tenant a uses 8 of its 8 GPUs guaranteed");
  // Quotas count the claims' GPUs (QuotaLedger): a pod within its guarantee is free to take
  // a preemptible job's GPUs whichever way it asks.
  EXPECT_EQ(w.pending[2].borrowing, "");
  EXPECT_EQ(w.pending[3].borrowing, "tenant a uses 8 of its 8 GPUs guaranteed");
}

}  // namespace
}  // namespace skb::devices

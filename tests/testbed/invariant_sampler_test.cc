// SPDX-License-Identifier: Apache-2.0
// The sampler's rule on hand-made samples: what counts as holding a node's GPUs.
#include "tests/testbed/invariant_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skb::testbed {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

slurm::JobView Job(uint32_t id, slurm::JobState state, bool completing = false) {
  slurm::JobView j;
  j.job_id = id;
  j.state = state;
  j.completing = completing;
  j.nodes = {"node1"};
  j.gpus_per_node = 8;
  return j;
}

json Pod(const std::string& ns, const std::string& name, int gpus, bool reservation_label,
         const std::string& resource = "nvidia.com/gpu") {
  json p = {
      {"metadata", {{"namespace", ns}, {"name", name}, {"labels", json::object()}}},
      {"spec",
       {{"nodeName", "node1"},
        {"containers",
         {{{"name", "main"}, {"resources", {{"limits", {{resource, std::to_string(gpus)}}}}}}}}}}};
  if (reservation_label) p["metadata"]["labels"]["slurm-k8s-bridge.io/role"] = "reservation";
  return p;
}

json Node(int allocatable, int capacity) {
  return {{"metadata", {{"name", "node1"}}},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", std::to_string(allocatable)}}},
            {"capacity", {{"nvidia.com/gpu", std::to_string(capacity)}}}}}};
}

std::vector<std::string> Found(const std::vector<slurm::JobView>& jobs,
                               const std::vector<json>& pods, SamplerOptions o = {}) {
  return DoubleBookings(SampleNodes(jobs, pods, {Node(7, 8)}, o));
}

TEST(InvariantRule, ACompletingJobStillHoldsItsGpus) {
  auto found = Found({Job(12, slurm::JobState::kComplete, /*completing=*/true)},
                     {Pod("default", "infer", 1, false)});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0], HasSubstr("job 12 (COMPLETED+COMPLETING)"));
  EXPECT_THAT(found[0], HasSubstr("pod default/infer [1 GPUs]"));
  EXPECT_THAT(found[0], HasSubstr("7 of 8 GPUs allocatable"));
}

TEST(InvariantRule, RunningAndSuspendedJobsHoldFinishedOnesDoNot) {
  const std::vector<json> pods = {Pod("default", "infer", 8, false)};
  EXPECT_THAT(Found({Job(1, slurm::JobState::kRunning)}, pods), SizeIs(1));
  EXPECT_THAT(Found({Job(2, slurm::JobState::kSuspended)}, pods), SizeIs(1));
  EXPECT_THAT(Found({Job(3, slurm::JobState::kComplete)}, pods), IsEmpty());
  EXPECT_THAT(Found({Job(4, slurm::JobState::kPending)}, pods), IsEmpty());
}

TEST(InvariantRule, OnlyTheBridgesReservationIsExcused) {
  const std::vector<slurm::JobView> jobs = {Job(1, slurm::JobState::kRunning)};
  EXPECT_THAT(Found(jobs, {Pod("slurm-bridge", "reserve-node1", 8, true)}), IsEmpty());
  // The role label in another namespace is anybody's pod.
  EXPECT_THAT(Found(jobs, {Pod("default", "fake-reservation", 8, true)}), SizeIs(1));
  // A pod asking no GPU holds none.
  EXPECT_THAT(Found(jobs, {Pod("default", "cpu-only", 0, false)}), IsEmpty());
}

TEST(InvariantRule, TheConfiguredGpuResourceIsRead) {
  SamplerOptions amd;
  amd.gpu_resource = "amd.com/gpu";
  const std::vector<slurm::JobView> jobs = {Job(1, slurm::JobState::kRunning)};
  EXPECT_THAT(Found(jobs, {Pod("default", "mi300", 2, false, "amd.com/gpu")}, amd), SizeIs(1));
  EXPECT_THAT(Found(jobs, {Pod("default", "mi300", 2, false, "amd.com/gpu")}), IsEmpty());
}

// Per device: a Slurm job's GRES index and an allocated claim on the same device. On a MIG
// node GRES index 6 is a slice, not gpu-6: the layout the test gives decides.
TEST(InvariantRule, PerDeviceTheLayoutNamesEachIndexsDevice) {
  slurm::JobView j = Job(7, slurm::JobState::kRunning);
  j.nodes = {"node2"};
  j.gpu_indices["node2"] = {6};
  const json claim = {
      {"metadata", {{"namespace", "ml"}, {"name", "mig-0-gpu-abcde"}}},
      {"status",
       {{"allocation",
         {{"devices",
           {{"results",
             {{{"request", "gpu"},
               {"driver", "gpu.nvidia.com"},
               {"pool", "node2"},
               {"device", "gpu-6-mig-19-0-1"}}}}}}}},
        {"reservedFor", {{{"resource", "pods"}, {"name", "mig-0"}, {"uid", "u"}}}}}}};
  SamplerOptions o;
  o.per_device = true;
  // Without the layout index 6 would be read as gpu-6, which the node does not publish:
  // the booking would be missed.
  EXPECT_THAT(DeviceDoubleBookings({j}, {claim}, o), IsEmpty());
  o.devices_by_index["node2"] = {
      "gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6-mig-19-0-1", "gpu-6-mig-19-1-1"};
  EXPECT_THAT(DeviceDoubleBookings({j}, {claim}, o),
              ElementsAre(HasSubstr("node node2 device gpu-6-mig-19-0-1: Slurm job 7")));
  j.gpu_indices["node2"] = {7};
  EXPECT_THAT(DeviceDoubleBookings({j}, {claim}, o), IsEmpty());
}

}  // namespace
}  // namespace skb::testbed

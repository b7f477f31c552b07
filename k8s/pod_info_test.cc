// SPDX-License-Identifier: Apache-2.0
#include "k8s/pod_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/event_info.h"
#include "k8s/lease_info.h"
#include "k8s/testdata.h"

namespace skb::k8s {
namespace {

using nlohmann::json;

TEST(PodInfo, ReadsARealisticPod) {
  auto p = ParsePod(testdata::RealisticPod());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->meta.namespace_, "inference");
  EXPECT_EQ(p->node_name, "node3");
  EXPECT_EQ(p->priority, 1000000);
  EXPECT_EQ(p->priority_class_name, "inference-high");
  EXPECT_EQ(p->termination_grace_period_seconds, 30);
  EXPECT_EQ(p->phase, "Running");
  EXPECT_EQ(p->GpuRequest(), 4);
  EXPECT_EQ(p->EffectiveRequest("cpu").Value(), 16);
  EXPECT_FALSE(p->Terminal());
  EXPECT_FALSE(p->DisruptionTarget());
  EXPECT_FALSE(p->meta.deleting());
  EXPECT_TRUE(p->issues.empty());
}

// A MIG slice of the device plugin's "mixed" strategy counts as a GPU; other resources do
// not.
TEST(PodInfo, MigSlicesCountAsGpus) {
  json pod = {
      {"metadata", {{"name", "mig"}, {"namespace", "inference"}}},
      {"spec",
       {{"containers",
         json::array(
             {{{"name", "a"},
               {"resources",
                {{"limits", {{"nvidia.com/mig-1g.10gb", "2"}, {"amd.com/gpu", "4"}}}}}},
              {{"name", "b"},
               {"resources",
                {{"requests", {{"nvidia.com/mig-3g.40gb", "1"}, {"nvidia.com/gpu", "1"}}}}}}})}}}};
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->GpuRequest(), 4);
}

TEST(PodInfo, DeletionDisruptionFinalizersAndInitContainers) {
  json pod = {
      {"metadata",
       {{"name", "reserve-node1"},
        {"namespace", "slurm"},
        {"deletionTimestamp", "2026-11-21T10:00:00Z"},
        {"finalizers", {"slurm-k8s-bridge.io/drain"}}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "a"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}},
                      {{"name", "b"}, {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}})},
        {"initContainers",
         json::array(
             {{{"name", "i"}, {"resources", {{"requests", {{"nvidia.com/gpu", "8"}}}}}}})}}},
      {"status",
       {{"phase", "Failed"},
        {"conditions", json::array({{{"type", "DisruptionTarget"},
                                     {"status", "True"},
                                     {"reason", "PreemptionByScheduler"}}})}}}};
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->meta.deleting());
  EXPECT_EQ(p->meta.finalizers, std::vector<std::string>{"slurm-k8s-bridge.io/drain"});
  EXPECT_TRUE(p->DisruptionTarget());
  EXPECT_TRUE(p->Terminal());
  EXPECT_EQ(p->GpuRequest(), 8);  // init container max beats the sum 2+1
  EXPECT_FALSE(p->priority.has_value());
}

TEST(PodInfo, WrongTypesNeverBecomeValues) {
  json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"priority", "high"}, {"nodeName", 7}, {"containers", {{"name", "x"}}}}},
              {"status", {{"phase", json::array()}}}};
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->priority.has_value());
  EXPECT_EQ(p->node_name, "");
  EXPECT_TRUE(p->containers.empty());
  EXPECT_EQ(p->phase, "");
  EXPECT_EQ(p->issues.size(), 4u);
}

TEST(LeaseInfo, Reads) {
  auto l = ParseLease({{"metadata", {{"name", "bridge"}, {"namespace", "kube-system"}}},
                       {"spec",
                        {{"holderIdentity", "pod-a"},
                         {"leaseDurationSeconds", 15},
                         {"renewTime", "2026-11-21T10:00:00.000000Z"},
                         {"leaseTransitions", 3}}}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->holder_identity, "pod-a");
  EXPECT_EQ(l->lease_duration_seconds, 15);
  EXPECT_EQ(l->lease_transitions, 3);
  auto bad =
      ParseLease({{"metadata", {{"name", "x"}}}, {"spec", {{"leaseDurationSeconds", "15"}}}});
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->lease_duration_seconds.has_value());
  EXPECT_EQ(bad->issues.size(), 1u);
}

TEST(EventInfo, Reads) {
  auto e = ParseEvent({{"metadata", {{"name", "node1.abc"}, {"namespace", "default"}}},
                       {"involvedObject", {{"kind", "Node"}, {"name", "node1"}}},
                       {"type", "Warning"},
                       {"reason", "SlurmDrained"},
                       {"message", "k8s-bridge: GpuHealthy: XID 79"},
                       {"count", 3},
                       {"source", {{"component", "slurm-k8s-bridge"}}}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->involved.kind, "Node");
  EXPECT_EQ(e->involved.name, "node1");
  EXPECT_EQ(e->count, 3);
  EXPECT_EQ(e->source_component, "slurm-k8s-bridge");
}

}  // namespace
}  // namespace skb::k8s

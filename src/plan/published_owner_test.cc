// SPDX-License-Identifier: Apache-2.0
#include "src/plan/published_owner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/ownership/schema.h"

namespace skb::plan {
namespace {

using inventory::GpuPod;
using inventory::K8sNode;
using ::testing::Contains;
using ::testing::HasSubstr;

// A node as the bridge leaves it while Slurm owns it: Slurm's conditions published.
K8sNode Published() {
  K8sNode k;
  k.name = "node1";
  k.conditions = {{"Ready", "True", "KubeletReady", "", {}},
                  {"SlurmNodeHealthy", "True", "SlurmNodeUp", "slurmd is responding", {}},
                  {"SlurmDrained", "False", "NotDrained", "", {}}};
  return k;
}

void Drained(K8sNode* k, const std::string& reason, const std::string& message) {
  for (auto& c : k->conditions) {
    if (c.type == "SlurmDrained") c = {"SlurmDrained", "True", reason, message, {}};
  }
}

GpuPod Reservation(bool terminating = false) {
  GpuPod p;
  p.namespace_name = "slurm-bridge";
  p.name = "reserve-node1";
  p.node_name = "node1";
  p.phase = "Running";
  p.reservation = true;
  p.terminating = terminating;
  p.labels[ownership::kRoleLabel] = ownership::kReservationRole;
  return p;
}

TEST(PublishedOwner, EachOwnershipStateFromItsRecords) {
  K8sNode k = Published();
  EXPECT_EQ(OwnerFromKubernetes(k, {Reservation()}).owner, NodeOwner::kSlurm);
  EXPECT_EQ(OwnerFromKubernetes(k, {Reservation(/*terminating=*/true)}).owner, NodeOwner::kLending);
  GpuPod replacing = Reservation(true);
  replacing.annotations[ownership::kReplacingAnnotation] = "true";
  EXPECT_EQ(OwnerFromKubernetes(k, {replacing}).owner, NodeOwner::kSwapping);
  // A terminating one is read first, as the ownership planner does.
  EXPECT_EQ(OwnerFromKubernetes(k, {Reservation(), replacing}).owner, NodeOwner::kSwapping);

  K8sNode lent = k;
  lent.annotations[ownership::kLentAtAnnotation] = "1700000000";
  lent.annotations[ownership::kLentToAnnotation] = "default/infer-a";
  Drained(&lent, "DrainedByBridge", "k8s-bridge: lent to default/infer-a");
  const PublishedOwner o = OwnerFromKubernetes(lent, {});
  EXPECT_EQ(o.owner, NodeOwner::kKubernetes);
  EXPECT_THAT(o.explanation, Contains(HasSubstr("lent-to=default/infer-a")));
  EXPECT_THAT(o.explanation, Contains("owner: k8s (lent and no reservation)"));
  EXPECT_EQ(OwnerFromKubernetes(lent, {Reservation()}).owner, NodeOwner::kReturning);
  // The lend drain alone (the annotation not written yet, or removed by hand) is a lend.
  K8sNode drained_only = k;
  Drained(&drained_only, "DrainedByBridge", "k8s-bridge: lent to kubernetes");
  EXPECT_EQ(OwnerFromKubernetes(drained_only, {}).owner, NodeOwner::kKubernetes);

  K8sNode swap = k;
  swap.taints.push_back({ownership::kSwapTaintKey, "", "NoSchedule"});
  EXPECT_EQ(OwnerFromKubernetes(swap, {Reservation()}).owner, NodeOwner::kSwapping);

  K8sNode shared = k;
  shared.annotations[ownership::kGpuSharedSinceAnnotation] = "1700000000";
  EXPECT_EQ(OwnerFromKubernetes(shared, {}).owner, NodeOwner::kGpuShared);
}

TEST(PublishedOwner, HealthShowsOnceTheBridgesDrainIsPublishedAndAnAdminDrainIsNotIllHealth) {
  K8sNode k = Published();
  Drained(&k, "DrainedByBridge", "k8s-bridge: GPUHealthy=False");
  EXPECT_EQ(OwnerFromKubernetes(k, {Reservation()}).owner, NodeOwner::kUnhealthy);
  Drained(&k, "DrainedByAdmin", "psu swap (uid 0)");
  EXPECT_EQ(OwnerFromKubernetes(k, {Reservation()}).owner, NodeOwner::kSlurm);
  // Down in Slurm: the owner the daemon shows without a reservation (lending off).
  K8sNode down = Published();
  down.conditions[1] = {"SlurmNodeHealthy", "False", "SlurmNodeDown", "Slurm state down", {}};
  EXPECT_EQ(OwnerFromKubernetes(down, {}).owner, NodeOwner::kUnhealthy);
  EXPECT_EQ(OwnerFromKubernetes(down, {Reservation()}).owner, NodeOwner::kSlurm);
  // Nothing of Slurm's published: not guessed.
  K8sNode bare;
  bare.name = "node9";
  EXPECT_EQ(OwnerFromKubernetes(bare, {}).owner, NodeOwner::kUnknown);
}

TEST(PublishedOwner, SlurmViewKeepsTheDrainReasonAndLeavesTheBaseStateUnknown) {
  K8sNode k = Published();
  ASSERT_TRUE(PublishedSlurmView(k).has_value());
  EXPECT_EQ(PublishedSlurmState(*PublishedSlurmView(k)), "?");
  Drained(&k, "DrainedByBridge", "k8s-bridge: lent to default/infer-a");
  const slurm::NodeView v = *PublishedSlurmView(k);
  EXPECT_EQ(PublishedSlurmState(v), "?+drain");
  EXPECT_EQ(v.reason, "k8s-bridge: lent to default/infer-a");
  EXPECT_EQ(v.DrainedBy(), slurm::DrainOrigin::kBridgeLend);
  k.conditions[1] = {"SlurmNodeHealthy", "False", "SlurmNodeNotResponding", "", {}};
  EXPECT_EQ(PublishedSlurmState(*PublishedSlurmView(k)), "down+drain*");
  k.conditions[1] = {"SlurmNodeHealthy", "Unknown", "SlurmNodeNotFound", "", {}};
  EXPECT_FALSE(PublishedSlurmView(k).has_value());
  EXPECT_FALSE(PublishedSlurmView(K8sNode{}).has_value());
}

TEST(PublishedOwner, PublishedByBridgeAndTheK8sHealthFacts) {
  K8sNode k;
  k.name = "cpu1";
  k.labels["kubernetes.io/os"] = "linux";
  EXPECT_FALSE(PublishedByBridge(k, false));
  EXPECT_TRUE(PublishedByBridge(k, true));
  K8sNode taint = k;
  taint.taints.push_back({ownership::kBusyTaintKey, "", "NoSchedule"});
  EXPECT_TRUE(PublishedByBridge(taint, false));
  EXPECT_TRUE(PublishedByBridge(Published(), false));
  K8sNode label = k;
  label.labels["slurm-k8s-bridge.io/managed"] = "true";
  EXPECT_TRUE(PublishedByBridge(label, false));

  EXPECT_EQ(PublishedK8sHealth(k), "Ready?");
  K8sNode h = Published();
  EXPECT_EQ(PublishedK8sHealth(h), "Ready");
  h.unschedulable = true;
  h.conditions.push_back({"DrainRequested", "True", "BridgectlDrain", "psu", {}});
  h.conditions[0].status = "False";
  EXPECT_EQ(PublishedK8sHealth(h), "NotReady, cordoned, DrainRequested");
}

TEST(PublishedOwner, LeaseStalenessSaysWhenTheBridgeStoppedRenewing) {
  const Clock::TimePoint now = Clock::TimePoint{} + std::chrono::hours(1000);
  const auto lease = std::chrono::seconds(15);
  EXPECT_EQ(LeaseStaleness("bridge-a", now - std::chrono::seconds(3), lease, now), "");
  EXPECT_EQ(LeaseStaleness("bridge-a", now - std::chrono::seconds(95), lease, now),
            "bridge-a has not renewed it for 95s (its duration 15s)");
  EXPECT_EQ(LeaseStaleness("", now, lease, now), "no replica holds it");
  EXPECT_THAT(LeaseStaleness("bridge-a", std::nullopt, lease, now), HasSubstr("no renewal"));
}

}  // namespace
}  // namespace skb::plan

// SPDX-License-Identifier: Apache-2.0
#include "src/slurm/types.h"

#include <gtest/gtest.h>

namespace skb::slurm {
namespace {

NodeView Drained(std::string reason, bool drain = true) {
  NodeView n;
  n.name = "node1";
  n.base_state = NodeBaseState::kIdle;
  n.drain = drain;
  n.reason = std::move(reason);
  return n;
}

// Who drained a node is read once, from its reason: the lend's, the bridge's other drains
// (health, maintenance), anyone else's; no DRAIN flag, no origin.
TEST(NodeView, DrainedByReadsTheOriginFromTheReason) {
  EXPECT_EQ(Drained("k8s-bridge: lent to Kubernetes").DrainedBy(), DrainOrigin::kBridgeLend);
  EXPECT_EQ(Drained("k8s-bridge: GpuHealthy: XID 79").DrainedBy(), DrainOrigin::kBridge);
  EXPECT_EQ(Drained("k8s-bridge:maintenance").DrainedBy(), DrainOrigin::kBridge)
      << "the space after the prefix is not required";
  EXPECT_EQ(Drained("bad fan").DrainedBy(), DrainOrigin::kOther);
  EXPECT_EQ(Drained("").DrainedBy(), DrainOrigin::kOther) << "a drain without a reason";
  EXPECT_EQ(Drained(" k8s-bridge: lent to x").DrainedBy(), DrainOrigin::kOther)
      << "the prefix must open the reason";
  EXPECT_EQ(Drained("k8s-bridge: lent to x", /*drain=*/false).DrainedBy(), DrainOrigin::kNone);

  NodeView down = Drained("k8s-bridge: GpuHealthy", /*drain=*/false);
  down.base_state = NodeBaseState::kDown;
  EXPECT_TRUE(down.DrainedByBridge()) << "down with the bridge's reason";
  EXPECT_EQ(down.DrainedBy(), DrainOrigin::kNone) << "but not drained";
}

TEST(NodeView, ABootTimeOneSecondLaterIsTheSameBoot) {
  NodeView n;
  n.boot_time = 1'700'000'001;
  EXPECT_FALSE(n.BootedSince(1'700'000'001));
  EXPECT_FALSE(n.BootedSince(1'700'000'000)) << "one boot, read a second apart";
  EXPECT_FALSE(n.BootedSince(1'700'000'002)) << "or a second earlier";
  EXPECT_TRUE(n.BootedSince(1'699'999'999)) << "two seconds: a new boot";
}

}  // namespace
}  // namespace skb::slurm

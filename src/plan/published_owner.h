// SPDX-License-Identifier: Apache-2.0
// A node as the bridge publishes it in Kubernetes, read back without the daemon: for
// `bridgectl --kubeconfig ... get nodes` and `describe node` on a workstation with no shell
// on the slurmctld host (docs/bridgectl.md). Pure: a function of the
// Kubernetes node and the reservation pods bound to it.
//
//   PublishedOwner o = OwnerFromKubernetes(k8s_node, reservations_on_it);
//   o.owner == NodeOwner::kKubernetes   // lent: the lent-at record, no reservation
//
// The daemon's owner (PlanOwner) reads both sides and the config; this reads only what the
// bridge wrote where Kubernetes keeps it, so it names the same states from their records:
//   the reservation pod (schema.h kRoleLabel; being deleted, replacing=true),
//   the node's lent-at annotation and the swap taint, gpu-shared-since,
//   Slurm's view as the bridge last published it: the SlurmNodeHealthy and SlurmDrained
//   conditions (health_config.h; their reason and message carry Slurm's drain reason).
// Where Kubernetes shows less than the daemon sees, it says so instead of guessing:
//   - Slurm's base state (idle, mixed, allocated) is not published: "?" (PublishedSlurmView);
//   - the configured health rules are the daemon's; a Slurm-owned node shows "unhealthy"
//     once the bridge's health drain is published (SlurmDrained, reason DrainedByBridge),
//     which is the rules' verdict after the bridge acted on it;
//   - the conditions lag Slurm by one status pass, the reservation's job list by
//     lending.reservation_update_interval.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/inventory/k8s_node.h"
#include "src/inventory/managed_node.h"
#include "src/plan/node_plan.h"
#include "src/slurm/types.h"

namespace skb::plan {

// Whether the bridge has published anything on the node: one of its conditions
// (SlurmNodeHealthy, SlurmDrained), a label, annotation or taint under its prefix
// ("slurm-k8s-bridge.io/"), or a reservation pod bound to it. A node the bridge never wrote
// on is not one it manages (or it has not reached it yet).
bool PublishedByBridge(const inventory::K8sNode& node, bool has_reservation);

// Slurm's view of the node as the bridge's conditions carry it: drain and its reason
// (SlurmDrained's message), down or failing (SlurmNodeHealthy's reason). The base state is
// kUnknown unless the node is down: Slurm's idle/mixed/allocated are not published. nullopt
// when neither condition is there (slurm_conditions off, or not paired yet), or when
// SlurmNodeHealthy says Slurm has no such node (SlurmNodeNotFound).
std::optional<slurm::NodeView> PublishedSlurmView(const inventory::K8sNode& node);

// `StateString` of a published view with the unknown base state shown as "?": "?",
// "?+drain", "down+drain".
std::string PublishedSlurmState(const slurm::NodeView& view);

struct PublishedOwner {
  NodeOwner owner = NodeOwner::kUnknown;
  // One line per record read (bridgectl describe's "Why").
  std::vector<std::string> explanation;
};

// The owner from the records above. `reservations`: the bridge's reservation pods bound to
// the node (kRoleLabel=kReservationRole), terminating ones included.
PublishedOwner OwnerFromKubernetes(const inventory::K8sNode& node,
                                   const std::vector<inventory::GpuPod>& reservations);

// Whether what the bridge published is kept up to date: its Lease has a holder that renewed
// it within its duration. "" when so, else why not ("no replica holds it", "not renewed for
// 95s (its duration 15s)"): with the bridge down its conditions and records stay as it last
// wrote them. `renewed` nullopt: never (or unreadable).
std::string LeaseStaleness(const std::string& holder, std::optional<Clock::TimePoint> renewed,
                           Clock::Duration duration, Clock::TimePoint now);

// The Kubernetes side in a few words from the node alone: "Ready", "NotReady" or "Ready?"
// (no Ready condition), then ", cordoned" and ", DrainRequested" (bridgectl drain) when so.
// Not the configured health rules' verdict (the daemon's K8S column): those are in the
// config file; their effect shows as the published drain.
std::string PublishedK8sHealth(const inventory::K8sNode& node);

}  // namespace skb::plan

// SPDX-License-Identifier: Apache-2.0
// `bridgectl --from kubernetes get nodes | get node NAME | describe node NAME` (also picked by
// an explicit --kubeconfig): the inventory read from what the bridge publishes in Kubernetes,
// with the admin's kubeconfig and no daemon, so an admin needs no shell on the slurmctld host.
// The answers are the daemon's message types (format.h prints them through the same code),
// with `source` "kubernetes" and the fields Kubernetes cannot know named in
// NodeSummary.unknown instead of left empty.
//
//   ASSIGN_OR_RETURN(KubeView view, ReadKubeView(kube, clock.Now()));
//   v1::ListNodesResponse nodes = NodesFromKubernetes(view);
//
// What is read (read-only: list nodes, pods, events, get leases; docs/bridgectl.md "RBAC"):
//   nodes            every node the bridge published something on (plan::PublishedByBridge):
//                    GPUs, model label, conditions, taints, its annotations;
//   reservation pods every namespace, label slurm-k8s-bridge.io/role=reservation: the node's
//                    Slurm name (slurm-node annotation) and Slurm's jobs there as of its last
//                    batched update (jobs annotation);
//   live GPU pods    every namespace (status.phase not Succeeded/Failed, nvidia.com/gpu asked):
//                    the PODS column, as the daemon's node lane tracks them;
//   Events           describe only: the bridge's Events on the node (source slurm-k8s-bridge);
//   the Lease        whether the bridge still runs (what it published is otherwise stale).
// The owner and Slurm's view are derived in src/ (plan/published_owner.h), not here.
// Not known from Kubernetes: Slurm's base state (shown "?"), active features, the GPU lane's
// per-GPU owners, the jobs of a node without a reservation, the plan. A node whose Kubernetes
// name differs from its Slurm name (kubernetes.node_names) shows its Slurm name only while a
// reservation names it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bridge/api/v1/bridge.pb.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/inventory/k8s_node.h"
#include "src/inventory/managed_node.h"

namespace skb::bridge::cli {

struct KubeView {
  std::vector<inventory::K8sNode> nodes;
  std::vector<inventory::GpuPod> reservations;  // the bridge's, any namespace
  std::vector<inventory::GpuPod> gpu_pods;      // live pods asking for GPUs, reservations aside
  std::vector<nlohmann::json> events;           // core/v1 Events (describe only)
  // The bridge's Lease (kLeaseName in the reservations' namespace, else kLeaseNamespace): its
  // holder, and why what the bridge published may be stale ("" when the Lease is renewed).
  std::string leader;
  std::string stale_why;
};

// Where ReadKubeView looks for the bridge's Lease: the config's defaults
// (leader_election.lease_name in kubernetes.namespace, the reservations' namespace).
inline constexpr char kLeaseName[] = "slurm-k8s-bridge";
inline constexpr char kLeaseNamespace[] = "slurm-bridge";

// Lists what KubeView holds (Events of `events_of_node`'s Kubernetes name when not empty)
// and reads the Lease; a Lease that cannot be read (not found, forbidden) is said in
// stale_why, not an error.
StatusOr<KubeView> ReadKubeView(k8s::KubeClient& kube, Clock::TimePoint now,
                                const std::string& events_of_node = "");

// Every node the bridge published something on, by name; `source` "kubernetes", `leader` the
// Lease's holder, `ready` false with stale_why as the reason when the Lease is not renewed.
api::v1::ListNodesResponse NodesFromKubernetes(const KubeView& view);

// The node of that Slurm or Kubernetes name: its summary, conditions, taints, cordon, the
// records the owner was read from (explanation, after stale_why if any) and the bridge's
// Events on it. No planned
// actions (only the daemon plans). NotFound naming the name otherwise.
StatusOr<api::v1::DescribeNodeResponse> DescribeFromKubernetes(const KubeView& view,
                                                               const std::string& name);

}  // namespace skb::bridge::cli

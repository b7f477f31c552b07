// SPDX-License-Identifier: Apache-2.0
// One managed GPU node as both schedulers see it: the merged view the planner decides on.
//
// A snapshot value: built by the bridge from its informer caches and the last Slurm poll,
// never mutated afterwards. Either side may be missing (a node Slurm does not know, or a
// Kubernetes node that was deleted); the planner then acts on nothing and says why.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/inventory/k8s_node.h"
#include "src/slurm/types.h"

namespace skb::inventory {

// A Kubernetes pod on the node that requests GPUs.
struct GpuPod {
  std::string namespace_name;
  std::string name;
  std::string node_name;  // spec.nodeName ("" while unscheduled)
  int64_t gpus = 0;
  std::string phase;         // Pending, Running, Succeeded, Failed
  bool terminating = false;  // deletionTimestamp set
  bool reservation = false;  // the bridge's own reservation pod
  int32_t priority = 0;

  // What the node-ownership planner (src/ownership) reads back: the bridge keeps no state
  // of its own, so whatever a lend or a reservation swap must remember lives in these.
  std::string uid;                                 // metadata.uid (precondition for writes)
  std::map<std::string, std::string> labels;       // metadata.labels
  std::map<std::string, std::string> annotations;  // metadata.annotations
  std::vector<std::string> finalizers;             // metadata.finalizers
  // metadata.deletionTimestamp: when set, the time by which the kubelet kills the pod's
  // containers (deletion time + grace period). Set together with `terminating`.
  std::optional<Clock::TimePoint> deletion_time;
  std::string priority_class_name;          // spec.priorityClassName
  std::string nominated_node_name;          // status.nominatedNodeName (a pending preemptor)
  std::optional<Clock::TimePoint> started;  // status.startTime (the kubelet accepted it)
  // The GPU model it asks for: the value of its nodeSelector or required node affinity on
  // nvidia.com/gpu.product (devices::RequestedGpuModel); "" for any.
  std::string gpu_model;
  // Quotas only (QuotaLedger): the ResourceClaims it uses ("ns/name", devices::ClaimsOfPod),
  // whose GPUs add to `gpus`, and how many of its templates' claims are not generated yet.
  std::vector<std::string> claims;
  int unresolved_claims = 0;
  // Set by the ledger for the classification: why some of its claims' GPUs are not counted
  // ("" when all are).
  std::string uncounted;
};

// Guaranteed quotas: a lent node taken back for a Slurm tenant below its guarantee
// (quota::PlanReclaims): its borrowed pods are evicted, then it returns to Slurm without the
// cool-down.
struct NodeReclaim {
  std::string tenant;                // for whom
  uint32_t job_id = 0;               // the pending job it serves
  std::vector<std::string> victims;  // "ns/name" of the pods to evict
  std::string why;
  friend bool operator==(const NodeReclaim&, const NodeReclaim&) = default;
};

// What the device lane (src/devices, gpu_sharing) observes of a node, as the node lane reads it.
struct GpuSharingView {
  // Its GPUs map provably to Slurm's GRES indices: it is to be shared GPU by GPU.
  bool eligible = false;
  // Every one of its GPUs carries the bridge's device hold: Kubernetes allocates none anew.
  bool all_held = false;
  // No longer eligible, but the device lane still has placeholders or holds on it: it winds
  // them down before the node lane may take the node. `why` says what is left.
  bool leaving = false;
  std::string why;
  friend bool operator==(const GpuSharingView&, const GpuSharingView&) = default;
};

struct ManagedNode {
  std::string name;
  std::optional<K8sNode> k8s;
  std::optional<slurm::NodeView> slurm;
  // Slurm jobs holding resources on this node (running, suspended or completing).
  std::vector<slurm::JobView> jobs;
  // Jobs that ran here and have ended, while Slurm still remembers them (MinJobAge), kept
  // when the node was lent as they were polled (Store): a lend requeues the ones that ended
  // after its checkpoint signal. The maintenance cycle's check jobs are kept too, lent or
  // not: their end is the check's verdict.
  std::vector<slurm::JobView> ended_jobs;
  // Every component, on whichever node it runs, of the heterogeneous jobs in `jobs` (those
  // here included): Slurm preempts such a job as a whole, so its policy and cost are the
  // whole job's (ownership::WholeJob). Empty when no job here is heterogeneous.
  std::vector<slurm::JobView> het_jobs;
  std::vector<GpuPod> pods;
  // Pods bound here that use ResourceClaims and ask for no GPU resource (gpus 0): on a node
  // shared GPU by GPU, the pods the device lane gives GPUs to through DRA. Only the
  // maintenance cycle reads them: its drain evicts them beside `pods` (the node lane's
  // planners judge the GPU resource alone).
  std::vector<GpuPod> claim_pods;
  // Pending GPU pods whose status.nominatedNodeName is this node: kube-scheduler preempted
  // (or is preempting) for them here. Not bound, so not in `pods`. The ownership planner
  // names the first (highest priority) in the lend reason and does not return the node to
  // Slurm while one waits.
  std::vector<GpuPod> nominated_pods;
  // Guaranteed quotas: the jobs in `jobs` and `het_jobs` that run within their tenant's
  // guarantee, by job id -> tenant (QuotaFacts::guaranteed_jobs). Never taken for another's
  // demand. Empty when quotas are off.
  std::map<uint32_t, std::string> guaranteed_jobs;
  // Guaranteed quotas: the pods in `nominated_pods` that would run beyond their tenant's
  // guarantee, by "ns/name" -> why (QuotaFacts::borrowing_pods). A lend for one
  // of them is refused while the node runs Slurm jobs.
  std::map<std::string, std::string> borrowing_nominated;
  // Guaranteed quotas: this node is being taken back for Slurm (QuotaFacts::reclaims).
  std::optional<NodeReclaim> reclaim;
  // The device lane's view of the node (gpu_sharing): whether it is to be shared GPU by GPU,
  // which decides the handover between the lanes (ownership.h "Switching modes").
  GpuSharingView gpu_sharing;

  // The node's GPUs: Kubernetes' allocatable count (its capacity while allocatable is
  // unknown; MIG slices one each), else Slurm's.
  int64_t Gpus() const {
    int64_t gpus = 0;
    if (k8s) gpus = k8s->GpuUnits();
    if (gpus == 0 && slurm) gpus = slurm->TotalGpus();
    return gpus;
  }

  // The Kubernetes name when kubernetes.node_names makes it differ from `name`, else "".
  std::string K8sNameIfDifferent() const { return k8s && k8s->name != name ? k8s->name : ""; }
};

}  // namespace skb::inventory

// SPDX-License-Identifier: Apache-2.0
// The bridge's latest view of both sides and the one merge of it into ManagedNodes
// ("merge" in observe -> merge -> plan -> act).
//
// The Kubernetes informers and the Slurm poller hand their views to the update methods;
// each returns the Slurm names of the nodes whose merged view it may have changed (each
// once), for the caller to plan again. Node(name) merges one node and Snapshot() every node,
// by the same rules:
//
//   Store store(names, ownership::kLentAtAnnotation);
//   for (const std::string& n : store.UpdateK8sNode(k8s_node)) queue.Add(n);
//   plan::PlanNode(store.Node("gpu7"), cfg, now);
//
// The merge, under a node's Slurm name:
//  - k8s: the Kubernetes node that pairs under that name (NodeNameMap; in label mode a node
//    without the label keeps its own name); slurm: the Slurm node of that name.
//  - jobs: the jobs holding resources (running, suspended, completing) with the node in
//    their node list; het_jobs: every holding component of each heterogeneous job in jobs.
//  - ended_jobs: ended jobs (not pending, no requeue on its way) with the node in their
//    node list, kept only if, when the jobs were set, one of their nodes was lent (its
//    Kubernetes node carried the lent annotation).
//  - pods: the GPU pods bound to the node (spec.nodeName), claim_pods: those bound there
//    that use ResourceClaims alone (gpus 0), nominated_pods: the unbound GPU pods
//    kube-scheduler nominated it for; a pod's Kubernetes node name maps to the Slurm name
//    the node paired under when seen, else by the name rule alone. A reservation pod's view
//    from the reservations' informer wins over the live pods' view of it.
//  - overlays: gpu_sharing (the device lane's view, by Slurm name), reclaim (by Kubernetes
//    name), guaranteed_jobs (of jobs and het_jobs), borrowing_nominated (of nominated_pods).
//
// Node(name) and Snapshot() each pass once over the jobs and the pods (a pod's node name is
// looked up in O(log nodes)); Snapshot() also looks up each node's two sides: never a pass
// over the jobs per node.
// Thread-compatible: the caller serialises updates and reads.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "src/inventory/inventory.h"
#include "src/inventory/managed_node.h"
#include "src/inventory/node_names.h"
#include "src/inventory/quota_facts.h"
#include "src/slurm/types.h"

namespace skb::inventory {

class Store {
 public:
  // `lent_annotation`: the Kubernetes node annotation that marks a node lent to Kubernetes
  // (ownership::kLentAtAnnotation); ended jobs are kept only for nodes that carry it ("":
  // none are kept).
  Store(NodeNameMap names, std::string lent_annotation);

  // --- updates: each returns the Slurm names of the nodes to plan again ---
  // A node relabelled to another Slurm name (label mode) leaves its old name: both names.
  std::vector<std::string> UpdateK8sNode(K8sNode node);
  std::vector<std::string> RemoveK8sNode(const std::string& k8s_name);
  // Live GPU pods (and pods using ResourceClaims). The node a pod concerns is the one it is bound
  // to, else the one it is nominated to; a pod that moves marks both.
  std::vector<std::string> UpdatePod(GpuPod pod);
  std::vector<std::string> RemovePod(const std::string& ns, const std::string& name);
  // The bridge's reservation pods in every phase (the live pods drop a terminal one); this
  // view of a pod wins over the live pods' view of it.
  std::vector<std::string> UpdateReservation(GpuPod pod);
  std::vector<std::string> RemoveReservation(const std::string& ns, const std::string& name);
  // Whole current sets from the poller. A node is marked when what the planner reads of it
  // changed; a job marks its nodes, old and new, when it starts, stops holding them or
  // changes, and every node of each heterogeneous job one of whose components marked one.
  std::vector<std::string> SetSlurmNodes(std::vector<slurm::NodeView> nodes);
  std::vector<std::string> SetSlurmJobs(std::vector<slurm::JobView> jobs);
  // The device lane's view of each node, by Slurm name: the nodes whose view changed.
  std::vector<std::string> SetGpuSharing(std::map<std::string, GpuSharingView> views);
  // Guaranteed quotas: the nodes of the jobs whose standing changed (every component's of a
  // heterogeneous job; a job not holding a node here marks nothing), those of the changed
  // reclaims, and those the changed borrowing live pods are nominated to.
  std::vector<std::string> SetQuotaFacts(QuotaFacts facts);

  // --- the merge ---
  // Node `name` (a Slurm name); a name neither side knows has both sides empty.
  ManagedNode Node(const std::string& name) const;
  // Every node either side knows, sorted by name.
  Inventory Snapshot() const;

  // What the store holds: Kubernetes nodes by the Slurm name they pair under, Slurm nodes
  // by name.
  const std::map<std::string, K8sNode>& k8s_nodes() const { return k8s_nodes_; }
  const std::map<std::string, slurm::NodeView>& slurm_nodes() const { return slurm_nodes_; }

 private:
  // The one merge: fills `nodes` (each with its name set, names unique) with what the
  // store holds of them.
  void Merge(std::span<ManagedNode> nodes) const;
  // The Slurm name of a Kubernetes node: the one it paired under when seen, else by the
  // name rule alone.
  std::string SlurmName(const std::string& k8s_name) const;
  // The Slurm name of the node a pod concerns (bound, else nominated); "" for neither.
  std::string PodNode(const GpuPod& p) const;
  std::vector<std::string> UpdatePodIn(std::map<std::string, GpuPod>* pods, GpuPod pod);
  std::vector<std::string> RemovePodFrom(std::map<std::string, GpuPod>* pods, const std::string& ns,
                                         const std::string& name);
  // An ended job the node keeps in ManagedNode::ended_jobs: one that ran on a lent node, or
  // a maintenance check job.
  bool KeepsEndedJob(const slurm::JobView& j) const;

  const NodeNameMap names_;
  const std::string lent_annotation_;
  std::map<std::string, K8sNode> k8s_nodes_;            // by Slurm name
  std::map<std::string, std::string> k8s_to_slurm_;     // Kubernetes name -> Slurm name
  std::map<std::string, GpuPod> pods_;                  // "ns/name", live pods
  std::map<std::string, GpuPod> reservations_;          // "ns/name", any phase
  std::map<std::string, slurm::NodeView> slurm_nodes_;  // by name
  std::map<uint32_t, slurm::JobView> jobs_;             // holding a node
  std::map<uint32_t, slurm::JobView> ended_jobs_;       // ended, on a node lent then
  std::map<std::string, GpuSharingView> gpu_sharing_;   // by Slurm name
  QuotaFacts quota_;
};

}  // namespace skb::inventory

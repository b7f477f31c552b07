// SPDX-License-Identifier: Apache-2.0
// Observe for the GPU-granular lane: the cluster as both schedulers show it -> one
// NodeDevices per node shared GPU by GPU, and the reason for every other node. Pure: the
// daemon converts its caches (Slurm's poll; ResourceSlices, ResourceClaims, the bridge's
// DeviceTaintRules and pods from the informers) into a World, this joins them.
//
//   World w = ...;                                  // what the caches hold now
//   Observation o = Observe(w, cfg, now);
//   for (const NodeDevices& n : o.nodes) PlanNode(n, cfg, now) ...
//   o.node_granular["node4"] == "no ResourceSlice of driver gpu.nvidia.com"
//
// A Slurm job is a placeholder only when its name, its partition and its record (in its
// admin_comment, which only an administrator can write) all say so: a user cannot make
// the bridge lift holds by naming a job "skb-gpu-hold".
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/devices/device_plan.h"
#include "src/devices/gres.h"
#include "src/devices/placeholder_record.h"
#include "src/inventory/k8s_node.h"
#include "src/inventory/managed_node.h"
#include "src/plan/node_plan.h"
#include "src/slurm/types.h"

namespace skb::devices {

// The Kubernetes node a managed Slurm node is paired with (kubernetes.node_names).
struct PairedNode {
  std::string name;
  std::map<std::string, std::string> labels;  // a pending pod's nodeSelector and affinity
  std::vector<inventory::Taint> taints;       // a pending pod's tolerations
  std::vector<UnusedGive> unused_gives;       // its kUnusedGivesAnnotation
  // Its health::kGpuDevicesHealthyCondition as last read (nullopt: none yet).
  std::optional<inventory::NodeCondition> devices_condition;
  // Which lane has it (the node lane's last plan of it): the device lane plans only a node
  // handed over to it, and holds every GPU of one whose node lane asks for that. The World's
  // producer (Reconciler::PairedNodes) sets it for every node.
  plan::Handover handover = plan::Handover::kHandedOver;
  std::string handover_why;  // not handed over yet: why
};

struct World {
  std::vector<slurm::NodeView> slurm_nodes;
  std::vector<slurm::JobView> jobs;
  // Slurm's partitions, once polled (partitions_known): the placeholder partition is
  // checked against them before any give.
  std::vector<slurm::PartitionView> partitions;
  bool partitions_known = false;
  // Slurm node -> its Kubernetes node, for the managed nodes.
  std::map<std::string, PairedNode> paired;
  // By Kubernetes node (the driver's pool): published devices, allocated claims, devices
  // under the bridge's hold rules.
  std::map<std::string, std::vector<SliceDevice>> slices;
  // Kubernetes nodes whose pool cannot be read (SlicesByNode: an incomplete newest generation,
  // a device published twice) -> why. Not "no devices": kube-scheduler may still allocate
  // from the slices it has, so such a node keeps every hold and placeholder, and nothing
  // is planned on it until its pool reads again.
  std::map<std::string, std::string> unreadable;
  std::map<std::string, std::vector<Claim>> claims;
  std::map<std::string, std::set<std::string>> held;
  // Devices an admin drained (devices::DrainedDevices), by Kubernetes node: device -> why.
  std::map<std::string, std::map<std::string, std::string>> drained;
  // Unschedulable GPU pods at or above the threshold, highest priority first.
  std::vector<PendingPod> pending;
  // Such pods whose GPU demand cannot be sized (a claim's allocationMode All, a request
  // tolerating the bridge's hold: devices::CountGpus), "ns/name" -> why: no give serves them.
  std::map<std::string, std::string> not_counted;
  // Every live pod ("ns/name") -> its node ("" while unscheduled): a give's pod still waits
  // while it exists unscheduled or runs on the give's node.
  std::map<std::string, std::string> pod_node;
  // Every live pod ("ns/name") -> its metadata.uid: its Events name it, so that `kubectl
  // describe pod` (which selects Events by uid) shows them, and a later pod of the same
  // name does not.
  std::map<std::string, std::string> pod_uid;
  // Jobs within their tenant's guarantee (quotas; ownership::GuaranteedJobs): a give never
  // takes them.
  std::map<uint32_t, std::string> guaranteed_jobs;
};
// Marks the pending pods that would run beyond their tenant's guarantee
// (ownership::QuotaFacts::borrowing_pods: "ns/name" -> why): they take idle GPUs only.
// Quotas count a pod's claims' GPUs too (QuotaLedger, fed before the device lane's cache),
// and a pod whose claims they have not all counted is among the borrowing ones.
void ApplyBorrowing(const std::map<std::string, std::string>& borrowing_pods, World* w);

struct Observation {
  std::vector<NodeDevices> nodes;                    // shared GPU by GPU (handed over)
  std::map<std::string, std::string> node_granular;  // Slurm node -> why not
  // Jobs that look like placeholders but are not trusted (the reason), for a Warning.
  std::map<uint32_t, std::string> suspicious;
  // Placeholders outside the configured partition (honoured; the configuration changed
  // under them), for a Warning.
  std::map<uint32_t, std::string> misplaced;
  // Eligible nodes whose node lane waits for every GPU to be held before it retires its
  // reservation (Handover::kHoldsWanted): the pass holds them all, and plans nothing else.
  std::vector<NodeDevices> handing_over;
  // Nodes no longer eligible on which the lane still has placeholders or holds: it winds
  // them down (PlanLeave) before the node lane may take them. Their devices are the
  // published ones (index -1: no proven mapping) and those still held.
  std::vector<NodeDevices> leaving;
  // Nodes frozen -> why: their driver pool cannot be read (World::unreadable), or a job
  // there holds GPUs whose indices cannot be read (JobView::unreadable_gpus). Neither planned
  // nor wound down: every hold and placeholder stays. Also in node_granular.
  std::map<std::string, std::string> unreadable;
  // Per paired node, what the node lane reads (ManagedNode::gpu_sharing).
  std::map<std::string, inventory::GpuSharingView> sharing;
};
// The node `node` among the observation's nodes, handing_over and leaving; null if none.
const NodeDevices* FindNode(const Observation& o, const std::string& node);

// Why the placeholder partition cannot hold GPUs on Slurm node `node` for a pod ("" when
// it can): it is missing or does not include the node, its MaxTime is finite (Slurm would
// end a placeholder while the pod runs), or its PreemptMode is not OFF (Slurm could preempt
// a placeholder, and hand its GPUs to a pending job while the pod keeps them).
std::string PlaceholderPartitionProblem(const std::vector<slurm::PartitionView>& partitions,
                                        const std::string& partition, const std::string& node);

// Whether `job` is one of the bridge's placeholders: its name and a readable placeholder
// record in its AdminComment, which only Slurm operators and administrators (the bridge's
// SlurmUser) can set. Its partition is not required: a placeholder submitted before
// gpu_sharing.placeholder.partition was changed still holds its pod's GPUs (read as an
// ordinary job, its GPUs would count as Slurm's and it could be chosen as a give's victim).
bool IsPlaceholder(const slurm::JobView& job);

Observation Observe(const World& w, const config::Config& cfg, Clock::TimePoint now);

// The Kubernetes name of Slurm node `node` in `w` (the node itself when it is not paired).
const std::string& K8sNameOf(const World& w, const std::string& node);

}  // namespace skb::devices

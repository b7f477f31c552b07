// SPDX-License-Identifier: Apache-2.0
// Where a pod may run, as kube-scheduler's NodeAffinity and TaintToleration filters decide
// it: the pod's spec.nodeSelector (every label equal), its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: any of the nodeSelectorTerms, each term
// every one of its matchExpressions and matchFields), and its spec.tolerations (every
// NoSchedule and NoExecute taint of the node tolerated by one of them). A give frees GPUs
// only on a node its pod may use: freeing them anywhere else preempts a Slurm job for
// nothing.
//
//   NodePlacement p = PlacementOf(pod_json);          // src/devices/k8s_devices.h
//   if (auto why = WhyNotPlaceable(p, "node3", node_labels, node_taints)) ...
//   // "node node3: taint nvidia.com/maintenance=true:NoSchedule not tolerated"
//
// Every taint of the node counts, the bridge's own included. The device lane puts none on a
// node (its holds are DeviceTaintRules: device taints, which the give lifts and which are
// not among the node's taints). The node lane's (reservation-swap, slurm-busy, reclaiming)
// keep new pods off a node, and nothing takes them off while the node is shared GPU by GPU
// (the node lane leaves such a node alone): a give there would wait for a pod that never
// comes. Preferred terms and PreferNoSchedule taints never make a node unusable and are
// not judged.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/inventory/k8s_node.h"

namespace skb::devices {

struct NodeSelectorRequirement {
  std::string key;  // a label; "metadata.name" for a matchFields requirement
  std::string op;   // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool field = false;  // from matchFields (key is a node field, not a label)
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

// One of a pod's spec.tolerations. Its tolerationSeconds is not kept: it bounds how long a
// running pod stays on a node tainted NoExecute, not whether a pod may be placed there.
struct Toleration {
  std::string key;  // "" (with Exists): every key
  std::string op;   // Exists, or Equal ("" as well: the API's default)
  std::string value;
  std::string effect;  // "": every effect
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

struct NodePlacement {
  std::map<std::string, std::string> node_selector;
  // ORed terms of ANDed requirements. Empty: the affinity allows any node. A term with no
  // requirement matches no node (as the apiserver's semantics say).
  std::vector<std::vector<NodeSelectorRequirement>> terms;
  // None: only a node without NoSchedule and NoExecute taints.
  std::vector<Toleration> tolerations;
  friend bool operator==(const NodePlacement&, const NodePlacement&) = default;
};

// Whether `t` tolerates `taint`, as Kubernetes' Toleration.ToleratesTaint: the effect
// matches when `t` names none or the same, the key when `t` names none or the same; then
// Exists matches every value, Equal the same value. Any other operator tolerates nothing.
bool Tolerates(const Toleration& t, const inventory::Taint& taint);

// nullopt when a pod with `p` may run on node `node` with `labels` and `taints`; else why
// not, in a few words for the give's waiting reason ("nodeSelector zone=b", "required node
// affinity", "taint nvidia.com/maintenance=true:NoSchedule not tolerated").
std::optional<std::string> WhyNotPlaceable(const NodePlacement& p, const std::string& node,
                                           const std::map<std::string, std::string>& labels,
                                           std::span<const inventory::Taint> taints);

}  // namespace skb::devices

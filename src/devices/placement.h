// Where a pod may run, as kube-scheduler's NodeAffinity filter decides it: the pod's
// spec.nodeSelector (every label equal) and its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: any of the nodeSelectorTerms, each term
// every one of its matchExpressions and matchFields). A give frees GPUs only on a node its
// pod may use: freeing them anywhere else preempts a Slurm job for nothing.
//
//   NodePlacement p = PlacementOf(pod_json);          // src/devices/k8s_devices.h
//   if (auto why = WhyNotPlaceable(p, "node3", node_labels)) ...  // "node3: zone=b, ..."
//
// Taints and tolerations are not judged here (the daemon's pod cache keeps no tolerations);
// nor are preferred terms, which never make a node unusable.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace skb::devices {

struct NodeSelectorRequirement {
  std::string key;  // a label; "metadata.name" for a matchFields requirement
  std::string op;   // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool field = false;  // from matchFields (key is a node field, not a label)
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

struct NodePlacement {
  std::map<std::string, std::string> node_selector;
  // ORed terms of ANDed requirements. Empty: the affinity allows any node. A term with no
  // requirement matches no node (as the apiserver's semantics say).
  std::vector<std::vector<NodeSelectorRequirement>> terms;
  bool Any() const { return node_selector.empty() && terms.empty(); }
  friend bool operator==(const NodePlacement&, const NodePlacement&) = default;
};

// nullopt when a pod with `p` may run on node `node` with `labels`; else why not, in a few
// words for the give's waiting reason ("nodeSelector zone=b", "required node affinity").
std::optional<std::string> WhyNotPlaceable(const NodePlacement& p, const std::string& node,
                                           const std::map<std::string, std::string>& labels);

}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
// How a Kubernetes node's name pairs with a Slurm node's name (config kubernetes.node_names).
// Sites whose kubelets register FQDNs or cloud names ("ip-10-0-1-7.ec2.internal") while
// slurm.conf says "gpu7" choose one rule here; the bridge uses it everywhere it pairs nodes
// (inventory, reconcile keys, pods' spec.nodeName) and acts on each side under that side's
// own name.
//
//   "node_names": {"mode": "identity"}                          gpu7 -> gpu7 (default)
//   "node_names": {"mode": "strip_domain", "domain": "example.org"}
//                                                   gpu7.example.org -> gpu7
//   "node_names": {"mode": "strip_domain"}         gpu7.any.domain -> gpu7 (up to the first dot)
//   "node_names": {"mode": "template", "template": "slurm-{short}"}
//                                   gpu7.example.org -> slurm-gpu7 ({name}: the whole name)
//   "node_names": {"mode": "label", "label": "example.org/slurm-node-name"}
//                                   the label's value; a node without it pairs with nothing
//   "node_names": {..., "map": {"odd-k8s-name": "gpu9"}}   exceptions, checked first
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/inventory/k8s_node.h"

namespace skb::config {
class JsonReader;
}

namespace skb::inventory {

struct NodeNameMap {
  enum class Mode { kIdentity, kStripDomain, kTemplate, kLabel };
  Mode mode = Mode::kIdentity;
  // Explicit Kubernetes name -> Slurm name pairs, checked before the mode.
  std::map<std::string, std::string, std::less<>> explicit_names;
  // kStripDomain: the suffix removed (with its leading dot, ".example.org"); empty: from the
  // first dot on.
  std::string strip_suffix;
  // kTemplate: {name} and {short} (the name up to its first dot) are replaced.
  std::string name_template;
  // kLabel: the node label holding the Slurm name.
  std::string label;

  // The Slurm name of a Kubernetes node; nullopt when the rule gives none (kLabel and the
  // node lacks the label, or its value is empty).
  std::optional<std::string> SlurmName(const K8sNode& node) const;
  // The same from the name alone, for pods' spec.nodeName when the node is not at hand. In
  // kLabel mode only `explicit_names` apply and any other name maps to itself: callers that
  // have seen the node use the name it paired under instead (see Reconciler).
  std::string SlurmName(std::string_view k8s_name) const;
  // "identity", "strip_domain .example.org", "label example.org/slurm-node-name": for
  // messages that say why two nodes did not pair.
  std::string Describe() const;
};

// Reads kubernetes.node_names (keys mode, domain, template, label, map).
Status ReadNodeNames(config::JsonReader r, NodeNameMap* out);

}  // namespace skb::inventory

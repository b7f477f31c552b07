// SPDX-License-Identifier: Apache-2.0
#include "src/inventory/k8s_node.h"

#include "src/base/strings.h"

namespace skb::inventory {

std::string TaintString(const Taint& t) {
  return StrCat(t.key, t.value.empty() ? "" : "=", t.value, ":", t.effect);
}

const NodeCondition* K8sNode::FindCondition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::optional<std::string> K8sNode::Label(std::string_view key) const {
  auto it = labels.find(std::string(key));
  if (it == labels.end()) return std::nullopt;
  return it->second;
}

}  // namespace skb::inventory

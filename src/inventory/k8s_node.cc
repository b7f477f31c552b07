#include "src/inventory/k8s_node.h"

namespace skb::inventory {

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

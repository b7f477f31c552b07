// SPDX-License-Identifier: Apache-2.0
#include "k8s/node_info.h"

namespace skb::k8s {
namespace {
int64_t Units(const std::map<std::string, Quantity>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second.Value();
}
}  // namespace

std::string NodeInfo::Ready() const {
  const Condition* c = FindCondition(conditions, "Ready");
  return c ? c->status : "";
}

int64_t NodeInfo::AllocatableGpus() const { return Units(allocatable, kNvidiaGpu); }
int64_t NodeInfo::CapacityGpus() const { return Units(capacity, kNvidiaGpu); }

std::map<std::string, int64_t> NodeInfo::Slices() const {
  std::map<std::string, int64_t> out;
  for (const auto* m : {&capacity, &allocatable}) {  // allocatable overrides capacity
    for (const auto& [r, q] : *m) {
      if (r.starts_with(kNvidiaMigPrefix)) out[r] = q.Value();
    }
  }
  std::erase_if(out, [](const auto& e) { return e.second <= 0; });
  return out;
}

StatusOr<NodeInfo> ParseNode(const nlohmann::json& obj) {
  NodeInfo n;
  ASSIGN_OR_RETURN(n.meta, ReadObjectMeta(obj, "node", &n.issues));
  FieldReader root(obj, "", &n.issues);
  FieldReader spec = root.Sub("spec");
  n.unschedulable = spec.Bool("unschedulable");
  for (const FieldReader& t : spec.ObjectList("taints")) {
    Taint taint{t.String("key"), t.String("value"), t.String("effect")};
    if (taint.key.empty() || taint.effect.empty()) {
      t.AddIssue(t.PathOf("key"), "taint without key or effect skipped");
      continue;
    }
    n.taints.push_back(std::move(taint));
  }
  FieldReader status = root.Sub("status");
  n.conditions = ReadConditions(status, "conditions");
  n.capacity = status.QuantityMap("capacity");
  n.allocatable = status.QuantityMap("allocatable");
  return n;
}

}  // namespace skb::k8s

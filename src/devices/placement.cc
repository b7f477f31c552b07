// SPDX-License-Identifier: Apache-2.0
#include "src/devices/placement.h"

#include <algorithm>
#include <charconv>

#include "src/base/strings.h"

namespace skb::devices {
namespace {

std::optional<int64_t> Integer(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool Matches(const NodeSelectorRequirement& r, const std::string& node,
             const std::map<std::string, std::string>& labels) {
  std::optional<std::string> value;
  if (r.field) {
    if (r.key == "metadata.name") value = node;  // the only field the scheduler supports
  } else if (auto it = labels.find(r.key); it != labels.end()) {
    value = it->second;
  }
  const bool in = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  if (r.op == "In") return in;
  if (r.op == "NotIn") return !in;  // a node without the label is not in the set
  if (r.op == "Exists") return value.has_value();
  if (r.op == "DoesNotExist") return !value.has_value();
  if (r.op == "Gt" || r.op == "Lt") {
    // One integer value; a label that is not an integer never matches.
    if (!value || r.values.size() != 1) return false;
    auto have = Integer(*value), want = Integer(r.values[0]);
    if (!have || !want) return false;
    return r.op == "Gt" ? *have > *want : *have < *want;
  }
  return false;  // an operator the apiserver would have refused
}

}  // namespace

bool Tolerates(const Toleration& t, const inventory::Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op == "Exists") return true;
  if (t.op == "Equal" || t.op.empty()) return t.value == taint.value;
  return false;  // an operator this code does not know
}

std::optional<std::string> WhyNotPlaceable(const NodePlacement& p, const std::string& node,
                                           const std::map<std::string, std::string>& labels,
                                           std::span<const inventory::Taint> taints) {
  for (const auto& [key, want] : p.node_selector) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != want) {
      return StrCat("node ", node, " does not match the pod's nodeSelector ", key, "=", want);
    }
  }
  const bool affinity_allows =
      p.terms.empty() || std::any_of(p.terms.begin(), p.terms.end(), [&](const auto& term) {
        return !term.empty() &&
               std::all_of(term.begin(), term.end(), [&](const NodeSelectorRequirement& r) {
                 return Matches(r, node, labels);
               });
      });
  if (!affinity_allows) {
    return StrCat("node ", node, " does not match the pod's required node affinity");
  }
  for (const inventory::Taint& taint : taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (std::none_of(p.tolerations.begin(), p.tolerations.end(),
                     [&](const Toleration& t) { return Tolerates(t, taint); })) {
      return StrCat("node ", node, ": taint ", inventory::TaintString(taint), " not tolerated");
    }
  }
  return std::nullopt;
}

}  // namespace skb::devices

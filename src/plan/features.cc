// SPDX-License-Identifier: Apache-2.0
#include "src/plan/features.h"

#include <algorithm>
#include <set>

#include "src/base/strings.h"

namespace skb::plan {
namespace {

constexpr size_t kMaxFeatureBytes = 64;

// Whether the bridge manages feature `f` under mapping `m`.
bool Manages(const LabelFeature& m, std::string_view f) {
  if (!m.values.empty()) {
    for (const auto& [value, feature] : m.values) {
      if (feature == f) return true;
    }
    return false;
  }
  return !m.prefix.empty() && f.starts_with(m.prefix);
}

std::optional<std::string> FeatureFor(const LabelFeature& m, const inventory::K8sNode& k) {
  auto v = k.Label(m.label);
  if (!v || v->empty()) return std::nullopt;
  if (!m.values.empty()) {
    auto it = m.values.find(*v);
    if (it == m.values.end()) return std::nullopt;
    return it->second;
  }
  return SanitizeFeature(StrCat(m.prefix, *v));
}

}  // namespace

FeaturesConfig FeaturesConfig::Defaults() {
  FeaturesConfig c;
  c.labels.push_back({"nvidia.com/gpu.product",
                      "",
                      {{"NVIDIA-H100-80GB-HBM3", "h100"},
                       {"NVIDIA-H100-SXM5-80GB", "h100"},
                       {"NVIDIA-H200", "h200"},
                       {"NVIDIA-B200", "b200"},
                       {"NVIDIA-A100-SXM4-80GB", "a100"},
                       {"NVIDIA-A100-SXM4-40GB", "a100"},
                       {"NVIDIA-A100-PCIE-40GB", "a100"},
                       {"NVIDIA-L40S", "l40s"},
                       {"NVIDIA-L4", "l4"},
                       {"Tesla-V100-SXM2-32GB", "v100"},
                       {"Tesla-T4", "t4"}}});
  c.labels.push_back({"topology.kubernetes.io/zone", "zone_", {}});
  c.labels.push_back({"slurm-k8s-bridge.io/rack", "rack_", {}});
  return c;
}

std::string SanitizeFeature(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (out.size() >= kMaxFeatureBytes) break;
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '_' || l == '.' || l == '-';
    out.push_back(ok ? l : '_');
  }
  return out;
}

Status ReadFeaturesConfig(config::JsonReader r, FeaturesConfig* out) {
  std::vector<LabelFeature> labels;
  if (r.ObjectList("labels", [&](config::JsonReader& e) {
        LabelFeature m;
        e.String("label", &m.label);
        e.String("prefix", &m.prefix);
        config::JsonReader values = e.Object("values");
        // "values" is a free-form map: read it as a JSON object of strings.
        e.Merge(values.StringMap(&m.values));
        if (m.label.empty()) e.Fail("label", "must name a node label");
        if (m.values.empty() && m.prefix.empty()) {
          e.Fail("prefix",
                 "needed when there is no \"values\" map (it is how the bridge "
                 "tells its features from those in slurm.conf)");
        }
        if (!m.prefix.empty() && SanitizeFeature(m.prefix) != m.prefix) {
          e.Fail("prefix", "may only contain a-z, 0-9, '_', '.', '-'");
        }
        for (const auto& [value, feature] : m.values) {
          if (feature.empty() || SanitizeFeature(feature) != feature) {
            e.Fail("values", StrCat("feature '", feature, "' for '", value,
                                    "' must be non-empty a-z, 0-9, '_', '.', '-'"));
          }
        }
        labels.push_back(std::move(m));
      })) {
    out->labels = std::move(labels);
  }
  return r.Finish();
}

std::vector<std::string> DesiredFeatures(const inventory::ManagedNode& node,
                                         const FeaturesConfig& cfg) {
  std::set<std::string> want;
  if (node.slurm) {
    for (const std::string& f : node.slurm->features) {
      bool managed = std::any_of(cfg.labels.begin(), cfg.labels.end(),
                                 [&](const LabelFeature& m) { return Manages(m, f); });
      if (!managed) want.insert(f);
    }
  }
  if (node.k8s) {
    for (const LabelFeature& m : cfg.labels) {
      if (auto f = FeatureFor(m, *node.k8s)) want.insert(*f);
    }
  }
  return {want.begin(), want.end()};
}

std::optional<Action> PlanFeatures(const inventory::ManagedNode& node, const FeaturesConfig& cfg) {
  if (!node.k8s || !node.slurm || cfg.labels.empty()) return std::nullopt;
  std::vector<std::string> want = DesiredFeatures(node, cfg);
  std::vector<std::string> have = node.slurm->features;
  std::vector<std::string> active = node.slurm->active_features;
  std::sort(have.begin(), have.end());
  have.erase(std::unique(have.begin(), have.end()), have.end());
  std::sort(active.begin(), active.end());
  active.erase(std::unique(active.begin(), active.end()), active.end());
  if (have == want && active == want) return std::nullopt;
  Action a;
  a.op = plan::SetSlurmFeatures{want};
  a.node = node.name;
  a.k8s_node = node.K8sNameIfDifferent();
  a.cause = plan::Cause::kFeatures;
  a.event_reason = "SlurmFeaturesUpdated";
  std::string list;
  for (const auto& f : want) StrAppend(&list, list.empty() ? "" : ",", f);
  a.event_message =
      StrCat("Slurm node ", node.name, " features set to ", list, " from its Kubernetes labels");
  return a;
}

}  // namespace skb::plan

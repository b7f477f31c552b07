// SPDX-License-Identifier: Apache-2.0
// Kubernetes node labels as Slurm node features: `sbatch --constraint=h100` or
// `--constraint=zone_eu1` selects nodes by what Kubernetes knows about them (GPU Feature
// Discovery's product label, topology labels), kept current when labels change.
//
// Features the bridge manages are recognised by their mapping (a configured value or a
// configured prefix), so features an admin wrote in slurm.conf are kept as they are.
//
//   "features": {"labels": [
//     {"label": "nvidia.com/gpu.product", "values": {"NVIDIA-H100-80GB-HBM3": "h100"}},
//     {"label": "topology.kubernetes.io/zone", "prefix": "zone_"}]}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/config/json_reader.h"
#include "src/inventory/managed_node.h"
#include "src/plan/action.h"

namespace skb::plan {

struct LabelFeature {
  std::string label;
  // Prepended to the sanitized label value ("zone_" + "eu-west-1a").
  std::string prefix;
  // Exact value -> feature name. With a map, values not in it give no feature.
  std::map<std::string, std::string> values;
};

struct FeaturesConfig {
  std::vector<LabelFeature> labels;
  // The defaults: GPU product names as Slurm's usual GPU type names, zone and rack.
  static FeaturesConfig Defaults();
};

Status ReadFeaturesConfig(config::JsonReader reader, FeaturesConfig* out);

// Lower-case, characters other than [a-z0-9_.-] replaced by '_', at most 64 bytes.
std::string SanitizeFeature(std::string_view value);

// The feature set the Slurm node should have: its current features minus the ones the
// bridge manages, plus those its labels give now. Sorted, no duplicates.
std::vector<std::string> DesiredFeatures(const inventory::ManagedNode& node,
                                         const FeaturesConfig& cfg);

// A kSetSlurmFeatures action when the node's features differ from DesiredFeatures, else
// nothing. Needs both sides of the node.
std::optional<Action> PlanFeatures(const inventory::ManagedNode& node, const FeaturesConfig& cfg);

}  // namespace skb::plan

// SPDX-License-Identifier: Apache-2.0
// Realistic API objects for tests, benchmarks and the fuzz corpus (k8s/testdata/).
#pragma once

#include <nlohmann/json.hpp>

namespace skb::k8s::testdata {

// A running 4-GPU inference pod as the apiserver returns it (managedFields, volumes,
// probes, statuses): ~4.5 KB of JSON.
nlohmann::json RealisticPod();
// An 8-GPU node with kubelet-style conditions, images and managedFields: ~4 KB of JSON.
nlohmann::json RealisticNode();

}  // namespace skb::k8s::testdata

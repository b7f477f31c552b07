// SPDX-License-Identifier: Apache-2.0
// The back-off of a give nobody used: a give frees GPUs on a node for a pending pod, but
// kube-scheduler may still not place the pod there (a rule the bridge does not judge:
// inter-pod affinity, topology spread, CPU or memory fit, a scheduler plugin), or the
// placeholder never starts (give_timeout). Each such give is recorded on the Kubernetes
// node, so a restart or another replica keeps the back-off (the bridge keeps no state of
// its own) and `kubectl describe node` shows it:
//
//   metadata.annotations["slurm-k8s-bridge.io/unused-gives"] =
//       "ml/infer-0/4711@1700000000,ml/infer-0/4790@1700000900"  // pod/placeholder@unix
//
//   std::vector<UnusedGive> g = ParseUnusedGives(annotation);
//   std::optional<Clock::TimePoint> until = BackoffUntil(g, "ml/infer-0", sharing, now);
//   if (until && now < *until) ... no give on this node for ml/infer-0 before *until
//
// The node is tried again for the pod after gpu_sharing.give_backoff, doubled for each
// further unused give of that pod there, at most gpu_sharing.give_backoff_max. Removing the
// annotation (kubectl annotate node N slurm-k8s-bridge.io/unused-gives-) clears the node's
// back-offs. On the node, not on the pod: the bridge may patch nodes, and patching every
// pod in the cluster would need a right that can change any pod's image.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/devices/sharing_config.h"

namespace skb::devices {

// The node annotation that records the gives there that went unused.
inline constexpr char kUnusedGivesAnnotation[] = "slurm-k8s-bridge.io/unused-gives";
// The records kept per node, oldest dropped first.
inline constexpr size_t kMaxUnusedGives = 16;

struct UnusedGive {
  std::string pod;           // "ns/name" the give was for
  uint32_t placeholder = 0;  // its placeholder job: one record per give
  int64_t at_unix = 0;       // when the give was found unused
  friend bool operator==(const UnusedGive&, const UnusedGive&) = default;
};

// Entries that do not parse are skipped (anyone who may edit the node may edit the
// annotation): a broken record loses only its own back-off.
std::vector<UnusedGive> ParseUnusedGives(std::string_view annotation);
std::string FormatUnusedGives(const std::vector<UnusedGive>& gives);
// `gives` with `g` appended, unless a record of its placeholder is there already (then
// nullopt: nothing to write). Records older than `keep_after` (unix seconds) and, beyond
// kMaxUnusedGives, the oldest are dropped.
std::optional<std::vector<UnusedGive>> AddUnusedGive(std::vector<UnusedGive> gives,
                                                     const UnusedGive& g, int64_t keep_after);

// Until when the node whose records are `gives` gets no give for `pod`; nullopt when no
// record is the pod's. A record dated after `now` counts as made `now` (a clock skew or an
// edit cannot stretch the back-off beyond give_backoff_max).
std::optional<Clock::TimePoint> BackoffUntil(const std::vector<UnusedGive>& gives,
                                             std::string_view pod, const SharingConfig& cfg,
                                             Clock::TimePoint now);

}  // namespace skb::devices

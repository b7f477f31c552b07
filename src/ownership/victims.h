// SPDX-License-Identifier: Apache-2.0
// Which Slurm-owned nodes kube-scheduler's preemption takes for a demand of GPU pods, and
// which the bridge would rather it took: a model of the reservation pods as victims, for the
// trace simulator (bench/sim). The bridge does not pick victims itself: the reservation
// classes (reservation_class.h) are how it steers kube-scheduler's choice.
//
//   std::vector<VictimCandidate> nodes = {{"node1", 8, 2000, started, {{8, job_start}}}, ...};
//   PickVictims(nodes, Demand{.gpus_per_pod = 8, .pods = 2, .priority = 100'000}, now);
//   // indices into `nodes`, in the order the pods take them
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/base/clock.h"

namespace skb::ownership {

struct JobCost {
  int64_t gpus = 0;
  Clock::TimePoint start{};
};

// A Slurm-owned node as a preemption candidate.
struct VictimCandidate {
  std::string node;
  int64_t gpus = 0;      // GPUs the reservation holds (what a preemptor gets)
  int32_t priority = 0;  // the reservation pod's priority (its class's value)
  Clock::TimePoint reservation_start{};
  std::vector<JobCost> jobs;
};

struct Demand {
  int64_t gpus_per_pod = 1;
  int64_t pods = 1;
  int32_t priority = 0;  // the preemptor's priority: only lower-priority reservations yield
};

enum class VictimOrder {
  // What kube-scheduler does with one victim per node: lowest victim priority first, then
  // the newest victim (latest start). It does not weigh GPUs or work.
  kKubeScheduler,
  // What the bridge would prefer: lowest priority, then fewest GPUs beyond the demand,
  // then least work lost (GPU-seconds of the jobs), then newest.
  kLeastWorkLost,
};

// GPU-seconds the jobs on `c` have run by `now` (what a preemption throws away at worst).
double WorkLost(const VictimCandidate& c, Clock::TimePoint now);

// Indices into `candidates` of the nodes preemption takes for `demand`, one per pod, in
// order; fewer than demand.pods when not enough nodes qualify (GPUs >= gpus_per_pod and
// priority < demand.priority). Ties end on the node name, so the result is deterministic.
std::vector<size_t> PickVictims(std::span<const VictimCandidate> candidates, const Demand& demand,
                                Clock::TimePoint now,
                                VictimOrder order = VictimOrder::kKubeScheduler);

}  // namespace skb::ownership

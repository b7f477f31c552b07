// SPDX-License-Identifier: Apache-2.0
// The reservation pod: the bridge's stand-in that holds a Slurm-owned node's GPUs in
// Kubernetes' count (docs/architecture.md "Node ownership"; ownership.h, kCreateReservationPod,
// says how the executor creates it). Its name, its spec, and the job list it carries as an
// annotation for the people who look at it (kJobsAnnotation).
//
//   plan::ReservationSpec spec = BuildReservation(node, ClassFor(node.jobs, cfg, now), cfg, now);
//   spec.name == ReservationName(cfg.lending, "node1");  // "reserve-node1"
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/reservation_class.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership {

// The reservation pod's name for a Kubernetes node name ("reserve-{node}").
std::string ReservationName(const LendingConfig& cfg, std::string_view k8s_node_name);

// The pod spec for `node`'s reservation at class `cls`, listing `node.jobs`.
plan::ReservationSpec BuildReservation(const inventory::ManagedNode& node, ReservationClass cls,
                                       const config::Config& cfg, Clock::TimePoint now);

// "id user account gpus start;..." for the jobs holding the node, by job id; at most
// kMaxListedJobs entries, then ";+N more".
inline constexpr size_t kMaxListedJobs = 64;
std::string FormatJobList(const std::vector<slurm::JobView>& jobs);
// The job ids of such a list, in its order (bridgectl reading a reservation back from
// Kubernetes); `more` gets N of a ";+N more" tail. An entry that does not start with a job
// id is skipped.
std::vector<uint32_t> JobIdsOfList(std::string_view list, size_t* more = nullptr);

}  // namespace skb::ownership

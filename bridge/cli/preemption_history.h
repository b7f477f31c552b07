// SPDX-License-Identifier: Apache-2.0
// `bridgectl get preemptions`: the history of lends (Slurm -> Kubernetes) rebuilt from the
// Events the bridge records on each node (the executor: LendingToKubernetes,
// SlurmNodeLent, SlurmJobsSignalled, SlurmJobsPreempted, ReservationReleased,
// ReturnedToSlurm, ...).
//
//   ASSIGN_OR_RETURN(std::vector<nlohmann::json> ev, ListLendEvents(kube, /*node=*/""));
//   std::vector<Preemption> h = PreemptionsFromEvents(ev);
//   std::fputs(Render(PreemptionsListing(h, /*wide=*/false)).c_str(), stdout);
//
// bridgectl reads the Events itself (the admin's kubeconfig) instead of asking the daemon:
// Kubernetes is the system of record and the daemon keeps no Event cache, so it could
// only proxy the list -- on the socket thread that answers the plugin's admissions within
// 5 ms -- and the history is wanted most when the daemon is down. The history is as long
// as the apiserver keeps Events (--event-ttl, 1 h by default); `get jobs` shows each job's
// own preemption count, kept in its admin comment.
//
// Limits: the recorder folds an identical repeat (same reason and message within 10
// minutes) into one Event with a count, seen here at its first and last time only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bridge/cli/format.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"

namespace skb::bridge::cli {

struct Preemption {
  std::string node;
  Clock::TimePoint started{};
  std::string lent_to;                       // "ns/pod" of the preemptor, or "kubernetes"
  std::vector<std::string> signalled;        // Slurm job ids sent the checkpoint signal
  std::vector<std::string> preempted;        // requeued (or cancelled) job ids
  std::string preempt_mode;                  // "Requeued", "Requeued (held)", "Cancelled"
  std::vector<std::string> blocked;          // protected jobs the lend waited for
  std::optional<Clock::TimePoint> released;  // reservation let go: GPUs to Kubernetes
  std::optional<Clock::TimePoint> returned;  // back to Slurm
  std::vector<std::string> warnings;         // Warning Events during the lend: "reason: message"
  // A later lend started with no return recorded in between (the node was given back by
  // hand, or the Events of the return expired or were dropped).
  bool superseded = false;
};

// The bridge's Events about nodes (all namespaces; only `node` when not empty).
StatusOr<std::vector<nlohmann::json>> ListLendEvents(k8s::KubeClient& kube,
                                                     const std::string& node);

// Rebuilds the lends from core/v1 Event objects (any order; unrelated Events ignored).
// Sorted by start time, oldest first.
std::vector<Preemption> PreemptionsFromEvents(const std::vector<nlohmann::json>& events);

// "returned to Slurm", "lent to Kubernetes", "waiting for protected job(s) 7", "lending",
// "no return recorded".
std::string Outcome(const Preemption& p);

// LENT-AT NODE LENT-TO SIGNALLED PREEMPTED RELEASED OUTCOME RETURNED (wide: + WARNINGS).
// No history: no table, a note says so. A lend has no name (no `-o name`).
Listing PreemptionsListing(const std::vector<Preemption>& history, bool wide);
nlohmann::json PreemptionsJson(const std::vector<Preemption>& history);

}  // namespace skb::bridge::cli

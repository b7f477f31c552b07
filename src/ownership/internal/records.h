// SPDX-License-Identifier: Apache-2.0
// The records the node-ownership planner keeps on Kubernetes objects (schema.h names them),
// as it reads and writes them: the time and signalled-at annotations, and what a
// reservation pod or a node shows (ours, released, being replaced, tainted).
//
// Internal to src/ownership, like everything under src/ownership/internal/: shared by the
// planner's files (observe.cc, planner.cc, its flows, reservation.cc), included by nothing
// outside src/ownership.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/inventory/k8s_node.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/internal/facts.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::ownership::internal {

// The value of `key` in labels or annotations; nullptr when absent.
const std::string* Find(const std::map<std::string, std::string>& m, std::string_view key);

// A time annotation the bridge wrote (Unix seconds, whole or with a fraction): absent ->
// nullopt. Present but unreadable, or later
// than now + kClockSkewAllowance -> `now`, with `*garbled` set (the caller writes it again).
std::optional<Clock::TimePoint> TimeAnnotation(const std::map<std::string, std::string>& m,
                                               std::string_view key, Clock::TimePoint now,
                                               bool* garbled);

// When the grace of a job signalled at `s` ends.
Clock::TimePoint GraceEnds(const SignalledAt& s, Clock::Duration grace);

// "12:1700000000.250,13:1700000005" <-> {12: ..., 13: ...}; each entry keeps the form it was
// read in. Malformed entries are skipped.
Signalled ParseSignalled(std::string_view s);
std::string FormatSignalled(const Signalled& m);

// "6,7": job ids as the lend-blocked annotation and the Events list them.
std::string JoinIds(const std::vector<uint32_t>& ids);

// "ns/name", for messages.
std::string PodName(const inventory::GpuPod& p);
// The pod an action acts on (with its uid: a pod re-created under the name is not it).
plan::PodRef Ref(const inventory::GpuPod& p);
// Succeeded or Failed.
bool Terminal(const inventory::GpuPod& p);

// Where the reservation pods live: lending.namespace, else kubernetes.namespace.
const std::string& ReservationNamespace(const config::Config& cfg);
// One of the bridge's reservation pods: in the reservation namespace with the role label.
bool IsOurReservation(const inventory::GpuPod& p, const std::string& ns);
bool HasFinalizer(const inventory::GpuPod& p);
// Marked released (kReleasedAnnotation) and its finalizer gone: the pod may exit.
bool Released(const inventory::GpuPod& p);
// Present or not, whatever its value: only the bridge sets it ("true"), and a garbled value
// must not turn a swap into a lend.
bool Replacing(const inventory::GpuPod& p);

bool HasTaint(const inventory::K8sNode& k, std::string_view key);

}  // namespace skb::ownership::internal

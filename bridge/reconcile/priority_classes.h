// SPDX-License-Identifier: Apache-2.0
// The PriorityClasses reservation pods use (lending.priority_classes): created when missing,
// checked when present. The chart normally creates them; the bridge makes sure a missing
// or mismatched class is a clear error at start, not a stream of refused pod creations.
//
//   Status s = EnsurePriorityClasses(kube, cfg.lending);   // leader, before acting
#pragma once

#include "k8s/kube_client.h"
#include "src/base/status.h"
#include "src/ownership/lending_config.h"

namespace skb::bridge {

// OK when every class exists with the configured value (creating missing ones, with
// preemptionPolicy Never: a reservation never preempts anything). FailedPrecondition
// naming the class when one exists with another value, or cannot be created (e.g. the
// RBAC grants no `priorityclasses create`). A Forbidden read is not an error: the chart,
// which then manages the classes, grants no read either.
Status EnsurePriorityClasses(k8s::KubeClient* kube, const ownership::LendingConfig& cfg);

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// `bridgectl drain` / `undrain`: an admin's drain request as a Kubernetes node condition,
// so both schedulers' users see it (`kubectl describe node`) and the daemon drains the
// Slurm node through the same health flow as any other bad condition
// (src/health: DrainRequested=True drains; running jobs finish).
//
//   ASSIGN_OR_RETURN(bool changed, RequestDrain(kube, "node3", "swap PSU", "alice@login1", now));
//   ASSIGN_OR_RETURN(bool cleared, ClearDrain(kube, "node3"));
//
// bridgectl writes Kubernetes itself, with the admin's own kubeconfig, rather than asking
// the daemon to: the apiserver then authorizes and audits the person (RBAC on
// nodes/status), the socket (open to root, the daemon's user and SlurmUser, for the
// plugin's 5 ms admissions on one thread) gains no write power and no blocking apiserver
// round trip, and a drain works while the daemon is down (it acts once it is back).
#pragma once

#include <string>

#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"

namespace skb::bridge::cli {

// Sets DrainRequested=True (reason BridgectlDrain, message "<reason> (bridgectl drain by
// <who>)") on the Kubernetes node `node`; lastTransitionTime stays when it already was
// True. Returns whether anything changed. NotFound: no such node. FailedPrecondition:
// DrainRequested is already True with another reason (someone else's request: left alone).
// InvalidArgument: empty reason.
StatusOr<bool> RequestDrain(k8s::KubeClient& kube, const std::string& node,
                            const std::string& reason, const std::string& who,
                            Clock::TimePoint now);

// Removes DrainRequested from `node` when bridgectl set it (reason BridgectlDrain); other
// conditions, cordons, taints and Slurm drains are not touched. Returns false when there
// was nothing to clear. FailedPrecondition: the condition is someone else's. Aborted: the
// node's conditions kept changing under it (retry).
StatusOr<bool> ClearDrain(k8s::KubeClient& kube, const std::string& node);

// `bridgectl drain NODE --gpu GPU`: one GPU out of both schedulers, the node's others still
// serving both. GPU names the device as the node's ResourceSlice does ("gpu-5"), or is a
// number N for "gpu-N" (NVIDIA's DRA driver names its GPUs so). Creates the DeviceTaintRule
// devices::DrainRule (driver and pool as the slice publishing the device says; message
// "<reason> (bridgectl drain by <who>)"); kube-scheduler gives the GPU to no new claim, and
// the bridge holds it from Slurm once free there (the job on it finishes). Returns whether
// anything changed (false: drained already with these words). NotFound: no such node, or
// the node publishes no such device (its devices are listed). FailedPrecondition: a rule of
// that name that is no drain. InvalidArgument: empty reason or a malformed GPU.
StatusOr<bool> RequestGpuDrain(k8s::KubeClient& kube, const std::string& node,
                               const std::string& gpu, const std::string& reason,
                               const std::string& who);

// Deletes the GPU's drain when bridgectl made it (devices::kDrainedByLabel). false: none.
// FailedPrecondition: the rule of that name is not bridgectl's.
StatusOr<bool> ClearGpuDrain(k8s::KubeClient& kube, const std::string& node,
                             const std::string& gpu);

// GPU as given to --gpu: "5" -> "gpu-5"; a device name as is; "" when it is neither (a DNS
// label: lower-case letters, digits and '-').
std::string GpuDeviceName(const std::string& gpu);

}  // namespace skb::bridge::cli

// SPDX-License-Identifier: Apache-2.0
// What GPU-granular sharing reads from and writes to Kubernetes' Dynamic Resource Allocation
// objects (resource.k8s.io/v1), as plain devices:: values. Pure: JSON in (objects as the
// apiserver returns them, or as the bridge's informers trim them), structs out.
//
//   auto slices = SlicesByNode(slice_objects, "gpu.nvidia.com", &skipped);  // node -> devices
//   auto claims = ClaimsByNode(claim_objects, "gpu.nvidia.com");  // node -> allocated claims
//   auto held = HeldDevices(rule_objects);                         // node -> held devices
//   nlohmann::json rule = HoldRule("node1", "gpu-3", "gpu.nvidia.com");  // create it
//   if (auto p = PendingGpuPod(pod, "nvidia.com/gpu", 100000, demands)) ... // a give's trigger
//   ClaimDemand d = GpuDemandOf(claim, {"gpu.nvidia.com"});        // what a claim asks
//
// Conventions of NVIDIA's GPU DRA driver these rely on (and the testbed's dra mode plays):
// one ResourceSlice per node whose pool is named after the node, one device per GPU.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/devices/device_plan.h"
#include "src/devices/gres.h"

namespace skb::devices {

// The taint key and value of the bridge's device holds (`kubectl get devicetaintrules`
// shows them), and the labels that mark a DeviceTaintRule as the bridge's.
inline constexpr char kHoldTaintKey[] = "slurm-k8s-bridge.io/slurm-owned";
inline constexpr char kHoldTaintValue[] = "true";
inline constexpr char kHoldNodeLabel[] = "slurm-k8s-bridge.io/node";
// (the managed-by label is ownership::kManagedByLabel)
inline constexpr char kManagedByValue[] = "slurm-k8s-bridge";
// The node label that names a node's GPU model (NVIDIA's GPU feature discovery); a pod that
// selects it names the model it wants.
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

// The devices `driver` publishes per node: spec.nodeName (or, without one, the pool's name),
// devices[].name and the `minor` attribute ("minor" or "<driver>/minor", an int) when
// published. A pool published in several slices is merged; only the slices of the pool's
// newest generation count (older ones linger while a driver republishes). Skipped, with a
// reason appended to `skipped` when given: a slice without devices or node, a device without
// a name; and a whole node when its newest generation is incomplete (fewer slices than
// resourceSliceCount) or names a device twice, also recorded in `unreadable` (node -> why)
// when given: the caller must not read such a node as publishing nothing (kube-scheduler
// may still allocate from the slices it has). Devices in published order.
std::map<std::string, std::vector<SliceDevice>> SlicesByNode(
    std::span<const nlohmann::json> slices, std::string_view driver,
    std::vector<std::string>* skipped = nullptr,
    std::map<std::string, std::string>* unreadable = nullptr);
// The node a ResourceSlice of `driver` publishes for (spec.nodeName, or its pool's name);
// "" for another driver's slice or one naming neither.
std::string SliceNodeOf(const nlohmann::json& slice, std::string_view driver);

// Allocated claims using devices of `driver`, per node (the result's pool: the driver names
// pools after nodes). One Claim per claim and node: pod "ns/name" of the first pod in
// status.reservedFor, or "ns/claim" when none is reserved (allocated for a pod not yet
// bound, or left allocated by a pod that is gone); devices in result order; allocated=true.
// This includes the claims kube-scheduler generates for `nvidia.com/gpu: k` requests
// (annotation resource.kubernetes.io/extended-resource-claim, named "<pod>-extended-
// resources-<5 chars>", owned by the pod) and those made from ResourceClaimTemplates. A claim
// being deleted still holds its devices until it is deallocated and counts. Results with
// adminAccess (monitoring access that does not take the device) do not count.
std::map<std::string, std::vector<Claim>> ClaimsByNode(std::span<const nlohmann::json> claims,
                                                       std::string_view driver);

// The name of the bridge's hold on one device: "slurm-hold.<node>.<device>" (device names
// are DNS labels, so the last dot separates them), a DNS-1123 subdomain; when longer than
// 253 characters, cut and ended with a hash of node and device, so it stays stable and
// distinct.
std::string HoldRuleName(std::string_view node, std::string_view device);

// The DeviceTaintRule that keeps `device` of `node` (driver `driver`, pool = node) out of
// new Kubernetes allocations while Slurm owns it: effect NoSchedule (an allocated claim is
// not disturbed; nothing is evicted), labelled as the bridge's and with its node. Create it
// as is; the apiserver adds spec.taint.timeAdded and a status.
nlohmann::json HoldRule(std::string_view node, std::string_view device, std::string_view driver);

// The devices the bridge's hold rules cover, per node (pool): only rules labelled as the
// bridge's whose selector names a pool and a device; a rule being deleted still counts until
// it is gone.
std::map<std::string, std::set<std::string>> HeldDevices(std::span<const nlohmann::json> rules);
// Whether `rule` holds a device as the bridge's hold must, read from what it says, not from
// its label alone: the managed-by label, a selector of exactly a driver, a pool and a device,
// and the hold's taint key with effect NoSchedule or NoExecute. A rule edited otherwise
// (effect None, another key, a narrowed selector) holds nothing: the device reads as
// unguarded and the bridge puts its hold back (AddDeviceHold replaces the rule of its name).
// The name is not checked: rules an earlier release named otherwise still hold.
bool IsHoldRule(const nlohmann::json& rule, std::string* pool, std::string* device);

// An admin's drain of one GPU (`bridgectl drain NODE --gpu DEVICE`): a DeviceTaintRule
// "skb-drain.<node>.<device>" with taint kDrainTaintKey (NoSchedule: kube-scheduler gives the
// device to no new claim; a pod using it keeps it), the admin's words and name in
// kDrainReasonAnnotation, labelled as the bridge's (its informer lists only those) and with
// kDrainedByLabel. The bridge reads a drained GPU as one the driver tainted: held from
// Slurm as soon as it is free there, the job on it left to finish (a drain, not a failure).
// The chart's hold-rule guard lets admins create and delete these (not the holds).
inline constexpr char kDrainTaintKey[] = "slurm-k8s-bridge.io/drained";
inline constexpr char kDrainReasonAnnotation[] = "slurm-k8s-bridge.io/drain-reason";
inline constexpr char kDrainedByLabel[] = "slurm-k8s-bridge.io/drained-by";
inline constexpr char kDrainRulePrefix[] = "skb-drain.";
std::string DrainRuleName(std::string_view node, std::string_view device);
nlohmann::json DrainRule(std::string_view node, std::string_view device, std::string_view driver,
                         std::string_view pool, std::string_view reason);
// Whether `rule` is such a drain (name, taint key, NoSchedule or NoExecute, a selector of a
// driver, a pool and a device); then its pool, device and reason (the annotation, or "" ).
bool IsDrainRule(const nlohmann::json& rule, std::string* pool, std::string* device,
                 std::string* reason);
// The drained devices per pool (node): device -> reason.
std::map<std::string, std::map<std::string, std::string>> DrainedDevices(
    std::span<const nlohmann::json> rules);

// The GPU model `pod` asks for: the value of its nodeSelector, or of its required node
// affinity, on nvidia.com/gpu.product ("In" with one value, in every term); "" for any.
std::string RequestedGpuModel(const nlohmann::json& pod);

// Where `pod` may run: its spec.nodeSelector, required node affinity and spec.tolerations
// (placement.h).
NodePlacement PlacementOf(const nlohmann::json& pod);

// What one ResourceClaim asks of the GPU DeviceClasses (`classes`, gpu_sharing.device_classes)
// and whether it already has its devices. Requests (spec.devices.requests, resource.k8s.io/v1):
//   - `exactly` of a GPU class: its count (allocationMode ExactCount, the default; count
//     defaults to 1); adminAccess asks for no device of its own and counts 0;
//   - `firstAvailable`: kube-scheduler takes the first alternative that fits, so the first
//     alternative of a GPU class counts (freeing that many GPUs makes the pod placeable;
//     an earlier alternative of another class is the pod's own matter);
//   - of any other class: 0.
// Not counted, with `unknown` saying why (the pod is then no give's trigger: the bridge does
// not free GPUs for a demand it cannot size): allocationMode All (every matching device of
// whichever node the scheduler picks), and a request whose tolerations tolerate the
// bridge's hold taint (kHoldTaintKey: such a claim may be given devices Slurm holds, which
// the chart's admission policy refuses; the device lane reports it if one exists). CEL
// selectors are not evaluated: a request that narrows the devices (a model, a memory size)
// counts in full, and a give may free GPUs it cannot use (the give back-off then keeps the
// node from being asked again).
struct ClaimDemand {
  int64_t gpus = 0;  // whole GPUs, or MIG slices of `profile`
  std::string profile;
  bool allocated = false;  // status.allocation is set: its devices are chosen
  std::string unknown;     // why the demand is not known ("" when it is)
  friend bool operator==(const ClaimDemand&, const ClaimDemand&) = default;
};
//
// MIG slices: a request of one of `mig_classes` (gpu_sharing.mig_device_classes) asks for
// `count` slices of the profile its CEL selectors compare (device.attributes['<driver>']
// .profile == '1g.10gb', in a selector without ||), and `profile` says which. Unknown: a MIG
// request naming no single profile, and a claim asking for slices beside whole GPUs or for
// slices of two profiles (a give frees devices of one kind).
ClaimDemand GpuDemandOf(const nlohmann::json& claim,
                        const std::set<std::string, std::less<>>& classes,
                        const std::set<std::string, std::less<>>& mig_classes = {});
// The MIG profile a request's CEL selectors pin ("" when none, or two).
std::string MigProfileOf(const nlohmann::json& request);

// What a claim counts for its pod's tenant (quotas): once allocated, the GPUs it holds (the
// `driver`'s devices in status.allocation, as ClaimsByNode reads them; always known); before,
// what it asks (GpuDemandOf, `unknown` when that cannot be sized). A MIG slice counts as one,
// asked or allocated: quotas are in devices, and a profile has no agreed share of a GPU (a
// pending slice claim counted nothing before its allocation, so a tenant's MIG pods could
// borrow past a limit until the scheduler placed them).
ClaimDemand QuotaGpusOf(const nlohmann::json& claim,
                        const std::set<std::string, std::less<>>& classes, std::string_view driver,
                        const std::set<std::string, std::less<>>& mig_classes = {});

// The ResourceClaims a pod's spec.resourceClaims use, as "namespace/name": a named claim
// itself (resourceClaimName); a template's claim through status.resourceClaimStatuses, where
// kube-controller-manager records the claim it generated (an entry whose claim is not
// recorded yet counts in `unresolved`; a recorded entry without a claim name needs none).
struct PodClaims {
  std::vector<std::string> claims;
  int unresolved = 0;
  bool empty() const { return claims.empty() && unresolved == 0; }
};
PodClaims ClaimsOfPod(const nlohmann::json& pod);

// A pod that may be a give's trigger before its claims are counted: `pod.gpus` is its
// extended-resource part only (0 when it asks through claims alone), whole GPUs or, with
// `pod.profile` set, MIG slices asked as <mig prefix><profile>.
struct PendingCandidate {
  PendingPod pod;
  PodClaims claims;
  std::string unknown;  // why its extended resources cannot be sized ("" when they can)
};

// `pod` as a candidate trigger, or nullopt: kube-scheduler found it unschedulable
// (PodScheduled False, reason Unschedulable), it is not bound (no spec.nodeName), not being
// deleted, not terminal, at or above `threshold` priority (spec.priority, 0 when unset), and
// asks for `extended_resource` (the pod's effective request, as kube-scheduler computes it:
// the sum over containers and sidecars, or the largest init container if more; a limit
// without a request counts as the request), or for MIG slices through an extended resource
// named `mig_prefix` + profile (gpu_sharing.mig_extended_resource_prefix; "" reads none), or
// uses ResourceClaims. Slices of two profiles, or slices beside whole GPUs, are not sized
// (`unknown` says so: a give frees one kind of device). The model is RequestedGpuModel's,
// the placement PlacementOf's.
std::optional<PendingCandidate> PendingCandidateOf(const nlohmann::json& pod,
                                                   std::string_view extended_resource,
                                                   int32_t threshold,
                                                   std::string_view mig_prefix = "");

// The candidate's GPUs in all: its extended-resource part plus what its claims not yet
// allocated ask of the GPU classes (`claims`: GpuDemandOf by "namespace/name"). nullopt when
// that is 0, or when a claim is not known: not in `claims` (not created yet, or not seen
// yet) or a template's claim not generated yet (both a matter of moments), or a demand that
// cannot be sized (the candidate's `unknown`, GpuDemandOf's), which stays so until the pod
// or claim changes: only then is `why` (when given) set, naming the reason.
std::optional<PendingPod> CountGpus(const PendingCandidate& candidate,
                                    const std::map<std::string, ClaimDemand>& claims,
                                    std::string* why = nullptr);

// Whether `pod` may be allocated GPUs through DRA: it asks for `extended_resource` or an
// extended resource starting `mig_prefix` (any container's request or limit), or uses
// ResourceClaims. A pod that does neither (a nomination of it never writes a GPU claim) is
// not waited for.
bool MayUseGpus(const nlohmann::json& pod, std::string_view extended_resource,
                std::string_view mig_prefix = "");

// PendingCandidateOf, then CountGpus: `pod` as a give's trigger, or nullopt.
std::optional<PendingPod> PendingGpuPod(const nlohmann::json& pod,
                                        std::string_view extended_resource, int32_t threshold,
                                        const std::map<std::string, ClaimDemand>& claims = {},
                                        std::string_view mig_prefix = "");

}  // namespace skb::devices

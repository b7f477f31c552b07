// What GPU-granular sharing reads from and writes to Kubernetes' Dynamic Resource Allocation
// objects (resource.k8s.io/v1), as plain devices:: values. Pure: JSON in (objects as the
// apiserver returns them, or as the bridge's informers trim them), structs out.
//
//   auto slices = SlicesByNode(slice_objects, "gpu.nvidia.com", &skipped);  // node -> devices
//   auto claims = ClaimsByNode(claim_objects, "gpu.nvidia.com");  // node -> allocated claims
//   auto held = HeldDevices(rule_objects);                         // node -> held devices
//   nlohmann::json rule = HoldRule("node1", "gpu-3", "gpu.nvidia.com");  // create it
//   if (auto p = PendingGpuPod(pod, "nvidia.com/gpu", 100000)) ...       // a give's trigger
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
// resourceSliceCount) or names a device twice. Devices in published order.
std::map<std::string, std::vector<SliceDevice>> SlicesByNode(
    std::span<const nlohmann::json> slices, std::string_view driver,
    std::vector<std::string>* skipped = nullptr);

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

// The GPU model `pod` asks for: the value of its nodeSelector, or of its required node
// affinity, on nvidia.com/gpu.product ("In" with one value, in every term); "" for any.
std::string RequestedGpuModel(const nlohmann::json& pod);

// Where `pod` may run: its spec.nodeSelector, required node affinity and spec.tolerations
// (placement.h).
NodePlacement PlacementOf(const nlohmann::json& pod);

// `pod` as a give's trigger, or nullopt: kube-scheduler found it unschedulable (PodScheduled
// False, reason Unschedulable), it is not bound (no spec.nodeName), not being deleted, not
// terminal, at or above `threshold` priority (spec.priority, 0 when unset), and asks for
// `extended_resource` (the pod's effective request, as kube-scheduler computes it: the sum
// over containers and sidecars, or the largest init container if more; a limit without a
// request counts as the request). The model is RequestedGpuModel's, the placement
// PlacementOf's.
// Not counted yet: GPUs asked for through spec.resourceClaims (a ResourceClaimTemplate or a
// ResourceClaim of the GPU DeviceClass); such a pod is a trigger only for its
// extended-resource part.
std::optional<PendingPod> PendingGpuPod(const nlohmann::json& pod,
                                        std::string_view extended_resource, int32_t threshold);

}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/node_drain.h"

#include <algorithm>

#include "bridge/cli/node_conditions.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "src/health/health_config.h"
#include "src/health/node_health.h"

namespace skb::bridge::cli {
namespace {

using nlohmann::json;

}  // namespace

StatusOr<bool> RequestDrain(k8s::KubeClient& kube, const std::string& node,
                            const std::string& reason, const std::string& who,
                            Clock::TimePoint now) {
  if (reason.empty()) return InvalidArgumentError("a drain needs a reason (--reason TEXT)");
  auto got = kube.Get(k8s::Resource::Nodes(), "", node);
  if (!got.ok()) return NodeError(got.status(), node);
  const std::string stamp = k8s::FormatTime(now);
  std::string transition = stamp;
  const std::string message =
      health::ConditionMessage(StrCat(reason, " (bridgectl drain by ", who, ")"));
  for (const json& c : NodeConditions(*got)) {
    if (!c.is_object() || JsonStr(c, "type") != health::kDrainRequestedCondition) continue;
    if (JsonStr(c, "status") != "True") continue;
    if (JsonStr(c, "reason") != health::kBridgectlDrainReason) {
      return FailedPreconditionError(
          StrCat("node ", node, " already has ", health::kDrainRequestedCondition, "=True from '",
                 JsonStr(c, "reason"), "' (", JsonStr(c, "message"), "): left alone"));
    }
    if (JsonStr(c, "message") == message) return false;
    transition =
        JsonStr(c, "lastTransitionTime").empty() ? stamp : JsonStr(c, "lastTransitionTime");
  }
  RETURN_IF_ERROR(SetCondition(kube, node,
                               {{"type", health::kDrainRequestedCondition},
                                {"status", "True"},
                                {"reason", health::kBridgectlDrainReason},
                                {"message", message},
                                {"lastHeartbeatTime", stamp},
                                {"lastTransitionTime", transition}}));
  return true;
}

StatusOr<bool> ClearDrain(k8s::KubeClient& kube, const std::string& node) {
  return EditConditions(kube, node, [&](const json& conditions) -> StatusOr<std::optional<json>> {
    const int i = ConditionIndex(conditions, health::kDrainRequestedCondition);
    if (i < 0) return std::nullopt;
    const json& c = conditions[i];
    if (JsonStr(c, "reason") != health::kBridgectlDrainReason) {
      if (JsonStr(c, "status") != "True") return std::nullopt;
      return FailedPreconditionError(StrCat(
          "node ", node, " has ", health::kDrainRequestedCondition, "=", JsonStr(c, "status"),
          " from '", JsonStr(c, "reason"), "', not from bridgectl: left alone"));
    }
    return RemoveIfUnchanged(i, c);
  });
}

std::string GpuDeviceName(const std::string& gpu) {
  if (gpu.empty() || gpu.size() > 63) return "";
  if (std::all_of(gpu.begin(), gpu.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return StrCat("gpu-", gpu);
  }
  const auto label_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  };
  if (!std::all_of(gpu.begin(), gpu.end(), label_char) || gpu.front() == '-' || gpu.back() == '-') {
    return "";
  }
  return gpu;
}

namespace {

struct PublishedDevice {
  std::string driver, pool;
};

// Where `node`'s ResourceSlices publish `device`; NotFound naming what they publish.
StatusOr<PublishedDevice> FindPublished(k8s::KubeClient& kube, const std::string& node,
                                        const std::string& device) {
  if (auto got = kube.Get(k8s::Resource::Nodes(), "", node); !got.ok()) {
    return NodeError(got.status(), node);
  }
  k8s::ListOptions on_node;
  on_node.field_selector = StrCat("spec.nodeName=", node);
  auto slices = kube.List(k8s::Resource::ResourceSlices(), "", on_node);
  if (!slices.ok()) return slices.status();
  std::vector<std::string> published;
  for (const json& slice : slices->items) {
    const json* spec = slice.contains("spec") ? &slice["spec"] : nullptr;
    if (spec == nullptr || !spec->is_object() || !spec->contains("devices")) continue;
    for (const json& d : (*spec)["devices"]) {
      const std::string name = d.is_object() ? JsonStr(d, "name") : "";
      if (name.empty()) continue;
      if (name == device) {
        const std::string pool = spec->contains("pool") && (*spec)["pool"].is_object()
                                     ? JsonStr((*spec)["pool"], "name")
                                     : "";
        return PublishedDevice{JsonStr(*spec, "driver"), pool.empty() ? node : pool};
      }
      published.push_back(name);
    }
  }
  if (published.empty()) {
    return NotFoundError(
        StrCat("node ", node,
               " publishes no device in a ResourceSlice: a GPU is drained alone only on a node "
               "a DRA driver serves (drain the whole node instead)"));
  }
  return NotFoundError(StrCat("node ", node, " publishes no device ", device, " (it has ",
                              StrJoin(published, ", "), ")"));
}

// GpuDeviceName, or InvalidArgument saying what --gpu takes.
StatusOr<std::string> GpuDevice(const std::string& gpu) {
  std::string device = GpuDeviceName(gpu);
  if (device.empty()) {
    return InvalidArgumentError(
        StrCat("--gpu '", gpu, "': give a device name (gpu-5) or a number (5 for gpu-5)"));
  }
  return device;
}

bool IsBridgectlDrain(const json& rule) {
  std::string pool, device, reason;
  return devices::IsDrainRule(rule, &pool, &device, &reason) && rule.contains("metadata") &&
         rule["metadata"].contains("labels") &&
         JsonStr(rule["metadata"]["labels"], devices::kDrainedByLabel) == "bridgectl";
}

}  // namespace

StatusOr<bool> RequestGpuDrain(k8s::KubeClient& kube, const std::string& node,
                               const std::string& gpu, const std::string& reason,
                               const std::string& who) {
  if (reason.empty()) return InvalidArgumentError("a drain needs a reason (--reason TEXT)");
  ASSIGN_OR_RETURN(const std::string device, GpuDevice(gpu));
  ASSIGN_OR_RETURN(const PublishedDevice where, FindPublished(kube, node, device));
  const std::string message =
      health::ConditionMessage(StrCat(reason, " (bridgectl drain by ", who, ")"));
  const json rule = devices::DrainRule(node, device, where.driver, where.pool, message);
  auto created = kube.Create(k8s::Resource::DeviceTaintRules(), "", rule);
  if (created.ok()) return true;
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  const std::string name = devices::DrainRuleName(node, device);
  ASSIGN_OR_RETURN(const json existing, kube.Get(k8s::Resource::DeviceTaintRules(), "", name));
  std::string pool, dev, had;
  if (!devices::IsDrainRule(existing, &pool, &dev, &had)) {
    return FailedPreconditionError(
        StrCat("DeviceTaintRule ", name, " exists and is no drain of ", device, ": left alone"));
  }
  if (had == message) return false;
  json patch = {{"metadata", {{"annotations", {{devices::kDrainReasonAnnotation, message}}}}}};
  auto r =
      kube.Patch(k8s::Resource::DeviceTaintRules(), "", name, k8s::PatchType::kJsonMerge, patch);
  if (!r.ok()) return r.status();
  return true;
}

StatusOr<bool> ClearGpuDrain(k8s::KubeClient& kube, const std::string& node,
                             const std::string& gpu) {
  ASSIGN_OR_RETURN(const std::string device, GpuDevice(gpu));
  const std::string name = devices::DrainRuleName(node, device);
  auto existing = kube.Get(k8s::Resource::DeviceTaintRules(), "", name);
  if (!existing.ok()) {
    if (existing.status().code() == StatusCode::kNotFound) return false;
    return existing.status();
  }
  if (!IsBridgectlDrain(*existing)) {
    return FailedPreconditionError(
        StrCat("DeviceTaintRule ", name, " is not a drain bridgectl made: left alone"));
  }
  auto r = kube.Delete(k8s::Resource::DeviceTaintRules(), "", name);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) return false;
    return r.status();
  }
  return true;
}

}  // namespace skb::bridge::cli

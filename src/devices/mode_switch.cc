// SPDX-License-Identifier: Apache-2.0
#include "src/devices/mode_switch.h"

#include <algorithm>

#include "src/base/strings.h"

namespace skb::devices {
namespace {

std::vector<std::string> Unheld(const NodeDevices& node) {
  std::vector<std::string> out;
  for (const Device& d : node.devices) {
    if (!d.k8s_hold) out.push_back(d.name);
  }
  return out;
}

// A step on `node`, with the Event that records it.
DeviceAction On(const NodeDevices& node, DeviceOperation op, plan::Cause cause, std::string reason,
                std::string message) {
  return {{.node = node.node,
           .cause = cause,
           .event_reason = std::move(reason),
           .event_message = std::move(message)},
          std::move(op)};
}

// The end of placeholder `p` on `node`.
DeviceAction End(const NodeDevices& node, const Placeholder& p, plan::Cause cause,
                 std::string reason, std::string message) {
  return On(node, EndPlaceholder{.placeholder_job = p.job_id}, cause, std::move(reason),
            std::move(message));
}

}  // namespace

std::vector<DeviceAction> PlanHoldAll(const NodeDevices& node) {
  std::vector<std::string> unheld = Unheld(node);
  if (unheld.empty()) return {};
  std::string message =
      StrCat("devices ", StrJoin(unheld, ","), " held for Slurm: node ", node.node,
             " is handed over to GPU sharing once every GPU is held (its reservation then goes)");
  return {On(node, AddDeviceHold{.devices = std::move(unheld)}, plan::Cause::kReservation,
             "GpusHeldForHandover", std::move(message))};
}

std::vector<DeviceAction> PlanLeave(const NodeDevices& node) {
  std::vector<DeviceAction> out;
  bool running = false;
  for (const Placeholder& p : node.placeholders) {
    running |= p.running;
    if (p.running) continue;
    // A give in flight moved no GPU yet: it ends; its pod is planned again elsewhere.
    out.push_back(End(node, p, plan::Cause::kLend, "GiveCancelled",
                      StrCat("placeholder ", p.job_id, " cancelled: node ", node.node,
                             " leaves GPU sharing; ", p.pod, " is planned again")));
  }
  if (!out.empty()) return out;
  if (running) {
    // Lent GPUs come back as in a return: held first, then the placeholders end once no
    // pod's claim is allocated on the node (without a mapping, any device of it counts).
    std::vector<std::string> unheld = Unheld(node);
    if (!unheld.empty()) {
      std::string message = StrCat("devices ", StrJoin(unheld, ","), " held again for Slurm: node ",
                                   node.node, " leaves GPU sharing");
      return {On(node, AddDeviceHold{.devices = std::move(unheld)}, plan::Cause::kReturn,
                 "GpusReturning", std::move(message))};
    }
    const bool in_use = std::any_of(node.claims.begin(), node.claims.end(),
                                    [](const Claim& c) { return c.allocated; });
    if (in_use) return {};
    for (const Placeholder& p : node.placeholders) {
      out.push_back(End(node, p, plan::Cause::kReturn, "GpusReturned",
                        StrCat("placeholder ", p.job_id, " ends: node ", node.node,
                               " leaves GPU sharing and no pod uses its GPUs")));
    }
    return out;
  }
  // A device the driver still publishes keeps its hold: without it, Kubernetes could
  // allocate a GPU the Slurm jobs of the node may be using, and the node lane's reservation
  // cannot count it (it would be served by the same devices). Such a node stays Slurm's
  // until its GPUs map again (every device published: it is handed over once more) or the
  // slice goes (nothing left to allocate).
  std::vector<std::string> held;
  for (const Device& d : node.devices) {
    if (!d.k8s_hold) continue;
    if (d.published) return {};
    held.push_back(d.name);
  }
  if (held.empty()) return {};
  std::string message = StrCat("holds on ", StrJoin(held, ","), " removed: node ", node.node,
                               " leaves GPU sharing with no placeholder left; the node lane "
                               "takes it whole");
  return {On(node, DropDeviceHold{.devices = std::move(held)}, plan::Cause::kReservation,
             "GpuSharingEnding", std::move(message))};
}

void PlanModeSwitches(const Observation& o, PassPlan* plan) {
  for (const auto* list : {&o.handing_over, &o.leaving}) {
    for (const NodeDevices& n : *list) {
      std::vector<DeviceAction> actions = list == &o.leaving ? PlanLeave(n) : PlanHoldAll(n);
      if (!actions.empty()) plan->actions[n.node] = std::move(actions);
    }
  }
}

}  // namespace skb::devices

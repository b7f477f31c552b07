// SPDX-License-Identifier: Apache-2.0
#include "src/devices/pass.h"

#include <algorithm>

namespace skb::devices {

PassPlan PlanPass(std::vector<NodeDevices> nodes, std::span<const PendingPod> pending,
                  const config::Config& cfg, Clock::TimePoint now) {
  PassPlan out;
  for (const NodeDevices& n : nodes) {
    NodePlan p = PlanNode(n, cfg, now);
    if (!p.actions.empty()) out.actions[n.node] = std::move(p.actions);
    if (!p.violations.empty()) out.violations[n.node] = std::move(p.violations);
    KeepEarliest(&out.recheck_at, p.recheck_at);
  }
  std::vector<PendingPod> order(pending.begin(), pending.end());
  std::stable_sort(order.begin(), order.end(), [](const PendingPod& a, const PendingPod& b) {
    return a.priority > b.priority;
  });
  for (const PendingPod& pod : order) {
    std::string why;
    std::optional<Selection> s = ChooseNode(nodes, pod, cfg, now, &why);
    if (!s) {
      out.waiting[pod.pod] = why;
      continue;
    }
    std::vector<DeviceAction> give = PlanGive(*s, pod);
    auto& list = out.actions[s->node];
    list.insert(list.end(), give.begin(), give.end());
    out.gives[pod.pod] = s->node;
    // The give is in flight on that node from now on: no other pod counts its devices.
    auto n = std::find_if(nodes.begin(), nodes.end(),
                          [&](const NodeDevices& x) { return x.node == s->node; });
    n->placeholders.push_back(
        {.pod = pod.pod, .gpus = s->gpus, .victims = s->victims, .running = false});
  }
  // Last in each node's sequence: a failed condition write stops no hold or give.
  for (const NodeDevices& n : nodes) {
    if (std::optional<DeviceAction> c = PlanDevicesCondition(n)) out.actions[n.node].push_back(*c);
  }
  return out;
}

}  // namespace skb::devices

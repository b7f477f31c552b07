// SPDX-License-Identifier: Apache-2.0
#include "src/slurm/types.h"

#include "src/base/strings.h"

namespace skb::slurm {

std::string_view NodeBaseStateName(NodeBaseState s) {
  switch (s) {
    case NodeBaseState::kUnknown:
      return "unknown";
    case NodeBaseState::kDown:
      return "down";
    case NodeBaseState::kIdle:
      return "idle";
    case NodeBaseState::kAllocated:
      return "allocated";
    case NodeBaseState::kError:
      return "error";
    case NodeBaseState::kMixed:
      return "mixed";
    case NodeBaseState::kFuture:
      return "future";
  }
  return "unknown";
}

int64_t NodeView::TotalGpus() const {
  int64_t total = 0;
  for (const auto& g : gpus) total += g.count;
  return total;
}

bool NodeView::DrainedByBridge() const {
  return (drain || base_state == NodeBaseState::kDown) &&
         std::string_view(reason).substr(0, kBridgeReasonPrefix.size()) == kBridgeReasonPrefix;
}

DrainOrigin NodeView::DrainedBy() const {
  if (!drain) return DrainOrigin::kNone;
  if (std::string_view(reason).starts_with(kLendReasonPrefix)) return DrainOrigin::kBridgeLend;
  return DrainedByBridge() ? DrainOrigin::kBridge : DrainOrigin::kOther;
}

std::string NodeView::StateString() const {
  std::string s(NodeBaseStateName(base_state));
  if (drain) s += "+drain";
  if (fail) s += "+fail";
  if (reboot_requested) s += "+reboot";
  if (reboot_issued) s += "+reboot_issued";
  if (not_responding) s += "*";
  return s;
}

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "PENDING";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSuspended:
      return "SUSPENDED";
    case JobState::kComplete:
      return "COMPLETED";
    case JobState::kCancelled:
      return "CANCELLED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kTimeout:
      return "TIMEOUT";
    case JobState::kNodeFail:
      return "NODE_FAIL";
    case JobState::kPreempted:
      return "PREEMPTED";
    case JobState::kBootFail:
      return "BOOT_FAIL";
    case JobState::kDeadline:
      return "DEADLINE";
    case JobState::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case JobState::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

}  // namespace skb::slurm

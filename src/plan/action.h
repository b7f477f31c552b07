// What the planner asks the bridge to do. Plain values: the executor in bridge/ carries
// them out idempotently (re-reading state first) and records each as a Kubernetes Event
// with `event_reason` and `event_message` on the node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace skb::plan {

// Every Slurm reason the bridge writes starts with this; the bridge only ever undoes a
// drain whose reason carries it (an admin's drain is never touched).
inline constexpr std::string_view kReasonPrefix = "k8s-bridge: ";
// Drains made for lending a node to Kubernetes (the ownership state machine) rather than
// for health: the health planner leaves them alone.
inline constexpr std::string_view kLendReasonPrefix = "k8s-bridge: lent to ";

enum class ActionKind {
  kDrainSlurmNode,    // drain (or re-word the bridge's drain) with `slurm_reason`
  kResumeSlurmNode,   // resume, only if the drain reason is still `expected_reason`
  kRequeueSlurmJobs,  // requeue `job_ids` (running work that must leave the node now)
  kSetNodeCondition,  // set `condition` on the Kubernetes node (status subresource)
  kSetSlurmFeatures,  // set the Slurm node's available and active features to `features`
};

std::string_view ActionKindName(ActionKind k);

struct ConditionSpec {
  std::string type;
  std::string status;  // True, False, Unknown
  std::string reason;  // CamelCase
  std::string message;
  friend bool operator==(const ConditionSpec&, const ConditionSpec&) = default;
};

struct Action {
  ActionKind kind = ActionKind::kDrainSlurmNode;
  std::string node;
  std::string slurm_reason;     // kDrainSlurmNode
  std::string expected_reason;  // kResumeSlurmNode
  std::vector<uint32_t> job_ids;  // kRequeueSlurmJobs
  ConditionSpec condition;        // kSetNodeCondition
  std::vector<std::string> features;  // kSetSlurmFeatures
  std::string event_reason;       // CamelCase reason of the Event recording this action
  std::string event_message;      // what a human reads in `kubectl describe node`

  friend bool operator==(const Action&, const Action&) = default;
};

// "DrainSlurmNode node3 reason='k8s-bridge: GPUHealthy=False: XID 79'" (logs, test output).
std::string ToString(const Action& a);

}  // namespace skb::plan

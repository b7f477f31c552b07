// SPDX-License-Identifier: Apache-2.0
// Job admission at submit time: decides, from the inventory of managed nodes alone,
// whether a Slurm job could ever run, and what the bridge needs to remember about it.
//
// Pure: the daemon converts the plugin's request and its current snapshot into these
// types and sends the Decision back. Rules:
//   - reject what can never be satisfied: a GPU type no (candidate) node has, more GPUs
//     per node/task/socket than any node has, more GPUs per job than all nodes together,
//     a --constraint naming a feature no node has; the message says what exists instead
//     ("no node has gpu type a100; available: h100 x8 on 4 nodes");
//   - accept, with a note to the user, a job naming a node that is lent to Kubernetes or
//     unhealthy (that is temporary);
//   - accept everything else, including what is not the bridge's business (unknown gres
//     names, odd TRES: Slurm judges those itself), and annotate the job's admin_comment
//     with preemptible=true|false from the policy (and the --signal it asked for);
//   - pass the bridge's own placeholder jobs (GPU-granular sharing: named skb-gpu-hold with
//     a placeholder record in the admin_comment, which only Slurm admins can set) through
//     unchanged: no note, no annotation, never a rejection.
//
//   Decision d = Decide(request, inventory, policy);
//   if (!d.accept) return Reject(d.user_message);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::admission {

struct Policy {
  // A job is preemptible when its QOS is listed here, or when every partition it may run
  // in is listed in preemptible_partitions.
  std::vector<std::string> preemptible_partitions;
  std::vector<std::string> preemptible_qos;
  // Reject a --constraint naming a feature no node has (Slurm would leave it pending
  // forever with "BadConstraints" in some versions, or reject it with a terse error).
  bool reject_unknown_features = true;
};

struct NodeFacts {
  enum class Availability { kAvailable, kLent, kUnhealthy };
  std::string name;
  std::vector<slurm::GpuCount> gpus;
  std::vector<std::string> features;
  std::vector<std::string> partitions;
  Availability availability = Availability::kAvailable;
  std::string why;  // reason, for kLent and kUnhealthy
};

struct Inventory {
  bool known = false;  // false until the first snapshot: admission then only annotates
  std::vector<NodeFacts> nodes;
  std::string default_partition;
};

// Builds the admission view from Slurm's nodes: a node drained by the bridge with a
// "lent to" reason is kLent; any other drained/down/failing node is kUnhealthy.
Inventory InventoryFromSlurm(const std::vector<slurm::NodeView>& nodes,
                             std::string default_partition);

// The job as submitted (untrusted: any field may be empty or odd).
struct JobRequest {
  uint32_t submit_uid = 0;
  std::string partition;  // comma list; empty = default
  std::string qos;
  std::string tres_per_node;
  std::string tres_per_job;
  std::string tres_per_task;
  std::string tres_per_socket;
  std::string features;
  std::vector<std::string> required_nodes;
  std::string array_spec;
  bool het_component = false;
  std::string admin_comment;
  std::optional<slurm::SignalSpec> signal;
  std::string name;  // --job-name
  // What the job's answer beyond Decide needs (submit.h):
  uint32_t min_nodes = 0;       // its minimum node count (0 read as 1)
  std::string account;          // --account; "" when not given
  std::string default_account;  // the submitting user's default account ("" unknown)
  bool requeue = true;          // false: --no-requeue
  bool interactive = false;     // srun or salloc, not sbatch
};

// Why a job is refused, so that the plugin can answer with the Slurm error code that says
// it (sbatch prints the code's text before our message).
enum class Refusal {
  kNone,
  kNodeConfig,  // more GPUs than any node (or all nodes) has: "Requested node configuration is not
                // available"
  kGresType,    // a GPU type or GPUs no node has: "Invalid generic resource (gres) specification"
  kFeature,     // a --constraint feature no node has: "Invalid feature specification"
  kQuota,       // beyond the tenant's guarantee: "Job violates accounting/QOS policy ..."
};

// What every message to the researcher starts with (every reason the bridge writes does).
inline constexpr std::string_view kPrefix = plan::kReasonPrefix;

struct Decision {
  bool accept = true;
  Refusal refusal = Refusal::kNone;  // set when !accept
  std::string user_message;          // empty = nothing to say
  // The new admin_comment (existing text kept, bridge token merged in); only on accept.
  std::optional<std::string> admin_comment;
};

Decision Decide(const JobRequest& job, const Inventory& inventory, const Policy& policy);

// "h100 x8 on 4 nodes, a100 x4 on 1 node" for the given nodes; "no GPUs" when none.
std::string DescribeGpus(const std::vector<const NodeFacts*>& nodes);

}  // namespace skb::admission

// SPDX-License-Identifier: Apache-2.0
// Decommission: what takes the bridge out of a cluster, node by node, with no job lost and
// no GPU given to both schedulers, leaving nothing of the bridge behind. Pure: the caller
// (bridge/decommission.h) reads Kubernetes and Slurm into Facts, this decides the Plan, the
// caller carries it out and can run again (a second run over what the first left plans
// nothing).
//
//   Plan plan = PlanDecommission(facts);
//   for (const Step& s : plan.steps) Run(s);          // in order: protect, release, clean
//   for (const std::string& line : Describe(plan)) std::puts(line.c_str());
//
// The rule, per node the bridge has touched: the work running there keeps running, and
// each scheduler is kept off GPUs the other one's work uses. So every node ends with one
// holder, said by standard means an admin reads and undoes with the usual tools:
//   - Slurm's (Slurm jobs run there, or it was Slurm's: a live reservation, GPU holds):
//     cordoned in Kubernetes (spec.unschedulable); the bridge's lending drain resumed;
//   - Kubernetes' (GPU pods run there, or it was lent): drained in Slurm with a reason of
//     the decommission's own (kDecommissionReasonPrefix, which is not the bridge's, so no
//     later bridge resumes it);
//   - both (a node shared GPU by GPU, with Slurm jobs and pods on it): both of the above,
//     so neither scheduler places new work there until an admin hands it to one;
//   - neither (no work, nothing held): only cleaned.
// A drain the bridge made for the node's health or maintenance stays a drain (the node is
// not fit for work because the bridge is leaving), reworded the same way. Drains and
// cordons by anybody else are never touched. Then every reservation is released, every
// placeholder job cancelled, every DeviceTaintRule and guarantee ResourceQuota (and each
// PriorityClass the daemon made) deleted,
// and the bridge's annotations, labels, taints and conditions removed from the nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "src/slurm/types.h"

namespace skb::decommission {

// The reason of every Slurm drain the decommission makes or keeps ("decommissioned: lent
// to Kubernetes..."). Not kBridgeReasonPrefix: the drain is the site's now.
inline constexpr std::string_view kDecommissionReasonPrefix = "decommissioned: ";

struct NamespacedName {
  std::string namespace_name;
  std::string name;
  std::string Key() const { return namespace_name + "/" + name; }
  friend bool operator==(const NamespacedName&, const NamespacedName&) = default;
};

// One node as both schedulers show it, reduced to what the decision reads.
struct NodeFacts {
  std::string k8s_name;    // "" when Kubernetes has no such node
  std::string slurm_name;  // "" when it pairs with no Slurm node
  // Kubernetes
  bool cordoned = false;  // spec.unschedulable
  // Of what the bridge writes on a Node (bridge/decommission), what this one carries.
  std::vector<std::string> bridge_annotations;
  std::vector<std::string> bridge_labels;
  std::vector<std::string> bridge_taints;      // taint keys
  std::vector<std::string> bridge_conditions;  // condition types the bridge writes
  // Reservation pods bound to the node; `live_reservation` when one is not being deleted.
  std::vector<NamespacedName> reservations;
  bool live_reservation = false;
  std::vector<std::string> hold_rules;  // the bridge's DeviceTaintRules holding GPUs for Slurm
  // bridgectl's drains of one GPU (device name -> the admin's reason): deleted, and said,
  // since without the bridge nothing keeps Slurm off that GPU either.
  std::vector<std::pair<std::string, std::string>> drain_rules;  // rule name, "gpu-3: why"
  // Pods that are not the bridge's, bound here, not finished, asking for GPUs (a GPU
  // resource or a ResourceClaim).
  std::vector<NamespacedName> gpu_pods;
  // Slurm
  slurm::DrainOrigin drain = slurm::DrainOrigin::kNone;
  std::string drain_reason;
  std::vector<uint32_t> slurm_jobs;    // holding the node (running, suspended, completing),
                                       // placeholders left out
  std::vector<uint32_t> placeholders;  // the bridge's placeholder jobs on the node
};

// A live job whose admin comment carries the bridge's preemption record.
struct JobRecord {
  uint32_t job_id = 0;
  std::string admin_comment;
};

struct Facts {
  std::vector<NodeFacts> nodes;
  // Placeholders that name no node (pending, not yet placed) and reservations bound to no
  // node: released like the others.
  std::vector<uint32_t> unplaced_placeholders;
  std::vector<NamespacedName> unbound_reservations;
  std::vector<std::string> other_rules;  // DeviceTaintRules naming no node above
  std::vector<NamespacedName> quotas;    // the bridge's guarantee ResourceQuotas
  // PriorityClasses the daemon made (labelled managed-by: the package path; the chart's
  // are Helm's and go with `helm uninstall`).
  std::vector<std::string> priority_classes;
  std::vector<JobRecord> job_records;
};

enum class Holder { kSlurm, kKubernetes, kBoth, kNeither };
std::string_view HolderName(Holder h);

// The steps, each idempotent. The executor re-reads what it changes.
struct Cordon {
  std::string node;  // Kubernetes name
};
// Drains the Slurm node with `reason` (kDecommissionReasonPrefix...), replacing a drain of
// the bridge's; an admin's drain stays.
struct DrainAs {
  std::string node;  // Slurm name
  std::string reason;
};
struct Resume {
  std::string node;  // Slurm name; only a drain that is still the bridge's
};
struct ReleaseReservation {
  NamespacedName pod;
};
struct CancelPlaceholder {
  uint32_t job_id = 0;
};
struct DeleteRule {
  std::string name;
};
struct DeleteQuota {
  NamespacedName quota;
};
// Last of the releases: no reservation uses it once they are gone.
struct DeletePriorityClass {
  std::string name;
};
struct CleanNode {
  std::string node;  // Kubernetes name
  std::vector<std::string> annotations, labels, taints, conditions;
};
struct SetAdminComment {
  uint32_t job_id = 0;
  std::string admin_comment;
};

using Step = std::variant<Cordon, DrainAs, Resume, ReleaseReservation, CancelPlaceholder,
                          DeleteRule, DeleteQuota, DeletePriorityClass, CleanNode, SetAdminComment>;

struct NodeOutcome {
  std::string node;                  // the Kubernetes name, else the Slurm name
  std::string k8s_name, slurm_name;  // as in NodeFacts ("" where the side has none)
  Holder holder = Holder::kNeither;
  std::string why;  // "Slurm job 12 runs there", "lent to Kubernetes"
};

struct Plan {
  // Protect (cordons, drains) before release (reservations, placeholders, rules, quotas)
  // before clean (resumes, node marks, job records): nothing that kept a scheduler off a
  // GPU goes before the standard mark that keeps it off.
  std::vector<Step> steps;
  std::vector<NodeOutcome> nodes;  // every node touched, in Facts order
  // What the admin should know that no step changes: a GPU an admin drained with bridgectl
  // that is back in service on both sides.
  std::vector<std::string> warnings;
};

// Whether the bridge left anything on the node.
bool Touched(const NodeFacts& n);
// The node's holder once the bridge is gone, and why.
NodeOutcome HolderOf(const NodeFacts& n);

Plan PlanDecommission(const Facts& facts);

// `admin_comment` without the bridge's preemption record (ownership::kPreemptedToken);
// the rest as it was, tokens in order.
std::string WithoutPreemptionRecord(std::string_view admin_comment);

// One line per step ("cordon node3 in Kubernetes (Slurm job 12 runs there)"), after one
// line per node ("node3: Slurm's: Slurm job 12 runs there").
std::vector<std::string> Describe(const Plan& plan);
std::string DescribeStep(const Step& s);

}  // namespace skb::decommission

// SPDX-License-Identifier: Apache-2.0
// The reconcile loop's state and step: the latest view of both sides (an inventory::Store,
// merged per node on demand), planned by the pure core and carried out by the
// ActionExecutor.
//
// Inputs arrive from the Kubernetes informers and the Slurm poller through the Update*/
// Set* methods, which only record the new view in the store and mark the nodes it says
// changed dirty in the WorkQueue (level-triggered: a missed or duplicated update cannot
// corrupt anything, because ReconcileNode reads the whole current state of the node). A
// worker thread takes node names from the queue and calls ReconcileNode.
//
// Thread-safe: inputs may come from any thread; ReconcileNode for one node is never run
// concurrently (the WorkQueue guarantees it).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bridge/reconcile/action_executor.h"
#include "src/base/clock.h"
#include "src/base/thread_annotations.h"
#include "src/config/config.h"
#include "src/devices/observe.h"
#include "src/health/node_health.h"
#include "src/inventory/inventory.h"
#include "src/inventory/store.h"
#include "src/ownership/quota_facts.h"
#include "src/plan/node_plan.h"
#include "src/reconcile/work_queue.h"

namespace skb::bridge {

struct ReconcileResult {
  plan::NodePlan plan;  // what was planned (bridgectl describe shows it)
  int executed = 0;     // actions carried out
  // A failure, if any: the first retryable one, else the first (it decides the requeue).
  Status status;
  // Every action attempted (its index in plan.actions) with its result: what it did at
  // the source, or why it failed (metrics count the effects).
  std::vector<std::pair<size_t, StatusOr<Effect>>> outcomes;
};

// A node whose plan was refused is planned again after this long, changes or not.
inline constexpr Clock::Duration kRefusedRecheck = std::chrono::seconds(10);
// What reservations' job-list refreshes may use at most: half of kubernetes.qps, and never
// more than 10 writes/s whatever the rate limit (they are bookkeeping: a raised limit is
// there for set-up and bursts of lends, not for a steadier stream of refreshes).
inline constexpr double kRefreshShareOfQps = 0.5;
inline constexpr double kMaxRefreshWritesPerSecond = 10;

class Reconciler {
 public:
  // All pointers must outlive the reconciler.
  Reconciler(const config::Config& cfg, inventory::NodeNameMap names, const Clock* clock,
             ActionExecutor* executor, reconcile::WorkQueue* queue);

  // --- inputs (thread-safe) ---
  void UpdateK8sNode(inventory::K8sNode node);
  void RemoveK8sNode(const std::string& k8s_name);
  void UpdatePod(inventory::GpuPod pod);
  void RemovePod(const std::string& ns, const std::string& name);
  // The bridge's reservation pods in every phase, from an informer of their own: the live
  // pods' cache above drops a pod that turns terminal, and a reservation the kubelet fails
  // (a restart's UnexpectedAdmissionError, an eviction) must be seen, or Slurm's jobs keep
  // GPUs that Kubernetes counts as free. This view wins over the live-pod view of the same
  // pod: the two informers' events arrive in no fixed order.
  void UpdateReservation(inventory::GpuPod pod);
  void RemoveReservation(const std::string& ns, const std::string& name);
  // The whole current set (the poller hands over full views): nodes whose view changed
  // are marked dirty.
  void SetSlurmNodes(std::vector<slurm::NodeView> nodes);
  void SetSlurmJobs(std::vector<slurm::JobView> jobs);
  // One poll's nodes and jobs (either may be absent: unchanged) in one store update, so that
  // no pass plans a node from this poll's node and the last poll's jobs: a pass between the
  // two saw the bridge's own drain with a job that had started meanwhile missing, and took
  // the node for empty (the maintenance cycle rebooting under a running job, e2e).
  void SetSlurm(std::optional<std::vector<slurm::NodeView>> nodes,
                std::optional<std::vector<slurm::JobView>> jobs);
  // What the GPU-granular lane observes of each paired node (DeviceLane::SharingViews): the
  // node lane's half of the handover (ManagedNode::gpu_sharing). Nodes whose view changed
  // are planned again.
  void SetGpuSharing(std::map<std::string, inventory::GpuSharingView> views);
  // Guaranteed quotas (the QuotaLedger's classification): the running jobs within their
  // tenant's guarantee, which the planner keeps from other tenants' demand
  // (ManagedNode::guaranteed_jobs), and the pending pods that would run borrowed, for which
  // no Slurm job is preempted (ManagedNode::borrowing_nominated). The nodes of the jobs
  // that change, and those the changed pods are nominated to, are planned again.
  void SetQuotaFacts(ownership::QuotaFacts facts);
  // Slurm name -> the Kubernetes node it is paired with, for every paired node (the
  // GPU-granular lane's World), with the handover its last reconcile planned (a node not
  // reconciled yet is the node lane's).
  std::map<std::string, devices::PairedNode> PairedNodes() const;

  // --- the step ---
  // What ReconcileNode would do for node `name` now, without doing it (bridgectl describe
  // on any replica; tests).
  plan::NodePlan PlanNode(const std::string& name) const;
  // Plans node `name` (Slurm's name) from the current state and executes the plan. Re-queues
  // itself: rate-limited on a retryable error, at plan.recheck_at when a grace ends.
  ReconcileResult ReconcileNode(const std::string& name);

  // Node-condition writes in a lane of their own. With a status queue set, ReconcileNode
  // carries out every action but the kSetNodeCondition ones and queues the node there;
  // WriteNodeStatus (the status workers) plans its conditions again (only those) and
  // writes them, all of a node's in one status patch. The conditions mirror Slurm's view
  // (SlurmNodeHealthy, SlurmDrained): a burst of them, paced by the client's rate limit (one
  // write per node), then never holds a reconcile worker, so drains and resumes are not queued
  // behind them, and a node whose condition flips back before its write is written once, as it is
  // now. Without one (tests), conditions are written inline, in plan order. Set before use.
  void SetStatusQueue(reconcile::WorkQueue* queue) { status_queue_ = queue; }
  // Asked before every action: false stops the pass (the rest of the plan is not carried
  // out). The daemon passes "this replica still holds a valid Lease", so a leader deposed
  // mid-plan stops between two actions, not after the whole plan. Set before use.
  void SetActingGate(std::function<bool()> gate) { gate_ = std::move(gate); }
  // Plans node `name` and writes the node conditions that differ; re-queues itself on the
  // status queue on failure (rate-limited when retryable). Requires a status queue.
  ReconcileResult WriteNodeStatus(const std::string& name);
  // Called after each action the reconcile lane carried out successfully, before the next
  // one (the daemon's crash-at-every-step test hook). Set before use.
  void SetAfterAction(std::function<void(const plan::Action&)> hook) {
    after_action_ = std::move(hook);
  }
  // Called before each action the reconcile lane carries out, after the plan was made (the
  // daemon's pause-before test hook: what the world does between a plan and its action).
  void SetBeforeAction(std::function<void(const plan::Action&)> hook) {
    before_action_ = std::move(hook);
  }

  // The floor under lending.reservation_update_interval for the cluster's current size:
  // Kubernetes nodes / min(kRefreshShareOfQps * kubernetes.qps, kMaxRefreshWritesPerSecond);
  // zero when unthrottled.
  Clock::Duration MinReservationUpdateInterval() const;

  // Managed nodes and their GPUs by owner (skb_nodes, skb_gpus), as the last reconcile of
  // each node planned it (plan::CountedOwner); a node no reconcile has planned yet (on a
  // follower, every node) is planned for its owner now.
  std::map<std::string, std::pair<size_t, int64_t>> OwnerTotals() const;
  // Per node this reconciler has planned (Slurm name), its owner (plan::CountedOwner's
  // name) and when it first planned it with that owner
  // (skb_node_owner_since_timestamp_seconds): plans that keep the owner do not restart it,
  // so a new leader counts from its takeover. A node whose last plan had no owner, or that
  // left, is absent.
  struct OwnerSince {
    std::string owner;
    Clock::TimePoint since;
  };
  std::map<std::string, OwnerSince> OwnersSince() const;

  // The merged view of one node / of all nodes (bridgectl, the admission snapshot), by the
  // store's one merge: bridgectl and the metrics see the node the reconcile step plans.
  inventory::ManagedNode Node(const std::string& name) const;
  inventory::Inventory Snapshot() const;

 private:
  // Runs `update` on the store under the lock, then queues the nodes it marked.
  void Apply(const std::function<std::vector<std::string>(inventory::Store&)>& update);
  void RecordOwner(const inventory::ManagedNode& node, const plan::NodePlan& plan);
  // Executes one action of result->plan: its outcome recorded and logged, executed counted,
  // result->status set on failure.
  Status ExecuteLogged(const plan::Action& a, ReconcileResult* result);
  // What ExecuteLogged does with an outcome already had (WriteNodeStatus's one write for
  // all of a node's conditions gives each of them its outcome).
  static Status Logged(const plan::Action& a, const StatusOr<Effect>& e, ReconcileResult* result);
  // After a pass over `name`: back-off on a retryable failure, a later look after a refusal,
  // the plan's recheck time otherwise.
  static void Requeue(reconcile::WorkQueue* queue, const std::string& name,
                      const ReconcileResult& result);

  const config::Config cfg_;
  const Clock* const clock_;
  std::function<void(const plan::Action&)> after_action_;
  std::function<void(const plan::Action&)> before_action_;
  ActionExecutor* const executor_;
  reconcile::WorkQueue* const queue_;
  reconcile::WorkQueue* status_queue_ = nullptr;
  std::function<bool()> gate_;

  mutable Mutex mu_;
  inventory::Store store_ GUARDED_BY(mu_);
  std::atomic<size_t> k8s_node_count_{0};  // store_.k8s_nodes().size()

  // The owner each node's last reconcile planned, and its GPUs then (OwnerTotals).
  struct PlannedOwner {
    std::optional<plan::NodeOwner> owner;  // none before the first plan
    int64_t gpus = 0;
    Clock::TimePoint since;  // first plan with this owner (CountedOwner)
    plan::Handover handover = plan::Handover::kNodeLane;
    std::string handover_why;
  };
  mutable Mutex owners_mu_ ACQUIRED_AFTER(mu_);
  std::map<std::string, PlannedOwner> owners_ GUARDED_BY(owners_mu_);  // by Slurm name
};

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "bridge/reconcile/reconciler.h"

#include <algorithm>

#include "bridge/logging.h"
#include "src/base/retry.h"
#include "src/ownership/schema.h"
#include "src/plan/planner.h"

namespace skb::bridge {

Reconciler::Reconciler(const config::Config& cfg, inventory::NodeNameMap names, const Clock* clock,
                       ActionExecutor* executor, reconcile::WorkQueue* queue)
    : cfg_(cfg),
      clock_(clock),
      executor_(executor),
      queue_(queue),
      store_(std::move(names), ownership::kLentAtAnnotation) {}

void Reconciler::Apply(const std::function<std::vector<std::string>(inventory::Store&)>& update) {
  std::vector<std::string> dirty;
  {
    MutexLock lock(&mu_);
    dirty = update(store_);
    k8s_node_count_ = store_.k8s_nodes().size();
  }
  for (const std::string& n : dirty) queue_->Add(n);
}

void Reconciler::UpdateK8sNode(inventory::K8sNode node) {
  Apply([&](inventory::Store& s) { return s.UpdateK8sNode(std::move(node)); });
}

void Reconciler::RemoveK8sNode(const std::string& k8s_name) {
  Apply([&](inventory::Store& s) { return s.RemoveK8sNode(k8s_name); });
}

void Reconciler::UpdatePod(inventory::GpuPod pod) {
  Apply([&](inventory::Store& s) { return s.UpdatePod(std::move(pod)); });
}

void Reconciler::RemovePod(const std::string& ns, const std::string& name) {
  Apply([&](inventory::Store& s) { return s.RemovePod(ns, name); });
}

void Reconciler::UpdateReservation(inventory::GpuPod pod) {
  Apply([&](inventory::Store& s) { return s.UpdateReservation(std::move(pod)); });
}

void Reconciler::RemoveReservation(const std::string& ns, const std::string& name) {
  Apply([&](inventory::Store& s) { return s.RemoveReservation(ns, name); });
}

void Reconciler::SetSlurmNodes(std::vector<slurm::NodeView> nodes) {
  SetSlurm(std::move(nodes), std::nullopt);
}

void Reconciler::SetSlurmJobs(std::vector<slurm::JobView> jobs) {
  SetSlurm(std::nullopt, std::move(jobs));
}

void Reconciler::SetSlurm(std::optional<std::vector<slurm::NodeView>> nodes,
                          std::optional<std::vector<slurm::JobView>> jobs) {
  Apply([&](inventory::Store& s) {
    std::vector<std::string> dirty;
    if (nodes) dirty = s.SetSlurmNodes(std::move(*nodes));
    if (jobs) {
      for (std::string& n : s.SetSlurmJobs(std::move(*jobs))) dirty.push_back(std::move(n));
    }
    return dirty;
  });
}

void Reconciler::SetGpuSharing(std::map<std::string, inventory::GpuSharingView> views) {
  Apply([&](inventory::Store& s) { return s.SetGpuSharing(std::move(views)); });
}

void Reconciler::SetQuotaFacts(ownership::QuotaFacts facts) {
  Apply([&](inventory::Store& s) { return s.SetQuotaFacts(std::move(facts)); });
}

std::map<std::string, devices::PairedNode> Reconciler::PairedNodes() const {
  MutexLock lock(&mu_);
  std::map<std::string, devices::PairedNode> out;
  for (const auto& [slurm_name, k8s] : store_.k8s_nodes()) {
    if (!store_.slurm_nodes().count(slurm_name)) continue;
    devices::PairedNode& p = out[slurm_name];
    p.name = k8s.name;
    p.labels = k8s.labels;
    p.taints = k8s.taints;
    if (const inventory::NodeCondition* c =
            k8s.FindCondition(health::kGpuDevicesHealthyCondition)) {
      p.devices_condition = *c;
    }
    if (auto a = k8s.annotations.find(devices::kUnusedGivesAnnotation);
        a != k8s.annotations.end()) {
      p.unused_gives = devices::ParseUnusedGives(a->second);
    }
  }
  MutexLock owners_lock(&owners_mu_);
  for (auto& [slurm_name, p] : out) {
    p.handover = plan::Handover::kNodeLane;
    if (auto it = owners_.find(slurm_name); it != owners_.end()) {
      p.handover = it->second.handover;
      p.handover_why = it->second.handover_why;
    }
  }
  return out;
}

inventory::ManagedNode Reconciler::Node(const std::string& name) const {
  MutexLock lock(&mu_);
  return store_.Node(name);
}

inventory::Inventory Reconciler::Snapshot() const {
  MutexLock lock(&mu_);
  return store_.Snapshot();
}

plan::NodePlan Reconciler::PlanNode(const std::string& name) const {
  return plan::PlanNode(Node(name), cfg_, clock_->Now(),
                        {.min_reservation_update_interval = MinReservationUpdateInterval()});
}

void Reconciler::RecordOwner(const inventory::ManagedNode& node, const plan::NodePlan& plan) {
  MutexLock lock(&owners_mu_);
  if (!node.k8s && !node.slurm) {
    owners_.erase(node.name);
    return;
  }
  PlannedOwner& p = owners_[node.name];
  if (!p.owner || plan::CountedOwner(*p.owner) != plan::CountedOwner(plan.owner)) {
    p.since = clock_->Now();
  }
  p.owner = plan.owner;
  p.gpus = node.Gpus();
  p.handover = plan.handover;
  p.handover_why = plan.handover_why;
}

std::map<std::string, Reconciler::OwnerSince> Reconciler::OwnersSince() const {
  std::map<std::string, OwnerSince> out;
  MutexLock lock(&owners_mu_);
  for (const auto& [name, p] : owners_) {
    if (!p.owner) continue;
    out.emplace(
        name, OwnerSince{std::string(plan::NodeOwnerName(plan::CountedOwner(*p.owner))), p.since});
  }
  return out;
}

std::map<std::string, std::pair<size_t, int64_t>> Reconciler::OwnerTotals() const {
  std::map<std::string, std::pair<size_t, int64_t>> totals;
  std::vector<std::string> unplanned;
  {
    MutexLock lock(&mu_);
    MutexLock owners_lock(&owners_mu_);
    for (const auto& [name, k] : store_.k8s_nodes()) {
      auto it = owners_.find(name);
      if (it == owners_.end() || !it->second.owner) {
        unplanned.push_back(name);
        continue;
      }
      auto& t = totals[std::string(plan::NodeOwnerName(plan::CountedOwner(*it->second.owner)))];
      t.first += 1;
      t.second += it->second.gpus;
    }
  }
  // Nodes no reconcile has planned yet (a follower acts on none): their owner now.
  const Clock::TimePoint now = clock_->Now();
  for (const auto& name : unplanned) {
    const inventory::ManagedNode node = Node(name);
    auto& t = totals[std::string(
        plan::NodeOwnerName(plan::CountedOwner(plan::PlanOwner(node, cfg_, now))))];
    t.first += 1;
    t.second += node.Gpus();
  }
  return totals;
}

Clock::Duration Reconciler::MinReservationUpdateInterval() const {
  // Job-list refreshes of N reservations at one per interval are N / interval writes per
  // second. They are bookkeeping: they may use half the client's rate limit and at most
  // kMaxRefreshWritesPerSecond, so that lends, returns and status writes keep the rest: a
  // refresh the client cannot make in time would hold every worker in the rate limiter.
  const double qps = cfg_.kubernetes.qps;
  if (qps <= 0) return {};
  const double per_second = std::min(kRefreshShareOfQps * qps, kMaxRefreshWritesPerSecond);
  const double seconds = static_cast<double>(k8s_node_count_.load()) / per_second;
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(seconds));
}

ReconcileResult Reconciler::ReconcileNode(const std::string& name) {
  ReconcileResult result;
  const inventory::ManagedNode node = Node(name);
  result.plan = plan::PlanNode(node, cfg_, clock_->Now(),
                               {.min_reservation_update_interval = MinReservationUpdateInterval()});
  RecordOwner(node, result.plan);
  auto log = Logger("reconcile");
  const auto is_condition = [](const plan::Action& a) { return plan::IsStatusLaneCondition(a); };
  // Conditions mirror Slurm's state, whatever becomes of the other actions: queued even if
  // one of those fails.
  if (status_queue_ != nullptr &&
      std::any_of(result.plan.actions.begin(), result.plan.actions.end(), is_condition)) {
    status_queue_->Add(name);
  }
  // Chain by chain: a failure stops only the actions that may depend on it (drain before
  // requeue); the others still run (plan::RunChains).
  bool gated = false;
  plan::RunChains(result.plan.actions, [&](const plan::Action& a) {
    // With a status lane, WriteNodeStatus writes it, from the state it sees then.
    if (status_queue_ != nullptr && is_condition(a)) return OkStatus();
    if (gated || (gate_ && !gate_())) {
      if (!gated) {
        log->warn("acting_stopped node={} next=\"{}\": this replica no longer holds a valid lease",
                  name, plan::ToString(a));
        result.status = CancelledError("no longer the leader");
      }
      gated = true;
      return CancelledError("no longer the leader");
    }
    if (before_action_) before_action_(a);
    Status s = ExecuteLogged(a, &result);
    if (s.ok() && after_action_) after_action_(a);
    return s;
  });
  Requeue(queue_, name, result);
  return result;
}

ReconcileResult Reconciler::WriteNodeStatus(const std::string& name) {
  ReconcileResult result;
  if (status_queue_ == nullptr) {
    result.status = FailedPreconditionError("WriteNodeStatus without a status queue");
    return result;
  }
  // The conditions alone: ownership is the reconcile lane's. All of them in one write.
  result.plan = health::PlanNodeConditions(Node(name), cfg_.health, clock_->Now());
  if (!result.plan.actions.empty()) {
    if (gate_ && !gate_()) {
      result.status = CancelledError("no longer the leader");
    } else {
      StatusOr<Effect> e = executor_->ExecuteConditions(result.plan.actions);
      for (const plan::Action& a : result.plan.actions) (void)Logged(a, e, &result);
    }
  }
  Requeue(status_queue_, name, result);
  return result;
}

Status Reconciler::ExecuteLogged(const plan::Action& a, ReconcileResult* result) {
  return Logged(a, executor_->Execute(a), result);
}

Status Reconciler::Logged(const plan::Action& a, const StatusOr<Effect>& e,
                          ReconcileResult* result) {
  result->outcomes.emplace_back(static_cast<size_t>(&a - result->plan.actions.data()), e);
  const Status& s = e.status();
  auto log = Logger("reconcile");
  if (s.ok()) {
    ++result->executed;
    log->info("action {} outcome=ok effect={}", plan::ToString(a), EffectName(*e));
  } else {
    log->warn("action {} outcome=error code={} error=\"{}\"", plan::ToString(a),
              StatusCodeName(s.code()), s.message());
    // The failure that decides the requeue: a retryable one (retried with back-off) wins
    // over a refusal (looked at again after kRefusedRecheck).
    if (result->status.ok() || (IsRetryable(s) && !IsRetryable(result->status))) {
      result->status = s;
    }
  }
  return s;
}

void Reconciler::Requeue(reconcile::WorkQueue* queue, const std::string& name,
                         const ReconcileResult& result) {
  if (!result.status.ok() && IsRetryable(result.status)) {
    queue->AddRateLimited(name);
  } else {
    queue->Forget(name);
    // Actions change what we observe; the informers and the poller report it back, which
    // re-queues the node. A grace period ending is not observed: schedule it.
    if (result.plan.recheck_at) queue->AddAt(name, *result.plan.recheck_at);
    // Refused (FailedPrecondition: someone else's pod has the reservation's name, the
    // namespace is gone, Slurm refuses a requeue...): what would unblock it may be a change
    // the caches never see (a pod without GPUs deleted, a namespace created). Look again
    // later; the Warning Event is aggregated by the recorder.
    if (!result.status.ok()) queue->AddAfter(name, kRefusedRecheck);
  }
}

}  // namespace skb::bridge

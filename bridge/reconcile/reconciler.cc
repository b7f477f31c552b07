#include "bridge/reconcile/reconciler.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "bridge/logging.h"
#include "src/base/retry.h"
#include "src/base/strings.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/schema.h"
#include "src/plan/planner.h"

namespace skb::bridge {
namespace {

bool HoldsNode(const slurm::JobView& j) {
  return j.state == skb::slurm::JobState::kRunning || j.state == skb::slurm::JobState::kSuspended ||
         j.completing;
}

// What of a Slurm node the planner looks at; a change in any of it makes the node dirty.
std::string Fingerprint(const slurm::NodeView& n) {
  std::string f = StrCat(n.StateString(), "|", n.reason, "|", n.reason_uid, "|");
  for (const auto& x : n.features) StrAppend(&f, x, ",");
  StrAppend(&f, "|");
  for (const auto& x : n.active_features) StrAppend(&f, x, ",");
  return f;
}

std::string JobFingerprint(const slurm::JobView& j) {
  std::string f = StrCat(static_cast<int>(j.state), "|", j.completing, "|", j.requeue, "|");
  for (const auto& n : j.nodes) StrAppend(&f, n, ",");
  return f;
}

}  // namespace

Reconciler::Reconciler(const config::Config& cfg, inventory::NodeNameMap names, const Clock* clock,
                       ActionExecutor* executor, reconcile::WorkQueue* queue)
    : cfg_(cfg), names_(std::move(names)), clock_(clock), executor_(executor), queue_(queue) {}

void Reconciler::UpdateK8sNode(inventory::K8sNode node) {
  std::string name = names_.SlurmName(node).value_or(node.name);
  std::string renamed_from;
  {
    MutexLock lock(&mu_);
    // A relabelled node (label mode) pairs anew: it leaves its old Slurm name.
    if (auto it = k8s_to_slurm_.find(node.name); it != k8s_to_slurm_.end() && it->second != name) {
      renamed_from = it->second;
      k8s_nodes_.erase(renamed_from);
    }
    k8s_to_slurm_[node.name] = name;
    k8s_nodes_[name] = std::move(node);
    k8s_node_count_ = k8s_nodes_.size();
  }
  queue_->Add(name);
  if (!renamed_from.empty()) queue_->Add(renamed_from);
}

void Reconciler::RemoveK8sNode(const std::string& k8s_name) {
  std::string name;
  {
    MutexLock lock(&mu_);
    name = SlurmNameLocked(k8s_name);
    k8s_to_slurm_.erase(k8s_name);
    k8s_nodes_.erase(name);
    k8s_node_count_ = k8s_nodes_.size();
  }
  queue_->Add(name);
}

std::string Reconciler::SlurmNameLocked(const std::string& k8s_name) const {
  if (auto it = k8s_to_slurm_.find(k8s_name); it != k8s_to_slurm_.end()) return it->second;
  return names_.SlurmName(k8s_name);
}

// The node a pod concerns: where it is bound, or the node kube-scheduler nominated for it.
std::string Reconciler::PodNodeLocked(const inventory::GpuPod& p) const {
  const std::string& k8s_name = p.node_name.empty() ? p.nominated_node_name : p.node_name;
  return k8s_name.empty() ? "" : SlurmNameLocked(k8s_name);
}

void Reconciler::UpdatePod(inventory::GpuPod pod) { UpdatePodIn(&pods_, std::move(pod)); }

void Reconciler::RemovePod(const std::string& ns, const std::string& name) {
  RemovePodFrom(&pods_, ns, name);
}

void Reconciler::UpdateReservation(inventory::GpuPod pod) {
  UpdatePodIn(&reservations_, std::move(pod));
}

void Reconciler::RemoveReservation(const std::string& ns, const std::string& name) {
  RemovePodFrom(&reservations_, ns, name);
}

void Reconciler::UpdatePodIn(std::map<std::string, inventory::GpuPod>* pods,
                             inventory::GpuPod pod) {
  std::string key = StrCat(pod.namespace_name, "/", pod.name);
  std::string node;
  std::string old_node;
  {
    MutexLock lock(&mu_);
    node = PodNodeLocked(pod);
    if (auto it = pods->find(key); it != pods->end()) old_node = PodNodeLocked(it->second);
    (*pods)[key] = std::move(pod);
  }
  if (!node.empty()) queue_->Add(node);
  if (!old_node.empty() && old_node != node) queue_->Add(old_node);
}

void Reconciler::RemovePodFrom(std::map<std::string, inventory::GpuPod>* pods,
                               const std::string& ns, const std::string& name) {
  std::string node;
  {
    MutexLock lock(&mu_);
    auto it = pods->find(StrCat(ns, "/", name));
    if (it == pods->end()) return;
    node = PodNodeLocked(it->second);
    pods->erase(it);
  }
  if (!node.empty()) queue_->Add(node);
}

std::vector<const inventory::GpuPod*> Reconciler::PodsLocked() const {
  std::vector<const inventory::GpuPod*> out;
  out.reserve(reservations_.size() + pods_.size());
  for (const auto& [key, p] : reservations_) out.push_back(&p);
  for (const auto& [key, p] : pods_) {
    if (!reservations_.count(key)) out.push_back(&p);
  }
  return out;
}

void Reconciler::SetSlurmNodes(std::vector<slurm::NodeView> nodes) {
  std::vector<std::string> dirty;
  {
    MutexLock lock(&mu_);
    std::map<std::string, slurm::NodeView> next;
    for (auto& n : nodes) {
      auto it = slurm_nodes_.find(n.name);
      if (it == slurm_nodes_.end() || Fingerprint(it->second) != Fingerprint(n)) {
        dirty.push_back(n.name);
      }
      std::string name = n.name;
      next.emplace(std::move(name), std::move(n));
    }
    for (const auto& [name, unused] : slurm_nodes_) {
      if (!next.count(name)) dirty.push_back(name);
    }
    slurm_nodes_ = std::move(next);
  }
  for (const auto& n : dirty) queue_->Add(n);
}

namespace {

// The keys whose value differs between `a` and `b` (present in one only, or changed).
template <typename K, typename V>
std::set<K> ChangedKeys(const std::map<K, V>& a, const std::map<K, V>& b) {
  std::set<K> changed;
  for (const auto* m : {&a, &b}) {
    const auto* other = m == &a ? &b : &a;
    for (const auto& [key, value] : *m) {
      auto it = other->find(key);
      if (it == other->end() || it->second != value) changed.insert(key);
    }
  }
  return changed;
}

}  // namespace

void Reconciler::SetQuotaFacts(ownership::QuotaFacts facts) {
  std::set<std::string> dirty;
  {
    MutexLock lock(&mu_);
    if (facts == quota_) return;
    const std::set<uint32_t> changed = ChangedKeys(facts.guaranteed_jobs, quota_.guaranteed_jobs);
    for (const std::string& node : ChangedKeys(facts.reclaims, quota_.reclaims)) {
      dirty.insert(SlurmNameLocked(node));
    }
    for (const std::string& pod : ChangedKeys(facts.borrowing_pods, quota_.borrowing_pods)) {
      auto it = pods_.find(pod);
      if (it != pods_.end() && !it->second.nominated_node_name.empty()) {
        dirty.insert(SlurmNameLocked(it->second.nominated_node_name));
      }
    }
    // A heterogeneous job is judged whole: every component's node.
    std::set<uint32_t> het;
    for (uint32_t id : changed) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;  // not running here (yet): SetSlurmJobs marks it
      dirty.insert(it->second.nodes.begin(), it->second.nodes.end());
      if (it->second.het_job_id != 0) het.insert(it->second.het_job_id);
    }
    for (const auto& [id, j] : jobs_) {
      if (j.het_job_id != 0 && het.count(j.het_job_id))
        dirty.insert(j.nodes.begin(), j.nodes.end());
    }
    quota_ = std::move(facts);
  }
  for (const auto& n : dirty) queue_->Add(n);
}

void Reconciler::SetGpuSharing(std::map<std::string, inventory::GpuSharingView> views) {
  std::set<std::string> dirty;
  {
    MutexLock lock(&mu_);
    if (views == gpu_sharing_) return;
    dirty = ChangedKeys(views, gpu_sharing_);
    gpu_sharing_ = std::move(views);
  }
  for (const auto& n : dirty) queue_->Add(n);
}

std::map<std::string, devices::PairedNode> Reconciler::PairedNodes() const {
  MutexLock lock(&mu_);
  std::map<std::string, devices::PairedNode> out;
  for (const auto& [slurm_name, k8s] : k8s_nodes_) {
    if (!slurm_nodes_.count(slurm_name)) continue;
    devices::PairedNode& p = out[slurm_name];
    p.name = k8s.name;
    p.labels = k8s.labels;
    p.taints = k8s.taints;
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

void Reconciler::SetSlurmJobs(std::vector<slurm::JobView> jobs) {
  std::set<std::string> dirty;
  {
    MutexLock lock(&mu_);
    std::map<uint32_t, slurm::JobView> next;
    std::map<uint32_t, slurm::JobView> ended;
    for (auto& j : jobs) {
      if (!HoldsNode(j)) {
        if (EndedOnLentNodeLocked(j)) {
          if (!ended_jobs_.count(j.job_id)) dirty.insert(j.nodes.begin(), j.nodes.end());
          uint32_t id = j.job_id;
          ended.emplace(id, std::move(j));
        }
        continue;
      }
      auto it = jobs_.find(j.job_id);
      if (it == jobs_.end() || JobFingerprint(it->second) != JobFingerprint(j)) {
        dirty.insert(j.nodes.begin(), j.nodes.end());
        if (it != jobs_.end()) dirty.insert(it->second.nodes.begin(), it->second.nodes.end());
      }
      uint32_t id = j.job_id;
      next.emplace(id, std::move(j));
    }
    for (const auto& [id, j] : jobs_) {
      if (!next.count(id)) dirty.insert(j.nodes.begin(), j.nodes.end());
    }
    // A change of one component of a heterogeneous job changes the policy of the nodes of
    // every other component.
    std::set<uint32_t> het_changed;
    for (const auto* m : {&jobs_, &next}) {
      for (const auto& [id, j] : *m) {
        if (j.het_job_id == 0) continue;
        for (const std::string& n : j.nodes) {
          if (dirty.count(n)) het_changed.insert(j.het_job_id);
        }
      }
    }
    for (const auto& [id, j] : next) {
      if (het_changed.count(j.het_job_id)) dirty.insert(j.nodes.begin(), j.nodes.end());
    }
    jobs_ = std::move(next);
    ended_jobs_ = std::move(ended);
  }
  for (const auto& n : dirty) queue_->Add(n);
}

bool Reconciler::EndedOnLentNodeLocked(const slurm::JobView& j) const {
  if (j.state == skb::slurm::JobState::kPending || j.requeue_pending) return false;
  for (const std::string& n : j.nodes) {
    auto it = k8s_nodes_.find(n);
    if (it != k8s_nodes_.end() && it->second.annotations.count(ownership::kLentAtAnnotation)) {
      return true;
    }
  }
  return false;
}

inventory::ManagedNode Reconciler::NodeLocked(const std::string& name) const {
  inventory::ManagedNode m;
  m.name = name;
  if (auto it = gpu_sharing_.find(name); it != gpu_sharing_.end()) m.gpu_sharing = it->second;
  if (auto it = k8s_nodes_.find(name); it != k8s_nodes_.end()) {
    m.k8s = it->second;
    if (auto r = quota_.reclaims.find(it->second.name); r != quota_.reclaims.end()) {
      m.reclaim = r->second;
    }
  }
  if (auto it = slurm_nodes_.find(name); it != slurm_nodes_.end()) m.slurm = it->second;
  std::set<uint32_t> het;
  for (const auto& [id, j] : jobs_) {
    if (std::find(j.nodes.begin(), j.nodes.end(), name) != j.nodes.end()) {
      m.jobs.push_back(j);
      if (j.het_job_id != 0) het.insert(j.het_job_id);
    }
  }
  // A heterogeneous job is preempted whole: the planner judges it by every component.
  for (const auto& [id, j] : jobs_) {
    if (j.het_job_id != 0 && het.count(j.het_job_id)) m.het_jobs.push_back(j);
  }
  for (const auto* list : {&m.jobs, &m.het_jobs}) {
    for (const slurm::JobView& j : *list) {
      if (auto g = quota_.guaranteed_jobs.find(j.job_id); g != quota_.guaranteed_jobs.end()) {
        m.guaranteed_jobs.emplace(g->first, g->second);
      }
    }
  }
  for (const auto& [id, j] : ended_jobs_) {
    if (std::find(j.nodes.begin(), j.nodes.end(), name) != j.nodes.end()) {
      m.ended_jobs.push_back(j);
    }
  }
  for (const inventory::GpuPod* p : PodsLocked()) {
    if (!p->node_name.empty()) {
      if (SlurmNameLocked(p->node_name) == name) m.pods.push_back(*p);
    } else if (!p->nominated_node_name.empty() && SlurmNameLocked(p->nominated_node_name) == name) {
      m.nominated_pods.push_back(*p);
      const std::string key = StrCat(p->namespace_name, "/", p->name);
      if (auto b = quota_.borrowing_pods.find(key); b != quota_.borrowing_pods.end()) {
        m.borrowing_nominated.emplace(key, b->second);
      }
    }
  }
  return m;
}

inventory::ManagedNode Reconciler::Node(const std::string& name) const {
  MutexLock lock(&mu_);
  return NodeLocked(name);
}

inventory::Inventory Reconciler::Snapshot() const {
  MutexLock lock(&mu_);
  std::vector<inventory::K8sNode> k;
  std::vector<slurm::NodeView> s;
  std::vector<slurm::JobView> j;
  std::vector<inventory::GpuPod> p;
  for (const auto& [n, v] : k8s_nodes_) k.push_back(v);
  for (const auto& [n, v] : slurm_nodes_) s.push_back(v);
  for (const auto& [n, v] : jobs_) j.push_back(v);
  for (const auto& [n, v] : ended_jobs_) j.push_back(v);
  for (const inventory::GpuPod* v : PodsLocked()) p.push_back(*v);
  return inventory::Inventory::Build(std::move(k), std::move(s), j, std::move(p), names_);
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
  if (p.owner.empty() || plan::CountedOwner(p.owner) != plan::CountedOwner(plan.owner)) {
    p.since = clock_->Now();
  }
  p.owner = plan.owner;
  p.gpus = node.Gpus();
  p.handover = plan.handover;
  p.handover_why = plan.handover_why;
}

std::map<std::string, Clock::Duration> Reconciler::OldestByOwner() const {
  const Clock::TimePoint now = clock_->Now();
  std::map<std::string, Clock::Duration> oldest;
  MutexLock lock(&owners_mu_);
  for (const auto& [name, p] : owners_) {
    auto [it, added] = oldest.emplace(std::string(plan::CountedOwner(p.owner)), now - p.since);
    if (!added) it->second = std::max(it->second, now - p.since);
  }
  return oldest;
}

std::map<std::string, std::pair<size_t, int64_t>> Reconciler::OwnerTotals() const {
  std::map<std::string, std::pair<size_t, int64_t>> totals;
  std::vector<std::string> unplanned;
  {
    MutexLock lock(&mu_);
    MutexLock owners_lock(&owners_mu_);
    for (const auto& [name, k] : k8s_nodes_) {
      auto it = owners_.find(name);
      if (it == owners_.end()) {
        unplanned.push_back(name);
        continue;
      }
      auto& t = totals[std::string(plan::CountedOwner(it->second.owner))];
      t.first += 1;
      t.second += it->second.gpus;
    }
  }
  // Nodes no reconcile has planned yet (a follower acts on none): their owner now.
  const Clock::TimePoint now = clock_->Now();
  for (const auto& name : unplanned) {
    const inventory::ManagedNode node = Node(name);
    auto& t = totals[std::string(plan::CountedOwner(plan::PlanOwner(node, cfg_, now)))];
    t.first += 1;
    t.second += node.Gpus();
  }
  return totals;
}

Clock::Duration Reconciler::MinReservationUpdateInterval() const {
  // Job-list refreshes of N reservations at one per interval are N / interval writes per
  // second. They are bookkeeping: they may use half the client's rate limit, never more, so
  // that lends, returns and status writes keep the rest: a refresh the client cannot make
  // in time would hold every worker in the rate limiter.
  const double qps = cfg_.kubernetes.qps;
  if (qps <= 0) return {};
  const double seconds = static_cast<double>(k8s_node_count_.load()) / (kRefreshShareOfQps * qps);
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(seconds));
}

ReconcileResult Reconciler::ReconcileNode(const std::string& name) {
  ReconcileResult result;
  const inventory::ManagedNode node = Node(name);
  result.plan = plan::PlanNode(node, cfg_, clock_->Now(),
                               {.min_reservation_update_interval = MinReservationUpdateInterval()});
  RecordOwner(node, result.plan);
  auto log = Logger("reconcile");
  const auto is_condition = [](const plan::Action& a) { return a.Is<plan::SetNodeCondition>(); };
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
  // The conditions alone: ownership is the reconcile lane's.
  result.plan = health::PlanNodeConditions(Node(name), cfg_.health, clock_->Now());
  for (const plan::Action& a : result.plan.actions) {
    if (gate_ && !gate_()) {
      result.status = CancelledError("no longer the leader");
      break;
    }
    if (!ExecuteLogged(a, &result).ok()) break;
  }
  Requeue(status_queue_, name, result);
  return result;
}

Status Reconciler::ExecuteLogged(const plan::Action& a, ReconcileResult* result) {
  StatusOr<Effect> e = executor_->Execute(a);
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

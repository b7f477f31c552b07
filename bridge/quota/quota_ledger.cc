// SPDX-License-Identifier: Apache-2.0
#include "bridge/quota/quota_ledger.h"

#include "src/base/strings.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/time_codec.h"
#include "src/quota/guarantee_quota.h"

namespace skb::bridge {
namespace {

// The fields a classification reads from a pod.
bool SameForQuotas(const inventory::GpuPod& a, const inventory::GpuPod& b) {
  return a.node_name == b.node_name && a.gpus == b.gpus && a.phase == b.phase &&
         a.terminating == b.terminating && a.reservation == b.reservation &&
         a.priority == b.priority && a.gpu_model == b.gpu_model && a.started == b.started &&
         a.claims == b.claims && a.unresolved_claims == b.unresolved_claims;
}

}  // namespace

QuotaLedger::QuotaLedger(const config::Config* cfg, const Clock* clock)
    : cfg_(*cfg), clock_(clock) {}

void QuotaLedger::SetSlurmJobs(const std::vector<slurm::JobView>& jobs) {
  if (!enabled()) return;
  std::vector<slurm::JobView> kept;
  for (const slurm::JobView& j : jobs) {
    // Finished jobs and jobs without GPUs never count (Observe skips them too).
    if (j.gpus_per_node <= 0) continue;
    if (j.state != slurm::JobState::kPending && j.state != slurm::JobState::kRunning &&
        j.state != slurm::JobState::kSuspended && !j.completing) {
      continue;
    }
    kept.push_back(j);
  }
  MutexLock lock(&mu_);
  jobs_ = std::move(kept);
  RecomputeLocked();
}

void QuotaLedger::SetSlurmNodes(const std::vector<slurm::NodeView>& nodes) {
  if (!enabled()) return;
  std::map<std::string, std::string> types;
  for (const slurm::NodeView& n : nodes) {
    for (const slurm::GpuCount& g : n.gpus) {
      if (!g.type.empty()) {
        types[n.name] = g.type;
        break;
      }
    }
  }
  MutexLock lock(&mu_);
  if (types == slurm_gpu_types_) return;
  slurm_gpu_types_ = std::move(types);
  RecomputeLocked();
}

void QuotaLedger::UpdatePod(const inventory::GpuPod& pod) {
  if (!enabled()) return;
  const std::string key = StrCat(pod.namespace_name, "/", pod.name);
  MutexLock lock(&mu_);
  auto it = pods_.find(key);
  if (it != pods_.end() && SameForQuotas(it->second, pod)) return;
  inventory::GpuPod& kept = pods_[key];
  kept.namespace_name = pod.namespace_name;
  kept.name = pod.name;
  kept.node_name = pod.node_name;
  kept.gpus = pod.gpus;
  kept.phase = pod.phase;
  kept.terminating = pod.terminating;
  kept.reservation = pod.reservation;
  kept.priority = pod.priority;
  kept.gpu_model = pod.gpu_model;
  kept.started = pod.started;  // a reclaim's minimum run time counts from it
  kept.claims = pod.claims;
  kept.unresolved_claims = pod.unresolved_claims;
  RecomputeLocked();
}

void QuotaLedger::SetClaim(const std::string& key, std::optional<devices::ClaimDemand> gpus) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  auto it = claims_.find(key);
  if (!gpus) {
    if (it == claims_.end()) return;
    claims_.erase(it);
  } else if (it == claims_.end()) {
    claims_.emplace(key, std::move(*gpus));
  } else if (it->second == *gpus) {
    return;
  } else {
    it->second = std::move(*gpus);
  }
  RecomputeLocked();
}

void QuotaLedger::AddClaimGpusLocked(inventory::GpuPod* pod) const {
  std::vector<std::string> why;
  for (const std::string& key : pod->claims) {
    auto c = claims_.find(key);
    if (c == claims_.end()) {
      why.push_back(StrCat("ResourceClaim ", key, " not seen yet"));
    } else if (!c->second.unknown.empty()) {
      why.push_back(StrCat("ResourceClaim ", key, ": ", c->second.unknown));
    } else {
      pod->gpus += c->second.gpus;
    }
  }
  if (pod->unresolved_claims > 0) {
    why.push_back(StrCat(pod->unresolved_claims, " claim",
                         pod->unresolved_claims == 1 ? " of its templates" : "s of its templates",
                         " not generated yet"));
  }
  pod->uncounted = StrJoin(why, "; ");
}

void QuotaLedger::RemovePod(const std::string& ns, const std::string& name) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  if (pods_.erase(StrCat(ns, "/", name)) == 0) return;
  RecomputeLocked();
}

void QuotaLedger::SetManagedNode(const std::string& k8s_name, bool managed,
                                 std::optional<quota::LentNode> lent, std::string slurm_name,
                                 std::string gpu_product) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  bool changed = managed ? managed_.insert(k8s_name).second : managed_.erase(k8s_name) > 0;
  if (managed) {
    K8sNodeNames names{.slurm_name = slurm_name.empty() ? k8s_name : std::move(slurm_name),
                       .gpu_product = std::move(gpu_product)};
    auto [it, added] = k8s_nodes_.try_emplace(k8s_name, names);
    if (!added && !(it->second == names)) {
      it->second = std::move(names);
      changed = true;
    }
  } else {
    changed = k8s_nodes_.erase(k8s_name) > 0 || changed;
  }
  if (!managed) lent.reset();
  auto it = lent_.find(k8s_name);
  if (lent) {
    lent->name = k8s_name;
    if (it == lent_.end() || !(it->second == *lent)) {
      lent_[k8s_name] = *lent;
      changed = true;
    }
  } else if (it != lent_.end()) {
    lent_.erase(it);
    changed = true;
  }
  if (changed) RecomputeLocked();
}

void QuotaLedger::SetOnQuotaFacts(std::function<void(const ownership::QuotaFacts&)> fn) {
  MutexLock lock(&mu_);
  on_facts_ = std::move(fn);
  facts_.reset();
}

std::shared_ptr<const quota::Observation> QuotaLedger::Current() const {
  if (!enabled()) return nullptr;
  MutexLock lock(&mu_);
  if (current_ == nullptr) {
    // Nothing observed yet: every tenant at zero.
    return std::make_shared<const quota::Observation>(
        quota::Observe(cfg_, {}, {}, {}, clock_->Now()));
  }
  return current_;
}

void QuotaLedger::RecomputeLocked() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<inventory::GpuPod> pods;
  pods.reserve(pods_.size());
  for (const auto& [key, p] : pods_) {
    pods.push_back(p);
    AddClaimGpusLocked(&pods.back());
  }
  const Clock::TimePoint now = clock_->Now();
  // GPU types by node name, Slurm's and Kubernetes': the Slurm node's GRES type, else the
  // paired Kubernetes node's nvidia.com/gpu.product label.
  std::map<std::string, std::string, std::less<>> types(slurm_gpu_types_.begin(),
                                                        slurm_gpu_types_.end());
  for (const auto& [k8s_name, names] : k8s_nodes_) {
    auto slurm = slurm_gpu_types_.find(names.slurm_name);
    const std::string type = slurm != slurm_gpu_types_.end() ? slurm->second : names.gpu_product;
    if (type.empty()) continue;
    types[k8s_name] = type;
    types.try_emplace(names.slurm_name, type);
  }
  quota::Observation o = quota::Observe(cfg_, jobs_, pods, managed_, now, types);
  std::vector<quota::LentNode> lent;
  lent.reserve(lent_.size());
  for (const auto& [name, n] : lent_) {
    lent.push_back(n);
    auto t = types.find(name);
    lent.back().gpu_type = t != types.end() ? t->second : "";
  }
  o.reclaims = quota::PlanReclaims(
      cfg_.quotas, o, lent, ownership::ToUnix(now),
      {.min_run_time_s =
           std::chrono::duration_cast<std::chrono::seconds>(cfg_.quotas.reclaim_min_run_time)
               .count()});
  current_ = std::make_shared<const quota::Observation>(std::move(o));
  last_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  ++computations_;
  if (on_facts_) {
    ownership::QuotaFacts f{.guaranteed_jobs = quota::GuaranteedJobs(*current_),
                            .borrowing_pods = quota::BorrowingPendingPods(cfg_.quotas, *current_)};
    for (const quota::Reclaim& r : current_->reclaims) {
      f.reclaims[r.node] = {
          .tenant = r.tenant, .job_id = r.job_id, .victims = r.victims, .why = r.why};
    }
    if (!facts_ || *facts_ != f) {
      on_facts_(f);
      facts_ = std::move(f);
    }
  }
}

void ExportQuotaMetrics(const quota::QuotaConfig& config, const quota::Observation& o,
                        observability::BridgeMetrics* m) {
  // Work of no tenant comes and goes: its series drop to 0 rather than stay stale.
  for (const char* state : {"guaranteed", "borrowed"}) {
    m->tenant_gpus.WithLabels({"(none)", state}).Set(0);
  }
  m->tenant_pending_gpus.WithLabels({"(none)"}).Set(0);
  for (const auto& [tenant, room] : quota::NonPreemptibleRoom(config, o)) {
    m->tenant_nonpreemptible_room_gpus.WithLabels({tenant}).Set(static_cast<double>(room));
  }
  for (const quota::TenantRow& row : quota::TenantRows(config, o)) {
    const std::string tenant = row.name.empty() ? std::string("(none)") : row.name;
    const int in_use = row.in_use_slurm + row.in_use_kubernetes;
    m->tenant_gpus.WithLabels({tenant, "guaranteed"}).Set(in_use - row.borrowed);
    m->tenant_gpus.WithLabels({tenant, "borrowed"}).Set(row.borrowed);
    m->tenant_guarantee_gpus.WithLabels({tenant}).Set(row.guaranteed);
    m->tenant_pending_gpus.WithLabels({tenant}).Set(row.pending);
    m->tenant_reclaiming_gpus.WithLabels({tenant}).Set(row.reclaiming);
    if (!row.per_type) continue;
    // The types it names, and "(other)": a set fixed by the config, so no series goes stale
    // when the work of some type ends.
    const quota::Tenant& t = *config.Find(row.name);
    std::map<std::string, std::pair<int, int>> by_label;  // type -> guaranteed, borrowed
    for (const auto& [type, n] : t.guaranteed_by_type) by_label[type];
    for (const auto& [type, n] : t.limit_by_type) by_label[type];
    by_label["(other)"];
    for (const quota::TypeRow& tr : row.types) {
      auto it = by_label.find(tr.type);
      auto& [guaranteed, borrowed] = (it != by_label.end() ? it : by_label.find("(other)"))->second;
      guaranteed += tr.in_use - tr.borrowed;
      borrowed += tr.borrowed;
    }
    for (const auto& [type, v] : by_label) {
      m->tenant_type_gpus.WithLabels({tenant, type, "guaranteed"}).Set(v.first);
      m->tenant_type_gpus.WithLabels({tenant, type, "borrowed"}).Set(v.second);
      if (type != "(other)") {
        m->tenant_type_guarantee_gpus.WithLabels({tenant, type}).Set(t.FloorFor(type));
      }
    }
  }
}

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "src/quota/observe.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

#include "src/base/strings.h"
#include "src/config/config.h"
#include "src/devices/observe.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"
#include "src/plan/action.h"

namespace skb::quota {
namespace {

std::string TenantOfAccount(const QuotaConfig& q, std::string_view account) {
  const Tenant* t = q.ForAccount(account);
  return t != nullptr ? t->name : std::string();
}

std::string TenantOfNamespace(const QuotaConfig& q, std::string_view ns) {
  const Tenant* t = q.ForNamespace(ns);
  return t != nullptr ? t->name : std::string();
}

std::string Gpus(int64_t n) { return GpusOfType(n, ""); }

// "8 GPUs" or, for a per-type floor, "8 h100 GPUs": the floor `f` counts against.
std::string FloorGpus(const FloorShare& f) { return GpusOfType(f.floor, f.per_type ? f.type : ""); }

}  // namespace

Observation Observe(const config::Config& cfg, const std::vector<slurm::JobView>& jobs,
                    const std::vector<inventory::GpuPod>& pods,
                    const std::set<std::string, std::less<>>& managed_nodes, Clock::TimePoint now,
                    const std::map<std::string, std::string, std::less<>>& gpu_types) {
  Observation o;
  auto type_of = [&](const std::string& node, const std::string& otherwise) {
    auto it = gpu_types.find(node);
    return it != gpu_types.end() && !it->second.empty() ? it->second : otherwise;
  };
  o.at = now;
  const QuotaConfig& q = cfg.quotas;
  const int64_t now_unix = ownership::ToUnix(now);
  std::vector<Work> running;
  for (const slurm::JobView& j : jobs) {
    if (j.gpus_per_node <= 0) continue;
    // The bridge's placeholder holds in Slurm the GPUs a pod runs on: the pod counts them
    // (for its tenant), the placeholder would count them a second time.
    if (devices::IsPlaceholder(j)) continue;
    const bool holds = j.HoldsNodes() && !j.nodes.empty();
    const bool pending = j.state == slurm::JobState::kPending && !j.Held();
    if (!holds && !pending) continue;
    ObservedWork w;
    w.job_id = j.job_id;
    w.running = holds;
    w.account = j.account;
    w.where = holds ? StrJoin(j.nodes, ",") : "";
    w.waits_for_resources =
        pending && (j.state_reason == "Resources" || j.state_reason.starts_with("ReqNodeNotAvail"));
    const ownership::JobPolicy policy = ownership::PolicyFor(j, cfg, now);
    w.preemptible_why = policy.why;
    Work& work = w.work;
    work.id = StrCat("slurm/", j.job_id);
    work.tenant = TenantOfAccount(q, j.account);
    work.side = Side::kSlurm;
    // Running: what each node holds; pending: the whole request (a 2-node job asking 4 per
    // node waits for 8).
    const int64_t gpus =
        holds ? j.AllocatedGpus() : (j.requested_gpus > 0 ? j.requested_gpus : j.gpus_per_node);
    work.gpus = static_cast<int>(std::min<int64_t>(gpus, 1'000'000));
    work.priority = j.priority;
    work.preemptible = policy.preemptible;
    work.started_at = holds ? j.start_time : j.submit_time;  // pending: since submit
    work.work_lost_s =
        holds && j.start_time > 0 ? std::max<int64_t>(0, now_unix - j.start_time) : 0;
    work.gpu_type = holds ? type_of(j.nodes.front(), j.gpu_type) : j.gpu_type;
    if (holds) {
      running.push_back(work);
    } else {
      o.pending_gpus[work.tenant] += work.gpus;
      o.pending_by_type[work.tenant][work.gpu_type] += work.gpus;
    }
    o.work.push_back(std::move(w));
  }
  for (const inventory::GpuPod& p : pods) {
    if (p.reservation || p.phase == "Succeeded" || p.phase == "Failed") continue;
    // A pending pod whose claims are not all counted yet is kept at what is known (it
    // borrows: BorrowingPendingPods); a bound one counts what is known, if anything.
    if (p.gpus <= 0 && (p.uncounted.empty() || !p.node_name.empty())) continue;
    const bool bound = !p.node_name.empty();
    if (bound && !managed_nodes.count(p.node_name)) continue;  // not in the shared pool
    if (!bound && (p.phase != "Pending" || p.terminating)) continue;
    ObservedWork w;
    w.running = bound;
    w.account = p.namespace_name;
    w.uncounted = p.uncounted;
    w.where = p.node_name;
    const bool preemptible = p.priority < cfg.lending.protected_class.value;
    w.preemptible_why =
        preemptible ? StrCat("priority ", p.priority, " is below the protected class (",
                             cfg.lending.protected_class.value, ")")
                    : StrCat("priority ", p.priority, " is at or above the protected class (",
                             cfg.lending.protected_class.value, ")");
    Work& work = w.work;
    w.pod = StrCat(p.namespace_name, "/", p.name);
    work.id = StrCat("k8s/", w.pod);
    work.tenant = TenantOfNamespace(q, p.namespace_name);
    work.side = Side::kKubernetes;
    work.gpus = static_cast<int>(std::min<int64_t>(p.gpus, 1'000'000));
    work.priority = p.priority;
    work.preemptible = preemptible;
    // Running since the kubelet accepted it; without a start time, as if just started (it
    // ranks last for its floor and is not old enough to be reclaimed).
    work.started_at = bound ? (p.started ? ownership::ToUnix(*p.started) : now_unix) : 0;
    work.work_lost_s = std::max<int64_t>(0, now_unix - work.started_at);
    if (!bound) work.work_lost_s = 0;
    work.gpu_type = bound ? type_of(p.node_name, p.gpu_model) : p.gpu_model;
    if (bound) {
      running.push_back(work);
    } else {
      o.pending_gpus[work.tenant] += work.gpus;
      o.pending_by_type[work.tenant][work.gpu_type] += work.gpus;
    }
    o.work.push_back(std::move(w));
  }
  o.classification = Classify(q, running);
  return o;
}

std::map<uint32_t, std::string> GuaranteedJobs(const Observation& o) {
  std::map<uint32_t, std::string> out;
  for (const ObservedWork& w : o.work) {
    if (!w.running || w.work.side != Side::kSlurm || w.work.tenant.empty()) continue;
    auto s = o.classification.standing.find(w.work.id);
    if (s != o.classification.standing.end() && s->second == Standing::kGuaranteed) {
      out.emplace(w.job_id, w.work.tenant);
    }
  }
  return out;
}

std::map<std::string, std::string> BorrowingPendingPods(const QuotaConfig& config,
                                                        const Observation& o) {
  std::map<std::string, std::string> out;
  if (!config.enabled()) return out;
  for (const ObservedWork& w : o.work) {
    if (w.running || w.work.side != Side::kKubernetes) continue;
    const std::string& key = w.pod;
    const Tenant* t = config.Find(w.work.tenant);
    if (t == nullptr) {
      out.emplace(key, StrCat("namespace ", w.account,
                              " belongs to no tenant (quotas.tenants), so its pods borrow"));
      continue;
    }
    if (!w.uncounted.empty()) {
      out.emplace(key, StrCat("the GPUs of its ResourceClaims are not all counted yet (",
                              w.uncounted, "), so whether it stays within tenant ", t->name,
                              "'s guarantee is not known"));
      continue;
    }
    const FloorShare f = FloorOf(config, o.classification, w.work);
    if (f.in_use + w.work.gpus > f.floor) {
      out.emplace(key, StrCat("tenant ", t->name, " uses ", f.in_use, " of its ", FloorGpus(f),
                              " guaranteed: this pod's ", Gpus(w.work.gpus), " would be borrowed"));
    }
  }
  return out;
}

std::vector<Reclaim> PlanReclaims(const QuotaConfig& config, const Observation& o,
                                  const std::vector<LentNode>& lent, int64_t now,
                                  const ReclaimOptions& options) {
  std::vector<Reclaim> out;
  if (!config.enabled() || lent.empty()) return out;
  const Classification& c = o.classification;
  // The running pods on each lent node.
  std::map<std::string, std::vector<const ObservedWork*>, std::less<>> pods_on;
  for (const ObservedWork& w : o.work) {
    if (w.running && w.work.side == Side::kKubernetes) pods_on[w.where].push_back(&w);
  }
  // Pending jobs a reclaim may serve, in OrderPending's order.
  std::vector<const ObservedWork*> jobs;
  std::vector<Work> pending;
  for (const ObservedWork& w : o.work) {
    if (w.running || w.work.side != Side::kSlurm || !w.waits_for_resources) continue;
    if (config.Find(w.work.tenant) == nullptr) continue;  // no tenant: no guarantee to serve
    jobs.push_back(&w);
    pending.push_back(w.work);
  }
  // GPUs still within each guarantee: (tenant, GPU type) for per-type floors, (tenant, "")
  // for a floor of any type.
  std::map<std::pair<std::string, std::string>, int64_t> room;
  for (const Tenant& t : config.tenants) {
    auto u = c.usage.find(t.name);
    auto in_use = [&](const std::string& type) {
      if (u == c.usage.end()) return 0;
      auto tu = u->second.by_type.find(type);
      return tu != u->second.by_type.end() ? tu->second.in_use : 0;
    };
    if (t.per_type()) {
      for (const auto& [type, floor] : t.guaranteed_by_type) {
        room[{t.name, type}] = floor - in_use(type);
      }
    } else {
      room[{t.name, ""}] = t.guaranteed - (u != c.usage.end() ? u->second.in_use() : 0);
    }
  }
  std::set<std::string, std::less<>> taken;
  for (size_t i : OrderPending(config, c, pending)) {
    const ObservedWork& job = *jobs[i];
    const std::string& tenant = job.work.tenant;
    const Tenant& t = *config.Find(tenant);
    struct Candidate {
      const LentNode* node;
      std::vector<const ObservedWork*> victims;
      int64_t victim_gpus = 0;
      double over = 0;  // the least over-floor victim's tenant: how much it can spare
    };
    std::optional<Candidate> best;
    auto key = [](const Candidate& x) {
      return std::make_tuple(!x.node->reclaiming, !x.victims.empty(), -x.over, x.victim_gpus,
                             x.node->name);
    };
    // The floor a node's GPUs count against for this job, or nullptr (none).
    auto room_on = [&](const LentNode& n) -> int64_t* {
      auto r = room.find({tenant, t.per_type() ? n.gpu_type : std::string()});
      return r != room.end() ? &r->second : nullptr;
    };
    for (const LentNode& n : lent) {
      if (taken.count(n.name) || n.gpus < job.work.gpus) continue;
      // A job asking a type runs only on nodes of that type: never a reclaim across types.
      if (!job.work.gpu_type.empty() && n.gpu_type != job.work.gpu_type) continue;
      const int64_t* r = room_on(n);
      if (r == nullptr || job.work.gpus > *r) continue;  // beyond the guarantee: takes nothing
      Candidate cand{.node = &n, .over = std::numeric_limits<double>::infinity()};
      bool all = true;
      if (auto p = pods_on.find(n.name); p != pods_on.end()) {
        for (const ObservedWork* v : p->second) {
          if (!Reclaimable(config, c, tenant, v->work, now, options) ||
              (!n.gpu_type.empty() && v->work.gpu_type != n.gpu_type)) {
            all = false;
            break;
          }
          cand.victims.push_back(v);
          cand.victim_gpus += v->work.gpus;
          cand.over = std::min(cand.over, OverPerWeight(c, v->work));
        }
      }
      if (!all) continue;
      if (!best || key(cand) < key(*best)) best = std::move(cand);
    }
    if (!best) continue;
    taken.insert(best->node->name);
    int64_t* r = room_on(*best->node);
    *r -= job.work.gpus;
    Reclaim rc;
    rc.node = best->node->name;
    rc.tenant = tenant;
    rc.job_id = job.job_id;
    rc.gpus = job.work.gpus;
    rc.victim_gpus = best->victim_gpus;
    std::string pods;
    for (const ObservedWork* v : best->victims) {
      rc.victims.push_back(v->pod);
      const std::string vt = v->work.tenant.empty() ? "(none)" : v->work.tenant;
      if (std::find(rc.victim_tenants.begin(), rc.victim_tenants.end(), vt) ==
          rc.victim_tenants.end()) {
        rc.victim_tenants.push_back(vt);
      }
      StrAppend(&pods, pods.empty() ? "" : ", ", rc.victims.back(), " (tenant ", vt, ", ",
                Gpus(v->work.gpus), ")");
    }
    const FloorShare f{.type = best->node->gpu_type,
                       .per_type = t.per_type(),
                       .floor = t.FloorFor(best->node->gpu_type)};
    rc.why = StrCat("tenant ", tenant, " uses ", f.floor - *r - job.work.gpus, " of its ",
                    FloorGpus(f), " guaranteed and job ", job.job_id, " (",
                    GpusOfType(job.work.gpus, job.work.gpu_type), ") waits for resources");
    StrAppend(&rc.why, pods.empty() ? ": the lent node is idle, it returns to Slurm now"
                                    : StrCat(": borrowed pod(s) ", pods, " are evicted"));
    out.push_back(std::move(rc));
  }
  return out;
}

std::vector<TenantRow> TenantRows(const QuotaConfig& config, const Observation& o) {
  std::vector<TenantRow> rows;
  for (const Tenant& t : config.tenants) {
    TenantRow r;
    r.name = t.name;
    auto u = o.classification.usage.find(t.name);
    if (u != o.classification.usage.end()) {
      r.guaranteed = u->second.guaranteed;
      r.limit = u->second.limit;
      r.in_use_slurm = u->second.in_use_slurm;
      r.in_use_kubernetes = u->second.in_use_kubernetes;
      r.borrowed = u->second.borrowed;
    } else {
      r.guaranteed = t.guaranteed;
      r.limit = t.limit;
    }
    auto p = o.pending_gpus.find(t.name);
    if (p != o.pending_gpus.end()) r.pending = p->second;
    for (const Reclaim& rc : o.reclaims) {
      if (rc.tenant == t.name) r.reclaiming += static_cast<int>(rc.gpus);
    }
    r.per_type = t.per_type();
    std::map<std::string, TypeRow> types;
    for (const auto& [type, n] : t.guaranteed_by_type) types[type].guaranteed = n;
    for (const auto& [type, n] : t.limit_by_type) types[type].limit = n;
    if (u != o.classification.usage.end()) {
      for (const auto& [type, tu] : u->second.by_type) {
        types[type].in_use = tu.in_use;
        types[type].borrowed = tu.borrowed;
      }
    }
    if (auto pt = o.pending_by_type.find(t.name); pt != o.pending_by_type.end()) {
      for (const auto& [type, n] : pt->second) types[type].pending = n;
    }
    for (auto& [type, row] : types) {
      row.type = type;
      r.types.push_back(row);
    }
    rows.push_back(std::move(r));
  }
  // Work of no tenant: all of it borrows.
  TenantRow none;
  for (const ObservedWork& w : o.work) {
    if (!w.work.tenant.empty() && config.Find(w.work.tenant) != nullptr) continue;
    if (!w.running) {
      none.pending += w.work.gpus;
    } else {
      (w.work.side == Side::kSlurm ? none.in_use_slurm : none.in_use_kubernetes) += w.work.gpus;
      none.borrowed += w.work.gpus;
    }
  }
  if (none.in_use_slurm + none.in_use_kubernetes + none.pending > 0) rows.push_back(none);
  return rows;
}

std::string WhyStanding(const QuotaConfig& config, const Observation& o, const ObservedWork& w) {
  const Tenant* t = config.Find(w.work.tenant);
  const std::string owner =
      w.work.side == Side::kSlurm ? StrCat("account ", w.account) : StrCat("namespace ", w.account);
  if (t == nullptr) {
    return StrCat(owner, " is in no tenant: work of no tenant always borrows");
  }
  if (!w.running) {
    Decision d = PlanStart(config, o.classification, w.work, w.work.gpus, {},
                           ownership::ToUnix(o.at), ReclaimOptions{});
    std::string why = StrCat("pending: would run ", StandingName(d.standing), " (",
                             RuleName(d.rule), "): ", d.explanation);
    for (const Reclaim& r : o.reclaims) {
      if (w.job_id != 0 && r.job_id == w.job_id) {
        StrAppend(&why, "; node ", r.node, " is being taken back for it (",
                  RuleName(Rule::kReclaim), ")");
      }
    }
    return why;
  }
  const std::string_view then = w.work.preemptible
                                    ? "; it borrows idle GPUs and may be reclaimed"
                                    : "; it cannot be preempted, so it is not reclaimed";
  // Per-type floors: work on a type with no floor (or of a type not known) borrows.
  if (t->per_type() && !t->guaranteed_by_type.count(w.work.gpu_type)) {
    return StrCat("tenant ", t->name, "'s floors are per GPU type and name none for ",
                  w.work.gpu_type.empty() ? std::string("GPUs of a type not known")
                                          : StrCat(w.work.gpu_type, " GPUs"),
                  then);
  }
  // Running: the GPUs of the tenant's work that ranks before it (on its type's floor).
  int before = 0;
  for (const ObservedWork& other : o.work) {
    if (!other.running || other.work.tenant != w.work.tenant || other.work.id == w.work.id) {
      continue;
    }
    if (t->per_type() && other.work.gpu_type != w.work.gpu_type) continue;
    if (RanksBefore(other.work, w.work)) before += other.work.gpus;
  }
  auto st = o.classification.standing.find(w.work.id);
  const bool guaranteed =
      st != o.classification.standing.end() && st->second == Standing::kGuaranteed;
  const std::string kind = t->per_type() ? StrCat(w.work.gpu_type, " ") : "";
  const std::string rank = StrCat(Gpus(before), " of tenant ", t->name, "'s ", kind,
                                  "work rank before it (not preemptible first, then higher "
                                  "priority, then longest running)");
  const std::string floor =
      GpusOfType(t->FloorFor(w.work.gpu_type), t->per_type() ? w.work.gpu_type : "");
  if (guaranteed) {
    return StrCat("within the ", floor, " guaranteed: ", rank,
                  "; another tenant's demand never takes it");
  }
  return StrCat("beyond the ", floor, " guaranteed: ", rank, then);
}

std::optional<LentNode> LentNodeOf(const inventory::K8sNode& node) {
  const bool reclaiming =
      std::any_of(node.taints.begin(), node.taints.end(),
                  [](const inventory::Taint& t) { return t.key == ownership::kReclaimTaintKey; });
  if (!reclaiming && !node.annotations.count(ownership::kLentAtAnnotation)) return std::nullopt;
  return LentNode{.name = node.name, .gpus = node.GpuUnits(), .reclaiming = reclaiming};
}

SubmitAdvice AdviseSubmit(const QuotaConfig& config, const Classification& c,
                          const SubmitFacts& job) {
  SubmitAdvice a;
  if (!config.enabled() || job.gpus <= 0) return a;
  constexpr std::string_view kPrefix = plan::kReasonPrefix;
  const Tenant* t = config.ForAccount(job.account);
  if (job.account.empty()) {
    a.message = StrCat(kPrefix,
                       "quotas: no --account given and no default account known, so the tenant "
                       "of this job is not known at submit time");
    return a;
  }
  Work w;
  w.id = "submit";
  w.tenant = t != nullptr ? t->name : "";
  w.gpus = job.gpus;
  w.gpu_type = job.gpu_type;
  w.preemptible = job.preemptible;
  // Placement is Slurm's: judge only the tenant's standing (as if the GPUs were idle).
  Decision d = PlanStart(config, c, w, job.gpus, {}, 0, ReclaimOptions{});
  a.rule = d.rule;
  std::string who = t != nullptr ? StrCat("tenant ", t->name)
                                 : StrCat("account ", job.account, " (in no tenant)");
  if (job.account_is_default) {
    who = StrCat(who, " (no --account given: your default account ", job.account, ")");
  }
  const FloorShare f = FloorOf(config, c, w);
  const std::string usage =
      StrCat(who, " uses ", f.in_use, " of its ", FloorGpus(f), " guaranteed");
  const bool beyond_floor = d.rule == Rule::kNotPreemptibleBeyondFloor ||
                            d.rule == Rule::kBorrowIdle || d.rule == Rule::kWaitForIdle;
  if (!job.bridge_preempts && beyond_floor) {
    a.message = StrCat(kPrefix, "quota: ", usage, ": this job's ", Gpus(job.gpus),
                       " would run beyond the guarantee; lending is off, so the bridge takes "
                       "no GPUs back from Slurm for another tenant (the guarantee is reported, "
                       "not enforced)");
    return a;
  }
  switch (d.rule) {
    case Rule::kNotPreemptibleBeyondFloor:
      a.refuse = true;
      a.message = StrCat(kPrefix, "refused: ", usage, ", and this job (", Gpus(job.gpus),
                         ") cannot be preempted (", job.preemptible_why,
                         "): work that cannot be preempted runs only within its tenant's "
                         "guarantee. Submit it preemptible (requeueable batch job in a "
                         "preemptible partition or QOS) to borrow idle GPUs, or wait until the "
                         "tenant uses fewer GPUs.");
      break;
    case Rule::kWithinGuarantee:
      a.message = StrCat(kPrefix, "quota: ", usage, ": this job's ", Gpus(job.gpus),
                         " would run within the guarantee (another tenant's demand never takes "
                         "them)");
      break;
    case Rule::kAtLimit:
      a.message = StrCat(kPrefix, "quota: ", d.explanation, ": this job's ", Gpus(job.gpus),
                         " would pass the limit");
      break;
    default:
      a.message = StrCat(kPrefix, "quota: ", usage, ": this job's ", Gpus(job.gpus),
                         " would be borrowed beyond the guarantee, so it may be preempted "
                         "(checkpoint signal, grace, requeue) when a tenant below its guarantee "
                         "needs the GPUs");
      break;
  }
  return a;
}

}  // namespace skb::quota

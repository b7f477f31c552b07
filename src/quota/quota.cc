#include "src/quota/quota.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <tuple>

#include "src/config/json_reader.h"

namespace skb::quota {

const Tenant* QuotaConfig::Find(std::string_view name) const {
  for (const Tenant& t : tenants) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const Tenant* QuotaConfig::ForAccount(std::string_view account) const {
  for (const Tenant& t : tenants) {
    if (std::find(t.slurm_accounts.begin(), t.slurm_accounts.end(), account) !=
        t.slurm_accounts.end()) {
      return &t;
    }
  }
  return nullptr;
}

const Tenant* QuotaConfig::ForNamespace(std::string_view ns) const {
  for (const Tenant& t : tenants) {
    if (std::find(t.kubernetes_namespaces.begin(), t.kubernetes_namespaces.end(), ns) !=
        t.kubernetes_namespaces.end()) {
      return &t;
    }
  }
  return nullptr;
}

StatusOr<QuotaConfig> ParseQuotaConfig(const nlohmann::json& section) {
  QuotaConfig out;
  if (section.is_null()) return out;
  if (!section.is_object()) return InvalidArgumentError("quotas: must be an object");
  RETURN_IF_ERROR(ReadQuotaConfig(config::JsonReader(section, "quotas"), &out));
  return out;
}

Status ReadQuotaConfig(config::JsonReader r, QuotaConfig* result) {
  QuotaConfig out;
  std::set<std::string> names, accounts, namespaces;
  r.ObjectList("tenants", [&](config::JsonReader& t) {
    Tenant tenant;
    int64_t guaranteed = 0, limit = -1;
    t.String("name", &tenant.name);
    t.StringList("slurm_accounts", &tenant.slurm_accounts);
    t.StringList("kubernetes_namespaces", &tenant.kubernetes_namespaces);
    t.Int("guaranteed", &guaranteed, 0, 1'000'000);
    t.Int("limit", &limit, 0, 1'000'000);
    t.Double("weight", &tenant.weight, 1e-6, 1e6);
    tenant.guaranteed = static_cast<int>(guaranteed);
    if (limit >= 0) tenant.limit = static_cast<int>(limit);
    if (tenant.name.empty()) {
      t.Fail("name", "every tenant needs a name");
    } else if (!names.insert(tenant.name).second) {
      t.Fail("name", "tenant '" + tenant.name + "' is defined twice");
    }
    if (tenant.slurm_accounts.empty() && tenant.kubernetes_namespaces.empty()) {
      t.Fail("slurm_accounts", "a tenant needs at least one Slurm account or namespace");
    }
    for (const std::string& a : tenant.slurm_accounts) {
      if (!accounts.insert(a).second) {
        t.Fail("slurm_accounts", "account '" + a + "' belongs to two tenants");
      }
    }
    for (const std::string& n : tenant.kubernetes_namespaces) {
      if (!namespaces.insert(n).second) {
        t.Fail("kubernetes_namespaces", "namespace '" + n + "' belongs to two tenants");
      }
    }
    if (tenant.limit && *tenant.limit < tenant.guaranteed) {
      t.Fail("limit", "limit " + std::to_string(*tenant.limit) + " is below guaranteed " +
                          std::to_string(tenant.guaranteed));
    }
    out.tenants.push_back(std::move(tenant));
  });
  r.Duration("reclaim_min_run_time", &out.reclaim_min_run_time);
  RETURN_IF_ERROR(r.Finish());
  *result = std::move(out);
  return OkStatus();
}

std::vector<std::string> DescribeQuotaConfig(const QuotaConfig& config) {
  if (!config.enabled()) return {"quotas: off (no tenants)"};
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("-") : s;
  };
  std::vector<std::string> out;
  int floors = 0;
  for (const Tenant& t : config.tenants) floors += t.guaranteed;
  out.push_back("quotas: " + std::to_string(config.tenants.size()) + " tenant(s), " +
                std::to_string(floors) +
                " GPUs guaranteed in all; work of no tenant always borrows");
  for (const Tenant& t : config.tenants) {
    char weight[32];
    std::snprintf(weight, sizeof(weight), "%g", t.weight);
    out.push_back("  tenant " + t.name + ": slurm_accounts=" + list(t.slurm_accounts) +
                  " kubernetes_namespaces=" + list(t.kubernetes_namespaces) +
                  " guaranteed=" + std::to_string(t.guaranteed) + " limit=" +
                  (t.limit ? std::to_string(*t.limit) : std::string("none")) + " weight=" + weight);
  }
  return out;
}

std::string_view StandingName(Standing s) {
  return s == Standing::kGuaranteed ? "guaranteed" : "borrowed";
}

std::string_view RuleName(Rule rule) {
  switch (rule) {
    case Rule::kNoQuotas:
      return "NoQuotas";
    case Rule::kWithinGuarantee:
      return "WithinGuarantee";
    case Rule::kBorrowIdle:
      return "BorrowIdle";
    case Rule::kReclaim:
      return "Reclaim";
    case Rule::kAtLimit:
      return "AtLimit";
    case Rule::kNotPreemptibleBeyondFloor:
      return "NotPreemptibleBeyondGuarantee";
    case Rule::kWaitForIdle:
      return "WaitForIdle";
    case Rule::kNothingToReclaim:
      return "NothingToReclaim";
  }
  return "Unknown";
}

namespace {

// The tenant a work item counts for: its own when configured, else none.
std::string TenantKey(const QuotaConfig& config, const Work& w) {
  return config.Find(w.tenant) != nullptr ? w.tenant : std::string();
}

}  // namespace

bool RanksBefore(const Work& a, const Work& b) {
  // Not preemptible first, higher priority, longest running, id.
  return std::make_tuple(a.preemptible, -a.priority, a.started_at, a.id) <
         std::make_tuple(b.preemptible, -b.priority, b.started_at, b.id);
}

Classification Classify(const QuotaConfig& config, const std::vector<Work>& running) {
  Classification c;
  for (const Tenant& t : config.tenants) {
    TenantUsage& u = c.usage[t.name];
    u.guaranteed = t.guaranteed;
    u.limit = t.limit;
  }
  std::map<std::string, std::vector<const Work*>> by_tenant;
  for (const Work& w : running) {
    std::string tenant = TenantKey(config, w);
    c.tenant_of[w.id] = tenant;
    if (tenant.empty()) {
      c.standing[w.id] = Standing::kBorrowed;
      continue;
    }
    TenantUsage& u = c.usage[tenant];
    (w.side == Side::kSlurm ? u.in_use_slurm : u.in_use_kubernetes) += w.gpus;
    by_tenant[tenant].push_back(&w);
  }
  for (auto& [tenant, items] : by_tenant) {
    std::sort(items.begin(), items.end(),
              [](const Work* a, const Work* b) { return RanksBefore(*a, *b); });
    TenantUsage& u = c.usage[tenant];
    int left = u.guaranteed;
    bool full = false;
    for (const Work* w : items) {
      if (!full && w->gpus <= left) {
        left -= w->gpus;
        c.standing[w->id] = Standing::kGuaranteed;
      } else {
        full = true;
        c.standing[w->id] = Standing::kBorrowed;
        u.borrowed += w->gpus;
      }
    }
  }
  for (const Tenant& t : config.tenants) {
    TenantUsage& u = c.usage[t.name];
    u.over_per_weight = (u.in_use() - u.guaranteed) / t.weight;
  }
  return c;
}

bool Reclaimable(const QuotaConfig& config, const Classification& c, const std::string& for_tenant,
                 const Work& w, int64_t now, const ReclaimOptions& options) {
  auto st = c.standing.find(w.id);
  if (st == c.standing.end() || st->second != Standing::kBorrowed) return false;
  if (!w.preemptible) return false;
  if (!for_tenant.empty() && TenantKey(config, w) == for_tenant) return false;  // its own
  return now - w.started_at >= options.min_run_time_s;
}

double OverPerWeight(const Classification& c, const Work& w) {
  auto tn = c.tenant_of.find(w.id);
  if (tn == c.tenant_of.end() || tn->second.empty()) {
    return std::numeric_limits<double>::infinity();  // no tenant: first to give back
  }
  return c.usage.at(tn->second).over_per_weight;
}

Decision PlanStart(const QuotaConfig& config, const Classification& c, const Work& pending,
                   int free_gpus, const std::vector<Work>& candidates, int64_t now,
                   const ReclaimOptions& options) {
  Decision d;
  if (!config.enabled()) {
    d.start = free_gpus >= pending.gpus;
    d.explanation = "quotas are off";
    return d;
  }
  const std::string tenant = TenantKey(config, pending);
  const Tenant* t = config.Find(tenant);
  const int in_use = t != nullptr ? c.usage.at(tenant).in_use() : 0;
  const int floor = t != nullptr ? t->guaranteed : 0;
  const std::string who = t != nullptr ? "tenant " + tenant : "work of no tenant";
  const bool within = in_use + pending.gpus <= floor;
  d.standing = within ? Standing::kGuaranteed : Standing::kBorrowed;

  if (t != nullptr && t->limit && in_use + pending.gpus > *t->limit) {
    d.rule = Rule::kAtLimit;
    d.explanation = who + " uses " + std::to_string(in_use) + " of its limit " +
                    std::to_string(*t->limit) + " GPUs";
    return d;
  }
  if (!within && !pending.preemptible) {
    d.rule = Rule::kNotPreemptibleBeyondFloor;
    d.explanation = who + " uses " + std::to_string(in_use) + " of " + std::to_string(floor) +
                    " guaranteed GPUs; work that cannot be preempted runs only within the "
                    "guarantee";
    return d;
  }
  if (free_gpus >= pending.gpus) {
    d.start = true;
    d.rule = within ? Rule::kWithinGuarantee : Rule::kBorrowIdle;
    d.explanation = within ? who + " stays within its " + std::to_string(floor) + " guaranteed GPUs"
                           : who + " borrows idle GPUs beyond its " + std::to_string(floor) +
                                 " guaranteed: it may be reclaimed";
    return d;
  }
  if (!within) {
    d.rule = Rule::kWaitForIdle;
    d.explanation = who + " is at " + std::to_string(in_use) + " of " + std::to_string(floor) +
                    " guaranteed GPUs: beyond it, work waits for idle GPUs";
    return d;
  }
  // Within the floor: take borrowed work of other tenants, most over-floor first.
  std::vector<const Work*> victims;
  for (const Work& w : candidates) {
    if (Reclaimable(config, c, tenant, w, now, options)) victims.push_back(&w);
  }
  auto over = [&](const Work* w) { return OverPerWeight(c, *w); };
  std::sort(victims.begin(), victims.end(), [&](const Work* a, const Work* b) {
    return std::make_tuple(-over(a), a->priority, a->work_lost_s, -a->started_at, a->id) <
           std::make_tuple(-over(b), b->priority, b->work_lost_s, -b->started_at, b->id);
  });
  int freed = free_gpus;
  for (const Work* v : victims) {
    if (freed >= pending.gpus) break;
    d.victims.push_back(v->id);
    d.victim_gpus += v->gpus;
    freed += v->gpus;
  }
  if (freed < pending.gpus) {
    d.victims.clear();
    d.victim_gpus = 0;
    d.rule = Rule::kNothingToReclaim;
    d.explanation = who + " is within its " + std::to_string(floor) +
                    " guaranteed GPUs but here only " + std::to_string(freed) +
                    " GPUs are idle or borrowed by others";
    return d;
  }
  d.start = true;
  d.rule = Rule::kReclaim;
  d.explanation = who + " is within its " + std::to_string(floor) +
                  " guaranteed GPUs: " + std::to_string(d.victim_gpus) +
                  " borrowed GPUs are reclaimed";
  return d;
}

std::vector<size_t> OrderPending(const QuotaConfig& config, const Classification& c,
                                 const std::vector<Work>& pending) {
  std::vector<size_t> order(pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const Work& w = pending[i];
    const std::string tenant = TenantKey(config, w);
    const Tenant* t = config.Find(tenant);
    int in_use = t != nullptr ? c.usage.at(tenant).in_use() : 0;
    bool within = t != nullptr && in_use + w.gpus <= t->guaranteed;
    double borrowed =
        t != nullptr ? c.usage.at(tenant).over_per_weight : std::numeric_limits<double>::infinity();
    return std::make_tuple(!within, within ? 0.0 : borrowed, w.started_at, w.id);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

}  // namespace skb::quota

// SPDX-License-Identifier: Apache-2.0
#include "src/quota/quota.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <tuple>

#include "src/base/strings.h"
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

int Tenant::FloorFor(std::string_view type) const {
  if (!per_type()) return guaranteed;
  auto it = guaranteed_by_type.find(std::string(type));
  return it != guaranteed_by_type.end() ? it->second : 0;
}

std::string GpusOfType(int64_t n, std::string_view type) {
  return StrCat(n, type.empty() ? "" : " ", type, n == 1 ? " GPU" : " GPUs");
}

namespace {

// Reads "guaranteed" or "limit" of a tenant: a number of GPUs of any type, or an object
// of GPU type -> GPUs. `*any` is the number, or the sum over the types.
void ReadGpus(config::JsonReader& t, std::string_view key, int64_t* any,
              std::map<std::string, int>* by_type) {
  const std::string form = t.TypeOf(key);
  if (form == "object") {
    config::JsonReader o = t.Object(key);
    const std::vector<std::string> types = o.Keys();
    if (types.empty()) {
      t.Fail(key, "names no GPU type: give a number for GPUs of any type");
    }
    int64_t sum = 0;
    for (const std::string& type : types) {
      int64_t n = 0;
      o.Int(type, &n, 0, 1'000'000);
      if (type.empty()) {
        o.Fail(type, "a GPU type needs a name (as Slurm's GRES type names it: gpu:h100:8)");
      } else if (type == "any") {
        o.Fail(type, "\"any\" is not a GPU type: GPUs of any type are given as a number");
      }
      (*by_type)[type] = static_cast<int>(n);
      sum += n;
    }
    t.Merge(o.Finish());
    if (sum > 1'000'000) t.Fail(key, StrCat("the types add up to ", sum, " GPUs, above 1000000"));
    *any = std::min<int64_t>(sum, 1'000'000);
    return;
  }
  if (!form.empty() && form != "number") {
    t.Fail(key, StrCat("expected a number of GPUs or an object of GPU type -> GPUs ({\"h100\": "
                       "4}), got ",
                       form));
  }
  t.Int(key, any, 0, 1'000'000);
}

}  // namespace

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
    ReadGpus(t, "guaranteed", &guaranteed, &tenant.guaranteed_by_type);
    ReadGpus(t, "limit", &limit, &tenant.limit_by_type);
    t.Double("weight", &tenant.weight, 1e-6, 1e6);
    tenant.guaranteed = static_cast<int>(guaranteed);
    // A limit per type limits each type named; the tenant's whole usage has none.
    if (limit >= 0 && tenant.limit_by_type.empty()) tenant.limit = static_cast<int>(limit);
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
    for (const auto& [type, n] : tenant.limit_by_type) {
      const int floor = tenant.per_type() ? tenant.FloorFor(type) : 0;
      if (n < floor) {
        t.Fail(StrCat("limit.", type),
               StrCat("limit ", n, " is below guaranteed ", floor, " (guaranteed.", type, ")"));
      }
    }
    out.tenants.push_back(std::move(tenant));
  });
  r.Duration("reclaim_min_run_time", &out.reclaim_min_run_time);
  std::string enforcement = "resource_quota";
  r.Enum("kubernetes_enforcement", &enforcement, {"resource_quota", "off"});
  out.kubernetes_enforcement = enforcement == "off"
                                   ? QuotaConfig::KubernetesEnforcement::kOff
                                   : QuotaConfig::KubernetesEnforcement::kResourceQuota;
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
  auto types = [](const std::map<std::string, int>& by_type) {
    std::string s;
    for (const auto& [type, n] : by_type) StrAppend(&s, s.empty() ? "" : ",", type, ":", n);
    return s;
  };
  for (const Tenant& t : config.tenants) {
    char weight[32];
    std::snprintf(weight, sizeof(weight), "%g", t.weight);
    const std::string limit = !t.limit_by_type.empty() ? types(t.limit_by_type)
                              : t.limit                ? std::to_string(*t.limit)
                                                       : std::string("none");
    out.push_back("  tenant " + t.name + ": slurm_accounts=" + list(t.slurm_accounts) +
                  " kubernetes_namespaces=" + list(t.kubernetes_namespaces) + " guaranteed=" +
                  (t.per_type() ? types(t.guaranteed_by_type) : std::to_string(t.guaranteed)) +
                  " limit=" + limit + " weight=" + weight +
                  (t.per_type() ? " (floors per GPU type: work on another type, or of a type "
                                  "not known, borrows)"
                                : ""));
  }
  out.push_back(config.kubernetes_enforcement == QuotaConfig::KubernetesEnforcement::kOff
                    ? "  kubernetes_enforcement=off: nothing stops a tenant's pods that cannot be "
                      "preempted beyond its guarantee (the Slurm side still refuses such jobs)"
                    : "  kubernetes_enforcement=resource_quota: a ResourceQuota skb-guarantee in "
                      "each tenant namespace keeps its pods that cannot be preempted within the "
                      "guarantee (while lending is on)");
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
    u.per_type = t.per_type();
    for (const auto& [type, n] : t.guaranteed_by_type) u.by_type[type].guaranteed = n;
    for (const auto& [type, n] : t.limit_by_type) u.by_type[type].limit = n;
  }
  // Each floor's items: (tenant, GPU type) with per-type floors, (tenant, "") otherwise.
  std::map<std::pair<std::string, std::string>, std::vector<const Work*>> by_floor;
  for (const Work& w : running) {
    std::string tenant = TenantKey(config, w);
    c.tenant_of[w.id] = tenant;
    if (tenant.empty()) {
      c.standing[w.id] = Standing::kBorrowed;
      continue;
    }
    TenantUsage& u = c.usage[tenant];
    (w.side == Side::kSlurm ? u.in_use_slurm : u.in_use_kubernetes) += w.gpus;
    u.by_type[w.gpu_type].in_use += w.gpus;
    by_floor[{tenant, u.per_type ? w.gpu_type : std::string()}].push_back(&w);
  }
  for (auto& [floor_key, items] : by_floor) {
    std::sort(items.begin(), items.end(),
              [](const Work* a, const Work* b) { return RanksBefore(*a, *b); });
    TenantUsage& u = c.usage[floor_key.first];
    int left = config.Find(floor_key.first)->FloorFor(floor_key.second);
    bool full = false;
    for (const Work* w : items) {
      if (!full && w->gpus <= left) {
        left -= w->gpus;
        c.standing[w->id] = Standing::kGuaranteed;
      } else {
        full = true;
        c.standing[w->id] = Standing::kBorrowed;
        u.borrowed += w->gpus;
        u.by_type[w->gpu_type].borrowed += w->gpus;
      }
    }
  }
  for (const Tenant& t : config.tenants) {
    TenantUsage& u = c.usage[t.name];
    u.over_per_weight = (u.in_use() - u.guaranteed) / t.weight;
    for (auto& [type, tu] : u.by_type) {
      tu.over_per_weight = u.per_type ? (tu.in_use - tu.guaranteed) / t.weight : u.over_per_weight;
    }
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
  const TenantUsage& u = c.usage.at(tn->second);
  if (!u.per_type) return u.over_per_weight;
  auto t = u.by_type.find(w.gpu_type);
  return t != u.by_type.end() ? t->second.over_per_weight : u.over_per_weight;
}

FloorShare FloorOf(const QuotaConfig& config, const Classification& c, const Work& w) {
  FloorShare f;
  f.type = w.gpu_type;
  const Tenant* t = config.Find(TenantKey(config, w));
  if (t == nullptr) return f;
  auto u = c.usage.find(t->name);
  auto type_in_use = [&](const std::string& type) {
    if (u == c.usage.end()) return 0;
    auto tu = u->second.by_type.find(type);
    return tu != u->second.by_type.end() ? tu->second.in_use : 0;
  };
  if (!t->per_type()) {
    f.floor = t->guaranteed;
    f.in_use = u != c.usage.end() ? u->second.in_use() : 0;
    return f;
  }
  f.per_type = true;
  if (f.type.empty()) {
    // Asks any type: judged by the floor with the most room (map order breaks ties).
    int best = std::numeric_limits<int>::min();
    for (const auto& [type, floor] : t->guaranteed_by_type) {
      if (floor - type_in_use(type) > best) {
        best = floor - type_in_use(type);
        f.type = type;
      }
    }
  }
  f.floor = t->FloorFor(f.type);
  f.in_use = type_in_use(f.type);
  return f;
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
  const FloorShare f = FloorOf(config, c, pending);
  const int in_use = t != nullptr ? c.usage.at(tenant).in_use() : 0;
  const std::string who = t != nullptr ? "tenant " + tenant : "work of no tenant";
  const bool within = f.in_use + pending.gpus <= f.floor;
  d.standing = within ? Standing::kGuaranteed : Standing::kBorrowed;
  // "GPUs" or "h100 GPUs": the floor's kind (named with per-type floors), and the kind of
  // GPUs this work can use (named whenever its type is known).
  const std::string floor_gpus = f.per_type ? StrCat(f.type, " GPUs") : "GPUs";
  const std::string its_gpus = f.type.empty() ? "GPUs" : StrCat(f.type, " GPUs");

  if (t != nullptr && t->limit && in_use + pending.gpus > *t->limit) {
    d.rule = Rule::kAtLimit;
    d.explanation = who + " uses " + std::to_string(in_use) + " of its limit " +
                    std::to_string(*t->limit) + " GPUs";
    return d;
  }
  if (t != nullptr && !f.type.empty()) {
    if (auto lim = t->limit_by_type.find(f.type); lim != t->limit_by_type.end()) {
      auto tu = c.usage.at(tenant).by_type.find(f.type);
      const int type_in_use = tu != c.usage.at(tenant).by_type.end() ? tu->second.in_use : 0;
      if (type_in_use + pending.gpus > lim->second) {
        d.rule = Rule::kAtLimit;
        d.explanation =
            StrCat(who, " uses ", type_in_use, " of its limit ", lim->second, " ", f.type, " GPUs");
        return d;
      }
    }
  }
  if (!within && !pending.preemptible) {
    d.rule = Rule::kNotPreemptibleBeyondFloor;
    d.explanation = StrCat(who, " uses ", f.in_use, " of ", f.floor, " guaranteed ", floor_gpus,
                           "; work that cannot be preempted runs only within the guarantee");
    return d;
  }
  if (free_gpus >= pending.gpus) {
    d.start = true;
    d.rule = within ? Rule::kWithinGuarantee : Rule::kBorrowIdle;
    d.explanation = within ? StrCat(who, " stays within its ", f.floor, " guaranteed ", floor_gpus)
                           : StrCat(who, " borrows idle ", its_gpus, " beyond its ", f.floor,
                                    " guaranteed: it may be reclaimed");
    return d;
  }
  if (!within) {
    d.rule = Rule::kWaitForIdle;
    d.explanation = StrCat(who, " is at ", f.in_use, " of ", f.floor, " guaranteed ", floor_gpus,
                           ": beyond it, work waits for idle ", its_gpus);
    return d;
  }
  // Within the floor: take borrowed work of other tenants on GPUs of the type it needs,
  // most over-floor first.
  std::vector<const Work*> victims;
  for (const Work& w : candidates) {
    if (!f.type.empty() && w.gpu_type != f.type) continue;  // never across GPU types
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
    d.explanation =
        StrCat(who, " is within its ", f.floor, " guaranteed ", floor_gpus, " but here only ",
               freed, " ", its_gpus, " are idle or borrowed by others");
    return d;
  }
  d.start = true;
  d.rule = Rule::kReclaim;
  d.explanation = StrCat(who, " is within its ", f.floor, " guaranteed ", floor_gpus, ": ",
                         d.victim_gpus, " borrowed ", its_gpus, " are reclaimed");
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
    const FloorShare f = FloorOf(config, c, w);
    bool within = t != nullptr && f.in_use + w.gpus <= f.floor;
    double borrowed = std::numeric_limits<double>::infinity();
    if (t != nullptr) {
      const TenantUsage& u = c.usage.at(tenant);
      auto tu = u.by_type.find(f.type);
      borrowed = f.per_type && tu != u.by_type.end() ? tu->second.over_per_weight
                 : f.per_type                        ? -f.floor / t->weight
                                                     : u.over_per_weight;
    }
    return std::make_tuple(!within, within ? 0.0 : borrowed, w.started_at, w.id);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

}  // namespace skb::quota

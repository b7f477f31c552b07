// SPDX-License-Identifier: Apache-2.0
#include "src/quota/guarantee_quota.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/config/config.h"
#include "src/devices/k8s_devices.h"
#include "src/ownership/schema.h"

namespace skb::quota {
namespace {

using json = nlohmann::json;

// The GPUs of `tenant`'s work that cannot be preempted: its running Slurm jobs, and its
// running or pending pods by namespace.
struct Held {
  int64_t slurm = 0;
  std::map<std::string, int64_t> pods;  // namespace -> GPUs
  int64_t all_pods() const {
    int64_t n = 0;
    for (const auto& [ns, gpus] : pods) n += gpus;
    return n;
  }
};

std::map<std::string, Held> HeldByTenant(const QuotaConfig& config, const Observation& o) {
  std::map<std::string, Held> out;
  for (const Tenant& t : config.tenants) out[t.name];
  for (const ObservedWork& w : o.work) {
    if (w.work.preemptible) continue;
    auto it = out.find(w.work.tenant);
    if (it == out.end()) continue;  // no tenant
    if (w.work.side == Side::kSlurm) {
      if (w.running) it->second.slurm += w.work.gpus;
    } else {
      it->second.pods[w.account] += w.work.gpus;  // a pod's account is its namespace
    }
  }
  return out;
}

const json* Child(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() ? &*it : nullptr;
}

std::string LabelOf(const json& obj, const char* label) {
  const json* md = Child(obj, "metadata");
  const json* labels = md != nullptr ? Child(*md, "labels") : nullptr;
  const json* v = labels != nullptr ? Child(*labels, label) : nullptr;
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

bool EnforcesOnKubernetes(const config::Config& cfg) {
  return cfg.quotas.enabled() && cfg.lending.enabled &&
         cfg.quotas.kubernetes_enforcement == QuotaConfig::KubernetesEnforcement::kResourceQuota;
}

std::map<std::string, int64_t> NonPreemptibleRoom(const QuotaConfig& config, const Observation& o) {
  std::map<std::string, int64_t> out;
  const std::map<std::string, Held> held = HeldByTenant(config, o);
  for (const Tenant& t : config.tenants) {
    const Held& h = held.at(t.name);
    out[t.name] = std::max<int64_t>(0, t.guaranteed - h.slurm - h.all_pods());
  }
  return out;
}

std::map<std::string, NamespaceRoom> GuaranteeQuotas(const QuotaConfig& config,
                                                     const Observation& o) {
  std::map<std::string, NamespaceRoom> out;
  const std::map<std::string, Held> held = HeldByTenant(config, o);
  for (const Tenant& t : config.tenants) {
    const Held& h = held.at(t.name);
    for (const std::string& ns : t.kubernetes_namespaces) {
      auto own = h.pods.find(ns);
      const int64_t elsewhere = h.all_pods() - (own != h.pods.end() ? own->second : 0);
      out[ns] = {.tenant = t.name,
                 .gpus = std::max<int64_t>(0, t.guaranteed - h.slurm - elsewhere)};
    }
  }
  return out;
}

std::map<std::string, NamespaceRoom> WantedGuaranteeQuotas(const config::Config& cfg,
                                                           const Observation& o) {
  if (!EnforcesOnKubernetes(cfg)) return {};
  std::map<std::string, NamespaceRoom> want = GuaranteeQuotas(cfg.quotas, o);
  want.erase(cfg.lending.namespace_name);
  return want;
}

std::vector<std::string> ProtectedClassNames(std::span<const json> classes, int64_t threshold) {
  std::vector<std::string> out;
  for (const json& pc : classes) {
    const json* value = Child(pc, "value");
    const json* md = Child(pc, "metadata");
    const json* name = md != nullptr ? Child(*md, "name") : nullptr;
    if (value == nullptr || !value->is_number_integer() || name == nullptr || !name->is_string() ||
        name->get<std::string>().empty()) {
      continue;
    }
    if (value->get<int64_t>() >= threshold) out.push_back(name->get<std::string>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

json GuaranteeQuotaObject(std::string_view ns, const NamespaceRoom& room,
                          const std::vector<std::string>& classes, std::string_view gpu_resource) {
  json scope = json::object();
  scope["scopeName"] = "PriorityClass";
  scope["operator"] = "In";
  scope["values"] = classes;
  json rq = json::object();
  rq["apiVersion"] = "v1";
  rq["kind"] = "ResourceQuota";
  rq["metadata"]["name"] = ownership::kGuaranteeQuotaName;
  rq["metadata"]["namespace"] = std::string(ns);
  rq["metadata"]["labels"][ownership::kManagedByLabel] = devices::kManagedByValue;
  rq["metadata"]["labels"][ownership::kTenantLabel] = room.tenant;
  rq["spec"]["hard"][StrCat("requests.", gpu_resource)] = std::to_string(room.gpus);
  rq["spec"]["scopeSelector"]["matchExpressions"] = json::array({scope});
  return rq;
}

bool IsOurGuaranteeQuota(const json& rq) {
  return LabelOf(rq, ownership::kManagedByLabel) == devices::kManagedByValue;
}

bool SameGuaranteeQuota(const json& existing, const json& desired) {
  for (const char* label : {ownership::kManagedByLabel, ownership::kTenantLabel}) {
    if (LabelOf(existing, label) != LabelOf(desired, label)) return false;
  }
  const json* a = Child(existing, "spec");
  const json* b = Child(desired, "spec");
  return a != nullptr && b != nullptr && *a == *b;
}

}  // namespace skb::quota

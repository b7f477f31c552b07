// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/quota_queries.h"

#include "bridge/api/frame.h"
#include "src/base/strings.h"

namespace skb::bridge {
namespace {

namespace v1 = ::skb::api::v1;

// Room left for the rest of a describe_tenant answer.
constexpr size_t kWorkAnswerBudget = api::kMaxQueryResponseSize - 64 * 1024;

}  // namespace

v1::TenantQuota ToTenantQuota(const quota::TenantRow& row, const quota::Tenant* tenant) {
  v1::TenantQuota out;
  out.set_name(row.name);
  out.set_guaranteed(row.guaranteed);
  out.set_limit(row.limit ? *row.limit : -1);
  out.set_in_use_slurm(row.in_use_slurm);
  out.set_in_use_kubernetes(row.in_use_kubernetes);
  out.set_borrowed(row.borrowed);
  out.set_pending(row.pending);
  out.set_reclaiming(row.reclaiming);
  out.set_per_type(row.per_type);
  for (const quota::TypeRow& tr : row.types) {
    v1::TypeQuota* t = out.add_types();
    t->set_type(tr.type);
    t->set_guaranteed(tr.guaranteed);
    t->set_limit(tr.limit ? *tr.limit : -1);
    t->set_in_use(tr.in_use);
    t->set_borrowed(tr.borrowed);
    t->set_pending(tr.pending);
  }
  if (tenant != nullptr) {
    for (const auto& a : tenant->slurm_accounts) out.add_slurm_accounts(a);
    for (const auto& n : tenant->kubernetes_namespaces) out.add_kubernetes_namespaces(n);
    out.set_weight(tenant->weight);
  }
  return out;
}

QuotaQueries::QuotaQueries(QuotaSource source, const config::Config* cfg)
    : source_(std::move(source)), cfg_(*cfg) {}

bool QuotaQueries::Handle(const v1::Request& req, v1::Response* resp) const {
  if (req.has_list_quotas()) {
    ListQuotas(resp->mutable_list_quotas());
    return true;
  }
  if (req.has_describe_tenant()) {
    DescribeTenant(req.describe_tenant().name(), resp);
    return true;
  }
  return false;
}

void QuotaQueries::ListQuotas(v1::ListQuotasResponse* out) const {
  out->set_enabled(cfg_.quotas.enabled());
  if (source_.leader) out->set_leader(source_.leader());
  std::string why;
  if (source_.ready) out->set_ready(source_.ready(&why));
  out->set_ready_reason(why);
  auto o = source_.observation ? source_.observation() : nullptr;
  if (o == nullptr) return;
  for (const quota::TenantRow& row : quota::TenantRows(cfg_.quotas, *o)) {
    *out->add_tenants() = ToTenantQuota(row, cfg_.quotas.Find(row.name));
  }
}

void QuotaQueries::DescribeTenant(const std::string& name, v1::Response* resp) const {
  auto o = source_.observation ? source_.observation() : nullptr;
  const quota::Tenant* tenant = cfg_.quotas.Find(name);
  if (o == nullptr || tenant == nullptr) {
    std::string known;
    for (const auto& t : cfg_.quotas.tenants) StrAppend(&known, known.empty() ? "" : ", ", t.name);
    resp->mutable_error()->set_code(v1::Error::NOT_FOUND);
    resp->mutable_error()->set_message(
        cfg_.quotas.enabled()
            ? StrCat("no tenant '", name, "'; tenants: ", known)
            : std::string("quotas are off (no quotas.tenants in the daemon's config)"));
    return;
  }
  auto* out = resp->mutable_describe_tenant();
  for (const quota::TenantRow& row : quota::TenantRows(cfg_.quotas, *o)) {
    if (row.name == name) *out->mutable_tenant() = ToTenantQuota(row, tenant);
  }
  size_t bytes = 0;
  for (const quota::ObservedWork& w : o->work) {
    if (w.work.tenant != name) continue;
    if (bytes > kWorkAnswerBudget) {
      out->set_omitted(out->omitted() + 1);
      continue;
    }
    v1::TenantWork* t = out->add_work();
    t->set_id(w.work.id);
    t->set_side(w.work.side == quota::Side::kSlurm ? "slurm" : "kubernetes");
    t->set_state(w.running ? "running" : "pending");
    if (w.running) {
      auto st = o->classification.standing.find(w.work.id);
      if (st != o->classification.standing.end()) {
        t->set_standing(std::string(quota::StandingName(st->second)));
      }
    }
    t->set_gpus(w.work.gpus);
    t->set_gpu_type(w.work.gpu_type);
    t->set_where(w.where);
    t->set_priority(w.work.priority);
    t->set_preemptible(w.work.preemptible);
    t->set_preemptible_why(w.preemptible_why);
    t->set_why(quota::WhyStanding(cfg_.quotas, *o, w));
    bytes += t->ByteSizeLong() + 8;
  }
}

}  // namespace skb::bridge

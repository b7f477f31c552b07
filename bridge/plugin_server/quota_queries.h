// SPDX-License-Identifier: Apache-2.0
// bridgectl's quota queries (list_quotas, describe_tenant), answered from the daemon's
// QuotaLedger: each tenant's floor, limit, GPUs in use on each side, borrowed and pending;
// each job and pod of a tenant with its standing and the rule that decided it.
//
//   QuotaQueries q({.observation = [&] { return c.quotas().Current(); }, ...}, &cfg);
//   admission.SetQueryHandler([&](const auto& req, auto* resp) {
//     return inventory.Handle(req, resp) || q.Handle(req, resp);
//   });
//
// Thread-safe when the source functions are.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "bridge/api/v1/bridge.pb.h"
#include "src/config/config.h"
#include "src/quota/observe.h"

namespace skb::bridge {

struct QuotaSource {
  // The latest classification (null: quotas off).
  std::function<std::shared_ptr<const quota::Observation>()> observation;
  std::function<std::string()> leader;
  std::function<bool(std::string* why)> ready;
};

// One tenant's line; `tenant` is its configuration (null for work of no tenant).
api::v1::TenantQuota ToTenantQuota(const quota::TenantRow& row, const quota::Tenant* tenant);

class QuotaQueries {
 public:
  // `cfg` must outlive this.
  QuotaQueries(QuotaSource source, const config::Config* cfg);

  // Fills the list_quotas / describe_tenant answer (or an Error) and returns true; false for
  // any other request body.
  bool Handle(const api::v1::Request& req, api::v1::Response* resp) const;

 private:
  void ListQuotas(api::v1::ListQuotasResponse* out) const;
  void DescribeTenant(const std::string& name, api::v1::Response* resp) const;

  const QuotaSource source_;
  const config::Config& cfg_;
};

}  // namespace skb::bridge

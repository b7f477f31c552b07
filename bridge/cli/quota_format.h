// SPDX-License-Identifier: Apache-2.0
// How bridgectl prints guaranteed quotas: `get quotas` (one line per tenant) and `describe
// tenant NAME` (each job and pod with its standing and why). Pure functions of the answers.
//
//   std::fputs(Render(QuotasListing(resp.list_quotas(), /*wide=*/false)).c_str(), stdout);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bridge/api/v1/bridge.pb.h"
#include "bridge/cli/format.h"

namespace skb::bridge::cli {

// TENANT GUARANTEED LIMIT IN-USE(SLURM/K8S) BORROWED PENDING RECLAIMING, and when a tenant
// has per-type floors BY-TYPE(IN-USE/GUARANTEED) ("a100 8/8, h100 2/4"; "-" for a floor of
// any type) (wide: + ACCOUNTS, NAMESPACES, WEIGHT). Work of no tenant is the line "(none)". Names:
// tenant/NAME (the tenants of the config; "(none)" is none). Quotas off: no table, a note says so.
Listing QuotasListing(const api::v1::ListQuotasResponse& resp, bool wide);
nlohmann::json QuotasJson(const api::v1::ListQuotasResponse& resp);

// The tenant's lines (per-type floors and limits named), its usage by GPU type, then WORK
// STATE GPUS [TYPE] WHERE STANDING PREEMPTIBLE and, under each, why.
std::string TenantText(const api::v1::DescribeTenantResponse& resp);
nlohmann::json TenantJson(const api::v1::DescribeTenantResponse& resp);

}  // namespace skb::bridge::cli

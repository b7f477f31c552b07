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

// TENANT GUARANTEED LIMIT IN-USE(SLURM/K8S) BORROWED PENDING RECLAIMING (wide: + ACCOUNTS,
// NAMESPACES, WEIGHT). Work of no tenant is the line "(none)". Names: tenant/NAME (the
// tenants of the config; "(none)" is none). Quotas off: no table, a note says so.
Listing QuotasListing(const api::v1::ListQuotasResponse& resp, bool wide);
nlohmann::json QuotasJson(const api::v1::ListQuotasResponse& resp);

// The tenant's line, then WORK SIDE STATE GPUS WHERE STANDING PREEMPTIBLE and, under each,
// why.
std::string TenantText(const api::v1::DescribeTenantResponse& resp);
nlohmann::json TenantJson(const api::v1::DescribeTenantResponse& resp);

}  // namespace skb::bridge::cli

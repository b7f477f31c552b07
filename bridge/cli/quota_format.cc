// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/quota_format.h"

#include "bridge/cli/format.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;

std::string Name(const v1::TenantQuota& t) { return t.name().empty() ? "(none)" : t.name(); }

std::string Limit(const v1::TenantQuota& t) { return t.limit() < 0 ? "-" : StrCat(t.limit()); }

template <typename List>
std::string JoinOrDash(const List& items) {
  std::string out;
  for (const auto& i : items) StrAppend(&out, out.empty() ? "" : ",", i);
  return out.empty() ? "-" : out;
}

// A type's name as bridgectl prints it: "(unknown)" for work of a type not known.
std::string TypeName(const v1::TypeQuota& t) { return t.type().empty() ? "(unknown)" : t.type(); }

// "a100 8/8, h100 2/4": in use / guaranteed per GPU type (tenants with per-type floors),
// "-" for a floor of any type.
std::string ByType(const v1::TenantQuota& t) {
  if (!t.per_type()) return "-";
  std::string out;
  for (const auto& tq : t.types()) {
    StrAppend(&out, out.empty() ? "" : ", ", TypeName(tq), " ", tq.in_use(), "/", tq.guaranteed());
  }
  return out.empty() ? "-" : out;
}

nlohmann::json TenantQuotaJson(const v1::TenantQuota& t) {
  nlohmann::json types = nlohmann::json::array();
  for (const auto& tq : t.types()) {
    types.push_back(
        {{"type", tq.type()},
         {"guaranteed", tq.guaranteed()},
         {"limit", tq.limit() < 0 ? nlohmann::json(nullptr) : nlohmann::json(tq.limit())},
         {"inUse", tq.in_use()},
         {"borrowed", tq.borrowed()},
         {"pending", tq.pending()}});
  }
  return {{"name", t.name()},
          {"guaranteed", t.guaranteed()},
          {"limit", t.limit() < 0 ? nlohmann::json(nullptr) : nlohmann::json(t.limit())},
          {"inUseSlurm", t.in_use_slurm()},
          {"inUseKubernetes", t.in_use_kubernetes()},
          {"borrowed", t.borrowed()},
          {"pending", t.pending()},
          {"reclaiming", t.reclaiming()},
          {"slurmAccounts",
           std::vector<std::string>(t.slurm_accounts().begin(), t.slurm_accounts().end())},
          {"kubernetesNamespaces", std::vector<std::string>(t.kubernetes_namespaces().begin(),
                                                            t.kubernetes_namespaces().end())},
          {"weight", t.weight()},
          {"perType", t.per_type()},
          {"types", types}};
}

}  // namespace

Listing QuotasListing(const v1::ListQuotasResponse& resp, bool wide) {
  Listing out;
  if (!resp.enabled()) {
    out.notes = "quotas are off: the daemon's config lists no quotas.tenants\n";
    return out;
  }
  std::vector<std::vector<std::string>>& rows = out.rows;
  rows = {
      {"TENANT", "GUARANTEED", "LIMIT", "IN-USE(SLURM/K8S)", "BORROWED", "PENDING", "RECLAIMING"}};
  // Per-type floors: one more column, only when some tenant has them.
  bool by_type = false;
  for (const auto& t : resp.tenants()) by_type = by_type || t.per_type();
  if (by_type) rows[0].push_back("BY-TYPE(IN-USE/GUARANTEED)");
  if (wide) {
    for (const char* h : {"ACCOUNTS", "NAMESPACES", "WEIGHT"}) rows[0].push_back(h);
  }
  for (const auto& t : resp.tenants()) {
    std::vector<std::string> row = {Name(t),
                                    StrCat(t.guaranteed()),
                                    Limit(t),
                                    StrCat(t.in_use_slurm() + t.in_use_kubernetes(), " (",
                                           t.in_use_slurm(), "/", t.in_use_kubernetes(), ")"),
                                    StrCat(t.borrowed()),
                                    StrCat(t.pending()),
                                    StrCat(t.reclaiming())};
    if (by_type) row.push_back(ByType(t));
    if (wide) {
      row.push_back(JoinOrDash(t.slurm_accounts()));
      row.push_back(JoinOrDash(t.kubernetes_namespaces()));
      row.push_back(t.name().empty() ? "-" : nlohmann::json(t.weight()).dump());
    }
    rows.push_back(std::move(row));
    if (!t.name().empty()) out.names.push_back("tenant/" + t.name());
  }
  if (!resp.ready()) StrAppend(&out.notes, "(not ready: ", resp.ready_reason(), ")\n");
  return out;
}

nlohmann::json QuotasJson(const v1::ListQuotasResponse& resp) {
  nlohmann::json tenants = nlohmann::json::array();
  for (const auto& t : resp.tenants()) tenants.push_back(TenantQuotaJson(t));
  return {{"enabled", resp.enabled()},
          {"tenants", tenants},
          {"leader", resp.leader()},
          {"ready", resp.ready()},
          {"readyReason", resp.ready_reason()}};
}

std::string TenantText(const v1::DescribeTenantResponse& resp) {
  const v1::TenantQuota& t = resp.tenant();
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    StrAppend(&out, key, std::string(key.size() < 18 ? 18 - key.size() : 1, ' '), value, "\n");
  };
  line("Tenant:", Name(t));
  line("Slurm accounts:", JoinOrDash(t.slurm_accounts()));
  line("Namespaces:", JoinOrDash(t.kubernetes_namespaces()));
  std::string floors, limits;
  for (const auto& tq : t.types()) {
    if (t.per_type() && tq.guaranteed() > 0) {
      StrAppend(&floors, floors.empty() ? "" : ", ", TypeName(tq), " ", tq.guaranteed());
    }
    if (tq.limit() >= 0)
      StrAppend(&limits, limits.empty() ? "" : ", ", TypeName(tq), " ", tq.limit());
  }
  line("Guaranteed:", t.per_type()
                          ? StrCat(t.guaranteed(), " GPUs: ", floors.empty() ? "-" : floors,
                                   " (per GPU type; other types borrow)")
                          : StrCat(t.guaranteed(), " GPUs"));
  line("Limit:", !limits.empty() ? StrCat(limits, " GPUs (per GPU type)")
                 : t.limit() < 0 ? "none"
                                 : StrCat(t.limit(), " GPUs"));
  line("In use:",
       StrCat(t.in_use_slurm() + t.in_use_kubernetes(), " GPUs (Slurm ", t.in_use_slurm(),
              ", Kubernetes ", t.in_use_kubernetes(), "), ", t.borrowed(), " borrowed"));
  line("Pending:", StrCat(t.pending(), " GPUs"));
  line("Reclaiming:", StrCat(t.reclaiming(), " GPUs"));
  if (t.types_size() > 0) {
    out += "By type:\n";
    std::vector<std::vector<std::string>> types = {
        {"  TYPE", "GUARANTEED", "LIMIT", "IN-USE", "BORROWED", "PENDING"}};
    for (const auto& tq : t.types()) {
      types.push_back({"  " + (tq.type().empty() ? std::string(t.per_type() ? "(unknown)" : "(any)")
                                                 : tq.type()),
                       t.per_type() ? StrCat(tq.guaranteed()) : "-",
                       tq.limit() < 0 ? "-" : StrCat(tq.limit()), StrCat(tq.in_use()),
                       StrCat(tq.borrowed()), StrCat(tq.pending())});
    }
    out += Table(types);
  }
  if (resp.work_size() == 0) {
    out += "Work: none\n";
    return out;
  }
  out += "Work:\n";
  std::vector<std::vector<std::string>> rows = {
      {"  WORK", "STATE", "GPUS", "WHERE", "STANDING", "PREEMPTIBLE"}};
  // GPU types: a column when some work has one ("any" for pending work that names none).
  bool typed = false;
  for (const auto& w : resp.work()) typed = typed || !w.gpu_type().empty();
  if (typed) rows[0].insert(rows[0].begin() + 3, "TYPE");
  for (const auto& w : resp.work()) {
    rows.push_back({"  " + w.id(), w.state(), StrCat(w.gpus()), w.where().empty() ? "-" : w.where(),
                    w.standing().empty() ? "-" : w.standing(), w.preemptible() ? "yes" : "no"});
    if (typed) {
      rows.back().insert(rows.back().begin() + 3, !w.gpu_type().empty()    ? w.gpu_type()
                                                  : w.state() == "pending" ? "any"
                                                                           : "(unknown)");
    }
  }
  out += Table(rows);
  out += "Why:\n";
  for (const auto& w : resp.work()) {
    StrAppend(&out, "  ", w.id(), ": ", w.why(), "; ",
              w.preemptible() ? "preemptible: " : "not preemptible: ", w.preemptible_why(), "\n");
  }
  if (resp.omitted() > 0) StrAppend(&out, "(", resp.omitted(), " more not listed)\n");
  return out;
}

nlohmann::json TenantJson(const v1::DescribeTenantResponse& resp) {
  nlohmann::json work = nlohmann::json::array();
  for (const auto& w : resp.work()) {
    work.push_back({{"id", w.id()},
                    {"side", w.side()},
                    {"state", w.state()},
                    {"standing", w.standing()},
                    {"gpus", w.gpus()},
                    {"gpuType", w.gpu_type()},
                    {"where", w.where()},
                    {"priority", w.priority()},
                    {"preemptible", w.preemptible()},
                    {"preemptibleWhy", w.preemptible_why()},
                    {"why", w.why()}});
  }
  return {{"tenant", TenantQuotaJson(resp.tenant())}, {"work", work}, {"omitted", resp.omitted()}};
}

}  // namespace skb::bridge::cli

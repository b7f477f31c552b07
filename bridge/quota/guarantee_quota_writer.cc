// SPDX-License-Identifier: Apache-2.0
#include "bridge/quota/guarantee_quota_writer.h"

#include "bridge/logging.h"
#include "k8s/api_error.h"
#include "k8s/field_reader.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "src/ownership/schema.h"

namespace skb::bridge {
namespace {

using json = nlohmann::json;

// What the listed quota's spec.hard says for `resource` ("-" for nothing).
std::string HardOf(const json& rq, const std::string& resource) {
  const json spec = rq.is_object() ? rq.value("spec", json::object()) : json::object();
  const std::string v =
      k8s::StringAt(spec.is_object() ? spec.value("hard", json::object()) : json(), resource);
  return v.empty() ? "-" : v;
}

}  // namespace

GuaranteeQuotaWriter::GuaranteeQuotaWriter(const config::Config* cfg, k8s::KubeClient* kube,
                                           std::function<bool()> acting)
    : cfg_(*cfg), kube_(kube), acting_(std::move(acting)) {}

GuaranteeQuotaWriter::Result GuaranteeQuotaWriter::Pass(
    const std::map<std::string, quota::NamespaceRoom>& want) {
  auto log = Logger("quota");
  Result r;
  if (acting_ && !acting_()) {
    r.skipped = true;
    return r;
  }
  auto listed = k8s::ListAll(
      *kube_, k8s::Resource::ResourceQuotas(), "",
      {.label_selector = StrCat(ownership::kManagedByLabel, "=", devices::kManagedByValue)});
  if (!listed.ok()) {
    log->warn("guarantee_quotas_unlisted error=\"{}\" (retried on the next pass)",
              listed.status().message());
    ++r.failed;
    return r;
  }
  std::map<std::string, json> ours;  // namespace -> the bridge's quota there
  for (json& item : listed->items) {
    if (k8s::MetadataString(item, "name") != ownership::kGuaranteeQuotaName ||
        !quota::IsOurGuaranteeQuota(item)) {
      continue;
    }
    std::string ns = k8s::MetadataString(item, "namespace");
    ours.emplace(std::move(ns), std::move(item));
  }
  std::vector<std::string> classes;
  if (!want.empty()) {
    auto pcs = k8s::ListAll(*kube_, k8s::Resource::PriorityClasses(), "", {});
    if (!pcs.ok()) {
      log->warn("priority_classes_unlisted error=\"{}\" (retried on the next pass)",
                pcs.status().message());
      ++r.failed;
      return r;
    }
    classes = quota::ProtectedClassNames(pcs->items, cfg_.lending.protected_class.value);
  }
  auto remove = [&](const std::string& ns, const json& existing, std::string_view why) {
    if (acting_ && !acting_()) {
      r.skipped = true;
      return;
    }
    k8s::DeleteOptions opts;
    if (std::string uid = k8s::MetadataString(existing, "uid"); !uid.empty()) {
      opts.precondition_uid = uid;
    }
    auto deleted =
        kube_->Delete(k8s::Resource::ResourceQuotas(), ns, ownership::kGuaranteeQuotaName, opts);
    if (!deleted.ok() && !k8s::IsNotFound(deleted.status())) {
      log->warn("guarantee_quota_delete_failed namespace={} error=\"{}\"", ns,
                deleted.status().message());
      ++r.failed;
      return;
    }
    log->info("guarantee_quota_deleted namespace={} reason=\"{}\"", ns, why);
    ++r.deleted;
  };
  for (const auto& [ns, room] : want) {
    if (acting_ && !acting_()) {
      r.skipped = true;
      return r;
    }
    auto it = ours.find(ns);
    if (classes.empty()) {
      if (it != ours.end()) {
        remove(ns, it->second,
               StrCat("no PriorityClass has a value of at least ",
                      cfg_.lending.protected_class.value, ", so no pod there is protected"));
      }
      continue;
    }
    json desired = quota::GuaranteeQuotaObject(ns, room, classes, cfg_.lending.gpu_resource);
    if (it == ours.end()) {
      auto created = kube_->Create(k8s::Resource::ResourceQuotas(), ns, desired);
      if (!created.ok()) {
        // AlreadyExists: a ResourceQuota of that name without the bridge's label, never
        // changed.
        log->warn("guarantee_quota_create_failed namespace={} tenant={} gpus={} error=\"{}\"", ns,
                  room.tenant, room.gpus, created.status().message());
        ++r.failed;
        continue;
      }
      log->info("guarantee_quota_created namespace={} tenant={} gpus={} classes={}", ns,
                room.tenant, room.gpus, StrJoin(classes, ","));
      ++r.created;
    } else if (!quota::SameGuaranteeQuota(it->second, desired)) {
      desired["metadata"]["resourceVersion"] = k8s::MetadataString(it->second, "resourceVersion");
      auto updated = kube_->Update(k8s::Resource::ResourceQuotas(), ns, desired);
      if (!updated.ok()) {
        log->warn("guarantee_quota_update_failed namespace={} tenant={} gpus={} error=\"{}\"", ns,
                  room.tenant, room.gpus, updated.status().message());
        ++r.failed;
        continue;
      }
      log->info("guarantee_quota_updated namespace={} tenant={} gpus={} classes={} was_gpus={}", ns,
                room.tenant, room.gpus, StrJoin(classes, ","),
                HardOf(it->second, StrCat("requests.", cfg_.lending.gpu_resource)));
      ++r.updated;
    }
  }
  for (const auto& [ns, existing] : ours) {
    if (want.count(ns)) continue;
    remove(ns, existing, "the namespace is in no tenant (quotas.tenants) or enforcement is off");
    if (r.skipped) return r;
  }
  return r;
}

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// Work that cannot be preempted runs only within its tenant's guarantee, on the Kubernetes
// side too: in each namespace of each tenant the bridge keeps a ResourceQuota
// (ownership::kGuaranteeQuotaName) that kube-apiserver enforces when a pod is created. It is
// scoped to the PriorityClasses at or above lending.protected_class (the pods that cannot be
// preempted) and caps their GPU requests at what the tenant's floor leaves for that
// namespace. This file is the pure part: how much room, and the object to write
// (bridge/quota/guarantee_quota_writer.h writes it).
//
//   if (EnforcesOnKubernetes(cfg)) {
//     for (const auto& [ns, room] : GuaranteeQuotas(cfg.quotas, observation)) {
//       json rq = GuaranteeQuotaObject(ns, room, ProtectedClassNames(classes, threshold),
//                                      cfg.lending.gpu_resource);
//       ...  // create, or update when !SameGuaranteeQuota(listed, rq)
//     }
//   }
//
// The room of a namespace N of tenant T is its floor (with per-type floors, their sum: the
// ResourceQuota counts GPUs of any type) less the GPUs that T's work that cannot be
// preempted holds elsewhere: its running Slurm jobs and its pods, running or pending, in
// T's other namespaces. N's own pods the ResourceQuota counts itself. Never below 0.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/quota/observe.h"

namespace skb::config {
struct Config;
}

namespace skb::quota {

// Whether the bridge keeps the ResourceQuotas: quotas on, lending on (with lending off a
// floor is reported, never enforced, as on the Slurm side) and kubernetes_enforcement
// "resource_quota".
bool EnforcesOnKubernetes(const config::Config& cfg);

// Per configured tenant: the GPUs its work that cannot be preempted may still take within
// its floor (the floor less the GPUs of its running Slurm jobs and its running or pending
// pods that cannot be preempted), at least 0. What skb_tenant_nonpreemptible_room_gpus shows.
std::map<std::string, int64_t> NonPreemptibleRoom(const QuotaConfig& config, const Observation& o);

// The cap of one namespace's ResourceQuota.
struct NamespaceRoom {
  std::string tenant;
  int64_t gpus = 0;
  friend bool operator==(const NamespaceRoom&, const NamespaceRoom&) = default;
};
// Per namespace of every tenant (a tenant without namespaces has none): the GPUs its pods
// that cannot be preempted may request in all, as described above.
std::map<std::string, NamespaceRoom> GuaranteeQuotas(const QuotaConfig& config,
                                                     const Observation& o);

// The ResourceQuotas the bridge keeps now (what the writer makes the cluster hold): none
// when it does not enforce (EnforcesOnKubernetes false: a pass with nothing wanted removes
// the quotas an earlier configuration left), else GuaranteeQuotas of the standing `o` less the
// reservation namespace (lending.namespace_name): reservation pods run at the protected
// class and hold whole nodes, so a quota there (a tenant's namespace by mistake) would
// refuse them and stop lending.
std::map<std::string, NamespaceRoom> WantedGuaranteeQuotas(const config::Config& cfg,
                                                           const Observation& o);

// The names of the PriorityClasses (scheduling.k8s.io/v1 objects, as listed) whose value is
// at least `threshold`, sorted: the classes of pods that cannot be preempted.
std::vector<std::string> ProtectedClassNames(std::span<const nlohmann::json> classes,
                                             int64_t threshold);

// The ResourceQuota for namespace `ns`: labelled managed-by and with the tenant, scoped to
// `classes` (not empty), capping requests.<gpu_resource> at room.gpus.
nlohmann::json GuaranteeQuotaObject(std::string_view ns, const NamespaceRoom& room,
                                    const std::vector<std::string>& classes,
                                    std::string_view gpu_resource);
// Whether a ResourceQuota carries the bridge's managed-by label: the only ones it changes.
bool IsOurGuaranteeQuota(const nlohmann::json& rq);
// Whether `existing` (as the apiserver returns it) already has `desired`'s labels and spec.
bool SameGuaranteeQuota(const nlohmann::json& existing, const nlohmann::json& desired);

}  // namespace skb::quota

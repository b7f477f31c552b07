// SPDX-License-Identifier: Apache-2.0
// The daemon's view of guaranteed quotas: the latest jobs of the Slurm poll, the GPU pods
// and the managed nodes (fed by the controller's poller and informers, as the reconciler
// is), classified by the pure core (src/quota/observe.h) on every change and held for
// readers: bridgectl (get quotas, describe tenant), the metrics and the plugin's admission.
//
//   QuotaLedger ledger(&cfg, &clock);
//   ledger.SetSlurmJobs(state.jobs);            // the poller, on a jobs change
//   ledger.SetSlurmNodes(state.nodes);          // ... on a nodes change: their GPU types
//   ledger.UpdatePod(pod); ledger.RemovePod(ns, name);
//   ledger.SetClaim("ns/claim", devices::QuotaGpusOf(claim, classes, driver));  // pods' claims
//   ledger.SetManagedNode("node1", true, lent, "node1", "h100");
//   std::shared_ptr<const quota::Observation> o = ledger.Current();   // null: quotas off
//   ledger.SetOnQuotaFacts([&](const ownership::QuotaFacts& f) {   // the planners' input
//     reconciler.SetQuotaFacts(f); });
//
// A change that cannot alter the classification (a pod's status write, quotas off) costs a
// comparison; any other recomputes the whole classification (cheap: see bench/RESULTS.md).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bridge/observability/bridge_metrics.h"
#include "src/base/clock.h"
#include "src/base/thread_annotations.h"
#include "src/config/config.h"
#include "src/devices/k8s_devices.h"
#include "src/inventory/managed_node.h"
#include "src/ownership/quota_facts.h"
#include "src/quota/observe.h"
#include "src/slurm/types.h"

namespace skb::bridge {

class QuotaLedger {
 public:
  // Both must outlive the ledger.
  QuotaLedger(const config::Config* cfg, const Clock* clock);

  bool enabled() const { return cfg_.quotas.enabled(); }

  void SetSlurmJobs(const std::vector<slurm::JobView>& jobs);
  // The GPU type of each Slurm node: its first typed GPU GRES ("gpu:h100:8" -> h100), the
  // name quotas' per-type floors use.
  void SetSlurmNodes(const std::vector<slurm::NodeView>& nodes);
  void UpdatePod(const inventory::GpuPod& pod);
  void RemovePod(const std::string& ns, const std::string& name);
  // A ResourceClaim ("ns/name") and the GPUs it counts for the pods using it
  // (devices::QuotaGpusOf); nullopt: it is gone. Fed before the device lane's cache, so a
  // pending pod the device lane counts is counted here too.
  void SetClaim(const std::string& key, std::optional<devices::ClaimDemand> gpus);
  // `lent`: the node is lent to Kubernetes (or still carries the reclaim taint), what a
  // reclaim may take back; nullopt otherwise. `slurm_name`: the Slurm node it pairs with
  // (kubernetes.node_names; "" for its own name), whose GRES type is its GPU type;
  // `gpu_product`: its nvidia.com/gpu.product label, the type when Slurm names none.
  void SetManagedNode(const std::string& k8s_name, bool managed,
                      std::optional<quota::LentNode> lent = std::nullopt,
                      std::string slurm_name = "", std::string gpu_product = "");

  // Called whenever what the planners learn from quotas changes (and once with the first
  // classification): the running jobs within their tenant's guarantee, kept from other
  // tenants' demand, and the pending pods that would run borrowed, which may take idle GPUs
  // only. Called under the ledger's lock, so calls come in the order the classifications
  // were made; `fn` must not call back into the ledger. Set it before the ledger is fed.
  void SetOnQuotaFacts(std::function<void(const ownership::QuotaFacts&)> fn);

  // The latest classification; null while quotas are off.
  std::shared_ptr<const quota::Observation> Current() const;
  // How long the last classification took, and how many there were.
  std::chrono::nanoseconds last_duration() const { return std::chrono::nanoseconds(last_ns_); }
  uint64_t computations() const { return computations_; }

 private:
  void RecomputeLocked() REQUIRES(mu_);
  // Adds the GPUs of `pod`'s claims to pod->gpus and says in pod->uncounted which are not.
  void AddClaimGpusLocked(inventory::GpuPod* pod) const REQUIRES(mu_);

  const config::Config& cfg_;
  const Clock* const clock_;
  mutable Mutex mu_;
  std::vector<slurm::JobView> jobs_ GUARDED_BY(mu_);                    // the ones that can count
  std::map<std::string, inventory::GpuPod> pods_ GUARDED_BY(mu_);       // "ns/name"
  std::map<std::string, devices::ClaimDemand> claims_ GUARDED_BY(mu_);  // "ns/name"
  std::set<std::string, std::less<>> managed_ GUARDED_BY(mu_);
  std::map<std::string, quota::LentNode> lent_ GUARDED_BY(mu_);
  std::map<std::string, std::string> slurm_gpu_types_ GUARDED_BY(mu_);  // Slurm name -> type
  struct K8sNodeNames {
    std::string slurm_name;
    std::string gpu_product;
    friend bool operator==(const K8sNodeNames&, const K8sNodeNames&) = default;
  };
  std::map<std::string, K8sNodeNames> k8s_nodes_ GUARDED_BY(mu_);  // managed, by k8s name
  std::shared_ptr<const quota::Observation> current_ GUARDED_BY(mu_);
  std::function<void(const ownership::QuotaFacts&)> on_facts_ GUARDED_BY(mu_);
  std::optional<ownership::QuotaFacts> facts_ GUARDED_BY(mu_);  // the last ones told
  std::atomic<int64_t> last_ns_{0};
  std::atomic<uint64_t> computations_{0};
};

// Sets skb_tenant_gpus{tenant,state}, skb_tenant_guarantee_gpus and skb_tenant_pending_gpus
// from `o`: every configured tenant, and "(none)" for work of no tenant; and per GPU type
// skb_tenant_type_gpus{tenant,type,state} and skb_tenant_type_guarantee_gpus{tenant,type}
// for the tenants with per-type floors (type "(unknown)" for work of a type not known); and
// skb_tenant_nonpreemptible_room_gpus{tenant} for every configured tenant.
void ExportQuotaMetrics(const quota::QuotaConfig& config, const quota::Observation& o,
                        observability::BridgeMetrics* m);

}  // namespace skb::bridge

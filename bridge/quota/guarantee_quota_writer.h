// SPDX-License-Identifier: Apache-2.0
// Keeps the ResourceQuotas of src/quota/guarantee_quota.h in step with the ledger: one
// ResourceQuota ownership::kGuaranteeQuotaName in each tenant namespace, scoped to the
// PriorityClasses at or above lending.protected_class, capping those pods' GPU requests at
// what the tenant's floor leaves for the namespace (quota::GuaranteeQuotas).
//
//   GuaranteeQuotaWriter writer(&cfg, kube, [&] { return elector->HoldsValidLease(); });
//   GuaranteeQuotaWriter::Result r =
//       writer.Pass(quota::EnforcesOnKubernetes(cfg)
//                       ? quota::GuaranteeQuotas(cfg.quotas, *ledger.Current()) : {});
//
// A pass lists the PriorityClasses and the ResourceQuotas carrying the bridge's managed-by
// label, then creates the missing ones, updates those whose spec or tenant differs and
// deletes the bridge's in namespaces no longer wanted (or all of them when no PriorityClass
// reaches the protected value: a quota scoped to nothing is not needed). A ResourceQuota
// without the label is never changed, even with the bridge's name. Every write is logged;
// a failed one is counted and the caller passes again later (nothing is retried within a
// pass). Writes only while `acting` says this replica leads.
//
// Who calls it: the controller's own thread for it (Controller::GuaranteeQuotaLoop), run
// only while leading, like the device lane's. The ledger's callbacks run under its lock and
// the reconcile workers are per node; an apiserver round trip in either would hold up the
// classification or a node. The thread takes the ledger's latest Observation (a shared,
// immutable snapshot: no lock held while it computes or writes) when the ledger recomputed,
// and passes only when the wanted quotas changed, after a failure, and every minute (a
// PriorityClass created or edited, a quota edited by hand).
//
// Thread-compatible: one caller at a time.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "k8s/kube_client.h"
#include "src/config/config.h"
#include "src/quota/guarantee_quota.h"

namespace skb::bridge {

class GuaranteeQuotaWriter {
 public:
  // `cfg` and `kube` must outlive the writer. `acting`: whether this replica may write now.
  GuaranteeQuotaWriter(const config::Config* cfg, k8s::KubeClient* kube,
                       std::function<bool()> acting);

  struct Result {
    int created = 0;
    int updated = 0;
    int deleted = 0;
    int failed = 0;        // reads or writes that failed (logged); the next pass retries
    bool skipped = false;  // not leading: nothing read or written
    int writes() const { return created + updated + deleted; }
  };
  // One pass towards `want` (namespace -> room): empty removes every quota of the bridge.
  Result Pass(const std::map<std::string, quota::NamespaceRoom>& want);

 private:
  const config::Config& cfg_;
  k8s::KubeClient* const kube_;
  const std::function<bool()> acting_;
};

}  // namespace skb::bridge

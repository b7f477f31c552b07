// SPDX-License-Identifier: Apache-2.0
// bridgectl's queries (list_nodes, describe_node, list_jobs) answered from the daemon's merged
// view: the Reconciler's snapshot and the planner's explanation. Any replica answers from its own
// caches; the answer says who leads.
//
//   InventoryQueries q({.snapshot = [&] { return c.reconciler().Snapshot(); }, ...}, &cfg);
//   admission.SetQueryHandler([&](const auto& req, auto* resp) { return q.Handle(req, resp); });
//
// Thread-safe when the source functions are.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/api/v1/bridge.pb.h"
#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/devices/observe.h"
#include "src/health/node_health.h"
#include "src/inventory/inventory.h"
#include "src/ownership/quota_facts.h"

namespace skb::bridge {

struct InventorySource {
  std::function<inventory::Inventory()> snapshot;
  std::function<health::NodePlan(const std::string& node)> plan;
  std::function<std::string()> leader;
  // Every job record of the last Slurm poll (pending and finished ones included). Optional:
  // without it list_jobs shows the jobs holding a node (from the snapshot).
  std::function<std::shared_ptr<const std::vector<slurm::JobView>>()> jobs;
  std::function<bool(std::string* why)> ready;
  // The GPU-granular lane's view of the cluster now (devices::Observe over this replica's
  // caches); nullopt when gpu_sharing is off. Optional: without it every node shows
  // gpu_mode "node".
  std::function<std::optional<devices::Observation>()> devices;
  // Guaranteed quotas: the running jobs within their tenant's guarantee, which the bridge
  // never preempts for another's demand. Optional: without it get jobs judges by the
  // lending policy alone.
  std::function<ownership::GuaranteedJobs()> guaranteed_jobs;
  const Clock* clock = nullptr;
};

// The label that names a node's GPU model (GPU Feature Discovery).
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

// One node as `bridgectl get nodes` shows it; its owner is plan::PlanOwner's.
api::v1::NodeSummary Summarize(const inventory::ManagedNode& node, const config::Config& cfg,
                               Clock::TimePoint now);

// Sets `out`'s gpu_mode and, for a node shared GPU by GPU, one GpuOwner per GPU (and its
// GPU count and model when Kubernetes has no nvidia.com/gpu allocatable for it, as on DRA
// nodes). `obs` null: gpu_sharing is off.
void SummarizeGpus(const devices::Observation* obs, api::v1::NodeSummary* out);

// One job as `bridgectl get jobs` shows it; `owners` maps Slurm node names to their
// NodeSummary.owner. Its preemptibility is the lend's: the lending policy, then the
// guarantee (a job in `guaranteed` is not preemptible, "runs within tenant T's guarantee").
api::v1::JobSummary SummarizeJob(const slurm::JobView& job,
                                 const std::map<std::string, std::string, std::less<>>& owners,
                                 const config::Config& cfg, Clock::TimePoint now,
                                 const ownership::GuaranteedJobs& guaranteed = {});

class InventoryQueries {
 public:
  // `cfg` must outlive this.
  InventoryQueries(InventorySource source, const config::Config* cfg);

  // Fills the list_nodes / describe_node / list_jobs answer (or an Error) and returns true; false
  // for any other request body.
  bool Handle(const api::v1::Request& req, api::v1::Response* resp) const;

 private:
  void ListNodes(api::v1::ListNodesResponse* out) const;
  void DescribeNode(const std::string& name, api::v1::Response* resp) const;
  void ListJobs(const api::v1::ListJobsRequest& req, api::v1::ListJobsResponse* out) const;

  const InventorySource source_;
  const config::Config& cfg_;
};

}  // namespace skb::bridge

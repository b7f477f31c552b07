// SPDX-License-Identifier: Apache-2.0
// The daemon's control loop, wired: Kubernetes informers (managed nodes, GPU pods) and the
// Slurm poller feed the Reconciler; one worker thread, run only by the elected leader and
// only once every cache has synced, plans and acts; the admission snapshot for the plugin is
// refreshed from the same Slurm view.
//
//   Controller c({.config = &cfg, .kube = kube.get(), .slurm = &slurm, .clock = &clock,
//                 .identity = hostname});
//   RETURN_IF_ERROR(c.Start());
//   ...                 // c.Ready(&why), c.reconciler().Snapshot(), c.admission()
//   c.Stop();
//
// Followers keep warm caches (informers and poller run on every replica) so `bridgectl` and
// readiness work everywhere and a new leader acts at once. Leadership lost: the worker stops
// before the next action and `on_lost_leadership` runs (the daemon exits; restart is cheap,
// nothing lives only in memory).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bridge/observability/bridge_metrics.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/quota/guarantee_quota_writer.h"
#include "bridge/quota/quota_ledger.h"
#include "bridge/reconcile/action_executor.h"
#include "bridge/reconcile/device_lane.h"
#include "bridge/reconcile/device_world.h"
#include "bridge/reconcile/reconciler.h"
#include "bridge/slurm/slurm_client.h"
#include "bridge/slurm/slurm_poller.h"
#include "k8s/api_event_recorder.h"
#include "k8s/informer.h"
#include "k8s/kube_client.h"
#include "k8s/leader_elector.h"
#include "src/base/clock.h"
#include "src/config/config.h"
#include "src/ownership/quota_facts.h"
#include "src/reconcile/work_queue.h"

namespace skb::bridge {

// The informers the controller runs: managed nodes (the configured label selector), live
// pods (not Succeeded/Failed) and the bridge's reservation pods in every phase (the
// reservation namespace, the role label), each trimmed to the fields the bridge reads.
// Exposed so that benchmarks list and cache exactly what the daemon does.
k8s::InformerOptions NodeInformerOptions(const config::Config& cfg);
k8s::InformerOptions PodInformerOptions();
k8s::InformerOptions ReservationInformerOptions(const config::Config& cfg);

struct ControllerOptions {
  const config::Config* config = nullptr;  // required; must outlive the controller
  k8s::KubeClient* kube = nullptr;         // required: informers and actions
  // Separate clients (own rate limits, as kube-controller-manager does) so that a burst of
  // Events never delays an action and nothing delays a Lease renewal. Null: `kube`.
  k8s::KubeClient* events_kube = nullptr;
  k8s::KubeClient* election_kube = nullptr;
  slurm::SlurmClient* slurm = nullptr;  // required
  const Clock* clock = nullptr;         // required
  // Leader election on the Lease `lease_name` in the bridge's namespace. Off: this
  // process acts as if it always led (a single replica, tests).
  bool leader_election = true;
  std::string identity;  // this replica's name in the Lease (pod name, hostname-pid)
  std::string lease_name = "slurm-k8s-bridge";
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // Reconcile workers: different nodes are planned and acted on in parallel (one node is
  // never handled by two at once). Slurm calls are serialized by the Slurm client anyway;
  // parallelism hides Kubernetes round trips when many nodes change at once.
  int workers = 4;
  // Status workers: node-condition writes (SlurmNodeHealthy, SlurmDrained), in a queue of
  // their own so that a burst of them never delays a drain (Reconciler::SetStatusQueue).
  // Fewer than the reconcile workers: when the apiserver, not the rate limit, is what a
  // set-up waits for, the lanes share it as their workers do, and protection (the
  // reservations) comes before decoration (the conditions). 5,000 kwok nodes on two cores:
  // 2 status workers, every reservation in 163-228 s and every condition in 308-363 s; 4,
  // both in 252 s.
  int status_workers = 2;
  // Optional: the bridge's Prometheus metrics (reconcile, actions, Slurm polls).
  observability::BridgeMetrics* metrics = nullptr;
  // Called once, on the elector's thread, when a leader stops leading.
  std::function<void()> on_lost_leadership;
  // Optional: called on a reconcile worker after each action it carried out (a test hook:
  // the daemon's SKB_TEST_CRASH_AFTER).
  std::function<void(const plan::Action&)> after_action;
  // Optional: called on a reconcile worker before each action (a test hook: the daemon's
  // SKB_TEST_PAUSE_BEFORE).
  std::function<void(const plan::Action&)> before_action;
};

class Controller {
 public:
  explicit Controller(ControllerOptions options);
  ~Controller();  // Stop()s

  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts informers, poller, event recorder and the election. InvalidArgument for bad
  // options (e.g. an unparsable node selector is reported by the first list instead).
  Status Start();
  // Stops acting first, then everything else; releases the Lease. Idempotent.
  void Stop();

  // Ready: every cache synced, Slurm polled once, and leadership known (leader or a
  // follower who has seen a leader). `why` says what is missing.
  bool Ready(std::string* why) const;
  // Whether the reservation pod `name` (the reservation namespace's) with this uid carries
  // the released annotation in the informer's view: what a terminating reservation's
  // container asks the HTTP server (LendingConfig::release_url). False when lending is off,
  // the pod is unknown or another pod has taken the name.
  bool ReservationReleased(const std::string& name, std::string_view uid) const;
  bool IsLeader() const;
  // Which caches are synced (metrics): the node and pod informers, the first Slurm poll.
  bool NodesSynced() const { return nodes_ && nodes_->HasSynced(); }
  bool PodsSynced() const {
    return pods_ && pods_->HasSynced() && (!reservations_ || reservations_->HasSynced()) &&
           DevicesSynced();
  }
  // The GPU-granular lane's informers (ResourceSlices, ResourceClaims, the bridge's
  // DeviceTaintRules); true when gpu_sharing is off.
  bool DevicesSynced() const {
    return (!slices_ || slices_->HasSynced()) && (!claims_ || claims_->HasSynced()) &&
           (!rules_ || rules_->HasSynced());
  }
  bool SlurmPolled() const { return polled_; }
  // The informers' counters (zero before Start()).
  k8s::InformerStats NodeInformerStats() const {
    return nodes_ ? nodes_->Stats() : k8s::InformerStats{};
  }
  k8s::InformerStats PodInformerStats() const {
    return pods_ ? pods_->Stats() : k8s::InformerStats{};
  }
  // What became of the Events recorded so far (created, aggregated, dropped, failed).
  k8s::EventRecorderStats EventStats() const { return events_->Stats(); }
  std::string Leader() const;

  const Reconciler& reconciler() const { return *reconciler_; }
  // Every job record of the last Slurm poll, pending and finished ones included (bridgectl
  // get jobs); null before the first poll.
  std::shared_ptr<const std::vector<skb::slurm::JobView>> SlurmJobs() const;
  AdmissionService& admission() { return admission_; }
  // The GPU-granular lane (null when gpu_sharing is off).
  const DeviceLane* device_lane() const { return device_lane_.get(); }
  // What the GPU-granular lane sees now (bridgectl: per-GPU owners, each node's mode):
  // devices::Observe over this replica's caches, which every replica keeps (the device
  // informers and the Slurm poll run on followers too), so a follower answers as the
  // leader's lane would plan. nullopt when gpu_sharing is off.
  std::optional<devices::Observation> ObserveDevices() const;
  const QuotaLedger& quotas() const { return quotas_; }  // fed like the reconciler

  // What the planner says about `node` now (its explanation, and the actions it would
  // take: none once the leader has acted). Plans without acting, on any replica.
  plan::NodePlan PlanNow(const std::string& node) const;
  // The reconcile queue and the status lane's (the workqueue_* metrics read them).
  const reconcile::WorkQueue& queue() const { return queue_; }
  const reconcile::WorkQueue& status_queue() const { return status_queue_; }

 private:
  void StartActing();
  void StopActing();
  // Reconcile workers take nodes from queue_; status workers from status_queue_.
  void WorkerLoop(int index, bool status_lane);
  // The device lane's World from the caches (device_world_ must be set).
  devices::World DeviceWorld() const;
  // The GPU-granular lane's worker: a pass whenever its World moved, at least every second.
  void DeviceLoop();
  // Keeps the ResourceQuotas skb-guarantee in step with the ledger (quotas on; see
  // guarantee_quota_writer.h for when it passes).
  void GuaranteeQuotaLoop();
  void OnSlurm(const slurm::SlurmState& state);
  // Action outcomes; the reconcile duration only for the reconcile lane.
  void RecordMetrics(const ReconcileResult& r, std::chrono::nanoseconds took, bool status_lane);
  // A queue's options: its on_change wakes the workers; its metrics are the daemon's queue
  // `name` (observability::kWorkQueues), when the daemon gave metrics.
  reconcile::WorkQueueOptions QueueOptions(std::string_view name);

  const ControllerOptions opts_;
  const config::Config& cfg_;
  // Before queue_: its on_change wakes the worker.
  std::mutex worker_wait_mu_;
  std::condition_variable worker_cv_;
  reconcile::WorkQueue queue_;
  reconcile::WorkQueue status_queue_;
  std::unique_ptr<k8s::ApiEventRecorder> events_;
  std::unique_ptr<ActionExecutor> executor_;
  std::unique_ptr<Reconciler> reconciler_;
  AdmissionService admission_;
  QuotaLedger quotas_{opts_.config, opts_.clock};
  std::unique_ptr<k8s::Informer> nodes_;
  std::unique_ptr<k8s::Informer> pods_;
  std::unique_ptr<k8s::Informer> reservations_;  // lending on only
  std::unique_ptr<k8s::Informer> slices_;        // gpu_sharing on only
  std::unique_ptr<k8s::Informer> claims_;
  std::unique_ptr<k8s::Informer> rules_;
  // The device lane, its cache and executor (gpu_sharing on, or winding down).
  void MakeDeviceLane();
  bool WindDownNeeded();
  std::unique_ptr<DeviceWorldCache> device_world_;
  std::unique_ptr<DeviceExecutorImpl> device_executor_;
  std::unique_ptr<DeviceLane> device_lane_;
  std::unique_ptr<GuaranteeQuotaWriter> guarantee_quotas_;  // quotas on only
  // Set once the device lane has observed once (the node lane waits for it, so it never
  // lends whole a node the device lane shares).
  std::atomic<bool> devices_observed_{false};
  std::unique_ptr<slurm::SlurmPoller> poller_;
  std::unique_ptr<k8s::LeaderElector> elector_;

  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> leading_{false};
  std::atomic<bool> polled_{false};
  std::atomic<bool> published_{false};
  std::atomic<bool> stop_worker_{true};
  std::mutex worker_mu_;
  std::vector<std::thread> workers_;  // guarded by worker_mu_
  mutable std::mutex jobs_mu_;
  std::shared_ptr<const std::vector<skb::slurm::JobView>> jobs_;              // guarded by jobs_mu_
  std::shared_ptr<const std::vector<skb::slurm::NodeView>> slurm_nodes_;      // guarded by jobs_mu_
  std::shared_ptr<const std::vector<skb::slurm::PartitionView>> partitions_;  // jobs_mu_
  // What quotas decide (the QuotaLedger's), for the device lane's World.
  std::shared_ptr<const ownership::QuotaFacts> quota_facts_;  // guarded by jobs_mu_
  std::atomic<uint64_t> slurm_generation_{0};
};

}  // namespace skb::bridge

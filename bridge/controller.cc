// SPDX-License-Identifier: Apache-2.0
#include "bridge/controller.h"

#include <pthread.h>

#include <algorithm>
#include <optional>

#include "bridge/device_informers.h"
#include "bridge/logging.h"
#include "bridge/reconcile/k8s_convert.h"
#include "bridge/reconcile/priority_classes.h"
#include "k8s/field_selection.h"
#include "k8s/json_selection.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "src/admission/admission.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "src/ownership/quota_facts.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"
#include "src/quota/guarantee_quota.h"

namespace skb::bridge {
namespace {

// Terminal pods hold no GPU and kube-scheduler does not count them either (docs/architecture.md):
// the pod cache keeps only the others, and a pod turning terminal arrives as a delete.
constexpr char kLivePodsSelector[] = "status.phase!=Succeeded,status.phase!=Failed";

// The live-pod view of a pod (or nullopt when the bridge does not track it): one that asks
// for GPUs (pod.gpus, the node lane's) or uses ResourceClaims (pod.claims, which quotas
// count; gpus 0 when it asks through claims alone).
std::optional<inventory::GpuPod> GpuPodOf(const k8s::ObjectPtr& obj, k8s::PodInfo* info) {
  auto parsed = k8s::ParsePod(*obj);
  if (!parsed.ok()) {
    Logger("k8s")->warn("pod_skipped key=\"{}\" error=\"{}\"", k8s::Informer::KeyOf(*obj),
                        parsed.status().message());
    return std::nullopt;
  }
  *info = std::move(*parsed);
  // The trim keeps spec.resourceClaims and status.resourceClaimStatuses.
  devices::PodClaims claims = devices::ClaimsOfPod(*obj);
  if (info->GpuRequest() <= 0 && claims.empty()) return std::nullopt;
  inventory::GpuPod pod = ToPod(*info);
  pod.claims = std::move(claims.claims);
  pod.unresolved_claims = claims.unresolved;
  // The model it selects (quotas' per-type floors): read from the object, which keeps
  // spec.nodeSelector and affinity.nodeAffinity (k8s::SelectPodFields).
  pod.gpu_model = devices::RequestedGpuModel(*obj);
  return pod;
}

admission::Policy PolicyFrom(const config::Config& cfg) {
  return admission::Policy{.preemptible_partitions = cfg.admission.preemptible_partitions,
                           .preemptible_qos = cfg.admission.preemptible_qos,
                           .reject_unknown_features = cfg.admission.reject_unknown_features};
}

}  // namespace

k8s::InformerOptions NodeInformerOptions(const config::Config& cfg) {
  return {.resource = k8s::Resource::Nodes(),
          .label_selector = cfg.kubernetes.node_selector,
          .transform = k8s::SelectNodeFields,
          .decode_selection = &k8s::JsonSelection::NodeWatchEvent()};
}

k8s::InformerOptions PodInformerOptions() {
  return {.resource = k8s::Resource::Pods(),
          .field_selector = kLivePodsSelector,
          .transform = k8s::SelectPodFields,
          .decode_selection = &k8s::JsonSelection::PodWatchEvent()};
}

k8s::InformerOptions ReservationInformerOptions(const config::Config& cfg) {
  return {.resource = k8s::Resource::Pods(),
          .ns = cfg.lending.namespace_name,
          .label_selector = StrCat(ownership::kRoleLabel, "=", ownership::kReservationRole),
          .transform = k8s::SelectPodFields,
          .decode_selection = &k8s::JsonSelection::PodWatchEvent()};
}

Controller::Controller(ControllerOptions options)
    : opts_(std::move(options)),
      cfg_(*opts_.config),
      queue_(*opts_.clock, QueueOptions("nodes")),
      status_queue_(*opts_.clock, QueueOptions("status")),
      admission_(PolicyFrom(cfg_)) {
  events_ = std::make_unique<k8s::ApiEventRecorder>(
      opts_.events_kube != nullptr ? opts_.events_kube : opts_.kube,
      k8s::EventRecorderOptions{.host = opts_.identity, .clock = opts_.clock});
  executor_ = std::make_unique<ActionExecutor>(opts_.slurm, opts_.kube, events_.get(), opts_.clock,
                                               cfg_.lending);
  reconciler_ = std::make_unique<Reconciler>(cfg_, cfg_.kubernetes.node_names, opts_.clock,
                                             executor_.get(), &queue_);
  reconciler_->SetStatusQueue(&status_queue_);
  if (opts_.after_action) reconciler_->SetAfterAction(opts_.after_action);
  if (opts_.before_action) reconciler_->SetBeforeAction(opts_.before_action);
  // A leader whose Lease may have passed to another replica stops between two actions.
  reconciler_->SetActingGate([this] { return elector_ == nullptr || elector_->HoldsValidLease(); });
  // Jobs within their tenant's guarantee are kept from other tenants' demand; pods beyond
  // their tenant's guarantee take idle GPUs only.
  quotas_.SetOnQuotaFacts([this](const ownership::QuotaFacts& f) {
    reconciler_->SetQuotaFacts(f);
    auto shared = std::make_shared<const ownership::QuotaFacts>(f);
    {
      std::lock_guard<std::mutex> lock(jobs_mu_);
      quota_facts_ = std::move(shared);
    }
    ++slurm_generation_;  // the device lane passes again
  });
  if (cfg_.quotas.enabled()) {
    guarantee_quotas_ = std::make_unique<GuaranteeQuotaWriter>(opts_.config, opts_.kube, [this] {
      return elector_ == nullptr || elector_->HoldsValidLease();
    });
  }
  if (cfg_.gpu_sharing.enabled) MakeDeviceLane();
}

void Controller::MakeDeviceLane() {
  device_world_ = std::make_unique<DeviceWorldCache>(cfg_);
  device_executor_ = std::make_unique<DeviceExecutorImpl>(opts_.slurm, opts_.kube, events_.get(),
                                                          executor_.get(), cfg_, opts_.clock);
  device_executor_->SetPodUids(
      [this](const std::string& pod) { return device_world_->PodUid(pod); });
  device_lane_ =
      std::make_unique<DeviceLane>(cfg_, device_executor_.get(), events_.get(), opts_.clock);
  device_lane_->SetActingGate(
      [this] { return elector_ == nullptr || elector_->HoldsValidLease(); });
  if (opts_.after_action) device_lane_->SetAfterAction(opts_.after_action);
}

// gpu_sharing is off, and an earlier run with it on left holds (the bridge's
// DeviceTaintRules): the device lane then runs to wind them down, each node as one leaving
// GPU sharing (a pod on lent GPUs keeps them until it goes, then its placeholder ends and
// the node goes whole to the node lane), and plans no give. Without the right to read the
// holds, they stay, and the log says what to grant.
bool Controller::WindDownNeeded() {
  auto log = Logger("reconcile");
  // One list of the bridge's own holds (an apiserver without DRA answers 404: nothing to
  // wind down). The chart grants DRA rights only with gpu_sharing on or
  // rbac.keepGpuSharingRules, so a 403 is the usual answer with sharing off: said once, at
  // info, with what to grant should holds remain.
  k8s::ListOptions one;
  one.limit = 1;
  // Holds only: an admin's GPU drain (bridgectl drain --gpu) carries the label too, and is
  // no hold to wind down.
  one.label_selector =
      StrCat(DeviceTaintRuleInformerOptions().label_selector, ",!", devices::kDrainedByLabel);
  auto holds = opts_.kube->List(k8s::Resource::DeviceTaintRules(), "", one);
  if (!holds.ok()) {
    if (holds.status().code() == StatusCode::kNotFound) return false;
    const bool refused = holds.status().code() == StatusCode::kPermissionDenied;
    log->info(
        "gpu_sharing_off holds=unknown why=\"{}\": holds and placeholders a run with "
        "gpu_sharing on left, if any, stay as they are; to wind them down grant the bridge "
        "the DRA rules (chart: rbac.keepGpuSharingRules) and restart it",
        refused ? "no right to list DeviceTaintRules" : holds.status().message());
    return false;
  }
  if (holds->items.empty()) return false;
  log->warn(
      "gpu_sharing_off winding_down=true: holds of an earlier run with gpu_sharing on remain; "
      "each node gives its lent GPUs back as its pods go, then its GPUs stay held for Slurm");
  return true;
}

reconcile::WorkQueueOptions Controller::QueueOptions(std::string_view name) {
  reconcile::WorkQueueOptions q;
  if (opts_.metrics != nullptr) q.metrics = opts_.metrics->WorkQueue(name);
  // Taking the waiters' mutex before notifying closes the lost wake-up: a worker either
  // has not yet read NextReadyTime under that mutex (and sees the new key) or is already
  // waiting (and is woken).
  q.on_change = [this] {
    { std::lock_guard<std::mutex> lock(worker_wait_mu_); }
    worker_cv_.notify_all();
  };
  return q;
}

Controller::~Controller() { Stop(); }

Status Controller::Start() {
  if (started_.exchange(true)) return FailedPreconditionError("controller already started");
  auto log = Logger("reconcile");

  nodes_ = std::make_unique<k8s::Informer>(opts_.kube, NodeInformerOptions(cfg_));
  auto on_node = [this](const k8s::ObjectPtr& obj) {
    auto info = k8s::ParseNode(*obj);
    if (!info.ok()) {
      Logger("k8s")->warn("node_skipped name=\"{}\" error=\"{}\"", k8s::Informer::KeyOf(*obj),
                          info.status().message());
      return;
    }
    inventory::K8sNode node = ToK8sNode(*info);
    quotas_.SetManagedNode(k8s::Informer::KeyOf(*obj), true, quota::LentNodeOf(node),
                           cfg_.kubernetes.node_names.SlurmName(node).value_or(""),
                           node.Label(devices::kGpuProductLabel).value_or(""));
    reconciler_->UpdateK8sNode(std::move(node));
  };
  nodes_->AddHandlers(
      {.on_add = on_node,
       .on_update = [on_node](const k8s::ObjectPtr&, const k8s::ObjectPtr& n) { on_node(n); },
       .on_delete =
           [this](const k8s::ObjectPtr& obj, bool) {
             quotas_.SetManagedNode(k8s::Informer::KeyOf(*obj), false);
             reconciler_->RemoveK8sNode(k8s::Informer::KeyOf(*obj));
           },
       .wants_old_object = false});

  pods_ = std::make_unique<k8s::Informer>(opts_.kube, PodInformerOptions());
  // The ledger before the device lane's cache: a pending pod the device lane counts is
  // counted by quotas first (its borrowing is known when a give is planned for it).
  auto on_pod = [this](const k8s::ObjectPtr& obj) {
    k8s::PodInfo info;
    std::optional<inventory::GpuPod> pod = GpuPodOf(obj, &info);
    if (pod) {
      quotas_.UpdatePod(*pod);
    } else if (!info.meta.name.empty()) {
      quotas_.RemovePod(info.meta.namespace_, info.meta.name);
    }
    if (device_world_) device_world_->SetPod(k8s::Informer::KeyOf(*obj), obj.get());
    // The node lane tracks the pods asking for the GPU resource, and those using claims (the
    // maintenance cycle evicts them: ManagedNode::claim_pods).
    if (pod && (pod->gpus > 0 || !pod->claims.empty())) {
      reconciler_->UpdatePod(std::move(*pod));
    } else if (!info.meta.name.empty()) {
      reconciler_->RemovePod(info.meta.namespace_, info.meta.name);
    }
  };
  pods_->AddHandlers(
      {.on_add = on_pod,
       .on_update = [on_pod](const k8s::ObjectPtr&, const k8s::ObjectPtr& p) { on_pod(p); },
       .on_delete =
           [this](const k8s::ObjectPtr& obj, bool) {
             auto info = k8s::ParsePod(*obj);
             if (info.ok()) quotas_.RemovePod(info->meta.namespace_, info->meta.name);
             if (device_world_) device_world_->SetPod(k8s::Informer::KeyOf(*obj), nullptr);
             if (info.ok()) reconciler_->RemovePod(info->meta.namespace_, info->meta.name);
           },
       .wants_old_object = false});
  if (cfg_.lending.enabled) {
    reservations_ = std::make_unique<k8s::Informer>(opts_.kube, ReservationInformerOptions(cfg_));
    auto on_reservation = [this](const k8s::ObjectPtr& obj) {
      k8s::PodInfo info;
      if (auto pod = GpuPodOf(obj, &info); pod && pod->gpus > 0) {
        reconciler_->UpdateReservation(std::move(*pod));
      } else if (!info.meta.name.empty()) {
        reconciler_->RemoveReservation(info.meta.namespace_, info.meta.name);
      }
    };
    reservations_->AddHandlers(
        {.on_add = on_reservation,
         .on_update = [on_reservation](const k8s::ObjectPtr&,
                                       const k8s::ObjectPtr& p) { on_reservation(p); },
         .on_delete =
             [this](const k8s::ObjectPtr& obj, bool) {
               auto info = k8s::ParsePod(*obj);
               if (info.ok()) {
                 reconciler_->RemoveReservation(info->meta.namespace_, info->meta.name);
               }
             },
         .wants_old_object = false});
  }

  if (!cfg_.gpu_sharing.enabled && WindDownNeeded()) MakeDeviceLane();
  if (device_world_) {
    // An apiserver that does not serve DRA's resources would keep the device informers from
    // ever syncing, and with them every lane: GPU-granular sharing is off instead, and every
    // node stays node-granular. (Unavailable: the informers retry as for any outage.)
    auto unserved = UnservedDeviceResources(opts_.kube);
    if (unserved.ok() && !unserved->empty()) {
      log->error(
          "gpu_sharing_off reason=\"resource.k8s.io/v1 {} not served by the apiserver "
          "(Kubernetes 1.34 or later serves them)\": every node is shared node by node",
          StrJoin(*unserved, ","));
      device_lane_.reset();
      device_executor_.reset();
      device_world_.reset();
    }
  }
  if (device_world_) {
    // Each informer converts what changed into the device lane's World (device_world.h).
    // `first`, when given, sees each change before the cache does.
    using First = std::function<void(const std::string&, const nlohmann::json*)>;
    auto add = [this](std::unique_ptr<k8s::Informer>* informer, k8s::InformerOptions options,
                      void (DeviceWorldCache::*set)(const std::string&, const nlohmann::json*),
                      First first = nullptr) {
      *informer = std::make_unique<k8s::Informer>(opts_.kube, std::move(options));
      auto on = [this, set, first](const std::string& key, const nlohmann::json* obj) {
        if (first) first(key, obj);
        (device_world_.get()->*set)(key, obj);
      };
      (*informer)->AddHandlers(
          {.on_add = [on](const k8s::ObjectPtr& o) { on(k8s::Informer::KeyOf(*o), o.get()); },
           .on_update = [on](const k8s::ObjectPtr&,
                             const k8s::ObjectPtr& o) { on(k8s::Informer::KeyOf(*o), o.get()); },
           .on_delete = [on](const k8s::ObjectPtr& o,
                             bool) { on(k8s::Informer::KeyOf(*o), nullptr); },
           .wants_old_object = false});
    };
    add(&slices_, ResourceSliceInformerOptions(cfg_), &DeviceWorldCache::SetSlice);
    add(&claims_, ResourceClaimInformerOptions(), &DeviceWorldCache::SetClaim,
        [this](const std::string& key, const nlohmann::json* obj) {
          // Quotas count the GPUs of pods' claims; fed before the device lane's cache.
          if (!cfg_.gpu_sharing.enabled) return;  // winding down: quotas count none
          quotas_.SetClaim(key, obj == nullptr ? std::nullopt
                                               : std::optional(devices::QuotaGpusOf(
                                                     *obj, cfg_.gpu_sharing.device_classes,
                                                     cfg_.gpu_sharing.driver,
                                                     cfg_.gpu_sharing.mig_device_classes)));
        });
    add(&rules_, DeviceTaintRuleInformerOptions(), &DeviceWorldCache::SetRule);
  }

  poller_ = std::make_unique<slurm::SlurmPoller>(
      opts_.slurm, cfg_.slurm.poll_interval, cfg_.slurm.resync_interval,
      [this](const slurm::SlurmState& s) { OnSlurm(s); });
  if (auto* m = opts_.metrics) {
    poller_->SetObserver([m](slurm::PollResult result, std::chrono::microseconds took) {
      m->slurm_poll_duration.WithLabels({std::string(slurm::PollResultName(result))})
          .Observe(std::chrono::duration<double>(took).count());
    });
  }

  events_->Start();
  nodes_->Start();
  pods_->Start();
  if (reservations_) reservations_->Start();
  for (k8s::Informer* i : {slices_.get(), claims_.get(), rules_.get()}) {
    if (i != nullptr) i->Start();
  }
  poller_->Start();

  if (!opts_.leader_election) {
    log->info("leader_election=off: this replica acts alone");
    StartActing();
    return OkStatus();
  }
  k8s::LeaderElectionConfig le{.lease_namespace = cfg_.kubernetes.namespace_name,
                               .lease_name = opts_.lease_name,
                               .identity = opts_.identity,
                               .lease_duration = opts_.lease_duration,
                               .renew_deadline = opts_.renew_deadline,
                               .retry_period = opts_.retry_period,
                               .on_started_leading = [this] { StartActing(); },
                               .on_stopped_leading =
                                   [this] {
                                     StopActing();
                                     if (!stopped_ && opts_.on_lost_leadership)
                                       opts_.on_lost_leadership();
                                   },
                               .on_new_leader =
                                   [](const std::string& id) {
                                     Logger("reconcile")->info("leader_observed identity={}", id);
                                   },
                               .clock = opts_.clock};
  auto elector = k8s::LeaderElector::Create(
      opts_.election_kube != nullptr ? opts_.election_kube : opts_.kube, std::move(le));
  if (!elector.ok()) return elector.status();
  elector_ = std::move(*elector);
  elector_->Start();
  return OkStatus();
}

void Controller::Stop() {
  if (!started_ || stopped_.exchange(true)) return;
  if (elector_) elector_->Stop();  // calls StopActing via on_stopped_leading
  StopActing();
  if (poller_) poller_->Stop();
  if (reservations_) reservations_->Stop();
  for (k8s::Informer* i : {slices_.get(), claims_.get(), rules_.get()}) {
    if (i != nullptr) i->Stop();
  }
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
  if (events_) events_->Stop();
}

std::shared_ptr<const std::vector<skb::slurm::JobView>> Controller::SlurmJobs() const {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  return jobs_;
}

devices::World Controller::DeviceWorld() const {
  std::shared_ptr<const std::vector<skb::slurm::NodeView>> nodes;
  std::shared_ptr<const std::vector<skb::slurm::JobView>> jobs;
  std::shared_ptr<const ownership::QuotaFacts> quota;
  std::shared_ptr<const std::vector<skb::slurm::PartitionView>> partitions;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    nodes = slurm_nodes_;
    jobs = jobs_;
    quota = quota_facts_;
    partitions = partitions_;
  }
  devices::World w = device_world_->Build(nodes ? *nodes : std::vector<skb::slurm::NodeView>{},
                                          jobs ? *jobs : std::vector<skb::slurm::JobView>{},
                                          reconciler_->PairedNodes());
  if (partitions) {
    w.partitions = *partitions;
    w.partitions_known = true;
  }
  if (quota) {
    w.guaranteed_jobs = quota->guaranteed_jobs;
    devices::ApplyBorrowing(quota->borrowing_pods, &w);
  }
  return w;
}

std::optional<devices::Observation> Controller::ObserveDevices() const {
  if (!device_world_) return std::nullopt;
  return devices::Observe(DeviceWorld(), cfg_, opts_.clock->Now());
}

void Controller::OnSlurm(const slurm::SlurmState& s) {
  // The ledger first: a node the new jobs make dirty is planned with their standing.
  if (s.nodes_changed) quotas_.SetSlurmNodes(s.nodes);
  if (s.jobs_changed) quotas_.SetSlurmJobs(s.jobs);
  // The poll's nodes and jobs in one update (Reconciler::SetSlurm says why).
  if (s.nodes_changed || s.jobs_changed) {
    reconciler_->SetSlurm(s.nodes_changed ? std::optional(s.nodes) : std::nullopt,
                          s.jobs_changed ? std::optional(s.jobs) : std::nullopt);
  }
  if (s.nodes_changed) {
    auto nodes = std::make_shared<const std::vector<skb::slurm::NodeView>>(s.nodes);
    std::lock_guard<std::mutex> lock(jobs_mu_);
    slurm_nodes_ = std::move(nodes);
  }
  if (s.jobs_changed) {
    auto jobs = std::make_shared<const std::vector<skb::slurm::JobView>>(s.jobs);
    std::lock_guard<std::mutex> lock(jobs_mu_);
    jobs_ = std::move(jobs);
  }
  if (s.nodes_changed || s.jobs_changed) ++slurm_generation_;
  if (s.partitions_changed) {  // the first poll's always is
    auto partitions = std::make_shared<const std::vector<skb::slurm::PartitionView>>(s.partitions);
    std::lock_guard<std::mutex> lock(jobs_mu_);
    partitions_ = std::move(partitions);
  }
  if (s.nodes_changed || s.partitions_changed) {
    std::string default_partition;
    for (const auto& p : s.partitions) {
      if (p.is_default) default_partition = p.name;
    }
    admission_.Publish(admission::InventoryFromSlurm(s.nodes, default_partition));
    // Info once (the plugin is answered from real data from now on), then debug: the
    // snapshot changes with every job start.
    if (!published_.exchange(true)) {
      Logger("slurm")->info("snapshot_published nodes={} partitions={} jobs={}", s.nodes.size(),
                            s.partitions.size(), s.jobs.size());
    }
  }
  Logger("slurm")->debug("slurm_view nodes={} jobs={} changed=nodes:{},partitions:{},jobs:{}",
                         s.nodes.size(), s.jobs.size(), s.nodes_changed, s.partitions_changed,
                         s.jobs_changed);
  polled_ = true;
  worker_cv_.notify_all();
}

void Controller::StartActing() {
  std::lock_guard<std::mutex> lock(worker_mu_);
  if (leading_.exchange(true)) return;
  Logger("reconcile")->info("acting identity={}", opts_.identity);
  stop_worker_ = false;
  for (int i = 0; i < std::max(1, opts_.workers); ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i, /*status_lane=*/false); });
  }
  for (int i = 0; i < std::max(1, opts_.status_workers); ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i, /*status_lane=*/true); });
  }
  if (device_lane_) workers_.emplace_back([this] { DeviceLoop(); });
  if (guarantee_quotas_) workers_.emplace_back([this] { GuaranteeQuotaLoop(); });
}

void Controller::StopActing() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(worker_mu_);
    if (!leading_.exchange(false)) return;
    stop_worker_ = true;
    threads = std::move(workers_);
    workers_.clear();
  }
  worker_cv_.notify_all();
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  Logger("reconcile")->info("stopped_acting identity={}", opts_.identity);
}

void Controller::WorkerLoop(int index, bool status_lane) {
  pthread_setname_np(pthread_self(), StrCat(status_lane ? "status-" : "reconcile-", index).c_str());
  reconcile::WorkQueue& queue = status_lane ? status_queue_ : queue_;
  auto log = Logger("reconcile");
  // Acting on half a view could resume a node whose condition is not cached yet: wait.
  {
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    while (!stop_worker_ && !(nodes_->HasSynced() && PodsSynced() && polled_)) {
      worker_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  // The node lane must know which nodes the device lane shares before it plans any.
  while (!stop_worker_ && device_lane_ && !devices_observed_) {
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    worker_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (stop_worker_) return;
  if (index == 0 && !status_lane && cfg_.lending.enabled) {
    if (Status s = EnsurePriorityClasses(opts_.kube, cfg_.lending); !s.ok()) {
      log->error(
          "priority_classes error=\"{}\" (reservation pods will be refused until this "
          "is fixed)",
          s.message());
    }
  }
  if (index == 0 && !status_lane) {
    // A new leader plans every node once: whatever happened while nobody acted is handled.
    const inventory::Inventory snapshot = reconciler_->Snapshot();
    for (const auto& n : snapshot.nodes()) queue_.Add(n.name);
    log->info("caches_synced nodes={} pods={} queued={} workers={}", nodes_->Size(), pods_->Size(),
              queue_.Len(), opts_.workers);
  }
  while (!stop_worker_) {
    if (auto key = queue.Get()) {
      const auto start = std::chrono::steady_clock::now();
      ReconcileResult r =
          status_lane ? reconciler_->WriteNodeStatus(*key) : reconciler_->ReconcileNode(*key);
      // Observe our own Slurm changes without waiting (status writes show up in the node
      // informer by themselves).
      if (r.executed > 0 && !status_lane) poller_->Kick();
      if (opts_.metrics != nullptr) {
        RecordMetrics(r, std::chrono::steady_clock::now() - start, status_lane);
      }
      queue.Done(*key);
      continue;
    }
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    auto next = queue.NextReadyTime();
    auto wait = std::chrono::milliseconds(1000);
    if (next) {
      auto until =
          std::chrono::duration_cast<std::chrono::milliseconds>(*next - opts_.clock->Now());
      wait = std::clamp(until, std::chrono::milliseconds(1), wait);
    }
    // on_change takes this lock before it notifies, so no wake-up slips between
    // NextReadyTime and the wait; the 1 s bound only re-reads a simulated clock.
    worker_cv_.wait_for(lock, wait);
  }
}

void Controller::DeviceLoop() {
  pthread_setname_np(pthread_self(), "devices");
  auto log = Logger("devices");
  {
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    while (!stop_worker_ && !(nodes_->HasSynced() && PodsSynced() && polled_)) {
      worker_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  uint64_t seen_world = ~0ull, seen_slurm = ~0ull;
  int64_t seen_second = -1;
  std::optional<Clock::TimePoint> recheck_at;  // the last plan's (a grace's end)
  while (!stop_worker_) {
    const uint64_t world = device_world_->Generation(), slurm = slurm_generation_.load();
    // Cool-downs and give timeouts are timers in whole seconds of the wall clock (their
    // records keep whole seconds): a pass as each second begins, not a second after the last
    // pass. A grace is counted to the millisecond: a pass at the instant the plan named.
    const Clock::TimePoint now = opts_.clock->Now();
    const int64_t second = ownership::ToUnix(now);
    const bool due = recheck_at && now >= *recheck_at;
    if (world == seen_world && slurm == seen_slurm && second == seen_second && !due) {
      Clock::TimePoint wake = ownership::FromUnix(second + 1) + std::chrono::milliseconds(2);
      if (recheck_at) wake = std::min(wake, *recheck_at);
      std::unique_lock<std::mutex> lock(worker_wait_mu_);
      worker_cv_.wait_for(
          lock, std::clamp<std::chrono::nanoseconds>(wake - now, std::chrono::milliseconds(1),
                                                     std::chrono::milliseconds(100)));
      continue;
    }
    seen_world = world;
    seen_slurm = slurm;
    seen_second = second;
    const devices::World w = DeviceWorld();
    const bool acting = elector_ == nullptr || elector_->HoldsValidLease();
    DeviceLane::Result r = device_lane_->RunPass(w, acting);
    recheck_at = r.plan.recheck_at;
    KeepEarliest(&recheck_at, r.retry_at);
    if (opts_.metrics != nullptr) {
      RecordDeviceMetrics(r, ownership::ToUnix(opts_.clock->Now()), opts_.metrics);
    }
    reconciler_->SetGpuSharing(device_lane_->SharingViews());
    if (!devices_observed_.exchange(true)) {
      log->info("devices_observed gpu_granular={} node_granular={}", r.observation.nodes.size(),
                r.observation.node_granular.size());
      for (const auto& [node, why] : r.observation.node_granular) {
        log->info("node_granular node={} why=\"{}\"", node, why);
      }
      worker_cv_.notify_all();
    }
    if (r.executed > 0) poller_->Kick();
  }
}

void Controller::GuaranteeQuotaLoop() {
  pthread_setname_np(pthread_self(), "quota-enforce");
  // A pass every minute at least: a PriorityClass created or edited, a quota edited by hand.
  // After a failure, again within 10 s (or at the next change).
  constexpr auto kFullPassEvery = std::chrono::minutes(1);
  constexpr auto kRetryAfter = std::chrono::seconds(10);
  // Rooms computed from half a view would be too wide: wait as the other lanes do.
  {
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    while (!stop_worker_ && !(nodes_->HasSynced() && PodsSynced() && polled_)) {
      worker_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  uint64_t seen = ~0ull;
  std::optional<std::map<std::string, quota::NamespaceRoom>> applied;  // by the last clean pass
  Clock::TimePoint next_pass{};
  while (!stop_worker_) {
    const Clock::TimePoint now = opts_.clock->Now();
    const uint64_t computations = quotas_.computations();
    if (computations != seen || now >= next_pass) {
      seen = computations;
      std::map<std::string, quota::NamespaceRoom> want;
      if (auto o = quotas_.Current()) want = quota::WantedGuaranteeQuotas(cfg_, *o);
      if (!applied || *applied != want || now >= next_pass) {
        GuaranteeQuotaWriter::Result r = guarantee_quotas_->Pass(want);
        if (r.failed == 0 && !r.skipped) {
          applied = std::move(want);
          next_pass = now + kFullPassEvery;
        } else {
          applied.reset();
          next_pass = now + kRetryAfter;
        }
      }
    }
    std::unique_lock<std::mutex> lock(worker_wait_mu_);
    worker_cv_.wait_for(lock, std::chrono::seconds(1));
  }
}

void Controller::RecordMetrics(const ReconcileResult& r, std::chrono::nanoseconds took,
                               bool status_lane) {
  observability::BridgeMetrics& m = *opts_.metrics;
  const double seconds = std::chrono::duration<double>(took).count();
  if (status_lane) {
    // not a reconcile: only its actions are counted
  } else if (!r.status.ok()) {
    m.reconcile_error.Observe(seconds);
  } else if (r.plan.recheck_at) {
    m.reconcile_requeue.Observe(seconds);
  } else {
    m.reconcile_success.Observe(seconds);
  }
  // Durations the planner dated (since_unix): whole seconds, as the annotations keep them;
  // none when undated (0) or dated after now.
  const int64_t now_unix = ownership::ToUnix(opts_.clock->Now());
  const auto since = [now_unix](int64_t since_unix) -> std::optional<double> {
    if (since_unix <= 0 || since_unix > now_unix) return std::nullopt;
    return static_cast<double>(now_unix - since_unix);
  };
  for (const auto& [index, effect] : r.outcomes) {
    const plan::Action* action = &r.plan.actions[index];
    m.Action(action->Kind(), observability::OutcomeOf(effect.status())).Increment();
    // What follows counts what changed: a repeat that found its work done counts once.
    if (!effect.ok() || *effect != Effect::kChanged) continue;
    const std::string_view cause = plan::DrainCauseLabel(action->cause);
    if (action->Is<plan::DrainSlurmNode>()) m.drains.WithLabels({cause}).Increment();
    if (const auto* o = action->Get<plan::ResumeSlurmNode>()) {
      m.resumes.WithLabels({cause}).Increment();
      const auto s = since(o->since_unix);
      if (action->cause == plan::Cause::kReturn && s) m.return_duration.Observe(*s);
    }
    if (const auto* o = action->Get<plan::PreemptSlurmJobs>()) {
      m.preemptions.WithLabels({plan::PreemptionModeLabel(o->mode)})
          .Increment(static_cast<double>(o->job_ids.size()));
      if (const auto s = since(o->since_unix)) {
        for (size_t i = 0; i < o->job_ids.size(); ++i) m.preemption_grace.Observe(*s);
      }
    }
    if (const auto* o = action->Get<plan::ReleaseReservationPod>();
        o != nullptr && o->check == plan::ReleaseCheck::kNoSlurmJobs) {
      if (const auto s = since(o->since_unix)) m.lend_duration.Observe(*s);
    }
  }
}

bool Controller::ReservationReleased(const std::string& name, std::string_view uid) const {
  if (!reservations_ || name.empty() || uid.empty()) return false;
  k8s::ObjectPtr obj = reservations_->Get(StrCat(cfg_.lending.namespace_name, "/", name));
  if (!obj) return false;
  auto info = k8s::ParsePod(*obj);
  if (!info.ok() || info->meta.uid != uid) return false;
  auto it = info->meta.annotations.find(ownership::kReleasedAnnotation);
  return it != info->meta.annotations.end() && it->second == "true";
}

bool Controller::Ready(std::string* why) const {
  std::string missing;
  if (!nodes_ || !nodes_->HasSynced()) StrAppend(&missing, "node cache not synced; ");
  if (!PodsSynced()) StrAppend(&missing, "pod cache not synced; ");
  if (!polled_) StrAppend(&missing, "Slurm not polled yet; ");
  if (opts_.leader_election && elector_ && !elector_->IsLeader() && elector_->Leader().empty()) {
    StrAppend(&missing, "no leader known; ");
  }
  if (why != nullptr) *why = missing.empty() ? "ready" : missing.substr(0, missing.size() - 2);
  return missing.empty();
}

bool Controller::IsLeader() const { return leading_; }

std::string Controller::Leader() const {
  if (!opts_.leader_election) return opts_.identity;
  return elector_ ? elector_->Leader() : "";
}

plan::NodePlan Controller::PlanNow(const std::string& node) const {
  return reconciler_->PlanNode(node);
}

}  // namespace skb::bridge

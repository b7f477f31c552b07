// SPDX-License-Identifier: Apache-2.0
// The bridge's metrics: every series /metrics exposes, in one place, with what updates it.
// Names follow Prometheus practice: prefix `skb_`, base units (seconds), `_total` on
// counters, bounded label values: no pod or job names (those go into Events and logs), and
// node names only in the one per-node family an alert must name a node from
// (skb_node_owner_since_timestamp_seconds: one series per managed node, as
// kube-state-metrics' per-node families). The work queues' families are client-go's
// (workqueue_*{name}), so dashboards made for controllers read them unchanged.
//
//   observability::Registry registry;
//   observability::BridgeMetrics m(&registry, bridge::kVersion, bridge::kSlurmVersion);
//   m.Action("DrainSlurmNode", Outcome::kSuccess).Inc();
//   m.gpus_by_owner.WithLabels({"lending"}).Set(8);
//
// Every label value listed below is created at construction with value 0, so dashboards
// and alerts see a series before its first event ("absent" is never "zero").
//
// Thread-safe, as the Registry. Handles returned here stay valid as long as the Registry.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/observability/metrics.h"
#include "src/base/status.h"
#include "src/reconcile/work_queue.h"

namespace skb::observability {

// Label values, fixed sets.
// gpu-shared: handed over to the GPU-granular lane (its GPUs by owner: skb_shared_gpus).
inline constexpr std::array<std::string_view, 6> kOwners = {"slurm",     "k8s",       "lending",
                                                            "returning", "unhealthy", "gpu-shared"};
// Owners of one GPU on a shared node (devices::OwnerName).
inline constexpr std::array<std::string_view, 6> kDeviceOwners = {"slurm",    "to-k8s",    "k8s",
                                                                  "to-slurm", "unguarded", "out"};
// Result of one reconcile of one node.
inline constexpr std::string_view kResultSuccess = "success";  // converged, Forget()
inline constexpr std::string_view kResultRequeue = "requeue";  // waiting (grace, cool-down)
inline constexpr std::string_view kResultError = "error";      // an action failed

enum class Outcome {
  kSuccess,         // the action took effect (or was already in effect: idempotent no-op)
  kRetryableError,  // Unavailable/Aborted/DeadlineExceeded: requeued with back-off
  kError,           // any other failure: a condition and an Event say why
};
std::string_view OutcomeName(Outcome o);  // "success", "retryable_error", "error"
// The outcome of an action that returned `s`, by the one retry rule (src/base/retry.h), so
// the metric agrees with the requeue.
Outcome OutcomeOf(const Status& s);

// Why the bridge drained or resumed a Slurm node (`cause` label).
inline constexpr std::array<std::string_view, 3> kDrainCauses = {"health", "lending",
                                                                 "maintenance"};
// How preempted Slurm jobs were made to leave a lent node (`mode` label): what
// plan::PreemptionModeLabel gives (a requeue_hold counts as requeue; suspend is refused by
// the lending config, so no job is ever preempted that way).
inline constexpr std::array<std::string_view, 2> kPreemptionModes = {"requeue", "cancel"};
// What the daemon answered a job_submit plugin request (`result` label).
inline constexpr std::array<std::string_view, 3> kPluginResults = {"accepted", "rejected", "error"};
// What became of a connection to the plugin/CLI socket (`result` label): accepted, denied
// (uid not allowed, too many connections), dropped (bad input), stalled (a partial frame
// or unread answers for the stall timeout).
inline constexpr std::array<std::string_view, 4> kSocketResults = {"accepted", "denied", "dropped",
                                                                   "stalled"};
// What the daemon keeps a cache of (`source` label of skb_cache_synced).
inline constexpr std::array<std::string_view, 3> kCacheSources = {"nodes", "pods", "slurm"};
// Which informer (`source` label of the skb_informer_* counters).
inline constexpr std::array<std::string_view, 2> kInformerSources = {"nodes", "pods"};
// What became of an Event the bridge recorded (`outcome` of skb_events_total).
inline constexpr std::array<std::string_view, 5> kEventOutcomes = {
    "created", "aggregated", "dropped_queue", "dropped_spam", "failed"};
// Result of one Slurm poll (`result` label of skb_slurm_poll_duration_seconds).
inline constexpr std::array<std::string_view, 4> kPollResults = {"changed", "unchanged", "repaired",
                                                                 "error"};
// The `code` label of one answer, one convention for every request: "2xx" for a success
// (the client keeps no success status), the HTTP status of a failure ("403", "409", "503",
// ...; one below 400, e.g. a 2xx whose body could not be read, is "2xx"), "transport" when
// no response came (connect, TLS, timeout).
std::string KubernetesResponseCode(bool ok, std::optional<int> http_status);

// The work queues (label `name` of the workqueue_* families).
inline constexpr std::array<std::string_view, 2> kWorkQueues = {"nodes", "status"};

class BridgeMetrics {
 public:
  ~BridgeMetrics();
  // Registers every family below on `registry` (which must outlive this object) and sets
  // skb_build_info.
  BridgeMetrics(Registry* registry, std::string_view version, std::string_view slurm_version);

  // ---- reconcile loop ----

  // skb_reconcile_duration_seconds{result} (histogram): wall time of one Reconcile(node),
  // from dequeue to Done(), labelled success|requeue|error. Observed by the reconcile worker.
  HistogramFamily& reconcile_duration;
  Histogram& reconcile_success;  // cached children of reconcile_duration
  Histogram& reconcile_requeue;
  Histogram& reconcile_error;

  // ---- work queues: client-go's families, label name = kWorkQueues ("nodes": the
  // reconcile queue; "status": the nodes waiting for their condition writes) ----

  // workqueue_depth{name} (gauge): keys ready now (delayed keys count once due), set at
  // scrape. workqueue_unfinished_work_seconds{name} and
  // workqueue_longest_running_processor_seconds{name} (gauges): the time the keys in
  // flight have been worked on, summed and the longest, set at scrape.
  GaugeFamily& workqueue_depth;
  GaugeFamily& workqueue_unfinished_work;
  GaugeFamily& workqueue_longest_running;
  // workqueue_adds_total{name}, workqueue_retries_total{name} (counters) and
  // workqueue_queue_duration_seconds{name}, workqueue_work_duration_seconds{name}
  // (histograms): updated by the queue itself through WorkQueue(name).
  CounterFamily& workqueue_adds;
  CounterFamily& workqueue_retries;
  HistogramFamily& workqueue_queue_duration;
  HistogramFamily& workqueue_work_duration;
  // The reconcile::WorkQueueMetrics of queue `name` (one of kWorkQueues), for its
  // WorkQueueOptions; valid as long as this object.
  reconcile::WorkQueueMetrics* WorkQueue(std::string_view name);

  // skb_actions_total{kind,outcome} (counter): actions the executor carried out, by
  // plan::Action::Kind() ("DrainSlurmNode", "RequeueSlurmJobs", ...) and Outcome.
  // Incremented once per executed action, after its result is known.
  CounterFamily& actions;
  Counter& Action(std::string_view kind, Outcome outcome) {
    return actions.WithLabels({kind, OutcomeName(outcome)});
  }

  // skb_slurm_node_drains_total{cause}, skb_slurm_node_resumes_total{cause} (counters):
  // drains and resumes of Slurm nodes the bridge performed (not the no-ops an idempotent
  // re-apply skips), cause health|lending|maintenance.
  CounterFamily& drains;
  CounterFamily& resumes;

  // ---- preemption (Slurm -> Kubernetes lending) ----

  // skb_preemptions_total{mode} (counter): Slurm jobs preempted to lend their node to
  // Kubernetes, incremented per job when its requeue (requeue_hold included) or cancel
  // succeeds.
  CounterFamily& preemptions;
  // skb_preemption_grace_seconds (histogram): per preempted job, the time from its
  // checkpoint signal to its leaving the node (requeued, finished, or forced at the end of
  // the grace period). Shows how much of the configured grace jobs really use.
  Histogram& preemption_grace;
  // skb_lend_duration_seconds (histogram): per lent node, the time from the reservation
  // pod's deletion (start of lending) to the finalizer's removal (node empty in Slurm,
  // GPUs free for Kubernetes). The latency an inference pod waits for a node.
  Histogram& lend_duration;
  // skb_return_duration_seconds (histogram): per node given back, from the last GPU pod
  // leaving to the Slurm node being resumed (includes the cool-down).
  Histogram& return_duration;

  // ---- inventory (set after every merge, for every owner value) ----

  // skb_gpus{owner} (gauge): GPUs of managed nodes by owner slurm|k8s|lending|returning|
  // unhealthy (an unhealthy node counts only as unhealthy).
  GaugeFamily& gpus_by_owner;
  // skb_nodes{owner} (gauge): managed nodes by owner, as skb_gpus.
  GaugeFamily& nodes_by_owner;
  // skb_node_owner_since_timestamp_seconds{node,owner} (gauge): per managed node the
  // reconciler has planned, its owner (plan::CountedOwner) and the Unix time of its first
  // plan with that owner, as this replica saw it (a new leader counts from its takeover; a
  // follower plans nothing and exports none). One series per node: the daemon removes a
  // node's series for its old owner when the owner changes and when the node goes. A lend
  // stuck past any grace is `time() - ...{owner="lending"}` growing without bound: the
  // chart's alert SkbLendStuck names the node.
  GaugeFamily& node_owner_since;

  // ---- guaranteed quotas (quotas.tenants; label values are the configured tenant names,
  // "(none)" for work of no tenant) ----

  // ---- GPU-granular sharing (gpu_sharing; computed at scrape) ----

  // skb_shared_gpus{owner} (gauge): GPUs of the nodes shared GPU by GPU, by owner: slurm,
  // to-k8s (a give in flight), k8s, to-slurm (a return in flight), unguarded (held by no
  // side: a hold being restored).
  GaugeFamily& shared_gpus;
  // skb_shared_nodes{mode} (gauge): managed nodes in gpu_sharing, shared GPU by GPU
  // (mode="shared") or lent whole because sharing them is not proven (mode="whole").
  GaugeFamily& shared_nodes;
  // skb_shared_gpu_violations (gauge): GPUs both schedulers claim (or a pod's claim on a GPU
  // no hold guards) now. Never planned around; anything above 0 is an alert.
  Gauge& shared_gpu_violations;
  // skb_shared_gpu_moves_total{direction} (counter): GPUs moved between the schedulers on
  // shared nodes: to-k8s when a give lifts its holds (kube-scheduler may place the pod),
  // to-slurm when a return ends its placeholder. A repeat that finds the move done is not
  // counted.
  CounterFamily& shared_gpu_moves;
  // skb_shared_gpu_give_duration_seconds (histogram): per give, from the placeholder's
  // submission to its devices' holds lifted (preemption and grace included, when the give
  // had victims). Whole seconds, as Slurm dates jobs.
  Histogram& shared_gpu_give_duration;
  // skb_shared_gpu_return_duration_seconds (histogram): per return, from the devices'
  // idle-since to the placeholder's end (the cool-down included, as skb_return_duration).
  Histogram& shared_gpu_return_duration;

  // skb_tenant_gpus{tenant,state} (gauge): GPUs of a tenant's running jobs and pods on
  // managed nodes, state guaranteed (within its floor) | borrowed (beyond it).
  GaugeFamily& tenant_gpus;
  // skb_tenant_guarantee_gpus{tenant} (gauge): the tenant's floor.
  GaugeFamily& tenant_guarantee_gpus;
  // skb_tenant_type_gpus{tenant,type,state} (gauge): the same per GPU type, for tenants with
  // per-type floors: a type it names a floor or limit for, or "(other)" (every other type
  // and work of a type not known). A family of its own: a type label on skb_tenant_gpus
  // would split its series and break sums and alerts written against it.
  GaugeFamily& tenant_type_gpus;
  // skb_tenant_type_guarantee_gpus{tenant,type} (gauge): its floor for each type it names.
  GaugeFamily& tenant_type_guarantee_gpus;
  // skb_tenant_pending_gpus{tenant} (gauge): GPUs its pending jobs and pods ask for.
  GaugeFamily& tenant_pending_gpus;
  // skb_tenant_reclaiming_gpus{tenant} (gauge): GPUs of lent nodes being taken back from
  // Kubernetes for its pending jobs (quota::PlanReclaims).
  GaugeFamily& tenant_reclaiming_gpus;
  // skb_tenant_nonpreemptible_room_gpus{tenant} (gauge): GPUs the tenant's work that cannot
  // be preempted may still take within its floor (quota::NonPreemptibleRoom).
  GaugeFamily& tenant_nonpreemptible_room_gpus;
  // skb_quota_classification_seconds (gauge): how long the last classification of every
  // job and pod took (it runs on each Slurm jobs change and each GPU pod change).
  Gauge& quota_classification_seconds;

  // ---- the two APIs ----

  // skb_kubernetes_api_requests_total{group,resource,verb} (counter): apiserver requests
  // made, counted as each starts (an open watch is counted once it is opened), whatever
  // their outcome: group "" for the core group, resource the plural with its subresource
  // ("nodes/status", "pods/eviction"), verb as RBAC names it (get, list, watch, create,
  // update, patch, delete). What the bridge really asks of the apiserver, compared with
  // the chart's RBAC by tests/e2e/bridge/rbac_e2e_test.cc.
  CounterFamily& kubernetes_api_requests;
  // skb_kubernetes_api_responses_total{group,resource,verb,code} (counter): the same
  // requests once they ended, code as KubernetesResponseCode (failed ones:
  // code!="2xx"; each retry counts again). A watch ends when the apiserver closes it or it
  // fails; one the bridge cancels (shutdown) is not counted.
  CounterFamily& kubernetes_api_responses;
  // skb_slurm_rpc_errors_total{call} (counter): failed libslurm calls by call name
  // ("load_node", "load_jobs", "update_node", "requeue", "signal", ...), timeouts included.
  CounterFamily& slurm_rpc_errors;

  // ---- job_submit plugin ----

  // skb_plugin_requests_total{result} (counter): plugin requests the daemon answered:
  // accepted | rejected (an impossible request, with a message) | error (malformed
  // request, internal error: the plugin then applies its failure policy).
  CounterFamily& plugin_requests;
  // skb_plugin_fail_open_total (counter): submissions the plugin let through without an
  // answer (daemon down or slower than the plugin's budget, FailurePolicy=open). The plugin
  // runs in slurmctld, so this counts what it reports with its next request; submissions
  // failed open while the daemon is down show up once it is back.
  Counter& plugin_fail_open;
  // skb_socket_connections_total{result} (counter): connections to the plugin/CLI Unix
  // socket by what became of them (kSocketResults); a peer that closes is not counted again.
  CounterFamily& socket_connections;
  // skb_socket_accept_errors_total (counter): accept() failures for lack of fds or memory
  // (EMFILE, ENFILE, ...); the server then pauses accepting for a moment instead of spinning.
  Counter& socket_accept_errors;

  // ---- daemon state ----

  // skb_leader (gauge): 1 while this replica holds the Lease and acts, else 0.
  Gauge& leader;
  // skb_cache_synced{source} (gauge): 1 once the nodes/pods informer has listed and is
  // watching, or the first Slurm poll succeeded; back to 0 while a relist is in progress.
  GaugeFamily& cache_synced;
  // skb_informer_lists_total{source}, skb_informer_watches_total{source},
  // skb_informer_expired_total{source}, skb_informer_errors_total{source} (counters): per
  // informer (nodes|pods), successful (re)lists, watch requests started, watches that ended
  // with 410 Gone (an expired resourceVersion: the informer relists), and failed list/watch
  // attempts. Copied from k8s::InformerStats at scrape time. A steady rise of lists or
  // expired means the bridge relists (a full LIST each) instead of resuming its watches.
  CounterFamily& informer_lists;
  CounterFamily& informer_watches;
  CounterFamily& informer_expired;
  CounterFamily& informer_errors;
  // skb_events_total{outcome} (counter): Kubernetes Events the bridge recorded, by outcome:
  // created, aggregated (a repeat folded into an existing Event's count), dropped_queue (the
  // recorder's queue was full), dropped_spam (the rate limit per object and reason),
  // failed (the apiserver refused or was unreachable). Copied from the recorder at scrape
  // time. Any dropped or failed Event is a step of the record missing from `kubectl get
  // events`: worth an alert.
  CounterFamily& events;
  // skb_slurm_poll_duration_seconds{result} (histogram): time of one Slurm poll (node and
  // job reads by update_time), result changed|unchanged|repaired|error (repaired: a full
  // read found a change slurmctld's update stamp had missed).
  HistogramFamily& slurm_poll_duration;
  // skb_build_info{version,slurm_version} (gauge): always 1; the labels carry the build.
  GaugeFamily& build_info;

 private:
  class QueueMetrics;
  std::vector<std::unique_ptr<QueueMetrics>> queues_;  // by kWorkQueues' order
};

}  // namespace skb::observability

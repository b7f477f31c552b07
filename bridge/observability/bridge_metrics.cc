// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/bridge_metrics.h"

#include <cstdio>
#include <cstdlib>

#include "src/base/retry.h"

namespace skb::observability {
namespace {

// 1ms .. ~8s: a reconcile is a few API calls.
std::vector<double> ReconcileBuckets() { return ExponentialBuckets(0.001, 2, 14); }
// 0.5ms .. ~4s: an unchanged poll is one cheap RPC; call_timeout defaults to 5s.
std::vector<double> PollBuckets() { return ExponentialBuckets(0.0005, 2, 14); }
// Seconds to an hour: grace periods and lend/return times are operator-configured.
std::vector<double> LongBuckets() {
  return {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
}

template <typename F, size_t N>
F& Init(F& family, const std::array<std::string_view, N>& values) {
  for (std::string_view v : values) family.WithLabels({v});
  return family;
}

}  // namespace

std::string KubernetesResponseCode(bool ok, std::optional<int> http_status) {
  if (ok) return "2xx";
  if (!http_status) return "transport";
  if (*http_status < 400) return "2xx";
  return std::to_string(*http_status);
}

// One queue's handles, cached: the queue calls these under its lock, so they only count.
class BridgeMetrics::QueueMetrics final : public reconcile::WorkQueueMetrics {
 public:
  QueueMetrics(BridgeMetrics& m, std::string_view name)
      : adds_(m.workqueue_adds.WithLabels({name})),
        retries_(m.workqueue_retries.WithLabels({name})),
        queued_(m.workqueue_queue_duration.WithLabels({name})),
        worked_(m.workqueue_work_duration.WithLabels({name})) {}
  void Added() override { adds_.Increment(); }
  void Retried() override { retries_.Increment(); }
  void Started(Clock::Duration d) override { ObserveDuration(queued_, d); }
  void Finished(Clock::Duration d) override { ObserveDuration(worked_, d); }

 private:
  Counter& adds_;
  Counter& retries_;
  Histogram& queued_;
  Histogram& worked_;
};

BridgeMetrics::~BridgeMetrics() = default;

reconcile::WorkQueueMetrics* BridgeMetrics::WorkQueue(std::string_view name) {
  for (size_t i = 0; i < kWorkQueues.size(); ++i) {
    if (kWorkQueues[i] == name) return queues_[i].get();
  }
  // Queue names are constants in code, never input: a wrong one is a programming mistake.
  std::fprintf(stderr, "BridgeMetrics::WorkQueue: no queue named '%.*s'\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kRetryableError:
      return "retryable_error";
    case Outcome::kError:
      return "error";
  }
  return "error";
}

Outcome OutcomeOf(const Status& s) {
  if (s.ok()) return Outcome::kSuccess;
  return IsRetryable(s) ? Outcome::kRetryableError : Outcome::kError;
}

BridgeMetrics::BridgeMetrics(Registry* r, std::string_view version, std::string_view slurm_version)
    : reconcile_duration(r->AddHistogramFamily(
          "skb_reconcile_duration_seconds",
          "Wall time of one reconcile of one node, by result (success, requeue, error).",
          {"result"}, ReconcileBuckets())),
      reconcile_success(reconcile_duration.WithLabels({kResultSuccess})),
      reconcile_requeue(reconcile_duration.WithLabels({kResultRequeue})),
      reconcile_error(reconcile_duration.WithLabels({kResultError})),
      workqueue_depth(
          Init(r->AddGaugeFamily("workqueue_depth", "Current depth of workqueue", {"name"}),
               kWorkQueues)),
      workqueue_unfinished_work(Init(
          r->AddGaugeFamily("workqueue_unfinished_work_seconds",
                            "How many seconds of work has been done that is in progress and "
                            "hasn't been observed by work_duration. Large values indicate stuck "
                            "threads. One can deduce the number of stuck threads by observing "
                            "the rate at which this increases.",
                            {"name"}),
          kWorkQueues)),
      workqueue_longest_running(
          Init(r->AddGaugeFamily("workqueue_longest_running_processor_seconds",
                                 "How many seconds has the longest running processor for "
                                 "workqueue been running.",
                                 {"name"}),
               kWorkQueues)),
      workqueue_adds(
          Init(r->AddCounterFamily("workqueue_adds_total",
                                   "Total number of adds handled by workqueue", {"name"}),
               kWorkQueues)),
      workqueue_retries(
          Init(r->AddCounterFamily("workqueue_retries_total",
                                   "Total number of retries handled by workqueue", {"name"}),
               kWorkQueues)),
      workqueue_queue_duration(
          Init(r->AddHistogramFamily("workqueue_queue_duration_seconds",
                                     "How long in seconds an item stays in workqueue before being "
                                     "requested",
                                     {"name"}, ExponentialBuckets(1e-8, 10, 12)),
               kWorkQueues)),
      workqueue_work_duration(
          Init(r->AddHistogramFamily("workqueue_work_duration_seconds",
                                     "How long in seconds processing an item from workqueue "
                                     "takes.",
                                     {"name"}, ExponentialBuckets(1e-8, 10, 12)),
               kWorkQueues)),
      actions(r->AddCounterFamily("skb_actions_total",
                                  "Actions executed by the bridge, by kind and outcome.",
                                  {"kind", "outcome"})),
      drains(Init(r->AddCounterFamily("skb_slurm_node_drains_total",
                                      "Slurm nodes drained by the bridge, by cause.", {"cause"}),
                  kDrainCauses)),
      resumes(Init(r->AddCounterFamily("skb_slurm_node_resumes_total",
                                       "Slurm nodes resumed by the bridge (only its own drains), "
                                       "by cause.",
                                       {"cause"}),
                   kDrainCauses)),
      preemptions(Init(
          r->AddCounterFamily("skb_preemptions_total",
                              "Slurm jobs preempted to lend their node to Kubernetes, by mode.",
                              {"mode"}),
          kPreemptionModes)),
      preemption_grace(r->AddHistogram(
          "skb_preemption_grace_seconds",
          "Per preempted job: time from the checkpoint signal to the job leaving the node.",
          LongBuckets())),
      lend_duration(r->AddHistogram(
          "skb_lend_duration_seconds",
          "Per lent node: time from the reservation pod's deletion to its GPUs being free "
          "for Kubernetes.",
          LongBuckets())),
      return_duration(r->AddHistogram(
          "skb_return_duration_seconds",
          "Per returned node: time from the last GPU pod leaving to the Slurm node resuming.",
          LongBuckets())),
      gpus_by_owner(Init(
          r->AddGaugeFamily("skb_gpus", "GPUs of managed nodes by owner.", {"owner"}), kOwners)),
      nodes_by_owner(
          Init(r->AddGaugeFamily("skb_nodes", "Managed nodes by owner.", {"owner"}), kOwners)),
      node_owner_since(r->AddGaugeFamily("skb_node_owner_since_timestamp_seconds",
                                         "Per managed node: Unix time of its first plan with "
                                         "its current owner, as this replica planned it.",
                                         {"node", "owner"})),
      shared_gpus(Init(r->AddGaugeFamily("skb_shared_gpus",
                                         "GPUs of nodes shared GPU by GPU, by owner.", {"owner"}),
                       kDeviceOwners)),
      shared_nodes(
          Init(r->AddGaugeFamily("skb_shared_nodes",
                                 "gpu_sharing nodes, shared GPU by GPU or lent whole.", {"mode"}),
               std::array<std::string_view, 2>{"shared", "whole"})),
      shared_gpu_violations(
          r->AddGauge("skb_shared_gpu_violations",
                      "GPUs both schedulers claim now on nodes shared GPU by GPU (should be 0).")),
      shared_gpu_moves(
          Init(r->AddCounterFamily("skb_shared_gpu_moves_total",
                                   "GPUs moved between the schedulers on nodes shared GPU by GPU.",
                                   {"direction"}),
               std::array<std::string_view, 2>{"to-k8s", "to-slurm"})),
      shared_gpu_give_duration(r->AddHistogram(
          "skb_shared_gpu_give_duration_seconds",
          "Per give on a shared node: time from the placeholder's submission to its GPUs' holds "
          "lifted.",
          LongBuckets())),
      shared_gpu_return_duration(r->AddHistogram(
          "skb_shared_gpu_return_duration_seconds",
          "Per return on a shared node: time from its GPUs' idle-since to the placeholder's end.",
          LongBuckets())),
      tenant_gpus(r->AddGaugeFamily("skb_tenant_gpus",
                                    "GPUs of a tenant's running work, within its guarantee or "
                                    "borrowed beyond it.",
                                    {"tenant", "state"})),
      tenant_guarantee_gpus(r->AddGaugeFamily(
          "skb_tenant_guarantee_gpus", "A tenant's guaranteed GPUs (its floor).", {"tenant"})),
      tenant_type_gpus(r->AddGaugeFamily(
          "skb_tenant_type_gpus",
          "GPUs of a tenant's running work per GPU type (tenants with per-type floors; "
          "\"(other)\": types it names no floor for, or not known), within the type's "
          "guarantee or borrowed beyond it.",
          {"tenant", "type", "state"})),
      tenant_type_guarantee_gpus(r->AddGaugeFamily("skb_tenant_type_guarantee_gpus",
                                                   "A tenant's guaranteed GPUs of one type.",
                                                   {"tenant", "type"})),
      tenant_pending_gpus(r->AddGaugeFamily(
          "skb_tenant_pending_gpus", "GPUs a tenant's pending jobs and pods ask for.", {"tenant"})),
      tenant_reclaiming_gpus(r->AddGaugeFamily(
          "skb_tenant_reclaiming_gpus",
          "GPUs being taken back from Kubernetes for a tenant's pending jobs.", {"tenant"})),
      tenant_nonpreemptible_room_gpus(r->AddGaugeFamily(
          "skb_tenant_nonpreemptible_room_gpus",
          "GPUs a tenant's work that cannot be preempted may still take within its guarantee.",
          {"tenant"})),
      quota_classification_seconds(r->AddGauge(
          "skb_quota_classification_seconds",
          "Time of the last classification of every job and pod into guaranteed and borrowed.")),
      kubernetes_api_requests(r->AddCounterFamily(
          "skb_kubernetes_api_requests_total",
          "Kubernetes API requests made (counted as each starts), by API group, resource "
          "(with subresource) and verb.",
          {"group", "resource", "verb"})),
      kubernetes_api_responses(r->AddCounterFamily(
          "skb_kubernetes_api_responses_total",
          "Kubernetes API requests that ended, by API group, resource (with subresource), verb "
          "and answer: 2xx (a success), the HTTP status of a failure (403, 409, 503, ...) or "
          "transport (none came).",
          {"group", "resource", "verb", "code"})),
      slurm_rpc_errors(r->AddCounterFamily("skb_slurm_rpc_errors_total",
                                           "Failed libslurm calls (timeouts included), by call.",
                                           {"call"})),
      plugin_requests(
          Init(r->AddCounterFamily("skb_plugin_requests_total",
                                   "job_submit plugin requests answered, by result.", {"result"}),
               kPluginResults)),
      plugin_fail_open(r->AddCounter(
          "skb_plugin_fail_open_total",
          "Submissions the job_submit plugin let through without the daemon's answer.")),
      socket_connections(
          Init(r->AddCounterFamily("skb_socket_connections_total",
                                   "Connections to the plugin/CLI socket, by what became of them.",
                                   {"result"}),
               kSocketResults)),
      socket_accept_errors(r->AddCounter(
          "skb_socket_accept_errors_total",
          "accept() failures of the plugin/CLI socket for lack of file descriptors or memory.")),
      leader(r->AddGauge("skb_leader", "1 while this replica holds the leader Lease.")),
      cache_synced(Init(r->AddGaugeFamily("skb_cache_synced",
                                          "1 when the cache of this source is synced.", {"source"}),
                        kCacheSources)),
      informer_lists(Init(r->AddCounterFamily("skb_informer_lists_total",
                                              "Successful lists (relists included) of an "
                                              "informer.",
                                              {"source"}),
                          kInformerSources)),
      informer_watches(Init(r->AddCounterFamily("skb_informer_watches_total",
                                                "Watch requests an informer started.", {"source"}),
                            kInformerSources)),
      informer_expired(Init(r->AddCounterFamily("skb_informer_expired_total",
                                                "Watches that ended with 410 Gone (expired "
                                                "resourceVersion), each followed by a relist.",
                                                {"source"}),
                            kInformerSources)),
      informer_errors(
          Init(r->AddCounterFamily("skb_informer_errors_total",
                                   "Failed list or watch attempts of an informer.", {"source"}),
               kInformerSources)),
      events(Init(
          r->AddCounterFamily("skb_events_total",
                              "Kubernetes Events the bridge recorded, by outcome.", {"outcome"}),
          kEventOutcomes)),
      slurm_poll_duration(Init(
          r->AddHistogramFamily("skb_slurm_poll_duration_seconds",
                                "Time of one Slurm poll, by result.", {"result"}, PollBuckets()),
          kPollResults)),
      build_info(r->AddGaugeFamily("skb_build_info",
                                   "Always 1; labels carry the bridge version and the Slurm "
                                   "release it was built against.",
                                   {"version", "slurm_version"})) {
  build_info.WithLabels({version, slurm_version}).Set(1);
  for (std::string_view q : kWorkQueues)
    queues_.push_back(std::make_unique<QueueMetrics>(*this, q));
}

}  // namespace skb::observability

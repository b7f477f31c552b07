// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/bridge_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "bridge/observability/exposition_parser.h"

namespace skb::observability {
namespace {

TEST(BridgeMetricsTest, EveryFamilyIsRegisteredWithItsTypeAndZeroSeriesForKnownLabels) {
  Registry r;
  BridgeMetrics m(&r, "0.1.0", "22.05.8");
  auto e = ParseExposition(r.Render());
  ASSERT_TRUE(e.ok()) << e.status();
  const std::map<std::string, std::string> want = {
      {"skb_reconcile_duration_seconds", "histogram"},
      {"workqueue_depth", "gauge"},
      {"workqueue_unfinished_work_seconds", "gauge"},
      {"workqueue_longest_running_processor_seconds", "gauge"},
      {"workqueue_adds_total", "counter"},
      {"workqueue_retries_total", "counter"},
      {"workqueue_queue_duration_seconds", "histogram"},
      {"workqueue_work_duration_seconds", "histogram"},
      {"skb_actions_total", "counter"},
      {"skb_slurm_node_drains_total", "counter"},
      {"skb_slurm_node_resumes_total", "counter"},
      {"skb_preemptions_total", "counter"},
      {"skb_preemption_grace_seconds", "histogram"},
      {"skb_lend_duration_seconds", "histogram"},
      {"skb_return_duration_seconds", "histogram"},
      {"skb_shared_gpus", "gauge"},
      {"skb_shared_nodes", "gauge"},
      {"skb_shared_gpu_violations", "gauge"},
      {"skb_shared_gpu_moves_total", "counter"},
      {"skb_shared_gpu_give_duration_seconds", "histogram"},
      {"skb_shared_gpu_return_duration_seconds", "histogram"},
      {"skb_gpus", "gauge"},
      {"skb_nodes", "gauge"},
      {"skb_node_owner_since_timestamp_seconds", "gauge"},
      {"skb_tenant_gpus", "gauge"},
      {"skb_tenant_guarantee_gpus", "gauge"},
      {"skb_tenant_type_gpus", "gauge"},
      {"skb_tenant_type_guarantee_gpus", "gauge"},
      {"skb_tenant_pending_gpus", "gauge"},
      {"skb_tenant_reclaiming_gpus", "gauge"},
      {"skb_tenant_nonpreemptible_room_gpus", "gauge"},
      {"skb_quota_classification_seconds", "gauge"},
      {"skb_kubernetes_api_requests_total", "counter"},
      {"skb_kubernetes_api_responses_total", "counter"},
      {"skb_slurm_rpc_errors_total", "counter"},
      {"skb_plugin_requests_total", "counter"},
      {"skb_plugin_fail_open_total", "counter"},
      {"skb_socket_connections_total", "counter"},
      {"skb_socket_accept_errors_total", "counter"},
      {"skb_leader", "gauge"},
      {"skb_cache_synced", "gauge"},
      {"skb_informer_lists_total", "counter"},
      {"skb_informer_watches_total", "counter"},
      {"skb_informer_expired_total", "counter"},
      {"skb_informer_errors_total", "counter"},
      {"skb_events_total", "counter"},
      {"skb_slurm_poll_duration_seconds", "histogram"},
      {"skb_build_info", "gauge"},
  };
  std::map<std::string, std::string> registered;
  for (const Registry::FamilyInfo& f : r.Families()) {
    registered[f.name] = f.type;
    EXPECT_FALSE(f.help.empty()) << f.name;
    // What the exposition shows of it says the same.
    if (e->types.count(f.name)) {
      EXPECT_EQ(e->types.at(f.name), f.type) << f.name;
    }
  }
  EXPECT_EQ(registered, want);
  for (const auto& [name, type] : want) {
    // Counters end in _total, and only counters do (Prometheus naming practice).
    EXPECT_EQ(name.ends_with("_total"), type == "counter") << name;
  }
  for (std::string_view owner : kOwners) {
    EXPECT_EQ(e->Value("skb_gpus", {{"owner", std::string(owner)}}), 0) << owner;
    EXPECT_EQ(e->Value("skb_nodes", {{"owner", std::string(owner)}}), 0) << owner;
  }
  EXPECT_EQ(e->Value("skb_slurm_node_drains_total", {{"cause", "lending"}}), 0);
  EXPECT_EQ(e->Value("skb_plugin_requests_total", {{"result", "rejected"}}), 0);
  EXPECT_EQ(e->Value("skb_cache_synced", {{"source", "slurm"}}), 0);
  EXPECT_EQ(e->Value("skb_socket_connections_total", {{"result", "stalled"}}), 0);
  EXPECT_EQ(e->Value("skb_informer_expired_total", {{"source", "pods"}}), 0);
  EXPECT_EQ(e->Value("skb_reconcile_duration_seconds_count", {{"result", "requeue"}}), 0);
  for (std::string_view q : kWorkQueues) {
    EXPECT_EQ(e->Value("workqueue_depth", {{"name", std::string(q)}}), 0) << q;
    EXPECT_EQ(e->Value("workqueue_adds_total", {{"name", std::string(q)}}), 0) << q;
    EXPECT_EQ(e->Value("workqueue_work_duration_seconds_count", {{"name", std::string(q)}}), 0)
        << q;
  }
  EXPECT_EQ(e->Value("skb_build_info", {{"version", "0.1.0"}, {"slurm_version", "22.05.8"}}), 1);
}

TEST(BridgeMetricsTest, HandlesUpdateTheRenderedSeries) {
  Registry r;
  BridgeMetrics m(&r, "v", "s");
  m.Action("DrainSlurmNode", Outcome::kSuccess).Increment();
  m.Action("DrainSlurmNode", Outcome::kRetryableError).Increment(2);
  m.gpus_by_owner.WithLabels({"lending"}).Set(8);
  m.kubernetes_api_requests.WithLabels({"", "nodes/status", "patch"}).Increment();
  m.kubernetes_api_responses.WithLabels({"scheduling.k8s.io", "priorityclasses", "get", "403"})
      .Increment();
  m.reconcile_success.Observe(0.003);
  m.leader.Set(1);
  m.workqueue_depth.WithLabels({"nodes"}).Set(3);
  // The reconcile queue's own reports, as reconcile::WorkQueue makes them.
  reconcile::WorkQueueMetrics* q = m.WorkQueue("nodes");
  q->Added();
  q->Retried();
  q->Started(std::chrono::milliseconds(20));
  q->Finished(std::chrono::seconds(2));
  m.node_owner_since.WithLabels({"node1", "lending"}).Set(1.7e9);
  m.node_owner_since.WithLabels({"node2", "slurm"}).Set(1.6e9);
  m.node_owner_since.Remove({"node2", "slurm"});
  m.node_owner_since.Remove({"node3", "k8s"});  // none: nothing happens
  auto e = ParseExposition(r.Render());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->Value("skb_actions_total", {{"kind", "DrainSlurmNode"}, {"outcome", "success"}}), 1);
  EXPECT_EQ(
      e->Value("skb_actions_total", {{"kind", "DrainSlurmNode"}, {"outcome", "retryable_error"}}),
      2);
  EXPECT_EQ(e->Value("skb_gpus", {{"owner", "lending"}}), 8);
  EXPECT_EQ(e->Value("skb_kubernetes_api_requests_total",
                     {{"group", ""}, {"resource", "nodes/status"}, {"verb", "patch"}}),
            1);
  EXPECT_EQ(e->Value("skb_kubernetes_api_responses_total", {{"group", "scheduling.k8s.io"},
                                                            {"resource", "priorityclasses"},
                                                            {"verb", "get"},
                                                            {"code", "403"}}),
            1);
  EXPECT_EQ(
      e->Value("skb_reconcile_duration_seconds_bucket", {{"result", "success"}, {"le", "0.004"}}),
      1);
  EXPECT_EQ(e->Value("skb_leader"), 1);
  EXPECT_EQ(e->Value("workqueue_depth", {{"name", "nodes"}}), 3);
  EXPECT_EQ(e->Value("workqueue_adds_total", {{"name", "nodes"}}), 1);
  EXPECT_EQ(e->Value("workqueue_retries_total", {{"name", "nodes"}}), 1);
  EXPECT_EQ(e->Value("workqueue_adds_total", {{"name", "status"}}), 0);
  EXPECT_EQ(e->Value("workqueue_queue_duration_seconds_bucket", {{"name", "nodes"}, {"le", "0.1"}}),
            1);
  EXPECT_EQ(e->Value("workqueue_work_duration_seconds_bucket", {{"name", "nodes"}, {"le", "1"}}),
            0);
  EXPECT_EQ(e->Value("workqueue_work_duration_seconds_count", {{"name", "nodes"}}), 1);
  EXPECT_EQ(
      e->Value("skb_node_owner_since_timestamp_seconds", {{"node", "node1"}, {"owner", "lending"}}),
      1.7e9);
  EXPECT_EQ(
      e->Value("skb_node_owner_since_timestamp_seconds", {{"node", "node2"}, {"owner", "slurm"}}),
      std::nullopt)
      << "a removed series is gone from the exposition";
}

// The `code` label of skb_kubernetes_api_responses_total: one convention, the HTTP status
// of a failure, "2xx" for a success, "transport" when no response came.
TEST(BridgeMetricsTest, KubernetesResponseCodesAreTheFailuresStatus) {
  EXPECT_EQ(KubernetesResponseCode(true, std::nullopt), "2xx");
  EXPECT_EQ(KubernetesResponseCode(false, 200), "2xx");
  EXPECT_EQ(KubernetesResponseCode(false, 403), "403");
  EXPECT_EQ(KubernetesResponseCode(false, 404), "404");
  EXPECT_EQ(KubernetesResponseCode(false, 409), "409");
  EXPECT_EQ(KubernetesResponseCode(false, 500), "500");
  EXPECT_EQ(KubernetesResponseCode(false, 503), "503");
  EXPECT_EQ(KubernetesResponseCode(false, std::nullopt), "transport");
}

// An action's `outcome` label follows the one retry rule (src/base/retry.h): what the
// reconcile loop retries with back-off is a retryable_error, any other failure an error.
TEST(BridgeMetricsTest, OutcomeOfAStatusFollowsTheRetryRule) {
  EXPECT_EQ(OutcomeOf(OkStatus()), Outcome::kSuccess);
  EXPECT_EQ(OutcomeOf(UnavailableError("apiserver busy")), Outcome::kRetryableError);
  EXPECT_EQ(OutcomeOf(AbortedError("uid changed")), Outcome::kRetryableError);
  EXPECT_EQ(OutcomeOf(DeadlineExceededError("timeout")), Outcome::kRetryableError);
  EXPECT_EQ(OutcomeOf(FailedPreconditionError("not ours")), Outcome::kError);
  EXPECT_EQ(OutcomeOf(NotFoundError("gone")), Outcome::kError);
  EXPECT_EQ(OutcomeOf(InternalError("bug")), Outcome::kError);
}

// The Grafana dashboard shipped in the chart queries only metrics that exist, and shows
// every one of them: renaming a metric without the dashboard (or back) fails here.
TEST(BridgeMetricsTest, TheChartDashboardAndTheMetricSetAgree) {
  std::ifstream in(SKB_SOURCE_DIR "/helm/slurm-k8s-bridge/dashboards/bridge.json");
  ASSERT_TRUE(in) << "cannot read the dashboard";
  std::stringstream text;
  text << in.rdbuf();
  std::string board = text.str();

  Registry r;
  BridgeMetrics m(&r, "v", "s");
  std::map<std::string, std::string> types;  // every family, with series yet or not
  for (const Registry::FamilyInfo& f : r.Families()) types[f.name] = f.type;

  std::set<std::string> used;
  // Metric names in the PromQL expressions: "skb_" or "workqueue_" and the [a-z_] run after
  // it. (A scan, not std::regex: GCC 12's regex trips -Wmaybe-uninitialized under the
  // sanitizers.)
  for (std::string_view prefix : {"skb_", "workqueue_"}) {
    for (size_t at = board.find(prefix); at != std::string::npos; at = board.find(prefix, at)) {
      size_t end = at + prefix.size();
      while (end < board.size() &&
             ((board[end] >= 'a' && board[end] <= 'z') || board[end] == '_')) {
        ++end;
      }
      std::string n = board.substr(at, end - at);
      at = end;
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        std::string base = n.substr(0, n.size() - std::min(n.size(), suffix.size()));
        if (n.ends_with(suffix) && types.count(base) && types.at(base) == "histogram") {
          n = base;
        }
      }
      used.insert(n);
    }
  }
  for (const std::string& n : used) {
    EXPECT_TRUE(types.count(n)) << "the dashboard queries " << n << ", which is not exported";
  }
  for (const auto& [n, type] : types) {
    EXPECT_TRUE(used.count(n)) << n << " is exported but not on the dashboard";
  }
}

}  // namespace
}  // namespace skb::observability

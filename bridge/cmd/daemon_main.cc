// slurm-k8s-bridge: the daemon. Thin wiring only; everything testable lives in libraries.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "bridge/api/v1/bridge.pb.h"
#include "bridge/controller.h"
#include "bridge/daemon_flags.h"
#include "bridge/logging.h"
#include "bridge/observability/bridge_metrics.h"
#include "bridge/observability/http_server.h"
#include "bridge/observability/metrics.h"
#include "bridge/observability/process_metrics.h"
#include "bridge/plugin_server/inventory_queries.h"
#include "bridge/plugin_server/quota_queries.h"
#include "bridge/plugin_server/unix_server.h"
#include "bridge/slurm/libslurm_client.h"
#include "bridge/version.h"
#include "k8s/api_error.h"
#include "k8s/kubeconfig.h"
#include "k8s/observed_kube_client.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/config/config.h"
#include "src/ownership/quota_facts.h"

namespace {

skb::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return skb::FailedPreconditionError("cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Run(int argc, char** argv) {
  auto flags = skb::bridge::ParseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!flags.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(skb::bridge::DaemonUsage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("slurm-k8s-bridge %s (built against Slurm %s)\n", skb::bridge::kVersion,
                skb::bridge::kSlurmVersion);
    return 0;
  }
  std::string text = "{}";
  if (!flags->config_path.empty()) {
    auto read = ReadFile(flags->config_path);
    if (!read.ok()) {
      std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(read.status().message()).c_str());
      return 2;
    }
    text = *read;
  }
  auto cfg = skb::config::ParseConfig(text);
  if (!cfg.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s%s\n",
                 flags->config_path.empty() ? "" : (flags->config_path + ": ").c_str(),
                 std::string(cfg.status().message()).c_str());
    return 2;
  }
  if (!flags->log_level.empty()) cfg->logging.level = flags->log_level;
  if (!flags->log_format.empty()) cfg->logging.format = flags->log_format;
  if (auto s = skb::bridge::SetupLogging(cfg->logging.level, cfg->logging.format); !s.ok()) {
    std::fprintf(stderr, "slurm-k8s-bridge: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  auto log = skb::bridge::Logger("main");
  if (flags->check_config) {
    std::printf(
        "config OK: namespace=%s node_selector=%s slurm.poll_interval=%lldms "
        "socket=%s http=%s\n",
        cfg->kubernetes.namespace_name.c_str(), cfg->kubernetes.node_selector.c_str(),
        static_cast<long long>(cfg->slurm.poll_interval.count()), cfg->server.socket_path.c_str(),
        cfg->server.http_address.c_str());
    for (const std::string& line : skb::quota::DescribeQuotaConfig(cfg->quotas)) {
      std::printf("%s\n", line.c_str());
    }
    return 0;
  }

  // Block the shutdown signals before any thread starts, then wait for them here.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  log->info(
      "starting version={} slurm_abi={} namespace={} node_selector=\"{}\" "
      "slurm_poll={}ms",
      skb::bridge::kVersion, skb::bridge::kSlurmVersion, cfg->kubernetes.namespace_name,
      cfg->kubernetes.node_selector, cfg->slurm.poll_interval.count());

  // Kubernetes: the kubeconfig from the config, else DefaultRestConfig: the files of
  // $KUBECONFIG merged, else ~/.kube/config, else in-cluster.
  auto rest = cfg->kubernetes.kubeconfig.empty()
                  ? skb::k8s::DefaultRestConfig("")
                  : skb::k8s::LoadKubeconfig(cfg->kubernetes.kubeconfig, "");
  if (!rest.ok()) {
    log->error("kubernetes_config_failed error=\"{}\"", rest.status().message());
    return 2;
  }
  rest->qps = cfg->kubernetes.qps;
  rest->burst = static_cast<int>(cfg->kubernetes.burst);
  auto kube = skb::k8s::NewRestClient(*rest);
  auto events_kube = skb::k8s::NewRestClient(*rest);
  auto election_kube = skb::k8s::NewRestClient(*rest);
  for (const auto* c : {&kube, &events_kube, &election_kube}) {
    if (!c->ok()) {
      log->error("kubernetes_client_failed error=\"{}\"", c->status().message());
      return 2;
    }
  }
  skb::observability::Registry registry;
  skb::observability::BridgeMetrics metrics(&registry, skb::bridge::kVersion,
                                            skb::bridge::kSlurmVersion);
  skb::observability::AddProcessMetrics(&registry);
  // Apiserver requests by API group, resource (with its subresource, as RBAC names it:
  // "nodes/status") and verb: counted as each starts, so a watch that is still open counts.
  auto api_resource = [](const skb::k8s::RequestInfo& r) {
    return r.subresource.empty() ? r.resource->resource
                                 : skb::StrCat(r.resource->resource, "/", r.subresource);
  };
  auto count_api_request = [&metrics, api_resource](const skb::k8s::RequestInfo& r) {
    metrics.kubernetes_api_requests.WithLabels({r.resource->group, api_resource(r), r.verb})
        .Increment();
  };
  // Once they end: how each was answered, and failed ones by HTTP status ("transport"
  // without a response). A watch ended by our own shutdown is neither.
  auto count_api_outcome = [&metrics, api_resource](const skb::k8s::RequestInfo& r,
                                                    const skb::Status& s) {
    if (s.code() == skb::StatusCode::kCancelled) return;
    auto code = skb::k8s::HttpCodeOf(s);
    metrics.kubernetes_api_responses
        .WithLabels({r.resource->group, api_resource(r), r.verb,
                     skb::observability::KubernetesResponseCode(s.ok(), code)})
        .Increment();
    if (s.ok()) return;
    metrics.kubernetes_api_errors
        .WithLabels({code ? std::to_string(*code) : std::string("transport")})
        .Increment();
  };
  skb::k8s::ObservedKubeClient observed_kube(kube->get(), count_api_outcome, count_api_request);
  skb::k8s::ObservedKubeClient observed_events(events_kube->get(), count_api_outcome,
                                               count_api_request);
  skb::k8s::ObservedKubeClient observed_election(election_kube->get(), count_api_outcome,
                                                 count_api_request);
  skb::bridge::slurm::LibSlurmClient slurm_client(
      {.conf = cfg->slurm.conf,
       .call_timeout = cfg->slurm.call_timeout,
       .on_error = [&metrics](const std::string& call, const skb::Status&) {
         metrics.slurm_rpc_errors.WithLabels({call}).Increment();
       }});
  skb::k8s::SystemClock clock;
  std::string identity = flags->identity;
  if (identity.empty()) {
    const char* pod = std::getenv("POD_NAME");
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    identity = pod != nullptr && *pod != '\0' ? pod : skb::StrCat(host, "-", getpid());
  }
  std::atomic<bool> lost_leadership{false};
  // Test hook (tests/e2e/bridge/lending_crash_e2e_test.cc): SKB_TEST_CRASH_AFTER=<Event
  // reason> makes the daemon die the way kill -9 would, right after the first action with
  // that reason took effect and before anything else happens.
  std::function<void(const skb::plan::Action&)> after_action;
  if (const char* v = std::getenv("SKB_TEST_CRASH_AFTER"); v != nullptr && *v != '\0') {
    after_action = [reason = std::string(v), log](const skb::plan::Action& a) {
      if (a.event_reason != reason) return;
      log->warn("test_hook crash_after={} node={}: killing this process (SKB_TEST_CRASH_AFTER)",
                reason, a.node);
      log->flush();
      std::raise(SIGKILL);
    };
  }
  // Test hook (tests/e2e/bridge/safety_e2e_test.cc): SKB_TEST_PAUSE_BEFORE=<Event
  // reason>:<seconds> holds the first action with that reason for that long after it was
  // planned, before it is carried out: the window in which the world can change under a
  // plan (an admin's resume before a release), made wide enough for a test to use.
  std::function<void(const skb::plan::Action&)> before_action;
  if (const char* v = std::getenv("SKB_TEST_PAUSE_BEFORE"); v != nullptr && *v != '\0') {
    const std::string spec(v);
    const size_t colon = spec.rfind(':');
    const int seconds = colon == std::string::npos ? 0 : std::atoi(spec.c_str() + colon + 1);
    if (colon == std::string::npos || seconds <= 0 || seconds > 300) {
      std::fprintf(stderr, "SKB_TEST_PAUSE_BEFORE=%s: want <Event reason>:<seconds, 1-300>\n", v);
      return 2;
    }
    before_action = [reason = spec.substr(0, colon), seconds, log,
                     done =
                         std::make_shared<std::atomic<bool>>(false)](const skb::plan::Action& a) {
      if (a.event_reason != reason || done->exchange(true)) return;
      log->warn("test_hook pause_before={} node={} seconds={} (SKB_TEST_PAUSE_BEFORE)", reason,
                a.node, seconds);
      log->flush();
      std::this_thread::sleep_for(std::chrono::seconds(seconds));
      log->warn("test_hook pause_before={} node={}: carrying on", reason, a.node);
    };
  }
  skb::bridge::Controller controller({.config = &*cfg,
                                      .kube = &observed_kube,
                                      .events_kube = &observed_events,
                                      .election_kube = &observed_election,
                                      .slurm = &slurm_client,
                                      .clock = &clock,
                                      .leader_election = flags->leader_election,
                                      .identity = identity,
                                      .lease_name = cfg->leader_election.lease_name,
                                      .lease_duration = cfg->leader_election.lease_duration,
                                      .renew_deadline = cfg->leader_election.renew_deadline,
                                      .retry_period = cfg->leader_election.retry_period,
                                      .metrics = &metrics,
                                      .on_lost_leadership =
                                          [&] {
                                            // Stop at once; the supervisor restarts us as a
                                            // follower (exit on loss).
                                            lost_leadership = true;
                                            kill(getpid(), SIGTERM);
                                          },
                                      .after_action = after_action,
                                      .before_action = before_action});

  // The socket answers the plugin (admission, from the Slurm snapshot) and bridgectl
  // (the merged inventory, the jobs); every replica serves it from its own caches.
  skb::bridge::InventoryQueries queries(
      {.snapshot = [&] { return controller.reconciler().Snapshot(); },
       .plan = [&](const std::string& node) { return controller.PlanNow(node); },
       .leader = [&] { return controller.Leader(); },
       .jobs = [&] { return controller.SlurmJobs(); },
       .ready = [&](std::string* why) { return controller.Ready(why); },
       .devices = [&] { return controller.ObserveDevices(); },
       .guaranteed_jobs =
           [&] {
             auto q = controller.quotas().Current();
             return q ? skb::quota::GuaranteedJobs(*q) : skb::ownership::GuaranteedJobs{};
           },
       .clock = &clock},
      &*cfg);
  skb::bridge::QuotaQueries quota_queries(
      {.observation = [&] { return controller.quotas().Current(); },
       .leader = [&] { return controller.Leader(); },
       .ready = [&](std::string* why) { return controller.Ready(why); }},
      &*cfg);
  controller.admission().SetQueryHandler(
      [&](const skb::api::v1::Request& req, skb::api::v1::Response* resp) {
        return queries.Handle(req, resp) || quota_queries.Handle(req, resp);
      });
  controller.admission().SetConfig(&*cfg, [&] { return controller.quotas().Current(); });
  skb::bridge::UnixServer::Options server_opts{.path = cfg->server.socket_path};
  if (!cfg->server.client_user.empty()) {
    const passwd* pw = getpwnam(cfg->server.client_user.c_str());
    if (pw == nullptr) {
      log->error("config_error key=server.client_user error=\"no such user '{}'\"",
                 cfg->server.client_user);
      return 2;
    }
    server_opts.owner_uid = pw->pw_uid;
    server_opts.allowed_uids.insert(pw->pw_uid);
  }
  // Admissions are answered on the server's poll thread, bridgectl's queries on its worker:
  // a big `bridgectl get nodes` never holds up a job submission.
  skb::bridge::UnixServer server(
      server_opts,
      [&](std::string_view frame, uint32_t pid) {
        return controller.admission().HandleFrame(frame, pid);
      },
      [](std::string_view frame) {
        return skb::bridge::AdmissionService::IsQuery(frame)
                   ? skb::bridge::UnixServer::Lane::kWorker
                   : skb::bridge::UnixServer::Lane::kInline;
      });
  if (auto s = server.Start(); !s.ok()) {
    log->error("socket_failed error=\"{}\"", s.ToString());
    return 1;
  }
  if (auto s = controller.Start(); !s.ok()) {
    log->error("controller_failed error=\"{}\"", s.ToString());
    return 1;
  }

  // /metrics, /healthz, /readyz. Gauges that describe the current state are computed at
  // scrape time from the controller's view.
  std::map<std::string, skb::k8s::InformerStats> informer_seen;  // source -> exported so far
  uint64_t plugin_seen_accepted = 0, plugin_seen_rejected = 0, plugin_seen_errors = 0,
           plugin_seen_fail_open = 0;
  skb::bridge::UnixServer::Stats socket_seen;
  skb::k8s::EventRecorderStats events_seen;  // exported so far
  registry.AddCollectHook([&] {
    metrics.workqueue_depth.Set(static_cast<double>(controller.QueueDepth()));
    metrics.status_queue_depth.Set(static_cast<double>(controller.StatusQueueDepth()));
    metrics.leader.Set(controller.IsLeader() ? 1 : 0);
    metrics.cache_synced.WithLabels({"nodes"}).Set(controller.NodesSynced() ? 1 : 0);
    metrics.cache_synced.WithLabels({"pods"}).Set(controller.PodsSynced() ? 1 : 0);
    metrics.cache_synced.WithLabels({"slurm"}).Set(controller.SlurmPolled() ? 1 : 0);
    std::map<std::string, std::pair<double, double>> by_owner;  // owner -> nodes, GPUs
    for (std::string_view o : skb::observability::kOwners) by_owner[std::string(o)] = {0, 0};
    for (const auto& [owner, t] : controller.reconciler().OwnerTotals()) {
      if (!by_owner.count(owner)) continue;  // unknown: one side only
      by_owner[owner] = {static_cast<double>(t.first), static_cast<double>(t.second)};
    }
    for (const auto& [owner, v] : by_owner) {
      metrics.nodes_by_owner.WithLabels({owner}).Set(v.first);
      metrics.gpus_by_owner.WithLabels({owner}).Set(v.second);
    }
    const auto oldest = controller.reconciler().OldestByOwner();
    for (std::string_view o : skb::observability::kOwners) {
      auto it = oldest.find(std::string(o));
      metrics.nodes_oldest.WithLabels({o}).Set(
          it == oldest.end() ? 0 : std::chrono::duration<double>(it->second).count());
    }
    if (auto devices = controller.ObserveDevices()) {
      skb::bridge::ExportDeviceMetrics(*devices, &metrics);
    }
    if (auto q = controller.quotas().Current()) {
      skb::bridge::ExportQuotaMetrics(cfg->quotas, *q, &metrics);
      metrics.quota_classification_seconds.Set(
          std::chrono::duration<double>(controller.quotas().last_duration()).count());
    }
    // The plugin's counters arrive as totals from slurmctld; export the growth.
    auto c = controller.admission().counters();
    auto grow = [](uint64_t now_v, uint64_t* seen) {
      double d = now_v > *seen ? static_cast<double>(now_v - *seen) : 0;
      *seen = std::max(*seen, now_v);
      return d;
    };
    for (const char* source : {"nodes", "pods"}) {
      const skb::k8s::InformerStats now_stats = std::string_view(source) == "nodes"
                                                    ? controller.NodeInformerStats()
                                                    : controller.PodInformerStats();
      skb::k8s::InformerStats& seen = informer_seen[source];
      metrics.informer_lists.WithLabels({source}).Increment(grow(now_stats.lists, &seen.lists));
      metrics.informer_watches.WithLabels({source}).Increment(
          grow(now_stats.watches, &seen.watches));
      metrics.informer_expired.WithLabels({source}).Increment(
          grow(now_stats.expired, &seen.expired));
      metrics.informer_errors.WithLabels({source}).Increment(grow(now_stats.errors, &seen.errors));
    }
    const skb::k8s::EventRecorderStats ev = controller.EventStats();
    metrics.events.WithLabels({"created"}).Increment(grow(ev.created, &events_seen.created));
    metrics.events.WithLabels({"aggregated"})
        .Increment(grow(ev.aggregated, &events_seen.aggregated));
    metrics.events.WithLabels({"dropped_queue"})
        .Increment(grow(ev.dropped_queue, &events_seen.dropped_queue));
    metrics.events.WithLabels({"dropped_spam"})
        .Increment(grow(ev.dropped_spam, &events_seen.dropped_spam));
    metrics.events.WithLabels({"failed"}).Increment(grow(ev.failed, &events_seen.failed));
    metrics.plugin_requests.WithLabels({"accepted"})
        .Increment(grow(c.accepted, &plugin_seen_accepted));
    metrics.plugin_requests.WithLabels({"rejected"})
        .Increment(grow(c.rejected, &plugin_seen_rejected));
    metrics.plugin_requests.WithLabels({"error"}).Increment(grow(c.errors, &plugin_seen_errors));
    metrics.plugin_fail_open.Increment(grow(c.plugin_fail_open, &plugin_seen_fail_open));
    const skb::bridge::UnixServer::Stats sock = server.stats();
    metrics.socket_connections.WithLabels({"accepted"})
        .Increment(grow(sock.accepted, &socket_seen.accepted));
    metrics.socket_connections.WithLabels({"denied"})
        .Increment(grow(sock.denied, &socket_seen.denied));
    // `dropped` counts the stalled ones too; the series are disjoint.
    metrics.socket_connections.WithLabels({"stalled"})
        .Increment(grow(sock.stalled, &socket_seen.stalled));
    metrics.socket_connections.WithLabels({"dropped"})
        .Increment(grow(sock.dropped - sock.stalled, &socket_seen.dropped));
    metrics.socket_accept_errors.Increment(grow(sock.accept_errors, &socket_seen.accept_errors));
  });
  std::unique_ptr<skb::observability::HttpServer> http;
  if (!cfg->server.http_address.empty()) {
    http = std::make_unique<skb::observability::HttpServer>(
        skb::observability::HttpServerOptions{.address = cfg->server.http_address});
    skb::observability::AddStandardHandlers(http.get(), &registry, [&]() -> skb::Status {
      std::string why;
      return controller.Ready(&why) ? skb::OkStatus() : skb::UnavailableError(why);
    });
    if (auto s = http->Start(); !s.ok()) {
      log->error("http_failed address={} error=\"{}\"", cfg->server.http_address, s.ToString());
      return 1;
    }
    log->info("http_listening address={} port={}", cfg->server.http_address, http->port());
  }

  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGHUP) {
      log->info("sighup: configuration reload needs a restart (the daemon is stateless)");
      continue;
    }
    log->info("stopping signal={}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    break;
  }
  if (http) http->Stop();
  controller.Stop();
  server.Stop();
  log->info("stopped");
  return lost_leadership ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

// SPDX-License-Identifier: Apache-2.0
#include "bridge/daemon.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "bridge/logging.h"
#include "bridge/observability/process_metrics.h"
#include "bridge/plugin_server/admission_service.h"
#include "bridge/slurm/libslurm_client.h"
#include "bridge/version.h"
#include "k8s/api_error.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/ownership/quota_facts.h"

namespace skb::bridge {
namespace {

// Apiserver requests by API group, resource (with its subresource, as RBAC names it:
// "nodes/status") and verb.
std::string ApiResource(const k8s::RequestInfo& r) {
  return r.subresource.empty() ? r.resource->resource
                               : StrCat(r.resource->resource, "/", r.subresource);
}

}  // namespace

std::string DefaultIdentity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return StrCat(host, "-", getpid());
}

Daemon::Daemon(DaemonOptions options) : opts_(std::move(options)) {}

Daemon::~Daemon() { Stop(); }

StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options) {
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  if (auto s = d->Build(); !s.ok()) return s;
  return d;
}

Status Daemon::Build() {
  auto log = Logger("main");
  if (opts_.identity.empty()) opts_.identity = DefaultIdentity();

  // Kubernetes: three clients with rate limits of their own (as kube-controller-manager
  // has), so a burst of Events never delays an action and nothing delays a Lease renewal.
  k8s::KubeClient* kube[3] = {opts_.kube, opts_.kube, opts_.kube};
  if (opts_.kube == nullptr) {
    auto rest = cfg_.kubernetes.kubeconfig.empty()
                    ? k8s::DefaultRestConfig("")
                    : k8s::LoadKubeconfig(cfg_.kubernetes.kubeconfig, "");
    if (!rest.ok()) {
      return FailedPreconditionError(StrCat("kubernetes configuration: ", rest.status().message()));
    }
    rest->qps = cfg_.kubernetes.qps;
    rest->burst = static_cast<int>(cfg_.kubernetes.burst);
    for (int i = 0; i < 3; ++i) {
      auto c = k8s::NewRestClient(*rest);
      if (!c.ok()) {
        return FailedPreconditionError(StrCat("kubernetes client: ", c.status().message()));
      }
      own_kube_[i] = std::move(*c);
      kube[i] = own_kube_[i].get();
    }
  }

  metrics_ = std::make_unique<observability::BridgeMetrics>(&registry_, kVersion, kSlurmVersion);
  observability::AddProcessMetrics(&registry_);
  auto& metrics = *metrics_;
  // Counted as each request starts, so a watch that is still open counts.
  auto count_request = [&metrics](const k8s::RequestInfo& r) {
    metrics.kubernetes_api_requests.WithLabels({r.resource->group, ApiResource(r), r.verb})
        .Increment();
  };
  // Once they end: how each was answered (observability::KubernetesResponseCode). A watch
  // ended by our own shutdown is not counted.
  auto count_outcome = [&metrics](const k8s::RequestInfo& r, const Status& s) {
    if (s.code() == StatusCode::kCancelled) return;
    auto code = k8s::HttpCodeOf(s);
    metrics.kubernetes_api_responses
        .WithLabels({r.resource->group, ApiResource(r), r.verb,
                     observability::KubernetesResponseCode(s.ok(), code)})
        .Increment();
  };
  for (int i = 0; i < 3; ++i) {
    observed_[i] = std::make_unique<k8s::ObservedKubeClient>(kube[i], count_outcome, count_request);
  }

  slurm::SlurmClient* slurm = opts_.slurm;
  if (slurm == nullptr) {
    own_slurm_ = std::make_unique<slurm::LibSlurmClient>(slurm::LibSlurmClient::Options{
        .conf = cfg_.slurm.conf,
        .call_timeout = cfg_.slurm.call_timeout,
        .on_error = [&metrics](const std::string& call, const Status&) {
          metrics.slurm_rpc_errors.WithLabels({call}).Increment();
        }});
    slurm = own_slurm_.get();
  }
  const Clock* clock = opts_.clock;
  if (clock == nullptr) {
    own_clock_ = std::make_unique<k8s::SystemClock>();
    clock = own_clock_.get();
  }

  controller_ = std::make_unique<Controller>(
      ControllerOptions{.config = &cfg_,
                        .kube = observed_[0].get(),
                        .events_kube = observed_[1].get(),
                        .election_kube = observed_[2].get(),
                        .slurm = slurm,
                        .clock = clock,
                        .leader_election = opts_.leader_election,
                        .identity = opts_.identity,
                        .lease_name = cfg_.leader_election.lease_name,
                        .lease_duration = cfg_.leader_election.lease_duration,
                        .renew_deadline = cfg_.leader_election.renew_deadline,
                        .retry_period = cfg_.leader_election.retry_period,
                        .metrics = metrics_.get(),
                        .on_lost_leadership =
                            [this] {
                              lost_leadership_ = true;
                              if (opts_.on_lost_leadership) opts_.on_lost_leadership();
                            },
                        .after_action = opts_.hooks.after_action,
                        .before_action = opts_.hooks.before_action});
  Controller& controller = *controller_;

  // The socket answers the plugin (admission, from the Slurm snapshot) and bridgectl (the
  // merged inventory, the jobs, the quotas); every replica serves it from its own caches.
  queries_ = std::make_unique<InventoryQueries>(
      InventorySource{
          .snapshot = [&controller] { return controller.reconciler().Snapshot(); },
          .plan = [&controller](const std::string& node) { return controller.PlanNow(node); },
          .leader = [&controller] { return controller.Leader(); },
          .jobs = [&controller] { return controller.SlurmJobs(); },
          .ready = [&controller](std::string* why) { return controller.Ready(why); },
          .devices = [&controller] { return controller.ObserveDevices(); },
          .guaranteed_jobs =
              [&controller] {
                auto q = controller.quotas().Current();
                return q ? quota::GuaranteedJobs(*q) : ownership::GuaranteedJobs{};
              },
          .clock = clock},
      &cfg_);
  quota_queries_ = std::make_unique<QuotaQueries>(
      QuotaSource{.observation = [&controller] { return controller.quotas().Current(); },
                  .leader = [&controller] { return controller.Leader(); },
                  .ready = [&controller](std::string* why) { return controller.Ready(why); }},
      &cfg_);
  controller.admission().SetQueryHandler(
      [this](const api::v1::Request& req, api::v1::Response* resp) {
        return queries_->Handle(req, resp) || quota_queries_->Handle(req, resp);
      });
  controller.admission().SetConfig(&cfg_, [&controller] { return controller.quotas().Current(); });

  UnixServer::Options server_opts{.path = cfg_.server.socket_path};
  if (!cfg_.server.client_user.empty()) {
    const passwd* pw = getpwnam(cfg_.server.client_user.c_str());
    if (pw == nullptr) {
      return InvalidArgumentError(
          StrCat("server.client_user: no such user '", cfg_.server.client_user, "'"));
    }
    server_opts.owner_uid = pw->pw_uid;
    server_opts.allowed_uids.insert(pw->pw_uid);
  }
  // Admissions are answered on the server's poll thread, bridgectl's queries on its worker:
  // a big `bridgectl get nodes` never holds up a job submission.
  server_ = std::make_unique<UnixServer>(
      server_opts,
      [&controller](std::string_view frame, uint32_t pid) {
        return controller.admission().HandleFrame(frame, pid);
      },
      [](std::string_view frame) {
        return AdmissionService::IsQuery(frame) ? UnixServer::Lane::kWorker
                                                : UnixServer::Lane::kInline;
      });

  registry_.AddCollectHook([this] { Collect(); });
  if (!cfg_.server.http_address.empty()) {
    http_ = std::make_unique<observability::HttpServer>(
        observability::HttpServerOptions{.address = cfg_.server.http_address});
    observability::AddStandardHandlers(http_.get(), &registry_, [&controller]() -> Status {
      std::string why;
      return controller.Ready(&why) ? OkStatus() : UnavailableError(why);
    });
    // A terminating reservation's container asks here whether it may exit
    // (LendingConfig::release_url): "released" only on the informer's positive evidence.
    http_->Handle("/reservation-released", [&controller](const observability::HttpRequest& req) {
      observability::HttpResponse r;
      auto name = observability::QueryValue(req.query, "name");
      auto uid = observability::QueryValue(req.query, "uid");
      if (!name || !uid || name->empty() || uid->empty()) {
        r.status = 400;
        r.body = "name and uid are required\n";
      } else if (controller.ReservationReleased(std::string(*name), *uid)) {
        r.body = "released\n";
      } else {
        r.status = 404;
        r.body = "held\n";
      }
      return r;
    });
  }
  log->debug("daemon_built identity={} leader_election={}", opts_.identity, opts_.leader_election);
  return OkStatus();
}

Status Daemon::Start() {
  auto log = Logger("main");
  if (auto s = server_->Start(); !s.ok()) {
    return Status(s.code(), StrCat("socket ", cfg_.server.socket_path, ": ", s.message()));
  }
  if (auto s = controller_->Start(); !s.ok()) {
    server_->Stop();
    return Status(s.code(), StrCat("controller: ", s.message()));
  }
  if (http_) {
    if (auto s = http_->Start(); !s.ok()) {
      controller_->Stop();
      server_->Stop();
      return Status(s.code(), StrCat("http ", cfg_.server.http_address, ": ", s.message()));
    }
    log->info("http_listening address={} port={}", cfg_.server.http_address, http_->port());
  }
  return OkStatus();
}

void Daemon::Stop() {
  if (http_) http_->Stop();
  if (controller_) controller_->Stop();
  if (server_) server_->Stop();
}

uint16_t Daemon::http_port() const { return http_ ? http_->port() : 0; }

std::string Daemon::RenderMetrics() { return registry_.Render(); }

double Daemon::Growth(const std::string& key, uint64_t total) {
  uint64_t& seen = exported_[key];
  const double d = total > seen ? static_cast<double>(total - seen) : 0;
  seen = std::max(seen, total);
  return d;
}

void Daemon::Collect() {
  std::lock_guard<std::mutex> lock(collect_mu_);
  Controller& c = *controller_;
  auto& m = *metrics_;
  for (const auto& [name, queue] :
       {std::pair<std::string_view, const reconcile::WorkQueue*>{"nodes", &c.queue()},
        {"status", &c.status_queue()}}) {
    m.workqueue_depth.WithLabels({name}).Set(static_cast<double>(queue->ReadyLen()));
    const reconcile::InFlightWork w = queue->InFlight();
    m.workqueue_unfinished_work.WithLabels({name}).Set(
        std::chrono::duration<double>(w.total).count());
    m.workqueue_longest_running.WithLabels({name}).Set(
        std::chrono::duration<double>(w.longest).count());
  }
  m.leader.Set(c.IsLeader() ? 1 : 0);
  m.cache_synced.WithLabels({"nodes"}).Set(c.NodesSynced() ? 1 : 0);
  m.cache_synced.WithLabels({"pods"}).Set(c.PodsSynced() ? 1 : 0);
  m.cache_synced.WithLabels({"slurm"}).Set(c.SlurmPolled() ? 1 : 0);

  // Nodes and GPUs by the owner of each node's last plan; every owner is exported, zeros
  // included, and an owner the metrics do not name is left out.
  std::map<std::string, std::pair<double, double>> by_owner;
  for (std::string_view o : observability::kOwners) by_owner[std::string(o)] = {0, 0};
  for (const auto& [owner, t] : c.reconciler().OwnerTotals()) {
    if (!by_owner.count(owner)) continue;
    by_owner[owner] = {static_cast<double>(t.first), static_cast<double>(t.second)};
  }
  for (const auto& [owner, v] : by_owner) {
    m.nodes_by_owner.WithLabels({owner}).Set(v.first);
    m.gpus_by_owner.WithLabels({owner}).Set(v.second);
  }
  // One series per planned node, for its current owner: the old owner's series goes when
  // the owner changes, the node's when it leaves.
  std::map<std::string, std::string> exported;
  for (const auto& [node, o] : c.reconciler().OwnersSince()) {
    auto old = exported_owners_.find(node);
    if (old != exported_owners_.end() && old->second != o.owner) {
      m.node_owner_since.Remove({node, old->second});
    }
    m.node_owner_since.WithLabels({node, o.owner})
        .Set(std::chrono::duration<double>(o.since.time_since_epoch()).count());
    exported.emplace(node, o.owner);
  }
  for (const auto& [node, owner] : exported_owners_) {
    if (!exported.count(node)) m.node_owner_since.Remove({node, owner});
  }
  exported_owners_ = std::move(exported);
  if (auto devices = c.ObserveDevices()) ExportDeviceMetrics(*devices, &m);
  if (auto q = c.quotas().Current()) {
    ExportQuotaMetrics(cfg_.quotas, *q, &m);
    m.quota_classification_seconds.Set(
        std::chrono::duration<double>(c.quotas().last_duration()).count());
  }

  // Totals kept elsewhere; the counters export their growth.
  for (const char* source : {"nodes", "pods"}) {
    const k8s::InformerStats s =
        std::string_view(source) == "nodes" ? c.NodeInformerStats() : c.PodInformerStats();
    const std::string k = StrCat("informer/", source, "/");
    m.informer_lists.WithLabels({source}).Increment(Growth(k + "lists", s.lists));
    m.informer_watches.WithLabels({source}).Increment(Growth(k + "watches", s.watches));
    m.informer_expired.WithLabels({source}).Increment(Growth(k + "expired", s.expired));
    m.informer_errors.WithLabels({source}).Increment(Growth(k + "errors", s.errors));
  }
  const k8s::EventRecorderStats ev = c.EventStats();
  for (const auto& [outcome, total] : {std::pair<const char*, uint64_t>{"created", ev.created},
                                       {"aggregated", ev.aggregated},
                                       {"dropped_queue", ev.dropped_queue},
                                       {"dropped_spam", ev.dropped_spam},
                                       {"failed", ev.failed}}) {
    m.events.WithLabels({outcome}).Increment(Growth(StrCat("events/", outcome), total));
  }
  // The plugin's counters arrive as totals from slurmctld.
  const auto p = c.admission().counters();
  m.plugin_requests.WithLabels({"accepted"}).Increment(Growth("plugin/accepted", p.accepted));
  m.plugin_requests.WithLabels({"rejected"}).Increment(Growth("plugin/rejected", p.rejected));
  m.plugin_requests.WithLabels({"error"}).Increment(Growth("plugin/error", p.errors));
  m.plugin_fail_open.Increment(Growth("plugin/fail_open", p.plugin_fail_open));
  const UnixServer::Stats sock = server_->stats();
  m.socket_connections.WithLabels({"accepted"}).Increment(Growth("socket/accepted", sock.accepted));
  m.socket_connections.WithLabels({"denied"}).Increment(Growth("socket/denied", sock.denied));
  // `dropped` counts the stalled ones too; the series are disjoint.
  m.socket_connections.WithLabels({"stalled"}).Increment(Growth("socket/stalled", sock.stalled));
  m.socket_connections.WithLabels({"dropped"})
      .Increment(Growth("socket/dropped", sock.dropped - sock.stalled));
  m.socket_accept_errors.Increment(Growth("socket/accept_errors", sock.accept_errors));
}

}  // namespace skb::bridge

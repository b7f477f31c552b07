// SPDX-License-Identifier: Apache-2.0
// The Kubernetes load the bridge generates under Slurm job churn, and its cost at scale
// (issue 6: at 500 job starts/s on 1,000 nodes, target <= 20 writes/s on average; issue 8:
// 1,000 and 5,000 GPU nodes -- cold start, steady-state CPU, RSS, apiserver requests/s).
//
// Real: the bridge's Controller (informers, reconciler, ownership planner, executor,
// event recorder) and the testbed's kube-apiserver with `--nodes` kwok GPU nodes and the
// reservation pods the bridge creates on them. Synthetic: Slurm, whose node and job lists
// come from a generated cluster state and churn model (`--starts` jobs/s, each 1 GPU for
// `--job-seconds` on node k mod N) through the SlurmClient adapter interface -- the
// testbed's Slurm has 4 nodes. Every Kubernetes request the bridge makes (reads, watches
// started, writes, Events) goes through a counting KubeClient decorator.
//
//   eval "$(scripts/testbed env)"
//   flock -o /tmp/skb-testbed.lock build/bench/k8s_write_rate_e2e [--nodes 1000]
//       [--starts 500] [--job-seconds 16] [--seconds 120] [--warmup-timeout S]
//       [--writers 32] [--out bench/results] [--note TEXT] [--namespace NS] [--cleanup]
//       [--qps Q]   (the bridge's kubernetes.qps, burst 2x; default: the config default)
//
// Creates, with --writers concurrent requests on unthrottled admin clients, nodes
// wr-0000.. labelled skb-bench=write-rate and the namespace skb-bench-writes (or
// --namespace); deletes both
// at the end, also on failure (--cleanup: only delete whatever a crashed run left). The
// nodes carry kwok.x-k8s.io/node=fake, the annotation the testbed's kwok manages: kwok
// heart-beats them (node status and Lease renewals) and runs the reservation pods the
// bridge creates on them (marks them Running), so at 5,000 nodes kwok's own write load is
// part of what the apiserver serves during the measurement.
//
// Measures: cold start (Controller::Start() until both informers synced and Slurm polled),
// warm-up (until every node's reservation pod is created -- bound by spec.nodeName, so
// kube-scheduler counts its GPUs: the node is protected --, until kwok runs them all, and
// until every node's conditions are written; bounded by --warmup-timeout), then over
// --seconds of steady state: requests/s by verb and resource, object and Event writes/s,
// this process's CPU share (it is the Controller, plus the cheap churn model) and RSS.
// Writes bench/results/k8s_write_rate.json (1,000 nodes) or k8s_write_rate_<N>.json, with
// _qps<Q> appended under --qps.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/e2e_results.h"
#include "bench/kube_workers.h"
#include "bridge/controller.h"
#include "bridge/slurm/slurm_client.h"
#include "k8s/kube_client.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/config/config.h"

namespace {

using nlohmann::json;
using skb::StatusOr;
using skb::StrCat;
namespace bs = skb::bridge::slurm;
using Steady = std::chrono::steady_clock;

// The reservations' namespace: skb-bench-writes, or --namespace (a previous run's may still
// be terminating). Set once in main() before any thread starts.
std::string g_namespace = "skb-bench-writes";
constexpr char kLabel[] = "skb-bench";
constexpr char kLabelValue[] = "write-rate";

// A KubeClient decorator counting every request as it starts, by "verb resource[/sub]":
// a watch counts once when it is opened (ObservedKubeClient reports when it ends).
// Thread-safe.
class CountingKubeClient final : public skb::k8s::KubeClient {
 public:
  explicit CountingKubeClient(skb::k8s::KubeClient* inner) : inner_(inner) {}

  StatusOr<json> Get(const skb::k8s::Resource& r, const std::string& ns, const std::string& name,
                     const std::string& sub = "") override {
    Count("get", r, sub);
    return inner_->Get(r, ns, name, sub);
  }
  StatusOr<skb::k8s::ListResult> List(const skb::k8s::Resource& r, const std::string& ns,
                                      const skb::k8s::ListOptions& o) override {
    Count("list", r, "");
    return inner_->List(r, ns, o);
  }
  StatusOr<json> Create(const skb::k8s::Resource& r, const std::string& ns, const json& object,
                        const skb::k8s::WriteOptions& o = {}) override {
    Count("create", r, "");
    return inner_->Create(r, ns, object, o);
  }
  StatusOr<json> Update(const skb::k8s::Resource& r, const std::string& ns, const json& object,
                        const skb::k8s::WriteOptions& o = {},
                        const std::string& sub = "") override {
    Count("update", r, sub);
    return inner_->Update(r, ns, object, o, sub);
  }
  StatusOr<json> Patch(const skb::k8s::Resource& r, const std::string& ns, const std::string& name,
                       skb::k8s::PatchType type, const json& patch,
                       const skb::k8s::PatchOptions& o = {}, const std::string& sub = "") override {
    Count("patch", r, sub);
    return inner_->Patch(r, ns, name, type, patch, o, sub);
  }
  StatusOr<json> Delete(const skb::k8s::Resource& r, const std::string& ns, const std::string& name,
                        const skb::k8s::DeleteOptions& o = {}) override {
    Count("delete", r, "");
    return inner_->Delete(r, ns, name, o);
  }
  StatusOr<json> CreateSubresource(const skb::k8s::Resource& r, const std::string& ns,
                                   const std::string& name, const std::string& sub,
                                   const json& body) override {
    Count("create", r, sub);
    return inner_->CreateSubresource(r, ns, name, sub, body);
  }
  skb::Status Watch(const skb::k8s::Resource& r, const std::string& ns,
                    const skb::k8s::ListOptions& o, const skb::k8s::WatchHandler& handler,
                    const std::atomic<bool>* cancel) override {
    Count("watch", r, "");
    return inner_->Watch(r, ns, o, handler, cancel);
  }

  // The counts since the last Take().
  std::map<std::string, int64_t> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(counts_, {});
  }
  static bool IsWrite(const std::string& key) {
    return key.rfind("get ", 0) != 0 && key.rfind("list ", 0) != 0 && key.rfind("watch ", 0) != 0;
  }

 private:
  void Count(const char* verb, const skb::k8s::Resource& r, const std::string& sub) {
    std::string key = StrCat(verb, " ", r.resource, sub.empty() ? "" : "/", sub);
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[key];
  }

  skb::k8s::KubeClient* const inner_;
  std::mutex mu_;
  std::map<std::string, int64_t> counts_;
};

using Workers = skb::bench::KubeWorkers;

skb::Status Ignore(const skb::Status& s, skb::StatusCode harmless) {
  return s.code() == harmless ? skb::OkStatus() : s;
}

// Slurm as a churn model: job k starts at k/rate seconds after `origin` on node k mod N
// with 1 GPU and runs `job_seconds`. Nodes are healthy and never drained.
class ChurnSlurm : public bs::SlurmClient {
 public:
  ChurnSlurm(int nodes, double rate, double job_seconds)
      : nodes_(nodes),
        rate_(rate),
        job_seconds_(job_seconds),
        // Start in the steady state: as if the churn had been going on for a while.
        origin_(Steady::now() -
                std::chrono::milliseconds(static_cast<int64_t>(job_seconds * 1000))) {}

  static std::string NodeName(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "wr-%04d", i);
    return buf;
  }

  StatusOr<bs::Loaded<bs::NodeView>> LoadNodes(bs::UnixTime since) override {
    bs::Loaded<bs::NodeView> out;
    out.update_time = 1;
    if (since == 1) return out;
    out.changed = true;
    for (int i = 0; i < nodes_; ++i) out.items.push_back(Node(i));
    return out;
  }
  StatusOr<bs::NodeView> LoadNode(const std::string& name) override {
    for (int i = 0; i < nodes_; ++i) {
      if (NodeName(i) == name) return Node(i);
    }
    return skb::NotFoundError(name);
  }
  StatusOr<bs::Loaded<bs::JobView>> LoadJobs(bs::UnixTime) override {
    bs::Loaded<bs::JobView> out;
    out.changed = true;
    out.update_time = ++job_updates_;
    const double now = Seconds();
    const int64_t first = std::max<int64_t>(0, static_cast<int64_t>((now - job_seconds_) * rate_));
    const int64_t last = static_cast<int64_t>(now * rate_);
    starts_.store(last);
    for (int64_t k = first; k < last; ++k) out.items.push_back(Job(k));
    return out;
  }
  StatusOr<bs::JobView> LoadJob(uint32_t id) override { return Job(id); }
  StatusOr<bs::Loaded<bs::PartitionView>> LoadPartitions(bs::UnixTime since) override {
    bs::Loaded<bs::PartitionView> out;
    out.update_time = 1;
    if (since == 1) return out;
    out.changed = true;
    bs::PartitionView p;
    p.name = "gpu";
    p.is_default = true;
    for (int i = 0; i < nodes_; ++i) p.nodes.push_back(NodeName(i));
    out.items.push_back(std::move(p));
    return out;
  }
  StatusOr<bs::WriteOutcome> DrainNode(const std::string&, const std::string&) override {
    return Write();
  }
  StatusOr<bs::WriteOutcome> HandOverDrain(const std::string&, const std::string&) override {
    return Write();
  }
  StatusOr<bs::WriteOutcome> ResumeNode(const std::string&) override { return Write(); }
  StatusOr<bs::WriteOutcome> SetFeatures(const std::string&,
                                         const std::vector<std::string>&) override {
    return Write();
  }
  skb::Status SignalJob(uint32_t, int, bs::SignalScope) override { return Write().status(); }
  StatusOr<bs::WriteOutcome> RequeueJob(uint32_t, bool) override { return Write(); }
  StatusOr<bs::WriteOutcome> SuspendJob(uint32_t) override { return Write(); }
  StatusOr<bs::WriteOutcome> ResumeJob(uint32_t) override { return Write(); }
  StatusOr<bs::WriteOutcome> CancelJob(uint32_t) override { return Write(); }
  StatusOr<bs::WriteOutcome> SetAdminComment(uint32_t, const std::string&) override {
    return Write();
  }
  StatusOr<bs::WriteOutcome> MakeEligibleNow(uint32_t) override { return Write(); }
  StatusOr<bs::PlaceholderSubmission> SubmitPlaceholder(const bs::PlaceholderSpec&) override {
    return skb::UnimplementedError("the churn model places no placeholders");
  }
  // The churn model's nodes never ask for maintenance: the bridge never calls these.
  StatusOr<bs::WriteOutcome> RebootNode(const std::string&, const std::string&) override {
    return skb::UnimplementedError("the churn model reboots no node");
  }
  StatusOr<bs::WriteOutcome> CreateMaintenanceReservation(
      const bs::MaintenanceReservationSpec&) override {
    return skb::UnimplementedError("the churn model makes no reservation");
  }
  StatusOr<bs::WriteOutcome> DeleteReservation(const std::string&) override {
    return skb::UnimplementedError("the churn model makes no reservation");
  }
  StatusOr<bs::CheckJobSubmission> SubmitCheckJob(const bs::CheckJobSpec&) override {
    return skb::UnimplementedError("the churn model runs no check job");
  }

  int64_t starts() const { return starts_.load(); }
  int64_t slurm_writes() const { return writes_.load(); }

 private:
  double Seconds() const { return std::chrono::duration<double>(Steady::now() - origin_).count(); }
  bs::NodeView Node(int i) const {
    bs::NodeView n;
    n.name = NodeName(i);
    n.base_state = skb::slurm::NodeBaseState::kMixed;
    n.gres = "gpu:h100:8";
    n.gpus = {{"h100", 8}};
    n.features = n.active_features = {"h100"};
    n.partitions = {"gpu"};
    return n;
  }
  bs::JobView Job(int64_t k) const {
    bs::JobView j;
    j.job_id = static_cast<uint32_t>(k + 1);
    j.user_name = "alice";
    j.account = "ml";
    j.partition = "gpu";
    j.priority = 1000;
    j.state = skb::slurm::JobState::kRunning;
    j.nodes = {NodeName(static_cast<int>(k % nodes_))};
    j.gpus_per_node = 1;
    j.requeue = true;
    j.start_time = static_cast<bs::UnixTime>(std::time(nullptr));
    j.admin_comment = "k8s-bridge:preemptible=true";
    return j;
  }
  StatusOr<bs::WriteOutcome> Write() {
    ++writes_;
    return bs::WriteOutcome::kUnchanged;
  }

  const int nodes_;
  const double rate_;
  const double job_seconds_;
  const Steady::time_point origin_;
  std::atomic<int64_t> starts_{0};
  std::atomic<int64_t> writes_{0};
  bs::UnixTime job_updates_ = 1;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "k8s_write_rate_e2e: %s\n", what.c_str());
  return 1;
}

// Creates (or finds) `n` kwok GPU nodes, `workers` at a time; true when all exist with 8
// GPUs allocatable.
bool CreateNodes(Workers& workers, int n) {
  const json status = {
      {"status",
       {{"capacity",
         {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
        {"allocatable",
         {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}}}}};
  const int64_t failed = workers.Run(n, [&](skb::k8s::KubeClient& kube, int i) {
    const std::string name = ChurnSlurm::NodeName(i);
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name},
                   {"annotations", {{"kwok.x-k8s.io/node", "fake"}}},
                   {"labels",
                    {{kLabel, kLabelValue},
                     {"kubernetes.io/hostname", name},
                     {"type", "kwok"},
                     {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}}};
    auto c = kube.Create(skb::k8s::Resource::Nodes(), "", node);
    if (!c.ok() && c.status().code() != skb::StatusCode::kAlreadyExists) return c.status();
    return kube
        .Patch(skb::k8s::Resource::Nodes(), "", name, skb::k8s::PatchType::kJsonMerge, status, {},
               "status")
        .status();
  });
  return failed == 0;
}

// Names of the objects of `r` in `ns` matching `label_selector` ("" = all).
std::vector<std::string> Names(skb::k8s::KubeClient& kube, const skb::k8s::Resource& r,
                               const std::string& ns, const std::string& label_selector) {
  skb::k8s::ListOptions o;
  o.label_selector = label_selector;
  o.limit = 500;
  std::vector<std::string> names;
  if (auto list = skb::k8s::ListAll(kube, r, ns, o); list.ok()) {
    for (const auto& item : list->items) names.push_back(item["metadata"].value("name", ""));
  }
  return names;
}

// Deletes whatever this bench created, found by name and label whatever the run's size was
// (so it also cleans up after a crashed run): the reservation pods carry the bridge's
// finalizer, so drop it, and delete them with gracePeriodSeconds=0 (their grace period is
// 901 s and the testbed's kwok ends a reservation pod only at its end or on release), then
// delete the namespace and wait for it to go (a re-run cannot create pods in a terminating
// namespace), then the labelled nodes. True when clean.
bool Cleanup(skb::k8s::KubeClient& admin, Workers& workers) {
  const auto t0 = Steady::now();
  int64_t failed = 0;
  const auto pods = Names(admin, skb::k8s::Resource::Pods(), g_namespace, "");
  skb::k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  failed += workers.Run(static_cast<int>(pods.size()), [&](skb::k8s::KubeClient& kube, int i) {
    RETURN_IF_ERROR(Ignore(
        kube.Patch(skb::k8s::Resource::Pods(), g_namespace, pods[i],
                   skb::k8s::PatchType::kJsonMerge, {{"metadata", {{"finalizers", nullptr}}}})
            .status(),
        skb::StatusCode::kNotFound));
    return Ignore(kube.Delete(skb::k8s::Resource::Pods(), g_namespace, pods[i], now).status(),
                  skb::StatusCode::kNotFound);
  });
  (void)admin.Delete(skb::k8s::Resource::Namespaces(), "", g_namespace);
  bool ns_gone = false;
  for (int i = 0; i < 1200 && !ns_gone; ++i) {
    auto got = admin.Get(skb::k8s::Resource::Namespaces(), "", g_namespace);
    ns_gone = !got.ok() && got.status().code() == skb::StatusCode::kNotFound;
    if (!ns_gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string selector = StrCat(kLabel, "=", kLabelValue);
  const auto nodes = Names(admin, skb::k8s::Resource::Nodes(), "", selector);
  failed += workers.Run(static_cast<int>(nodes.size()), [&](skb::k8s::KubeClient& kube, int i) {
    return Ignore(kube.Delete(skb::k8s::Resource::Nodes(), "", nodes[i]).status(),
                  skb::StatusCode::kNotFound);
  });
  const bool clean =
      failed == 0 && ns_gone && Names(admin, skb::k8s::Resource::Nodes(), "", selector).empty();
  std::printf("cleanup: %zu pods, namespace %s (%s), %zu nodes in %.0f s, %lld failures: %s\n",
              pods.size(), g_namespace.c_str(), ns_gone ? "gone" : "STILL THERE", nodes.size(),
              std::chrono::duration<double>(Steady::now() - t0).count(),
              static_cast<long long>(failed), clean ? "clean" : "NOT CLEAN, run with --cleanup");
  return clean;
}

// The reservations that exist (bound: kube-scheduler counts their GPUs from then on, so the
// node is protected) and those kwok has made Running; -1, -1 when the list fails.
std::pair<int64_t, int64_t> Reservations(skb::k8s::KubeClient& kube) {
  auto pods = skb::k8s::ListAll(kube, skb::k8s::Resource::Pods(), g_namespace, {});
  if (!pods.ok()) return {-1, -1};
  int64_t running = 0;
  for (const json& p : pods->items) {
    if (p.contains("status") && p["status"].value("phase", "") == "Running") ++running;
  }
  return {static_cast<int64_t>(pods->items.size()), running};
}

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A "VmRSS:"-style field of /proc/self/status, in kB (0 when absent).
double StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atof(line.c_str() + field.size());
  }
  return 0;
}

int64_t Sum(const std::map<std::string, int64_t>& counts, bool writes_only) {
  int64_t total = 0;
  for (const auto& [k, v] : counts) {
    if (!writes_only || CountingKubeClient::IsWrite(k)) total += v;
  }
  return total;
}

double Since(Steady::time_point t0) {
  return std::chrono::duration<double>(Steady::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int nodes = 1000;
  double starts = 500;
  double job_seconds = 16;
  int seconds = 120;
  int warmup_timeout = -1;  // default: nodes / 2 + 120 s
  int writers = 32;
  bool cleanup_only = false;
  std::string out_dir = "bench/results";
  std::string extra_note;  // --note: appended to the results' notes (e.g. what kwok did)
  double qps = 0;          // --qps: the bridge's kubernetes.qps (burst 2x); 0: the default
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cleanup") {
      cleanup_only = true;
      continue;
    }
    if (i + 1 >= argc) return Fail(StrCat("missing value for ", a));
    const char* v = argv[++i];
    if (a == "--nodes")
      nodes = std::atoi(v);
    else if (a == "--starts")
      starts = std::atof(v);
    else if (a == "--job-seconds")
      job_seconds = std::atof(v);
    else if (a == "--seconds")
      seconds = std::atoi(v);
    else if (a == "--warmup-timeout")
      warmup_timeout = std::atoi(v);
    else if (a == "--writers")
      writers = std::atoi(v);
    else if (a == "--out")
      out_dir = v;
    else if (a == "--note")
      extra_note = v;
    else if (a == "--qps")
      qps = std::atof(v);
    else if (a == "--namespace")
      g_namespace = v;
    else
      return Fail(StrCat("unknown flag ", a));
  }
  if (nodes <= 0 || starts <= 0 || job_seconds <= 0 || seconds <= 0 || writers <= 0) {
    return Fail("--nodes, --starts, --job-seconds, --seconds and --writers must be positive");
  }
  if (warmup_timeout < 0) warmup_timeout = nodes / 2 + 120;
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr) return Fail("eval \"$(scripts/testbed env)\" first");
  auto kcfg = skb::k8s::LoadKubeconfig(kubeconfig, "");
  if (!kcfg.ok()) return Fail(kcfg.status().ToString());
  // The harness's own clients (setup, cleanup): unthrottled. The bridge's client below
  // keeps the configured rate limits, as in production.
  auto admin_cfg = *kcfg;
  admin_cfg.qps = 0;
  auto admin = skb::k8s::NewRestClient(admin_cfg);
  if (!admin.ok()) return Fail(admin.status().ToString());
  auto workers = skb::bench::KubeWorkers::Make(
      writers, [&]() -> StatusOr<std::unique_ptr<skb::k8s::KubeClient>> {
        return skb::k8s::NewRestClient(admin_cfg);
      });
  if (!workers.ok()) return Fail(workers.status().ToString());
  if (cleanup_only) return Cleanup(**admin, *workers) ? 0 : 1;

  json kube_cfg = {{"node_selector", StrCat(kLabel, "=", kLabelValue)}};
  if (qps > 0) {
    kube_cfg["qps"] = qps;
    kube_cfg["burst"] = static_cast<int>(2 * qps);
  }
  auto cfg =
      skb::config::ParseConfig(json{{"kubernetes", kube_cfg},
                                    {"features", {{"labels", json::array()}}},
                                    {"admission", {{"preemptible_partitions", {"gpu"}}}},
                                    {"lending", {{"enabled", true}, {"namespace", g_namespace}}}}
                                   .dump());
  if (!cfg.ok()) return Fail(cfg.status().ToString());
  kcfg->qps = cfg->kubernetes.qps;
  kcfg->burst = static_cast<int>(cfg->kubernetes.burst);

  std::printf("creating %d kwok nodes (%d writers) and namespace %s...\n", nodes, writers,
              g_namespace.c_str());
  const auto t_create = Steady::now();
  (void)(*admin)->Create(
      skb::k8s::Resource::Namespaces(), "",
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", g_namespace}}}});
  // The bridge's reservations are refused until kube-controller-manager has made the
  // namespace's default ServiceAccount.
  for (int i = 0;
       i < 300 &&
       !(*admin)->Get(skb::k8s::Resource::ServiceAccounts(), g_namespace, "default").ok();
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!CreateNodes(*workers, nodes)) {
    Cleanup(**admin, *workers);
    return Fail("creating the nodes failed");
  }
  const double create_s = Since(t_create);
  std::printf("  created in %.1f s\n", create_s);

  auto kube = skb::k8s::NewRestClient(*kcfg);
  auto events_kube = skb::k8s::NewRestClient(*kcfg);
  if (!kube.ok() || !events_kube.ok()) {
    Cleanup(**admin, *workers);
    return Fail("kube client");
  }
  CountingKubeClient counted(kube->get());
  CountingKubeClient counted_events(events_kube->get());
  ChurnSlurm slurm(nodes, starts, job_seconds);
  skb::k8s::SystemClock clock;
  skb::bridge::ControllerOptions opts;
  opts.config = &*cfg;
  opts.kube = &counted;
  opts.events_kube = &counted_events;
  opts.slurm = &slurm;
  opts.clock = &clock;
  opts.leader_election = false;
  opts.identity = "write-rate-bench";
  skb::bridge::Controller controller(opts);

  // Cold start: informers listed and synced, Slurm polled once.
  const auto t_start = Steady::now();
  if (auto s = controller.Start(); !s.ok()) {
    Cleanup(**admin, *workers);
    return Fail(s.ToString());
  }
  while (!(controller.NodesSynced() && controller.PodsSynced() && controller.SlurmPolled()) &&
         Since(t_start) < warmup_timeout) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool synced =
      controller.NodesSynced() && controller.PodsSynced() && controller.SlurmPolled();
  const double cold_start = Since(t_start);
  const double sync_rss_mb = StatusKb("VmRSS:") / 1024.0;
  std::printf("cold start: %s after %.2f s, RSS %.0f MB\n", synced ? "synced" : "NOT SYNCED",
              cold_start, sync_rss_mb);

  // Warm-up: every node gets its reservation (one create each, at the client's rate limit)
  // and its node conditions (the status lane, which yields to the reservations: it writes
  // with what rate the reconcile lane leaves). Reservations polled every 2 s, less often on
  // large clusters: each poll lists every reservation.
  // Three times: every reservation created (the node protected: the bridge's part), every
  // one Running (kwok's part after that), every node's conditions written (the status
  // queue empty on three looks 200 ms apart: a key in flight is not counted).
  const auto poll = std::chrono::seconds(std::max(2, nodes / 1000));
  double created_s = -1, running_s = -1, status_s = -1;
  int64_t created = 0, running = 0;
  auto next_list = Steady::now();
  for (int empty = 0; Since(t_start) < warmup_timeout;) {
    if (Steady::now() >= next_list) {
      std::tie(created, running) = Reservations(**admin);
      if (created_s < 0 && created >= nodes) created_s = Since(t_start);
      if (running_s < 0 && running >= nodes) running_s = Since(t_start);
      next_list = Steady::now() + poll;
    }
    empty = controller.status_queue().Len() == 0 ? empty + 1 : 0;
    if (status_s < 0 && empty >= 3 && created_s >= 0) status_s = Since(t_start);
    if (running_s >= 0 && status_s >= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const bool status_done = status_s >= 0;
  const double reservations_s = running_s >= 0 ? running_s : Since(t_start);
  const double warmup = Since(t_start);
  const auto at = [](double s) { return s >= 0 ? StrCat(static_cast<int>(s + 0.5), " s") : "NOT"; };
  std::printf(
      "warm-up: %lld/%d reservations created %s, running %s, node conditions written %s after "
      "Start()%s\n",
      static_cast<long long>(created), nodes, at(created_s).c_str(), at(running_s).c_str(),
      at(status_s).c_str(), running < nodes || !status_done ? " (TIMED OUT)" : "");
  const auto warm_requests = counted.Take();
  const auto warm_events = counted_events.Take();

  // Steady state: measure.
  const int64_t starts0 = slurm.starts();
  const int64_t slurm_writes0 = slurm.slurm_writes();
  const double cpu0 = CpuSeconds();
  const auto t0 = Steady::now();
  std::map<std::string, int64_t> requests, events;
  for (int s = 0; s < seconds; s += 10) {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    for (auto& [k, v] : counted.Take()) requests[k] += v;
    for (auto& [k, v] : counted_events.Take()) events[k] += v;
    std::printf("  +%3d s: %lld requests, %lld object writes so far\n", s + 10,
                static_cast<long long>(Sum(requests, false)),
                static_cast<long long>(Sum(requests, true)));
  }
  const double took = Since(t0);
  const double job_rate = static_cast<double>(slurm.starts() - starts0) / took;
  // The bridge's cost in steady state: this process is the Controller (plus the churn
  // model and the counters, which are cheap; the harness's workers are idle).
  const double cpu_share = (CpuSeconds() - cpu0) / took;
  const double rss_mb = StatusKb("VmRSS:") / 1024.0, hwm_mb = StatusKb("VmHWM:") / 1024.0;
  controller.Stop();
  const bool clean = Cleanup(**admin, *workers);

  std::printf("\n%d nodes, %.0f Slurm job starts/s measured over %.0f s\n", nodes, job_rate, took);
  std::printf(
      "  cold start (list + sync) %.2f s, warm-up %.0f s (%lld/%d reservations, "
      "%lld requests, %lld object writes)\n",
      cold_start, warmup, static_cast<long long>(running), nodes,
      static_cast<long long>(Sum(warm_requests, false) + Sum(warm_events, false)),
      static_cast<long long>(Sum(warm_requests, true)));
  json warmup_by_kind = json::object();
  for (const auto& [k, v] : warm_requests) warmup_by_kind[k] = v;
  for (const auto& [k, v] : warm_events) warmup_by_kind[StrCat(k, " (events client)")] = v;
  std::printf("  warm-up requests: %s\n", warmup_by_kind.dump().c_str());
  json writes_by_kind = json::object(), requests_by_kind = json::object();
  for (const auto& [k, v] : requests) {
    const double r = static_cast<double>(v) / took;
    requests_by_kind[k] = r;
    if (CountingKubeClient::IsWrite(k)) writes_by_kind[k] = r;
    std::printf("  %-40s %8.2f requests/s\n", k.c_str(), r);
  }
  for (const auto& [k, v] : events) {
    const double r = static_cast<double>(v) / took;
    requests_by_kind[StrCat(k, " (events client)")] = r;
    std::printf("  %-40s %8.2f requests/s (events client)\n", k.c_str(), r);
  }
  const double rate = static_cast<double>(Sum(requests, true)) / took;
  const double event_rate = static_cast<double>(Sum(events, true)) / took;
  const double request_rate = static_cast<double>(Sum(requests, false) + Sum(events, false)) / took;
  std::printf(
      "  all requests %.2f/s; object writes %.2f/s (target <= 20/s), Event writes "
      "%.2f/s, Slurm writes %lld\n",
      request_rate, rate, event_rate, static_cast<long long>(slurm.slurm_writes() - slurm_writes0));
  std::printf(
      "  bridge process: %.1f%% of one core, RSS %.0f MB after sync, %.0f MB in steady "
      "state (peak %.0f MB)\n",
      cpu_share * 100, sync_rss_mb, rss_mb, hwm_mb);
  const std::string name =
      StrCat(nodes == 1000 ? std::string("k8s_write_rate") : StrCat("k8s_write_rate_", nodes),
             qps > 0 ? StrCat("_qps", static_cast<int>(qps)) : "");
  skb::bench::WriteResult(
      out_dir, name,
      {{"name", name},
       {"unit", ""},  // mixed: *_s seconds, *_mb MB, the rest per second
       {"figures",
        {{"object_writes", rate},
         {"event_writes", event_rate},
         {"requests_per_s", request_rate},
         {"job_starts", job_rate},
         {"cold_start_sync_s", cold_start},
         {"warmup_s", warmup},
         {"reservations_created_s", created_s},
         {"conditions_written_s", status_s},
         {"cpu_percent", cpu_share * 100},
         {"rss_mb", rss_mb},
         {"sync_rss_mb", sync_rss_mb},
         {"peak_rss_mb", hwm_mb}}},
       {"details",
        {{"nodes", nodes},
         {"steady_seconds", took},
         {"by_kind", writes_by_kind},
         {"requests_by_kind", requests_by_kind},
         {"warmup_requests_by_kind", warmup_by_kind},
         {"warmup_seconds", warmup},
         {"warmup_reservations_seconds", reservations_s},
         {"warmup_reservations_created_seconds", created_s},
         {"warmup_conditions_seconds", status_s},
         {"warmup_status_written", status_done},
         {"warmup_timeout_seconds", warmup_timeout},
         {"reservations_running", running},
         {"node_create_seconds", create_s},
         {"node_writers", writers},
         {"cleanup_clean", clean}}},
       {"target", "<= 20 object writes/s average at 500 job starts/s on 1,000 nodes"},
       {"notes",
        StrCat("real Controller and apiserver with kwok nodes (kwok heart-beats them and runs "
               "the reservation pods); synthetic Slurm: generated cluster state and churn (",
               job_seconds,
               " s jobs, 1 GPU each) through the SlurmClient adapter interface; "
               "reservation_update_interval and class delays at their defaults; bridge client "
               "at ",
               qps > 0 ? "a raised" : "its default", " rate limit (", cfg->kubernetes.qps,
               " qps, burst ", cfg->kubernetes.burst,
               "); requests/s counts watches when opened; cold start = "
               "Start() to informers synced and Slurm polled; warm-up = Start() to every "
               "reservation created (",
               at(created_s), "; the node protected), Running (", at(running_s),
               "; kwok) and every node's conditions written (", at(status_s), ")",
               running < nodes || !status_done ? " (TIMED OUT)" : "", "; ", seconds,
               " s steady state", extra_note.empty() ? "" : "; ", extra_note)}});
  return running == nodes && status_done && synced && clean ? 0 : 1;
}

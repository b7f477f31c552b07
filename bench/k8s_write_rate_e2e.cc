// The Kubernetes write rate the bridge generates under Slurm job churn (issue 6: at 500 job
// starts/s on 1,000 nodes, target <= 20 writes/s on average).
//
// Real: the bridge's Controller (informers, reconciler, ownership planner, executor,
// event recorder) and the testbed's kube-apiserver with `--nodes` kwok GPU nodes and the
// reservation pods the bridge creates on them. Synthetic: Slurm, whose node and job lists
// come from a churn model (`--starts` jobs/s, each 1 GPU for `--job-seconds` on node
// k mod N) through the SlurmClient interface -- the testbed's Slurm has 4 nodes. Every
// Kubernetes write the bridge makes goes through a counting KubeClient decorator.
//
//   eval "$(scripts/testbed env)"; build/bench/k8s_write_rate_e2e [--nodes 1000]
//       [--starts 500] [--job-seconds 16] [--seconds 120] [--out bench/results]
//
// Creates nodes wr-0000.. labelled skb-bench=write-rate and the namespace
// skb-bench-writes; deletes both at the end. Prints writes/s by verb and resource and
// writes bench/results/k8s_write_rate.json.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/e2e_results.h"
#include "bridge/controller.h"
#include "bridge/slurm/slurm_client.h"
#include "k8s/kubeconfig.h"
#include "k8s/observed_kube_client.h"
#include "k8s/rest_client.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/config/config.h"

namespace {

using skb::StatusOr;
using skb::StrCat;
using nlohmann::json;
namespace bs = skb::bridge::slurm;
using Steady = std::chrono::steady_clock;

constexpr char kNamespace[] = "skb-bench-writes";
constexpr char kLabel[] = "skb-bench";
constexpr char kLabelValue[] = "write-rate";

// Counts the writes that pass through, by "VERB resource[/subresource]".
class WriteCounter {
 public:
  skb::k8s::ObservedKubeClient::Observer Observer() {
    return [this](const skb::k8s::RequestInfo& r, const skb::Status&) {
      if (!r.write()) return;
      std::lock_guard<std::mutex> lock(mu_);
      ++counts_[StrCat(r.verb, " ", r.resource->resource, r.subresource.empty() ? "" : "/",
                       r.subresource)];
    };
  }
  std::map<std::string, int64_t> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(counts_, {});
  }

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> counts_;
};

// Slurm as a churn model: job k starts at k/rate seconds after `origin` on node k mod N
// with 1 GPU and runs `job_seconds`. Nodes are healthy and never drained.
class ChurnSlurm : public bs::SlurmClient {
 public:
  ChurnSlurm(int nodes, double rate, double job_seconds)
      : nodes_(nodes), rate_(rate), job_seconds_(job_seconds),
        // Start in the steady state: as if the churn had been going on for a while.
        origin_(Steady::now() - std::chrono::milliseconds(static_cast<int64_t>(job_seconds * 1000))) {}

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

  int64_t starts() const { return starts_.load(); }
  int64_t slurm_writes() const { return writes_.load(); }

 private:
  double Seconds() const {
    return std::chrono::duration<double>(Steady::now() - origin_).count();
  }
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

// Creates (or finds) `n` kwok GPU nodes; true when all exist with 8 GPUs allocatable.
bool CreateNodes(skb::k8s::KubeClient& kube, int n) {
  const json status = {{"status",
                        {{"capacity", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"},
                                       {"nvidia.com/gpu", "8"}}},
                         {"allocatable", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"},
                                          {"nvidia.com/gpu", "8"}}}}}};
  for (int i = 0; i < n; ++i) {
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
    if (!c.ok() && c.status().code() != skb::StatusCode::kAlreadyExists) {
      std::fprintf(stderr, "create node %s: %s\n", name.c_str(), c.status().ToString().c_str());
      return false;
    }
    auto p = kube.Patch(skb::k8s::Resource::Nodes(), "", name, skb::k8s::PatchType::kJsonMerge,
                        status, {}, "status");
    if (!p.ok()) {
      std::fprintf(stderr, "node %s status: %s\n", name.c_str(), p.status().ToString().c_str());
      return false;
    }
  }
  return true;
}

void Cleanup(skb::k8s::KubeClient& kube, int n) {
  // Reservation pods carry the bridge's finalizer: drop it, then the namespace and nodes.
  skb::k8s::ListOptions o;
  if (auto pods = skb::k8s::ListAll(kube, skb::k8s::Resource::Pods(), kNamespace, o); pods.ok()) {
    for (const auto& p : pods->items) {
      std::string name = p["metadata"].value("name", "");
      (void)kube.Patch(skb::k8s::Resource::Pods(), kNamespace, name, skb::k8s::PatchType::kJsonMerge,
                       {{"metadata", {{"finalizers", nullptr}}}});
    }
  }
  (void)kube.Delete(skb::k8s::Resource::Namespaces(), "", kNamespace);
  for (int i = 0; i < n; ++i) {
    (void)kube.Delete(skb::k8s::Resource::Nodes(), "", ChurnSlurm::NodeName(i));
  }
}

int64_t RunningReservations(skb::k8s::KubeClient& kube) {
  skb::k8s::ListOptions o;
  o.field_selector = "status.phase=Running";
  auto pods = skb::k8s::ListAll(kube, skb::k8s::Resource::Pods(), kNamespace, o);
  return pods.ok() ? static_cast<int64_t>(pods->items.size()) : -1;
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

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int nodes = 1000;
  double starts = 500;
  double job_seconds = 16;
  int seconds = 120;
  std::string out_dir = "bench/results";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--nodes") nodes = std::atoi(argv[i + 1]);
    if (a == "--starts") starts = std::atof(argv[i + 1]);
    if (a == "--job-seconds") job_seconds = std::atof(argv[i + 1]);
    if (a == "--seconds") seconds = std::atoi(argv[i + 1]);
    if (a == "--out") out_dir = argv[i + 1];
  }
  if (nodes <= 0 || starts <= 0 || job_seconds <= 0 || seconds <= 0) {
    return Fail("--nodes, --starts, --job-seconds and --seconds must be positive");
  }
  const char* kubeconfig = std::getenv("KUBECONFIG");
  if (kubeconfig == nullptr) return Fail("eval \"$(scripts/testbed env)\" first");
  auto kcfg = skb::k8s::LoadKubeconfig(kubeconfig, "");
  if (!kcfg.ok()) return Fail(kcfg.status().ToString());
  // The harness's own client (setup, cleanup): unthrottled. The bridge's client below
  // keeps the configured rate limits, as in production.
  auto admin_cfg = *kcfg;
  admin_cfg.qps = 0;
  auto admin = skb::k8s::NewRestClient(admin_cfg);
  if (!admin.ok()) return Fail(admin.status().ToString());

  auto cfg = skb::config::ParseConfig(
      json{{"kubernetes", {{"node_selector", StrCat(kLabel, "=", kLabelValue)}}},
           {"features", {{"labels", json::array()}}},
           {"admission", {{"preemptible_partitions", {"gpu"}}}},
           {"lending", {{"enabled", true}, {"namespace", kNamespace}}}}
          .dump());
  if (!cfg.ok()) return Fail(cfg.status().ToString());
  kcfg->qps = cfg->kubernetes.qps;
  kcfg->burst = static_cast<int>(cfg->kubernetes.burst);

  std::printf("creating %d kwok nodes and namespace %s...\n", nodes, kNamespace);
  (void)(*admin)->Create(skb::k8s::Resource::Namespaces(), "",
                         {{"apiVersion", "v1"}, {"kind", "Namespace"},
                          {"metadata", {{"name", kNamespace}}}});
  if (!CreateNodes(**admin, nodes)) {
    Cleanup(**admin, nodes);
    return Fail("creating the nodes failed");
  }

  auto kube = skb::k8s::NewRestClient(*kcfg);
  auto events_kube = skb::k8s::NewRestClient(*kcfg);
  if (!kube.ok() || !events_kube.ok()) return Fail("kube client");
  WriteCounter object_writes, event_writes;
  skb::k8s::ObservedKubeClient counted(kube->get(), object_writes.Observer());
  skb::k8s::ObservedKubeClient counted_events(events_kube->get(), event_writes.Observer());
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
  if (auto s = controller.Start(); !s.ok()) {
    Cleanup(**admin, nodes);
    return Fail(s.ToString());
  }

  // Warm-up: every node gets its reservation (one create each, at the client's rate limit).
  const auto t_start = Steady::now();
  while (RunningReservations(**admin) < nodes &&
         Steady::now() - t_start < std::chrono::seconds(nodes / 2 + 120)) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  const double warmup = std::chrono::duration<double>(Steady::now() - t_start).count();
  const int64_t running = RunningReservations(**admin);
  std::printf("warm-up: %lld/%d reservations running after %.0f s\n",
              static_cast<long long>(running), nodes, warmup);
  auto warm_writes = object_writes.Take();
  (void)event_writes.Take();

  // Steady state: measure.
  const int64_t starts0 = slurm.starts();
  const int64_t slurm_writes0 = slurm.slurm_writes();
  const double cpu0 = CpuSeconds();
  const auto t0 = Steady::now();
  std::map<std::string, int64_t> writes, events;
  for (int s = 0; s < seconds; s += 10) {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    for (auto& [k, v] : object_writes.Take()) writes[k] += v;
    for (auto& [k, v] : event_writes.Take()) events[k] += v;
    int64_t total = 0;
    for (auto& [k, v] : writes) total += v;
    std::printf("  +%3d s: %lld object writes so far\n", s + 10, static_cast<long long>(total));
  }
  const double took = std::chrono::duration<double>(Steady::now() - t0).count();
  const double job_rate = static_cast<double>(slurm.starts() - starts0) / took;
  // The bridge's cost in steady state: this process is the Controller (plus the churn
  // model and the counters, which are cheap).
  const double cpu_share = (CpuSeconds() - cpu0) / took;
  const double rss_mb = StatusKb("VmRSS:") / 1024.0, hwm_mb = StatusKb("VmHWM:") / 1024.0;
  controller.Stop();
  Cleanup(**admin, nodes);

  int64_t total = 0, total_events = 0;
  json by_kind = json::object();
  std::printf("\n%d nodes, %.0f Slurm job starts/s measured over %.0f s (warm-up %.0f s, "
              "%lld writes)\n",
              nodes, job_rate, took, warmup,
              static_cast<long long>([&] {
                int64_t t = 0;
                for (auto& [k, v] : warm_writes) t += v;
                return t;
              }()));
  for (const auto& [k, v] : writes) {
    total += v;
    by_kind[k] = static_cast<double>(v) / took;
    std::printf("  %-40s %8.2f writes/s\n", k.c_str(), static_cast<double>(v) / took);
  }
  for (const auto& [k, v] : events) total_events += v;
  const double rate = static_cast<double>(total) / took;
  const double event_rate = static_cast<double>(total_events) / took;
  std::printf("  object writes %.2f/s (target <= 20/s), Event writes %.2f/s, Slurm writes %lld\n",
              rate, event_rate, static_cast<long long>(slurm.slurm_writes() - slurm_writes0));
  std::printf("  bridge process: %.1f%% of one core, RSS %.0f MB (peak %.0f MB)\n",
              cpu_share * 100, rss_mb, hwm_mb);
  skb::bench::WriteResult(
      out_dir, nodes == 1000 ? std::string("k8s_write_rate") : StrCat("k8s_write_rate_", nodes),
      {{"name", nodes == 1000 ? std::string("k8s_write_rate") : StrCat("k8s_write_rate_", nodes)},
       {"unit", "/s"},
       {"figures",
        {{"object_writes", rate}, {"event_writes", event_rate}, {"job_starts", job_rate},
         {"cpu_percent", cpu_share * 100}, {"rss_mb", rss_mb}, {"peak_rss_mb", hwm_mb}}},
       {"details", {{"nodes", nodes}, {"by_kind", by_kind}, {"warmup_seconds", warmup}}},
       {"target", "<= 20 object writes/s average at 500 job starts/s on 1,000 nodes"},
       {"notes", StrCat("real Controller and apiserver with kwok nodes; synthetic Slurm churn (",
                        job_seconds, " s jobs, 1 GPU each); reservation_update_interval and "
                        "class delays at their defaults")}});
  return running == nodes ? 0 : 1;
}

// Kubernetes inference pods take nodes from Slurm through the bridge, end to end on the
// testbed with the real kube-scheduler's preemption: reservation pods hold Slurm's GPUs in
// Kubernetes; a high-priority pod preempts one; the bridge drains the Slurm node, sends
// the checkpoint signal, waits the grace, requeues the job and only then releases the
// GPUs; when the pod leaves, the node returns to Slurm and the job runs again.
//
// A sampler checks invariant 1 (DESIGN.md) every 100 ms for the whole test: no node runs a
// Slurm job holding GPUs and a Kubernetes GPU pod at the same time. The bridge is killed
// (SIGKILL) mid-lend and must finish the flow after a restart (invariant 3).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "bridge/slurm/libslurm_client.h"
#include "k8s/kubeconfig.h"
#include "k8s/rest_client.h"
#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/invariant_sampler.h"
#include "tests/testbed/testbed_support.h"

namespace skb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testbed::BridgeDaemon;
using testbed::InvariantSampler;
using testbed::RunCommand;
using testbed::Shell;
using testbed::WaitFor;
using ::testing::HasSubstr;

using Steady = std::chrono::steady_clock;

std::string Trim(const std::string& s) { return std::string(StripWhitespace(s)); }

constexpr int kGraceSeconds = 5;
constexpr int kCooldownSeconds = 8;

class LendingE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    Reset();
    char tmpl[] = "/tmp/skb-lend-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    chmod(dir_.c_str(), 0777);  // job scripts may run as another user
    auto cfg = k8s::LoadKubeconfig(std::getenv("KUBECONFIG"), "");
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    cfg->qps = 0;
    auto kube = k8s::NewRestClient(*cfg);
    ASSERT_TRUE(kube.ok()) << kube.status();
    kube_ = std::move(*kube);
    slurm_ = std::make_unique<bridge::slurm::LibSlurmClient>(bridge::slurm::LibSlurmClient::Options{});
    const std::string overlay =
        StrCat(R"({"admission": {"preemptible_partitions": ["gpu"]},
                   "server": {"http_address": "127.0.0.1:0"},
                   "features": {"labels": []},
                   "leader_election": {"lease_name": ")", kLease, R"(",
                     "lease_duration": "3s", "renew_deadline": "2s", "retry_period": "500ms"},
                   "lending": {"enabled": true, "default_grace": ")", kGraceSeconds,
               R"(s", "cooldown": ")", kCooldownSeconds,
               R"(s", "min_lend_time": "5s", "class_upgrade_delay": "1s",
                   "class_downgrade_delay": "5s", "reservation_update_interval": "5s"}})");
    if (replicas_ == 1) {
      daemon_ = std::make_unique<BridgeDaemon>(SKB_DAEMON_BINARY, overlay);
    } else {
      // Two candidates for a Lease of their own (a fresh one: delete what a crashed run
      // may have left). The first leads; the second follows with warm caches.
      Shell(StrCat("kubectl delete lease -n slurm-bridge ", kLease, " --ignore-not-found"));
      daemon_ = std::make_unique<BridgeDaemon>(SKB_DAEMON_BINARY, overlay,
                                               std::vector<std::string>{"--identity", "bridge-a"});
      standby_ = std::make_unique<BridgeDaemon>(SKB_DAEMON_BINARY, overlay,
                                                std::vector<std::string>{"--identity", "bridge-b"});
    }
    Status s = daemon_->Start();
    ASSERT_TRUE(s.ok()) << s;
    if (standby_) {
      Status f = standby_->Start("snapshot_published");
      ASSERT_TRUE(f.ok()) << f;
      ASSERT_EQ(LeaseHolder(), "bridge-a");
    }
    ASSERT_TRUE(WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); },
                        seconds(60)))
        << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();
    sampler_ = std::make_unique<InvariantSampler>(kube_.get(), slurm_.get());
  }

  void TearDown() override {
    if (sampler_) {
      sampler_->Stop();
      EXPECT_GT(sampler_->samples(), 50);
      EXPECT_EQ(sampler_->violations(), 0)
          << "double booking (" << sampler_->samples() << " samples): "
          << sampler_->first_violation();
      std::printf("invariant sampler: %d samples, %d double-booked\n", sampler_->samples(),
                  sampler_->violations());
    }
    if (::testing::Test::HasFailure() && daemon_) {
      std::printf("bridge log tail:\n%s\n", daemon_->LogTail(6000).c_str());
    }
    if (::testing::Test::HasFailure() && standby_) {
      std::printf("standby log tail:\n%s\n", standby_->LogTail(6000).c_str());
    }
    if (daemon_) daemon_->Stop();
    if (standby_) standby_->Stop();
    for (const auto& id : jobs_) Shell(StrCat("scancel ", id));
    Reset();
    if (!dir_.empty()) Shell(StrCat("rm -rf ", dir_));
  }

  static std::string LeaseHolder() {
    return Trim(RunCommand({"kubectl", "get", "lease", "-n", "slurm-bridge", kLease, "-o",
                            "jsonpath={.spec.holderIdentity}"},
                           seconds(30))
                    .out);
  }

  static void Reset() {
    auto r = Shell(StrCat(SKB_SOURCE_DIR, "/tests/e2e/bridge/reset_lending.sh"), seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  int RunningReservations() {
    auto r = Shell(
        "kubectl get pods -n slurm-bridge -l slurm-k8s-bridge.io/role=reservation "
        "--field-selector=status.phase=Running --no-headers 2>/dev/null | "
        "grep -vc Terminating");
    return std::atoi(Trim(r.out).c_str());
  }

  // A job taking a whole node that writes the name and time of each signal in `traps`
  // (e.g. "USR1") it gets to DIR/signal-ID; no traps: the signal kills it.
  std::string Submit(const std::string& partition, const std::vector<std::string>& traps = {"USR1"},
                     const std::vector<std::string>& sbatch_args = {}) {
    std::string script;
    for (const auto& sig : traps) {
      StrAppend(&script, "trap 'echo ", sig, " $(date +%s.%N) >> ", dir_, "/signal-$SLURM_JOB_ID' ",
                sig, "; ");
    }
    StrAppend(&script, "for i in $(seq 3000); do sleep 0.2; done");
    std::vector<std::string> argv = {"sbatch", "--parsable", "--requeue", "--gres=gpu:8", "-p",
                                     partition, "-o", "/dev/null"};
    argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
    argv.insert(argv.end(), {"--wrap", script});
    auto r = RunCommand(argv, seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = Trim(r.out);
    jobs_.push_back(id);
    return id;
  }

  std::string Signals(const std::string& id) {
    return testbed::ReadAll(StrCat(dir_, "/signal-", id));
  }

  int Restarts(const std::string& id) { return std::atoi(JobField(id, "Restarts").c_str()); }

  // Reservation pods by priority class, counting the Running ones not being deleted.
  std::map<std::string, int> ReservationClasses() {
    auto r = Shell(
        "kubectl get pods -n slurm-bridge -l slurm-k8s-bridge.io/role=reservation -o "
        "jsonpath='{range .items[*]}{.spec.priorityClassName} {.status.phase} "
        "{.metadata.deletionTimestamp}{\"\\n\"}{end}'");
    std::map<std::string, int> out;
    for (const auto& line : StrSplit(r.out, '\n')) {
      std::string l = Trim(std::string(line));
      if (l.size() > 8 && l.substr(l.size() - 8) == " Running") ++out[l.substr(0, l.size() - 8)];
    }
    return out;
  }

  // The leader's /metrics.
  std::string Metrics() { return Shell(StrCat("curl -s ", daemon_->HttpBase(), "/metrics")).out; }

  std::string NodeEvents(const std::string& node) {
    return Shell(StrCat("kubectl get events -n default --field-selector involvedObject.name=",
                        node, " -o custom-columns=R:.reason,M:.message --no-headers"))
        .out;
  }

  std::string JobField(const std::string& id, const std::string& field) {
    std::string out = Shell(StrCat("scontrol show job ", id)).out;
    auto at = out.find(field + "=");
    if (at == std::string::npos) return "";
    // AdminComment has a line of its own and may hold spaces.
    auto end = out.find_first_of(field == "AdminComment" ? "\n" : " \n", at);
    return out.substr(at + field.size() + 1, end - at - field.size() - 1);
  }

  std::string JobNode(const std::string& id) {
    return Trim(Shell(StrCat("squeue -h -j ", id, " -o %N")).out);
  }

  bool AllRunning() {
    for (const auto& id : jobs_) {
      if (JobField(id, "JobState") != "RUNNING") return false;
    }
    return true;
  }

  // Every reservation of the wanted class, running, and no swap in progress.
  bool ReservationsSettledAt(const std::string& cls) {
    auto r = Shell(
        "kubectl get pods -n slurm-bridge -l slurm-k8s-bridge.io/role=reservation -o "
        "jsonpath='{range .items[*]}{.spec.priorityClassName} {.status.phase} "
        "{.metadata.deletionTimestamp}{\"\\n\"}{end}'");
    int ok = 0;
    for (const auto& line : StrSplit(r.out, '\n')) {
      if (Trim(std::string(line)) == cls + " Running") ++ok;
    }
    auto taints = Shell("kubectl get nodes -o jsonpath='{.items[*].spec.taints[*].key}'").out;
    return ok == testbed::TestbedNodeCount() &&
           taints.find("reservation-swap") == std::string::npos;
  }

  void CreateInferencePod(const std::string& name) {
    auto r = kube_->Create(k8s::Resource::Pods(), "default", testbed::InferencePod(name, "lending"));
    ASSERT_TRUE(r.ok()) << r.status();
  }

  std::string PodField(const std::string& name, const std::string& jsonpath) {
    return Trim(RunCommand({"kubectl", "get", "pod", "-n", "default", name, "-o",
                            "jsonpath={" + jsonpath + "}"},
                           seconds(30))
                    .out);
  }

  std::string dir_;
  std::vector<std::string> jobs_;
  std::unique_ptr<k8s::KubeClient> kube_;
  std::unique_ptr<bridge::slurm::LibSlurmClient> slurm_;
  static constexpr char kLease[] = "skb-e2e-lending";
  int replicas_ = 1;
  std::unique_ptr<BridgeDaemon> daemon_;
  std::unique_ptr<BridgeDaemon> standby_;  // the second replica (failover tests)
  std::unique_ptr<InvariantSampler> sampler_;
};

class FailoverE2E : public LendingE2E {
 protected:
  FailoverE2E() { replicas_ = 2; }
};

TEST_F(LendingE2E, AnInferencePodPreemptsAJobGracefullyAndTheNodeReturnsToSlurm) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60)))
      << Shell("squeue").out;
  // The reservations follow the jobs: preemptible class, swapped in place.
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  EXPECT_THAT(Shell("kubectl get pods -n slurm-bridge -o yaml").out,
              HasSubstr("slurm-k8s-bridge.io/jobs"));

  const auto t0 = Steady::now();
  CreateInferencePod("infer-a");
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-a", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide").out << Shell("squeue").out;
  const double took = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("inference pod Running %.1f s after creation (grace %d s)\n", took, kGraceSeconds);
  const std::string node = PodField("infer-a", ".spec.nodeName");
  ASSERT_FALSE(node.empty());

  // The victim: signalled, requeued (not failed, not cancelled), told why.
  std::string victim;
  for (const auto& id : jobs_) {
    if (std::stoi(JobField(id, "Restarts").empty() ? "0" : JobField(id, "Restarts")) > 0) {
      victim = id;
    }
  }
  ASSERT_FALSE(victim.empty()) << Shell("squeue").out;
  EXPECT_TRUE(std::ifstream(StrCat(dir_, "/signal-", victim)).good())
      << "job " << victim << " never got its checkpoint signal";
  EXPECT_THAT(JobField(victim, "AdminComment"), HasSubstr("k8s-bridge-preempted="));
  EXPECT_THAT(Shell(StrCat("scontrol show job ", victim)).out,
              ::testing::Not(::testing::ContainsRegex("JobState=(FAILED|CANCELLED)")));
  std::string events = Shell(StrCat("kubectl get events -n default --field-selector "
                                    "involvedObject.name=", node, " -o custom-columns=R:.reason "
                                    "--no-headers"))
                           .out;
  EXPECT_THAT(events, HasSubstr("SlurmJobsSignalled"));
  EXPECT_THAT(events, HasSubstr("SlurmJobsPreempted"));
  EXPECT_THAT(events, HasSubstr("ReservationReleased"));
  EXPECT_THAT(Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out),
              HasSubstr("k8s-bridge: lent to default/infer-a"));

  // The pod leaves: after the cool-down the node returns and the job runs again.
  ASSERT_EQ(Shell("kubectl delete pod -n default infer-a --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return JobField(victim, "JobState") == "RUNNING"; },
                      seconds(kCooldownSeconds + 60)))
      << JobField(victim, "JobState") << " " << JobField(victim, "Reason") << "\n"
      << Shell("sinfo -N; kubectl get pods -A -o wide").out;
  EXPECT_EQ(JobNode(victim), node);
  EXPECT_THAT(Shell(StrCat("kubectl get events -n default --field-selector involvedObject.name=",
                           node, " -o custom-columns=R:.reason --no-headers"))
                  .out,
              HasSubstr("ReturnedToSlurm"));
  // The durations the bridge observed: grace used, lend, return.
  std::string metrics;
  EXPECT_TRUE(WaitFor(
      [&] {
        metrics = Metrics();
        return metrics.find("skb_return_duration_seconds_count 1") != std::string::npos;
      },
      seconds(10)))
      << metrics;
  // At least once: a re-plan on a cache that has not yet seen the requeue repeats the
  // (then no-op) preemption, and the counters count executed actions.
  EXPECT_THAT(metrics, ::testing::ContainsRegex("skb_preemptions_total\\{mode=\"requeue\"\\} [1-9]"));
  EXPECT_THAT(metrics, ::testing::ContainsRegex("skb_preemption_grace_seconds_count [1-9]"));
  EXPECT_THAT(metrics, HasSubstr("skb_lend_duration_seconds_count 1"));

  // bridgectl tells the same story: the lend from the Events, the job's count from its
  // admin comment.
  auto history = RunCommand(
      {SKB_BRIDGECTL_BINARY, "get", "preemptions", "--node", node, "-o", "json"}, seconds(30));
  ASSERT_EQ(history.exit_code, 0) << history.err;
  nlohmann::json lend;
  const nlohmann::json parsed = nlohmann::json::parse(history.out);  // outlives the loop
  for (const auto& p : parsed["preemptions"]) {
    if (p["lentTo"] == "default/infer-a") lend = p;  // the latest one
  }
  ASSERT_TRUE(lend.is_object()) << history.out;
  EXPECT_THAT(lend["signalled"].dump(), HasSubstr(StrCat("\"", victim, "\"")));
  EXPECT_THAT(lend["preempted"].dump(), HasSubstr(StrCat("\"", victim, "\""))) << lend.dump();
  EXPECT_EQ(lend["outcome"], "returned to Slurm") << lend.dump();
  auto jobs = RunCommand(
      {SKB_BRIDGECTL_BINARY, "--socket", daemon_->socket(), "get", "jobs", "-o", "json"},
      seconds(30));
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  bool listed = false;
  const nlohmann::json listed_jobs = nlohmann::json::parse(jobs.out);  // outlives the loop
  for (const auto& j : listed_jobs["jobs"]) {
    if (std::to_string(j["jobId"].get<uint32_t>()) != victim) continue;
    listed = true;
    EXPECT_GE(j["preemptions"].get<int>(), 1) << j.dump();
    EXPECT_EQ(j["nodes"], nlohmann::json::array({node})) << j.dump();
  }
  EXPECT_TRUE(listed) << jobs.out;
}

// Every node lent at once, each job of another kind: one that traps the configured signal
// (USR1), one that asked for its own (--signal=USR2@5, which the job_submit plugin records
// for the bridge), one that traps nothing and dies of USR1. Each gets its signal; all are
// requeued, none lost; all run again once the inference pods leave.
TEST_F(LendingE2E, EachJobGetsItsCheckpointSignalAndOneThatIgnoresItIsStillRequeued) {
  testbed::PluginPointer plugin(daemon_->socket(), "open");
  ASSERT_TRUE(plugin.ok()) << "slurmctld did not load the plugin config";
  const std::string trapped = Submit("gpu");
  const std::string own = Submit("gpu", {"USR1", "USR2"}, {"--signal=USR2@5"});
  const std::string untrapped = Submit("gpu", {});
  for (int i = 3; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  EXPECT_THAT(JobField(own, "AdminComment"), HasSubstr("signal=12@5"))
      << "the plugin records the job's own --signal";
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;

  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) CreateInferencePod(StrCat("infer-", i));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < testbed::TestbedNodeCount(); ++i) {
          if (PodField(StrCat("infer-", i), ".status.phase") != "Running") return false;
        }
        return true;
      },
      seconds(kGraceSeconds + 60)))
      << Shell("kubectl get pods -A -o wide; squeue; sinfo -N -o '%N %T %E'").out;

  for (const auto& id : jobs_) {
    SCOPED_TRACE(StrCat("job ", id));
    EXPECT_GE(Restarts(id), 1);
    EXPECT_THAT(JobField(id, "JobState"), ::testing::Not(::testing::AnyOf("FAILED", "CANCELLED")));
    EXPECT_THAT(JobField(id, "AdminComment"), HasSubstr("k8s-bridge-preempted="));
  }
  EXPECT_THAT(Signals(trapped), HasSubstr("USR1"));
  EXPECT_THAT(Signals(own), HasSubstr("USR2"));
  EXPECT_THAT(Signals(own), ::testing::Not(HasSubstr("USR1"))) << "its own signal, not ours";
  EXPECT_EQ(Signals(untrapped), "");
  std::string all_events = Shell(
      "kubectl get events -n default -o custom-columns=R:.reason,M:.message --no-headers").out;
  EXPECT_THAT(all_events, ::testing::ContainsRegex(
                              StrCat("EndedJobRequeued +Requeued Slurm job ", untrapped,
                                     ": it ended FAILED after the checkpoint signal")));

  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) {
    Shell(StrCat("kubectl delete pod -n default infer-", i, " --wait=false"));
  }
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out;
}

// Idle nodes go first: their reservations carry the lowest class, so kube-scheduler
// preempts them before a busy node's; no job is disturbed.
TEST_F(LendingE2E, IdleNodesAreTakenBeforeBusyOnes) {
  const int busy = testbed::TestbedNodeCount() / 2;
  for (int i = 0; i < busy; ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = ReservationClasses();
        return c["slurm-preemptible"] == busy &&
               c["slurm-idle"] == testbed::TestbedNodeCount() - busy;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  std::set<std::string> busy_nodes;
  for (const auto& id : jobs_) busy_nodes.insert(JobNode(id));
  const int idle = testbed::TestbedNodeCount() - busy;
  for (int i = 0; i < idle; ++i) CreateInferencePod(StrCat("infer-idle-", i));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < idle; ++i) {
          if (PodField(StrCat("infer-idle-", i), ".status.phase") != "Running") return false;
        }
        return true;
      },
      seconds(40)))
      << Shell("kubectl get pods -A -o wide").out;
  for (int i = 0; i < idle; ++i) {
    EXPECT_EQ(busy_nodes.count(PodField(StrCat("infer-idle-", i), ".spec.nodeName")), 0u);
  }
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Restarts(id), 0) << id;
    EXPECT_EQ(Signals(id), "") << id;
  }
}

// An admin's `kubectl drain` evicts the reservation: the bridge vacates Slurm the same
// graceful way (signal, grace, requeue) and the drain completes; uncordon brings the node
// back to Slurm after the cool-down.
TEST_F(LendingE2E, KubectlDrainVacatesSlurmGracefullyAndUncordonReturnsTheNode) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));
  const std::string victim = jobs_[0];
  const std::string node = JobNode(victim);
  ASSERT_FALSE(node.empty());
  const auto t0 = Steady::now();
  auto drain = RunCommand({"kubectl", "drain", node, "--ignore-daemonsets",
                           "--delete-emptydir-data", "--timeout=90s"},
                          seconds(120));
  const double took = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("kubectl drain %s took %.1f s (grace %d s)\n", node.c_str(), took, kGraceSeconds);
  ASSERT_EQ(drain.exit_code, 0) << drain.out << drain.err << Shell("squeue").out;
  EXPECT_GE(Restarts(victim), 1);
  EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
  EXPECT_THAT(JobField(victim, "JobState"), ::testing::Not(::testing::AnyOf("FAILED", "CANCELLED")));
  EXPECT_THAT(Shell(StrCat("sinfo -h -N -n ", node, " -o %T | head -1")).out, HasSubstr("drain"));
  EXPECT_THAT(NodeEvents(node), HasSubstr("ReservationReleased"));
  for (const auto& id : jobs_) {
    if (id != victim) {
      EXPECT_EQ(Restarts(id), 0) << "only the drained node's job moves";
    }
  }

  ASSERT_EQ(Shell(StrCat("kubectl uncordon ", node)).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  EXPECT_EQ(JobNode(victim), node);
  EXPECT_THAT(NodeEvents(node), HasSubstr("ReturnedToSlurm"));
}

TEST_F(LendingE2E, NonPreemptibleWorkIsNeverTakenByInference) {
  // The "urgent" partition is not preemptible: every reservation goes above the threshold.
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-protected"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  CreateInferencePod("infer-b");
  std::this_thread::sleep_for(seconds(kGraceSeconds + 10));
  EXPECT_EQ(PodField("infer-b", ".status.phase"), "Pending");
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(JobField(id, "Restarts"), "0") << id;
    EXPECT_FALSE(std::ifstream(StrCat(dir_, "/signal-", id)).good()) << id << " was signalled";
  }
}

TEST_F(LendingE2E, ABridgeKilledMidLendFinishesTheFlowAfterRestart) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));
  CreateInferencePod("infer-c");
  // Killed during the grace period: the node is drained for the lend, the job not yet gone.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Shell("sinfo -h -N -o '%E' | grep -c 'lent to'").out.find_first_not_of("0\n") !=
               std::string::npos;
      },
      seconds(30), milliseconds(50)))
      << Shell("sinfo -N -o '%N %T %E'").out;
  daemon_->Kill();
  std::this_thread::sleep_for(seconds(kGraceSeconds + 2));
  EXPECT_NE(PodField("infer-c", ".status.phase"), "Running")
      << "nobody released the GPUs while the bridge was down";
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-c", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue").out;
  // Killed again while the node is Kubernetes': the return still happens.
  daemon_->Kill();
  ASSERT_EQ(Shell("kubectl delete pod -n default infer-c --wait=false").exit_code, 0);
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out;
  // No stuck finalizer, no bridge drain left without its cause.
  EXPECT_TRUE(WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); },
                      seconds(30)));
  EXPECT_EQ(Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out), "0")
      << Shell("sinfo -N -o '%N %T %E'").out;
}

TEST_F(FailoverE2E, TheStandbyTakesOverMidLendAndFinishesTheFlow) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));
  // The follower answers bridgectl from its own caches and names the leader.
  auto table = RunCommand({SKB_BRIDGECTL_BINARY, "--socket", standby_->socket(), "get", "nodes",
                           "-o", "json"},
                          seconds(30));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(nlohmann::json::parse(table.out)["leader"], "bridge-a");

  CreateInferencePod("infer-d");
  ASSERT_TRUE(WaitFor(
      [&] {
        return Shell("sinfo -h -N -o '%E' | grep -c 'lent to'").out.find_first_not_of("0\n") !=
               std::string::npos;
      },
      seconds(30), milliseconds(50)));
  const auto t0 = Steady::now();
  daemon_->Kill();  // the leader dies mid-lend, holding the Lease
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "bridge-b"; }, seconds(30),
                      milliseconds(50)))
      << LeaseHolder();
  const double failover = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("failover: the standby holds the Lease %.2f s after the leader was killed "
              "(lease 3 s, renew 2 s, retry 0.5 s)\n",
              failover);
  EXPECT_LT(failover, 10.0);
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-d", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue").out;
  ASSERT_EQ(Shell("kubectl delete pod -n default infer-d --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out;
  EXPECT_EQ(Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out), "0");
}

}  // namespace
}  // namespace skb

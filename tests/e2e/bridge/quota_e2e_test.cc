// SPDX-License-Identifier: Apache-2.0
// Guaranteed GPU quotas across the boundary, end to end on the testbed with the real
// kube-scheduler: a tenant's Slurm jobs within its guarantee are never taken by another
// tenant's pods; the jobs it runs beyond its guarantee (borrowed) are what those pods take;
// and a tenant below its guarantee takes back the nodes another tenant's pods borrow.
//
// Two tenants, each guaranteed two nodes' GPUs (16): team-a trains in Slurm (account
// team-a), team-b serves in Kubernetes (namespace default). team-a fills all four nodes:
// the bridge classifies two of its jobs within the guarantee and two borrowed, and gives
// the nodes of the guaranteed ones the protected reservation class. team-b's first two
// inference pods preempt the borrowed jobs (checkpoint signal, grace, requeue); its third
// waits, Pending, because nothing but team-a's floor is left: kube-scheduler's preemption
// cannot pick a protected reservation. The invariant sampler watches throughout.
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

class QuotaE2E : public LendingE2E {
 protected:
  QuotaE2E() {
    extra_overlay_ = nlohmann::json::parse(R"({"quotas": {"tenants": [
        {"name": "team-a", "slurm_accounts": ["team-a"], "guaranteed": 16},
        {"name": "team-b", "slurm_accounts": ["team-b"], "kubernetes_namespaces": ["default"],
         "guaranteed": 16}]}})");
  }

  testbed::CommandResult Bridgectl(const std::vector<std::string>& args) {
    return testbed::Bridgectl(daemon_->socket(), args);
  }
};

TEST_F(QuotaE2E, AnotherTenantsPodsTakeOnlyBorrowedJobsAndWaitAtTheGuarantee) {
  ASSERT_EQ(testbed::TestbedNodeCount(), 4) << "the scenario is sized for four 8-GPU nodes";
  for (int i = 0; i < 4; ++i) Submit("gpu", {"USR1"}, {"-A", "team-a"});
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;

  // Two nodes protected (the guaranteed jobs), two preemptible (the borrowed ones), and no
  // reservation swap left in flight.
  std::map<std::string, std::string> classes;
  ASSERT_TRUE(WaitFor(
      [&] {
        classes = ReservationClassByNode();
        int protected_nodes = 0, preemptible_nodes = 0;
        for (const auto& [node, cls] : classes) {
          protected_nodes += cls == "slurm-protected";
          preemptible_nodes += cls == "slurm-preemptible";
        }
        auto taints = Shell("kubectl get nodes -o jsonpath='{.items[*].spec.taints[*].key}'").out;
        return protected_nodes == 2 && preemptible_nodes == 2 &&
               taints.find("reservation-swap") == std::string::npos;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out
      << Bridgectl({"describe", "tenant", "team-a"}).out;
  std::set<std::string> guaranteed_jobs, borrowed_jobs;
  for (const auto& id : jobs_) {
    (classes[JobNode(id)] == "slurm-protected" ? guaranteed_jobs : borrowed_jobs).insert(id);
  }
  ASSERT_EQ(guaranteed_jobs.size(), 2u);
  // bridgectl says the same of each job (its GPU type, the testbed's h100, too), and why.
  const std::string described = Bridgectl({"describe", "tenant", "team-a"}).out;
  for (const auto& id : guaranteed_jobs) {
    EXPECT_THAT(described, ::testing::ContainsRegex(
                               StrCat("slurm/", id, " +running +8 +h100 +node[0-9] +guaranteed")))
        << described;
  }
  for (const auto& id : borrowed_jobs) {
    EXPECT_THAT(described, ::testing::ContainsRegex(
                               StrCat("slurm/", id, " +running +8 +h100 +node[0-9] +borrowed")))
        << described;
  }
  // The node's describe names the rule that made its reservation protected.
  const std::string guaranteed_node = JobNode(*guaranteed_jobs.begin());
  EXPECT_THAT(Bridgectl({"describe", "node", guaranteed_node}).out,
              HasSubstr("team-a's guarantee (quotas)"));

  // team-b's first two pods take the borrowed jobs' nodes: signalled, graced, requeued.
  CreateInferencePod("serve-1");
  CreateInferencePod("serve-2");
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodField("serve-1", ".status.phase") == "Running" &&
               PodField("serve-2", ".status.phase") == "Running";
      },
      seconds(2 * kGraceSeconds + 60)))
      << Shell("kubectl get pods -A -o wide").out << Shell("squeue").out;
  for (const char* pod : {"serve-1", "serve-2"}) {
    const std::string node = PodField(pod, ".spec.nodeName");
    EXPECT_NE(classes[node], "slurm-protected") << pod << " took guaranteed work's node " << node;
  }
  for (const auto& id : borrowed_jobs) {
    EXPECT_GE(Restarts(id), 1) << "borrowed job " << id << " was not requeued";
    EXPECT_THAT(Signals(id), HasSubstr("USR1")) << "job " << id << " got no checkpoint signal";
  }

  // A third pod: within team-b's guarantee only if someone borrowed, and nobody does any
  // more. It waits, and the guaranteed jobs never notice.
  CreateInferencePod("serve-3");
  // Watched for a grace and ten seconds: at every look serve-3 still waits and no
  // guaranteed job was signalled or requeued.
  EXPECT_EQ(HoldsFor(
                [&] {
                  if (auto phase = PodField("serve-3", ".status.phase"); phase != "Pending") {
                    return StrCat("serve-3 is ", phase);
                  }
                  for (const auto& id : guaranteed_jobs) {
                    if (Restarts(id) != 0 || !Signals(id).empty()) {
                      return StrCat("guaranteed job ", id, " was signalled or requeued");
                    }
                  }
                  return std::string();
                },
                seconds(kGraceSeconds + 10), std::chrono::milliseconds(1000)),
            "");
  EXPECT_EQ(PodField("serve-3", ".status.phase"), "Pending");
  for (const auto& id : guaranteed_jobs) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Restarts(id), 0) << id;
    EXPECT_EQ(Signals(id), "") << id << " was signalled";
  }
  // Why it waits: kube-scheduler's own Event on the pod, and the split in bridgectl.
  EXPECT_THAT(Shell("kubectl get events -n default --field-selector involvedObject.name=serve-3 "
                    "-o custom-columns=R:.reason --no-headers")
                  .out,
              HasSubstr("FailedScheduling"));
  std::string table;
  EXPECT_TRUE(WaitFor(
      [&] {
        table = Bridgectl({"get", "quotas"}).out;
        return std::regex_search(table, std::regex("team-b +16 +- +16 \\(0/16\\) +0 +8 ")) &&
               std::regex_search(table, std::regex("team-a +16 +- +16 \\(16/0\\) +0 +16 "));
      },
      seconds(20)))
      << table;
  for (const char* pod : {"serve-1", "serve-2", "serve-3"}) {
    Shell(StrCat("kubectl delete pod -n default ", pod, " --wait=false"));
  }
}

// Work that cannot be preempted runs only within its tenant's guarantee on the Kubernetes
// side too: the bridge keeps the ResourceQuota skb-guarantee in team-b's namespace, scoped to
// the PriorityClasses at or above the protected class, and kube-apiserver refuses a pod of
// such a class beyond it; a pod below the protected class is not capped. Server-side dry runs:
// admission runs in full, nothing is created.
TEST_F(QuotaE2E, APodThatCannotBePreemptedBeyondItsTenantsGuaranteeIsRefusedAtCreation) {
  // A class of the site's at the protected value, known before the daemon's first pass.
  ASSERT_EQ(Shell(R"(kubectl apply -f - <<'EOF'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: skb-e2e-critical-serving}
value: 1000000000
EOF)")
                .exit_code,
            0);
  struct DeleteClass {
    ~DeleteClass() {
      Shell("kubectl delete priorityclass skb-e2e-critical-serving --ignore-not-found");
    }
  } cleanup;
  daemon_->Stop();
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();

  std::string rq;
  ASSERT_TRUE(WaitFor(
      [&] {
        rq = Shell(
                 "kubectl get resourcequota -n default skb-guarantee -o "
                 "jsonpath='{.spec.hard}{\" \"}{.spec.scopeSelector.matchExpressions[0].values}'")
                 .out;
        return rq.find("\"requests.nvidia.com/gpu\":\"16\"") != std::string::npos &&
               rq.find("skb-e2e-critical-serving") != std::string::npos;
      },
      seconds(30)))
      << rq << "\n"
      << daemon_->LogTail();
  auto dry_run = [&](const std::string& cls, int gpus) {
    testbed::TestPod pod = testbed::InferenceTestPod("np-serve", "lending", gpus);
    pod.priority_class = cls;
    return RunCommand({"kubectl", "create", "--dry-run=server", "-o", "name", "-f", "-"},
                      seconds(30), testbed::PodManifest(pod).dump());
  };
  EXPECT_EQ(dry_run("skb-e2e-critical-serving", 16).exit_code, 0) << "within the floor";
  testbed::CommandResult refused = dry_run("skb-e2e-critical-serving", 17);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("exceeded quota: skb-guarantee"));
  EXPECT_EQ(dry_run("inference-high", 17).exit_code, 0) << "preemptible: not capped";
  EXPECT_THAT(Shell("kubectl get resourcequota -n default skb-guarantee -o "
                    "jsonpath='{.metadata.labels}'")
                  .out,
              HasSubstr("\"slurm-k8s-bridge.io/tenant\":\"team-b\""));
}

// team-b has no guarantee: every pod of it borrows, and borrowing takes idle GPUs only.
// team-a runs three nodes' worth (two within its guarantee, one borrowed), the fourth node
// is idle. team-b's first pod gets the idle node; its second makes kube-scheduler preempt
// the borrowed job's reservation, and the bridge refuses that lend (nothing signalled, a
// new reservation, a LendRefused Event naming the quota): the pod waits.
class QuotaNoFloorE2E : public QuotaE2E {
 protected:
  QuotaNoFloorE2E() { extra_overlay_["quotas"]["tenants"][1]["guaranteed"] = 0; }
};

TEST_F(QuotaNoFloorE2E, APodBeyondItsTenantsGuaranteeTakesAnIdleNodeButNoJob) {
  ASSERT_EQ(testbed::TestbedNodeCount(), 4) << "the scenario is sized for four 8-GPU nodes";
  for (int i = 0; i < 3; ++i) Submit("gpu", {"USR1"}, {"-A", "team-a"});
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  std::map<std::string, std::string> classes;
  ASSERT_TRUE(WaitFor(
      [&] {
        classes = ReservationClassByNode();
        std::map<std::string, int> n;
        for (const auto& [node, cls] : classes) ++n[cls];
        return n["slurm-protected"] == 2 && n["slurm-preemptible"] == 1 && n["slurm-idle"] == 1;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  std::string borrowed_job;
  for (const auto& id : jobs_) {
    if (classes[JobNode(id)] == "slurm-preemptible") borrowed_job = id;
  }
  ASSERT_FALSE(borrowed_job.empty());
  const std::string borrowed_node = JobNode(borrowed_job);

  CreateInferencePod("serve-1");
  ASSERT_TRUE(
      WaitFor([&] { return PodField("serve-1", ".status.phase") == "Running"; }, seconds(60)))
      << Shell("kubectl get pods -A -o wide").out;
  EXPECT_EQ(classes[PodField("serve-1", ".spec.nodeName")], "slurm-idle");

  CreateInferencePod("serve-2");
  std::string events;
  EXPECT_TRUE(WaitFor(
      [&] {
        events = NodeEvents(borrowed_node);
        return events.find("LendRefused") != std::string::npos;
      },
      seconds(30)))
      << events << Shell("kubectl get pods -A -o wide").out;
  EXPECT_THAT(events, HasSubstr("tenant team-b uses 8 of its 0 GPUs guaranteed"))
      << "the refusal names the quota";
  std::this_thread::sleep_for(seconds(kGraceSeconds + 5));
  EXPECT_EQ(PodField("serve-2", ".status.phase"), "Pending");
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Restarts(id), 0) << id;
    EXPECT_EQ(Signals(id), "") << id << " was signalled";
  }
  for (const char* pod : {"serve-1", "serve-2"}) {
    Shell(StrCat("kubectl delete pod -n default ", pod, " --wait=false"));
  }
}

// Reclaim from Kubernetes: team-b's inference fills three nodes while team-a trains
// nothing (8 of team-b's 24 GPUs borrowed), then team-a submits two nodes' worth, within its
// guarantee. One job runs on the free node; for the other the bridge takes back the node of
// team-b's borrowed pod (the youngest): taint, eviction through the Eviction API -- refused
// while a PodDisruptionBudget allows no disruption, done once it does -- and the node's
// return without the cool-down. team-b's pods within its guarantee keep running.
class QuotaReclaimE2E : public QuotaE2E {
 protected:
  QuotaReclaimE2E() { extra_overlay_["quotas"]["reclaim_min_run_time"] = "0s"; }
};

TEST_F(QuotaReclaimE2E, ATenantBelowItsGuaranteeTakesBackABorrowedNodeHonouringTheBudget) {
  ASSERT_EQ(testbed::TestbedNodeCount(), 4) << "the scenario is sized for four 8-GPU nodes";
  for (const char* pod : {"serve-1", "serve-2", "serve-3"}) {
    CreateInferencePod(pod);
    ASSERT_TRUE(WaitFor([&] { return PodField(pod, ".status.phase") == "Running"; }, seconds(60)))
        << Shell("kubectl get pods -A -o wide").out;
    std::this_thread::sleep_for(seconds(1));  // distinct start times: serve-3 is the youngest
  }
  const std::string victim_node = PodField("serve-3", ".spec.nodeName");
  std::string table;
  ASSERT_TRUE(WaitFor(
      [&] {
        table = Bridgectl({"get", "quotas"}).out;
        return std::regex_search(table, std::regex("team-b +16 +- +24 \\(0/24\\) +8 +0 +0"));
      },
      seconds(20)))
      << table;
  ASSERT_EQ(Shell("kubectl create poddisruptionbudget -n default serve-budget "
                  "--selector=skb-e2e=lending --max-unavailable=0")
                .exit_code,
            0);

  const std::string first = Submit("gpu", {"USR1"}, {"-A", "team-a"});
  ASSERT_TRUE(WaitFor([&] { return JobField(first, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  const std::string second = Submit("gpu", {"USR1"}, {"-A", "team-a"});

  // The budget holds: the node is tainted, the eviction refused and said so; nothing moves.
  // (Events of earlier tests on the same node stay: only lines naming this job count.)
  const std::string why = "tenant team-a uses 8 of its 16 GPUs guaranteed and job " + second + " ";
  auto event = [&](const std::string& reason) {
    for (const auto& line : StrSplit(NodeEvents(victim_node), '\n')) {
      const std::string l(line);
      if (l.starts_with(reason + " ") && l.find(why) != std::string::npos) return l;
    }
    return std::string();
  };
  ASSERT_TRUE(WaitFor([&] { return !event("ReclaimBlocked").empty(); }, seconds(60)))
      << NodeEvents(victim_node) << Bridgectl({"describe", "node", victim_node}).out;
  EXPECT_THAT(event("ReclaimBlocked"), HasSubstr("PodDisruptionBudget"));
  EXPECT_THAT(event("ReclaimStarted"), HasSubstr("borrowed pod(s) default/serve-3 (tenant team-b"));
  EXPECT_THAT(Shell("kubectl get node " + victim_node + " -o jsonpath='{.spec.taints[*].key}'").out,
              HasSubstr("slurm-k8s-bridge.io/reclaiming"));
  EXPECT_EQ(PodField("serve-3", ".status.phase"), "Running");
  EXPECT_EQ(JobField(second, "JobState"), "PENDING");
  EXPECT_TRUE(WaitFor(
      [&] {
        table = Bridgectl({"get", "quotas"}).out;
        return std::regex_search(table, std::regex("team-a +16 +- +8 \\(8/0\\) +0 +8 +8"));
      },
      seconds(20)))
      << "RECLAIMING shows the node being taken back\n"
      << table;

  // The budget allows it: serve-3 is evicted, the node returns at once, the job runs there.
  ASSERT_EQ(Shell("kubectl delete poddisruptionbudget -n default serve-budget").exit_code, 0);
  // (The refused eviction is retried with the reconcile queue's back-off, up to a minute.)
  ASSERT_TRUE(WaitFor([&] { return JobField(second, "JobState") == "RUNNING"; }, seconds(120)))
      << Shell("squeue; kubectl get pods -A -o wide").out << NodeEvents(victim_node);
  EXPECT_EQ(JobNode(second), victim_node);
  EXPECT_FALSE(event("ReclaimEviction").empty()) << NodeEvents(victim_node);
  EXPECT_NE(PodField("serve-3", ".status.phase"), "Running") << "evicted";
  for (const char* pod : {"serve-1", "serve-2"}) {
    EXPECT_EQ(PodField(pod, ".status.phase"), "Running") << pod << " is within team-b's guarantee";
  }
  // Once the job runs the reclaim is over: the taint goes.
  EXPECT_TRUE(WaitFor(
      [&] {
        return Shell("kubectl get node " + victim_node + " -o jsonpath='{.spec.taints[*].key}'")
                   .out.find("reclaiming") == std::string::npos;
      },
      seconds(30)))
      << NodeEvents(victim_node);
  for (const char* pod : {"serve-1", "serve-2", "serve-3"}) {
    Shell(StrCat("kubectl delete pod -n default ", pod, " --wait=false --ignore-not-found"));
  }
}

}  // namespace
}  // namespace skb::lending_e2e

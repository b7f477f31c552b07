// SPDX-License-Identifier: Apache-2.0
// Kubernetes inference pods take nodes from Slurm through the bridge, end to end on the
// testbed with the real kube-scheduler's preemption: reservation pods hold Slurm's GPUs in
// Kubernetes; a high-priority pod preempts one; the bridge drains the Slurm node, sends
// the checkpoint signal, waits the grace, requeues the job and only then releases the
// GPUs; when the pod leaves, the node returns to Slurm and the job runs again.
//
// A sampler checks invariant 1 (docs/architecture.md) every 100 ms for the whole test: no node runs
// a Slurm job holding GPUs and a Kubernetes GPU pod at the same time. The bridge is killed
// (SIGKILL) mid-lend and must finish the flow after a restart (invariant 3).
#include <atomic>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

TEST_F(LendingE2E, AnInferencePodPreemptsAJobGracefullyAndTheNodeReturnsToSlurm) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
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
                                    "involvedObject.name=",
                                    node,
                                    " -o custom-columns=R:.reason "
                                    "--no-headers"))
                           .out;
  EXPECT_THAT(events, HasSubstr("SlurmJobsSignalled"));
  EXPECT_THAT(events, HasSubstr("SlurmJobsPreempted"));
  EXPECT_THAT(events, HasSubstr("ReservationReleased"));
  // What an admin sees: kubectl describe lists only Events naming the object's uid (or, for
  // a node, its name, as the kubelet's do).
  EXPECT_THAT(Shell(StrCat("kubectl describe node ", node)).out, HasSubstr("SlurmJobsPreempted"));
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
  // The durations the bridge observed: grace used, lend, return, each exactly once. A
  // re-plan on a cache that has not yet seen the requeue, the release or the resume repeats
  // the action, which then finds its work done (Effect::kUnchanged) and is not counted
  // (counted it was, once, in CI: a lend counted twice on Slurm 24.11).
  std::string metrics;
  EXPECT_TRUE(WaitFor(
      [&] {
        metrics = Metrics();
        return std::regex_search(metrics, std::regex("skb_return_duration_seconds_count [1-9]"));
      },
      seconds(10)))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("skb_preemptions_total{mode=\"requeue\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_preemption_grace_seconds_count 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_lend_duration_seconds_count 1\n"));
  EXPECT_THAT(metrics, HasSubstr("skb_return_duration_seconds_count 1\n"));

  // bridgectl tells the same story: the lend from the Events, the job's count from its
  // admin comment.
  auto history = RunCommand(
      {skb::testbed::BridgectlBinary(), "get", "preemptions", "--node", node, "-o", "json"},
      seconds(30));
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
  // The daemon answers from its last Slurm poll, which may not have seen the restart that
  // scontrol shows above yet (slurmctld's change stamps can miss a change until the next
  // resync): wait for it to show the victim running on the node again (CI once read the
  // job there with no node, pending in the daemon's snapshot).
  nlohmann::json victim_listed;
  std::string jobs_out;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto jobs = RunCommand({skb::testbed::BridgectlBinary(), "--socket", daemon_->socket(),
                                "get", "jobs", "-o", "json"},
                               seconds(30));
        if (jobs.exit_code != 0) return false;
        jobs_out = jobs.out;
        const nlohmann::json listed_jobs = nlohmann::json::parse(jobs.out);  // outlives the loop
        for (const auto& j : listed_jobs["jobs"]) {
          if (std::to_string(j["jobId"].get<uint32_t>()) == victim) victim_listed = j;
        }
        return victim_listed.is_object() && victim_listed["nodes"] == nlohmann::json::array({node});
      },
      seconds(20)))
      << jobs_out;
  ASSERT_TRUE(victim_listed.is_object()) << jobs_out;
  EXPECT_GE(victim_listed["preemptions"].get<int>(), 1) << victim_listed.dump();
  EXPECT_EQ(victim_listed["nodes"], nlohmann::json::array({node})) << victim_listed.dump();
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
  std::string all_events =
      Shell("kubectl get events -n default -o custom-columns=R:.reason,M:.message --no-headers")
          .out;
  EXPECT_THAT(all_events,
              ::testing::ContainsRegex(StrCat("EndedJobRequeued +Requeued Slurm job ", untrapped,
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
  auto drain = RunCommand(
      {"kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s"},
      seconds(120));
  const double took = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf("kubectl drain %s took %.1f s (grace %d s)\n", node.c_str(), took, kGraceSeconds);
  ASSERT_EQ(drain.exit_code, 0) << drain.out << drain.err << Shell("squeue").out;
  EXPECT_GE(Restarts(victim), 1);
  EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
  EXPECT_THAT(JobField(victim, "JobState"),
              ::testing::Not(::testing::AnyOf("FAILED", "CANCELLED")));
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
  // Events are written behind the actions (the recorder's queue): on Slurm 24.11 the job
  // runs again before the return's Event is in.
  EXPECT_TRUE(WaitFor([&] { return NodeEvents(node).find("ReturnedToSlurm") != std::string::npos; },
                      seconds(15)))
      << NodeEvents(node);
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

// A multi-node job is preempted as a whole: one of its nodes is lent, the job is signalled
// and requeued once, and its other node goes back to the Slurm pool at once (not drained,
// its reservation back to the idle class). It runs again on two nodes once the lent one
// returns.
TEST_F(LendingE2E, AMultiNodeJobIsRequeuedAsAWholeAndItsOtherNodeGoesBackToTheSlurmPool) {
  const std::string multi = Submit("gpu", {"USR1"}, {"-N", "2"});
  for (int i = 2; i < testbed::TestbedNodeCount(); ++i) Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  auto hostnames = [&] {
    auto r = Shell(StrCat("scontrol show hostnames $(squeue -h -j ", multi, " -o %N)"));
    std::vector<std::string> out;
    for (const auto& l : StrSplit(r.out, '\n')) {
      if (!Trim(std::string(l)).empty()) out.push_back(Trim(std::string(l)));
    }
    return out;
  };
  const std::vector<std::string> nodes = hostnames();
  ASSERT_EQ(nodes.size(), 2u) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = ReservationClasses();
        return c["slurm-preemptible"] == 2 &&
               c["slurm-protected"] == testbed::TestbedNodeCount() - 2;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;

  CreateInferencePod("infer-m");
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-m", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue").out;
  const std::string lent = PodField("infer-m", ".spec.nodeName");
  ASSERT_THAT(nodes, ::testing::Contains(lent));
  const std::string other = nodes[0] == lent ? nodes[1] : nodes[0];
  EXPECT_EQ(Restarts(multi), 1);
  EXPECT_THAT(Signals(multi), HasSubstr("USR1"));
  EXPECT_THAT(JobField(multi, "JobState"), ::testing::Not(::testing::AnyOf("FAILED", "CANCELLED")));
  // The other node: back in the pool at once, its reservation idle again.
  EXPECT_EQ(Trim(Shell(StrCat("sinfo -h -N -n ", other, " -o %E | head -1")).out), "none");
  EXPECT_TRUE(WaitFor(
      [&] {
        return Trim(RunCommand(
                        {"kubectl", "get", "pod", "-n", "slurm-bridge", StrCat("reserve-", other),
                         "-o", "jsonpath={.spec.priorityClassName} {.status.phase}"},
                        seconds(30))
                        .out) == "slurm-idle Running";
      },
      seconds(30)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;

  ASSERT_EQ(Shell("kubectl delete pod -n default infer-m --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  EXPECT_EQ(hostnames().size(), 2u);
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
  EXPECT_TRUE(
      WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); }, seconds(30)));
  EXPECT_EQ(Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out), "0")
      << Shell("sinfo -N -o '%N %T %E'").out;
}

TEST_F(FailoverE2E, TheStandbyTakesOverMidLendAndFinishesTheFlow) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));
  // The follower answers bridgectl from its own caches and names the leader.
  auto table = RunCommand({skb::testbed::BridgectlBinary(), "--socket", standby_->socket(), "get",
                           "nodes", "-o", "json"},
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
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "bridge-b"; }, seconds(30), milliseconds(50)))
      << LeaseHolder();
  const double failover = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf(
      "failover: the standby holds the Lease %.2f s after the leader was killed "
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

// Failover with the default Lease timings (15 s / 10 s / 2 s), for the record: the
// standby takes over once the dead leader's Lease has expired.
class DefaultLeaseFailoverE2E : public FailoverE2E {
 protected:
  DefaultLeaseFailoverE2E() {
    extra_overlay_ = {
        {"leader_election",
         {{"lease_duration", "15s"}, {"renew_deadline", "10s"}, {"retry_period", "2s"}}}};
  }
};

TEST_F(DefaultLeaseFailoverE2E, TheStandbyTakesOverWithinTheLeaseDuration) {
  const auto t0 = Steady::now();
  daemon_->Kill();
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "bridge-b"; }, seconds(40), milliseconds(50)))
      << LeaseHolder() << standby_->LogTail();
  const double failover = std::chrono::duration<double>(Steady::now() - t0).count();
  std::printf(
      "failover: the standby holds the Lease %.2f s after the leader was killed "
      "(default lease 15 s, renew 10 s, retry 2 s)\n",
      failover);
  EXPECT_LT(failover, 15.0 + 2.0 + 2.0) << "lease duration + retry period + slack";
}

}  // namespace
}  // namespace skb::lending_e2e

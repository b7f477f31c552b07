// SPDX-License-Identifier: Apache-2.0
// Bad input to the lending flow, end to end on the testbed (issue 6, "Bad input"): what
// people and other controllers do to the bridge's objects, and Slurm refusing what the
// bridge asks. Each case has a defined, logged and evented outcome, and the invariant-1
// sampler (no node with a Slurm GPU job and a Kubernetes GPU pod at once) runs throughout.
//
//   - the reservation's finalizer removed by hand: put back; removed and the pod deleted
//     while the bridge was down: the reservation is recreated, the job keeps running;
//   - the reservation namespace deleted: every node is lent (protected work is waited
//     for), the namespace goes once Slurm has left, creates fail with a Warning, and the
//     nodes return when the namespace exists again;
//   - a reservation pod's requests edited (refused by the apiserver) and its job list
//     overwritten (written back);
//   - a pod that is not the bridge's takes the reservation's name on a lent node: the
//     node stays lent (Warning) until that pod goes;
//   - the bridge's time records on a lent node set in the future: written again (Warning),
//     the node still returns;
//   - an interactive job (srun), which Slurm cannot requeue, is protected; a batch job
//     whose requeue is turned off during its grace is left running, and the lend waits.
#include <cstdlib>
#include <fstream>
#include <thread>

#include "src/admission/admission.h"
#include "src/ownership/schema.h"
#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

using ::testing::AnyOf;
using ::testing::Not;

constexpr char kNs[] = "slurm-bridge";

class LendingBadInputE2E : public LendingE2E {
 protected:
  void SetUp() override {
    since_ = Trim(Shell("date -u +%Y-%m-%dT%H:%M:%SZ").out);
    LendingE2E::SetUp();
  }

  // The node's Events (reason and message, one a line) last seen since this test began:
  // the testbed keeps the Events of earlier tests.
  std::string NodeEvents(const std::string& node) {
    auto r = RunCommand({"kubectl", "get", "events", "-n", "default", "--field-selector",
                         StrCat("involvedObject.name=", node), "-o",
                         "jsonpath={range .items[*]}{.lastTimestamp} {.reason} "
                         "{.message}{\"\\n\"}{end}"},
                        seconds(30));
    std::string out;
    for (const auto& line : StrSplit(r.out, '\n')) {
      std::string l(line);
      if (l.size() > 20 && l.substr(0, 20) >= since_) StrAppend(&out, l.substr(21), "\n");
    }
    return out;
  }

  std::string Reservation(const std::string& node) { return StrCat("reserve-", node); }

  std::string ReservationField(const std::string& node, const std::string& jsonpath) {
    return Trim(RunCommand({"kubectl", "get", "pod", "-n", kNs, Reservation(node), "-o",
                            "jsonpath={" + jsonpath + "}"},
                           seconds(30))
                    .out);
  }

  bool ReservationRunsAt(const std::string& node, const std::string& cls) {
    return ReservationField(node, ".spec.priorityClassName") == cls &&
           ReservationField(node, ".status.phase") == "Running" &&
           ReservationField(node, ".metadata.deletionTimestamp").empty();
  }

  // A reservation other than the one with `old_uid` runs at class `cls` on `node`.
  bool NewReservationRunsAt(const std::string& node, const std::string& old_uid,
                            const std::string& cls) {
    const std::string uid = ReservationField(node, ".metadata.uid");
    return !uid.empty() && uid != old_uid && ReservationRunsAt(node, cls);
  }

  std::string SlurmReason(const std::string& node) {
    return Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out);
  }

  // Waits until `busy`'s reservation runs at class `cls`.
  void SettleWith(const std::string& busy, const std::string& cls) {
    ASSERT_TRUE(WaitFor([&] { return ReservationRunsAt(busy, cls); }, seconds(60)))
        << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  }

  // A heterogeneous job: component 0 (the leader) in partition `p0` on node `n0`, component
  // 1 in `p1` on `n1`, 8 GPUs each. The batch script (on n0) writes each signal it gets to
  // DIR/signal-ID, a step of component 1 (on n1) to DIR/signal-ID-1 (ID: the leader's).
  std::string SubmitHet(const std::string& p0, const std::string& n0, const std::string& p1,
                        const std::string& n1) {
    const std::string script = StrCat(dir_, "/het-", p0, "-", p1, ".sh");
    std::ofstream(script) << "#!/bin/bash\n"
                          << "#SBATCH --requeue --gres=gpu:8 -o /dev/null -p " << p0 << " -w " << n0
                          << "\n#SBATCH hetjob\n#SBATCH --gres=gpu:8 -p " << p1 << " -w " << n1
                          << "\ntrap 'echo USR1 >> " << dir_ << "/signal-$SLURM_JOB_ID' USR1\n"
                          << "srun --het-group=1 bash -c 'trap \"echo USR1 >> " << dir_
                          << "/signal-$SLURM_JOB_ID-1\" USR1; "
                          << "for i in $(seq 3000); do sleep 0.2; done' &\n"
                          << "for i in $(seq 3000); do sleep 0.2; done\n";
    auto r = RunCommand({"sbatch", "--parsable", script}, seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = Trim(r.out);
    jobs_.push_back(id);
    return id;
  }

  // Component `offset`'s field (scontrol shows every component of a heterogeneous job).
  std::string ComponentField(const std::string& leader, int offset, const std::string& field) {
    return JobField(std::to_string(std::stoul(leader) + static_cast<unsigned>(offset)), field);
  }

  std::string since_;  // when the test began (UTC, as Kubernetes writes timestamps)
};

// Slurm preempts a heterogeneous job only whole (by its leader's id): one protected
// component protects every node the job runs on. Here the leader (preemptible partition
// gpu) runs on node1, component 1 (protected partition urgent) on node2; every other node
// runs protected work. node1's reservation is protected, so the inference pod never takes
// it, and nothing of the job is signalled or requeued.
TEST_F(LendingBadInputE2E, AHeterogeneousJobWithAProtectedComponentProtectsEachOfItsNodes) {
  const std::string het = SubmitHet("gpu", "node1", "urgent", "node2");
  // Running before the other nodes fill (the others would take node1 or node2 first).
  ASSERT_TRUE(WaitFor([&] { return JobField(het, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  for (int i = 2; i < testbed::TestbedNodeCount(); ++i) Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_EQ(ComponentField(het, 1, "HetJobId"), het);
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-protected"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();

  CreateInferencePod("infer-h");
  // kube-scheduler has tried and found no victim (not merely not yet run) ...
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodField("infer-h", ".status.conditions[?(@.type==\"PodScheduled\")].reason") ==
               "Unschedulable";
      },
      seconds(30)))
      << Shell("kubectl get pods -A -o wide").out;
  // ... and after a grace period nothing of the job was touched.
  std::this_thread::sleep_for(seconds(kGraceSeconds + 3));
  EXPECT_EQ(PodField("infer-h", ".status.phase"), "Pending");
  EXPECT_EQ(PodField("infer-h", ".spec.nodeName"), "");
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Restarts(id), 0) << id;
    EXPECT_EQ(Signals(id), "") << id << " was signalled";
  }
  EXPECT_EQ(ComponentField(het, 1, "Restarts"), "0");
  EXPECT_EQ(testbed::ReadAll(StrCat(dir_, "/signal-", het, "-1")), "") << "component 1 signalled";
  EXPECT_EQ(SlurmReason("node1"), "none");
}

// A wholly preemptible heterogeneous job whose *other* component's node is lent: the
// whole job gets the checkpoint signal (the batch script on node1 and component 1's step
// on node2), is requeued whole through its leader (Slurm refuses a component's own id),
// and the node2 Events name both components and nodes. It runs again once the pod leaves.
TEST_F(LendingBadInputE2E, AHeterogeneousJobIsSignalledAndRequeuedWholeWhenAComponentsNodeIsLent) {
  const std::string het = SubmitHet("gpu", "node1", "gpu", "node2");
  // Running before the other nodes fill (the others would take node1 or node2 first).
  ASSERT_TRUE(WaitFor([&] { return JobField(het, "JobState") == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  for (int i = 2; i < testbed::TestbedNodeCount(); ++i) Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  SettleWith("node1", "slurm-preemptible");
  SettleWith("node2", "slurm-preemptible");

  // Only node2 (component 1's) fits the pod.
  nlohmann::json pod = testbed::InferencePod("infer-h", "lending");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "node2"}};
  ASSERT_TRUE(kube_->Create(k8s::Resource::Pods(), "default", pod).ok());
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-h", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue; sinfo -N -o '%N %T %E'").out
      << daemon_->LogTail();
  EXPECT_EQ(PodField("infer-h", ".spec.nodeName"), "node2");
  EXPECT_THAT(Signals(het), HasSubstr("USR1")) << "the batch script on node1";
  EXPECT_THAT(testbed::ReadAll(StrCat(dir_, "/signal-", het, "-1")), HasSubstr("USR1"))
      << "component 1's step on node2";
  EXPECT_EQ(Restarts(het), 1);
  EXPECT_EQ(ComponentField(het, 1, "Restarts"), "1");
  for (int offset : {0, 1}) {
    EXPECT_THAT(ComponentField(het, offset, "JobState"), Not(AnyOf("FAILED", "CANCELLED")));
  }
  const std::string events = NodeEvents("node2");
  EXPECT_THAT(events, HasSubstr(StrCat("heterogeneous job ", het, " (components ", het,
                                       " on node1, ", std::stoul(het) + 1, " on node2)")))
      << events;
  EXPECT_THAT(events, HasSubstr("SlurmJobsPreempted")) << events;
  // node1 was not lent: back in the pool, not drained.
  EXPECT_EQ(SlurmReason("node1"), "none");

  ASSERT_EQ(Shell("kubectl delete pod -n default infer-h --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  EXPECT_EQ(ComponentField(het, 1, "JobState"), "RUNNING");
}

TEST_F(LendingBadInputE2E, AFinalizerRemovedByHandIsPutBackAndAVanishedReservationRecreated) {
  const std::string id = Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string node = JobNode(id);
  SettleWith(node, "slurm-preemptible");

  // 1. Removed from a live reservation: the bridge puts it back (a later deletion must
  //    wait for Slurm to leave the node).
  auto patch = RunCommand({"kubectl", "patch", "pod", "-n", kNs, Reservation(node), "--type=json",
                           "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"},
                          seconds(30));
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReservationField(node, ".metadata.finalizers") ==
               StrCat("[\"", ownership::kFinalizer, "\"]");
      },
      seconds(20)))
      << ReservationField(node, ".metadata.finalizers") << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("FinalizerRestored"));

  // 2. Removed and the pod deleted while the bridge was down: the pod is gone at once.
  //    The restarted bridge recreates the reservation (Warning); the job is not touched.
  daemon_->Stop();
  const std::string old_uid = ReservationField(node, ".metadata.uid");
  ASSERT_EQ(RunCommand({"kubectl", "patch", "pod", "-n", kNs, Reservation(node), "--type=json",
                        "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"},
                       seconds(30))
                .exit_code,
            0);
  ASSERT_EQ(Shell(StrCat("kubectl delete pod -n ", kNs, " ", Reservation(node),
                         " --grace-period=0 --force --wait=true --timeout=30s"))
                .exit_code,
            0);
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();
  ASSERT_TRUE(WaitFor([&] { return NewReservationRunsAt(node, old_uid, "slurm-preemptible"); },
                      seconds(30)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("ReservationMissing"));
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
  EXPECT_EQ(Signals(id), "");
  EXPECT_EQ(SlurmReason(node), "none") << "no drain: the node never stopped being Slurm's";
}

// The reservations live in their own namespace here (the Lease in "default"), so that
// deleting it is what an operator might do by mistake: uninstalling the reservations.
class NamespaceDeletedE2E : public LendingBadInputE2E {
 protected:
  NamespaceDeletedE2E() {
    extra_overlay_ = {{"kubernetes", {{"namespace", "default"}}},
                      {"lending", {{"namespace", kNs}}}};
  }
};

TEST_F(NamespaceDeletedE2E, EveryNodeIsLentProtectedWorkWaitedForAndTheyReturnWithTheNamespace) {
  const int n = testbed::TestbedNodeCount();
  const std::string protected_job = Submit("urgent");
  std::vector<std::string> preemptible;
  for (int i = 1; i < n; ++i) preemptible.push_back(Submit("gpu"));
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string protected_node = JobNode(protected_job);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto c = ReservationClasses();
        return c["slurm-protected"] == 1 && c["slurm-preemptible"] == n - 1;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;

  ASSERT_EQ(Shell(StrCat("kubectl delete namespace ", kNs, " --wait=false")).exit_code, 0);
  // Every preemptible job: signalled, requeued (pending: every node is drained now).
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : preemptible) {
          if (Restarts(id) < 1) return false;
        }
        return true;
      },
      seconds(kGraceSeconds + 40)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  for (const auto& id : preemptible) {
    EXPECT_THAT(Signals(id), HasSubstr("USR1")) << id;
    EXPECT_THAT(JobField(id, "JobState"), Not(AnyOf("FAILED", "CANCELLED"))) << id;
  }
  // The protected job is waited for: not signalled, still running; its reservation (and
  // so the namespace) stays until it ends, holding its GPUs in Kubernetes' count.
  std::this_thread::sleep_for(seconds(kGraceSeconds));
  EXPECT_EQ(JobField(protected_job, "JobState"), "RUNNING");
  EXPECT_EQ(Signals(protected_job), "");
  EXPECT_THAT(NodeEvents(protected_node), HasSubstr("LendBlockedByProtectedJobs"));
  EXPECT_EQ(Trim(Shell(StrCat("kubectl get namespace ", kNs, " -o jsonpath={.status.phase}")).out),
            "Terminating");
  EXPECT_THAT(SlurmReason(protected_node), HasSubstr("k8s-bridge: lent to"));

  // Once it ends, the last reservation goes. The nodes stay lent: their reservations
  // cannot be created, and the bridge says so.
  Shell(StrCat("scancel ", protected_job));
  ASSERT_TRUE(WaitFor(
      [&] {
        return Trim(Shell(StrCat("kubectl get pods -n ", kNs, " --no-headers 2>/dev/null | wc -l"))
                        .out) == "0";
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o yaml").out << daemon_->LogTail();
  // The namespace then goes once kube-controller-manager's namespace controller looks
  // again, which after minutes of waiting on our finalizers can be minutes later (its
  // back-off): finalize it the way an admin would, to go on.
  Shell(StrCat("kubectl get namespace ", kNs,
               " -o json | jq '.spec.finalizers=[]' | "
               "kubectl replace --raw /api/v1/namespaces/",
               kNs, "/finalize -f - >/dev/null"));
  ASSERT_TRUE(WaitFor([&] { return Shell(StrCat("kubectl get namespace ", kNs)).exit_code != 0; },
                      seconds(60)))
      << Shell(
             "kubectl get namespace slurm-bridge -o yaml; kubectl get pods -n slurm-bridge -o yaml")
             .out
      << daemon_->LogTail();
  ASSERT_TRUE(WaitFor(
      [&] {
        return NodeEvents(protected_node).find("CreateReservationPodFailed") != std::string::npos;
      },
      seconds(kCooldownSeconds + 30)))
      << daemon_->LogTail();
  for (int i = 1; i <= n; ++i) {
    EXPECT_THAT(SlurmReason(StrCat("node", i)), HasSubstr("k8s-bridge: lent to"));
  }

  // The namespace back: the nodes return to Slurm and the requeued jobs run again.
  ASSERT_EQ(Shell(StrCat("kubectl create namespace ", kNs)).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& id : preemptible) {
          if (JobField(id, "JobState") != "RUNNING") return false;
        }
        return true;
      },
      seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'; kubectl get pods -n slurm-bridge").out
      << daemon_->LogTail();
  jobs_ = preemptible;  // the protected one was cancelled by this test
}

TEST_F(LendingBadInputE2E, EditedRequestsAreRefusedAndAnOverwrittenJobListIsWrittenBack) {
  const std::string id = Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string node = JobNode(id);
  SettleWith(node, "slurm-preemptible");

  // A pod's resources are immutable; the apiserver says so and nothing changes.
  auto edit = RunCommand(
      {"kubectl", "patch", "pod", "-n", kNs, Reservation(node), "--type=json", "-p",
       R"([{"op":"replace","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu","value":"1"}])"},
      seconds(30));
  EXPECT_NE(edit.exit_code, 0) << edit.out;
  EXPECT_THAT(edit.err, HasSubstr("Forbidden"));
  // Nor can the in-place resize subresource change an extended resource.
  auto resize = RunCommand(
      {"kubectl", "patch", "pod", "-n", kNs, Reservation(node), "--subresource=resize",
       "--type=json", "-p",
       R"([{"op":"replace","path":"/spec/containers/0/resources/requests/nvidia.com~1gpu","value":"1"},)"
       R"({"op":"replace","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"1"}])"},
      seconds(30));
  EXPECT_NE(resize.exit_code, 0) << resize.out;
  std::printf("edit refused: %s\nresize refused: %s\n", Trim(edit.err).c_str(),
              Trim(resize.err).c_str());
  EXPECT_EQ(ReservationField(node, ".spec.containers[0].resources.requests.nvidia\\.com/gpu"), "8");

  // The job list is the bridge's to write: overwritten, it is written back at the next
  // batched update.
  ASSERT_EQ(RunCommand({"kubectl", "annotate", "pod", "-n", kNs, Reservation(node), "--overwrite",
                        StrCat(ownership::kJobsAnnotation, "=nothing here")},
                       seconds(30))
                .exit_code,
            0);
  const std::string path = ".metadata.annotations.slurm-k8s-bridge\\.io/jobs";
  EXPECT_TRUE(
      WaitFor([&] { return ReservationField(node, path).rfind(id + " ", 0) == 0; }, seconds(30)))
      << ReservationField(node, path);
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
}

TEST_F(LendingBadInputE2E, APodTakingTheReservationsNameKeepsTheNodeLentUntilItGoes) {
  // An idle node lent to an inference pod.
  CreateInferencePod("infer-e");
  ASSERT_TRUE(
      WaitFor([&] { return PodField("infer-e", ".status.phase") == "Running"; }, seconds(40)))
      << Shell("kubectl get pods -A -o wide").out;
  const std::string node = PodField("infer-e", ".spec.nodeName");
  ASSERT_TRUE(WaitFor(
      [&] {
        return Shell(StrCat("kubectl get pod -n ", kNs, " ", Reservation(node))).exit_code != 0;
      },
      seconds(30)));
  // Someone else's pod (no role label, no GPUs) takes the reservation's name.
  auto foreign = RunCommand({"kubectl", "run", "-n", kNs, Reservation(node), "--image=pause",
                             "--restart=Never", "--labels=skb-e2e=lending", "--overrides",
                             StrCat(R"({"spec":{"nodeName":")", node, R"("}})")},
                            seconds(30));
  ASSERT_EQ(foreign.exit_code, 0) << foreign.err;
  const std::string foreign_uid = ReservationField(node, ".metadata.uid");

  // The inference pod leaves: after the cool-down the bridge would return the node, but
  // cannot create its reservation; the node stays lent and the bridge says why.
  ASSERT_EQ(Shell("kubectl delete pod -n default infer-e --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] { return NodeEvents(node).find("CreateReservationPodFailed") != std::string::npos; },
      seconds(kCooldownSeconds + 30)))
      << NodeEvents(node) << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("is not the bridge's"));
  EXPECT_THAT(SlurmReason(node), HasSubstr("k8s-bridge: lent to"));
  EXPECT_EQ(ReservationField(node, ".metadata.uid"), foreign_uid) << "never touched";
  EXPECT_EQ(ReservationField(node, ".metadata.finalizers"), "");

  // It goes: the node returns.
  ASSERT_EQ(Shell(StrCat("kubectl delete pod -n ", kNs, " ", Reservation(node),
                         " --grace-period=0 --force --wait=true --timeout=30s"))
                .exit_code,
            0);
  ASSERT_TRUE(WaitFor([&] { return SlurmReason(node) == "none"; }, seconds(kCooldownSeconds + 40)))
      << SlurmReason(node) << daemon_->LogTail();
  EXPECT_TRUE(ReservationRunsAt(node, "slurm-idle"));
}

// The bridge's time records on a lent node set in the future (a hand edit, a host whose
// clock ran years ahead): read as they are, the node's lend would never be old enough and
// its idle time never long enough, and it would stay lent for ever. Beyond the clock-skew
// allowance they are garbled: written again with a Warning, and the node returns to Slurm
// after its cool-down like any other.
TEST_F(LendingBadInputE2E, TimeRecordsInTheFutureAreWrittenAgainAndTheLentNodeStillReturns) {
  CreateInferencePod("infer-f");
  ASSERT_TRUE(
      WaitFor([&] { return PodField("infer-f", ".status.phase") == "Running"; }, seconds(40)))
      << Shell("kubectl get pods -A -o wide").out;
  const std::string node = PodField("infer-f", ".spec.nodeName");
  auto annotation = [&](const char* key) {
    std::string path = key;
    for (size_t i = 0; (i = path.find('.', i)) != std::string::npos; i += 2) path.insert(i, "\\");
    return Trim(RunCommand({"kubectl", "get", "node", node, "-o",
                            StrCat("jsonpath={.metadata.annotations.", path, "}")},
                           seconds(30))
                    .out);
  };
  ASSERT_TRUE(
      WaitFor([&] { return !annotation("slurm-k8s-bridge.io/lent-at").empty(); }, seconds(30)));
  const std::string lent_at = annotation("slurm-k8s-bridge.io/lent-at");
  // 2100-01-01.
  ASSERT_EQ(RunCommand({"kubectl", "annotate", "node", node, "--overwrite",
                        "slurm-k8s-bridge.io/lent-at=4102444800",
                        "slurm-k8s-bridge.io/idle-since=4102444800"},
                       seconds(30))
                .exit_code,
            0);
  ASSERT_EQ(Shell("kubectl delete pod -n default infer-f --wait=false").exit_code, 0);
  ASSERT_TRUE(
      WaitFor([&] { return NodeEvents(node).find("LendRecordRepaired") != std::string::npos; },
              seconds(30)))
      << NodeEvents(node) << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("unreadable or future"));
  EXPECT_THAT(NodeEvents(node), HasSubstr("4102444800"));
  // Written again from the lend's Slurm drain: the time the lend really began.
  EXPECT_TRUE(WaitFor([&] { return annotation("slurm-k8s-bridge.io/lent-at") != "4102444800"; },
                      seconds(10)));
  EXPECT_LE(std::abs(std::stoll(annotation("slurm-k8s-bridge.io/lent-at")) - std::stoll(lent_at)),
            2);
  ASSERT_TRUE(WaitFor([&] { return SlurmReason(node) == "none"; }, seconds(kCooldownSeconds + 40)))
      << SlurmReason(node) << NodeEvents(node) << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([&] { return ReservationRunsAt(node, "slurm-idle"); }, seconds(30)));
}

TEST_F(LendingBadInputE2E, WorkSlurmCannotRequeueIsNeverPreempted) {
  // An interactive job (srun): Slurm requeues batch jobs only, so it is protected.
  auto srun = Shell(
      "setsid srun -p gpu --gres=gpu:8 -J skb-e2e-srun sleep 3000 </dev/null >/dev/null 2>&1 &");
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  std::string interactive;
  ASSERT_TRUE(WaitFor(
      [&] {
        interactive = Trim(Shell("squeue -h -n skb-e2e-srun -t R -o %i | head -1").out);
        return !interactive.empty();
      },
      seconds(60)))
      << Shell("squeue").out;
  jobs_.push_back(interactive);
  // The other nodes: two protected batch jobs, one preemptible.
  Submit("urgent");
  Submit("urgent");
  const std::string victim = Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  SettleWith(JobNode(interactive), "slurm-protected");
  const std::string node = JobNode(victim);
  SettleWith(node, "slurm-preemptible");

  // The inference pod can only take the victim's node. During the grace, an admin turns
  // the job's requeue off: the bridge must not requeue it (Slurm would refuse) nor kill
  // it; the lend waits for it, and Kubernetes stays off the node.
  CreateInferencePod("infer-f");
  ASSERT_TRUE(
      WaitFor([&] { return Signals(victim).find("USR1") != std::string::npos; }, seconds(30)))
      << Shell("sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  ASSERT_EQ(Shell(StrCat("scontrol update jobid=", victim, " requeue=0")).exit_code, 0);
  std::this_thread::sleep_for(seconds(kGraceSeconds + 8));
  EXPECT_EQ(JobField(victim, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(victim), 0);
  EXPECT_EQ(PodField("infer-f", ".status.phase"), "Pending");
  const std::string events = NodeEvents(node);
  EXPECT_THAT(events,
              AnyOf(HasSubstr("LendBlockedByProtectedJobs"), HasSubstr("PreemptSlurmJobsFailed")))
      << events;
  for (const auto& id : jobs_) {
    if (id == victim) continue;
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Signals(id), "") << id;
  }

  // The job ends by itself (here: its user cancels it): the lend completes.
  Shell(StrCat("scancel ", victim));
  ASSERT_TRUE(
      WaitFor([&] { return PodField("infer-f", ".status.phase") == "Running"; }, seconds(40)))
      << Shell("kubectl get pods -A -o wide; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  std::erase(jobs_, victim);
}

// A Kubernetes node deleted (scale-down, replacement): the garbage collector deletes its
// reservation (owner reference), and the bridge releases it rather than keep a pod with a
// finalizer forever. The node registering again gets a new reservation.
// A job admitted as preemptible in "gpu" that an admin moves to the protected "urgent"
// partition before it starts (scontrol update partition=) is judged where it runs: its
// node's reservation is protected, inference never takes it. The admission note is the one
// the job_submit plugin writes (admission::Decide), set by hand because the testbed's
// slurmctld plugin talks to another daemon than this test's.
TEST_F(LendingBadInputE2E, AJobMovedToAProtectedPartitionAfterAdmissionIsNeverPreempted) {
  admission::Inventory inv;
  inv.known = true;
  inv.default_partition = "gpu";
  const admission::Decision admitted =
      admission::Decide({.partition = "gpu"}, inv, {.preemptible_partitions = {"gpu"}});
  ASSERT_TRUE(admitted.accept && admitted.admin_comment);
  ASSERT_THAT(*admitted.admin_comment, HasSubstr("preemptible=true"));

  const std::string moved = Submit("gpu", {"USR1"}, {"--hold"});
  ASSERT_EQ(Shell(StrCat("scontrol update jobid=", moved, " admincomment='",
                         *admitted.admin_comment, "'"))
                .exit_code,
            0);
  ASSERT_EQ(Shell(StrCat("scontrol update jobid=", moved, " partition=urgent")).exit_code, 0);
  ASSERT_EQ(Shell(StrCat("scontrol release ", moved)).exit_code, 0);
  for (int i = 1; i < testbed::TestbedNodeCount(); ++i) Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_EQ(JobField(moved, "Partition"), "urgent");
  ASSERT_THAT(JobField(moved, "AdminComment"), HasSubstr("preemptible=true"));
  // Every node protected: the moved job's too, though its note says preemptible.
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-protected"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();

  CreateInferencePod("infer-m");
  std::this_thread::sleep_for(seconds(kGraceSeconds + 10));
  EXPECT_EQ(PodField("infer-m", ".status.phase"), "Pending");
  for (const auto& id : jobs_) {
    EXPECT_EQ(JobField(id, "JobState"), "RUNNING") << id;
    EXPECT_EQ(Restarts(id), 0) << id;
    EXPECT_EQ(Signals(id), "") << id << " was signalled";
  }
}

TEST_F(LendingBadInputE2E, TheReservationOfADeletedNodeIsReleasedAndTheNodeBackGetsANewOne) {
  const std::string node = StrCat("node", testbed::TestbedNodeCount());
  SettleWith(node, "slurm-idle");
  const std::string saved = StrCat(dir_, "/", node, ".json");
  ASSERT_EQ(Shell(StrCat("kubectl get node ", node,
                         " -o json | jq 'del(.metadata.uid, "
                         ".metadata.resourceVersion, .metadata.creationTimestamp, "
                         ".metadata.managedFields)' > ",
                         saved))
                .exit_code,
            0);
  // Put back whatever happens below: later tests need every node.
  struct Restore {
    std::string node, saved;
    bool armed = true;
    void Now() {
      armed = false;
      if (Shell(StrCat("kubectl get node ", node)).exit_code == 0) return;
      // As a kubelet registers: one create with capacity and allocatable in its status
      // (kwok then adds the conditions). A node created bare and patched later would have
      // its pods refused by the kubelet's admission (OutOfpods) in between.
      Shell(StrCat("jq '.status |= {capacity: .capacity, allocatable: .allocatable}' ", saved,
                   " | kubectl create -f -"));
      WaitFor(
          [&] {
            return Trim(Shell(StrCat("kubectl get node ", node,
                                     " -o jsonpath='{.status.conditions"
                                     "[?(@.type==\"Ready\")].status}'"))
                            .out) == "True";
          },
          seconds(60));
    }
    ~Restore() {
      if (armed) Now();
    }
  } restore{node, saved};

  const std::string uid = ReservationField(node, ".metadata.uid");
  ASSERT_EQ(Shell(StrCat("kubectl delete node ", node, " --wait=true --timeout=30s")).exit_code, 0);
  // The bridge releases the reservation (its finalizer) at once; the object then waits for a
  // kubelet that is gone, until kube-controller-manager's pod GC force-deletes pods of
  // nodes that stayed gone for its 40 s quarantine, checked every 20 s: up to ~60 s.
  ASSERT_TRUE(WaitFor(
      [&] {
        return RunCommand({"kubectl", "get", "pod", "-n", kNs, Reservation(node)}, seconds(30))
                   .exit_code != 0;
      },
      seconds(120)))
      << Shell(StrCat("kubectl get pod -n slurm-bridge ", Reservation(node), " -o yaml")).out
      << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("no longer exists"));

  restore.Now();  // the node registers again
  ASSERT_TRUE(WaitFor([&] { return NewReservationRunsAt(node, uid, "slurm-idle"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();
}

}  // namespace
}  // namespace skb::lending_e2e

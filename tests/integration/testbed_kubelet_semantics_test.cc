// SPDX-License-Identifier: Apache-2.0
// The simulated kubelets (kwok with tests/testbed/kwok/stages.yaml) must behave like real
// ones where the bridge's correctness depends on it, or the preemption tests would prove
// nothing. Checked here against the real apiserver and kube-scheduler:
//  - finalizers are never stripped: a deleted pod turns terminal when its container exits
//    but stays until its finalizers are gone;
//  - a reservation pod keeps running (its GPUs counted) until the bridge releases it, and
//    is killed - turning terminal, finalizer or not - when its grace period ends;
//  - kube-scheduler does not give a deleted-but-running reservation's GPUs to another pod,
//    and does once the reservation is terminal (the hazard in docs/architecture.md);
//  - admission: a pod whose requests do not fit what the node has left (in creation order,
//    whatever extended resource the node advertises) is refused - Failed, reason
//    OutOf<resource>, the kubelet's message - and never runs;
//  - the kubelet and GPU faults of scripts/testbed do what a kubelet does: kubelet-fail (a
//    running pod Failed, not deleted), kubelet-restart (pods admitted again, those that no
//    longer fit Failed), gpu-lost / gpu-recovered (allocatable changes, running pods stay),
//    force-delete (a Terminating pod killed at once); a pod with spec.nodeName ignores
//    NoSchedule taints, a pod that tolerates everything is scheduled through them;
//  - a terminated pod's final delete names its UID: a new pod of the same name survives it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "src/base/status.h"
#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class KubeletSemantics : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    ns_ = StrCat("kubelet-sem-", std::random_device{}() % 100000);
    // Pods created before the namespace's default ServiceAccount exists are refused.
    Status s = CreateNamespace(ns_);
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    // Release anything a failed test left holding a finalizer, remove the pods at once (a
    // reservation left Running would hold its node's GPUs for its whole grace period),
    // then drop the namespace; put back the nodes a test changed.
    Shell(StrCat("kubectl -n ", ns_, " get pods -o name | xargs -r -n1 kubectl -n ", ns_,
                 " patch --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"));
    Shell(StrCat("kubectl -n ", ns_, " delete pods --all --grace-period=0 --force --wait=true ",
                 ">/dev/null 2>&1"));
    RunCommand({"kubectl", "delete", "namespace", ns_, "--wait=false"}, seconds(30));
    for (const std::string& node : touched_nodes_) {
      TestbedCommand({"gpu-recovered", node});
      Shell(StrCat("kubectl taint node ", node, " ", kTestTaint, "- >/dev/null 2>&1"));
      Shell(StrCat("kubectl patch node ", node, " --subresource=status --type=merge -p ",
                   "'{\"status\":{\"capacity\":{\"example.com/fpga\":null},",
                   "\"allocatable\":{\"example.com/fpga\":null}}}' >/dev/null"));
    }
  }

  void Apply(const std::string& manifest) {
    CommandResult r = RunCommand({"kubectl", "apply", "-n", ns_, "-f", "-"}, seconds(30), manifest);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // `kubectl get pod NAME -o jsonpath=...`; "<gone>" when the pod does not exist.
  std::string PodField(const std::string& name, const std::string& jsonpath) {
    CommandResult r = RunCommand(
        {"kubectl", "get", "pod", "-n", ns_, name, "-o", "jsonpath=" + jsonpath}, seconds(30));
    if (r.exit_code != 0) {
      return r.err.find("NotFound") != std::string::npos ? "<gone>" : "<error: " + r.err + ">";
    }
    return r.out;
  }
  std::string Phase(const std::string& name) { return PodField(name, "{.status.phase}"); }
  bool WaitPhase(const std::string& name, const std::string& phase, seconds timeout) {
    return WaitFor([&] { return Phase(name) == phase; }, timeout);
  }
  void Delete(const std::string& name) {
    CommandResult r =
        RunCommand({"kubectl", "delete", "pod", "-n", ns_, name, "--wait=false"}, seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Releases a deleted reservation as the bridge does (the released annotation: the
  // kubelet kills it) and waits until it is terminal.
  void ReleaseDeleted(const std::string& name) {
    CommandResult r = RunCommand(
        {"kubectl", "annotate", "pod", "-n", ns_, name, "slurm-k8s-bridge.io/released=true"},
        seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(WaitPhase(name, "Failed", seconds(10))) << Phase(name);
  }
  void RemoveFinalizers(const std::string& name) {
    CommandResult r = RunCommand({"kubectl", "patch", "pod", "-n", ns_, name, "--type=merge", "-p",
                                  R"({"metadata":{"finalizers":null}})"},
                                 seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  static std::string PodManifest(const std::string& name, const std::string& node, int gpus,
                                 int grace, bool reservation) {
    return StrCat(R"(
apiVersion: v1
kind: Pod
metadata:
  name: )",
                  name, R"(
  finalizers: [testbed.slurm-k8s-bridge.io/hold]
  labels: {)",
                  reservation ? "slurm-k8s-bridge.io/role: reservation" : "app: plain", R"(}
spec:
  nodeName: )",
                  node, R"(
  terminationGracePeriodSeconds: )",
                  grace, R"(
  containers:
  - name: main
    image: registry.invalid/pause:1
    resources: {limits: {nvidia.com/gpu: )",
                  gpus, R"(}}
)");
  }

  // Remembers that the test changes `node` (allocatable, taints): TearDown restores it.
  void Touch(const std::string& node) { touched_nodes_.push_back(node); }

  // Waits until no pod of any namespace still holds resources on `node` (a test before may
  // have left one terminating).
  void WaitNodeFree(const std::string& node) {
    ASSERT_TRUE(WaitFor(
        [&] {
          return Trim(Shell(StrCat("kubectl get pods -A --no-headers --field-selector ",
                                   "spec.nodeName=", node,
                                   ",status.phase!=Failed,status.phase!=Succeeded | wc -l"))
                          .out) == "0";
        },
        seconds(60)))
        << Shell(StrCat("kubectl get pods -A -o wide --field-selector spec.nodeName=", node)).out;
  }

  void Create(const TestPod& pod) {
    TestPod p = pod;
    p.namespace_name = ns_;
    CommandResult r =
        RunCommand({"kubectl", "create", "-f", "-"}, seconds(30), testbed::PodManifest(p).dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static TestPod Bound(const std::string& name, const std::string& node, int gpus) {
    TestPod p;
    p.name = name;
    p.node_name = node;
    p.gpus = gpus;
    return p;
  }
  // A reservation-like pod (role label, finalizer) holding all 8 GPUs of `node`, Running.
  void CreateRunningReservation(const std::string& name, const std::string& node, int grace) {
    TestPod r = Bound(name, node, 8);
    r.labels = {{"slurm-k8s-bridge.io/role", "reservation"}};
    r.finalizers = {"testbed.slurm-k8s-bridge.io/hold"};
    r.grace_seconds = grace;
    Create(r);
    ASSERT_TRUE(WaitPhase(name, "Running", seconds(30))) << Phase(name);
  }
  static TestPod Scheduled(const std::string& name, const std::string& node, int gpus) {
    TestPod p;
    p.name = name;
    p.node_selector = node;
    p.gpus = gpus;
    return p;
  }

  // A refused pod: Failed with the kubelet's reason and message, never started (kwok's
  // start stages set podIP, startTime and container states; a Failed pod cannot go back).
  void ExpectRefused(const std::string& name, const std::string& reason,
                     const std::string& message) {
    ASSERT_TRUE(WaitPhase(name, "Failed", seconds(30))) << Phase(name);
    EXPECT_EQ(PodField(name, "{.status.reason}"), reason);
    EXPECT_EQ(PodField(name, "{.status.message}"), "Pod was rejected: " + message);
    EXPECT_EQ(PodField(name, "{.status.podIP}{.status.startTime}{.status.containerStatuses}"), "")
        << "the refused pod was started";
    EXPECT_THAT(
        Shell(StrCat("kubectl get events -n ", ns_, " --field-selector involvedObject.name=", name,
                     " -o jsonpath='{range .items[*]}{.type} {.reason} {.message}{\"\\n\"}{end}'"))
            .out,
        ::testing::HasSubstr(StrCat("Warning ", reason, " ", message, "\n")));
  }

  // A pod that ran and that a kubelet restart refused: Failed with the kubelet's reason and
  // message (it has a podIP: it had started).
  void ExpectRefusedAfterRunning(const std::string& name, const std::string& reason,
                                 const std::string& message) {
    ASSERT_TRUE(WaitPhase(name, "Failed", seconds(30))) << Phase(name);
    EXPECT_EQ(PodField(name, "{.status.reason}"), reason);
    EXPECT_EQ(PodField(name, "{.status.message}"), "Pod was rejected: " + message);
  }

  std::string Allocatable(const std::string& node, const std::string& resource) {
    std::string escaped;
    for (char c : resource) {
      if (c == '.') escaped += '\\';
      escaped += c;
    }
    return Trim(RunCommand({"kubectl", "get", "node", node, "-o",
                            StrCat("jsonpath={.status.allocatable.", escaped,
                                   "}/{.status.capacity.", escaped, "}")},
                           seconds(30))
                    .out);
  }

  static constexpr char kTestTaint[] = "testbed.slurm-k8s-bridge.io/test";
  std::string ns_;
  std::vector<std::string> touched_nodes_;
};

TEST_F(KubeletSemantics, DeletedPodTurnsTerminalButKeepsItsFinalizer) {
  Apply(PodManifest("plain", "node1", 1, 30, /*reservation=*/false));
  ASSERT_TRUE(WaitPhase("plain", "Running", seconds(30))) << Phase("plain");
  Delete("plain");
  // The container exits ~1 s after SIGTERM: terminal long before the 30 s grace period.
  ASSERT_TRUE(WaitPhase("plain", "Failed", seconds(10))) << Phase("plain");
  // ... and the pod object stays, finalizer intact, however long we wait.
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(PodField("plain", "{.metadata.finalizers[0]}"), "testbed.slurm-k8s-bridge.io/hold");
  RemoveFinalizers("plain");
  EXPECT_TRUE(WaitFor([&] { return Phase("plain") == "<gone>"; }, seconds(15)));
}

TEST_F(KubeletSemantics, ReservationRunsUntilReleased) {
  Apply(PodManifest("reserve", "node2", 8, 120, /*reservation=*/true));
  ASSERT_TRUE(WaitPhase("reserve", "Running", seconds(30))) << Phase("reserve");
  Delete("reserve");
  // Not released: still Running well past the 1 s an ordinary container takes to exit.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(seconds(1));
    ASSERT_EQ(Phase("reserve"), "Running") << "after " << i + 1 << " s";
  }
  ASSERT_NO_FATAL_FAILURE(ReleaseDeleted("reserve"));
  RemoveFinalizers("reserve");
  EXPECT_TRUE(WaitFor([&] { return Phase("reserve") == "<gone>"; }, seconds(15)));
}

TEST_F(KubeletSemantics, UnreleasedReservationIsKilledWhenGraceEnds) {
  Apply(PodManifest("short", "node3", 8, 4, /*reservation=*/true));
  ASSERT_TRUE(WaitPhase("short", "Running", seconds(30))) << Phase("short");
  auto deleted_at = std::chrono::steady_clock::now();
  Delete("short");
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(Phase("short"), "Running");
  ASSERT_TRUE(WaitPhase("short", "Failed", seconds(15))) << Phase("short");
  auto took = std::chrono::steady_clock::now() - deleted_at;
  EXPECT_GE(took, seconds(3)) << "killed before its grace period ended";
  // Terminal, but the finalizer still holds the object.
  EXPECT_EQ(PodField("short", "{.metadata.finalizers[0]}"), "testbed.slurm-k8s-bridge.io/hold");
}

TEST_F(KubeletSemantics, SchedulerCountsReservationGpusUntilItIsTerminal) {
  Apply(PodManifest("reserve", "node4", 8, 120, /*reservation=*/true));
  ASSERT_TRUE(WaitPhase("reserve", "Running", seconds(30)));
  Delete("reserve");
  // A pod that needs all 8 GPUs of node4, placed by kube-scheduler.
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: inference, labels: {app: inference}}
spec:
  nodeSelector: {kubernetes.io/hostname: node4}
  containers:
  - name: main
    image: registry.invalid/inference:1
    resources: {limits: {nvidia.com/gpu: 8}}
)");
  // While the reservation is deleted but running, its GPUs are not free.
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(PodField("inference", "{.spec.nodeName}"), "");
  EXPECT_EQ(Phase("inference"), "Pending");
  CommandResult r = RunCommand(
      {"kubectl", "annotate", "pod", "-n", ns_, "reserve", "slurm-k8s-bridge.io/released=true"},
      seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Released -> terminal -> the scheduler counts the GPUs free (finalizer or not).
  EXPECT_TRUE(WaitPhase("inference", "Running", seconds(60))) << Phase("inference");
  EXPECT_EQ(PodField("inference", "{.spec.nodeName}"), "node4");
  RemoveFinalizers("reserve");
}

TEST_F(KubeletSemantics, PodThatDoesNotFitIsRefusedAndNeverRuns) {
  WaitNodeFree("node1");
  Create(Bound("first", "node1", 6));
  ASSERT_TRUE(WaitPhase("first", "Running", seconds(30))) << Phase("first");
  // Bound by spec.nodeName: no scheduler looked; the kubelet's admission refuses it.
  Create(Bound("second", "node1", 4));
  ExpectRefused("second", "OutOfnvidia.com/gpu",
                "Node didn't have enough resource: nvidia.com/gpu, requested: 4, used: 6, "
                "capacity: 8");
  // What is left still fits, in creation order.
  Create(Bound("third", "node1", 2));
  EXPECT_TRUE(WaitPhase("third", "Running", seconds(30))) << Phase("third");
  EXPECT_EQ(Phase("second"), "Failed");
}

TEST_F(KubeletSemantics, AnyExtendedResourceTheNodeAdvertisesIsAdmittedTheSameWay) {
  WaitNodeFree("node3");
  Touch("node3");
  CommandResult r =
      RunCommand({"kubectl", "patch", "node", "node3", "--subresource=status", "--type=merge", "-p",
                  R"({"status":{"capacity":{"example.com/fpga":"2"},)"
                  R"("allocatable":{"example.com/fpga":"2"}}})"},
                 seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TestPod a = Bound("fpga-a", "node3", 2);
  a.resource = "example.com/fpga";
  Create(a);
  ASSERT_TRUE(WaitPhase("fpga-a", "Running", seconds(30))) << Phase("fpga-a");
  TestPod b = Bound("fpga-b", "node3", 1);
  b.resource = "example.com/fpga";
  Create(b);
  ExpectRefused("fpga-b", "OutOfexample.com/fpga",
                "Node didn't have enough resource: example.com/fpga, requested: 1, used: 2, "
                "capacity: 2");
  // An extended resource the node does not advertise at all is left out of the check, as the
  // kubelet does (removeMissingExtendedResources): the pod runs.
  TestPod c = Bound("unknown", "node3", 1);
  c.resource = "example.com/unadvertised";
  Create(c);
  EXPECT_TRUE(WaitPhase("unknown", "Running", seconds(30))) << Phase("unknown");
}

TEST_F(KubeletSemantics, KubeletFailTurnsARunningPodFailedWithoutDeletingIt) {
  WaitNodeFree("node1");
  ASSERT_NO_FATAL_FAILURE(CreateRunningReservation("reserve", "node1", 120));
  Create(Scheduled("inference", "node1", 8));
  std::this_thread::sleep_for(seconds(2));
  ASSERT_EQ(Phase("inference"), "Pending") << "the reservation's GPUs were not counted";

  CommandResult r = TestbedCommand({"kubelet-fail", StrCat(ns_, "/reserve")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Phase("reserve"), "Failed");
  EXPECT_EQ(PodField("reserve", "{.status.reason}"), "UnexpectedAdmissionError");
  EXPECT_EQ(PodField("reserve", "{.status.message}"),
            "Allocate failed due to no healthy devices present; cannot allocate unhealthy "
            "devices nvidia.com/gpu, which is unexpected");
  EXPECT_EQ(PodField("reserve", "{.metadata.deletionTimestamp}"), "") << "it was deleted";
  // Terminal: kube-scheduler and the kubelet count its GPUs free at once, finalizer or not.
  EXPECT_TRUE(WaitPhase("inference", "Running", seconds(60))) << Phase("inference");
  EXPECT_EQ(PodField("inference", "{.spec.nodeName}"), "node1");
  EXPECT_EQ(PodField("reserve", "{.metadata.name}"), "reserve") << "the object must stay";
}

TEST_F(KubeletSemantics, KubeletRestartAdmitsPodsAgainAndFailsThoseThatNoLongerFit) {
  WaitNodeFree("node2");
  Touch("node2");
  Create(Bound("older", "node2", 4));
  ASSERT_TRUE(WaitPhase("older", "Running", seconds(30))) << Phase("older");
  Create(Bound("newer", "node2", 4));
  ASSERT_TRUE(WaitPhase("newer", "Running", seconds(30))) << Phase("newer");

  // Two GPUs lost: allocatable 6 of 8; running pods are left alone.
  CommandResult lost = TestbedCommand({"gpu-lost", "node2", "2"});
  ASSERT_EQ(lost.exit_code, 0) << lost.err;
  EXPECT_EQ(Allocatable("node2", "nvidia.com/gpu"), "6/8");
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(Phase("older"), "Running");
  EXPECT_EQ(Phase("newer"), "Running");

  // The kubelet restarts: in creation order, the newer pod no longer fits.
  CommandResult restart = TestbedCommand({"kubelet-restart", "node2"});
  ASSERT_EQ(restart.exit_code, 0) << restart.err;
  ExpectRefusedAfterRunning("newer", "OutOfnvidia.com/gpu",
                            "Node didn't have enough resource: nvidia.com/gpu, requested: 4, "
                            "used: 4, capacity: 6");
  EXPECT_EQ(Phase("older"), "Running");

  // Recovered: 4 GPUs are free again.
  CommandResult recovered = TestbedCommand({"gpu-recovered", "node2"});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_EQ(Allocatable("node2", "nvidia.com/gpu"), "8/8");
  Create(Bound("later", "node2", 4));
  ASSERT_TRUE(WaitPhase("later", "Running", seconds(30))) << Phase("later");

  // A restart before the device plugin registered again fails every device pod.
  CommandResult late = TestbedCommand({"kubelet-restart", "node2", "--devices-late"});
  ASSERT_EQ(late.exit_code, 0) << late.err;
  for (const char* name : {"older", "later"}) {
    ASSERT_TRUE(WaitPhase(name, "Failed", seconds(30))) << name << ": " << Phase(name);
    EXPECT_EQ(PodField(name, "{.status.reason}"), "UnexpectedAdmissionError") << name;
  }
}

TEST_F(KubeletSemantics, LostGpusAreRefusedToNewPodsUntilRecovered) {
  WaitNodeFree("node3");
  Touch("node3");
  CommandResult lost = TestbedCommand({"gpu-lost", "node3"});
  ASSERT_EQ(lost.exit_code, 0) << lost.err;
  EXPECT_EQ(Allocatable("node3", "nvidia.com/gpu"), "7/8");
  Create(Bound("bound", "node3", 8));
  ExpectRefused("bound", "OutOfnvidia.com/gpu",
                "Node didn't have enough resource: nvidia.com/gpu, requested: 8, used: 0, "
                "capacity: 7");
  // kube-scheduler reads the same allocatable: an 8-GPU pod waits for the GPU to recover.
  Create(Scheduled("waits", "node3", 8));
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(Phase("waits"), "Pending");
  CommandResult recovered = TestbedCommand({"gpu-recovered", "node3"});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.err;
  EXPECT_TRUE(WaitPhase("waits", "Running", seconds(60))) << Phase("waits");
}

TEST_F(KubeletSemantics, NoScheduleTaintKeepsNeitherNodeNameNorTolerateAllPods) {
  WaitNodeFree("node4");
  Touch("node4");
  CommandResult taint = RunCommand(
      {"kubectl", "taint", "node", "node4", StrCat(kTestTaint, "=guard:NoSchedule")}, seconds(30));
  ASSERT_EQ(taint.exit_code, 0) << taint.err;
  // An ordinary pod waits; one bound by spec.nodeName runs (the kubelet does not read
  // NoSchedule); one that tolerates every taint is scheduled onto the node.
  Create(Scheduled("kept-out", "node4", 2));
  Create(Bound("by-name", "node4", 2));
  TestPod tolerant = Scheduled("tolerant", "node4", 2);
  tolerant.tolerate_all = true;
  Create(tolerant);
  EXPECT_TRUE(WaitPhase("by-name", "Running", seconds(30))) << Phase("by-name");
  EXPECT_TRUE(WaitPhase("tolerant", "Running", seconds(60))) << Phase("tolerant");
  EXPECT_EQ(PodField("tolerant", "{.spec.nodeName}"), "node4");
  EXPECT_EQ(Phase("kept-out"), "Pending");
  EXPECT_EQ(PodField("kept-out", "{.spec.nodeName}"), "");
}

TEST_F(KubeletSemantics, ForceDeleteKillsATerminatingReservationAtOnce) {
  WaitNodeFree("node1");
  ASSERT_NO_FATAL_FAILURE(CreateRunningReservation("reserve", "node1", 600));
  Delete("reserve");
  Create(Scheduled("inference", "node1", 8));
  std::this_thread::sleep_for(seconds(2));
  ASSERT_EQ(Phase("reserve"), "Running") << "a Terminating reservation holds its GPUs";
  ASSERT_EQ(Phase("inference"), "Pending");

  // `kubectl delete --grace-period=0 --force`: the kubelet kills it at once.
  CommandResult r = TestbedCommand({"force-delete", StrCat(ns_, "/reserve")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitPhase("reserve", "Failed", seconds(10))) << Phase("reserve");
  EXPECT_EQ(PodField("reserve", "{.metadata.finalizers[0]}"), "testbed.slurm-k8s-bridge.io/hold");
  EXPECT_TRUE(WaitPhase("inference", "Running", seconds(60))) << Phase("inference");
  RemoveFinalizers("reserve");
}

// The bridge replaces a reservation pod under the same name: release, finalizer off, create.
// The kubelet deletes a terminated pod with its UID as a precondition (its status manager
// does, "to prevent deleting a newly created pod with the same name"); kwok did not, and a
// retried delete of the old pod once deleted its successor, which the bridge read as a
// preemption of its reservation (a CI run's job preempted for nobody). Several rounds: the
// race is a matter of milliseconds.
TEST_F(KubeletSemantics, ThePodThatReplacesADeletedOneOfTheSameNameIsNotDeleted) {
  WaitNodeFree("node2");
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(StrCat("round ", round));
    ASSERT_NO_FATAL_FAILURE(CreateRunningReservation("swap", "node2", 600));
    const std::string old_uid = PodField("swap", "{.metadata.uid}");
    Delete("swap");
    ASSERT_NO_FATAL_FAILURE(ReleaseDeleted("swap"));
    RemoveFinalizers("swap");
    // The successor, as soon as the name is free.
    TestPod next = Bound("swap", "node2", 8);
    next.labels = {{"slurm-k8s-bridge.io/role", "reservation"}};
    next.finalizers = {"testbed.slurm-k8s-bridge.io/hold"};
    next.grace_seconds = 600;
    next.namespace_name = ns_;
    ASSERT_TRUE(WaitFor(
        [&] {
          return RunCommand({"kubectl", "create", "-f", "-"}, seconds(30),
                            testbed::PodManifest(next).dump())
                     .exit_code == 0;
        },
        seconds(15)));
    const std::string new_uid = PodField("swap", "{.metadata.uid}");
    ASSERT_NE(new_uid, old_uid);
    ASSERT_TRUE(WaitPhase("swap", "Running", seconds(30))) << Phase("swap");
    // Nothing deletes it: no deletionTimestamp for the next seconds.
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(PodField("swap", "{.metadata.uid} {.metadata.deletionTimestamp}"),
                StrCat(new_uid, " "))
          << "the successor was deleted " << i * 0.5 << " s after it ran";
      std::this_thread::sleep_for(milliseconds(500));
    }
    // Ready for the next round: released and gone.
    Delete("swap");
    ASSERT_NO_FATAL_FAILURE(ReleaseDeleted("swap"));
    RemoveFinalizers("swap");
    ASSERT_TRUE(WaitFor([&] { return Phase("swap") == "<gone>"; }, seconds(15)));
  }
}

}  // namespace
}  // namespace skb::testbed

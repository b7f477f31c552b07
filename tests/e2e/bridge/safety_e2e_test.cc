// SPDX-License-Identifier: Apache-2.0
// The production paths that could give a node's GPUs to both schedulers, end to end on the
// testbed, each produced the way a kubelet, an admin or the apiserver produces it. The
// invariant-1 sampler (no node with a Slurm GPU job and a running Kubernetes GPU pod at
// once) runs throughout every test (lending_fixture.h).
//
//   - reservation creation refused (a namespace that does not exist, as a ResourceQuota,
//     Pod Security or a terminating namespace would): a GPU fault still drains the node at
//     once, the refused create holds back only the ownership actions;
//   - the kubelet fails a running reservation (what a kubelet restart does with
//     UnexpectedAdmissionError) under a running Slurm job: the bridge sees it, guards the
//     node with its NoSchedule taint and replaces the reservation; a pod below every
//     reservation class asking the node's GPUs stays Pending, the job keeps running;
//   - a node's allocatable GPU count grows (a GPU recovered) past what its reservation
//     holds while a job uses them all: the reservation is replaced with the node's count
//     under the guard, and a 1-GPU pod finds no room beside it;
//   - a pod above the protected class (system-cluster-critical) preempts the reservation of
//     a node running a non-preemptible job: not a lend; guarded, replaced, the job untouched;
//   - the leader is paused (SIGSTOP: a stalled VM, a hung host) past its Lease while the
//     standby takes over and acts; resumed, it never acts again;
//   - an admin resumes a node (and a job starts on it) between the plan that releases its
//     reservation and the release: the release refuses, the lend takes the job through
//     signal, grace and requeue first;
//   - a preemptible job ignores its checkpoint signal past its grace: the node is guarded
//     (slurm-busy) in the round the grace ends, not near the reservation's kill deadline,
//     which lies max_grace + release_timeout + outage_allowance after the deletion.
#include <signal.h>

#include <cmath>

#include "k8s/time_format.h"
#include "src/ownership/schema.h"
#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

constexpr char kNs[] = "slurm-bridge";

class SafetyE2E : public LendingE2E {
 protected:
  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  // The node's drain reason; "" when none (sinfo prints "none").
  std::string SlurmReason(const std::string& node) {
    std::string r = Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o %E | head -1")).out);
    return r == "none" ? "" : r;
  }

  // A job taking a whole node, running: its id, node and that node's reservation uid.
  void RunAJob(std::string* id, std::string* node, std::string* uid) {
    *id = Submit("gpu");
    ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
    *node = JobNode(*id);
    ASSERT_FALSE(node->empty());
    *uid = ReservationField(*node, ".metadata.uid");
    ASSERT_FALSE(uid->empty());
  }

  // The node's reservation is a new one (not `old_uid`), running, and neither the swap
  // taint nor the swap-guard label is left on the node.
  bool ReplacedAndUnguarded(const std::string& node, const std::string& old_uid) {
    const std::string uid = ReservationField(node, ".metadata.uid");
    return !uid.empty() && uid != old_uid && ReservationField(node, ".status.phase") == "Running" &&
           Taints(node).find(ownership::kSwapTaintKey) == std::string::npos &&
           NodeLabel(node, ownership::kSwapGuardLabel).empty();
  }

  std::string ReservationField(const std::string& node, const std::string& jsonpath) {
    return Trim(RunCommand({"kubectl", "get", "pod", "-n", kNs, StrCat("reserve-", node), "-o",
                            "jsonpath={" + jsonpath + "}"},
                           seconds(30))
                    .out);
  }

  std::string NodeLabel(const std::string& node, const std::string& key) {
    std::string path = key;
    for (size_t i = 0; (i = path.find_first_of("./", i)) != std::string::npos; i += 2) {
      path.insert(i, "\\");
    }
    return Trim(RunCommand({"kubectl", "get", "node", node, "-o",
                            StrCat("jsonpath={.metadata.labels.", path, "}")},
                           seconds(30))
                    .out);
  }
  std::string Taints(const std::string& node) {
    return Trim(RunCommand({"kubectl", "get", "node", node, "-o", "jsonpath={.spec.taints[*].key}"},
                           seconds(30))
                    .out);
  }

  void SetGpuHealthy(const std::string& node, const std::string& status,
                     const std::string& message) {
    std::string patch = StrCat(R"({"status":{"conditions":[{"type":"GPUHealthy","status":")",
                               status, R"(","reason":"Test","message":")", message,
                               R"(","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})");
    auto r = RunCommand(
        {"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic", "-p", patch},
        seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

class RefusedReservationsE2E : public SafetyE2E {
 protected:
  RefusedReservationsE2E() {
    // Every reservation create is refused (NotFound: FailedPrecondition, retried every 10 s).
    extra_overlay_ = {{"lending", {{"namespace", "skb-e2e-no-such-namespace"}}}};
    wait_for_reservations_ = false;
  }
  void TearDown() override {
    SetGpuHealthy(kNode, "True", "test cleanup");
    SafetyE2E::TearDown();
  }
  static constexpr char kNode[] = "node2";
};

// Before: the node's plan put CreateReservationPod first; the executor stopped at its
// failure and the drain waited behind it for as long as creates failed (here: for ever).
TEST_F(RefusedReservationsE2E, AGpuFaultDrainsAtOnceWhileReservationCreatesFail) {
  // The bridge has tried (and failed) to create node2's reservation.
  ASSERT_TRUE(WaitFor(
      [&] { return daemon_->Log().find("CreateReservationPod node2") != std::string::npos; },
      seconds(30)))
      << daemon_->LogTail();
  const auto start = Steady::now();
  SetGpuHealthy(kNode, "False", "XID 79 on GPU 3");
  const bool drained =
      WaitFor([&] { return SlurmReason(kNode) == "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3"; },
              seconds(30), milliseconds(10));
  const double ms = std::chrono::duration<double, std::milli>(Steady::now() - start).count();
  ASSERT_TRUE(drained) << "not drained in 30 s; reason: " << SlurmReason(kNode) << "\n"
                       << daemon_->LogTail();
  std::printf("drain latency with reservation creates failing: %.0f ms\n", ms);
  // The creates still fail and are still retried, and the node stays drained: nothing was
  // given up, nothing undone.
  // Watched until the retry comes (every 10 s), the drain checked at every look.
  const size_t creates = Count(daemon_->Log(), "CreateReservationPod node2");
  const std::string drain = "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3";
  std::string undone;
  const bool retried = WaitFor(
      [&] {
        if (std::string now = SlurmReason(kNode); now != drain) undone = now;
        return !undone.empty() || Count(daemon_->Log(), "CreateReservationPod node2") > creates;
      },
      seconds(15));
  EXPECT_EQ(undone, "") << "the drain was undone while the creates failed";
  EXPECT_TRUE(retried) << "the refused create was not retried within 15 s";
  EXPECT_EQ(SlurmReason(kNode), drain);
}

class FailedReservationE2E : public SafetyE2E {
 protected:
  // The kubelet fails `node`'s reservation as after a restart (UnexpectedAdmissionError).
  void FailTheReservation(const std::string& node) {
    auto r = RunCommand(
        {"kubectl", "patch", "pod", "-n", kNs, StrCat("reserve-", node), "--subresource=status",
         "--type=merge", "-p",
         R"({"status":{"phase":"Failed","reason":"UnexpectedAdmissionError","message":"Pod was rejected: Allocate failed"}})"},
        seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // A running job's node (in *node) and its reservation's uid (in *uid); then the kubelet
  // fails that reservation.
  void FailTheReservationOfAJob(std::string* id, std::string* node, std::string* uid) {
    ASSERT_NO_FATAL_FAILURE(RunAJob(id, node, uid));
    ASSERT_NO_FATAL_FAILURE(FailTheReservation(*node));
  }
};

// The reproduced double booking (a reservation the kubelet fails was invisible: the pod
// cache drops terminal pods). Before: no taint ever appears, the priority-0 pod runs on the
// node beside the job (the sampler counts it) and the bridge then preempts the job at once.
TEST_F(FailedReservationE2E, AReservationTheKubeletFailsIsGuardedAndReplaced) {
  std::string id, node, old_uid;
  ASSERT_NO_FATAL_FAILURE(FailTheReservationOfAJob(&id, &node, &old_uid));

  // The guard goes on at once (the swap taint; the job's GPUs are no longer counted). It may
  // be off again before a poll of kubectl sees it (0.7 s on a loaded machine, where one
  // kubectl call can take longer): the bridge's record of setting it counts too.
  const std::string set_guard =
      StrCat("action SetNodeTaint ", node, " taint=", ownership::kSwapTaintKey, ":NoSchedule");
  const bool guarded = WaitFor(
      [&] {
        return Taints(node).find(ownership::kSwapTaintKey) != std::string::npos ||
               daemon_->Log().find(set_guard) != std::string::npos;
      },
      seconds(20), milliseconds(20));
  EXPECT_TRUE(guarded) << "no guard taint on " << node << ": " << Taints(node) << "\n"
                       << daemon_->LogTail();

  // A pod below every reservation class asking a whole node: nothing may make room for it.
  nlohmann::json pod = testbed::InferencePod("low-prio", "lending");
  pod["spec"].erase("priorityClassName");
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();

  // The reservation is replaced (a new pod, running) and the guard comes off.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string uid = ReservationField(node, ".metadata.uid");
        return !uid.empty() && uid != old_uid &&
               ReservationField(node, ".status.phase") == "Running" &&
               Taints(node).find(ownership::kSwapTaintKey) == std::string::npos;
      },
      seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  // kube-scheduler considered the pod and found no room: Pending, never on the job's node.
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodField("low-prio", ".status.conditions[?(@.type==\"PodScheduled\")].reason") ==
               "Unschedulable";
      },
      seconds(30)))
      << Shell("kubectl get pods -A -o wide").out;
  EXPECT_EQ(PodField("low-prio", ".spec.nodeName"), "");
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);  // never preempted
}

// Found by the chaos suite (seed 903698): a pod already waiting when the kubelet fails the
// reservation under a running job. kube-scheduler stops counting a Failed pod's GPUs at once
// and binds the waiting pod there within milliseconds, before any controller can label the
// node: the sampler and the oracle saw the pod beside the job until the bridge had requeued
// the job. Before: bound to the job's node (the oracle's double booking). Now the chart's
// failed-reservation guard, whose parameters are the reservation pods themselves, refuses
// the binding from the instant the apiserver has the Failed status.
TEST_F(FailedReservationE2E, APodAlreadyWaitingIsNotBoundWhereTheKubeletFailedTheReservation) {
  const auto policy = RunCommand(
      {"kubectl", "get", "validatingadmissionpolicy", "skb-slurm-k8s-bridge-failed-reservation"},
      seconds(30));
  ASSERT_EQ(policy.exit_code, 0)
      << "the testbed lacks the chart's failed-reservation guard (`scripts/testbed up` of this "
         "tree installs it): "
      << policy.err;
  std::string id, node, old_uid;
  ASSERT_NO_FATAL_FAILURE(RunAJob(&id, &node, &old_uid));

  // Below every reservation class, asking a whole node: it waits, considered and refused.
  nlohmann::json pod = testbed::InferencePod("waiting", "lending");
  pod["spec"].erase("priorityClassName");
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodField("waiting", ".status.conditions[?(@.type==\"PodScheduled\")].reason") ==
               "Unschedulable";
      },
      seconds(30)))
      << Shell("kubectl get pods -A -o wide").out;

  ASSERT_NO_FATAL_FAILURE(FailTheReservation(node));

  // The waiting pod's node, watched every 20 ms until the reservation is replaced and the
  // guard is off, then 5 s more. The guards are admission policies whose parameters the
  // apiserver reads from an informer: on a loaded machine a binding passed before it saw
  // the failed reservation (two clean runs: the pod bound the moment the status changed).
  // What the bridge then owes: the pod, which may not take the job (priority 0), is evicted
  // (Event SwapGuardBreached), the job keeps running, never preempted, the replacement
  // comes once the pod is gone, and the samplers see the pod never run beside the job.
  std::string bound_to;
  const auto bound_now = [&] { return PodField("waiting", ".spec.nodeName"); };
  const bool replaced = WaitFor(
      [&] {
        if (const std::string n = bound_now(); !n.empty()) bound_to = n;
        return ReplacedAndUnguarded(node, old_uid);
      },
      seconds(60), milliseconds(20));
  ASSERT_TRUE(replaced) << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  if (!bound_to.empty()) {
    std::printf("the waiting pod was bound to %s during the swap\n", bound_to.c_str());
    EXPECT_EQ(bound_to, node);
    EXPECT_THAT(daemon_->Log(), HasSubstr(StrCat("action EvictPod ", node, " pod=default/waiting")))
        << "the pod bound during the swap was not evicted";
  }
  EXPECT_FALSE(WaitFor([&] { return !bound_now().empty(); }, seconds(5), milliseconds(50)))
      << "the waiting pod was bound to " << bound_now() << " after the reservation was replaced";
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);  // never preempted
}

// What a binding that passed the guards before the apiserver's informer saw them leaves
// behind, made on purpose: right after the kubelet fails the reservation, a priority-0 GPU
// pod is named onto the job's node by a user the guards exempt (the testbed's admin). It may
// not take the job (below lending.inference_threshold): the bridge evicts it (Event
// SwapGuardBreached), never drains, signals or preempts the job, and replaces the
// reservation once the pod is gone. Before: the node was lent to the pod and the job
// requeued at once. The pod runs beside the job until its eviction ends it: double bookings
// are expected from the fault, for 30 s at most.
TEST_F(FailedReservationE2E, APodPastTheGuardsDuringASwapIsEvictedAndTheJobKeepsRunning) {
  std::string id, node, old_uid;
  ASSERT_NO_FATAL_FAILURE(RunAJob(&id, &node, &old_uid));
  double_booking_window_ = DoubleBookingWindow{Steady::now(), seconds(30)};
  ASSERT_NO_FATAL_FAILURE(FailTheReservation(node));
  nlohmann::json pod = testbed::NodeNamePod("past-the-guards", "lending", node);
  pod["spec"].erase("priorityClassName");
  pod["spec"]["terminationGracePeriodSeconds"] = 1;
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();

  ASSERT_TRUE(WaitFor([&] { return ReplacedAndUnguarded(node, old_uid); }, seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  EXPECT_THAT(daemon_->Log(),
              HasSubstr(StrCat("action EvictPod ", node, " pod=default/past-the-guards")));
  EXPECT_THAT(NodeEvents(node), HasSubstr("SwapGuardBreached"));
  EXPECT_EQ(PodField("past-the-guards", ".spec.nodeName"), "") << "the pod is still there";
  EXPECT_THAT(daemon_->Log(), ::testing::Not(HasSubstr("lent-to='default/past-the-guards'")));
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);  // never preempted
}

// Path 5 of the device-lane review: NVIDIA's device plugin with the "mixed" MIG strategy
// advertises each profile as a resource of its own (nvidia.com/mig-1g.10gb). The reservation
// held only nvidia.com/gpu, and a pod asking a slice was no GPU pod to the node lane: it
// fitted beside Slurm's job on a Slurm-owned node, with no lend and no Event. Before: the
// reservation was never replaced and the pod was bound beside the job. Now the slices count
// as the node's GPUs: the reservation is replaced to hold them too (under the swap guard),
// and a pod asking one, below every reservation class, finds no room; an inference pod
// asking one takes the node by a lend like a GPU pod.
TEST_F(SafetyE2E, APodAskingAMigSliceFindsNoRoomBesideSlurmsJobOrTakesTheNodeByALend) {
  constexpr char kSlice[] = "nvidia.com/mig-1g.10gb";
  std::string id, node, old_uid;
  ASSERT_NO_FATAL_FAILURE(RunAJob(&id, &node, &old_uid));
  // The device plugin advertises two slices beside the GPUs (reset_lending.sh takes them
  // away again after the test).
  const std::string slices = StrCat(R"({"status":{"capacity":{")", kSlice,
                                    R"(":"2"},"allocatable":{")", kSlice, R"(":"2"}}})");
  auto patched = RunCommand(
      {"kubectl", "patch", "node", node, "--subresource=status", "--type=merge", "-p", slices},
      seconds(30));
  ASSERT_EQ(patched.exit_code, 0) << patched.err;

  const bool replaced = WaitFor(
      [&] {
        return ReplacedAndUnguarded(node, old_uid) &&
               ReservationField(node,
                                ".spec.containers[0].resources.requests.nvidia\\.com/"
                                "mig-1g\\.10gb") == "2";
      },
      seconds(60));
  EXPECT_TRUE(replaced) << "the reservation was not replaced to hold the node's MIG slices\n"
                        << Shell(StrCat("kubectl get pod -n ", kNs, " reserve-", node,
                                        " -o jsonpath='{.spec.containers[0].resources}'"))
                               .out
                        << daemon_->LogTail();

  nlohmann::json pod = testbed::InferencePod("mig-slice", "lending");
  pod["spec"].erase("priorityClassName");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  nlohmann::json& resources = pod["spec"]["containers"][0]["resources"];
  resources = {{"limits", {{kSlice, "1"}}}};
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(WaitFor(
      [&] {
        return !PodField("mig-slice", ".spec.nodeName").empty() ||
               PodField("mig-slice", ".status.conditions[?(@.type==\"PodScheduled\")].reason") ==
                   "Unschedulable";
      },
      seconds(30)))
      << Shell("kubectl get pods -A -o wide").out;
  EXPECT_EQ(PodField("mig-slice", ".spec.nodeName"), "")
      << "a pod asking a MIG slice was bound beside Slurm's job";
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);

  // An inference pod asking a slice is a GPU pod that may take the node: it preempts the
  // reservation and gets the node through the lend (checkpoint signal, grace, requeue).
  nlohmann::json inference = testbed::InferencePod("mig-inference", "lending");
  inference["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  inference["spec"]["containers"][0]["resources"] = {{"limits", {{kSlice, "1"}}}};
  created = kube_->Create(k8s::Resource::Pods(), "default", inference);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(
      WaitFor([&] { return PodField("mig-inference", ".status.phase") == "Running"; }, seconds(90)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  EXPECT_EQ(PodField("mig-inference", ".spec.nodeName"), node);
  EXPECT_GE(Restarts(id), 1) << "the job was not requeued for the slice pod";
  EXPECT_THAT(Signals(id), HasSubstr("USR1"));
}

// Item 5 of the safety review: the swap's NoSchedule taint stops neither a pod that
// tolerates every taint nor one created with spec.nodeName, and while the failed reservation
// is replaced Kubernetes counts none of the node's GPUs. Before: the spec.nodeName pod was
// created and admitted beside the running job (the sampler's double booking). Now the node
// carries the swap-guard label for that window, and the chart's admission policy (installed
// by the testbed) refuses the pod to anyone but the bridge, and refuses kube-scheduler the
// tolerating pod's binding.
TEST_F(FailedReservationE2E, PodsThatIgnoreTheTaintAreRefusedWhileTheReservationIsReplaced) {
  const auto policy =
      RunCommand({"kubectl", "get", "validatingadmissionpolicy", "skb-slurm-k8s-bridge-swap-guard"},
                 seconds(30));
  ASSERT_EQ(policy.exit_code, 0)
      << "the testbed lacks the chart's swap-guard policy (`scripts/testbed up` of this tree "
         "installs it): "
      << policy.err;
  std::string id, node, old_uid;
  ASSERT_NO_FATAL_FAILURE(FailTheReservationOfAJob(&id, &node, &old_uid));
  ASSERT_TRUE(
      WaitFor([&] { return Taints(node).find(ownership::kSwapTaintKey) != std::string::npos; },
              seconds(20), milliseconds(20)))
      << Taints(node) << "\n"
      << daemon_->LogTail();
  // The swap can be over within half a second (the guard was on for 0.53 s in a clean run,
  // and the intruder's pod came after it): the bridge is paused while the pods below are
  // created, so that they meet the window they are about.
  struct Resume {
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{daemon_->pid()};
  ASSERT_EQ(kill(daemon_->pid(), SIGSTOP), 0);
  ASSERT_EQ(NodeLabel(node, ownership::kSwapGuardLabel), "true")
      << "the swap was over before the bridge was paused: " << Taints(node);

  // Somebody other than the bridge (every permission, another name).
  const auto as_intruder = [](const nlohmann::json& pod) {
    return Shell(
        StrCat("kubectl --as=skb-e2e-intruder --as-group=system:masters create -f - <<'EOF'\n",
               pod.dump(), "\nEOF"));
  };
  const auto created_by_name =
      as_intruder(testbed::NodeNamePod("skb-e2e-by-name", "lending", node));
  EXPECT_NE(created_by_name.exit_code, 0)
      << "a GPU pod was created on " << node << " by spec.nodeName during the swap";
  EXPECT_THAT(created_by_name.err, HasSubstr("swap-guarded"));
  // Below every reservation class, so that nothing may make room for it: an inference-class
  // pod would rightly preempt the new reservation once the swap is over (a lend).
  nlohmann::json tolerant = testbed::TolerateAllPod("skb-e2e-tolerant", "lending");
  tolerant["spec"].erase("priorityClassName");
  tolerant["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  const auto created_tolerant = as_intruder(tolerant);
  ASSERT_EQ(created_tolerant.exit_code, 0) << created_tolerant.err;
  kill(daemon_->pid(), SIGCONT);

  // The reservation is replaced, the guard (label and taint) comes off, and the tolerating
  // pod finds the node full: Pending, never bound beside the job.
  ASSERT_TRUE(WaitFor([&] { return ReplacedAndUnguarded(node, old_uid); }, seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  EXPECT_EQ(PodField("skb-e2e-tolerant", ".spec.nodeName"), "");
  EXPECT_THAT(NodeEvents(node), HasSubstr("SwapGuardOn"));
  EXPECT_THAT(NodeEvents(node), HasSubstr("SwapGuardOff"));
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
}

class GpuCountE2E : public SafetyE2E {
 protected:
  void SetUp() override {
    // node3 has lost a GPU when the bridge starts: its reservation is made for 7.
    SetGpus(kNode, 7);
    SafetyE2E::SetUp();
  }
  void TearDown() override {
    SafetyE2E::TearDown();
    SetGpus(kNode, 8);
  }
  static void SetGpus(const std::string& node, int gpus) {
    const std::string n = StrCat("\"", gpus, "\"");
    auto r =
        RunCommand({"kubectl", "patch", "node", node, "--subresource=status", "--type=merge", "-p",
                    StrCat(R"({"status":{"allocatable":{"nvidia.com/gpu":)", n,
                           R"(},"capacity":{"nvidia.com/gpu":)", n, "}}}")},
                   seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static constexpr char kNode[] = "node3";
};

// Before: the reservation's count was fixed at creation; the 1-GPU pod ran beside the job.
TEST_F(GpuCountE2E, AReservationSmallerThanTheNodeIsReplacedWithTheNodesCount) {
  ASSERT_EQ(ReservationField(kNode, ".spec.containers[0].resources.requests.nvidia\\.com/gpu"),
            "7");
  const std::string id = Submit("gpu", {"USR1"}, {"-w", kNode});
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string old_uid = ReservationField(kNode, ".metadata.uid");

  SetGpus(kNode, 8);  // the GPU is back
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string uid = ReservationField(kNode, ".metadata.uid");
        return !uid.empty() && uid != old_uid &&
               ReservationField(kNode, ".spec.containers[0].resources.requests.nvidia\\.com/gpu") ==
                   "8" &&
               ReservationField(kNode, ".status.phase") == "Running" &&
               Taints(kNode).find(ownership::kSwapTaintKey) == std::string::npos;
      },
      seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();

  nlohmann::json pod = testbed::InferencePod("one-gpu", "lending", 1);
  pod["spec"].erase("priorityClassName");
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", kNode}};
  auto created = kube_->Create(k8s::Resource::Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodField("one-gpu", ".status.conditions[?(@.type==\"PodScheduled\")].reason") ==
               "Unschedulable";
      },
      seconds(30)))
      << Shell("kubectl get pods -A -o wide").out;
  EXPECT_EQ(PodField("one-gpu", ".spec.nodeName"), "");
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
}

class PausedLeaderE2E : public SafetyE2E {
 protected:
  PausedLeaderE2E() { replicas_ = 2; }
  void TearDown() override {
    if (paused_) kill(daemon_->pid(), SIGCONT);
    SetGpuHealthy(kNode, "True", "test cleanup");
    SafetyE2E::TearDown();
  }
  static constexpr char kNode[] = "node2";
  bool paused_ = false;
};

// Two leaders: the Lease passes to the standby while the leader is paused, not dead. Before,
// a leader woken from a pause carried out the rest of whatever plan it was in and every
// event its watches then delivered, until its next renewal attempt failed. Now each action
// (and status write) first asks whether this replica's last renewal is younger than the
// renew deadline (LeaderElector::HoldsValidLease): resumed, it stops before its first
// action, then gives up and exits (its supervisor restarts it as a follower).
TEST_F(PausedLeaderE2E, ALeaderPausedPastItsLeaseNeverActsAgain) {
  ASSERT_GT(daemon_->pid(), 0);
  ASSERT_EQ(kill(daemon_->pid(), SIGSTOP), 0);
  paused_ = true;
  const auto t0 = Steady::now();
  ASSERT_TRUE(WaitFor([&] { return LeaseHolder() == "bridge-b"; }, seconds(30), milliseconds(50)))
      << LeaseHolder() << standby_->LogTail();
  const double takeover = std::chrono::duration<double>(Steady::now() - t0).count();

  // The new leader acts while the old one sleeps: a GPU fault drains node2, its repair
  // resumes it. The paused replica's watches will deliver both late.
  SetGpuHealthy(kNode, "False", "XID 79 on GPU 3");
  ASSERT_TRUE(
      WaitFor([&] { return SlurmReason(kNode) == "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3"; },
              seconds(30)))
      << standby_->LogTail();
  SetGpuHealthy(kNode, "True", "repaired");
  ASSERT_TRUE(WaitFor([&] { return SlurmReason(kNode).empty(); }, seconds(30)))
      << SlurmReason(kNode) << standby_->LogTail();

  const size_t before = daemon_->Log().size();
  const auto resumed = Steady::now();
  ASSERT_EQ(kill(daemon_->pid(), SIGCONT), 0);
  paused_ = false;
  ASSERT_TRUE(WaitFor(
      [&] { return daemon_->Log().find("k8s_leader_stopped", before) != std::string::npos; },
      seconds(15)))
      << daemon_->LogTail();
  const double stopped = std::chrono::duration<double>(Steady::now() - resumed).count();
  // Whatever it still had queued or its watches brought, it carried out nothing: its log
  // watched for 3 s after it stopped leading, failing at the first action carried out.
  EXPECT_EQ(HoldsFor(
                [&] {
                  const std::string after = daemon_->Log().substr(before);
                  for (const auto& line : StrSplit(after, '\n')) {
                    if (line.find("outcome=ok") != std::string_view::npos) {
                      return StrCat("the deposed leader acted: ", line);
                    }
                  }
                  return std::string();
                },
                seconds(3)),
            "");
  EXPECT_TRUE(SlurmReason(kNode).empty()) << SlurmReason(kNode);
  EXPECT_EQ(LeaseHolder(), "bridge-b");
  std::printf(
      "paused leader: the standby held the Lease %.2f s after the pause (lease 3 s, renew 2 s, "
      "retry 0.5 s); resumed, the old leader stopped leading %.2f s later and acted 0 times\n",
      takeover, stopped);
}

class CriticalPodE2E : public SafetyE2E {
 protected:
  void TearDown() override {
    Shell("kubectl delete pod -n kube-system skb-e2e-critical --ignore-not-found --wait=false");
    SafetyE2E::TearDown();
  }
};

// Before: kube-scheduler preempted the protected reservation (1e9) for the 2e9 pod and the
// bridge started a lend: it drained the node and waited for the job, and the pod was
// nominated there for as long as the job ran. Now the preemption is refused: the node is
// guarded at once (swap taint), never drained; the reservation is replaced and the guard
// stays for the cool-down, so the pod is not nominated there again at once.
TEST_F(CriticalPodE2E, APodAboveTheProtectedClassNeverTakesProtectedWork) {
  const std::string id = Submit("urgent");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string node = JobNode(id);
  ASSERT_FALSE(node.empty());
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReservationField(node, ".spec.priorityClassName") == "slurm-protected" &&
               ReservationField(node, ".status.phase") == "Running" &&
               Taints(node).find(ownership::kSwapTaintKey) == std::string::npos;
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  const std::string old_uid = ReservationField(node, ".metadata.uid");

  nlohmann::json pod = testbed::InferencePod("skb-e2e-critical", "lending", 8);
  pod["metadata"]["namespace"] = "kube-system";
  pod["spec"]["priorityClassName"] = "system-cluster-critical";
  pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  auto created = kube_->Create(k8s::Resource::Pods(), "kube-system", pod);
  ASSERT_TRUE(created.ok()) << created.status();

  ASSERT_TRUE(WaitFor([&] { return NodeEvents(node).find("LendRefused") != std::string::npos; },
                      seconds(30)))
      << NodeEvents(node) << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("never preempted"));
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string uid = ReservationField(node, ".metadata.uid");
        return !uid.empty() && uid != old_uid &&
               ReservationField(node, ".status.phase") == "Running" &&
               ReservationField(node, ".spec.priorityClassName") == "slurm-protected";
      },
      seconds(60)))
      << Shell("kubectl get pods -A -o wide").out << daemon_->LogTail();
  EXPECT_THAT(Taints(node), HasSubstr(ownership::kSwapTaintKey));
  // The taint stays for the cool-down, but the admission guard only while the reservation
  // counted no GPU: bindings of other pods to the node are not held back for minutes.
  EXPECT_TRUE(
      WaitFor([&] { return NodeLabel(node, ownership::kSwapGuardLabel).empty(); }, seconds(20)))
      << NodeLabel(node, ownership::kSwapGuardLabel);
  EXPECT_EQ(SlurmReason(node), "") << "never drained";
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
  EXPECT_EQ(Signals(id), "");
  EXPECT_EQ(Trim(RunCommand({"kubectl", "get", "pod", "-n", "kube-system", "skb-e2e-critical", "-o",
                             "jsonpath={.spec.nodeName}"},
                            seconds(30))
                     .out),
            "");
}

// The lend's Events of `reason` on `node` last seen at or after `since`: (time, message).
std::vector<std::pair<Clock::TimePoint, std::string>> EventsSince(const std::string& node,
                                                                  const std::string& reason,
                                                                  Clock::TimePoint since) {
  std::vector<std::pair<Clock::TimePoint, std::string>> out;
  auto r = RunCommand({"kubectl", "get", "events", "-n", "default", "--field-selector",
                       StrCat("involvedObject.name=", node, ",reason=", reason), "-o", "json"},
                      seconds(30));
  if (r.exit_code != 0) return out;
  const nlohmann::json list = nlohmann::json::parse(r.out, nullptr, false);
  if (!list.is_object() || !list.contains("items")) return out;
  for (const auto& e : list["items"]) {
    auto at = k8s::ParseTime(e.value("lastTimestamp", ""));
    if (!at.ok() || *at < since) continue;
    out.emplace_back(*at, e.value("message", ""));
  }
  return out;
}

// Before: the busy taint went on only 30 s before the kubelet's kill of the reservation,
// max_grace + release_timeout (15 min) after its deletion; a lend waiting on Slurm past the
// grace (a refused requeue, a slow epilog) was guarded by nothing but that deadline, so a
// bridge outage there gave the GPUs to both schedulers. No SlurmWorkRemains Event came
// within the lend. Now: the taint and its Event in the round the grace ends (the job still
// holds the node then), before the requeue; and the reservation's own grace covers an
// outage of lending.outage_allowance besides (1h: 600 + 300 + 3600 s).
TEST_F(SafetyE2E, AJobThatOutlivesItsGraceIsGuardedWhenTheGraceEnds) {
  const Clock::TimePoint start = std::chrono::time_point_cast<std::chrono::seconds>(
      std::chrono::system_clock::now() - seconds(1));
  // Each job traps USR1 and carries on: it ignores the checkpoint signal.
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  EXPECT_EQ(ReservationField("node1", ".spec.terminationGracePeriodSeconds"),
            StrCat(600 + 300 + 3600));

  CreateInferencePod("infer-outlived");
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-outlived", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue").out << daemon_->LogTail();
  const std::string node = PodField("infer-outlived", ".spec.nodeName");
  std::string victim;
  for (const auto& id : jobs_) {
    if (Restarts(id) > 0) victim = id;
  }
  ASSERT_FALSE(victim.empty()) << Shell("squeue").out;
  // "USR1 <unix>.<ns>": the job saw its signal and went on.
  const std::string signal = Signals(victim);
  ASSERT_THAT(signal, HasSubstr("USR1 ")) << "job " << victim << " never got its signal";
  const double signalled = std::atof(signal.substr(signal.find(' ') + 1).c_str());

  std::vector<std::pair<Clock::TimePoint, std::string>> taint, released;
  EXPECT_TRUE(WaitFor(
      [&] {
        taint = EventsSince(node, "SlurmWorkRemains", start);
        released = EventsSince(node, "ReservationReleased", start);
        return !taint.empty() && !released.empty();
      },
      seconds(30)))
      << NodeEvents(node) << daemon_->LogTail();
  ASSERT_EQ(taint.size(), 1u) << NodeEvents(node);
  EXPECT_THAT(taint[0].second, HasSubstr(StrCat("job(s) ", victim, " outlived their grace")));
  // Event times have whole seconds: the taint came when the grace ended (not before it), and
  // while the lend went on, not at the reservation's kill deadline an hour away.
  const double tainted = std::chrono::duration<double>(taint[0].first.time_since_epoch()).count();
  EXPECT_GE(tainted, std::floor(signalled) + kGraceSeconds);
  ASSERT_FALSE(released.empty());
  EXPECT_LE(taint[0].first, released[0].first);
  std::printf("busy taint %.1f s after the grace ended (signal at %.3f, grace %d s)\n",
              tainted - signalled - kGraceSeconds, signalled, kGraceSeconds);
  // Slurm left: the taint is gone with the lend bookkeeping; the job was requeued, not lost.
  EXPECT_TRUE(
      WaitFor([&] { return Taints(node).find(ownership::kBusyTaintKey) == std::string::npos; },
              seconds(30)))
      << Taints(node);
  EXPECT_THAT(Shell(StrCat("scontrol show job ", victim)).out,
              ::testing::Not(::testing::ContainsRegex("JobState=(FAILED|CANCELLED)")));
}

// Item 6: the release re-checks Slurm. The lend of an idle node is planned down to its
// release; the daemon holds that action 12 s (SKB_TEST_PAUSE_BEFORE) and in that window an
// admin resumes the node and a job lands on it, as it would between any plan and its
// action. The release must refuse (the node is no longer drained), and the lend carry on
// with the newcomer: drained again, signalled, requeued after its grace, then released. The
// inference pod runs only then, and the sampler sees no moment with both.
TEST_F(SafetyE2E, AnAdminResumeBetweenTheReleasePlanAndTheReleaseIsCaught) {
  daemon_->Stop();
  setenv("SKB_TEST_PAUSE_BEFORE", "ReservationReleased:12", 1);
  Status started = daemon_->Start();
  unsetenv("SKB_TEST_PAUSE_BEFORE");
  ASSERT_TRUE(started.ok()) << started;
  ASSERT_TRUE(
      WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); }, seconds(60)));

  CreateInferencePod("infer-r");
  std::string node;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = daemon_->LogTail(1 << 20);
        const size_t at = log.find("test_hook pause_before=ReservationReleased node=");
        if (at == std::string::npos) return false;
        const size_t from = log.find("node=", at) + 5;
        node = log.substr(from, log.find(' ', from) - from);
        return true;
      },
      seconds(40)))
      << daemon_->LogTail();
  const auto paused = Steady::now();
  ASSERT_THAT(SlurmReason(node), HasSubstr("k8s-bridge: lent to"));
  // The admin's resume, and a job that Slurm starts on the node at once.
  ASSERT_TRUE(ResumeSlurmNode(node)) << Shell("sinfo -N -o '%N %T %E'").out;
  const std::string id = Submit("gpu", {"USR1"}, {"-w", node});
  ASSERT_TRUE(WaitFor([&] { return JobField(id, "JobState") == "RUNNING"; }, seconds(8)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out;
  ASSERT_LT(Steady::now() - paused, seconds(12)) << "the job started after the pause ended";
  EXPECT_EQ(PodField("infer-r", ".status.phase"), "Pending");

  // The release refuses; the lend takes the newcomer through signal, grace and requeue.
  ASSERT_TRUE(WaitFor(
      [&] { return daemon_->LogTail(1 << 20).find("is no longer drained") != std::string::npos; },
      seconds(20)))
      << daemon_->LogTail();
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-r", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 60)))
      << Shell("kubectl get pods -A -o wide; squeue; sinfo -N -o '%N %T %E'").out
      << daemon_->LogTail();
  EXPECT_EQ(PodField("infer-r", ".spec.nodeName"), node);
  EXPECT_THAT(Signals(id), HasSubstr("USR1")) << "the newcomer got its checkpoint signal";
  EXPECT_TRUE(WaitFor([&] { return Restarts(id) >= 1; }, seconds(10)));
  EXPECT_THAT(Shell(StrCat("scontrol show job ", id)).out,
              ::testing::Not(::testing::ContainsRegex("JobState=(FAILED|CANCELLED)")));
}

}  // namespace
}  // namespace skb::lending_e2e

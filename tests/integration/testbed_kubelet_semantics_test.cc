// The simulated kubelets (kwok with tests/testbed/kwok/stages.yaml) must behave like real
// ones where the bridge's correctness depends on it, or the preemption tests would prove
// nothing. Checked here against the real apiserver and kube-scheduler:
//  - finalizers are never stripped: a deleted pod turns terminal when its container exits
//    but stays until its finalizers are gone;
//  - a reservation pod keeps running (its GPUs counted) until the bridge releases it, and
//    is killed - turning terminal, finalizer or not - when its grace period ends;
//  - kube-scheduler does not give a deleted-but-running reservation's GPUs to another pod,
//    and does once the reservation is terminal (the hazard in DESIGN.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <thread>

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
    CommandResult r = RunCommand({"kubectl", "create", "namespace", ns_}, seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void TearDown() override {
    // Release anything a failed test left holding a finalizer, then drop the namespace.
    Shell(StrCat("kubectl -n ", ns_, " get pods -o name | xargs -r -n1 kubectl -n ", ns_,
                 " patch --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"));
    RunCommand({"kubectl", "delete", "namespace", ns_, "--wait=false"}, seconds(30));
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

  std::string ns_;
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
  CommandResult r = RunCommand(
      {"kubectl", "annotate", "pod", "-n", ns_, "reserve", "slurm-k8s-bridge.io/released=true"},
      seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("reserve", "Failed", seconds(10))) << Phase("reserve");
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

}  // namespace
}  // namespace skb::testbed

// SPDX-License-Identifier: Apache-2.0
// The bridge daemon end to end on the testbed, driven only with the tools an admin uses:
// kubectl on the Kubernetes side, scontrol/sinfo/sbatch on the Slurm side, bridgectl for
// the merged view. Each test starts its own daemon (single replica, no election) built from
// this tree; state lives in Kubernetes and Slurm, so a restart mid-flow must pick up where
// it was.
//
// Nodes: node2 for the health flows, node4 for stopping a slurmd (other suites use node3
// and node4 in the integration label; labels run one after the other).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/testbed_support.h"

namespace skb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testbed::BridgeDaemon;
using testbed::RunCommand;
using testbed::Shell;
using testbed::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNode[] = "node2";

using testbed::Trim;

// Slurm's view of a node: "STATE|REASON", e.g. "idle|none" or "drained|k8s-bridge: ...".
std::string SlurmState(const std::string& node) {
  return Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o '%T|%E' | head -1")).out);
}

bool Drained(const std::string& node) {
  std::string s = SlurmState(node);
  return s.find("drain") != std::string::npos;
}

std::string Reason(const std::string& node) {
  std::string s = SlurmState(node);
  auto bar = s.find('|');
  return bar == std::string::npos ? "" : s.substr(bar + 1);
}

void PatchCondition(const std::string& node, const std::string& type, const std::string& status,
                    const std::string& reason, const std::string& message) {
  nlohmann::json patch = {
      {"status",
       {{"conditions",
         {{{"type", type},
           {"status", status},
           {"reason", reason},
           {"message", message},
           {"lastTransitionTime", Trim(Shell("date -u +%Y-%m-%dT%H:%M:%SZ").out)}}}}}}};
  auto r = RunCommand({"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic",
                       "-p", patch.dump()},
                      seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void DeleteCondition(const std::string& node, const std::string& type) {
  nlohmann::json patch = {{"status", {{"conditions", {{{"type", type}, {"$patch", "delete"}}}}}}};
  RunCommand({"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic", "-p",
              patch.dump()},
             seconds(30));
}

// The node's condition of `type` as "Status/Reason", "" when absent.
std::string K8sCondition(const std::string& node, const std::string& type) {
  auto r =
      RunCommand({"kubectl", "get", "node", node, "-o",
                  StrCat("jsonpath={.status.conditions[?(@.type==\"", type,
                         "\")].status}/{.status.conditions[?(@.type==\"", type, "\")].reason}")},
                 seconds(30));
  std::string s = Trim(r.out);
  return s == "/" ? "" : s;
}

std::string Events(const std::string& node) {
  return RunCommand({"kubectl", "get", "events", "-n", "default", "--field-selector",
                     StrCat("involvedObject.name=", node), "-o",
                     "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers"},
                    seconds(30))
      .out;
}

class HealthE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    Cleanup();
    // Usable: no job on it and not drained. Not "idle" verbatim: once (CI, Slurm 22.05) a
    // job cancelled right after its requeue left slurmctld showing the empty node "mixed"
    // for minutes, which says nothing about what these tests check.
    ASSERT_TRUE(WaitFor(
        [] {
          std::string s = SlurmState(kNode);
          return (s.rfind("idle|", 0) == 0 || s.rfind("mixed|", 0) == 0) &&
                 Trim(Shell(StrCat("squeue -h -w ", kNode, " -o %i")).out).empty();
        },
        seconds(60)))
        << SlurmState(kNode) << "\n"
        << Shell(StrCat("squeue -w ", kNode)).out;
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
    Cleanup();
  }
  void Cleanup() {
    Shell(StrCat("scancel --quiet -w ", kNode, " 2>/dev/null; kubectl uncordon ", kNode,
                 " >/dev/null 2>&1"));
    for (const char* t : {"GPUHealthy", "MaintenanceRequested"}) DeleteCondition(kNode, t);
    Shell(StrCat("scontrol update nodename=", kNode, " state=resume 2>/dev/null"));
  }
  void StartBridge(const std::string& overlay = "") {
    // Features are tested on their own; the default health rules, a short maintenance
    // deadline so the flow completes within the test.
    std::string base = R"({"health": {"maintenance": {"deadline": "4s"}}})";
    daemon_ = std::make_unique<BridgeDaemon>(skb::testbed::DaemonBinary(),
                                             overlay.empty() ? base : overlay);
    Status s = daemon_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  std::string Bridgectl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {skb::testbed::BridgectlBinary(), "--socket",
                                     daemon_->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunCommand(argv, seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  std::unique_ptr<BridgeDaemon> daemon_;
};

TEST_F(HealthE2E, ConditionDrainsWithItsReasonAndClearingResumes) {
  StartBridge();
  PatchCondition(kNode, "GPUHealthy", "False", "XidError", "XID 79 on GPU 3");
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode) << "\n"
      << daemon_->LogTail();
  EXPECT_EQ(Reason(kNode), "k8s-bridge: GPUHealthy=False: XID 79 on GPU 3");
  EXPECT_TRUE(WaitFor([] { return K8sCondition(kNode, "SlurmDrained").rfind("True/", 0) == 0; },
                      seconds(20)))
      << K8sCondition(kNode, "SlurmDrained");
  EXPECT_TRUE(WaitFor([] { return Events(kNode).find("XID 79 on GPU 3") != std::string::npos; },
                      seconds(20)))
      << Events(kNode);

  // The merged view says the same thing.
  std::string table = Bridgectl({"get", "nodes"});
  EXPECT_THAT(table, HasSubstr("unhealthy"));
  EXPECT_THAT(table, HasSubstr("GPUHealthy=False"));
  std::string why = Bridgectl({"describe", "node", kNode});
  EXPECT_THAT(why, HasSubstr("GPUHealthy"));
  EXPECT_THAT(why, HasSubstr("none (the node is where the rules want it)"));
  auto json = nlohmann::json::parse(Bridgectl({"get", "nodes", "-o", "json"}));
  bool found = false;
  for (const auto& n : json["nodes"]) {
    if (n["name"] == kNode) {
      found = true;
      EXPECT_EQ(n["owner"], "unhealthy");
      EXPECT_EQ(n["gpus"], 8);
    }
  }
  EXPECT_TRUE(found) << json.dump(2);

  PatchCondition(kNode, "GPUHealthy", "True", "GpuOk", "all GPUs pass");
  ASSERT_TRUE(WaitFor([] { return !Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode) << "\n"
      << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([] { return K8sCondition(kNode, "SlurmDrained").rfind("False/", 0) == 0; },
                      seconds(20)));
}

TEST_F(HealthE2E, AnAdminDrainIsNeverResumedByTheBridge) {
  StartBridge();
  ASSERT_EQ(
      Shell(StrCat("scontrol update nodename=", kNode, " state=drain reason='admin: bad DIMM'"))
          .exit_code,
      0);
  PatchCondition(kNode, "GPUHealthy", "False", "XidError", "XID 48");
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(Reason(kNode), "admin: bad DIMM") << "the admin's reason is kept";
  PatchCondition(kNode, "GPUHealthy", "True", "GpuOk", "fine");
  std::this_thread::sleep_for(seconds(3));
  EXPECT_TRUE(Drained(kNode)) << SlurmState(kNode);
  EXPECT_EQ(Reason(kNode), "admin: bad DIMM");
  EXPECT_THAT(Bridgectl({"get", "nodes"}), HasSubstr("admin: bad DIMM"));
}

TEST_F(HealthE2E, CordonDrainsAndUncordonResumes) {
  StartBridge();
  ASSERT_EQ(Shell(StrCat("kubectl cordon ", kNode)).exit_code, 0);
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode);
  EXPECT_THAT(Reason(kNode), HasSubstr("k8s-bridge: "));
  EXPECT_THAT(Reason(kNode), HasSubstr("cordon"));
  ASSERT_EQ(Shell(StrCat("kubectl uncordon ", kNode)).exit_code, 0);
  EXPECT_TRUE(WaitFor([] { return !Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode);
}

TEST_F(HealthE2E, MaintenanceDrainsWaitsTheDeadlineRequeuesAndReportsReady) {
  StartBridge();
  auto sub = RunCommand(
      {"sbatch", "--parsable", "--requeue", "-w", kNode, "--gres=gpu:1", "--wrap", "sleep 600"},
      seconds(30));
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string job = Trim(sub.out);
  auto job_state = [&] { return Trim(Shell(StrCat("squeue -h -j ", job, " -o %T")).out); };
  ASSERT_TRUE(WaitFor([&] { return job_state() == "RUNNING"; }, seconds(30))) << job_state();

  PatchCondition(kNode, "MaintenanceRequested", "True", "FirmwareUpdate", "BIOS 2.1 rollout");
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode);
  EXPECT_EQ(job_state(), "RUNNING") << "the job gets until the deadline";
  // After the 4 s deadline the job is requeued (not lost) and the node reports ready.
  ASSERT_TRUE(
      WaitFor([] { return K8sCondition(kNode, "SlurmDrained") == "True/ReadyForMaintenance"; },
              seconds(40)))
      << K8sCondition(kNode, "SlurmDrained") << "\n"
      << daemon_->LogTail();
  std::string shown = Shell(StrCat("scontrol show job ", job)).out;
  EXPECT_THAT(shown, ::testing::ContainsRegex("Restarts=[1-9]")) << shown;
  EXPECT_THAT(shown, Not(HasSubstr("JobState=FAILED")));
  EXPECT_THAT(shown, Not(HasSubstr("JobState=CANCELLED")));
  EXPECT_THAT(Events(kNode), HasSubstr("Requeue"));
  // Cancel the requeued job only once it is back in the queue with nothing left on the node
  // (a cancel racing the requeue's completion is what once left the node "mixed").
  EXPECT_TRUE(WaitFor([&] { return job_state() == "PENDING"; }, seconds(20))) << job_state();
  EXPECT_TRUE(
      WaitFor([] { return SlurmState(kNode).find("comp") == std::string::npos; }, seconds(20)))
      << SlurmState(kNode);
  Shell(StrCat("scancel ", job));

  DeleteCondition(kNode, "MaintenanceRequested");
  EXPECT_TRUE(WaitFor([] { return !Drained(kNode); }, seconds(20))) << SlurmState(kNode);
}

TEST_F(HealthE2E, KubernetesLabelsBecomeSlurmFeatures) {
  StartBridge(
      R"({"features": {"labels": [{"label": "topology.kubernetes.io/zone", "prefix": "zone_"}]}})");
  auto features = [] {
    return Trim(Shell(StrCat("sinfo -h -N -n ", kNode, " -o '%b' | head -1")).out);
  };
  const std::string before =
      Trim(RunCommand({"kubectl", "get", "node", kNode, "-o",
                       "jsonpath={.metadata.labels.topology\\.kubernetes\\.io/zone}"},
                      seconds(30))
               .out);
  ASSERT_TRUE(
      WaitFor([&] { return features().find("zone_" + before) != std::string::npos; }, seconds(20)))
      << features();
  ASSERT_EQ(Shell(StrCat("kubectl label node ", kNode,
                         " topology.kubernetes.io/zone=e2e-moved --overwrite"))
                .exit_code,
            0);
  EXPECT_TRUE(
      WaitFor([&] { return features().find("zone_e2e-moved") != std::string::npos; }, seconds(20)))
      << features();
  EXPECT_THAT(features(), Not(HasSubstr("zone_" + before)));
  auto c = RunCommand({"sbatch", "--parsable", "--output=/dev/null", "--constraint=zone_e2e-moved",
                       "--wrap", "true"},
                      seconds(30));
  EXPECT_EQ(c.exit_code, 0) << "the new feature is schedulable: " << c.err;
  // It runs on the relabelled node (a job left pending would wait forever once the label
  // is back).
  const std::string job = Trim(c.out);
  EXPECT_TRUE(WaitFor(
      [&] { return Trim(Shell(StrCat("squeue -h -j ", job, " -o %T")).out).empty(); }, seconds(20)))
      << Shell(StrCat("squeue -j ", job)).out;
  Shell(StrCat("scancel ", job, " 2>/dev/null"));
  Shell(StrCat("kubectl label node ", kNode, " topology.kubernetes.io/zone=", before,
               " --overwrite"));
  EXPECT_TRUE(
      WaitFor([&] { return features().find("zone_" + before) != std::string::npos; }, seconds(20)));
}

TEST_F(HealthE2E, ARestartedBridgePicksUpWhereItWas) {
  StartBridge();
  PatchCondition(kNode, "GPUHealthy", "False", "XidError", "XID 31");
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)));
  daemon_->Kill();
  // While it is down, the signal clears; nothing in memory survives the crash.
  PatchCondition(kNode, "GPUHealthy", "True", "GpuOk", "fine again");
  std::this_thread::sleep_for(seconds(1));
  EXPECT_TRUE(Drained(kNode)) << "nobody resumed it while the bridge was down";
  ASSERT_TRUE(daemon_->Start().ok()) << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([] { return !Drained(kNode); }, seconds(20), milliseconds(50)))
      << SlurmState(kNode) << "\n"
      << daemon_->LogTail();
}

TEST_F(HealthE2E, OddConditionMessagesAreSanitizedAndTheDaemonKeepsRunning) {
  StartBridge();
  std::string huge(20000, 'x');
  PatchCondition(kNode, "GPUHealthy", "False", "Xid", "line one\nline\ttwo \x01 " + huge);
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)))
      << daemon_->LogTail();
  std::string reason = Reason(kNode);
  EXPECT_LE(reason.size(), 200u);
  EXPECT_EQ(reason.find('\n'), std::string::npos);
  EXPECT_THAT(reason, HasSubstr("k8s-bridge: GPUHealthy=False: line one"));
  // An unknown condition type on the node is simply not a rule.
  PatchCondition(kNode, "SomeVendorCondition", "False", "Whatever", "");
  PatchCondition(kNode, "GPUHealthy", "True", "GpuOk", "");
  EXPECT_TRUE(WaitFor([] { return !Drained(kNode); }, seconds(20))) << daemon_->LogTail();
  DeleteCondition(kNode, "SomeVendorCondition");
  EXPECT_TRUE(daemon_->running());
}

TEST_F(HealthE2E, MetricsAndProbesShowWhatTheBridgeDid) {
  StartBridge(R"({"server": {"http_address": "127.0.0.1:0"},
                  "health": {"maintenance": {"deadline": "4s"}}})");
  const std::string base = daemon_->HttpBase();
  ASSERT_FALSE(base.empty()) << daemon_->Log();
  EXPECT_EQ(Trim(Shell(StrCat("curl -s -o /dev/null -w '%{http_code}' ", base, "/readyz")).out),
            "200");
  EXPECT_EQ(Trim(Shell(StrCat("curl -s ", base, "/healthz")).out), "ok");
  PatchCondition(kNode, "GPUHealthy", "False", "XidError", "XID 94");
  ASSERT_TRUE(WaitFor([] { return Drained(kNode); }, seconds(20), milliseconds(50)));
  std::string metrics;
  EXPECT_TRUE(WaitFor(
      [&] {
        metrics = Shell(StrCat("curl -s ", base, "/metrics")).out;
        return metrics.find("skb_slurm_node_drains_total{cause=\"health\"} 1") != std::string::npos;
      },
      seconds(10)))
      << metrics;
  EXPECT_THAT(metrics,
              HasSubstr("skb_actions_total{kind=\"DrainSlurmNode\",outcome=\"success\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("skb_nodes{owner=\"unhealthy\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("skb_leader 1"));
}

TEST_F(HealthE2E, ASlurmdThatStopsShowsAsAConditionOnTheKubernetesNode) {
  StartBridge();
  const std::string node = "node4";
  ASSERT_TRUE(WaitFor([&] { return K8sCondition(node, "SlurmNodeHealthy").rfind("True/", 0) == 0; },
                      seconds(20)))
      << K8sCondition(node, "SlurmNodeHealthy");
  const std::string testbed = StrCat(skb::testbed::SourceDir(), "/scripts/testbed");
  ASSERT_EQ(Shell(StrCat(testbed, " stop slurmd-", node), seconds(60)).exit_code, 0);
  // slurmctld marks it DOWN after SlurmdTimeout (30 s on the testbed).
  bool down =
      WaitFor([&] { return K8sCondition(node, "SlurmNodeHealthy").rfind("False/", 0) == 0; },
              seconds(120), milliseconds(500));
  auto start = Shell(StrCat(testbed, " start slurmd-", node), seconds(120));
  ASSERT_TRUE(down) << K8sCondition(node, "SlurmNodeHealthy") << " " << SlurmState(node) << "\n"
                    << daemon_->LogTail();
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_TRUE(WaitFor([&] { return K8sCondition(node, "SlurmNodeHealthy").rfind("True/", 0) == 0; },
                      seconds(60)))
      << K8sCondition(node, "SlurmNodeHealthy") << " " << SlurmState(node);
}

}  // namespace
}  // namespace skb

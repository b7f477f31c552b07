// SPDX-License-Identifier: Apache-2.0
// bridgectl end to end on the testbed (issue 7): `get jobs` from a daemon built from this
// tree, `drain`/`undrain` through the Kubernetes condition flow into Slurm and back, `get
// preemptions` from Events in the real apiserver, `maintenance reboot|retry|cancel`'s
// condition writes (the daemon's cycle has its own tests), and the errors an admin sees.
//
// Node: node3 (other suites use node2 and node4). The daemon runs single-replica without an
// election (and names a Lease of its own should that change), health rules only: lending
// has its own suite (lending_e2e_test.cc checks `get preemptions` after a real lend).
// Everything a test sets is removed again: jobs cancelled, conditions and Events deleted,
// the node resumed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "src/base/strings.h"
#include "tests/testbed/bridge_daemon.h"
#include "tests/testbed/testbed_support.h"

namespace skb {
namespace {

using std::chrono::seconds;
using testbed::BridgeDaemon;
using testbed::CommandResult;
using testbed::HoldsFor;
using testbed::RunCommand;
using testbed::Shell;
using testbed::WaitFor;
using ::testing::HasSubstr;

constexpr char kNode[] = "node3";
// Events this suite writes for `get preemptions` carry this label, to be deleted after.
constexpr char kEventLabel[] = "skb-e2e=bridgectl";

using testbed::Trim;

// Slurm's view of a node: "STATE|REASON".
std::string SlurmState(const std::string& node) {
  return Trim(Shell(StrCat("sinfo -h -N -n ", node, " -o '%T|%E' | head -1")).out);
}

// "Status/Reason" of the node's condition `type`, "" when it has none.
std::string K8sCondition(const std::string& node, const std::string& type) {
  auto r = RunCommand({"kubectl", "get", "node", node, "-o", "json"}, seconds(30));
  if (r.exit_code != 0) return "?";
  const nlohmann::json parsed = nlohmann::json::parse(r.out);  // outlives the loop
  for (const auto& c : parsed["status"]["conditions"]) {
    if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
  }
  return "";
}

void DeleteCondition(const std::string& node, const std::string& type) {
  nlohmann::json patch = {{"status", {{"conditions", {{{"type", type}, {"$patch", "delete"}}}}}}};
  RunCommand({"kubectl", "patch", "node", node, "--subresource=status", "--type=strategic", "-p",
              patch.dump()},
             seconds(30));
}

std::string JobState(const std::string& id) {
  return Trim(Shell(StrCat("squeue -h -j ", id, " -o %T 2>/dev/null")).out);
}

class BridgectlE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    ASSERT_NE(std::getenv("KUBECONFIG"), nullptr) << "eval \"$(scripts/testbed env)\" first";
    Cleanup();
    daemon_ = std::make_unique<BridgeDaemon>(skb::testbed::DaemonBinary(),
                                             R"({"features": {"labels": []},
            "leader_election": {"lease_name": "skb-e2e-bridgectl"}})");
    Status s = daemon_->Start();
    ASSERT_TRUE(s.ok()) << s;
    // Usable: not drained, no job of ours.
    ASSERT_TRUE(WaitFor(
        [] {
          std::string st = SlurmState(kNode);
          return st.rfind("idle|", 0) == 0 || st.rfind("mixed|", 0) == 0;
        },
        seconds(60)))
        << SlurmState(kNode);
  }
  void TearDown() override {
    if (::testing::Test::HasFailure() && daemon_) {
      std::printf("bridge log tail:\n%s\n", daemon_->LogTail(6000).c_str());
    }
    if (daemon_) daemon_->Stop();
    Cleanup();
  }
  void Cleanup() {
    for (const auto& id : jobs_) Shell(StrCat("scancel ", id, " 2>/dev/null"));
    jobs_.clear();
    DeleteCondition(kNode, "DrainRequested");
    DeleteCondition(kNode, "RebootRequested");
    DeleteCondition(kNode, "SlurmMaintenance");
    Shell(StrCat("kubectl delete events -n default -l ", kEventLabel,
                 " --ignore-not-found >/dev/null 2>&1"));
    // Only drains this suite can have caused: the bridge's (its condition is gone now) and
    // the admin drain one test sets.
    std::string st = SlurmState(kNode);
    if (st.find("k8s-bridge: DrainRequested") != std::string::npos ||
        st.find("e2e admin drain") != std::string::npos) {
      Shell(StrCat("scontrol update nodename=", kNode, " state=resume 2>/dev/null"));
    }
  }
  CommandResult Bridgectl(const std::vector<std::string>& args, bool with_socket = true) {
    std::vector<std::string> argv = {skb::testbed::BridgectlBinary()};
    if (with_socket) {
      argv.push_back("--socket");
      argv.push_back(daemon_->socket());
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(30));
  }
  std::string Submit(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "-o", "/dev/null", "--gres=gpu:1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--wrap", "sleep 300"});
    auto r = RunCommand(argv, seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string id = Trim(r.out);
    jobs_.push_back(id);
    return id;
  }
  // The job's entry in `get jobs -o json`, null when absent.
  nlohmann::json JobEntry(const std::string& id) {
    auto r = Bridgectl({"get", "jobs", "-o", "json"});
    if (r.exit_code != 0) return nullptr;
    const nlohmann::json parsed = nlohmann::json::parse(r.out);  // outlives the loop
    for (const auto& j : parsed["jobs"]) {
      if (std::to_string(j["jobId"].get<uint32_t>()) == id) return j;
    }
    return nullptr;
  }

  std::unique_ptr<BridgeDaemon> daemon_;
  std::vector<std::string> jobs_;
};

TEST_F(BridgectlE2E, GetJobsShowsARunningJobOnItsNodeWithTheOwnerAndAQueuedOne) {
  const std::string running = Submit({"-w", kNode});
  const std::string held = Submit({"--hold"});
  ASSERT_TRUE(WaitFor([&] { return JobState(running) == "RUNNING"; }, seconds(60)))
      << Shell("squeue").out;
  nlohmann::json j;
  ASSERT_TRUE(WaitFor(
      [&] {
        j = JobEntry(running);
        return j.is_object() && j["state"] == "RUNNING";
      },
      seconds(30)))
      << Bridgectl({"get", "jobs"}).out;
  EXPECT_EQ(j["nodes"], nlohmann::json::array({kNode}));
  EXPECT_EQ(j["owner"], "slurm");
  EXPECT_EQ(j["gpusPerNode"], 1);
  EXPECT_EQ(j["preemptible"], false);
  EXPECT_THAT(j["preemptibleWhy"].get<std::string>(), HasSubstr("lending is off"));
  EXPECT_EQ(j["user"], Trim(Shell("id -un").out));
  nlohmann::json h = JobEntry(held);
  ASSERT_TRUE(h.is_object()) << Bridgectl({"get", "jobs"}).out;
  EXPECT_EQ(h["state"], "PENDING");
  EXPECT_EQ(h["owner"], "");
  // The table a person reads: the job, its node and owner on one line.
  std::string table = Bridgectl({"get", "jobs"}).out;
  bool found = false;
  for (const auto& line : StrSplit(table, '\n')) {
    std::string l(line);
    if (l.rfind(running + " ", 0) == 0) {
      found = true;
      EXPECT_THAT(l, HasSubstr(kNode));
      EXPECT_THAT(l, HasSubstr("RUNNING"));
      EXPECT_THAT(l, HasSubstr(" slurm "));
    }
  }
  EXPECT_TRUE(found) << table;
  EXPECT_THAT(Bridgectl({"get", "jobs", "-o", "wide"}).out, HasSubstr("RESTARTS"));
}

TEST_F(BridgectlE2E, DrainGoesThroughTheConditionIntoSlurmAndUndrainResumes) {
  const std::string job = Submit({"-w", kNode});
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "RUNNING"; }, seconds(60)));
  auto d = Bridgectl({"drain", kNode, "--reason", "e2e psu swap"}, /*with_socket=*/false);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("DrainRequested"));
  EXPECT_EQ(K8sCondition(kNode, "DrainRequested"), "True/BridgectlDrain");
  ASSERT_TRUE(WaitFor(
      [] {
        return SlurmState(kNode).find("k8s-bridge: DrainRequested=True: e2e psu swap") !=
               std::string::npos;
      },
      seconds(30)))
      << SlurmState(kNode);
  EXPECT_THAT(SlurmState(kNode), HasSubstr("bridgectl drain by"));
  EXPECT_EQ(JobState(job), "RUNNING") << "a drain lets running jobs finish";
  EXPECT_THAT(Bridgectl({"describe", "node", kNode}).out, HasSubstr("admin drain request"));
  // Idempotent.
  EXPECT_EQ(Bridgectl({"drain", kNode, "--reason", "e2e psu swap"}, false).exit_code, 0);

  auto u = Bridgectl({"undrain", kNode}, false);
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(K8sCondition(kNode, "DrainRequested"), "");
  ASSERT_TRUE(
      WaitFor([] { return SlurmState(kNode).find("drain") == std::string::npos; }, seconds(30)))
      << SlurmState(kNode);
  EXPECT_THAT(Bridgectl({"undrain", kNode}, false).out, HasSubstr("no drain by bridgectl"));
}

TEST_F(BridgectlE2E, UndrainNeverResumesAnAdminsSlurmDrain) {
  ASSERT_EQ(
      Shell(StrCat("scontrol update nodename=", kNode, " state=drain reason='e2e admin drain'"))
          .exit_code,
      0);
  ASSERT_EQ(Bridgectl({"drain", kNode, "--reason", "e2e overlap"}, false).exit_code, 0);
  // The admin's drain reason stays at every look, while the bridge sees the request and
  // after it is withdrawn.
  const auto admins_drain_stays = [&] {
    const std::string state = SlurmState(kNode);
    return state.find("e2e admin drain") == std::string::npos
               ? "the admin's drain was changed: " + state
               : std::string();
  };
  EXPECT_EQ(HoldsFor(admins_drain_stays, seconds(2)), "");
  ASSERT_EQ(Bridgectl({"undrain", kNode}, false).exit_code, 0);
  EXPECT_EQ(HoldsFor(admins_drain_stays, seconds(3)), "");
  EXPECT_THAT(SlurmState(kNode), HasSubstr("e2e admin drain"));
}

TEST_F(BridgectlE2E, GetPreemptionsReadsTheBridgesEventsFromTheApiserver) {
  // The Events one lend of node3 leaves, worded as the bridge's recorder words them
  // (bridge/cli/preemption_history_test.cc has the same flow; lending_e2e_test.cc checks a
  // real lend), written into the real apiserver so listing, field selectors and paging are
  // the real ones. Timestamps far in the past keep them apart from real lends.
  const std::vector<std::pair<std::string, std::string>> flow = {
      {"LendingToKubernetes", "Node node3 is lent to Kubernetes (e2e/infer-x): test"},
      {"SlurmJobsSignalled",
       "Sent SIGUSR1 to Slurm job(s) 991 on node node3 to checkpoint: the node is lent to "
       "Kubernetes (e2e/infer-x) (jobs 991)"},
      {"SlurmJobsPreempted",
       "Requeued Slurm job(s) 991 on node node3: the node is lent to Kubernetes (e2e/infer-x) "
       "(jobs 991)"},
      {"ReservationReleased",
       "Released reservation slurm-bridge/reserve-node3: Slurm shows no job on node node3; its "
       "GPUs go to Kubernetes (e2e/infer-x)"},
      {"ReturnedToSlurm", "Node node3 belongs to Slurm again"}};
  for (size_t i = 0; i < flow.size(); ++i) {
    const std::string at = StrCat("2001-01-01T00:00:0", i, "Z");
    nlohmann::json ev = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata",
         {{"generateName", "node3.e2e-"},
          {"namespace", "default"},
          {"labels", {{"skb-e2e", "bridgectl"}}}}},
        {"involvedObject", {{"kind", "Node"}, {"name", kNode}, {"apiVersion", "v1"}}},
        {"reason", flow[i].first},
        {"message", flow[i].second},
        {"type", "Normal"},
        {"count", 1},
        {"firstTimestamp", at},
        {"lastTimestamp", at},
        {"source", {{"component", "slurm-k8s-bridge"}}}};
    auto r = RunCommand({"kubectl", "create", "-f", "-"}, seconds(30), ev.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto r = Bridgectl({"get", "preemptions", "--node", kNode, "-o", "json"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json found;
  const nlohmann::json parsed = nlohmann::json::parse(r.out);  // outlives the loop
  for (const auto& p : parsed["preemptions"]) {
    if (p["lentTo"] == "e2e/infer-x") found = p;
  }
  ASSERT_TRUE(found.is_object()) << r.out;
  EXPECT_EQ(found["lentAt"], "2001-01-01T00:00:00Z");
  EXPECT_EQ(found["signalled"], nlohmann::json::array({"991"}));
  EXPECT_EQ(found["preempted"], nlohmann::json::array({"991"}));
  EXPECT_EQ(found["outcome"], "returned to Slurm");
  EXPECT_EQ(found["returnedAt"], "2001-01-01T00:00:04Z");
  auto table = Bridgectl({"get", "preemptions"}, false);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("requeued 991"));
}

// The condition writes of `maintenance`, through the real apiserver's strategic merge and
// JSON patch (its test ops) on nodes/status. The daemon is stopped first: the cycle it
// would run on these conditions (a drain, a reboot) is tested with the daemon's own suite.
TEST_F(BridgectlE2E, MaintenanceWritesTheRequestAndRetriesOnlyAFailedCycle) {
  daemon_->Stop();
  const auto message = [](const std::string& type) {
    auto r = RunCommand({"kubectl", "get", "node", kNode, "-o", "json"}, seconds(30));
    const nlohmann::json parsed = nlohmann::json::parse(r.exit_code == 0 ? r.out : "{}");
    for (const auto& c : parsed.value("status", nlohmann::json::object())
                             .value("conditions", nlohmann::json::array())) {
      if (c.value("type", "") == type) return c.value("message", "");
    }
    return std::string();
  };
  auto r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e bios"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("set RebootRequested=True"));
  EXPECT_EQ(K8sCondition(kNode, "RebootRequested"), "True/BridgectlMaintenance");
  EXPECT_THAT(message("RebootRequested"), HasSubstr("e2e bios (bridgectl maintenance by "));
  EXPECT_THAT(K8sCondition(kNode, "Ready"), ::testing::StartsWith("True/")) << "merged by type";
  r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e bios"}, false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("already has"));

  // Retry: only a failed cycle, and its record written back to Draining.
  r = Bridgectl({"maintenance", "retry", kNode}, false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no maintenance cycle"));
  nlohmann::json failed = {{"status",
                            {{"conditions",
                              {{{"type", "SlurmMaintenance"},
                                {"status", "True"},
                                {"reason", "CheckFailed"},
                                {"message", "e2e check exit 1"},
                                {"lastTransitionTime", "2001-01-01T00:00:00Z"}}}}}}};
  ASSERT_EQ(RunCommand({"kubectl", "patch", "node", kNode, "--subresource=status",
                        "--type=strategic", "-p", failed.dump()},
                       seconds(30))
                .exit_code,
            0);
  r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e again"}, false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("maintenance retry node3"));
  r = Bridgectl({"maintenance", "retry", kNode}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(K8sCondition(kNode, "SlurmMaintenance"), "True/Draining");
  EXPECT_THAT(message("SlurmMaintenance"), HasSubstr("after CheckFailed: e2e check exit 1"));
  r = Bridgectl({"maintenance", "retry", kNode}, false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("phase Draining"));
  r = Bridgectl({"maintenance", "reboot", kNode, "--reason", "e2e again"}, false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("under way"));

  // Cancel: bridgectl's request only.
  r = Bridgectl({"maintenance", "cancel", kNode}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("stops the cycle"));
  EXPECT_EQ(K8sCondition(kNode, "RebootRequested"), "False/BridgectlMaintenanceCancelled");
  EXPECT_THAT(Bridgectl({"maintenance", "cancel", kNode}, false).out,
              HasSubstr("no maintenance request by bridgectl"));
  nlohmann::json theirs = {{"status",
                            {{"conditions",
                              {{{"type", "RebootRequested"},
                                {"status", "True"},
                                {"reason", "E2eRemediation"},
                                {"message", "e2e"}}}}}}};
  ASSERT_EQ(RunCommand({"kubectl", "patch", "node", kNode, "--subresource=status",
                        "--type=strategic", "-p", theirs.dump()},
                       seconds(30))
                .exit_code,
            0);
  r = Bridgectl({"maintenance", "cancel", kNode}, false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("not from bridgectl: left alone"));
  EXPECT_EQ(K8sCondition(kNode, "RebootRequested"), "True/E2eRemediation");
}

TEST_F(BridgectlE2E, ErrorsSayWhatToCheck) {
  auto gone = RunCommand(
      {skb::testbed::BridgectlBinary(), "--socket", "/nonexistent/bridge.sock", "get", "jobs"},
      seconds(30));
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("/nonexistent/bridge.sock"));
  auto unknown = Bridgectl({"drain", "no-such-node", "--reason", "x"}, false);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no node 'no-such-node'"));
  auto described = Bridgectl({"describe", "node", "no-such-node"});
  EXPECT_EQ(described.exit_code, 1);
  EXPECT_EQ(Bridgectl({"drain", kNode}, false).exit_code, 2) << "no --reason";
  EXPECT_EQ(Bridgectl({"get", "jobs", "--bogus"}).exit_code, 2);
  EXPECT_EQ(Bridgectl({"get", "nodes", "--all"}).exit_code, 2);
  auto nokube = RunCommand({skb::testbed::BridgectlBinary(), "--kubeconfig",
                            "/nonexistent/kubeconfig", "get", "preemptions"},
                           seconds(30));
  EXPECT_EQ(nokube.exit_code, 1);
  EXPECT_THAT(nokube.err, HasSubstr("--kubeconfig"));
  EXPECT_EQ(K8sCondition(kNode, "DrainRequested"), "") << "errors changed nothing";
}

}  // namespace
}  // namespace skb

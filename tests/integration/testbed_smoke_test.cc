// SPDX-License-Identifier: Apache-2.0
// The testbed itself, checked as a new user would: the Kubernetes nodes and the Slurm nodes
// are the same machines with the same GPUs, a Slurm GPU job runs to completion, and a
// Kubernetes GPU pod is scheduled by the real kube-scheduler and runs (on kwok).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/base/strings.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using std::chrono::seconds;

class TestbedSmoke : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TestbedDir();
    ASSERT_TRUE(dir.ok()) << dir.status().message();
  }
};

nlohmann::json KubectlJson(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("-o");
  argv.push_back("json");
  CommandResult r = RunCommand(argv, seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST_F(TestbedSmoke, KubernetesNodesAreReadyWithEightGpus) {
  const int n = TestbedNodeCount();
  nlohmann::json nodes = KubectlJson({"get", "nodes"});
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& node : nodes["items"]) by_name[node["metadata"]["name"]] = node;
  for (int i = 1; i <= n; ++i) {
    std::string name = StrCat("node", i);
    ASSERT_TRUE(by_name.count(name)) << name << " missing from kubectl get nodes";
    const auto& node = by_name[name];
    EXPECT_EQ(node["status"]["capacity"].value("nvidia.com/gpu", ""), "8") << name;
    EXPECT_EQ(node["status"]["allocatable"].value("nvidia.com/gpu", ""), "8") << name;
    EXPECT_TRUE(node["metadata"]["labels"].contains("nvidia.com/gpu.product")) << name;
    bool ready = false;
    for (const auto& c : node["status"]["conditions"]) {
      if (c["type"] == "Ready") ready = c["status"] == "True";
    }
    EXPECT_TRUE(ready) << name << " is not Ready";
  }
}

TEST_F(TestbedSmoke, SlurmNodesAreIdleWithEightGpus) {
  const int n = TestbedNodeCount();
  std::map<std::string, std::pair<std::string, std::string>> seen;
  std::string out;
  // A test before this one may have restarted slurmctld; nodes are "idle*" (not
  // responding) until their slurmd checks in again, so wait for the steady state.
  WaitFor(
      [&] {
        CommandResult r = RunCommand({"sinfo", "-N", "-h", "-o", "%N|%T|%G"}, seconds(30));
        out = r.out;
        seen.clear();
        for (std::string_view line : StrSplit(r.out, '\n', /*skip_empty=*/true)) {
          std::vector<std::string_view> f = StrSplit(line, '|');
          if (f.size() == 3) seen[std::string(f[0])] = {std::string(f[1]), std::string(f[2])};
        }
        for (int i = 1; i <= n; ++i) {
          auto it = seen.find(StrCat("node", i));
          if (it == seen.end() || it->second.first != "idle") return false;
        }
        return true;
      },
      seconds(60), std::chrono::milliseconds(500));
  for (int i = 1; i <= n; ++i) {
    std::string name = StrCat("node", i);
    ASSERT_TRUE(seen.count(name)) << name << " missing from sinfo:\n" << out;
    EXPECT_EQ(seen[name].first, "idle") << name;
    EXPECT_THAT(seen[name].second, ::testing::MatchesRegex("gpu:[a-z0-9]+:8.*")) << name;
  }
}

TEST_F(TestbedSmoke, SlurmGpuJobRunsToCompletion) {
  CommandResult sub = RunCommand({"sbatch", "--parsable", "--gres=gpu:2", "--job-name=smoke",
                                  "--output=/dev/null", "--wrap", "sleep 5"},
                                 seconds(30));
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id(StripWhitespace(sub.out));
  ASSERT_FALSE(id.empty());
  std::string state;
  bool ran = false;
  bool done = WaitFor(
      [&] {
        CommandResult r =
            RunCommand({"squeue", "-h", "-j", id, "-o", "%T", "--states=all"}, seconds(10));
        state = std::string(StripWhitespace(r.out));
        if (state == "RUNNING") ran = true;
        return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" ||
               state == "NODE_FAIL" || state == "TIMEOUT";
      },
      seconds(90), std::chrono::milliseconds(250));
  ASSERT_TRUE(done) << "job " << id << " stuck in state " << state;
  EXPECT_EQ(state, "COMPLETED");
  EXPECT_TRUE(ran) << "never observed RUNNING";
}

// Real accounting: slurmdbd on MariaDB holds the testbed's accounts and QOS (with the
// priorities and preemption relations a site gives them), and a job's account and QOS are
// in sacct's history once it has run.
TEST_F(TestbedSmoke, AccountingHoldsTheAccountsQosAndJobHistory) {
  CommandResult qos = RunCommand(
      {"sacctmgr", "-n", "-P", "show", "qos", "format=name,priority,preempt,preemptmode"},
      seconds(30));
  ASSERT_EQ(qos.exit_code, 0) << qos.err;
  EXPECT_THAT(qos.out, ::testing::HasSubstr("normal|100|preemptible|cluster"));
  EXPECT_THAT(qos.out, ::testing::HasSubstr("preemptible|10||requeue"));
  EXPECT_THAT(qos.out, ::testing::HasSubstr("guaranteed|1000|preemptible|cluster"));
  CommandResult accounts =
      RunCommand({"sacctmgr", "-n", "-P", "show", "account", "format=account"}, seconds(30));
  EXPECT_THAT(accounts.out, ::testing::HasSubstr("team-a"));
  EXPECT_THAT(accounts.out, ::testing::HasSubstr("team-b"));

  CommandResult sub = RunCommand({"sbatch", "--parsable", "-A", "team-b", "--qos=guaranteed",
                                  "--job-name=acct", "--output=/dev/null", "--wrap", "true"},
                                 seconds(30));
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id(StripWhitespace(sub.out));
  std::string history;
  EXPECT_TRUE(WaitFor(
      [&] {
        history = RunCommand({"sacct", "-n", "-P", "-X", "-j", id, "--format=account,qos,state"},
                             seconds(10))
                      .out;
        // The QOS reads "Unknown" for a moment after the job ends (slurmdbd's record of
        // it is completed after the end itself).
        return StripWhitespace(history) == "team-b|guaranteed|COMPLETED";
      },
      seconds(90), std::chrono::milliseconds(500)))
      << history;
}

TEST_F(TestbedSmoke, KubernetesGpuPodIsScheduledAndRuns) {
  const std::string ns = "smoke-test";
  RunCommand({"kubectl", "delete", "namespace", ns, "--ignore-not-found", "--wait=true"},
             seconds(60));
  Status created = CreateNamespace(ns);  // with its default ServiceAccount
  ASSERT_TRUE(created.ok()) << created;
  const std::string manifest = R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-smoke, namespace: smoke-test}
spec:
  replicas: 1
  selector: {matchLabels: {app: gpu-smoke}}
  template:
    metadata: {labels: {app: gpu-smoke}}
    spec:
      containers:
      - name: main
        image: registry.invalid/inference:1
        resources:
          limits: {nvidia.com/gpu: 1}
)";
  CommandResult apply = RunCommand({"kubectl", "apply", "-f", "-"}, seconds(30), manifest);
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  std::string phase, node;
  bool running = WaitFor(
      [&] {
        nlohmann::json pods = KubectlJson({"get", "pods", "-n", ns, "-l", "app=gpu-smoke"});
        if (!pods.contains("items") || pods["items"].empty()) return false;
        const auto& p = pods["items"][0];
        phase = p["status"].value("phase", "");
        node = p["spec"].value("nodeName", "");
        return phase == "Running" && !node.empty();
      },
      seconds(90), std::chrono::milliseconds(500));
  EXPECT_TRUE(running) << "pod phase=" << phase << " node=" << node;
  EXPECT_THAT(node, ::testing::StartsWith("node"));
  // Gone before the next test: a terminating pod still holds its GPU, and a test that
  // wants all of that node's GPUs would be refused by the kubelet's admission.
  CommandResult deleted = RunCommand(
      {"kubectl", "delete", "namespace", ns, "--wait=true", "--timeout=120s"}, seconds(130));
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
}

}  // namespace
}  // namespace skb::testbed

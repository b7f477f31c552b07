// SPDX-License-Identifier: Apache-2.0
// bridgectl read from Kubernetes (docs/bridgectl.md) against the daemon's socket on one live
// testbed: a node lent to an inference pod through the real kube-scheduler preemption and
// nodes Slurm owns, read both ways; on every field both can show (owner, names, GPUs, model,
// pods, jobs where a reservation lists them, drain and its reason, conditions, taints,
// cordon) they agree, and what Kubernetes cannot know is shown as unknown. The reading runs
// with a ServiceAccount bound only to the ClusterRole docs/bridgectl.md gives admins.
#include <cstdio>
#include <fstream>
#include <set>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

using nlohmann::json;

constexpr char kReader[] = "skb-e2e-bridgectl-reader";

// The ClusterRole of docs/bridgectl.md, as the doc has it (its yaml block naming
// bridgectl-reader), so the doc's RBAC is what the test proves.
std::string ReaderRoleFromDoc() {
  const std::string doc = testbed::ReadAll(StrCat(testbed::SourceDir(), "/docs/bridgectl.md"));
  const size_t name = doc.find("  name: bridgectl-reader\n");
  if (name == std::string::npos) return "";
  const size_t begin = doc.rfind("```yaml\n", name);
  const size_t end = doc.find("```", name);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return doc.substr(begin + 8, end - begin - 8);
}

class BridgectlKubeE2E : public LendingE2E {
 protected:
  // Elected, under the config's default Lease name, where bridgectl looks for it.
  BridgectlKubeE2E() {
    extra_overlay_ = {{"leader_election", {{"lease_name", kDefaultLease}}}};
    daemon_args_ = {"--identity", "bridge-kube"};
  }
  static constexpr char kDefaultLease[] = "slurm-k8s-bridge";

  void SetUp() override {
    // A fresh Lease: one a crashed run left would hold the election for its duration.
    Shell(StrCat("kubectl delete lease -n slurm-bridge ", kDefaultLease, " --ignore-not-found"));
    LendingE2E::SetUp();
    if (HasFatalFailure()) return;
    char tmpl[] = "/tmp/skb-bctl-kube-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    reader_dir_ = tmpl;
    const std::string role = ReaderRoleFromDoc();
    ASSERT_THAT(role, HasSubstr("kind: ClusterRole"));
    auto applied = RunCommand({"kubectl", "apply", "-f", "-"}, seconds(30), role);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    Shell(StrCat("kubectl create serviceaccount -n default ", kReader,
                 " 2>/dev/null; "
                 "kubectl create clusterrolebinding ",
                 kReader, " --clusterrole=bridgectl-reader --serviceaccount=default:", kReader,
                 " 2>/dev/null"));
    kubeconfig_ = StrCat(reader_dir_, "/kubeconfig");
    Status s = testbed::WriteServiceAccountKubeconfig("default", kReader, kubeconfig_);
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    RunCommand({"kubectl", "delete", "pod", "-n", "default", "infer-kube", "--ignore-not-found",
                "--wait=false"},
               seconds(30));
    Shell(StrCat("kubectl delete lease -n slurm-bridge ", kDefaultLease, " --ignore-not-found; ",
                 "kubectl delete clusterrolebinding ", kReader, " --ignore-not-found; ",
                 "kubectl delete serviceaccount -n default ", kReader, " --ignore-not-found; ",
                 "kubectl delete clusterrole bridgectl-reader --ignore-not-found"));
    if (!reader_dir_.empty()) Shell(StrCat("rm -rf ", reader_dir_));
    LendingE2E::TearDown();
  }

  // `bridgectl ARGS` over the daemon's socket, or with the reader's kubeconfig.
  testbed::CommandResult FromDaemon(const std::vector<std::string>& args) {
    return testbed::Bridgectl(daemon_->socket(), args);
  }
  testbed::CommandResult FromKube(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {skb::testbed::BridgectlBinary(), "--kubeconfig", kubeconfig_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(30));
  }
  static json Parse(const testbed::CommandResult& r) {
    if (r.exit_code != 0) return nullptr;
    return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }

  // What the two answers of `get nodes -o json` disagree on, "" when nothing.
  static std::string Disagreements(const json& daemon, const json& kube) {
    if (!daemon.is_object() || !kube.is_object()) return "an answer is missing";
    std::map<std::string, json> by_name;
    for (const json& n : kube["nodes"]) by_name[n["name"].get<std::string>()] = n;
    std::string out;
    auto differ = [&](const std::string& node, const char* what, const json& d, const json& k) {
      if (d != k)
        StrAppend(&out, node, " ", what, ": daemon ", d.dump(), ", kube ", k.dump(), "; ");
    };
    for (const json& d : daemon["nodes"]) {
      if (!d["inKubernetes"].get<bool>()) continue;
      const std::string name = d["name"];
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        StrAppend(&out, name, " missing from Kubernetes' answer; ");
        continue;
      }
      const json& k = it->second;
      for (const char* f : {"k8sName", "gpus", "gpuModel", "owner", "pods", "inSlurm"}) {
        differ(name, f, d[f], k[f]);
      }
      const std::string ds = d["slurmState"], ks = k["slurmState"];
      differ(name, "drained", ds.find("+drain") != std::string::npos,
             ks.find("+drain") != std::string::npos);
      if (ds.find("+drain") != std::string::npos) {
        differ(name, "slurmReason", d["slurmReason"], k["slurmReason"]);
      }
      const json& unknown = k["unknown"];
      if (std::find(unknown.begin(), unknown.end(), "jobs") == unknown.end()) {
        differ(name, "jobs", d["jobs"], k["jobs"]);
      }
    }
    if (by_name.size() != static_cast<size_t>(testbed::TestbedNodeCount())) {
      StrAppend(&out, "Kubernetes lists ", by_name.size(), " nodes; ");
    }
    return out;
  }

  std::string reader_dir_;
  std::string kubeconfig_;
};

TEST_F(BridgectlKubeE2E, TheKubeconfigPathAgreesWithTheSocketOnALentAndASlurmOwnedNode) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));

  // Both answers agree within 30 s (the conditions follow one status pass behind the
  // daemon, the reservations' job lists one update interval).
  std::string diff;
  const auto agree = [&] {
    return WaitFor(
        [&] {
          diff = Disagreements(Parse(FromDaemon({"get", "nodes", "-o", "json"})),
                               Parse(FromKube({"get", "nodes", "-o", "json"})));
          return diff.empty();
        },
        seconds(30));
  };
  // Slurm owns every node: both agree, jobs included once the reservations list them.
  EXPECT_TRUE(agree()) << diff;

  CreateInferencePod("infer-kube");
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-kube", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide").out << Shell("squeue").out;
  const std::string lent = PodField("infer-kube", ".spec.nodeName");
  ASSERT_FALSE(lent.empty());
  ASSERT_TRUE(WaitFor(
      [&] {
        json d = Parse(FromDaemon({"get", "node", lent, "-o", "json"}));
        return d.is_object() && d["nodes"][0]["owner"] == "k8s";
      },
      seconds(30)))
      << FromDaemon({"get", "nodes"}).out;
  EXPECT_TRUE(agree()) << diff;

  std::printf("from the daemon:\n%s\nfrom Kubernetes:\n%s\n",
              FromDaemon({"get", "nodes"}).out.c_str(),
              FromKube({"get", "nodes", "-o", "wide"}).out.c_str());

  // The lent node as a person reads it from Kubernetes.
  const json kube_lent = Parse(FromKube({"get", "node", lent, "-o", "json"}));
  ASSERT_TRUE(kube_lent.is_object());
  EXPECT_EQ(kube_lent["source"], "kubernetes");
  // The bridge runs: its Lease is renewed, and names the leader the daemon names.
  EXPECT_EQ(kube_lent["ready"], true) << kube_lent["readyReason"];
  EXPECT_EQ(kube_lent["leader"], Parse(FromDaemon({"get", "nodes", "-o", "json"}))["leader"]);
  const json& k = kube_lent["nodes"][0];
  EXPECT_EQ(k["owner"], "k8s");
  EXPECT_EQ(k["slurmState"], "?+drain");
  EXPECT_EQ(k["slurmReason"], "k8s-bridge: lent to default/infer-kube");
  EXPECT_EQ(k["pods"], json::array({"default/infer-kube"}));
  EXPECT_EQ(k["unknown"][0], "jobs") << "no reservation lists its jobs";
  const std::string table = FromKube({"get", "nodes"}).out;
  EXPECT_THAT(table, HasSubstr("?+drain"));
  EXPECT_THAT(table, HasSubstr("from Kubernetes"));

  // describe: the same conditions, taints and cordon; the bridge's Events; no plan.
  const json dd = Parse(FromDaemon({"describe", "node", lent, "-o", "json"}));
  const json kd = Parse(FromKube({"describe", "node", lent, "-o", "json"}));
  ASSERT_TRUE(dd.is_object() && kd.is_object());
  auto conditions = [](const json& d) {
    std::set<std::string> out;
    for (const json& c : d["conditions"]) {
      out.insert(StrCat(c["type"].get<std::string>(), "=", c["status"].get<std::string>(), "/",
                        c["reason"].get<std::string>()));
    }
    return out;
  };
  EXPECT_EQ(conditions(dd), conditions(kd));
  EXPECT_EQ(dd["taints"], kd["taints"]);
  EXPECT_EQ(dd["unschedulable"], kd["unschedulable"]);
  EXPECT_THAT(kd["events"].dump(), HasSubstr("ReservationReleased"));
  EXPECT_THAT(kd["explanation"].dump(), HasSubstr("lent-to=default/infer-kube"));
  const std::string text = FromKube({"describe", "node", lent}).out;
  EXPECT_THAT(text, HasSubstr("only the daemon plans"));
  std::printf("describe from Kubernetes:\n%s\n", text.c_str());
  // A Slurm-owned node: its jobs from its reservation, its owner.
  std::string other;
  for (int i = 1; i <= testbed::TestbedNodeCount(); ++i) {
    if (StrCat("node", i) != lent) other = StrCat("node", i);
  }
  const json ko = Parse(FromKube({"describe", "node", other, "-o", "json"}));
  ASSERT_TRUE(ko.is_object());
  EXPECT_EQ(ko["node"]["owner"], "slurm");
  EXPECT_EQ(ko["node"]["jobs"].size(), 1u) << ko.dump();

  // The bridge stopped: what it published stays, and the answer says it may be stale (a
  // SIGTERM releases the Lease; a crash leaves it unrenewed, 3 s in this fixture).
  daemon_->Stop();
  json stopped;
  EXPECT_TRUE(WaitFor(
      [&] {
        stopped = Parse(FromKube({"get", "nodes", "-o", "json"}));
        return stopped.is_object() && stopped["ready"] == false;
      },
      seconds(20)))
      << stopped.dump();
  EXPECT_THAT(stopped["readyReason"].get<std::string>(), HasSubstr("no replica holds it"));
  EXPECT_THAT(FromKube({"get", "nodes"}).out, HasSubstr("may be stale"));
  EXPECT_EQ(stopped["nodes"].size(), static_cast<size_t>(testbed::TestbedNodeCount()));

  // What only one side answers is refused before anything is asked.
  EXPECT_EQ(FromKube({"--from", "kubernetes", "get", "jobs"}).exit_code, 2);
  // The reader's kubeconfig reads, and writes nothing: drain is refused by the apiserver.
  auto drain = FromKube({"drain", other, "--reason", "e2e"});
  EXPECT_EQ(drain.exit_code, 1);
  EXPECT_THAT(drain.err, HasSubstr("RBAC"));
}

}  // namespace
}  // namespace skb::lending_e2e

// SPDX-License-Identifier: Apache-2.0
// kubernetes.node_names end to end: the daemon with {"mode": "strip_domain", "domain":
// "cluster.local"} against the testbed, where the last node registers in Kubernetes as
// nodeN.cluster.local (as kubelets on many sites do) while slurm.conf says nodeN, and a
// Kubernetes node ghost.cluster.local has no Slurm node at all. The renamed node pairs: its
// reservation is created on it under its Kubernetes name and Slurm's view of nodeN shows as
// its conditions. (No Slurm job here: a job cancelled on nodeN left it "mixed" for 3-4 min,
// failing the tests after this one; a run with one saw its reservation turn preemptible.)
// The ghost gets SlurmNodeHealthy=Unknown (SlurmNodeNotFound) and a Warning naming both
// names, and no reservation. The testbed's nodes are put back whatever happens.
#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

constexpr char kNs[] = "slurm-bridge";
constexpr char kDomain[] = "cluster.local";
constexpr char kGhost[] = "ghost.cluster.local";

class NodeNamesE2E : public LendingE2E {
 protected:
  NodeNamesE2E()
      : slurm_name_(StrCat("node", testbed::TestbedNodeCount())),
        k8s_name_(StrCat(slurm_name_, ".", kDomain)) {
    extra_overlay_ = nlohmann::json::parse(
        StrCat(R"({"kubernetes": {"node_names": {"mode": "strip_domain", "domain": ")", kDomain,
               R"("}}})"));
  }

  void SetUp() override {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    Reset();  // no reservation left on the node about to be renamed
    saved_ = StrCat("/tmp/skb-node-names-", getpid(), ".json");
    ASSERT_EQ(Shell(StrCat("kubectl get node ", slurm_name_,
                           " -o json | jq 'del(.metadata.uid, .metadata.resourceVersion, "
                           ".metadata.creationTimestamp, .metadata.managedFields)' > ",
                           saved_))
                  .exit_code,
              0);
    renamed_ = true;
    ASSERT_EQ(
        Shell(StrCat("kubectl delete node ", slurm_name_, " --wait=true --timeout=30s")).exit_code,
        0);
    ASSERT_TRUE(Register(k8s_name_));
    ASSERT_TRUE(Register(kGhost));
    LendingE2E::SetUp();
  }

  void TearDown() override {
    LendingE2E::TearDown();
    if (!renamed_) return;
    // Later tests need the testbed's own nodes: nodeN back, the two others gone.
    Shell(StrCat("kubectl delete node ", k8s_name_, " ", kGhost,
                 " --ignore-not-found --wait=true --timeout=30s"));
    if (Shell(StrCat("kubectl get node ", slurm_name_)).exit_code != 0) {
      EXPECT_TRUE(Register(slurm_name_));
    }
    Shell(StrCat("rm -f ", saved_));
  }

  // Registers the saved node under `name` as a kubelet does: one create with capacity and
  // allocatable in its status (kwok then adds the conditions), then waits until Ready.
  bool Register(const std::string& name) {
    auto r = Shell(StrCat("jq --arg n ", name,
                          " '.metadata.name = $n | .metadata.labels[\"kubernetes.io/hostname\"] = "
                          "$n | .status |= {capacity: .capacity, allocatable: .allocatable}' ",
                          saved_, " | kubectl create -f -"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return WaitFor([&] { return NodeCondition(name, "Ready", "status") == "True"; }, seconds(60));
  }

  static std::string NodeCondition(const std::string& node, const std::string& type,
                                   const std::string& field) {
    return Trim(
        RunCommand({"kubectl", "get", "node", node, "-o",
                    StrCat("jsonpath={.status.conditions[?(@.type==\"", type, "\")].", field, "}")},
                   seconds(30))
            .out);
  }

  static std::string PodOf(const std::string& k8s_node, const std::string& jsonpath) {
    return Trim(RunCommand({"kubectl", "get", "pod", "-n", kNs, StrCat("reserve-", k8s_node), "-o",
                            "jsonpath={" + jsonpath + "}"},
                           seconds(30))
                    .out);
  }

  std::string slurm_name_;
  std::string k8s_name_;
  std::string saved_;
  bool renamed_ = false;
};

TEST_F(NodeNamesE2E, ARenamedNodePairsAndAnUnpairedOneIsAWarningWithBothNames) {
  // SetUp waited for one running reservation per Slurm node: the renamed node's is under its
  // Kubernetes name, bound to it.
  EXPECT_EQ(PodOf(k8s_name_, ".spec.nodeName"), k8s_name_);
  EXPECT_EQ(PodOf(k8s_name_, ".spec.priorityClassName"), "slurm-idle");
  EXPECT_EQ(Shell(StrCat("kubectl get pod -n ", kNs, " reserve-", slurm_name_)).exit_code, 1)
      << "no reservation under the Slurm name";

  // Slurm's view of nodeN is written on nodeN.cluster.local.
  ASSERT_TRUE(
      WaitFor([&] { return NodeCondition(k8s_name_, "SlurmNodeHealthy", "status") == "True"; },
              seconds(30)))
      << Shell(StrCat("kubectl get node ", k8s_name_, " -o yaml")).out << daemon_->LogTail();

  // The ghost: a condition and a Warning that name both names; no reservation.
  ASSERT_TRUE(WaitFor(
      [&] { return NodeCondition(kGhost, "SlurmNodeHealthy", "reason") == "SlurmNodeNotFound"; },
      seconds(30)))
      << Shell(StrCat("kubectl get node ", kGhost, " -o yaml")).out << daemon_->LogTail();
  EXPECT_EQ(NodeCondition(kGhost, "SlurmNodeHealthy", "status"), "Unknown");
  EXPECT_THAT(NodeCondition(kGhost, "SlurmNodeHealthy", "message"),
              HasSubstr("Kubernetes node ghost.cluster.local pairs with Slurm node ghost"));
  std::string events;
  EXPECT_TRUE(WaitFor(
      [&] {
        events = Shell(StrCat("kubectl get events -n default --field-selector "
                              "involvedObject.name=",
                              kGhost,
                              ",reason=SlurmNodeNotFound,type=Warning -o "
                              "jsonpath='{.items[*].message}'"))
                     .out;
        return events.find("pairs with Slurm node ghost ") != std::string::npos;
      },
      seconds(30)))
      << events << daemon_->LogTail();
  EXPECT_EQ(Shell(StrCat("kubectl get pod -n ", kNs, " reserve-", kGhost)).exit_code, 1);
  EXPECT_EQ(RunningReservations(), testbed::TestbedNodeCount());
}

}  // namespace
}  // namespace skb::lending_e2e

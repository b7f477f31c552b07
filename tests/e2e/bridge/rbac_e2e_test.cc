// The chart's least-privilege RBAC, proven on the real apiserver (issue 7): the bridge runs
// as a local process with a token of the chart's ServiceAccount, bound by the chart's
// ClusterRole and Roles (rendered with `helm template`, applied to the testbed), through
// the lend-and-return flow with real kube-scheduler preemption, two replicas electing a
// leader. Then one verb is taken away and the bridge must say Forbidden, clearly, change
// nothing it should not, and recover once the verb is back.
#include <thread>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

using ::testing::AnyOf;
using ::testing::Not;

constexpr char kRelease[] = "skb-rbac";
constexpr char kServiceAccount[] = "skb-rbac-slurm-k8s-bridge";
constexpr char kReservationsRole[] = "skb-rbac-slurm-k8s-bridge-reservations";

// The chart's RBAC objects and its swap-guard admission policy, nothing else (the testbed has
// the PriorityClasses). The reservation namespace is the testbed's (the bridge's
// lending.namespace there), where the chart's reservation Role must then be. The policy is
// the release's own: a chart whose policy did not exempt its own ServiceAccount would refuse
// the bridge's new reservation in every class swap (the testbed's policy, release skb,
// exempts this release's ServiceAccount by name).
std::string RenderRbac() {
  std::string cmd = StrCat("helm template ", kRelease, " ", skb::testbed::SourceDir(),
                           "/helm/slurm-k8s-bridge --namespace slurm-bridge --kube-version 1.37.0",
                           " --set reservationNamespace.name=slurm-bridge");
  for (const char* t : {"serviceaccount", "clusterrole", "clusterrolebinding", "role-reservations",
                        "rolebinding-reservations", "role-leaderelection",
                        "rolebinding-leaderelection", "admission-swap-guard"}) {
    StrAppend(&cmd, " --show-only templates/", t, ".yaml");
  }
  return cmd;
}

class RbacE2E : public LendingE2E {
 protected:
  // Two replicas electing a leader on the chart's Lease Role; the follower keeps its
  // caches warm with the same token.
  RbacE2E() { replicas_ = 2; }

  void SetUp() override {
    ASSERT_TRUE(testbed::TestbedDir().ok()) << testbed::TestbedDir().status().message();
    auto apply = Shell(StrCat(RenderRbac(), " | kubectl apply -f -"), seconds(60));
    ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
    if (take_away_create_) {
      // The reservation Role without "create" on pods.
      auto patch = Shell(StrCat("kubectl patch role -n slurm-bridge ", kReservationsRole,
                                " --type=json -p '[{\"op\":\"replace\",\"path\":\"/rules/0/verbs\","
                                "\"value\":[\"delete\",\"patch\",\"update\"]}]'"));
      ASSERT_EQ(patch.exit_code, 0) << patch.err;
    }
    // A kubeconfig with the ServiceAccount's token and the testbed's CA: nothing of the
    // admin's credentials.
    auto token = RunCommand(
        {"kubectl", "create", "token", "-n", "slurm-bridge", kServiceAccount, "--duration=2h"},
        seconds(30));
    ASSERT_EQ(token.exit_code, 0) << token.err;
    char tmpl[] = "/tmp/skb-rbac-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    rbac_dir_ = tmpl;
    const std::string kubeconfig = StrCat(rbac_dir_, "/kubeconfig");
    const std::string server =
        Trim(Shell("kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}'").out);
    const std::string ca = StrCat(rbac_dir_, "/ca.crt");
    ASSERT_EQ(Shell(StrCat("kubectl config view --minify --raw -o "
                           "jsonpath='{.clusters[0].cluster.certificate-authority-data}' | "
                           "base64 -d > ",
                           ca, " && test -s ", ca))
                  .exit_code,
              0);
    ASSERT_FALSE(server.empty());
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"set-cluster", "testbed", "--server", server, "--certificate-authority", ca},
             {"set-credentials", "bridge", "--token", Trim(token.out)},
             {"set-context", "bridge", "--cluster", "testbed", "--user", "bridge"},
             {"use-context", "bridge"}}) {
      std::vector<std::string> argv = {"kubectl", "config", "--kubeconfig", kubeconfig};
      argv.insert(argv.end(), args.begin(), args.end());
      auto r = RunCommand(argv, seconds(30));
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    extra_overlay_ = {{"kubernetes", {{"kubeconfig", kubeconfig}}}};
    LendingE2E::SetUp();
  }

  void TearDown() override {
    LendingE2E::TearDown();
    Shell(StrCat(RenderRbac(), " | kubectl delete --ignore-not-found -f -"), seconds(60));
    if (!rbac_dir_.empty()) Shell(StrCat("rm -rf ", rbac_dir_));
  }

  bool take_away_create_ = false;
  std::string rbac_dir_;
};

TEST_F(RbacE2E, TheChartsRbacIsEnoughForTheWholeLendAndReturnFlow) {
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();

  CreateInferencePod("infer-rbac");
  ASSERT_TRUE(WaitFor([&] { return PodField("infer-rbac", ".status.phase") == "Running"; },
                      seconds(kGraceSeconds + 40)))
      << Shell("kubectl get pods -A -o wide; squeue").out << daemon_->LogTail();
  const std::string node = PodField("infer-rbac", ".spec.nodeName");
  std::string victim;
  for (const auto& id : jobs_) {
    if (Restarts(id) > 0) victim = id;
  }
  ASSERT_FALSE(victim.empty()) << Shell("squeue").out;
  EXPECT_THAT(Signals(victim), HasSubstr("USR1"));
  EXPECT_THAT(NodeEvents(node), HasSubstr("ReservationReleased"));

  ASSERT_EQ(Shell("kubectl delete pod -n default infer-rbac --wait=false").exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();
  EXPECT_THAT(NodeEvents(node), HasSubstr("ReturnedToSlurm"));
  EXPECT_THAT(daemon_->LogTail(1 << 20), Not(HasSubstr("Forbidden")))
      << "a verb the bridge uses is missing from the chart's RBAC";
  EXPECT_THAT(standby_->LogTail(1 << 20), Not(HasSubstr("Forbidden")));
}

class RbacWithoutCreateE2E : public RbacE2E {
 protected:
  RbacWithoutCreateE2E() {
    take_away_create_ = true;
    wait_for_reservations_ = false;
  }
};

TEST_F(RbacWithoutCreateE2E, AMissingVerbIsAClearForbiddenErrorAndNothingElseChanges) {
  const std::string id = Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string node = JobNode(id);
  // The bridge says what it cannot do, and where: in its log and as a Warning Event.
  ASSERT_TRUE(WaitFor(
      [&] { return daemon_->LogTail(1 << 20).find("Forbidden (403)") != std::string::npos; },
      seconds(30)))
      << daemon_->LogTail();
  const std::string log = daemon_->LogTail(1 << 20);
  EXPECT_THAT(log, ::testing::ContainsRegex(
                       "CreateReservationPod .*Forbidden \\(403\\).*cannot create resource "
                       "\\\\?\"pods\\\\?\""));
  EXPECT_THAT(log, Not(HasSubstr("eyJ"))) << "a token in the log";
  ASSERT_TRUE(WaitFor(
      [&] { return NodeEvents(node).find("CreateReservationPodFailed") != std::string::npos; },
      seconds(30)));
  // And changes nothing else: no reservation, the job runs, no Slurm node drained, the
  // bridge still up and ready to try again.
  std::this_thread::sleep_for(seconds(5));
  EXPECT_EQ(RunningReservations(), 0);
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);
  EXPECT_EQ(Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out), "0")
      << Shell("sinfo -N -o '%N %T %E'").out;
  EXPECT_EQ(Shell(StrCat("curl -sf ", daemon_->HttpBase(), "/healthz")).exit_code, 0);

  // The verb given back: the bridge recovers by itself (refused plans are retried).
  auto fix = Shell(StrCat(RenderRbac(), " | kubectl apply -f -"), seconds(60));
  ASSERT_EQ(fix.exit_code, 0) << fix.err;
  EXPECT_TRUE(
      WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); }, seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out << daemon_->LogTail();
}

}  // namespace
}  // namespace skb::lending_e2e

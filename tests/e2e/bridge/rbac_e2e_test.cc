// SPDX-License-Identifier: Apache-2.0
// The chart's least-privilege RBAC, proven on the real apiserver (issue 7): the bridge runs
// as a local process with a token of the chart's ServiceAccount, bound by the chart's
// ClusterRole and Roles (rendered with `helm template`, applied to the testbed), through
// the lend-and-return flow with real kube-scheduler preemption, two replicas electing a
// leader. Then one verb is taken away and the bridge must say Forbidden, clearly, change
// nothing it should not, and recover once the verb is back. The chart's reservation guard
// (a ValidatingAdmissionPolicy) is installed throughout: the bridge's own deletes pass it,
// an admin's forced delete of a reservation does not. After the flow, what the bridge asked
// of the apiserver (its skb_kubernetes_api_requests_total) is compared with what the chart
// grants, both ways: nothing asked is missing, nothing granted goes unused.
#include <map>
#include <set>
#include <thread>

#include "bridge/observability/exposition_parser.h"
#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

using ::testing::AnyOf;
using ::testing::Not;

constexpr char kRelease[] = "skb-rbac";
constexpr char kServiceAccount[] = "skb-rbac-slurm-k8s-bridge";
constexpr char kReservationsRole[] = "skb-rbac-slurm-k8s-bridge-reservations";

// `helm template` of the chart's `templates` only. The reservation namespace is the
// testbed's (the bridge's lending.namespace there), where the chart's reservation Role and
// guard must then be.
std::string Render(std::initializer_list<const char*> templates) {
  std::string cmd = StrCat("helm template ", kRelease, " ", skb::testbed::SourceDir(),
                           "/helm/slurm-k8s-bridge --namespace slurm-bridge --kube-version 1.37.0",
                           " --set reservationNamespace.name=slurm-bridge");
  for (const char* t : templates) StrAppend(&cmd, " --show-only templates/", t, ".yaml");
  return cmd;
}

// The chart's RBAC objects and its swap-guard admission policy, nothing else (the testbed
// has the PriorityClasses). The policy is the release's own: a chart whose policy did not
// exempt its own ServiceAccount would refuse the bridge's new reservation in every class
// swap (the testbed's policy, release skb, exempts this release's ServiceAccount by name).
std::string RenderRbac() {
  return Render({"serviceaccount", "clusterrole", "clusterrolebinding", "role-reservations",
                 "rolebinding-reservations", "role-leaderelection", "rolebinding-leaderelection",
                 "admission-swap-guard"});
}

// The chart's reservation guard: a ValidatingAdmissionPolicy and its binding.
std::string RenderGuard() { return Render({"admission-reservation-guard"}); }

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
    char tmpl[] = "/tmp/skb-rbac-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    rbac_dir_ = tmpl;
    const std::string kubeconfig = StrCat(rbac_dir_, "/kubeconfig");
    Status written =
        testbed::WriteServiceAccountKubeconfig("slurm-bridge", kServiceAccount, kubeconfig);
    ASSERT_TRUE(written.ok()) << written;
    extra_overlay_ = {{"kubernetes", {{"kubeconfig", kubeconfig}}}};
    LendingE2E::SetUp();
    // The chart's reservation guard, after the fixture's reset (which removes one a crashed
    // run left); admission uses it once the apiserver has loaded it (a server-side dry run
    // of a forced delete is refused then).
    auto guard = Shell(StrCat(RenderGuard(), " | kubectl apply -f -"), seconds(60));
    ASSERT_EQ(guard.exit_code, 0) << guard.out << guard.err;
    if (wait_for_reservations_) {
      ASSERT_TRUE(WaitFor(
          [] {
            return RunCommand({"kubectl", "delete", "pod", "-n", "slurm-bridge", "reserve-node1",
                               "--grace-period=0", "--force", "--dry-run=server"},
                              seconds(30))
                       .err.find("reservation-guard") != std::string::npos;
          },
          seconds(30)));
    }
  }

  void TearDown() override {
    // The guard first: the reset force-deletes what reservations are left.
    Shell(StrCat(RenderGuard(), " | kubectl delete --ignore-not-found -f -"), seconds(60));
    LendingE2E::TearDown();
    Shell(StrCat(RenderRbac(), " | kubectl delete --ignore-not-found -f -"), seconds(60));
    if (!rbac_dir_.empty()) Shell(StrCat("rm -rf ", rbac_dir_));
  }

  // What both replicas asked of the apiserver, from their /metrics, by request
  // "group|resource|verb" (group "" for the core group, resource with its subresource).
  struct ApiUse {
    std::map<std::string, double> requested;  // skb_kubernetes_api_requests_total
    std::map<std::string, double> ended;      // skb_kubernetes_api_responses_total, any code
    std::map<std::string, double> refused;    // the same, code 403
  };
  ApiUse ApiRequests() {
    ApiUse out;
    for (BridgeDaemon* d : {daemon_.get(), standby_.get()}) {
      auto e =
          observability::ParseExposition(Shell(StrCat("curl -s ", d->HttpBase(), "/metrics")).out);
      EXPECT_TRUE(e.ok()) << e.status();
      if (!e.ok()) continue;
      for (const auto& sample : e->samples) {
        const bool requests = sample.name == "skb_kubernetes_api_requests_total";
        if (!requests && sample.name != "skb_kubernetes_api_responses_total") continue;
        const std::string key = StrCat(sample.labels.at("group"), "|", sample.labels.at("resource"),
                                       "|", sample.labels.at("verb"));
        if (requests) {
          out.requested[key] += sample.value;
          continue;
        }
        out.ended[key] += sample.value;
        if (sample.labels.at("code") == "403") out.refused[key] += sample.value;
      }
    }
    return out;
  }

  // "group|resource|verb" of every rule of the ClusterRoles and Roles this release of the
  // chart applied, as the apiserver has them.
  std::set<std::string> Granted() {
    std::set<std::string> out;
    auto r = RunCommand({"kubectl", "get", "clusterroles,roles", "-A", "-l",
                         StrCat("app.kubernetes.io/instance=", kRelease), "-o", "json"},
                        seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return out;
    const nlohmann::json none = nlohmann::json::array();
    for (const auto& role : nlohmann::json::parse(r.out).value("items", none)) {
      for (const auto& rule : role.value("rules", none)) {
        for (const auto& group : rule.value("apiGroups", none)) {
          for (const auto& resource : rule.value("resources", none)) {
            for (const auto& verb : rule.value("verbs", none)) {
              out.insert(StrCat(group.get<std::string>(), "|", resource.get<std::string>(), "|",
                                verb.get<std::string>()));
            }
          }
        }
      }
    }
    return out;
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

  // The chart's RBAC against what the bridge asked of the apiserver in this run, both
  // ways, by API group, resource and verb (not by namespace: the Roles' namespaces are
  // checked by the apiserver, and a write refused there is a 403, which fails below).
  //
  // Granted but not asked in this flow, with the path that needs it.
  static const std::map<std::string, std::string> kGrantedForOtherPaths = {
      {"|events|patch",
       "an Event that repeats is patched (count, lastTimestamp), not created again: this "
       "flow usually repeats one (2 or 3 patches a run), but nothing in it has to"},
      {"|pods/eviction|create",
       "a pod bound to a node while its reservation was replaced that may not take its Slurm "
       "jobs is evicted (FailedReservationE2E.APodPastTheGuardsDuringASwapIsEvicted...): "
       "not part of a plain lend and return"},
  };
  // Asked but deliberately not granted, with why the refusal is expected: every answer
  // must be 403, and the bridge must carry on.
  static const std::map<std::string, std::string> kRefusedOnPurpose = {
      {"scheduling.k8s.io|priorityclasses|get",
       "the chart creates the PriorityClasses and grants no access to them; a new leader "
       "checks them, and reads 403 as 'the chart manages them' (EnsurePriorityClasses)"},
      {"resource.k8s.io|devicetaintrules|list",
       "with gpu_sharing off the daemon looks once for holds a run with it on left, to wind "
       "them down (Controller::WindDownNeeded); the chart grants DRA rights only with "
       "gpu_sharing on or rbac.keepGpuSharingRules, and 403 reads as 'none to wind down'"},
  };
  const ApiUse use = ApiRequests();
  const std::set<std::string> granted = Granted();
  ASSERT_FALSE(granted.empty());
  // The informers' watches are open at this point: counted as they started.
  EXPECT_GT(use.requested.count("|nodes|watch"), 0u);
  EXPECT_GT(use.requested.count("|pods|watch"), 0u);
  for (const auto& [request, count] : use.requested) {
    if (count <= 0 || granted.count(request) > 0 || kRefusedOnPurpose.count(request) > 0) continue;
    ADD_FAILURE() << request << " (group|resource|verb) asked " << count
                  << " times but not granted by the chart";
  }
  for (const auto& [request, why] : kRefusedOnPurpose) {
    EXPECT_EQ(granted.count(request), 0u) << request << " is granted now: drop it from "
                                          << "kRefusedOnPurpose (" << why << ")";
    const auto asked = use.requested.find(request);
    EXPECT_TRUE(asked != use.requested.end() && asked->second > 0)
        << request << " was never asked: drop it from kRefusedOnPurpose";
    const auto ended = use.ended.find(request);
    const auto refused = use.refused.find(request);
    EXPECT_TRUE(ended != use.ended.end() && ended->second > 0 && refused != use.refused.end() &&
                refused->second == ended->second)
        << request
        << " was not always answered 403: " << (ended == use.ended.end() ? 0 : ended->second)
        << " answers, " << (refused == use.refused.end() ? 0 : refused->second) << " of them 403";
  }
  for (const auto& [request, count] : use.refused) {
    EXPECT_TRUE(count <= 0 || kRefusedOnPurpose.count(request) > 0)
        << request << " (group|resource|verb) answered 403 " << count << " times";
  }
  int used = 0;
  for (const std::string& grant : granted) {
    const auto asked = use.requested.find(grant);
    if (asked != use.requested.end() && asked->second > 0) {
      ++used;
      continue;
    }
    if (kGrantedForOtherPaths.count(grant) > 0) continue;
    ADD_FAILURE() << grant << " (group|resource|verb) granted by the chart but never asked "
                  << "for in the lend-and-return flow: drop it from the chart, or list it in "
                  << "kGrantedForOtherPaths with the path that needs it";
  }
  for (const auto& [grant, why] : kGrantedForOtherPaths) {
    EXPECT_EQ(granted.count(grant), 1u)
        << grant << " is no longer granted: drop it from kGrantedForOtherPaths (" << why << ")";
  }
  std::printf("RBAC: %zu grants, %d of them asked in this run; %zu kinds of request asked:\n",
              granted.size(), used, use.requested.size());
  for (const auto& [request, count] : use.requested) {
    std::string what = granted.count(request) > 0 ? "granted" : "not granted";
    if (const auto refused = use.refused.find(request); refused != use.refused.end()) {
      StrAppend(&what, ", ", static_cast<int64_t>(refused->second), " answered 403");
    }
    std::printf("  %-45s %6.0f asked, %s\n", request.c_str(), count, what.c_str());
  }
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
  // bridge still up and ready to try again -- at every look for 5 s.
  EXPECT_EQ(HoldsFor(
                [&] {
                  if (RunningReservations() != 0) return std::string("a reservation runs");
                  if (JobField(id, "JobState") != "RUNNING")
                    return StrCat("job ", id, " left RUNNING");
                  if (Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out) != "0") {
                    return std::string("a Slurm node was drained by the bridge");
                  }
                  return std::string();
                },
                seconds(5), std::chrono::milliseconds(500)),
            "");
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

// The chart's reservation guard on the real apiserver. An admin's `scripts/testbed
// force-delete` (kubectl delete --grace-period=0 --force), `--now` and an eviction with its
// own grace period are refused with a message that says why and what to do instead; the
// reservation keeps running and the job is untouched. A plain delete is a lend as before;
// while that lend runs, the reservation (Terminating: what an admin calls "stuck") still
// cannot be forced. The bridge's own deletes (release, grace 1) and the kubelet's final
// delete of the terminal pod pass.
TEST_F(RbacE2E, AForcedDeleteOfAReservationIsRefusedAndAPlainOneLendsTheNode) {
  const std::string id = Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  const std::string node = JobNode(id);
  const std::string name = StrCat("reserve-", node);
  auto field = [&](const std::string& jsonpath) {
    return Trim(RunCommand({"kubectl", "get", "pod", "-n", "slurm-bridge", name, "-o",
                            "jsonpath={" + jsonpath + "}"},
                           seconds(30))
                    .out);
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        return field(".spec.priorityClassName") == "slurm-preemptible" &&
               field(".status.phase") == "Running" && field(".metadata.deletionTimestamp").empty();
      },
      seconds(60)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  const std::string uid = field(".metadata.uid");
  const std::string refusal = StrCat("denied request: reservation pod slurm-bridge/", name,
                                     " holds the GPUs of Slurm jobs until slurm-k8s-bridge "
                                     "releases it: deleting it with gracePeriodSeconds=");

  auto forced = RunCommand({StrCat(skb::testbed::SourceDir(), "/scripts/testbed"), "force-delete",
                            StrCat("slurm-bridge/", name)},
                           seconds(60));
  EXPECT_NE(forced.exit_code, 0);
  EXPECT_THAT(forced.out + forced.err, HasSubstr(StrCat(refusal, "0 (its own is 4500s)")));
  EXPECT_THAT(forced.out + forced.err, HasSubstr("Delete it without --force/--grace-period/--now"));
  auto now =
      RunCommand({"kubectl", "delete", "pod", "-n", "slurm-bridge", name, "--now", "--wait=false"},
                 seconds(30));
  EXPECT_NE(now.exit_code, 0);
  EXPECT_THAT(now.err, HasSubstr(StrCat(refusal, "1 ")));
  auto evict = RunCommand(
      {"kubectl", "create", "--raw",
       StrCat("/api/v1/namespaces/slurm-bridge/pods/", name, "/eviction"), "-f", "-"},
      seconds(30),
      StrCat(R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")", name,
             R"(","namespace":"slurm-bridge"},"deleteOptions":{"gracePeriodSeconds":0}})"));
  EXPECT_NE(evict.exit_code, 0);
  EXPECT_THAT(evict.err, HasSubstr("an eviction may not shorten its grace period"));
  // The bridge's ServiceAccount is exempt (a server-side dry run: admitted, nothing done).
  auto as_bridge = RunCommand(
      {"kubectl", "delete", "pod", "-n", "slurm-bridge", name, "--grace-period=0", "--force",
       "--dry-run=server", StrCat("--as=system:serviceaccount:slurm-bridge:", kServiceAccount)},
      seconds(30));
  EXPECT_EQ(as_bridge.exit_code, 0) << as_bridge.err;
  // Nothing changed.
  EXPECT_EQ(field(".metadata.uid"), uid);
  EXPECT_EQ(field(".metadata.deletionTimestamp"), "");
  EXPECT_EQ(field(".status.phase"), "Running");
  EXPECT_EQ(JobField(id, "JobState"), "RUNNING");
  EXPECT_EQ(Restarts(id), 0);

  // A plain delete: a lend. Terminating, it still cannot be forced.
  auto plain = RunCommand({"kubectl", "delete", "pod", "-n", "slurm-bridge", name, "--wait=false"},
                          seconds(30));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto again = RunCommand({StrCat(skb::testbed::SourceDir(), "/scripts/testbed"), "force-delete",
                           StrCat("slurm-bridge/", name)},
                          seconds(60));
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.out + again.err, HasSubstr(refusal));
  // The lend completes: requeued, released by the bridge, the terminal pod deleted by its
  // kubelet; then the node returns with a new reservation.
  ASSERT_TRUE(
      WaitFor([&] { return NodeEvents(node).find("ReservationReleased") != std::string::npos; },
              seconds(kGraceSeconds + 40)))
      << NodeEvents(node) << daemon_->LogTail();
  EXPECT_TRUE(WaitFor([&] { return field(".metadata.uid") != uid; }, seconds(30)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  EXPECT_GE(Restarts(id), 1);
  EXPECT_THAT(Shell(StrCat("scontrol show job ", id)).out,
              ::testing::Not(::testing::ContainsRegex("JobState=(FAILED|CANCELLED)")));
  EXPECT_THAT(daemon_->LogTail(1 << 20), Not(HasSubstr("reservation-guard")))
      << "the guard refused one of the bridge's own requests";
}

}  // namespace
}  // namespace skb::lending_e2e

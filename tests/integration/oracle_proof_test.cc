// SPDX-License-Identifier: Apache-2.0
// The invariant oracle (tests/testbed/oracle.h) finds what it must: a real double booking
// made by hand on the testbed, no bridge running. Built twice: oracle_proof_dra_test (label
// dra: a Slurm job holding all of node1's GPUs and a claim kube-scheduler allocates there, no
// DeviceTaintRule keeping it off them) and oracle_proof_test (label integration, device-plugin
// mode: the same job and a GPU pod bound to node1 by spec.nodeName), the first with
// SKB_ORACLE_PROOF_DRA defined. Each skips itself on the other mode's testbed. Each asserts none
// before the Kubernetes side exists and one naming the GPU (or node) within 2 s of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "src/base/strings.h"
#include "tests/testbed/oracle.h"
#include "tests/testbed/testbed_support.h"

namespace skb::testbed {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using Steady = std::chrono::steady_clock;

class OracleProof : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(TestbedDir().ok()) << TestbedDir().status().message();
    ns_ = StrCat("oracle-", std::random_device{}() % 100000);
    // Its double bookings are made on purpose: kept out of the run's sampler report, whose
    // double-booked column means a bug.
    unsetenv("SKB_SAMPLER_REPORT");
  }
  void TearDown() override {
    if (oracle_) {
      oracle_->Stop();
      std::printf("%s, %d violations, first: %s\n", oracle_->RateReport().c_str(),
                  oracle_->violations(), oracle_->first_violation().c_str());
    }
    if (!job_.empty()) RunCommand({"scancel", job_}, seconds(30));
    if (made_ns_) DeleteTestNamespace(ns_);
    // The job's epilog: the next test finds node1 free.
    WaitFor([&] { return job_.empty() || SqueueState(job_).empty(); }, seconds(60));
  }

  // A job holding every GPU of node1, RUNNING.
  void RunJobOnNode1(const std::string& gres) {
    CommandResult r = RunCommand({"sbatch", "--parsable", "--gres", gres, "-w", "node1", "-p",
                                  "gpu", "-o", "/dev/null", "--wrap", "sleep 600"},
                                 seconds(30));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    job_ = Trim(r.out);
    ASSERT_TRUE(WaitFor([&] { return SqueueState(job_) == "RUNNING"; }, seconds(60)))
        << Shell("squeue; scontrol show job " + job_).out;
  }

  void MakeNamespace() {
    Status s = CreateNamespace(ns_);
    ASSERT_TRUE(s.ok()) << s;
    made_ns_ = true;
  }

  // With only Slurm's side there, for 2 s: samples taken, none a violation.
  void ExpectQuietFor2s() {
    const int before = oracle_->samples();
    std::this_thread::sleep_for(seconds(2));
    EXPECT_GT(oracle_->samples(), before + 5) << oracle_->RateReport();
    EXPECT_EQ(oracle_->violations(), 0) << oracle_->first_violation();
  }

  // Polls `happened` (a kubectl read, ~0.1 s) and the oracle until the oracle reports a
  // violation; returns how long after the last read that did not yet see the event the
  // oracle reported it (an upper bound of its latency), or -1 after 60 s. *seen: whether a
  // read saw the event.
  double SecondsToDetection(const std::function<bool()>& happened, bool* seen) {
    const auto limit = Steady::now() + seconds(60);
    auto not_yet = Steady::now();  // the start of the last read that did not see it
    *seen = false;
    while (Steady::now() < limit) {
      if (oracle_->violations() > 0) {
        return std::chrono::duration<double>(Steady::now() - not_yet).count();
      }
      if (!*seen) {
        const auto start = Steady::now();
        if (happened()) {
          *seen = true;
        } else {
          not_yet = start;
        }
      } else {
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
    return -1;
  }

  std::string ns_;
  bool made_ns_ = false;
  std::string job_;
  std::unique_ptr<oracle::Oracle> oracle_;
};

#ifdef SKB_ORACLE_PROOF_DRA
TEST_F(OracleProof, DraAJobsGpuAllocatedToAClaimIsFoundWithinTwoSeconds) {
  if (!DraMode()) GTEST_SKIP() << kNeedsDraMode;
  // No bridge: nothing keeps kube-scheduler off the GPUs Slurm holds.
  Shell(
      "kubectl delete devicetaintrules -l app.kubernetes.io/managed-by=slurm-k8s-bridge "
      "--ignore-not-found");
  ASSERT_NO_FATAL_FAILURE(MakeNamespace());
  oracle::OracleOptions o;
  o.per_device = true;
  oracle_ = std::make_unique<oracle::Oracle>(o);
  ASSERT_NO_FATAL_FAILURE(RunJobOnNode1("gpu:h100:8"));
  ExpectQuietFor2s();

  CommandResult r = RunCommand({"kubectl", "apply", "-n", ns_, "-f", "-"}, seconds(30), R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: v1
kind: Pod
metadata: {name: claimer}
spec:
  nodeSelector: {kubernetes.io/hostname: node1}
  tolerations: [{operator: Exists}]
  resourceClaims: [{name: gpu, resourceClaimName: one-gpu}]
  containers:
  - name: main
    image: registry.invalid/inference:1
    resources: {claims: [{name: gpu}]}
)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string device;
  auto allocated = [&] {
    json c = KubectlGetJson({"resourceclaim", "-n", ns_, "one-gpu"});
    if (c.is_null() || !c["status"].contains("allocation")) return false;
    device = c["status"]["allocation"]["devices"]["results"][0].value("device", "");
    return true;
  };
  bool seen = false;
  const double took = SecondsToDetection(allocated, &seen);
  ASSERT_GE(took, 0) << "no violation in 60 s: " << oracle_->RateReport() << "\n"
                     << Shell(StrCat("kubectl get resourceclaim -n ", ns_, " -o yaml")).out;
  if (!seen) {
    ASSERT_TRUE(WaitFor(allocated, seconds(10)));
  }
  std::printf(
      "claim allocated %s; the oracle reported it within %.2f s of the last read "
      "that did not see the allocation\n",
      device.c_str(), took);
  EXPECT_LE(took, 2.0);
  ASSERT_THAT(device, ::testing::StartsWith("gpu-"));
  const std::string gpu = StrCat("node1/gpu", device.substr(4));
  const std::string first = oracle_->first_violation();
  EXPECT_THAT(first, HasSubstr(StrCat("GPU ", gpu, ": ")));
  EXPECT_THAT(first, HasSubstr(StrCat("Slurm job ", job_, " (RUNNING; GRES index ",
                                      device.substr(4), " on node1)")));
  EXPECT_THAT(first, HasSubstr(StrCat("claim ", ns_, "/one-gpu")));

  // A second claim on the same device, allocated by hand: two claims on one GPU.
  r = RunCommand({"kubectl", "apply", "-n", ns_, "-f", "-"}, seconds(30), R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: twin}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand({"kubectl", "patch", "resourceclaim", "twin", "-n", ns_, "--subresource=status",
                  "--type=merge", "-p",
                  StrCat(R"({"status":{"allocation":{"devices":{"results":[)",
                         R"({"request":"gpu","driver":"gpu.nvidia.com","pool":"node1","device":")",
                         device, R"("}]}}}})")},
                 seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Its lines come after the first; look at a fresh oracle's.
  oracle_->Stop();
  EXPECT_TRUE(oracle_->RateCheck(0.9));
  oracle_ = std::make_unique<oracle::Oracle>(o);
  ASSERT_TRUE(WaitFor([&] { return oracle_->samples() > 3; }, seconds(10)))
      << oracle_->RateReport();
  oracle_->Stop();
  // Per sample: the job against each claim, and the two claims.
  EXPECT_EQ(oracle_->violations() % 3, 0) << oracle_->first_violation();
  EXPECT_GE(oracle_->violations(), 3 * oracle_->samples());
}

#else
TEST_F(OracleProof, DevicePluginAJobsNodeGivenToABoundPodIsFoundWithinTwoSeconds) {
  if (DraMode()) GTEST_SKIP() << "device-plugin mode only (the dra variant is the other test)";
  ASSERT_NO_FATAL_FAILURE(MakeNamespace());
  oracle_ = std::make_unique<oracle::Oracle>();
  ASSERT_NO_FATAL_FAILURE(RunJobOnNode1("gpu:8"));
  ExpectQuietFor2s();

  json pod = NodeNamePod("bound", "oracle", "node1", 1);
  pod["metadata"]["namespace"] = ns_;
  CommandResult r =
      RunCommand({"kubectl", "create", "-n", ns_, "-f", "-"}, seconds(30), pod.dump());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto running = [&] {
    json p = KubectlGetJson({"pod", "-n", ns_, "bound"});
    return !p.is_null() && p["status"].value("phase", "") == "Running";
  };
  bool seen = false;
  const double took = SecondsToDetection(running, &seen);
  ASSERT_GE(took, 0) << "no violation in 60 s: " << oracle_->RateReport() << "\n"
                     << Shell(StrCat("kubectl get pod -n ", ns_, " bound -o yaml")).out;
  std::printf(
      "pod running; the oracle reported it within %.2f s of the last read that did "
      "not see it Running\n",
      took);
  EXPECT_LE(took, 2.0);
  const std::string first = oracle_->first_violation();
  EXPECT_THAT(first, HasSubstr("node node1 ("));
  EXPECT_THAT(first, HasSubstr(StrCat("Slurm job ", job_, " (RUNNING)")));
  EXPECT_THAT(first, HasSubstr(StrCat("pod ", ns_, "/bound [nvidia.com/gpu=1]")));
}
#endif

}  // namespace
}  // namespace skb::testbed

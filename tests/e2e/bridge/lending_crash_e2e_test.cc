// SPDX-License-Identifier: Apache-2.0
// Invariant 3 (docs/architecture.md) at every step of a lend and a return, end to end: the bridge
// is killed right after each step takes effect (the SKB_TEST_CRASH_AFTER hook SIGKILLs the daemon
// after the first action with that Event reason), then restarted; the flow must finish as if
// nothing happened -- the inference pod runs, the victim is requeued (never lost), the node
// returns, no finalizer is left, no bridge drain without its cause, and the invariant-1 sampler
// sees no double booking throughout.
#include <cstdlib>
#include <thread>

#include "tests/e2e/bridge/lending_fixture.h"

namespace skb::lending_e2e {
namespace {

using ::testing::AnyOf;
using ::testing::Not;

struct Step {
  const char* reason;  // the Event reason of the action after which the bridge dies
  bool returning;      // a step of the return to Slurm (after the inference pod left)
};

void PrintTo(const Step& s, std::ostream* os) { *os << s.reason; }

class CrashAtEveryStepE2E : public LendingE2E, public ::testing::WithParamInterface<Step> {};

TEST_P(CrashAtEveryStepE2E, TheRestartedBridgeFinishesTheFlow) {
  const Step step = GetParam();
  for (int i = 0; i < testbed::TestbedNodeCount(); ++i) Submit("gpu");
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(60))) << Shell("squeue").out;
  ASSERT_TRUE(WaitFor([&] { return ReservationsSettledAt("slurm-preemptible"); }, seconds(60)));

  // The same bridge, armed to die after the step.
  ASSERT_NO_FATAL_FAILURE(RestartArmedToCrashAfter(step.reason));

  CreateInferencePod("infer-k");
  if (step.returning) {
    ASSERT_TRUE(WaitFor([&] { return PodField("infer-k", ".status.phase") == "Running"; },
                        seconds(kGraceSeconds + 40)))
        << Shell("kubectl get pods -A -o wide; squeue").out << daemon_->LogTail();
    ASSERT_EQ(Shell("kubectl delete pod -n default infer-k --wait=false").exit_code, 0);
  }
  ASSERT_NO_FATAL_FAILURE(AwaitCrashThenRestart(
      step.reason, seconds(step.returning ? kCooldownSeconds + 60 : kGraceSeconds + 40)));
  if (!step.returning) {
    ASSERT_TRUE(WaitFor([&] { return PodField("infer-k", ".status.phase") == "Running"; },
                        seconds(kGraceSeconds + 40)))
        << Shell("kubectl get pods -A -o wide; squeue; sinfo -N -o '%N %T %E'").out
        << daemon_->LogTail();
    ASSERT_EQ(Shell("kubectl delete pod -n default infer-k --wait=false").exit_code, 0);
  }
  ASSERT_TRUE(WaitFor([&] { return AllRunning(); }, seconds(kCooldownSeconds + 60)))
      << Shell("squeue; sinfo -N -o '%N %T %E'").out << daemon_->LogTail();

  // The victim: requeued once, never lost.
  int requeued = 0;
  for (const auto& id : jobs_) {
    EXPECT_THAT(JobField(id, "JobState"), Not(AnyOf("FAILED", "CANCELLED"))) << id;
    requeued += Restarts(id) > 0;
  }
  EXPECT_EQ(requeued, 1)
      << "what the scheduler preempted:\n"
      << Shell("kubectl get events -A --field-selector reason=Preempted").out
      << "what the bridge did:\n"
      << Shell(StrCat("grep -E 'action|test_hook' ", daemon_->dir(), "/daemon.log")).out;
  // Invariant 3: no stuck finalizer, no bridge drain without its cause, no lend left.
  EXPECT_TRUE(
      WaitFor([&] { return RunningReservations() == testbed::TestbedNodeCount(); }, seconds(30)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  // A reservation may be Terminating for a moment (the requeued job running again swaps
  // its node's reservation to the preemptible class); none may stay so.
  EXPECT_TRUE(WaitFor(
      [&] {
        return Trim(Shell("kubectl get pods -n slurm-bridge --no-headers | grep -c Terminating")
                        .out) == "0";
      },
      seconds(30)))
      << Shell("kubectl get pods -n slurm-bridge -o wide").out;
  EXPECT_EQ(Trim(Shell("sinfo -h -N -o '%E' | grep -c k8s-bridge").out), "0")
      << Shell("sinfo -N -o '%N %T %E'").out;
  EXPECT_TRUE(WaitFor(
      [&] {
        return Trim(Shell("kubectl get nodes -o yaml | grep -c 'slurm-k8s-bridge.io/lent-at'")
                        .out) == "0";
      },
      seconds(30)));
}

// The lend: record, drain, signal, requeue, release; the return: create the reservation,
// resume the Slurm node.
INSTANTIATE_TEST_SUITE_P(
    Steps, CrashAtEveryStepE2E,
    ::testing::Values(Step{"LendingToKubernetes", false}, Step{"SlurmNodeLent", false},
                      Step{"SlurmJobsSignalled", false}, Step{"SlurmJobsPreempted", false},
                      Step{"ReservationReleased", false}, Step{"ReturningToSlurm", true},
                      Step{"SlurmNodeReturned", true}),
    [](const auto& p) { return std::string(p.param.reason); });

}  // namespace
}  // namespace skb::lending_e2e

// SPDX-License-Identifier: Apache-2.0
// `slurm-k8s-bridge --decommission`: reads Kubernetes and Slurm into the facts the pure
// decision (src/decommission/decommission.h) takes, refuses while a bridge still acts, and
// carries out the plan step by step, each step re-reading what it changes. Run by the
// daemon's binary because it needs both of the daemon's clients (libslurm and the
// kubeconfig or in-cluster account) and reads the same config file for the names it acts
// on (the reservations' namespace, the node-name pairing, the Lease).
//
//   Decommissioner d({.config = &cfg, .kube = kube, .slurm = slurm, .clock = &clock});
//   ASSIGN_OR_RETURN(Outcome out, d.Run(/*dry_run=*/false, say));   // say(line) per line
//   return out.failed.empty() ? 0 : 1;                              // again until 0
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bridge/slurm/slurm_client.h"
#include "k8s/event_recorder.h"
#include "k8s/kube_client.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/config/config.h"
#include "src/decommission/decommission.h"

namespace skb::bridge::decommission {

using skb::decommission::Facts;
using skb::decommission::Plan;
using skb::decommission::Step;

struct Options {
  const config::Config* config = nullptr;
  k8s::KubeClient* kube = nullptr;
  slurm::SlurmClient* slurm = nullptr;
  const Clock* clock = nullptr;
  // Go on although the leader Lease says a bridge renewed it within its duration (a bridge
  // that died without releasing it, when waiting out the Lease is not wanted).
  bool force = false;
  // Where each node's outcome is recorded (a Normal BridgeDecommissioned Event on the Node,
  // or a Warning DecommissionIncomplete naming the step that failed); null: none.
  k8s::EventRecorder* events = nullptr;
  // How long the run waits for the released reservation pods to be gone (their kubelet
  // ends them at once; a pod still there then is a failed step: run again).
  std::chrono::milliseconds release_wait{std::chrono::seconds(60)};
};

struct Outcome {
  Plan plan;
  std::vector<std::pair<std::string, Status>> failed;  // the step's text, why
  int changed = 0;                                     // steps that changed something
};

class Decommissioner {
 public:
  explicit Decommissioner(Options options);

  // Everything of the bridge in Kubernetes and Slurm, as facts. Unavailable when either side
  // cannot be read (nothing is changed then).
  StatusOr<Facts> ReadFacts();

  // FailedPrecondition while the leader Lease is held and was renewed within its duration:
  // a running bridge would make again what the decommission removes.
  Status CheckNoBridgeActs();

  // Reads, plans, says the plan (one line each to `say`), and unless dry_run runs every
  // step in order, saying each one's outcome. A failed step is said and recorded; the steps
  // after it still run unless it was a protecting step (a cordon or a drain): then nothing
  // that it should have protected is released.
  StatusOr<Outcome> Run(bool dry_run, const std::function<void(std::string_view)>& say);

  // One step, idempotent: kChanged or kUnchanged as it found things; an error otherwise.
  StatusOr<slurm::WriteOutcome> RunStep(const Step& step);

 private:
  void RecordOutcomes(const Outcome& out);
  void WaitForReleasedPods(Outcome& out, const std::function<void(std::string_view)>& say);

  Options opts_;
};

// The process's part: builds the clients as the daemon does (the config's kubeconfig or the
// in-cluster account, libslurm with slurm.conf), runs, prints each line on stdout and the
// failures on stderr. Returns the exit status: 0 nothing of the bridge left (or, dry run,
// planned), 1 a step failed, 2 it could not start.
int DecommissionMain(const config::Config& cfg, bool dry_run, bool force);

}  // namespace skb::bridge::decommission

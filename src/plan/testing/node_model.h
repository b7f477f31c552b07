// SPDX-License-Identifier: Apache-2.0
// A model of the executor and the kubelet on one node, for the planners' tests and the
// trace simulator (bench/sim): ApplyAction carries a planned action out on a ManagedNode the way
// bridge/reconcile's ActionExecutor carries it out on the cluster, and checks the
// source-side precondition the executor checks (ownership.h's executor contract; a
// resume only over the expected reason). With it a test checks that a plan converges
// (planning again on the result asks for nothing more), and the simulator drives the
// daemon's planner over simulated time with one model of the transitions.
//
// Only what the planners read back is modelled: the Slurm node's drain and features,
// the Kubernetes node's annotations, labels, taints and conditions, the pods' metadata and
// phase, the jobs on the node. Slurm's and kube-scheduler's own decisions (which job runs
// where, which pod binds) are the caller's.
//
//   plan::testing::Log log;
//   for (const plan::Action& a : plan::PlanNode(n, cfg, now).actions) {
//     RETURN_IF_ERROR(plan::testing::ApplyAction(a, &n, cfg, now, &log));
//   }
//   plan::testing::RunKubelet(&n, now);
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/config/config.h"
#include "src/inventory/managed_node.h"
#include "src/plan/action.h"
#include "src/slurm/types.h"

namespace skb::plan::testing {

// What the world records while the model carries actions out.
struct Log {
  std::map<uint32_t, int> signals;      // job -> times signalled
  std::map<uint32_t, int> preemptions;  // job -> times preempted
  std::vector<std::string> preemptors;  // for whom each PreemptSlurmJobs was
  // Each preempted job as it left the node, its preemption recorded in its admin comment.
  std::vector<slurm::JobView> requeued;
  std::map<std::string, int> evictions;  // "ns/name" -> evictions asked (quota reclaim)
  // The maintenance cycle: reboots asked, the Slurm reservations that exist, check jobs
  // submitted (the caller runs them: Slurm's decision).
  int reboots = 0;
  std::set<std::string> reservations;
  int check_jobs = 0;
  // Set by the caller: jobs whose batch script does not trap the checkpoint signal. They
  // die of it (FAILED, exit signal) and move to the node's ended_jobs.
  std::set<uint32_t> untrapped;
};

// The pod the apiserver makes of a reservation spec.
inventory::GpuPod PodOfSpec(const ReservationSpec& spec, std::string phase, std::string uid);

// Carries `a` out on `n` at `now`. FailedPrecondition when the executor's source-side check
// fails (a release while a job holds the node, a resume over another reason, a create over
// an existing pod, a patch of a pod that is gone): the planner asked for something unsafe.
Status ApplyAction(const Action& a, inventory::ManagedNode* n, const config::Config& cfg,
                   Clock::TimePoint now, Log* log);

// The kubelet and the apiserver at `now`: a released, deleted pod goes away; a pod past its
// kill deadline turns Failed (the finalizer keeps the object); a Pending reservation runs
// (started = now) if the node's GPUs are free in Kubernetes' count, else the kubelet
// refuses it (Failed).
void RunKubelet(inventory::ManagedNode* n, Clock::TimePoint now);

// The node carries a taint with this key.
bool HasTaint(const inventory::ManagedNode& n, std::string_view key);

}  // namespace skb::plan::testing

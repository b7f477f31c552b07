// SPDX-License-Identifier: Apache-2.0
// A discrete-event simulator that replays a GPU-cluster trace (trace.h) in simulated time
// and compares a static Slurm/Kubernetes split with the bridge's one pool (the
// utilization study). The bridge's part is the daemon's own code, not a copy:
//   node mode (kBridge)  every node carries the objects the daemon reads back (the Slurm
//                        node, the Kubernetes node, its reservation pod) in an
//                        inventory::ManagedNode; after every event that concerns a node,
//                        and at the plan's recheck_at, the simulation plans it with
//                        plan::PlanNode (src/plan/planner.h: ownership, health, features)
//                        and carries the actions out with the executor and kubelet model of
//                        src/plan/testing/node_model.h until the plan is empty. Reservation
//                        pods and their classes, the lend (drain, checkpoint signal, grace,
//                        preemption and its anti-thrash record, release), the idle record
//                        and the return are the planner's; the simulation only reacts to
//                        what the actions did (a preempted job loses its work since its
//                        checkpoint and is requeued, a drained node takes no job, a lend
//                        whose reservation is gone starts its pods).
//   GPU mode (kBridgeGpu) src/devices/device_plan.h (ChooseNode, PlanGive, PlanNode).
// What is not the bridge's is modelled here: Slurm, kube-scheduler (including its
// preemption of a reservation: ownership::PickVictims over the reservation pods'
// priorities and start times), the kubelet's timing and the jobs' checkpoints.
//
// Models (deliberately simple; bench/sim/README.md says more):
//   * Mapping: LS tasks are inference pods, every other GPU task a Slurm training job.
//     Tasks without a GPU, or never scheduled in the recorded cluster, are skipped.
//     Arrival = creation_time / compress; run time = deletion_time - scheduled_time
//     (a task still running at the trace's end runs to the trace's last deletion).
//   * Slurm: FIFO queue by submit time (a requeued job keeps its place) with "backfill
//     lite": every pass walks the whole queue and starts each job that fits, first fit in
//     node-file order on nodes Slurm owns and has not drained; a job that does not fit
//     does not block the ones behind it (no reservations: Slurm's backfill needs time
//     limits the trace lacks). Whole GPUs: a fractional training task holds one GPU.
//   * kube-scheduler: FIFO pending queue; a pod fits a node Kubernetes owns when one GPU
//     has its share free (fractional pods are packed best-fit onto one GPU) or enough
//     whole GPUs are free; among fitting nodes LeastAllocated (kube-scheduler's default
//     score) or MostAllocated, ties by node order.
//   * Bridge (node mode): every node starts Slurm's, and the planner gives it a
//     reservation pod. A pod that fits no lent node either joins a node being lent that
//     still has room (kube-scheduler's nominated node) or preempts: the victim is the
//     running reservation PickVictims takes among those on untainted nodes with enough
//     GPUs (lowest priority, then newest pod, then name); it is deleted with its
//     termination grace and the pod is nominated to its node. From there the planner
//     acts as in the daemon; its actions take effect at once (the executor's and the
//     kubelet's latency is not modelled), and the pods start `lend_overhead` after the
//     reservation is gone.
//   * GPU granularity (kBridgeGpu): every GPU starts Slurm's; Slurm jobs take the lowest
//     free indices. A pod that fits no lifted GPU asks devices::ChooseNode (idle GPUs, then
//     preemptible jobs' GPUs, best fit), and PlanNode drives every step after it on the
//     simulated cluster: a placeholder (the node's top-priority Slurm job, which keeps free
//     GPUs back for itself) starts on the lowest free indices once its victims are
//     requeued; their holds are lifted; the pod starts lend_overhead later; an idle
//     placeholder returns after ShouldReturn (held first, ended once no pod uses it).
//   * Checkpoints: a running job checkpoints every `checkpoint_interval` of its own run
//     time, the first one after a random fraction of the interval (seeded per job run).
//     A preempted job resumes from its last checkpoint; the GPU time since then is lost.
//     With `checkpoint_on_signal` the job also checkpoints when it gets the signal, so
//     only the grace period is lost.
//   * Static splits: Kubernetes gets whole nodes, largest first (so every inference pod
//     fits), until they hold the peak (or the time-average) of concurrent inference GPU
//     demand as recorded (arrival .. arrival + run time); Slurm gets the rest.
//
// Figures are measured over the trace window [0, horizon), horizon = the latest arrival +
// run time, so a mode that pushes work past the window shows lower allocation.
//
//   StatusOr<sim::Result> r = sim::Simulate(tasks, nodes, sim::Mode::kBridge, options);
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/sim/trace.h"
#include "src/base/status.h"
#include "src/config/config.h"

namespace skb::sim {

// kBridge lends whole nodes (node granularity) through the daemon's planner
// (plan::PlanNode); kBridgeGpu moves single GPUs (DRA clusters) through src/devices:
// ChooseNode/PlanGive for every pending pod no lifted GPU serves, PlanNode for every step
// after (signal, preempt, lift the hold, idle record, return).
enum class Mode { kStaticPeak, kStaticAvg, kBridge, kBridgeGpu };
std::string_view ModeName(Mode m);  // "static-peak", "static-avg", "bridge", "bridge-gpu"

enum class K8sScore { kLeastAllocated, kMostAllocated };

struct Options {
  uint64_t seed = 1;
  // Arrivals are divided by this (run times are kept): >1 raises the offered load.
  double compress = 1;
  std::chrono::seconds checkpoint_interval{30 * 60};
  // Draw each job run's first checkpoint uniformly in (0, interval]; false: exactly at
  // `interval` (tests).
  bool random_checkpoint_phase = true;
  bool checkpoint_on_signal = false;
  // From the last job leaving a lent node to its pods starting: reservation release,
  // binding, pod start. An assumption (the end-to-end preemption benchmark measures it).
  std::chrono::milliseconds lend_overhead{5000};
  K8sScore k8s_score = K8sScore::kLeastAllocated;
  // Points of the allocation time series over the window.
  int series_points = 400;
  // The bridge's configuration: `lending` (grace, cooldown, min lend time, anti-thrash,
  // priority classes) and `admission` (which QOS are preemptible) are used.
  config::Config config = DefaultConfig();

  // Defaults plus lending enabled and QOS BE and Burstable preemptible (Guaranteed is not).
  static config::Config DefaultConfig();
};

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0, mean = 0;
  int64_t count = 0;
};

struct SeriesPoint {
  double hours = 0;      // start of the bucket, from the window's start
  double inference = 0;  // mean GPUs allocated over the bucket
  double training = 0;
};

struct Result {
  Mode mode = Mode::kBridge;
  int64_t nodes = 0, gpus = 0;
  int64_t k8s_nodes = 0, k8s_gpus = 0;  // static: Kubernetes' part; bridge: 0
  int64_t inference_pods = 0, training_jobs = 0, skipped_tasks = 0;
  double horizon_hours = 0;
  // What the trace asks for: inference at its share of a GPU, training in whole GPUs.
  double demand_inference_gpu_hours = 0, demand_training_gpu_hours = 0;
  double capacity_gpu_hours = 0;
  // Within the window.
  double allocated_gpu_hours = 0, inference_gpu_hours = 0, training_gpu_hours = 0;
  double allocation = 0;  // allocated / capacity
  // Over the whole run (work continues past the window until every job ends).
  double allocated_gpu_hours_total = 0;
  double lost_gpu_hours = 0;
  double lost_fraction = 0;      // lost / allocated_gpu_hours_total
  Percentiles inference_wait_s;  // start - arrival, pods that started
  int64_t inference_never_started = 0;
  Percentiles training_wait_s;    // first start - submit
  Percentiles training_slowdown;  // (end - submit) / max(run time, 10 s)
  int64_t training_never_finished = 0;
  int64_t preemptions = 0, preempted_jobs = 0, max_preemptions_per_job = 0;
  double preemptions_per_job = 0;  // over all training jobs
  int64_t lends = 0, returns = 0;
  // Preemptions that found no victim (only protected or too-small reservations), and node
  // mode's preemptions the planner refused as a lend.
  int64_t protected_skips = 0;
  // Waste of a lend: GPUs moved to Kubernetes, GPUs the triggering pods needed, GPUs of the
  // jobs preempted for them (node mode: every job the lend signalled).
  int64_t gpus_taken = 0, gpus_needed = 0, gpus_preempted = 0;
  double preempted_gpu_hours = 0;  // GPUs x run time of the preempted runs
  double k8s_held_gpu_hours = 0;   // within the window: GPUs Kubernetes held (lent/static)
  int64_t device_violations = 0;   // GPU mode: devices both sides claimed (must be 0)
  double end_hours = 0;            // when the last task ended
  // Fragmentation, sampled once a simulated minute over the window: nodes with no GPU
  // allocated to anyone (mean), those of them Slurm could start a whole-node job on at once
  // (mean; node mode: Slurm's and undrained; GPU mode: no GPU held for Kubernetes), and the
  // share of samples with at least one such node.
  double whole_nodes_idle_mean = 0, whole_nodes_for_slurm_mean = 0;
  double whole_node_for_slurm_share = 0;
  int64_t whole_node_samples = 0;
  std::vector<SeriesPoint> series;
};

StatusOr<Result> Simulate(const std::vector<Task>& tasks, const std::vector<GpuNode>& nodes,
                          Mode mode, const Options& options);

// A deterministic sample of about `fraction` of the nodes, per GPU model (at least one
// node of each model), in node-file order: a smaller cluster to put the trace under load.
std::vector<GpuNode> SampleNodes(const std::vector<GpuNode>& nodes, double fraction, uint64_t seed);

}  // namespace skb::sim

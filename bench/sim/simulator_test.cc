// SPDX-License-Identifier: Apache-2.0
// Tiny hand-made traces whose right answers are worked out in the comments.
#include "bench/sim/simulator.h"

#include <gtest/gtest.h>

#include <string>

namespace skb::sim {
namespace {

Task T(std::string name, std::string qos, int64_t gpus, int64_t created, int64_t runtime,
       int64_t milli = 1000) {
  Task t;
  t.name = std::move(name);
  t.qos = std::move(qos);
  t.num_gpu = gpus;
  t.gpu_milli = milli;
  t.creation = created;
  t.scheduled = created;
  t.deletion = created + runtime;
  return t;
}

std::vector<GpuNode> Nodes(int n, int64_t gpus) {
  std::vector<GpuNode> out;
  for (int i = 0; i < n; ++i) out.push_back({"n" + std::to_string(i + 1), gpus, "G2", i + 2});
  return out;
}

Options Exact() {
  Options o;
  o.random_checkpoint_phase = false;  // first checkpoint exactly one interval in
  o.lend_overhead = std::chrono::milliseconds(0);
  return o;
}

Result Sim(const std::vector<Task>& tasks, const std::vector<GpuNode>& nodes, Mode mode,
           const Options& o = Exact()) {
  StatusOr<Result> r = Simulate(tasks, nodes, mode, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Result{};
}

// Two 2-GPU nodes. One inference pod (1 GPU, 0-100 s), two 2-GPU training jobs at 0 s
// running 100 s. Peak inference demand is 1 GPU: Kubernetes gets n1 (2 GPUs), Slurm n2.
// The second job waits for the first: it ends at 200 s (slowdown 2). Window: 100 s.
// Allocated in the window: (1 + 2) GPUs x 100 s of 4 x 100 s = 75%.
TEST(Simulate, StaticSplitAllocation) {
  const std::vector<Task> tasks = {T("pod", "LS", 1, 0, 100), T("a", "BE", 2, 0, 100),
                                   T("b", "BE", 2, 0, 100)};
  for (Mode m : {Mode::kStaticPeak, Mode::kStaticAvg}) {
    Result r = Sim(tasks, Nodes(2, 2), m);
    EXPECT_EQ(r.k8s_nodes, 1) << ModeName(m);
    EXPECT_EQ(r.k8s_gpus, 2);
    EXPECT_DOUBLE_EQ(r.horizon_hours, 100.0 / 3600);
    EXPECT_NEAR(r.capacity_gpu_hours, 400.0 / 3600, 1e-12);
    EXPECT_NEAR(r.allocation, 0.75, 1e-9);
    EXPECT_NEAR(r.allocated_gpu_hours_total, 500.0 / 3600, 1e-9);  // b runs 100-200 s
    EXPECT_EQ(r.inference_wait_s.p99, 0);
    EXPECT_DOUBLE_EQ(r.training_slowdown.p50, 1);
    EXPECT_DOUBLE_EQ(r.training_slowdown.max, 2);
    EXPECT_EQ(r.preemptions, 0);
  }
}

// One 2-GPU node. Job a (BE, 2 GPUs) runs from 0 s for 1000 s; an inference pod arrives at
// 10 s for 100 s. kube-scheduler preempts the node's reservation and the planner lends the
// node: a is signalled at 10 s and gets the default 60 s grace, counted from the signal to
// the millisecond, so it is requeued at 70 s; the reservation is released, the pod starts
// at 70 s (wait 60 s) and ends at 170 s. The node returns at max(170 s + cooldown 120 s,
// 10 s + min lend 300 s) = 310 s; a runs again 310-1310 s. Without a checkpoint (interval
// 30 min) the 70 s x 2 GPUs are lost.
TEST(Simulate, BridgePreemptsWithGraceAndReturnsAfterCooldown) {
  const std::vector<Task> tasks = {T("a", "BE", 2, 0, 1000), T("pod", "LS", 1, 10, 100)};
  Result r = Sim(tasks, Nodes(1, 2), Mode::kBridge);
  EXPECT_EQ(r.lends, 1);
  EXPECT_EQ(r.returns, 1);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.max_preemptions_per_job, 1);
  EXPECT_DOUBLE_EQ(r.inference_wait_s.p50, 60);
  EXPECT_NEAR(r.lost_gpu_hours, 140.0 / 3600, 1e-9);
  EXPECT_NEAR(r.training_slowdown.p50, 1.310, 1e-9);
  EXPECT_NEAR(r.end_hours, 1310.0 / 3600, 1e-9);
  // Allocated overall: a 70 s + 1000 s on 2 GPUs, the pod 100 s on 1.
  EXPECT_NEAR(r.allocated_gpu_hours_total, (2 * 1070.0 + 100) / 3600, 1e-9);
}

// The same story with a checkpoint every 30 s: at 70 s the last one was at 60 s, so 10 s x
// 2 GPUs are lost and a needs 940 s more (310-1250 s). Checkpointing on the signal (10 s)
// keeps only 10 s: 60 s x 2 GPUs lost, a ends at 310 + 990 s.
TEST(Simulate, CheckpointsBoundTheLostWork) {
  const std::vector<Task> tasks = {T("a", "BE", 2, 0, 1000), T("pod", "LS", 1, 10, 100)};
  Options o = Exact();
  o.checkpoint_interval = std::chrono::seconds(30);
  Result r = Sim(tasks, Nodes(1, 2), Mode::kBridge, o);
  EXPECT_NEAR(r.lost_gpu_hours, 20.0 / 3600, 1e-9);
  EXPECT_NEAR(r.end_hours, 1250.0 / 3600, 1e-9);

  o = Exact();
  o.checkpoint_on_signal = true;
  r = Sim(tasks, Nodes(1, 2), Mode::kBridge, o);
  EXPECT_NEAR(r.lost_gpu_hours, 120.0 / 3600, 1e-9);
  EXPECT_NEAR(r.end_hours, 1300.0 / 3600, 1e-9);
}

// A job's own grace comes from the config (GraceFor), and the lend overhead is added: a is
// requeued at 10 + 25 s, the pod starts 5 s later.
TEST(Simulate, GraceAndOverheadFromTheOptions) {
  const std::vector<Task> tasks = {T("a", "BE", 2, 0, 1000), T("pod", "LS", 1, 10, 100)};
  Options o = Exact();
  o.config.lending.default_grace = std::chrono::seconds(25);
  o.lend_overhead = std::chrono::seconds(5);
  Result r = Sim(tasks, Nodes(1, 2), Mode::kBridge, o);
  EXPECT_DOUBLE_EQ(r.inference_wait_s.p50, 30);
  EXPECT_NEAR(r.lost_gpu_hours, 2 * 35.0 / 3600, 1e-9);
}

// An idle Slurm node is the cheapest victim (PickVictims over the reservations' classes):
// the pod takes n2 at once and no job is preempted; Guaranteed jobs are never preempted
// (protected reservation).
TEST(Simulate, IdleNodesFirstAndProtectedNeverTaken) {
  // n1's reservation turns preemptible lazily: the wish is recorded with the batched
  // job-list update (60 s after the reservation was written at 0 s) and carried out
  // class_upgrade_delay (60 s) later. A pod at 200 s sees n1 preemptible, n2 idle.
  Result r =
      Sim({T("a", "BE", 2, 0, 1000), T("pod", "LS", 1, 200, 100)}, Nodes(2, 2), Mode::kBridge);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.inference_wait_s.p99, 0);
  // At 10 s both reservations are still idle: kube-scheduler takes the first by name, n1.
  r = Sim({T("a", "BE", 2, 0, 1000), T("pod", "LS", 1, 10, 100)}, Nodes(2, 2), Mode::kBridge);
  EXPECT_EQ(r.preemptions, 1);

  // One node held by a Guaranteed job until 1000 s (protected at once): the pod waits for it
  // to end and for the reservation's lazy change back to idle (class_downgrade_delay, 300 s).
  r = Sim({T("g", "Guaranteed", 2, 0, 1000), T("pod", "LS", 1, 10, 100)}, Nodes(1, 2),
          Mode::kBridge);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_DOUBLE_EQ(r.inference_wait_s.p50, 1000 + 300 - 10);
  EXPECT_GE(r.protected_skips, 1);
}

// Anti-thrash (max_preemptions 0): after one preemption the job is protected, so a second
// pod at 400 s waits until it ends (310 + 10000 s) and the reservation is idle again (300 s
// later) instead of preempting it again.
TEST(Simulate, AntiThrashProtectsAfterKPreemptions) {
  Options o = Exact();
  o.config.lending.max_preemptions = 0;
  Result r = Sim({T("a", "BE", 2, 0, 10000), T("p1", "LS", 1, 10, 100), T("p2", "LS", 1, 400, 100)},
                 Nodes(1, 2), Mode::kBridge, o);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_DOUBLE_EQ(r.inference_wait_s.max, 10310 + 300 - 400);
}

// Fractional pods share one GPU (best fit): three 0.3-GPU pods and a 1-GPU pod fit a
// 2-GPU node at once.
TEST(Simulate, FractionalPodsPackOntoOneGpu) {
  Result r = Sim({T("f1", "LS", 1, 0, 100, 300), T("f2", "LS", 1, 0, 100, 300),
                  T("f3", "LS", 1, 0, 100, 300), T("w", "LS", 1, 0, 100)},
                 Nodes(1, 2), Mode::kBridge);
  EXPECT_EQ(r.lends, 1);
  EXPECT_EQ(r.inference_wait_s.max, 0);
  EXPECT_NEAR(r.allocation, 1.9 / 2, 1e-9);
}

// GPU granularity: one 8-GPU node, a preemptible 4-GPU job on GPUs 0-3 and 4 idle GPUs.
// A 1-GPU pod at 10 s: node mode lends the whole node (8 GPUs taken, the job's 4 GPUs
// preempted after its 60 s grace, the pod waits 60 s); GPU mode takes one idle GPU at once
// and preempts nothing. Both give the GPUs back after the pod (cool-down 2 min, min lend
// 5 min).
TEST(Simulate, GpuModeTakesIdleGpusInsteadOfTheNode) {
  const std::vector<Task> tasks = {T("a", "BE", 4, 0, 10000), T("pod", "LS", 1, 10, 100)};
  Result node = Sim(tasks, Nodes(1, 8), Mode::kBridge);
  EXPECT_EQ(node.gpus_taken, 8);
  EXPECT_EQ(node.gpus_needed, 1);
  EXPECT_EQ(node.gpus_preempted, 4);
  EXPECT_EQ(node.preemptions, 1);
  EXPECT_DOUBLE_EQ(node.inference_wait_s.p50, 60);

  Result gpu = Sim(tasks, Nodes(1, 8), Mode::kBridgeGpu);
  EXPECT_EQ(gpu.gpus_taken, 1);
  EXPECT_EQ(gpu.gpus_needed, 1);
  EXPECT_EQ(gpu.gpus_preempted, 0);
  EXPECT_EQ(gpu.preemptions, 0);
  EXPECT_DOUBLE_EQ(gpu.inference_wait_s.p50, 0);
  EXPECT_EQ(gpu.lends, 1);
  EXPECT_EQ(gpu.returns, 1);
  EXPECT_EQ(gpu.device_violations, 0);
  EXPECT_EQ(ModeName(Mode::kBridgeGpu), "bridge-gpu");
}

// Fragmentation. Two 2-GPU nodes; a 1-GPU job on n1 and a 1-GPU pod, both at 0 s for 600 s
// (the window: ten samples, one a minute). GPU mode gives the pod n1's other GPU (best fit:
// no idle GPU left over), so n2 stays whole, idle and Slurm's all along. Node mode lends a
// whole node: kube-scheduler takes n1's reservation (the job's node, its reservation still
// of the idle class: classes follow jobs lazily), the job is requeued onto n2 after its
// grace (60 s), the pod runs on n1: n2 was whole and free for the first sample only.
TEST(Simulate, GpuModeKeepsWholeNodesForSlurm) {
  const std::vector<Task> tasks = {T("a", "BE", 1, 0, 600), T("pod", "LS", 1, 0, 600)};
  Result gpu = Sim(tasks, Nodes(2, 2), Mode::kBridgeGpu);
  EXPECT_EQ(gpu.whole_node_samples, 10);
  EXPECT_DOUBLE_EQ(gpu.whole_nodes_idle_mean, 1);
  EXPECT_DOUBLE_EQ(gpu.whole_nodes_for_slurm_mean, 1);
  EXPECT_DOUBLE_EQ(gpu.whole_node_for_slurm_share, 1);
  EXPECT_DOUBLE_EQ(gpu.inference_wait_s.p50, 0);

  Result node = Sim(tasks, Nodes(2, 2), Mode::kBridge);
  EXPECT_EQ(node.whole_node_samples, 10);
  EXPECT_DOUBLE_EQ(node.inference_wait_s.p50, 60);
  EXPECT_EQ(node.preemptions, 1);
  EXPECT_NEAR(node.whole_nodes_idle_mean, 0.1, 1e-12);
  EXPECT_NEAR(node.whole_nodes_for_slurm_mean, 0.1, 1e-12);
  EXPECT_NEAR(node.whole_node_for_slurm_share, 0.1, 1e-12);
}

// Two 4-GPU jobs on one 8-GPU node, one preemptible (BE), one not (Guaranteed); a 2-GPU
// pod at 10 s. Node mode: the node is protected, the pod waits for the Guaranteed job and
// the reservation's change back to idle (10000 + 300 - 10 s). GPU mode: the BE job is signalled at
// 10 s and requeued at 70 s (its placeholder records the signal to the millisecond, so the
// grace ends exactly 60 s later), the placeholder starts on its GPUs and the pod runs at
// 70 s; the Guaranteed job never stops.
TEST(Simulate, GpuModePreemptsOnlyPreemptibleJobsGpus) {
  const std::vector<Task> tasks = {T("a", "BE", 4, 0, 10000), T("g", "Guaranteed", 4, 0, 10000),
                                   T("pod", "LS", 2, 10, 100)};
  Result node = Sim(tasks, Nodes(1, 8), Mode::kBridge);
  EXPECT_EQ(node.preemptions, 0);
  EXPECT_DOUBLE_EQ(node.inference_wait_s.p50, 10000 + 300 - 10);

  Result gpu = Sim(tasks, Nodes(1, 8), Mode::kBridgeGpu);
  EXPECT_EQ(gpu.preemptions, 1);
  EXPECT_EQ(gpu.preempted_jobs, 1);
  EXPECT_EQ(gpu.gpus_preempted, 4);
  EXPECT_EQ(gpu.gpus_taken, 2);
  // The plan's recheck_at wakes the node at the grace's end: 60 s, not the next second.
  EXPECT_DOUBLE_EQ(gpu.inference_wait_s.p50, 60);
  EXPECT_EQ(gpu.training_never_finished, 0);
  EXPECT_EQ(gpu.device_violations, 0);
  // The Guaranteed job ran undisturbed: the worst slowdown is the requeued BE job's.
  EXPECT_GT(gpu.training_slowdown.max, 1);
  EXPECT_DOUBLE_EQ(gpu.training_slowdown.p50, 1);
}

// Sized for peak inference (8 GPUs) Kubernetes would take both 8-GPU nodes; Slurm keeps
// one so its 8-GPU job can run.
TEST(Simulate, StaticSplitLeavesSlurmANodeForItsLargestJob) {
  std::vector<GpuNode> nodes = Nodes(2, 8);
  nodes.push_back({"small", 2, "T4", 4});
  Result r = Sim({T("p", "LS", 8, 0, 100), T("q", "LS", 2, 0, 100), T("j", "BE", 8, 0, 100)}, nodes,
                 Mode::kStaticPeak);
  EXPECT_EQ(r.k8s_gpus, 10);
  EXPECT_EQ(r.training_never_finished, 0);
  EXPECT_EQ(r.inference_never_started, 0);
}

std::vector<Task> RandomTrace(int n) {
  std::vector<Task> tasks;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int i = 0; i < n; ++i) {
    const bool ls = next() % 3 == 0;
    const int64_t gpus = ls ? 1 : 1 + static_cast<int64_t>(next() % 4);
    tasks.push_back(T("t" + std::to_string(i), ls ? "LS" : "BE", gpus,
                      static_cast<int64_t>(next() % 20000),
                      60 + static_cast<int64_t>(next() % 5000),
                      ls ? 100 + static_cast<int64_t>(next() % 901) : 1000));
  }
  return tasks;
}

TEST(Simulate, DeterministicForASeed) {
  const std::vector<Task> tasks = RandomTrace(300);
  Options o;
  o.seed = 7;
  Result a = Sim(tasks, Nodes(4, 4), Mode::kBridge, o);
  Result b = Sim(tasks, Nodes(4, 4), Mode::kBridge, o);
  ASSERT_GT(a.preemptions, 0);
  EXPECT_EQ(a.preemptions, b.preemptions);
  EXPECT_EQ(a.lost_gpu_hours, b.lost_gpu_hours);
  EXPECT_EQ(a.allocated_gpu_hours, b.allocated_gpu_hours);
  EXPECT_EQ(a.inference_wait_s.p99, b.inference_wait_s.p99);
  EXPECT_EQ(a.training_slowdown.p99, b.training_slowdown.p99);
  ASSERT_EQ(a.series.size(), b.series.size());
  for (size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].training, b.series[i].training);
  }
  // The seed draws the checkpoint phases: another seed loses a different amount.
  o.seed = 8;
  Result c = Sim(tasks, Nodes(4, 4), Mode::kBridge, o);
  EXPECT_NE(a.lost_gpu_hours, c.lost_gpu_hours);
}

TEST(Simulate, SkipsTasksWithoutGpuOrNeverScheduled) {
  Task never = T("n", "BE", 1, 0, 10);
  never.scheduled.reset();
  Result r =
      Sim({T("cpu", "LS", 0, 0, 10, 0), never, T("big", "BE", 16, 0, 10), T("ok", "BE", 1, 0, 10)},
          Nodes(1, 8), Mode::kBridge);
  EXPECT_EQ(r.skipped_tasks, 3);
  EXPECT_EQ(r.training_jobs, 1);
}

TEST(SampleNodes, KeepsEveryModelAndIsDeterministic) {
  std::vector<GpuNode> nodes = Nodes(100, 8);
  nodes.push_back({"t4", 2, "T4", 0});
  std::vector<GpuNode> a = SampleNodes(nodes, 0.1, 3);
  EXPECT_EQ(a.size(), 11u);
  EXPECT_EQ(a.back().name, "t4");
  std::vector<GpuNode> b = SampleNodes(nodes, 0.1, 3);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].name, b[i].name);
}

}  // namespace
}  // namespace skb::sim

// SPDX-License-Identifier: Apache-2.0
#include "bench/sim/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <variant>

#include "src/base/strings.h"
#include "src/devices/device_plan.h"
#include "src/devices/gres.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/return_decision.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"
#include "src/ownership/victims.h"
#include "src/plan/planner.h"
#include "src/plan/testing/node_model.h"

namespace skb::sim {
namespace {

namespace own = skb::ownership;
using TimePoint = Clock::TimePoint;
using Duration = Clock::Duration;

// Simulated time starts here (policy code works in Unix seconds; any fixed start will do).
constexpr slurm::UnixTime kEpoch = 1'700'000'000;
constexpr int64_t kGpuMilli = 1000;
// Slowdown's denominator is at least this (bounded slowdown: a 1-second job that waited a
// minute is not "60x slower" in any useful sense).
constexpr double kMinSlowdownRuntime = 10;
// How often the whole free nodes are counted (SampleWholeNodes): a minute keeps a 60-day
// window at about 86,000 samples.
constexpr Duration kWholeNodeSample = std::chrono::minutes(1);

Duration Seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}
double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// SplitMix64: a tiny, portable, well-mixed generator (std distributions differ between
// standard libraries; results must not).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// FNV-1a: a string hash that is the same everywhere (std::hash is not).
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}
// Uniform in (0, 1].
double Uniform(uint64_t x) { return (static_cast<double>(Mix(x) >> 11) + 1) * 0x1.0p-53; }

Percentiles Summarize(std::vector<double> v) {
  Percentiles p;
  p.count = static_cast<int64_t>(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(i, 1, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p99 = rank(0.99);
  p.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

bool ModelAllowed(const Task& t, const std::string& model) {
  return t.gpu_spec.empty() ||
         std::find(t.gpu_spec.begin(), t.gpu_spec.end(), model) != t.gpu_spec.end();
}

enum class Owner { kSlurm, kLending, kK8s };

struct Job {
  const Task* task = nullptr;
  int64_t gpus = 0;
  Duration runtime{};
  TimePoint submit{};
  Duration saved{};  // progress kept by checkpoints
  bool running = false;
  bool cancelled = false;
  TimePoint run_start{};
  int node = -1;
  uint64_t run = 0;  // bumped per start: stale end/preempt events carry an older one
  Duration first_checkpoint{};
  std::optional<TimePoint> signalled_at;
  plan::JobPreemptMode preempt_mode = plan::JobPreemptMode::kRequeue;
  std::optional<TimePoint> first_start, end;
  int64_t preemptions = 0;
  slurm::JobView view;
  std::vector<int64_t> indices;  // GPU mode: the GRES indices it holds while running
};

struct Pod {
  const Task* task = nullptr;
  int64_t milli = 0;
  int64_t need_gpus = 0;  // GPUs a node must have (1 for a share)
  Duration runtime{};
  TimePoint arrival{};
  std::optional<TimePoint> start;
  int node = -1;
  std::vector<int> gpus_used;
};

// GPU mode: one GPU of a node, as the bridge's two holds and the schedulers see it.
struct Gpu {
  int job = -1;              // the Slurm job on it
  uint32_t placeholder = 0;  // the placeholder job holding it for Kubernetes
  bool k8s_hold = true;      // the DeviceTaintRule keeps Kubernetes off it
  int pods = 0;              // pods with an allocated claim on it
};

// GPU mode: a placeholder job and the pod it was submitted for.
struct Give {
  uint32_t job_id = 0;
  int pod = -1;
  int64_t gpus = 0;
  std::vector<uint32_t> victims;
  bool running = false;
  std::vector<int64_t> indices;
  TimePoint start{};
  bool returning = false;
  std::optional<TimePoint> idle_since;
  // When its devices were held again for the return: the placeholder ends a settle later
  // (devices::kHoldSettle), as the daemon's executor waits.
  std::optional<TimePoint> held_again;
};

struct Node {
  const GpuNode* spec = nullptr;
  std::vector<Gpu> gpu;     // GPU mode
  std::vector<Give> gives;  // GPU mode
  // Node mode: kLending from kube-scheduler's preemption of the reservation until the
  // lend is complete and the lend overhead has passed, then kK8s until the planner returns
  // the node.
  Owner owner = Owner::kSlurm;
  bool k8s_partition = false;  // static modes: Kubernetes' part, never Slurm's
  bool indexed = false;        // in Slurm's free index (free_)
  int64_t slurm_free = 0;
  std::vector<int> jobs;
  std::vector<int64_t> gpu_free;  // Kubernetes' view: milli free per GPU
  int64_t pods = 0;               // running and nominated
  std::vector<int> bound;         // pods bound here (running or nominated)
  std::vector<int> nominated;
  // Node mode: the node's objects as the daemon sees them (the Slurm node, the Kubernetes
  // node, the reservation pod), which only the planner's actions change.
  inventory::ManagedNode model;
  bool lend_counted = false;   // the planner took up the lend (counted in lends)
  bool ready_pending = false;  // the lend is complete: its pods start after the overhead
  std::set<TimePoint> drives;  // pending kDrive events (one per instant)
};

enum class EventType {
  kArrive,
  kJobEnd,
  kPodEnd,
  kPreempt,
  kLendReady,
  kDrive,     // plan node `id` again (something on it changed, or the plan asked for it)
  kPodReady,  // GPU mode: pod `id`'s devices were lifted for it: it starts
};

struct Event {
  TimePoint at;
  uint64_t seq;
  EventType type;
  int id;
  uint64_t epoch;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Simulation {
 public:
  Simulation(const std::vector<Task>& tasks, const std::vector<GpuNode>& nodes, Mode mode,
             const Options& options)
      : mode_(mode), opt_(options), cfg_(options.config), t0_(own::FromUnix(kEpoch)) {
    for (const GpuNode& n : nodes) {
      Node s;
      s.spec = &n;
      s.slurm_free = n.gpus;
      s.gpu_free.assign(static_cast<size_t>(n.gpus), kGpuMilli);
      if (mode == Mode::kBridgeGpu) s.gpu.assign(static_cast<size_t>(n.gpus), Gpu{});
      node_index_[n.name] = static_cast<int>(nodes_.size());
      max_node_gpus_ = std::max(max_node_gpus_, n.gpus);
      if (mode == Mode::kBridge) s.model = ModelOf(n);
      nodes_.push_back(std::move(s));
    }
    LoadTasks(tasks);
  }

  StatusOr<Result> Run() {
    if (nodes_.empty()) return InvalidArgumentError("no nodes");
    result_.mode = mode_;
    result_.nodes = static_cast<int64_t>(nodes_.size());
    for (const Node& n : nodes_) result_.gpus += n.spec->gpus;
    result_.horizon_hours = ToSeconds(horizon_) / 3600;
    result_.capacity_gpu_hours = static_cast<double>(result_.gpus) * result_.horizon_hours;
    if (mode_ != Mode::kBridge && !gpu_mode()) {
      SplitStatically();
      k8s_held_gpus_ = result_.k8s_gpus;
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SyncSlurmIndex(static_cast<int>(i));
      if (nodes_[i].owner == Owner::kK8s) k8s_nodes_.insert(static_cast<int>(i));
      // The bridge starts: every node gets its reservation.
      if (mode_ == Mode::kBridge) DriveNode(static_cast<int>(i));
    }
    const int points = std::max(1, opt_.series_points);
    bucket_ = horizon_ / points;
    if (bucket_ <= Duration::zero()) bucket_ = Duration(1);
    series_.assign(static_cast<size_t>(points), {});

    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      Advance(e.at);
      Handle(e);
      if (!error_.ok()) break;
      pending_pods_.insert(pending_pods_.end(), unbound_pods_.begin(), unbound_pods_.end());
      unbound_pods_.clear();
      if (slurm_dirty_) ScheduleSlurm();
      if (!pending_pods_.empty()) SchedulePods();
    }
    if (!error_.ok()) return error_;
    Finish();
    return std::move(result_);
  }

 private:
  void LoadTasks(const std::vector<Task>& tasks) {
    int64_t trace_end = 0;
    for (const Task& t : tasks) {
      trace_end =
          std::max({trace_end, t.creation, t.deletion.value_or(0), t.scheduled.value_or(0)});
    }
    for (const Task& t : tasks) {
      if (!t.UsesGpu() || !t.scheduled || t.WholeGpus() > max_node_gpus_) {
        ++result_.skipped_tasks;
        continue;
      }
      const Duration runtime = std::chrono::seconds(t.deletion.value_or(trace_end) - *t.scheduled);
      const TimePoint arrival = t0_ + Seconds(static_cast<double>(t.creation) / opt_.compress);
      horizon_ = std::max(horizon_, arrival + runtime - t0_);
      (t.Inference() ? result_.demand_inference_gpu_hours : result_.demand_training_gpu_hours) +=
          static_cast<double>(t.Inference() ? t.Milli() : t.WholeGpus() * kGpuMilli) / kGpuMilli *
          ToSeconds(runtime) / 3600;
      if (t.Inference()) {
        Pod p;
        p.task = &t;
        p.milli = t.Milli();
        p.need_gpus = t.Fractional() ? 1 : t.WholeGpus();
        p.runtime = runtime;
        p.arrival = arrival;
        Push(arrival, EventType::kArrive, static_cast<int>(pods_.size()) + 1, 0);
        pods_.push_back(std::move(p));
      } else {
        Job j;
        j.task = &t;
        j.gpus = t.WholeGpus();
        j.runtime = runtime;
        j.submit = arrival;
        j.view.job_id = static_cast<uint32_t>(jobs_.size() + 1);
        j.view.user_name = "trace";
        j.view.qos = t.qos;
        j.view.partition = "gpu";
        j.view.requeue = true;
        j.view.state = slurm::JobState::kPending;
        j.view.gpus_per_node = j.gpus;
        // Arrivals: positive ids are pods (id - 1), negative ones jobs (-id - 1).
        Push(arrival, EventType::kArrive, -static_cast<int>(jobs_.size()) - 1, 0);
        jobs_.push_back(std::move(j));
      }
    }
    result_.inference_pods = static_cast<int64_t>(pods_.size());
    result_.training_jobs = static_cast<int64_t>(jobs_.size());
  }

  // ---- Static split --------------------------------------------------------------------

  void SplitStatically() {
    // Concurrent inference demand as recorded: peak and time-average, in milli-GPUs.
    std::vector<std::pair<TimePoint, int64_t>> steps;
    double milli_seconds = 0;
    for (const Pod& p : pods_) {
      steps.emplace_back(p.arrival, p.milli);
      steps.emplace_back(p.arrival + p.runtime, -p.milli);
      milli_seconds += static_cast<double>(p.milli) * ToSeconds(p.runtime);
    }
    std::sort(steps.begin(), steps.end());  // ends (negative) before starts at one instant
    int64_t cur = 0, peak = 0;
    for (auto& [t, d] : steps) peak = std::max(peak, cur += d);
    const double avg = horizon_ > Duration::zero() ? milli_seconds / ToSeconds(horizon_) : 0;
    const double want_milli = mode_ == Mode::kStaticPeak ? static_cast<double>(peak) : avg;
    const int64_t want = static_cast<int64_t>(std::ceil(want_milli / kGpuMilli - 1e-9));

    std::vector<int> order(nodes_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return nodes_[a].spec->gpus > nodes_[b].spec->gpus; });
    // Slurm keeps at least one node its largest job fits on.
    int64_t max_job = 0;
    for (const Job& j : jobs_) max_job = std::max(max_job, j.gpus);
    int64_t big_left = 0;
    for (const Node& n : nodes_) big_left += n.spec->gpus >= max_job ? 1 : 0;
    int64_t got = 0;
    for (int i : order) {
      if (got >= want) break;
      if (nodes_[i].spec->gpus >= max_job && big_left == 1) continue;
      big_left -= nodes_[i].spec->gpus >= max_job ? 1 : 0;
      nodes_[i].k8s_partition = true;
      nodes_[i].owner = Owner::kK8s;
      got += nodes_[i].spec->gpus;
      ++result_.k8s_nodes;
    }
    result_.k8s_gpus = got;
  }

  // ---- Events --------------------------------------------------------------------------

  void Push(TimePoint at, EventType type, int id, uint64_t epoch) {
    events_.push(Event{at, seq_++, type, id, epoch});
  }

  void Handle(const Event& e) {
    switch (e.type) {
      case EventType::kArrive:
        if (e.id > 0) {
          pending_pods_.push_back(e.id - 1);
        } else {
          Job& j = jobs_[static_cast<size_t>(-e.id - 1)];
          queue_.emplace(j.submit, -e.id - 1);
          slurm_dirty_ = true;
        }
        return;
      case EventType::kJobEnd: {
        Job& j = jobs_[static_cast<size_t>(e.id)];
        if (!j.running || j.run != e.epoch) return;
        j.end = now_;
        last_end_ = now_;
        j.view.state = slurm::JobState::kComplete;
        StopJob(e.id);
        return;
      }
      case EventType::kPreempt:
        Preempt(e.id, e.epoch);
        return;
      case EventType::kPodEnd:
        EndPod(e.id);
        return;
      case EventType::kLendReady:
        FinishLend(e.id);
        return;
      case EventType::kDrive:
        nodes_[static_cast<size_t>(e.id)].drives.erase(e.at);
        if (gpu_mode()) {
          Drive(e.id);
        } else {
          DriveNode(e.id);
        }
        return;
      case EventType::kPodReady:
        StartPod(e.id);
        return;
    }
  }

  // Integrates allocated GPUs from the last event to `t`.
  void Advance(TimePoint t) {
    if (t < now_) t = now_;
    SampleWholeNodes(t);
    const double inf = static_cast<double>(alloc_inference_milli_) / kGpuMilli;
    const double tr = static_cast<double>(alloc_training_gpus_);
    const double held = static_cast<double>(k8s_held_gpus_);
    const double dt = ToSeconds(t - now_);
    result_.allocated_gpu_hours_total += (inf + tr) * dt / 3600;
    // Clip to the window and spread over the series' buckets.
    TimePoint a = std::max(now_, t0_), b = std::min(t, t0_ + horizon_);
    while (a < b && (inf > 0 || tr > 0)) {
      const int64_t k = (a - t0_) / bucket_;
      const TimePoint bucket_end = t0_ + bucket_ * (k + 1);
      const TimePoint c = std::min(b, bucket_end);
      const double s = ToSeconds(c - a);
      result_.inference_gpu_hours += inf * s / 3600;
      result_.training_gpu_hours += tr * s / 3600;
      result_.k8s_held_gpu_hours += held * s / 3600;
      if (k >= 0 && k < static_cast<int64_t>(series_.size())) {
        series_[static_cast<size_t>(k)].inference += inf * s;
        series_[static_cast<size_t>(k)].training += tr * s;
      }
      a = c;
    }
    now_ = t;
  }

  // Fragmentation: once a minute of the window (the cluster as the last event left it, which
  // holds until `t`), the nodes on which no GPU is allocated to anyone, and of those the
  // ones Slurm could start a whole-node job on now (its own, undrained; in GPU mode no GPU
  // held for Kubernetes).
  void SampleWholeNodes(TimePoint t) {
    const TimePoint end = std::min(t, t0_ + horizon_);
    for (; next_sample_ < end; next_sample_ += kWholeNodeSample) {
      int64_t idle = 0, for_slurm = 0;
      for (const Node& n : nodes_) {
        if (!WorkFree(n)) continue;
        ++idle;
        for_slurm += SlurmCouldTakeWhole(n) ? 1 : 0;
      }
      result_.whole_nodes_idle_mean += static_cast<double>(idle);
      result_.whole_nodes_for_slurm_mean += static_cast<double>(for_slurm);
      result_.whole_node_for_slurm_share += for_slurm > 0 ? 1 : 0;
      ++result_.whole_node_samples;
    }
  }
  bool WorkFree(const Node& n) const {
    if (!n.jobs.empty() || n.pods > 0) return false;
    return std::none_of(n.gpu.begin(), n.gpu.end(),
                        [](const Gpu& g) { return g.job >= 0 || g.pods > 0; });
  }
  bool SlurmCouldTakeWhole(const Node& n) const {
    if (!SlurmMayUse(n)) return false;
    if (mode_ == Mode::kBridge) return n.owner == Owner::kSlurm;
    return std::none_of(n.gpu.begin(), n.gpu.end(),
                        [](const Gpu& g) { return g.placeholder != 0; });
  }

  // ---- Slurm ---------------------------------------------------------------------------

  // Node mode: Slurm places work on a node it has not drained.
  bool SlurmMayUse(const Node& n) const {
    if (mode_ == Mode::kBridge) return !n.model.slurm->drain;
    return n.owner == Owner::kSlurm && !n.k8s_partition;
  }

  void SyncSlurmIndex(int i) {
    Node& n = nodes_[static_cast<size_t>(i)];
    const bool may = SlurmMayUse(n);
    if (may == n.indexed) return;
    if (may) {
      IndexAdd(i);
      slurm_dirty_ = true;
    } else {
      IndexRemove(i);
    }
    n.indexed = may;
  }

  // free_[k]: nodes Slurm may use with at least k free GPUs, in node-file order.
  void IndexAdd(int i) {
    const Node& n = nodes_[static_cast<size_t>(i)];
    if (free_.size() <= static_cast<size_t>(max_node_gpus_)) free_.resize(max_node_gpus_ + 1);
    for (int64_t k = 1; k <= n.slurm_free; ++k) free_[static_cast<size_t>(k)].insert(i);
  }
  void IndexRemove(int i) {
    const Node& n = nodes_[static_cast<size_t>(i)];
    for (int64_t k = 1; k <= n.slurm_free && static_cast<size_t>(k) < free_.size(); ++k) {
      free_[static_cast<size_t>(k)].erase(i);
    }
  }

  int FindSlurmNode(const Job& j) const {
    if (static_cast<size_t>(j.gpus) >= free_.size()) return -1;
    for (int i : free_[static_cast<size_t>(j.gpus)]) {
      if (ModelAllowed(*j.task, nodes_[static_cast<size_t>(i)].spec->model)) return i;
    }
    return -1;
  }

  void ScheduleSlurm() {
    slurm_dirty_ = false;
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (free_.size() < 2 || free_[1].empty()) break;
      Job& j = jobs_[static_cast<size_t>(it->second)];
      const int n = FindSlurmNode(j);
      if (n < 0) {
        ++it;
        continue;
      }
      const int id = it->second;
      it = queue_.erase(it);
      StartJob(id, n);
    }
  }

  void StartJob(int id, int n) {
    Job& j = jobs_[static_cast<size_t>(id)];
    Node& node = nodes_[static_cast<size_t>(n)];
    if (gpu_mode()) {
      j.indices.clear();
      for (size_t g = 0; g < node.gpu.size() && static_cast<int64_t>(j.indices.size()) < j.gpus;
           ++g) {
        if (SlurmIdle(node.gpu[g])) {
          node.gpu[g].job = id;
          j.indices.push_back(static_cast<int64_t>(g));
        }
      }
      Recount(n);
    } else {
      IndexRemove(n);
      node.slurm_free -= j.gpus;
      IndexAdd(n);
    }
    node.jobs.push_back(id);
    j.running = true;
    j.node = n;
    j.run_start = now_;
    ++j.run;
    j.signalled_at.reset();
    if (!j.first_start) j.first_start = now_;
    const double phase = opt_.random_checkpoint_phase
                             ? Uniform(opt_.seed * 0x100000001b3ULL ^ (uint64_t(id) << 20) ^ j.run)
                             : 1.0;
    j.first_checkpoint = Seconds(phase * static_cast<double>(opt_.checkpoint_interval.count()));
    j.view.state = slurm::JobState::kRunning;
    j.view.nodes = {node.spec->name};
    j.view.start_time = own::ToUnix(now_);
    alloc_training_gpus_ += j.gpus;
    Push(now_ + (j.runtime - j.saved), EventType::kJobEnd, id, j.run);
    if (mode_ == Mode::kBridge) ScheduleDrive(n, now_);
  }

  // The job leaves its node (ended or preempted).
  void StopJob(int id) {
    Job& j = jobs_[static_cast<size_t>(id)];
    const int n = j.node;
    Node& node = nodes_[static_cast<size_t>(n)];
    j.running = false;
    j.node = -1;
    alloc_training_gpus_ -= j.gpus;
    node.jobs.erase(std::find(node.jobs.begin(), node.jobs.end(), id));
    if (gpu_mode()) {
      for (int64_t g : j.indices) node.gpu[static_cast<size_t>(g)].job = -1;
      j.indices.clear();
      StartPlaceholders(n);
      Recount(n);
      slurm_dirty_ = true;
      return;
    }
    if (node.indexed) IndexRemove(n);
    node.slurm_free += j.gpus;
    if (node.indexed) IndexAdd(n);
    slurm_dirty_ = true;
    if (mode_ == Mode::kBridge) ScheduleDrive(n, now_);
  }

  // Checkpoint model: what a preemption at `now_` keeps and loses. The preemption is
  // recorded in the job's admin comment before (the executor's part).
  void Preempt(int id, uint64_t run) {
    Job& j = jobs_[static_cast<size_t>(id)];
    if (!j.running || j.run != run) return;  // ended during its grace
    const Duration ran = now_ - j.run_start;
    Duration kept{};
    if (ran >= j.first_checkpoint) {
      const auto interval = std::chrono::duration_cast<Duration>(opt_.checkpoint_interval);
      kept = j.first_checkpoint + interval * ((ran - j.first_checkpoint) / interval);
    }
    if (opt_.checkpoint_on_signal && j.signalled_at) {
      kept = std::max(kept, *j.signalled_at - j.run_start);
    }
    kept = std::min(kept, ran);
    result_.lost_gpu_hours += ToSeconds(ran - kept) * static_cast<double>(j.gpus) / 3600;
    result_.preempted_gpu_hours += ToSeconds(ran) * static_cast<double>(j.gpus) / 3600;
    j.saved += kept;
    ++j.preemptions;
    ++result_.preemptions;
    StopJob(id);
    if (j.preempt_mode == plan::JobPreemptMode::kCancel) {
      j.cancelled = true;
      last_end_ = now_;
      j.view.state = slurm::JobState::kCancelled;
      return;
    }
    // requeue and requeue_hold alike: the simulation has nobody to release a hold.
    j.view.state = slurm::JobState::kPending;
    ++j.view.restart_count;
    queue_.emplace(j.submit, id);
  }

  // ---- Kubernetes ----------------------------------------------------------------------

  // GPUs of `node` the pod would use, best fit; empty when it does not fit.
  std::vector<int> Fit(const Node& node, const Pod& p) const {
    std::vector<int> used;
    if (!ModelAllowed(*p.task, node.spec->model)) return used;
    auto usable = [&](size_t g) {
      return !gpu_mode() || (node.gpu[g].placeholder != 0 && !node.gpu[g].k8s_hold);
    };
    if (p.task->Fractional()) {
      int best = -1;
      for (size_t g = 0; g < node.gpu_free.size(); ++g) {
        if (usable(g) && node.gpu_free[g] >= p.milli &&
            (best < 0 || node.gpu_free[g] < node.gpu_free[static_cast<size_t>(best)])) {
          best = static_cast<int>(g);
        }
      }
      if (best >= 0) used.push_back(best);
      return used;
    }
    for (size_t g = 0; g < node.gpu_free.size() && static_cast<int64_t>(used.size()) < p.need_gpus;
         ++g) {
      if (usable(g) && node.gpu_free[g] == kGpuMilli) used.push_back(static_cast<int>(g));
    }
    if (static_cast<int64_t>(used.size()) < p.need_gpus) used.clear();
    return used;
  }

  // kube-scheduler: the best-scoring node Kubernetes owns where the pod fits (a node
  // being lent counts, the pod then waits for it as its nominated node). -1: none.
  int PlacePod(const Pod& p, std::vector<int>* gpus) const {
    int best = -1;
    double best_score = 0;
    bool best_ready = false;
    for (int i : k8s_nodes_) {
      const Node& node = nodes_[static_cast<size_t>(i)];
      std::vector<int> used = Fit(node, p);
      if (used.empty()) continue;
      int64_t free = 0;
      for (int64_t f : node.gpu_free) free += f;
      const double alloc = 1 - static_cast<double>(free - p.milli) /
                                   static_cast<double>(node.spec->gpus * kGpuMilli);
      const double score = opt_.k8s_score == K8sScore::kLeastAllocated ? -alloc : alloc;
      const bool ready = node.owner == Owner::kK8s || gpu_mode();
      if (best < 0 || (ready && !best_ready) || (ready == best_ready && score > best_score)) {
        best = i;
        best_score = score;
        best_ready = ready;
        *gpus = std::move(used);
      }
    }
    return best;
  }

  void SchedulePods() {
    int64_t failed_need = INT64_MAX;  // a pod needing this many GPUs found no victim
    for (auto it = pending_pods_.begin(); it != pending_pods_.end();) {
      const int id = *it;
      Pod& p = pods_[static_cast<size_t>(id)];
      std::vector<int> gpus;
      int n = PlacePod(p, &gpus);
      if (n < 0 && gpu_mode() && p.need_gpus < failed_need) {
        if (GiveFor(id)) {
          it = pending_pods_.erase(it);  // its placeholder serves it now
        } else {
          failed_need = p.need_gpus;
          ++it;
        }
        continue;
      }
      bool preempted = false;
      if (n < 0 && mode_ == Mode::kBridge && p.need_gpus < failed_need) {
        n = LendFor(p);
        if (n < 0) {
          failed_need = p.need_gpus;
        } else {
          gpus = Fit(nodes_[static_cast<size_t>(n)], p);
          preempted = true;
        }
      }
      if (n < 0 || gpus.empty()) {
        ++it;
        continue;
      }
      it = pending_pods_.erase(it);
      BindPod(id, n, gpus);
      // The bridge sees the deleted reservation and the pod nominated to its node.
      if (preempted) DriveNode(n);
    }
    pending_pods_.insert(pending_pods_.end(), unbound_pods_.begin(), unbound_pods_.end());
    unbound_pods_.clear();
  }

  // `delayed`: GPU mode, the pod's devices were just lifted for it: it starts after the
  // lend overhead.
  void BindPod(int id, int n, const std::vector<int>& gpus, bool delayed = false) {
    Pod& p = pods_[static_cast<size_t>(id)];
    Node& node = nodes_[static_cast<size_t>(n)];
    const int64_t per_gpu = p.task->Fractional() ? p.milli : kGpuMilli;
    for (int g : gpus) node.gpu_free[static_cast<size_t>(g)] -= per_gpu;
    if (gpu_mode()) {
      for (int g : gpus) ++node.gpu[static_cast<size_t>(g)].pods;
    }
    p.gpus_used = gpus;
    p.node = n;
    ++node.pods;
    node.bound.push_back(id);
    if (delayed) {
      Push(now_ + opt_.lend_overhead, EventType::kPodReady, id, 0);
    } else if (node.owner == Owner::kK8s || gpu_mode()) {
      StartPod(id);
    } else {
      node.nominated.push_back(id);
    }
    if (mode_ == Mode::kBridge) ScheduleDrive(n, now_);
  }

  // The pod leaves its node before it started (a lend the bridge refused): pending again.
  void UnbindPod(int id) {
    Pod& p = pods_[static_cast<size_t>(id)];
    Node& node = nodes_[static_cast<size_t>(p.node)];
    const int64_t per_gpu = p.task->Fractional() ? p.milli : kGpuMilli;
    for (int g : p.gpus_used) node.gpu_free[static_cast<size_t>(g)] += per_gpu;
    --node.pods;
    std::erase(node.bound, id);
    p.node = -1;
    p.gpus_used.clear();
    unbound_pods_.push_back(id);
  }

  void StartPod(int id) {
    Pod& p = pods_[static_cast<size_t>(id)];
    p.start = now_;
    alloc_inference_milli_ += p.milli;
    Push(now_ + p.runtime, EventType::kPodEnd, id, 0);
  }

  void EndPod(int id) {
    Pod& p = pods_[static_cast<size_t>(id)];
    Node& node = nodes_[static_cast<size_t>(p.node)];
    const int64_t per_gpu = p.task->Fractional() ? p.milli : kGpuMilli;
    for (int g : p.gpus_used) node.gpu_free[static_cast<size_t>(g)] += per_gpu;
    alloc_inference_milli_ -= p.milli;
    last_end_ = now_;
    --node.pods;
    std::erase(node.bound, id);
    if (gpu_mode()) {
      for (int g : p.gpus_used) --node.gpu[static_cast<size_t>(g)].pods;
      Drive(p.node);
      return;
    }
    if (mode_ == Mode::kBridge) ScheduleDrive(p.node, now_);
  }

  // ---- The bridge at node granularity: kube-scheduler's preemption, then the planner ----

  // The node's objects before the bridge starts: a Ready Kubernetes node and an idle
  // Slurm node, nothing of the bridge's yet.
  inventory::ManagedNode ModelOf(const GpuNode& n) const {
    inventory::ManagedNode m;
    m.name = n.name;
    inventory::K8sNode k;
    k.name = n.name;
    k.conditions = {{"Ready", "True", "KubeletReady", "", t0_ - std::chrono::hours(1)}};
    k.gpu_capacity = k.gpu_allocatable = n.gpus;
    m.k8s = std::move(k);
    slurm::NodeView s;
    s.name = n.name;
    s.base_state = slurm::NodeBaseState::kIdle;
    s.gpus = {{n.model, n.gpus}};
    m.slurm = std::move(s);
    return m;
  }

  static inventory::GpuPod* LiveReservation(inventory::ManagedNode& m) {
    for (inventory::GpuPod& p : m.pods) {
      if (p.reservation && !p.terminating) return &p;
    }
    return nullptr;
  }
  static bool HasReservation(const inventory::ManagedNode& m) {
    return std::any_of(m.pods.begin(), m.pods.end(),
                       [](const inventory::GpuPod& p) { return p.reservation; });
  }

  // Inference pod `id` as the bridge's informers show it.
  inventory::GpuPod GpuPodOf(int id, const Node& node) const {
    const Pod& p = pods_[static_cast<size_t>(id)];
    inventory::GpuPod g;
    g.namespace_name = "inference";
    g.name = StrCat("pod-", id);
    g.uid = StrCat("uid-pod-", id);
    g.gpus = p.need_gpus;
    g.priority = cfg_.lending.inference_threshold;
    if (p.start) {
      g.node_name = node.spec->name;
      g.phase = "Running";
      g.started = p.start;
    } else {
      g.phase = "Pending";
      g.nominated_node_name = node.spec->name;
    }
    return g;
  }

  // What the daemon observes of node `n` besides its own objects: the Slurm jobs on it and
  // the inference pods bound or nominated to it.
  void Observe(int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    inventory::ManagedNode& m = node.model;
    m.jobs.clear();
    for (int id : node.jobs) m.jobs.push_back(jobs_[static_cast<size_t>(id)].view);
    std::erase_if(m.pods, [](const inventory::GpuPod& p) { return !p.reservation; });
    m.nominated_pods.clear();
    for (int id : node.bound) {
      inventory::GpuPod g = GpuPodOf(id, node);
      (g.started ? m.pods : m.nominated_pods).push_back(std::move(g));
    }
  }

  void ScheduleDrive(int n, TimePoint at) {
    if (nodes_[static_cast<size_t>(n)].drives.insert(at).second) {
      Push(at, EventType::kDrive, n, 0);
    }
  }

  void Fail(int n, const Status& s) {
    if (error_.ok()) {
      error_ = InternalError(StrCat("node ", nodes_[static_cast<size_t>(n)].spec->name, " at ",
                                    ToSeconds(now_ - t0_), " s: ", s.message()));
    }
  }

  // Plans node `n` with the daemon's planner and carries the actions out (the executor and
  // kubelet model of plan/testing) until nothing is left to do now; then sees who holds
  // the node and when to plan it again.
  void DriveNode(int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    for (int pass = 0; pass < 16; ++pass) {
      Observe(n);
      const plan::NodePlan p = plan::PlanNode(node.model, cfg_, now_);
      if (p.actions.empty()) {
        Settle(n, plan::NodeOwnerName(p.owner));
        if (p.recheck_at && *p.recheck_at > now_) ScheduleDrive(n, *p.recheck_at);
        return;
      }
      for (const plan::Action& a : p.actions) {
        Carry(n, a);
        if (!error_.ok()) return;
      }
      plan::testing::RunKubelet(&node.model, now_);
    }
    Fail(n, InternalError("the plan does not converge"));
  }

  // One action on the node's objects (the model), then on what the simulation runs:
  // signalled jobs checkpoint, preempted ones are requeued (their admin comment as the
  // executor recorded it), a drain or resume changes where Slurm may place jobs.
  void Carry(int n, const plan::Action& a) {
    Node& node = nodes_[static_cast<size_t>(n)];
    if (a.Is<plan::RequeueSlurmJobs>() || a.Is<plan::EvictPod>()) {
      Fail(n, UnimplementedError(StrCat("not modelled: ", plan::ToString(a))));
      return;
    }
    log_.requeued.clear();
    if (Status s = plan::testing::ApplyAction(a, &node.model, cfg_, now_, &log_); !s.ok()) {
      Fail(n, s);
      return;
    }
    if (const auto* signal = a.Get<plan::SignalSlurmJobs>()) {
      for (uint32_t id : signal->job_ids) {
        Job& j = jobs_[id - 1];
        j.signalled_at = now_;
        result_.gpus_preempted += j.gpus;
      }
    } else if (const auto* preempt = a.Get<plan::PreemptSlurmJobs>()) {
      for (const slurm::JobView& v : log_.requeued) {
        Job& j = jobs_[v.job_id - 1];
        j.view.admin_comment = v.admin_comment;
        j.preempt_mode = preempt->mode;
        Preempt(static_cast<int>(v.job_id - 1), j.run);
      }
    }
    SyncSlurmIndex(n);
  }

  // Who holds the node now, as the planner says (its `owner`), and what follows for the
  // simulation: a lend counted once the planner takes it up, its pods started
  // `lend_overhead` after the reservation is gone, the node back with Slurm when the
  // planner returns it (or refuses the lend: the pods nominated there pend again).
  void Settle(int n, std::string_view owner) {
    Node& node = nodes_[static_cast<size_t>(n)];
    const int64_t gpus = node.spec->gpus;
    if (owner == "lending" || owner == "k8s" || owner == "returning") {
      if (!node.lend_counted) {
        node.lend_counted = true;
        ++result_.lends;
        result_.gpus_taken += gpus;
        k8s_held_gpus_ += gpus;
      }
      if (node.owner == Owner::kLending && !node.ready_pending && !HasReservation(node.model)) {
        node.ready_pending = true;
        if (opt_.lend_overhead > std::chrono::milliseconds(0)) {
          Push(now_ + opt_.lend_overhead, EventType::kLendReady, n, 0);
        } else {
          FinishLend(n);
        }
      }
      return;
    }
    if (node.owner == Owner::kSlurm) return;
    if (node.lend_counted) {
      if (node.pods > 0) Fail(n, InternalError("returned to Slurm with pods on it"));
      ++result_.returns;
      k8s_held_gpus_ -= gpus;
    } else {
      ++result_.protected_skips;
    }
    for (int id : std::vector<int>(node.nominated)) UnbindPod(id);
    node.nominated.clear();
    node.owner = Owner::kSlurm;
    node.lend_counted = node.ready_pending = false;
    k8s_nodes_.erase(n);
  }

  // The lend is complete and its overhead over: the node is Kubernetes' and the pods
  // nominated to it start.
  void FinishLend(int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    if (node.owner != Owner::kLending || !node.ready_pending) return;
    node.owner = Owner::kK8s;
    std::vector<int> pods = std::move(node.nominated);
    node.nominated.clear();
    for (int id : pods) StartPod(id);
    ScheduleDrive(n, now_);
  }

  // kube-scheduler preempts for `p`: the victim reservation (PickVictims: lowest priority,
  // newest, by name) among running reservations on nodes the pod may use, deleted with its
  // termination grace. Returns the node, or -1 when none qualifies.
  int LendFor(const Pod& p) {
    std::vector<own::VictimCandidate> cands;
    std::vector<int> index;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& node = nodes_[i];
      const inventory::GpuPod* r = LiveReservation(node.model);
      if (node.owner != Owner::kSlurm || r == nullptr || r->phase != "Running") continue;
      // A NoSchedule taint of the bridge or its swap guard: the pod may not go there.
      if (!node.model.k8s->taints.empty() || node.model.k8s->labels.count(own::kSwapGuardLabel)) {
        continue;
      }
      if (!ModelAllowed(*p.task, node.spec->model)) continue;
      own::VictimCandidate c{node.spec->name, r->gpus, r->priority, r->started.value_or(t0_), {}};
      for (int id : node.jobs) {
        const Job& j = jobs_[static_cast<size_t>(id)];
        c.jobs.push_back({j.gpus, j.run_start});
      }
      cands.push_back(std::move(c));
      index.push_back(static_cast<int>(i));
    }
    const own::Demand demand{p.need_gpus, 1, cfg_.lending.inference_threshold};
    const std::vector<size_t> picked = own::PickVictims(cands, demand, now_);
    if (picked.empty()) {
      ++result_.protected_skips;
      return -1;
    }
    const int n = index[picked.front()];
    Node& node = nodes_[static_cast<size_t>(n)];
    inventory::GpuPod* r = LiveReservation(node.model);
    r->terminating = true;
    r->deletion_time = now_ + own::ReservationGrace(cfg_.lending);
    node.owner = Owner::kLending;
    node.gpu_free.assign(static_cast<size_t>(node.spec->gpus), kGpuMilli);
    k8s_nodes_.insert(n);
    result_.gpus_needed += p.need_gpus;
    return n;
  }

  // ---- The bridge at GPU granularity: every move through src/devices ----------------

  bool gpu_mode() const { return mode_ == Mode::kBridgeGpu; }
  static bool SlurmIdle(const Gpu& g) { return g.job < 0 && g.placeholder == 0 && g.k8s_hold; }

  // Slurm's free GPUs on the node: idle Slurm-held devices, less what a pending
  // placeholder (the top-priority job there) waits for.
  void Recount(int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    IndexRemove(n);
    int64_t free = 0, reserved = 0;
    for (const Gpu& g : node.gpu) free += SlurmIdle(g) ? 1 : 0;
    for (const Give& g : node.gives) reserved += g.running ? 0 : g.gpus;
    node.slurm_free = std::max<int64_t>(0, free - reserved);
    IndexAdd(n);
  }

  // slurmctld: a pending placeholder starts as soon as enough GPUs are free; it picks the
  // lowest indices.
  void StartPlaceholders(int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    for (Give& give : node.gives) {
      if (give.running) continue;
      std::vector<int64_t> free;
      for (size_t g = 0; g < node.gpu.size(); ++g) {
        if (SlurmIdle(node.gpu[g])) free.push_back(static_cast<int64_t>(g));
      }
      if (static_cast<int64_t>(free.size()) < give.gpus) continue;
      free.resize(static_cast<size_t>(give.gpus));
      for (int64_t g : free) node.gpu[static_cast<size_t>(g)].placeholder = give.job_id;
      give.running = true;
      give.indices = std::move(free);
      give.start = now_;
      k8s_held_gpus_ += give.gpus;
      Push(now_, EventType::kDrive, n, 0);  // lift the holds (not from inside a Drive)
    }
  }

  static std::string PodName(int id) { return StrCat("inference/pod-", id); }

  // The node as the daemon would observe it, in the planner's terms.
  devices::NodeDevices DevicesOf(int n) const {
    const Node& node = nodes_[static_cast<size_t>(n)];
    devices::NodeDevices d;
    d.node = node.spec->name;
    d.model = node.spec->model;
    for (size_t g = 0; g < node.gpu.size(); ++g) {
      const int64_t idx = static_cast<int64_t>(g);
      d.devices.push_back({idx, devices::DeviceName(idx), node.gpu[g].k8s_hold});
      if (node.gpu[g].pods > 0) d.claims.push_back({"", {devices::DeviceName(idx)}, true});
    }
    for (int id : node.jobs) {
      const Job& j = jobs_[static_cast<size_t>(id)];
      d.jobs.push_back({.view = j.view,
                        .indices = j.indices,
                        .signalled_at = j.signalled_at,
                        .signalled_exactly = true});
    }
    for (const Give& g : node.gives) {
      d.placeholders.push_back({g.job_id, PodName(g.pod), g.gpus, g.victims, g.running, g.indices,
                                g.start, g.returning, g.idle_since});
    }
    return d;
  }

  // A pending pod that fits no lifted device: the planner picks the node and the victims.
  bool GiveFor(int pod) {
    const Pod& p = pods_[static_cast<size_t>(pod)];
    // Only nodes that could serve it; those with enough idle GPUs, when there are any (the
    // planner ranks a give without preemption first anyway).
    std::vector<int> idle, other;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& node = nodes_[i];
      if (node.spec->gpus < p.need_gpus || !ModelAllowed(*p.task, node.spec->model)) continue;
      int64_t slurm = 0, free = 0, lent_idle = 0;
      bool pending = false;
      for (const Gpu& g : node.gpu) {
        slurm += g.placeholder == 0 && g.k8s_hold ? 1 : 0;
        free += SlurmIdle(g) ? 1 : 0;
        lent_idle += g.placeholder != 0 && !g.k8s_hold && g.pods == 0 ? 1 : 0;
      }
      for (const Give& g : node.gives) pending |= !g.running;
      if (pending || slurm + lent_idle < p.need_gpus) continue;
      (free + lent_idle >= p.need_gpus ? idle : other).push_back(static_cast<int>(i));
    }
    std::vector<devices::NodeDevices> cands;
    for (int i : idle.empty() ? other : idle) cands.push_back(DevicesOf(i));
    const devices::PendingPod want{PodName(pod), p.need_gpus, cfg_.lending.inference_threshold, ""};
    std::optional<devices::Selection> s = devices::ChooseNode(cands, want, cfg_, now_);
    if (!s) {
      ++result_.protected_skips;
      return false;
    }
    const int n = node_index_.at(s->node);
    for (const devices::DeviceAction& a : devices::PlanGive(*s, want)) Execute(n, a);
    ++result_.lends;
    result_.gpus_needed += p.need_gpus;
    result_.gpus_taken += s->gpus;  // the placeholder's size
    result_.gpus_preempted += s->victim_gpus;
    return true;
  }

  // Plans node `n` and carries the actions out until nothing is left to do now.
  void Drive(int n) {
    for (int pass = 0; pass < 16; ++pass) {
      const devices::NodePlan plan = devices::PlanNode(DevicesOf(n), cfg_, now_);
      result_.device_violations += static_cast<int64_t>(plan.violations.size());
      if (plan.actions.empty()) {
        // A victim's grace ends then: the daemon's lane wakes for it.
        if (plan.recheck_at && *plan.recheck_at > now_) ScheduleDrive(n, *plan.recheck_at);
        return;
      }
      deferred_ = false;
      for (const devices::DeviceAction& a : plan.actions) Execute(n, a);
      if (deferred_) return;  // planned again by the drive its refusal pushed
    }
  }

  Give* FindGive(Node& node, uint32_t job_id) {
    for (Give& g : node.gives) {
      if (g.job_id == job_id) return &g;
    }
    return nullptr;
  }

  // The executor: each action on the simulated cluster, one handler per kind.
  void Execute(int n, const devices::DeviceAction& a) {
    std::visit([&](const auto& o) { Apply(n, o); }, a.op);
  }

  Node& NodeAt(int n) { return nodes_[static_cast<size_t>(n)]; }

  void Apply(int n, const devices::SubmitPlaceholder& o) {
    Give g;
    g.job_id = next_placeholder_++;
    g.pod = std::stoi(o.pod.substr(o.pod.rfind('-') + 1));
    g.gpus = o.gpus;
    g.victims = o.victims;
    NodeAt(n).gives.push_back(std::move(g));
    k8s_nodes_.insert(n);
    StartPlaceholders(n);
    Recount(n);
    Drive(n);
  }

  void Apply(int /*n*/, const devices::SignalJobs& o) {
    for (uint32_t id : o.jobs.job_ids) {
      Job& j = jobs_[id - 1];
      j.signalled_at = now_;  // the grace-end drive comes from the plan's recheck_at
    }
  }

  void Apply(int n, const plan::PreemptSlurmJobs& o) {
    Node& node = NodeAt(n);
    for (uint32_t id : o.job_ids) {
      Job& j = jobs_[id - 1];
      j.preempt_mode = o.mode;
      if (j.running) {
        j.view.admin_comment =
            own::RecordPreemption(j.view.admin_comment, own::ToUnix(now_),
                                  StrCat("inference/lend-", node.spec->name), cfg_.lending);
      }
      Preempt(static_cast<int>(id - 1), j.run);
    }
  }

  void SetHolds(Node& node, const std::vector<std::string>& names, bool hold) {
    for (const std::string& d : names) {
      node.gpu[static_cast<size_t>(*devices::DeviceMinor(d))].k8s_hold = hold;
    }
  }

  void Apply(int n, const devices::AddDeviceHold& o) { SetHolds(NodeAt(n), o.devices, true); }

  void Apply(int n, const devices::RemoveDeviceHold& o) {
    Node& node = NodeAt(n);
    SetHolds(node, o.devices, false);
    // kube-scheduler places the pod the give was for on the lifted devices.
    Give* g = FindGive(node, o.placeholder_job);
    const Pod& p = pods_[static_cast<size_t>(g->pod)];
    if (p.node < 0) {
      std::vector<int> gpus = Fit(node, p);
      if (!gpus.empty()) {
        BindPod(g->pod, n, gpus, /*delayed=*/true);
      } else {
        pending_pods_.push_back(g->pod);  // cannot happen with whole lifted devices
      }
    }
  }

  void Apply(int n, const devices::RecordIdleSince& o) {
    Give* g = FindGive(NodeAt(n), o.placeholder_job);
    if (o.at_ms == 0) {
      g->idle_since.reset();
      return;
    }
    g->idle_since = now_;
    const own::ReturnDecision d =
        devices::ReturnStarts(g->start, g->idle_since, false, true, cfg_.lending, now_);
    if (d.at) Push(*d.at, EventType::kDrive, n, 0);
  }

  void Apply(int n, const devices::MarkReturning& o) {
    Give* g = FindGive(NodeAt(n), o.placeholder_job);
    g->returning = true;
    g->held_again = now_;
    Push(now_ + devices::kHoldSettle, EventType::kDrive, n, 0);
  }

  void Apply(int n, const devices::EndPlaceholder& o) {
    Node& node = NodeAt(n);
    Give* g = FindGive(node, o.placeholder_job);
    // The daemon's executor refuses it until the holds have settled (Aborted), and plans
    // again then (the drive pushed by MarkReturning).
    if (g->running && g->returning && g->held_again &&
        now_ < *g->held_again + devices::kHoldSettle) {
      deferred_ = true;
      return;
    }
    for (int64_t i : g->indices) node.gpu[static_cast<size_t>(i)].placeholder = 0;
    k8s_held_gpus_ -= g->gpus;
    ++result_.returns;
    std::erase_if(node.gives, [&](const Give& x) { return x.job_id == o.placeholder_job; });
    if (node.gives.empty()) k8s_nodes_.erase(n);
    Recount(n);
    slurm_dirty_ = true;
  }

  // The simulated cluster keeps no record of unused gives (DevicesOf reports none): a node
  // is never backed off for a pod.
  void Apply(int, const devices::RecordUnusedGive&) {}

  // The simulation plans no mode switch (it runs PlanPass and PlanNode, not
  // PlanModeSwitches): every node stays eligible, none leaves GPU sharing, so no hold is
  // dropped.
  void Apply(int, const devices::DropDeviceHold&) {}

  // No placeholder ends behind the simulated planner's back, so no give is lost and no pod
  // is evicted off one.
  void Apply(int, const plan::EvictPod&) {}

  // The GPU health condition comes from PlanPass, which the simulation does not run (and no
  // simulated GPU is ever tainted).
  void Apply(int, const plan::SetNodeCondition&) {}

  // ---- Figures -------------------------------------------------------------------------

  void Finish() {
    Result& r = result_;
    r.allocated_gpu_hours = r.inference_gpu_hours + r.training_gpu_hours;
    r.allocation = r.capacity_gpu_hours > 0 ? r.allocated_gpu_hours / r.capacity_gpu_hours : 0;
    r.lost_fraction =
        r.allocated_gpu_hours_total > 0 ? r.lost_gpu_hours / r.allocated_gpu_hours_total : 0;
    r.end_hours = ToSeconds(last_end_ - t0_) / 3600;

    std::vector<double> waits;
    for (const Pod& p : pods_) {
      if (p.start) {
        waits.push_back(ToSeconds(*p.start - p.arrival));
      } else {
        ++r.inference_never_started;
      }
    }
    r.inference_wait_s = Summarize(std::move(waits));

    std::vector<double> job_waits, slowdowns;
    for (const Job& j : jobs_) {
      if (j.first_start) job_waits.push_back(ToSeconds(*j.first_start - j.submit));
      if (j.end) {
        slowdowns.push_back(ToSeconds(*j.end - j.submit) /
                            std::max(kMinSlowdownRuntime, ToSeconds(j.runtime)));
      } else {
        ++r.training_never_finished;
      }
      r.preempted_jobs += j.preemptions > 0 ? 1 : 0;
      r.max_preemptions_per_job = std::max(r.max_preemptions_per_job, j.preemptions);
    }
    r.training_wait_s = Summarize(std::move(job_waits));
    r.training_slowdown = Summarize(std::move(slowdowns));
    if (r.whole_node_samples > 0) {
      const double samples = static_cast<double>(r.whole_node_samples);
      r.whole_nodes_idle_mean /= samples;
      r.whole_nodes_for_slurm_mean /= samples;
      r.whole_node_for_slurm_share /= samples;
    }
    r.preemptions_per_job =
        jobs_.empty() ? 0 : static_cast<double>(r.preemptions) / static_cast<double>(jobs_.size());

    const double bucket_s = ToSeconds(bucket_);
    for (size_t k = 0; k < series_.size(); ++k) {
      series_[k].hours = bucket_s * static_cast<double>(k) / 3600;
      series_[k].inference /= bucket_s;
      series_[k].training /= bucket_s;
    }
    r.series = std::move(series_);
  }

  const Mode mode_;
  const Options& opt_;
  const config::Config& cfg_;
  const TimePoint t0_;
  TimePoint now_ = own::FromUnix(kEpoch);
  TimePoint last_end_ = own::FromUnix(kEpoch);     // the last task's end (the bridge acts on)
  TimePoint next_sample_ = own::FromUnix(kEpoch);  // SampleWholeNodes' next instant
  Duration horizon_{};
  Duration bucket_{1};
  int64_t max_node_gpus_ = 0;

  std::vector<Node> nodes_;
  std::map<std::string, int> node_index_;
  int64_t k8s_held_gpus_ = 0;             // GPUs Kubernetes holds (lent or its static part)
  uint32_t next_placeholder_ = 1u << 30;  // placeholder job ids, apart from the trace's
  std::vector<Job> jobs_;
  std::vector<Pod> pods_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;

  std::set<std::pair<TimePoint, int>> queue_;  // Slurm's pending jobs by submit time
  std::vector<std::set<int>> free_;
  bool slurm_dirty_ = false;
  bool deferred_ = false;  // GPU mode: the pass's EndPlaceholder waits for its holds to settle
  std::vector<int> pending_pods_;  // FIFO
  std::vector<int> unbound_pods_;  // pending again, joining pending_pods_ after this pass
  std::set<int> k8s_nodes_;        // owned by Kubernetes or being lent to it

  plan::testing::Log log_;  // node mode: what the executor model did
  Status error_;            // the first action the model refused (a bug: the run fails)

  int64_t alloc_inference_milli_ = 0;
  int64_t alloc_training_gpus_ = 0;
  std::vector<SeriesPoint> series_;
  Result result_;
};

}  // namespace

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kStaticPeak:
      return "static-peak";
    case Mode::kStaticAvg:
      return "static-avg";
    case Mode::kBridge:
      return "bridge";
    case Mode::kBridgeGpu:
      return "bridge-gpu";
  }
  return "bridge";
}

config::Config Options::DefaultConfig() {
  config::Config cfg;
  cfg.lending.enabled = true;
  cfg.admission.preemptible_qos = {"BE", "Burstable"};
  return cfg;
}

StatusOr<Result> Simulate(const std::vector<Task>& tasks, const std::vector<GpuNode>& nodes,
                          Mode mode, const Options& options) {
  if (!(options.compress > 0)) return InvalidArgumentError("compress must be > 0");
  if (options.checkpoint_interval <= std::chrono::seconds(0)) {
    return InvalidArgumentError("checkpoint interval must be > 0");
  }
  Simulation sim(tasks, nodes, mode, options);
  return sim.Run();
}

std::vector<GpuNode> SampleNodes(const std::vector<GpuNode>& nodes, double fraction,
                                 uint64_t seed) {
  if (fraction >= 1) return nodes;
  std::map<std::string, std::vector<size_t>> by_model;
  for (size_t i = 0; i < nodes.size(); ++i) by_model[nodes[i].model].push_back(i);
  std::vector<size_t> keep;
  for (auto& [model, idx] : by_model) {
    // Fisher-Yates with the seeded generator, then the first k.
    for (size_t i = idx.size(); i > 1; --i) {
      std::swap(idx[i - 1], idx[Mix(seed ^ (i * 0x9e37ULL) ^ Fnv1a(model)) % i]);
    }
    const size_t k = std::max<size_t>(
        1, static_cast<size_t>(std::llround(fraction * static_cast<double>(idx.size()))));
    keep.insert(keep.end(), idx.begin(), idx.begin() + static_cast<long>(std::min(k, idx.size())));
  }
  std::sort(keep.begin(), keep.end());
  std::vector<GpuNode> out;
  for (size_t i : keep) out.push_back(nodes[i]);
  return out;
}

}  // namespace skb::sim

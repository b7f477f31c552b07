// SPDX-License-Identifier: Apache-2.0
#include "bench/quota/quota_study.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "src/quota/quota.h"

namespace skb::quota_study {

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kStatic:
      return "static";
    case Mode::kPool:
      return "pool";
    case Mode::kQuotas:
      return "quotas";
  }
  return "?";
}

StatusOr<std::vector<Job>> ReadPhilly(const std::string& path, int min_team_jobs) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read " + path);
  std::string line;
  std::getline(in, line);
  if (line.rfind("timestamp,duration,num_gpus", 0) != 0) {
    return InvalidArgumentError(path + ": unexpected header '" + line + "'");
  }
  std::vector<Job> jobs;
  std::vector<int64_t> submit;
  int row = 1;
  while (std::getline(in, line)) {
    ++row;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string ts, dur, gpus, gpu_time, team;
    if (!std::getline(ss, ts, ',') || !std::getline(ss, dur, ',') || !std::getline(ss, gpus, ',') ||
        !std::getline(ss, gpu_time, ',') || !std::getline(ss, team, ',')) {
      return InvalidArgumentError(path + ":" + std::to_string(row) + ": not 5 columns");
    }
    std::tm tm{};
    if (std::sscanf(ts.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
      return InvalidArgumentError(path + ":" + std::to_string(row) + ": bad timestamp " + ts);
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    Job j;
    j.submit_s = static_cast<int64_t>(timegm(&tm));
    j.duration_s = static_cast<int64_t>(std::llround(std::stod(dur)));
    j.gpus = std::stoi(gpus);
    j.team = team;
    if (j.gpus <= 0 || j.duration_s <= 0) continue;
    jobs.push_back(std::move(j));
  }
  // Teams with a handful of jobs (the trace has labels with under 10) are left out: a
  // static split cannot give them even one node, and they carry no load worth a quota.
  std::map<std::string, int> per_team;
  for (const Job& j : jobs) per_team[j.team]++;
  std::erase_if(jobs, [&](const Job& j) { return per_team[j.team] < min_team_jobs; });
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });
  if (jobs.empty()) return InvalidArgumentError(path + ": no jobs");
  const int64_t t0 = jobs.front().submit_s;
  for (Job& j : jobs) j.submit_s -= t0;
  return jobs;
}

InferenceTrace MapInference(const std::vector<sim::Task>& tasks, int64_t window_s) {
  InferenceTrace out;
  int64_t last_creation = 0, last_time = 0;
  for (const sim::Task& t : tasks) {
    last_creation = std::max(last_creation, t.creation);
    last_time = std::max({last_time, t.creation, t.scheduled.value_or(0), t.deletion.value_or(0)});
  }
  const int64_t start = std::max<int64_t>(0, last_creation - window_s);
  out.window_start_s = start;
  for (const sim::Task& t : tasks) {
    if (!t.Inference() || !t.UsesGpu()) continue;
    out.inference_gpu_tasks++;
    if (!t.scheduled) {
      out.never_scheduled++;
      continue;
    }
    const int64_t end = t.deletion.value_or(last_time);
    if (end <= start) {
      out.ended_before_window++;
      continue;
    }
    // A pod running when the window opens arrives at its start with the rest of its run.
    const int64_t run_from = std::max(*t.scheduled, start);
    Job j;
    j.submit_s = std::max(t.creation, start) - start;
    j.duration_s = end - run_from;
    j.gpus = static_cast<int>(t.WholeGpus());
    j.team = kInferenceTenant;
    j.inference = true;
    if (j.duration_s <= 0) {
      out.no_run_time++;
      continue;
    }
    if (*t.scheduled < start) out.running_at_start++;
    if (!t.deletion) out.no_deletion++;
    if (t.Fractional()) {
      out.fractional++;
      out.fractional_gpu_h_added +=
          static_cast<double>(j.duration_s) * static_cast<double>(1000 - t.gpu_milli) / 1000 / 3600;
    }
    out.jobs.push_back(std::move(j));
  }
  std::stable_sort(out.jobs.begin(), out.jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });
  return out;
}

StatusOr<InferenceTrace> ReadInference(const std::string& path, int64_t window_s) {
  ASSIGN_OR_RETURN(std::string text, sim::ReadFile(path));
  ASSIGN_OR_RETURN(std::vector<sim::Task> tasks, sim::ParseTasks(text, path));
  InferenceTrace out = MapInference(tasks, window_s);
  if (out.jobs.empty()) return InvalidArgumentError(path + ": no inference pod with a GPU ran");
  return out;
}

int PeakConcurrentGpus(const std::vector<Job>& jobs) {
  std::vector<std::pair<int64_t, int>> changes;  // time, GPUs (ends before starts at a tie)
  for (const Job& j : jobs) {
    changes.push_back({j.submit_s, j.gpus});
    changes.push_back({j.submit_s + j.duration_s, -j.gpus});
  }
  std::sort(changes.begin(), changes.end());
  int now = 0, peak = 0;
  for (auto [t, g] : changes) peak = std::max(peak, now += g);
  return peak;
}

std::vector<Job> Merge(const std::vector<Job>& training, const std::vector<Job>& inference) {
  std::vector<Job> all = training;
  all.insert(all.end(), inference.begin(), inference.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });
  return all;
}

std::map<std::string, double> Shares(const std::vector<Job>& jobs) {
  std::map<std::string, double> gpu_s;
  double total = 0;
  for (const Job& j : jobs) {
    gpu_s[j.team] += static_cast<double>(j.duration_s) * j.gpus;
    total += static_cast<double>(j.duration_s) * j.gpus;
  }
  for (auto& [team, v] : gpu_s) v /= total;
  return gpu_s;
}

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

struct Running {
  int job = -1;
  int64_t gen = 0;
  std::vector<std::pair<int, int>> placement;  // node, GPUs
  int64_t start = 0;
  bool preempting = false;
  int awaited_by = -1;  // the job whose reclaim made this run a victim
};

struct State {
  int64_t done_s = 0;  // checkpointed progress
  int64_t first_start = -1;
  int run = -1;  // index into runs while running
  bool within_at_submit = false;
  int awaiting_victims = 0;  // > 0: a reclaim for this job is in flight
  int claimed = 0;           // GPUs counted for it while it awaits
};

enum class EventKind { kArrive = 0, kGraceEnd = 1, kFinish = 2 };
struct Event {
  int64_t t;
  EventKind kind;
  int id;           // job (arrive) or run (finish, grace end)
  int64_t seq;      // tie break: FIFO
  int64_t gen = 0;  // the run's generation (run slots are reused)
  bool operator>(const Event& o) const {
    return std::tie(t, kind, seq) > std::tie(o.t, o.kind, o.seq);
  }
};

class Sim {
 public:
  Sim(const std::vector<Job>& jobs, int cluster_gpus, Mode mode, const Options& o)
      : jobs_(jobs), mode_(mode), o_(o), states_(jobs.size()) {
    const int n = std::max(1, cluster_gpus / o.gpus_per_node);
    free_.assign(n, o.gpus_per_node);
    runs_on_.assign(n, {});
    owner_.assign(n, -1);
    // Teams with a fixed guarantee take it first; the others share the rest by GPU-hours.
    std::map<std::string, double> shares;
    if (o.fixed_guarantees.empty()) {
      shares = Shares(jobs);
    } else {
      std::vector<Job> sharing;
      for (const Job& j : jobs) {
        if (!o.fixed_guarantees.contains(j.team)) sharing.push_back(j);
      }
      if (!sharing.empty()) shares = Shares(sharing);
    }
    std::set<std::string> kubernetes;  // teams of inference pods
    for (const Job& j : jobs) {
      if (!shares.contains(j.team)) shares[j.team] = 0;  // a fixed guarantee's team
      if (j.inference) kubernetes.insert(j.team);
    }
    for (auto& [team, share] : shares) {
      team_index_[team] = static_cast<int>(teams_.size());
      teams_.push_back(team);
      share_.push_back(share);
      kubernetes_.push_back(kubernetes.contains(team));
    }
    queues_.resize(teams_.size());
    usage_.assign(teams_.size(), 0);
    claimed_.assign(teams_.size(), 0);
    const int cluster_gpus_all = n * o.gpus_per_node;
    int fixed_gpus = 0, fixed_nodes = 0;
    std::vector<int> nodes_of(teams_.size());
    std::vector<std::optional<int>> fixed(teams_.size());
    for (size_t t = 0; t < teams_.size(); ++t) {
      auto it = o.fixed_guarantees.find(teams_[t]);
      if (it == o.fixed_guarantees.end()) continue;
      fixed[t] = std::min(it->second, cluster_gpus_all - fixed_gpus);
      fixed_gpus += *fixed[t];
      nodes_of[t] = std::min((it->second + o.gpus_per_node - 1) / o.gpus_per_node, n - fixed_nodes);
      fixed_nodes += nodes_of[t];
    }
    // Quotas: floor(share x GPUs). Static: whole nodes by largest remainder.
    for (size_t t = 0; t < teams_.size(); ++t) {
      quota::Tenant tenant{.name = teams_[t]};
      (kubernetes_[t] ? tenant.kubernetes_namespaces : tenant.slurm_accounts).push_back(teams_[t]);
      tenant.guaranteed =
          fixed[t] ? *fixed[t]
                   : static_cast<int>(std::floor(share_[t] * (cluster_gpus_all - fixed_gpus)));
      quotas_.tenants.push_back(std::move(tenant));
    }
    std::vector<std::pair<double, int>> rem;
    int given = fixed_nodes;
    for (size_t t = 0; t < teams_.size(); ++t) {
      if (fixed[t]) continue;
      double exact = share_[t] * (n - fixed_nodes);
      nodes_of[t] = static_cast<int>(std::floor(exact));
      given += nodes_of[t];
      rem.push_back({exact - nodes_of[t], static_cast<int>(t)});
    }
    std::sort(rem.rbegin(), rem.rend());
    for (size_t i = 0; given < n && i < rem.size(); ++i, ++given) nodes_of[rem[i].second]++;
    int node = 0;
    for (size_t t = 0; t < teams_.size(); ++t) {
      for (int k = 0; k < nodes_of[t]; ++k) owner_[node++] = static_cast<int>(t);
    }
    static_gpus_ = nodes_of;
    for (int& x : static_gpus_) x *= o.gpus_per_node;
  }

  Result Execute() {
    for (size_t i = 0; i < jobs_.size(); ++i) {
      Push({jobs_[i].submit_s, EventKind::kArrive, static_cast<int>(i), 0});
    }
    while (!events_.empty()) {
      now_ = events_.top().t;
      while (!events_.empty() && events_.top().t == now_) {
        Event e = events_.top();
        events_.pop();
        Handle(e);
      }
      Pass();
    }
    return Collect();
  }

 private:
  void Push(Event e) {
    e.seq = seq_++;
    events_.push(e);
  }

  int Team(int job) const { return team_index_.at(jobs_[job].team); }

  void Handle(const Event& e) {
    switch (e.kind) {
      case EventKind::kArrive: {
        int t = Team(e.id);
        states_[e.id].within_at_submit =
            mode_ == Mode::kQuotas && usage_[t] + jobs_[e.id].gpus <= quotas_.tenants[t].guaranteed;
        Enqueue(e.id);
        break;
      }
      case EventKind::kFinish: {
        Running& r = runs_[e.id];
        if (r.job < 0 || r.gen != e.gen) break;  // stale
        states_[r.job].done_s = jobs_[r.job].duration_s;
        int claimant = r.preempting ? r.awaited_by : -1;  // finished within its grace
        End(e.id);
        Released(claimant);
        break;
      }
      case EventKind::kGraceEnd: {
        Running& r = runs_[e.id];
        if (r.job < 0 || r.gen != e.gen) break;  // finished within its grace
        int job = r.job;
        int64_t ran = now_ - r.start;
        int64_t kept = (ran / o_.checkpoint_interval_s) * o_.checkpoint_interval_s;
        State& s = states_[job];
        s.done_s = std::min(s.done_s + kept, jobs_[job].duration_s - 1);
        TeamResultFor(Team(job)).preempted_gpu_h +=
            static_cast<double>(ran - kept) * jobs_[job].gpus / 3600.0;
        TeamResultFor(Team(job)).preemptions++;
        int claimant = r.awaited_by;
        End(e.id);
        Released(claimant);
        Enqueue(job);  // requeued at its place (by submit time)
        break;
      }
    }
  }

  // One victim of `claimant`'s reclaim gave its GPUs back.
  void Released(int claimant) {
    if (claimant >= 0 && --states_[claimant].awaiting_victims == 0) {
      claimed_[Team(claimant)] -= states_[claimant].claimed;
      states_[claimant].claimed = 0;
    }
  }

  TeamResult& TeamResultFor(int team) {
    if (team_results_.empty()) team_results_.resize(teams_.size());
    return team_results_[team];
  }

  void Enqueue(int job) {
    auto& q = queues_[mode_ == Mode::kPool ? 0 : Team(job)];
    auto it = q.end();
    while (it != q.begin() && jobs_[*std::prev(it)].submit_s > jobs_[job].submit_s) --it;
    q.insert(it, job);
  }

  void End(int run) {
    Running& r = runs_[run];
    for (auto [node, g] : r.placement) {
      free_[node] += g;
      auto& v = runs_on_[node];
      v.erase(std::find(v.begin(), v.end(), run));
    }
    usage_[Team(r.job)] -= jobs_[r.job].gpus;
    states_[r.job].run = -1;
    r.job = -1;
    free_runs_.push_back(run);
  }

  bool Usable(int node, int team) const { return mode_ != Mode::kStatic || owner_[node] == team; }

  // Best fit for up to one node's GPUs; whole free nodes for more.
  std::vector<std::pair<int, int>> Place(int job) {
    const int g = jobs_[job].gpus, team = Team(job);
    std::vector<std::pair<int, int>> out;
    if (g <= o_.gpus_per_node) {
      int best = -1;
      for (size_t n = 0; n < free_.size(); ++n) {
        if (!Usable(static_cast<int>(n), team) || free_[n] < g) continue;
        if (best < 0 || free_[n] < free_[best]) best = static_cast<int>(n);
        if (free_[n] == g) break;
      }
      if (best >= 0) out.push_back({best, g});
      return out;
    }
    int need = (g + o_.gpus_per_node - 1) / o_.gpus_per_node, left = g;
    for (size_t n = 0; n < free_.size() && need > 0; ++n) {
      if (!Usable(static_cast<int>(n), team) || free_[n] != o_.gpus_per_node) continue;
      int take = std::min(left, o_.gpus_per_node);
      out.push_back({static_cast<int>(n), take});
      left -= take;
      --need;
    }
    if (need > 0) out.clear();
    return out;
  }

  void Start(int job, std::vector<std::pair<int, int>> placement) {
    int id;
    if (!free_runs_.empty()) {
      id = free_runs_.back();
      free_runs_.pop_back();
    } else {
      id = static_cast<int>(runs_.size());
      runs_.emplace_back();
    }
    Running& r = runs_[id];
    r = {};
    r.gen = ++gen_;
    r.job = job;
    r.start = now_;
    r.placement = std::move(placement);
    for (auto [node, g] : r.placement) {
      free_[node] -= g;
      runs_on_[node].push_back(id);
    }
    State& s = states_[job];
    if (s.first_start < 0) s.first_start = now_;
    s.run = id;
    usage_[Team(job)] += jobs_[job].gpus;
    Push({now_ + (jobs_[job].duration_s - s.done_s), EventKind::kFinish, id, 0, r.gen});
  }

  int FreeTotal(int team) const {
    int f = 0;
    for (size_t n = 0; n < free_.size(); ++n) {
      if (Usable(static_cast<int>(n), team)) f += free_[n];
    }
    return f;
  }

  // Starts every job of `queue` that fits (FIFO with backfill), while GPUs are free.
  void Backfill(std::list<int>& queue, int team_for_free) {
    int free = FreeTotal(team_for_free);
    // A size that found no place finds none for anything as large until a start changes
    // the nodes (starts only take GPUs away): keeps saturated passes linear and cheap.
    int unplaceable = std::numeric_limits<int>::max();
    for (auto it = queue.begin(); it != queue.end() && free > 0 && unplaceable > 1;) {
      int job = *it;
      if (jobs_[job].gpus > free || jobs_[job].gpus >= unplaceable ||
          states_[job].awaiting_victims > 0) {
        ++it;
        continue;
      }
      auto p = Place(job);
      if (p.empty()) {
        unplaceable = jobs_[job].gpus;
        ++it;
        continue;
      }
      if (mode_ == Mode::kQuotas) {
        // Work beyond the floor borrows only idle GPUs (the quota policy's own answer).
        quota::Decision d =
            quota::PlanStart(quotas_, Light(), AsWork(job, true), free, {}, now_, Reclaim());
        if (!d.start) {
          ++it;
          continue;
        }
      }
      free -= jobs_[job].gpus;
      Start(job, std::move(p));
      it = queue.erase(it);
    }
  }

  quota::Work AsWork(int job, bool pending) const {
    quota::Work w;
    w.id = "j" + std::to_string(job);
    w.tenant = jobs_[job].team;
    w.gpus = jobs_[job].gpus;
    if (jobs_[job].inference) {
      w.side = quota::Side::kKubernetes;
      w.preemptible = false;  // at or above the protected class
    }
    if (pending) {
      w.started_at = jobs_[job].submit_s;
    } else {
      const Running& r = runs_[states_[job].run];
      w.started_at = r.start;
      w.work_lost_s = (now_ - r.start) % o_.checkpoint_interval_s;
    }
    return w;
  }

  quota::ReclaimOptions Reclaim() const {
    quota::ReclaimOptions r;
    r.min_run_time_s = o_.min_run_time_s;
    return r;
  }

  // Usage only (enough for decisions on idle GPUs); reclaim needs Classify.
  quota::Classification Light() const {
    quota::Classification c;
    for (size_t t = 0; t < teams_.size(); ++t) {
      quota::TenantUsage& u = c.usage[teams_[t]];
      u.guaranteed = quotas_.tenants[t].guaranteed;
      (kubernetes_[t] ? u.in_use_kubernetes : u.in_use_slurm) = usage_[t] + claimed_[t];
      u.over_per_weight = u.in_use() - u.guaranteed;
    }
    return c;
  }

  quota::Classification Full() const {
    std::vector<quota::Work> running;
    for (const Running& r : runs_) {
      if (r.job >= 0) running.push_back(AsWork(r.job, false));
    }
    quota::Classification c = quota::Classify(quotas_, running);
    for (size_t t = 0; t < teams_.size(); ++t) {
      quota::TenantUsage& u = c.usage[teams_[t]];
      (kubernetes_[t] ? u.in_use_kubernetes : u.in_use_slurm) +=
          claimed_[t];  // reclaims in flight count as used
    }
    return c;
  }

  // A team below its floor whose job does not fit: reclaim borrowed work for it.
  bool TryReclaim(int job, const quota::Classification& c) {
    const int g = jobs_[job].gpus;
    const int per_node = std::min(g, o_.gpus_per_node);
    const int need_nodes = (g + o_.gpus_per_node - 1) / o_.gpus_per_node;
    quota::Work claimant = AsWork(job, true);
    claimant.gpus = g;
    struct Option {
      int node;
      quota::Decision d;
    };
    std::vector<Option> options;
    for (size_t n = 0; n < free_.size(); ++n) {
      std::vector<quota::Work> here;  // victims of reclaims in flight are taken already
      for (int run : runs_on_[n]) {
        if (!runs_[run].preempting) here.push_back(AsWork(runs_[run].job, false));
      }
      quota::Work ask = claimant;
      ask.gpus = per_node;
      // Within-floor is decided on the whole request first (below); per node we ask for
      // the node's share of it.
      quota::Decision d = quota::PlanStart(quotas_, c, ask, free_[n], here, now_, Reclaim());
      // A whole free node is an option without victims (a job of several nodes).
      bool idle_node = d.start && free_[n] == o_.gpus_per_node;
      if (!d.start || (d.rule != quota::Rule::kReclaim && !idle_node)) continue;
      options.push_back({static_cast<int>(n), std::move(d)});
    }
    if (static_cast<int>(options.size()) < need_nodes) return false;
    std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
      return std::tie(a.d.victim_gpus, a.node) < std::tie(b.d.victim_gpus, b.node);
    });
    State& s = states_[job];
    for (int k = 0; k < need_nodes; ++k) {
      for (const std::string& id : options[k].d.victims) {
        int victim_job = std::stoi(id.substr(1));
        int run = states_[victim_job].run;
        if (runs_[run].preempting) continue;
        runs_[run].preempting = true;
        runs_[run].awaited_by = job;
        s.awaiting_victims++;
        Push({now_ + o_.grace_s, EventKind::kGraceEnd, run, 0, runs_[run].gen});
      }
    }
    if (s.awaiting_victims == 0) return false;  // the free nodes alone: Place will do
    s.claimed = g;
    claimed_[Team(job)] += g;
    return true;
  }

  void Pass() {
    if (mode_ == Mode::kPool) {
      Backfill(queues_[0], 0);
      return;
    }
    if (mode_ == Mode::kStatic) {
      for (size_t t = 0; t < teams_.size(); ++t) Backfill(queues_[t], static_cast<int>(t));
      return;
    }
    // Quotas, phase 1: work within its team's floor, oldest first per team; what does not
    // fit idle GPUs reclaims borrowed work.
    std::optional<quota::Classification> full;
    int unplaceable = std::numeric_limits<int>::max();  // as in Backfill; starts only shrink it
    for (size_t t = 0; t < teams_.size(); ++t) {
      const int floor = quotas_.tenants[t].guaranteed;
      int unreclaimable = std::numeric_limits<int>::max();  // per team: its own work is spared
      for (auto it = queues_[t].begin(); it != queues_[t].end();) {
        const int room = floor - usage_[t] - claimed_[t];
        if (room <= 0 || (unplaceable <= 1 && unreclaimable <= 1)) break;
        int job = *it;
        const int g = jobs_[job].gpus;
        if (states_[job].awaiting_victims > 0 || g > room ||
            (g >= unplaceable && g >= unreclaimable)) {
          ++it;
          continue;
        }
        if (g < unplaceable) {
          auto p = Place(job);
          if (!p.empty()) {
            Start(job, std::move(p));
            it = queues_[t].erase(it);
            full.reset();
            continue;
          }
          unplaceable = g;
        }
        if (g < unreclaimable) {
          if (!full) full = Full();
          if (TryReclaim(job, *full)) {
            full.reset();
          } else {
            unreclaimable = g;
          }
        }
        ++it;
      }
    }
    // Phase 2: borrowers share what is idle, the least over-floor team first.
    std::vector<int> order(teams_.size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = static_cast<int>(t);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return usage_[a] - quotas_.tenants[a].guaranteed < usage_[b] - quotas_.tenants[b].guaranteed;
    });
    for (int t : order) {
      if (FreeTotal(t) == 0) break;
      Backfill(queues_[t], t);
    }
  }

  Result Collect() {
    Result res;
    res.mode = mode_;
    res.cluster_gpus = static_cast<int>(free_.size()) * o_.gpus_per_node;
    std::vector<std::vector<double>> waits(teams_.size());
    if (team_results_.empty()) team_results_.resize(teams_.size());
    double makespan = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      int t = Team(static_cast<int>(i));
      TeamResult& tr = team_results_[t];
      tr.jobs++;
      const State& s = states_[i];
      if (s.first_start < 0) {
        tr.never_started++;
        waits[t].push_back(std::numeric_limits<double>::infinity());
        continue;
      }
      double w = static_cast<double>(s.first_start - jobs_[i].submit_s);
      waits[t].push_back(w);
      if (s.within_at_submit) {
        tr.within_guarantee_jobs++;
        if (w <= static_cast<double>(o_.guarantee_wait_s)) tr.within_guarantee_on_time++;
      }
      res.gpu_h_served += static_cast<double>(jobs_[i].duration_s) * jobs_[i].gpus / 3600.0;
      makespan = std::max(makespan, static_cast<double>(s.first_start + jobs_[i].duration_s));
    }
    for (size_t t = 0; t < teams_.size(); ++t) {
      TeamResult& tr = team_results_[t];
      tr.team = teams_[t];
      tr.guaranteed = mode_ == Mode::kStatic   ? static_gpus_[t]
                      : mode_ == Mode::kQuotas ? quotas_.tenants[t].guaranteed
                                               : 0;
      tr.wait_p50_s = Percentile(waits[t], 0.50);
      tr.wait_p99_s = Percentile(waits[t], 0.99);
      tr.wait_max_s = Percentile(waits[t], 1.0);
      res.worst_p99_s = std::max(res.worst_p99_s, tr.wait_p99_s);
    }
    res.teams = team_results_;
    res.makespan_s = makespan;
    res.gpu_h_capacity = makespan * res.cluster_gpus / 3600.0;
    return res;
  }

  const std::vector<Job>& jobs_;
  const Mode mode_;
  const Options o_;
  std::vector<State> states_;
  std::vector<int> free_;
  std::vector<std::vector<int>> runs_on_;
  std::vector<int> owner_;
  std::map<std::string, int> team_index_;
  std::vector<std::string> teams_;
  std::vector<double> share_;
  std::vector<bool> kubernetes_;  // the team's work is inference pods
  std::vector<std::list<int>> queues_;
  std::vector<int> usage_, claimed_, static_gpus_;
  quota::QuotaConfig quotas_;
  std::vector<Running> runs_;
  std::vector<int> free_runs_;
  std::vector<TeamResult> team_results_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t now_ = 0, seq_ = 0, gen_ = 0;
};

}  // namespace

Result Simulate(const std::vector<Job>& jobs, int cluster_gpus, Mode mode, const Options& options) {
  Sim sim(jobs, cluster_gpus, mode, options);
  return sim.Execute();
}

}  // namespace skb::quota_study

// SPDX-License-Identifier: Apache-2.0
#include "src/devices/device_plan.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <tuple>

#include "src/base/strings.h"
#include "src/devices/placeholder_record.h"
#include "src/health/maintenance.h"
#include "src/health/node_health.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/return_decision.h"
#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

namespace own = skb::ownership;

// Exact victim search up to this many candidate jobs (2^16 subsets); above it, greedy.
constexpr size_t kExactVictimSearch = 16;

bool Has(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// GRES index `x` of the node is a device out of service (Device::Out).
bool OutAt(const NodeDevices& node, int64_t x) {
  return x >= 0 && x < static_cast<int64_t>(node.devices.size()) &&
         node.devices[static_cast<size_t>(x)].Out();
}

// "gpu-3 (index 3, gpu.nvidia.com/xid=79:NoSchedule)": a device out of service and why, in
// Events and the node's condition.
std::string DescribeOut(const Device& d) {
  return StrCat(d.name, " (index ", d.index, ", ", d.OutWhy(), ")");
}

std::string JoinIds(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) StrAppend(&out, out.empty() ? "" : ",", id);
  return out;
}

// The Slurm GRES type a placeholder asks for to get devices of `profile` on `node` (whole
// GPUs when ""): the profile; on a node that also has MIG slices, the whole GPUs' own type;
// else none. "" for whole GPUs beside slices of no type of their own: Slurm cannot be
// asked for whole GPUs only there.
std::string GresTypeFor(const NodeDevices& node, const std::string& profile) {
  if (!profile.empty()) return profile;
  const bool has_slices = std::any_of(node.devices.begin(), node.devices.end(),
                                      [](const Device& d) { return !d.profile.empty(); });
  return has_slices ? node.whole_gres_type : "";
}
// Whether a placeholder can ask Slurm for exactly devices of `profile` on `node`.
bool CanAskFor(const NodeDevices& node, const std::string& profile) {
  return !profile.empty() || !GresTypeFor(node, profile).empty() ||
         std::none_of(node.devices.begin(), node.devices.end(),
                      [](const Device& d) { return !d.profile.empty(); });
}

std::vector<const slurm::JobView*> Whole(const NodeJob& j) {
  return own::WholeJob(j.view, j.het_components);
}

// What preempting `j` throws away: its GPU-seconds on every node its whole job holds.
double WorkLost(const NodeJob& j, Clock::TimePoint now) {
  const double secs = std::chrono::duration<double>(now - own::FromUnix(j.view.start_time)).count();
  const int64_t gpus =
      std::max(own::WholeJobGpus(Whole(j)), static_cast<int64_t>(j.indices.size()));
  return secs > 0 ? secs * static_cast<double>(gpus) : 0;
}

// One victim as Slurm preempts it: the jobs on the node (a heterogeneous job's components
// here, else one job), the GPUs that frees here, the work lost everywhere.
struct Candidate {
  std::vector<size_t> jobs;  // into NodeDevices::jobs
  int64_t gpus = 0;
  double work = 0;
};

std::vector<Violation> Violations(const std::vector<DeviceView>& views) {
  std::vector<Violation> out;
  for (const DeviceView& v : views) {
    if (v.job != 0 && v.placeholder != 0) {
      out.push_back({v.name, StrCat("Slurm job ", v.job, " and placeholder ", v.placeholder,
                                    " both hold it")});
    } else if (v.job != 0 && !v.pods.empty()) {
      out.push_back({v.name, StrCat("Slurm job ", v.job, " runs on it and pod ", v.pods[0],
                                    " has an allocated claim on it")});
    } else if (v.owner == Owner::kSlurm && !v.pods.empty()) {
      out.push_back(
          {v.name, StrCat("pod ", v.pods[0], " has an allocated claim on a Slurm-held device")});
    } else if (v.owner == Owner::kUnguarded && !v.pods.empty()) {
      out.push_back({v.name, StrCat("pod ", v.pods[0],
                                    " has an allocated claim on a device no hold guards")});
    }
  }
  return out;
}

DeviceAction Make(DeviceOperation op, const NodeDevices& node, plan::Cause cause,
                  std::string reason, std::string message) {
  DeviceAction a;
  a.op = std::move(op);
  a.node = node.node;
  a.cause = cause;
  a.event_reason = std::move(reason);
  a.event_message = std::move(message);
  return a;
}

// The return's hold: `devices` (of placeholder `job`) kept from Kubernetes again, the first
// step of a return and the one a return that found some holds lifted repeats.
DeviceAction HoldAgainForSlurm(const NodeDevices& node, uint32_t job,
                               std::vector<std::string> devices) {
  std::string message = StrCat("devices ", StrJoin(devices, ","), " held again for Slurm");
  return Make(AddDeviceHold{.devices = std::move(devices), .placeholder_job = job}, node,
              plan::Cause::kReturn, "GpusReturning", std::move(message));
}

// The record on `p`'s pod that its give on `node` went unused (`what` says how), before the
// step that ends the give: the pod's next give avoids the node for a while.
DeviceAction RecordUnused(const NodeDevices& node, const Placeholder& p, int64_t now_unix,
                          std::string_view what) {
  DeviceAction a =
      Make(RecordUnusedGive{.placeholder_job = p.job_id, .pod = p.pod, .at_unix = now_unix}, node,
           plan::Cause::kLend, "GiveUnused",
           StrCat("the give of placeholder ", p.job_id, " on ", node.node, " for ", p.pod,
                  " went unused (", what, "); ", node.node,
                  " is backed off for this pod (gpu_sharing.give_backoff)"));
  a.event_type = plan::EventType::kWarning;
  return a;
}

// Victims among `cands` freeing at least `need` GPUs, cheapest by (work lost, jobs, GPUs,
// ids); empty when they cannot. Returns indices into `cands`.
std::vector<size_t> PickJobs(const NodeDevices& node, const std::vector<Candidate>& cands,
                             int64_t need) {
  int64_t all = 0;
  for (const Candidate& c : cands) all += c.gpus;
  if (all < need) return {};  // not even every candidate together frees enough
  if (cands.size() <= kExactVictimSearch) {
    // Every subset, compared by (work lost, victims, GPUs) first; the sorted job ids break
    // a tie and are built only then.
    auto ids_of = [&](uint32_t mask) {
      std::vector<uint32_t> ids;
      for (size_t b = 0; b < cands.size(); ++b) {
        if (!(mask & (1u << b))) continue;
        for (size_t j : cands[b].jobs) ids.push_back(node.jobs[j].view.job_id);
      }
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    using Key = std::tuple<double, int, int64_t>;
    std::optional<Key> best;
    uint32_t best_mask = 0;
    for (uint32_t mask = 1; mask < (1u << cands.size()); ++mask) {
      double work = 0;
      int64_t gpus = 0;
      for (size_t b = 0; b < cands.size(); ++b) {
        if (!(mask & (1u << b))) continue;
        work += cands[b].work;
        gpus += cands[b].gpus;
      }
      if (gpus < need) continue;
      const Key key{work, std::popcount(mask), gpus};
      if (!best || key < *best || (key == *best && ids_of(mask) < ids_of(best_mask))) {
        best = key;
        best_mask = mask;
      }
    }
    std::vector<size_t> set;
    for (size_t b = 0; b < cands.size(); ++b) {
      if (best_mask & (1u << b)) set.push_back(b);
    }
    return set;
  }
  // Many small jobs: least work per GPU first.
  std::vector<size_t> order(cands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return cands[a].work / static_cast<double>(cands[a].gpus) <
           cands[b].work / static_cast<double>(cands[b].gpus);
  });
  std::vector<size_t> set;
  int64_t got = 0;
  for (size_t i : order) {
    if (got >= need) break;
    set.push_back(i);
    got += cands[i].gpus;
  }
  return got >= need ? set : std::vector<size_t>{};
}

// The pods other than p's own that use devices placeholder p lifted, by name.
std::vector<std::string> TakenBy(const NodeDevices& n, const Placeholder& p) {
  std::set<std::string> others;
  for (const DeviceView& v : Owners(n)) {
    if (v.placeholder != p.job_id) continue;
    for (const std::string& pod : v.pods) {
      if (pod != p.pod) others.insert(pod);
    }
  }
  return {others.begin(), others.end()};
}

// Whether a placeholder serves `pod` (no second give for it). A running one whose pod
// still waits while other pods use the devices it lifted no longer does: kube-scheduler
// placed them there (lifted devices are anyone's to take), and the pod gets a give of its
// own instead of waiting behind them; `taken` then says by whom.
bool Served(std::span<const NodeDevices> nodes, const std::string& pod, Selection* taken) {
  for (const NodeDevices& n : nodes) {
    for (const Placeholder& p : n.placeholders) {
      if (p.pod != pod) continue;
      if (!p.running || !p.pod_waiting) return true;
      const std::vector<std::string> others = TakenBy(n, p);
      if (others.empty()) return true;
      if (taken->taken_job != 0) return true;  // one taken placeholder handed over a pass
      taken->taken_job = p.job_id;
      taken->taken_by = others.front();
      taken->why = StrCat("the GPUs placeholder ", p.job_id, " lifted for it on ", n.node,
                          " went to ", StrJoin(others, ","));
    }
  }
  return false;
}

}  // namespace

std::string_view OwnerName(Owner o) {
  switch (o) {
    case Owner::kSlurm:
      return "slurm";
    case Owner::kToKubernetes:
      return "to-k8s";
    case Owner::kKubernetes:
      return "k8s";
    case Owner::kToSlurm:
      return "to-slurm";
    case Owner::kUnguarded:
      return "unguarded";
    case Owner::kOut:
      return "out";
  }
  return "unguarded";
}

namespace {

// What each kind adds to its name in ToString, in one order: devices, placeholder, pod,
// GPUs, jobs, time.
std::string DevicesText(const std::vector<std::string>& d) {
  return d.empty() ? "" : StrCat(" devices=", StrJoin(d, ","));
}
std::string PlaceholderText(uint32_t job) { return job == 0 ? "" : StrCat(" placeholder=", job); }
std::string PodText(const std::string& pod) { return pod.empty() ? "" : StrCat(" pod=", pod); }
std::string JobsText(const std::vector<uint32_t>& ids) {
  return ids.empty() ? "" : StrCat(" jobs=", JoinIds(ids));
}

std::string Describe(const AddDeviceHold& o) {
  return DevicesText(o.devices) + PlaceholderText(o.placeholder_job);
}
std::string Describe(const RemoveDeviceHold& o) {
  return DevicesText(o.devices) + PlaceholderText(o.placeholder_job) + PodText(o.pod);
}
std::string Describe(const SubmitPlaceholder& o) {
  return PodText(o.pod) + (o.gpus == 0 ? "" : StrCat(" gpus=", o.gpus)) +
         (o.gres_type.empty() ? "" : StrCat(" type=", o.gres_type)) + JobsText(o.victims) +
         (o.taken_job == 0 ? "" : StrCat(" taken=", o.taken_job, ":", o.taken_by)) +
         (o.health.empty() ? "" : StrCat(" health=", o.health, " slot=", o.slot));
}
std::string Describe(const SignalJobs& o) {
  return PlaceholderText(o.placeholder_job) + PodText(o.pod) + JobsText(o.jobs.job_ids);
}
std::string Describe(const plan::PreemptSlurmJobs& o) {
  return PodText(o.preemptor) + JobsText(o.job_ids);
}
std::string Describe(const RecordIdleSince& o) {
  return StrCat(PlaceholderText(o.placeholder_job), " at=", o.at_ms);
}
std::string Describe(const MarkReturning& o) { return PlaceholderText(o.placeholder_job); }
std::string Describe(const EndPlaceholder& o) {
  return DevicesText(o.devices) + PlaceholderText(o.placeholder_job);
}
std::string Describe(const RecordUnusedGive& o) {
  return StrCat(PlaceholderText(o.placeholder_job), PodText(o.pod), " at=", o.at_unix);
}
std::string Describe(const DropDeviceHold& o) { return DevicesText(o.devices); }
std::string Describe(const plan::SetNodeCondition& o) {
  return StrCat(" ", o.condition.type, "=", o.condition.status);
}
std::string Describe(const plan::EvictPod& o) {
  return PodText(StrCat(o.pod.namespace_name, "/", o.pod.name));
}

}  // namespace

std::string ToString(const DeviceAction& a) {
  return StrCat(a.Kind(), " ", a.node, std::visit([](const auto& o) { return Describe(o); }, a.op));
}

std::string Device::OutWhy() const {
  return driver_taint.empty() && !drained.empty() ? StrCat("drained: ", drained) : driver_taint;
}

std::vector<Violation> Violations(const NodeDevices& node) { return Violations(Owners(node)); }

std::vector<DeviceView> Owners(const NodeDevices& node) {
  std::vector<DeviceView> out;
  for (const Device& d : node.devices) {
    DeviceView v;
    v.name = d.name;
    const Placeholder* holder = nullptr;
    for (const Placeholder& p : node.placeholders) {
      if (p.running && Has(p.indices, d.index)) holder = &p;
    }
    for (const NodeJob& j : node.jobs) {
      if (j.view.HoldsNodes() && Has(j.indices, d.index)) v.job = j.view.job_id;
    }
    for (const Claim& c : node.claims) {
      if (c.allocated && std::find(c.devices.begin(), c.devices.end(), d.name) != c.devices.end()) {
        v.pods.push_back(c.pod);
      }
    }
    if (holder != nullptr && !holder->health.empty()) {
      // A health hold: Slurm's side held by it, Kubernetes' by the hold (made again when
      // missing, as for any unguarded device).
      v.placeholder = holder->job_id;
      v.owner = d.k8s_hold ? Owner::kOut : Owner::kUnguarded;
    } else if (holder != nullptr) {
      v.placeholder = holder->job_id;
      if (!d.k8s_hold) {
        v.owner = Owner::kKubernetes;
      } else {
        v.owner = holder->returning ? Owner::kToSlurm : Owner::kToKubernetes;
      }
    } else {
      v.owner = d.k8s_hold ? Owner::kSlurm : Owner::kUnguarded;
    }
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// Why a node cannot serve a pod, and how near it came: the waiting reason names the nearest
// nodes first (one backed off for the pod would serve it, one of the wrong model never
// will).
enum class Nearness { kBackedOff, kBusy, kShort, kUnhealthy, kNotAllowed };
struct Refusal {
  std::string why;
  Nearness nearness = Nearness::kNotAllowed;
  std::string of_pod;  // a reason of the pod's own, the same on every node, said once
};

// Whether lent device v was lifted by the running placeholder of another pod that still
// waits to be placed: it is that pod's, though kube-scheduler may place anyone there.
// Counted for a second pod, the two would race for it and one would starve unseen.
bool LiftedForAnother(const NodeDevices& node, const DeviceView& v, const std::string& pod) {
  if (v.placeholder == 0) return false;
  return std::any_of(node.placeholders.begin(), node.placeholders.end(), [&](const Placeholder& p) {
    return p.job_id == v.placeholder && p.pod_waiting && p.pod != pod;
  });
}

std::optional<Selection> Select(const NodeDevices& node, const PendingPod& pod,
                                const config::Config& cfg, Clock::TimePoint now, Refusal* refusal) {
  auto no = [&](Nearness nearness, std::string reason) -> std::optional<Selection> {
    *refusal = {std::move(reason), nearness};
    return std::nullopt;
  };
  if (!pod.model.empty() && pod.model != node.model) {
    return no(Nearness::kNotAllowed,
              StrCat("node ", node.node, " has ", node.model, " GPUs, the pod wants ", pod.model));
  }
  if (auto not_here =
          WhyNotPlaceable(pod.placement, node.k8s_node.empty() ? node.node : node.k8s_node,
                          node.labels, node.taints)) {
    return no(Nearness::kNotAllowed, *not_here);
  }
  if (std::optional<Clock::TimePoint> until =
          BackoffUntil(node.unused_gives, pod.pod, cfg.gpu_sharing, now);
      until && now < *until) {
    const auto n = std::count_if(node.unused_gives.begin(), node.unused_gives.end(),
                                 [&](const UnusedGive& g) { return g.pod == pod.pod; });
    return no(
        Nearness::kBackedOff,
        StrCat("node ", node.node, ": ", n,
               " give(s) there went unused (kube-scheduler did not place the pod on the freed "
               "GPUs); backed off until ",
               own::FormatUtc(*until)));
  }
  if (!node.healthy) return no(Nearness::kUnhealthy, StrCat("node ", node.node, " is unhealthy"));
  if (!node.no_gives.empty()) {
    return no(Nearness::kNotAllowed, StrCat("node ", node.node, ": ", node.no_gives));
  }
  for (const Placeholder& p : node.placeholders) {
    if (!p.running && p.health.empty()) {
      return no(Nearness::kBusy, StrCat("node ", node.node, ": a give is in flight (placeholder ",
                                        p.job_id, " for ", p.pod, ")"));
    }
  }
  // A give moves devices of the kind the pod asks for: whole GPUs, or MIG slices of its
  // profile.
  const auto fits = [&](size_t i) {
    return i < node.devices.size() && node.devices[i].profile == pod.profile;
  };
  size_t of_kind = 0;
  for (size_t i = 0; i < node.devices.size(); ++i) of_kind += fits(i);
  if (of_kind == 0) {
    return no(Nearness::kNotAllowed,
              pod.profile.empty() ? StrCat("node ", node.node, " has MIG slices only")
                                  : StrCat("node ", node.node, " has no ", pod.profile, " slices"));
  }
  if (!CanAskFor(node, pod.profile)) {
    return no(Nearness::kNotAllowed,
              StrCat("node ", node.node,
                     " has MIG slices and whole GPUs of no single Slurm GRES type of their own: a "
                     "placeholder could not ask Slurm for whole GPUs only"));
  }
  const std::string unit = pod.profile.empty() ? "GPUs" : StrCat(pod.profile, " slices");
  const std::vector<DeviceView> views = Owners(node);
  if (std::vector<Violation> v = Violations(views); !v.empty()) {
    return no(Nearness::kBusy, StrCat("node ", node.node, ": ", v[0].device, ": ", v[0].what));
  }
  // A device the driver tainted (its health) takes no new claim. Slurm picks a placeholder's
  // indices, so while one is free in Slurm a give here could be handed it: no give until the
  // driver clears it. A job holding one is no victim (its end would free it the same way).
  const auto tainted = [&](int64_t x) { return OutAt(node, x); };
  Selection s;
  s.node = node.node;
  s.profile = pod.profile;
  s.gres_type = GresTypeFor(node, pod.profile);
  for (size_t i = 0; i < views.size(); ++i) {
    const DeviceView& v = views[i];
    if (!fits(i)) continue;
    if (v.owner == Owner::kSlurm && v.job == 0) {
      if (tainted(static_cast<int64_t>(i))) {
        return no(Nearness::kUnhealthy,
                  StrCat("node ", node.node, ": ", v.name,
                         node.devices[i].driver_taint.empty()
                             ? StrCat(" is drained (", node.devices[i].drained, ")")
                             : StrCat(" carries the driver's taint ", node.devices[i].driver_taint),
                         " and is free in Slurm, which could hand it to a placeholder"));
      }
      s.idle.push_back(v.name);
    }
    if (v.owner == Owner::kKubernetes && v.pods.empty() && !tainted(static_cast<int64_t>(i)) &&
        !LiftedForAnother(node, v, pod.pod) &&
        static_cast<int64_t>(s.lent_idle.size()) < pod.gpus - 1) {
      s.lent_idle.push_back(v.name);  // at least one GPU must move, or the pod would fit
    }
  }
  s.gpus = pod.gpus - static_cast<int64_t>(s.lent_idle.size());
  const std::string lent =
      s.lent_idle.empty() ? "" : StrCat(s.lent_idle.size(), " lent idle ", unit, " and ");
  const int64_t idle = static_cast<int64_t>(s.idle.size());
  if (idle >= s.gpus) {
    s.idle_left = idle - s.gpus;
    s.idle.resize(static_cast<size_t>(s.gpus));
    s.why = StrCat(lent, s.gpus, " idle ", unit, " on ", node.node);
    return s;
  }
  if (!pod.borrowing.empty()) {
    no(Nearness::kShort, StrCat("node ", node.node, " has ", idle, " idle ", unit));
    refusal->of_pod = StrCat(pod.pod, " may take no job's GPUs: ", pod.borrowing, " (quotas)");
    return std::nullopt;
  }
  // By whole job (a heterogeneous job's components on this node are one victim, and none
  // is one if any is not).
  std::map<uint32_t, Candidate> by_whole;
  std::set<uint32_t> kept;
  int64_t protected_gpus = 0;
  for (size_t i = 0; i < node.jobs.size(); ++i) {
    const NodeJob& j = node.jobs[i];
    if (!j.view.HoldsNodes() || j.indices.empty()) continue;
    // What it would free for the pod: its devices of the pod's kind.
    const auto freed = std::count_if(j.indices.begin(), j.indices.end(), [&](int64_t x) {
      return x >= 0 && fits(static_cast<size_t>(x));
    });
    if (freed == 0) continue;
    const bool slurm_owned = std::all_of(j.indices.begin(), j.indices.end(), [&](int64_t x) {
      return x >= 0 && x < static_cast<int64_t>(views.size()) &&
             views[static_cast<size_t>(x)].owner == Owner::kSlurm;
    });
    const uint32_t whole = own::WholeJobId(j.view);
    Candidate& c = by_whole[whole];
    c.jobs.push_back(i);
    c.gpus += static_cast<int64_t>(freed);
    c.work = WorkLost(j, now);  // the whole job's: the same for each component
    if (!own::Actionable(j.view) || !slurm_owned ||
        std::any_of(j.indices.begin(), j.indices.end(), tainted) ||
        !own::PolicyForWhole(Whole(j), cfg, now, node.guaranteed_jobs).preemptible) {
      kept.insert(whole);
    }
  }
  std::vector<Candidate> cands;
  for (auto& [whole, c] : by_whole) {
    if (kept.count(whole)) {
      protected_gpus += c.gpus;
    } else {
      cands.push_back(std::move(c));
    }
  }
  const std::vector<size_t> picked = PickJobs(node, cands, s.gpus - idle);
  if (picked.empty()) {
    return no(Nearness::kShort,
              StrCat("node ", node.node, ": ", lent, idle, " idle ", unit, " and ", s.gpus - idle,
                     " more needed; the preemptible jobs cannot free them (", protected_gpus, " ",
                     unit, " run non-preemptible or moving work)"));
  }
  std::string het;
  for (size_t i : picked) {
    for (size_t j : cands[i].jobs) s.victims.push_back(node.jobs[j].view.job_id);
    s.victim_gpus += cands[i].gpus;
    s.work_lost += cands[i].work;
    if (const NodeJob& first = node.jobs[cands[i].jobs.front()]; first.view.het_job_id != 0) {
      StrAppend(&het, "; ", own::DescribeWhole(Whole(first)), " is preempted as a whole");
    }
  }
  std::sort(s.victims.begin(), s.victims.end());
  s.why = StrCat(lent, idle, " idle ", unit, " and ", s.victim_gpus, " of preemptible job(s) ",
                 JoinIds(s.victims), " on ", node.node, het);
  return s;
}

// The waiting reason from every node's refusal: the nearest first, at most kShown of them.
std::string WhyNoNode(std::vector<Refusal> refusals) {
  constexpr size_t kShown = 3;
  if (refusals.empty()) return "no GPU node";
  std::stable_sort(refusals.begin(), refusals.end(),
                   [](const Refusal& a, const Refusal& b) { return a.nearness < b.nearness; });
  std::vector<std::string> of_pod;
  for (const Refusal& r : refusals) {
    if (!r.of_pod.empty() && std::find(of_pod.begin(), of_pod.end(), r.of_pod) == of_pod.end())
      of_pod.push_back(r.of_pod);
  }
  std::string out = StrJoin(of_pod, "; ");
  for (size_t i = 0; i < refusals.size() && i < kShown; ++i) {
    StrAppend(&out, out.empty() ? "" : "; ", refusals[i].why);
  }
  if (refusals.size() > kShown)
    StrAppend(&out, "; and ", refusals.size() - kShown, " more node(s)");
  return out;
}

}  // namespace

std::optional<Selection> SelectOnNode(const NodeDevices& node, const PendingPod& pod,
                                      const config::Config& cfg, Clock::TimePoint now,
                                      std::string* why) {
  Refusal refusal;
  std::optional<Selection> s = Select(node, pod, cfg, now, &refusal);
  if (!s && why != nullptr) *why = WhyNoNode({std::move(refusal)});
  return s;
}

std::optional<Selection> ChooseNode(std::span<const NodeDevices> nodes, const PendingPod& pod,
                                    const config::Config& cfg, Clock::TimePoint now,
                                    std::string* why) {
  Selection taken;
  if (Served(nodes, pod.pod, &taken)) {
    if (why != nullptr) *why = StrCat("a placeholder already serves ", pod.pod);
    return std::nullopt;
  }
  if (pod.priority < cfg.lending.inference_threshold) {
    if (why != nullptr) {
      *why = StrCat(pod.pod, ": priority ", pod.priority, " is below the inference threshold ",
                    cfg.lending.inference_threshold);
    }
    return std::nullopt;
  }
  // A pod that names no GPU model is kept off the scarcer models (fewest GPUs among the
  // candidates) where it can be: pods that name a model can run nowhere else.
  std::map<std::string, int64_t> gpus_of_model;
  if (pod.model.empty()) {
    for (const NodeDevices& n : nodes)
      gpus_of_model[n.model] += static_cast<int64_t>(n.devices.size());
  }
  std::optional<Selection> best;
  int64_t best_abundance = 0;
  std::vector<Refusal> refusals;
  auto key = [](const Selection& s, int64_t abundance) {
    return std::make_tuple(s.victims.empty() ? 0 : 1, s.work_lost, s.victims.size(), s.victim_gpus,
                           -abundance, s.idle_left, s.node);
  };
  for (const NodeDevices& n : nodes) {
    Refusal refusal;
    std::optional<Selection> s = Select(n, pod, cfg, now, &refusal);
    const int64_t abundance = pod.model.empty() ? gpus_of_model[n.model] : 0;
    if (!s) {
      refusals.push_back(std::move(refusal));
    } else if (!best || key(*s, abundance) < key(*best, best_abundance)) {
      best = std::move(s);
      best_abundance = abundance;
    }
  }
  if (!best && why != nullptr) *why = WhyNoNode(std::move(refusals));
  if (best && taken.taken_job != 0) {
    best->why = StrCat(best->why, " (", taken.why, ")");
    best->taken_job = taken.taken_job;
    best->taken_by = std::move(taken.taken_by);
  }
  return best;
}

std::vector<DeviceAction> PlanGive(const Selection& s, const PendingPod& pod) {
  DeviceAction a;
  a.op = SubmitPlaceholder{.pod = pod.pod,
                           .gpus = s.gpus,
                           .victims = s.victims,
                           .gres_type = s.gres_type,
                           .profile = s.profile,
                           .taken_job = s.taken_job,
                           .taken_by = s.taken_by};
  a.node = s.node;
  a.cause = plan::Cause::kLend;
  a.event_reason = "GpusLending";
  a.event_message = StrCat("placeholder for ", s.gpus,
                           s.profile.empty() ? " GPU(s)" : StrCat(" ", s.profile, " slice(s)"),
                           " for ", pod.pod, ": ", s.why);
  return {a};
}

namespace {

// A give whose placeholder is gone while its pod still runs on the lifted devices (see
// PlanNode). Each such pod gets a placeholder again, asking for every GPU of its kind that
// is free in Slurm there, its own and those of the jobs Slurm started on them included:
// Slurm picks a placeholder's indices, and only a request that covers every candidate is
// sure to cover the pod's (the extra ones are lent to Kubernetes as in a give, and come back
// with it). A job Slurm started on the pod's devices is requeued at once where its policy
// allows (no checkpoint signal, no grace: both use the GPU until it goes); the placeholder,
// pending at the top job priority, takes the freed GPUs before any job. Where a job that may
// not be preempted started there, the pod is evicted instead: one of the two must go.
void RepairLostGives(const NodeDevices& node, const std::vector<DeviceView>& views,
                     const config::Config& cfg, Clock::TimePoint now, NodePlan* plan,
                     std::set<uint32_t>* repairing) {
  struct Lost {
    std::vector<size_t> devices;  // into views / node.devices
    std::set<uint32_t> jobs;      // Slurm jobs running on them
  };
  std::map<std::string, Lost> lost;  // by pod
  for (size_t i = 0; i < views.size() && i < node.devices.size(); ++i) {
    const DeviceView& v = views[i];
    // Lifted (no hold), used by a pod, held by no running placeholder: a give's device
    // whose placeholder is gone. (A held device a pod claims is another finding.)
    if (v.placeholder != 0 || v.pods.empty() || v.owner != Owner::kUnguarded) continue;
    Lost& l = lost[v.pods[0]];
    l.devices.push_back(i);
    if (v.job != 0) l.jobs.insert(v.job);
  }
  const int64_t now_unix = own::ToUnix(now);
  for (const auto& entry : lost) {
    // (Not a structured binding: clang 14's lambdas below may not capture one.)
    const std::string& pod = entry.first;
    const Lost& l = entry.second;
    const std::string& profile = node.devices[l.devices.front()].profile;
    const bool one_kind = std::all_of(l.devices.begin(), l.devices.end(),
                                      [&](size_t i) { return node.devices[i].profile == profile; });
    if (!one_kind || !CanAskFor(node, profile)) continue;  // reported, not guessed
    const std::string gres_type = GresTypeFor(node, profile);
    std::vector<std::string> names;
    for (size_t i : l.devices) names.push_back(views[i].name);
    const std::string devices = StrJoin(names, ",");
    // Requeued at once: each job on the pod's devices its policy lets go, as its policy's
    // mode says (one action per mode). A job it does not let go keeps the GPUs: the pod is
    // evicted instead (the Eviction API: a PodDisruptionBudget can refuse, and the double
    // booking is then reported until it allows), and nothing else moves for it.
    std::map<plan::JobPreemptMode, std::vector<uint32_t>> requeue;
    std::vector<uint32_t> kept;
    for (uint32_t id : l.jobs) {
      auto it = std::find_if(node.jobs.begin(), node.jobs.end(),
                             [&](const NodeJob& j) { return j.view.job_id == id; });
      if (it == node.jobs.end() || !own::Actionable(it->view)) continue;
      const own::JobPolicy policy = own::PolicyForWhole(Whole(*it), cfg, now, node.guaranteed_jobs);
      if (!policy.preemptible || policy.mode == plan::JobPreemptMode::kCancel) {
        kept.push_back(id);
        continue;
      }
      requeue[policy.mode].push_back(id);
    }
    if (!kept.empty()) {
      const size_t slash = pod.find('/');
      DeviceAction a = Make(
          plan::EvictPod{.pod = {.namespace_name = pod.substr(0, slash),
                                 .name = slash == std::string::npos ? pod : pod.substr(slash + 1)}},
          node, plan::Cause::kReturn, "DoubleBookingEnded",
          StrCat("jobs ", JoinIds(kept), ", which may not be preempted, started on ", devices,
                 ", which ", pod, " uses (its placeholder had ended): ", pod, " is evicted"));
      a.event_type = plan::EventType::kWarning;
      plan->actions.push_back(std::move(a));
      continue;
    }
    for (const auto& [mode, ids] : requeue) repairing->insert(ids.begin(), ids.end());
    const bool pending =
        std::any_of(node.placeholders.begin(), node.placeholders.end(),
                    [&](const Placeholder& p) { return !p.running && p.pod == pod; });
    if (!pending) {
      int64_t gpus = 0;
      for (size_t i = 0; i < views.size() && i < node.devices.size(); ++i) {
        const DeviceView& v = views[i];
        if (node.devices[i].profile != profile || v.placeholder != 0) continue;
        const bool mine = std::find(l.devices.begin(), l.devices.end(), i) != l.devices.end();
        const bool idle = v.job == 0 && v.pods.empty();
        gpus += mine || idle || l.jobs.count(v.job);
      }
      DeviceAction a =
          Make(SubmitPlaceholder{.pod = pod,
                                 .gpus = gpus,
                                 .victims = std::vector<uint32_t>(l.jobs.begin(), l.jobs.end()),
                                 .gres_type = gres_type,
                                 .profile = profile},
               node, plan::Cause::kLend, "GiveRestored",
               StrCat("no placeholder holds ", devices, " in Slurm while ", pod,
                      " uses them (it ended behind the bridge's back): a new one asks for ", gpus,
                      " GPU(s) of ", node.node, " to hold them again"));
      a.event_type = plan::EventType::kWarning;
      plan->actions.push_back(std::move(a));
    }
    for (const auto& [mode, ids] : requeue) {
      DeviceAction a =
          Make(plan::PreemptSlurmJobs{.job_ids = ids,
                                      .mode = mode,
                                      .preemptor = pod,
                                      .at_unix = now_unix,
                                      .since_unix = now_unix},
               node, plan::Cause::kLend, "DoubleBookingEnded",
               StrCat("jobs ", JoinIds(ids), " started on ", devices, ", which ", pod,
                      " uses (its placeholder had ended): ", plan::JobPreemptModeName(mode),
                      " at once"));
      a.event_type = plan::EventType::kWarning;
      plan->actions.push_back(std::move(a));
    }
  }
}

// The victims of pending placeholder `p` (a give's, or a health hold's that follows a job
// on a bad GPU): each signalled once, preempted once its grace is over. `preemptor` is
// recorded on the preempted jobs (one token: the give's pod, "health:NODE:DEVICE"),
// `for_whom` names in the Events whose GPUs they free.
void PlanVictims(const NodeDevices& node, const Placeholder& p, const config::Config& cfg,
                 Clock::TimePoint now, const std::set<uint32_t>& repairing,
                 const std::string& preemptor, const std::string& for_whom, NodePlan* plan) {
  const int64_t now_unix = own::ToUnix(now);
  std::map<std::pair<int, plan::SignalScope>, std::vector<uint32_t>> to_signal;
  std::map<plan::JobPreemptMode, std::vector<uint32_t>> to_preempt;
  std::map<plan::JobPreemptMode, int64_t> signalled_since;  // the earliest signal
  for (uint32_t id : p.victims) {
    auto it = std::find_if(node.jobs.begin(), node.jobs.end(),
                           [&](const NodeJob& j) { return j.view.job_id == id; });
    if (it == node.jobs.end() || !own::Actionable(it->view)) continue;
    if (repairing.count(id)) continue;  // requeued at once: no signal, no grace
    const own::JobPolicy policy = own::PolicyForWhole(Whole(*it), cfg, now, node.guaranteed_jobs);
    if (!policy.preemptible) continue;  // became protected: the placeholder waits
    if (!it->signalled_at) {
      to_signal[{policy.signal, policy.scope}].push_back(id);
      continue;
    }
    const Clock::TimePoint grace_ends =
        own::GraceEnds(*it->signalled_at, it->signalled_exactly, policy.grace);
    if (now < grace_ends) {
      KeepEarliest(&plan->recheck_at, grace_ends);
    } else {
      to_preempt[policy.mode].push_back(id);
      const int64_t at = own::ToUnix(*it->signalled_at);
      auto [since, fresh] = signalled_since.emplace(policy.mode, at);
      if (!fresh) since->second = std::min(since->second, at);
    }
  }
  for (auto& [sig, ids] : to_signal) {
    std::string message = StrCat("jobs ", JoinIds(ids), " signalled: their GPUs go to ", for_whom);
    plan->actions.push_back(Make(
        SignalJobs{.jobs = {.job_ids = std::move(ids), .signal = sig.first, .scope = sig.second},
                   .placeholder_job = p.job_id,
                   .pod = preemptor,
                   .at_ms = own::ToUnixMillis(now)},
        node, plan::Cause::kLend, "CheckpointSignalled", std::move(message)));
  }
  for (auto& [mode, ids] : to_preempt) {
    std::string message = StrCat("jobs ", JoinIds(ids), " ", plan::JobPreemptModeName(mode),
                                 " for ", for_whom, ": grace over");
    plan->actions.push_back(Make(plan::PreemptSlurmJobs{.job_ids = std::move(ids),
                                                        .mode = mode,
                                                        .preemptor = preemptor,
                                                        .at_unix = now_unix,
                                                        .since_unix = signalled_since[mode]},
                                 node, plan::Cause::kLend, "SlurmJobsPreempted",
                                 std::move(message)));
  }
}

// A GPU the driver tainted for its health (NVIDIA's NVMLDeviceHealthCheck: an XID, a GPU
// lost) takes no new claim in Kubernetes; here it leaves Slurm too, by health holds:
// placeholders of no pod, at the placeholder's top priority. Slurm cannot be asked for one
// GRES index, so each asks for every GPU of its kind that could be the bad one:
//   free in Slurm   one 1-GPU hold per free GPU of its kind, submitted together: Slurm
//                   places them at once, one surely on the bad GPU. The others end as soon
//                   as no bad GPU of their kind is left free; the one on the bad GPU ends when
//                   the driver clears it.
//   under a job     one hold that follows the job (`under_job`), asking for the job's GPUs of
//                   the kind on the node and every free one: it pends while the job runs and
//                   starts, on the bad GPU too, the moment the job ends. A job its policy lets
//                   the bridge preempt is the hold's victim (checkpoint signal, grace,
//                   requeue, as a give's); another is reported and left to finish. Once it
//                   runs, it shrinks: 1-GPU holds are submitted (they pend on its GPUs), it
//                   ends, and they take its GPUs as above.
// A bad GPU under a pod is left to it (the return brings it back to Slurm, free).
void PlanHealth(const NodeDevices& node, const std::vector<DeviceView>& views,
                const config::Config& cfg, Clock::TimePoint now,
                const std::set<uint32_t>& repairing, NodePlan* plan) {
  const auto bad = [&](int64_t x) { return OutAt(node, x); };
  const auto free_in_slurm = [&](size_t i) {
    return views[i].job == 0 && views[i].placeholder == 0 && views[i].pods.empty();
  };
  const size_t n = std::min(views.size(), node.devices.size());
  // Bad devices free in Slurm, by kind (whole GPUs "", or a MIG profile), and how many GPUs
  // of each kind are free.
  std::map<std::string, std::vector<size_t>> open;
  std::map<std::string, int64_t> free_of_kind;
  for (size_t i = 0; i < n; ++i) {
    if (!free_in_slurm(i)) continue;
    ++free_of_kind[node.devices[i].profile];
    if (bad(static_cast<int64_t>(i))) open[node.devices[i].profile].push_back(i);
  }
  const auto device_named = [&](const std::string& name) -> std::optional<size_t> {
    for (size_t i = 0; i < n; ++i) {
      if (node.devices[i].name == name) return i;
    }
    return std::nullopt;
  };
  const auto holds_bad = [&](const Placeholder& p) {
    return std::any_of(p.indices.begin(), p.indices.end(), bad);
  };
  // The existing health holds: the last slot used, the jobs already followed, and per kind
  // the 1-GPU holds still pending and the GPUs of following holds that run and must shrink.
  int64_t last_slot = 0;
  std::set<uint32_t> followed;
  std::map<std::string, int64_t> pending_single, shrinking;
  for (const Placeholder& p : node.placeholders) {
    if (p.health.empty()) continue;
    last_slot = std::max(last_slot, p.slot);
    if (p.under_job != 0) followed.insert(p.under_job);
    if (p.under_job == 0 && !p.running) ++pending_single[p.profile];
    if (p.under_job != 0 && p.running && p.indices.size() > 1 && holds_bad(p)) {
      shrinking[p.profile] += static_cast<int64_t>(p.indices.size());
    }
  }
  const auto end_hold = [&](const Placeholder& p, std::vector<std::string> devices,
                            std::string reason, std::string message, bool quiet) {
    DeviceAction a =
        Make(EndPlaceholder{.placeholder_job = p.job_id, .devices = std::move(devices)}, node,
             plan::Cause::kReservation, std::move(reason), std::move(message));
    a.quiet = quiet;
    plan->actions.push_back(std::move(a));
  };
  // A running hold no longer needed: on the device it was for, that device is healthy again
  // (an Event); on another, it was only there to push Slurm's pick (quiet, `why`).
  const auto end_running = [&](const Placeholder& p, const std::vector<std::string>& devices,
                               std::string_view why) {
    const bool healed = std::find(devices.begin(), devices.end(), p.health) != devices.end();
    end_hold(p, devices, healed ? "GpuHealthy" : "GpuHealthHoldEnded",
             healed
                 ? StrCat(p.health,
                          " is back in service (the driver cleared its taint, or an admin the "
                          "drain): back to Slurm (health hold ",
                          p.job_id, " ends)")
                 : StrCat("health hold ", p.job_id, " on ", StrJoin(devices, ","), " ends: ", why),
             !healed);
  };
  const auto names_of = [&](const Placeholder& p) {
    std::vector<std::string> devices;
    for (int64_t x : p.indices) {
      if (x >= 0 && x < static_cast<int64_t>(n))
        devices.push_back(node.devices[static_cast<size_t>(x)].name);
    }
    return devices;
  };
  const auto submit_singles = [&](const std::string& profile, int64_t count,
                                  const std::string& device, const std::string& reason,
                                  const std::string& message, bool warn) {
    for (int64_t k = 1; k <= count; ++k) {
      DeviceAction a = Make(SubmitPlaceholder{.gpus = 1,
                                              .gres_type = GresTypeFor(node, profile),
                                              .profile = profile,
                                              .health = device,
                                              .slot = last_slot + k},
                            node, plan::Cause::kReservation, reason, message);
      if (warn) a.event_type = plan::EventType::kWarning;
      a.quiet = k > 1;  // one Event for the batch
      plan->actions.push_back(std::move(a));
    }
    last_slot += count;
  };

  bool pending = false;  // a submission of 1-GPU holds is still being placed
  for (const Placeholder& p : node.placeholders) {
    if (p.health.empty()) continue;
    if (p.under_job != 0) {
      const std::optional<size_t> d = device_named(p.health);
      const bool still_bad = d && bad(static_cast<int64_t>(*d));
      if (!p.running) {
        if (!still_bad) {
          end_hold(p, {}, "GpuHealthHoldEnded",
                   StrCat("health hold ", p.job_id, " no longer needed: ", p.health,
                          " is healthy again"),
                   true);
          continue;
        }
        // The job ended and the hold cannot start (Slurm gave some of the GPUs it waits for
        // to other jobs meanwhile): ended; the GPU, free now, is held by 1-GPU holds.
        const bool job_there = views[*d].job != 0;
        if (!job_there && free_of_kind[p.profile] < p.gpus) {
          end_hold(p, {}, "GpuHealthHoldEnded",
                   StrCat("health hold ", p.job_id, " cancelled: ", p.health, " is free, but ",
                          free_of_kind[p.profile], " of the ", p.gpus,
                          " GPUs it waits for are; planned again"),
                   true);
          continue;
        }
        // Its job gone and its GPUs free: Slurm starts it now (no 1-GPU holds beside it).
        pending |= !job_there;
        PlanVictims(node, p, cfg, now, repairing, HealthHoldPreemptor(node.node, p.health),
                    StrCat("health hold ", p.job_id, " (", p.health, " is unhealthy)"), plan);
        continue;
      }
      std::vector<std::string> devices = names_of(p);
      if (!holds_bad(p)) {
        end_running(p, devices, "none of its GPUs is tainted");
        continue;
      }
      if (p.indices.size() <= 1) continue;  // on the bad GPU alone: stays
      // It shrinks: 1-GPU holds pend on its GPUs, then it ends and Slurm places them.
      const int64_t want = static_cast<int64_t>(p.indices.size());
      if (pending_single[p.profile] >= want) {
        end_hold(p, devices, "GpuHealthHoldEnded",
                 StrCat("health hold ", p.job_id, " on ", StrJoin(devices, ","),
                        " ends: the 1-GPU holds pending there take its GPUs, and the one on ",
                        p.health, " stays"),
                 true);
      } else {
        submit_singles(
            p.profile, want - pending_single[p.profile], p.health, "GpuHealthHoldShrinking",
            StrCat("health hold ", p.job_id, " holds ", StrJoin(devices, ","), " for ", p.health,
                   ": 1-GPU holds submitted to take them, so that only the "
                   "bad GPU stays held"),
            false);
        pending_single[p.profile] = want;
      }
      continue;
    }
    if (!p.running) {
      pending = true;
      if (open.count(p.profile) == 0 && shrinking.count(p.profile) == 0) {
        // placed meanwhile, or its GPU healthy again: not needed
        end_hold(p, {}, "GpuHealthHoldEnded", StrCat("health hold ", p.job_id, " no longer needed"),
                 true);
      }
      continue;
    }
    std::vector<std::string> devices = names_of(p);
    // Still needed: it pushes Slurm's pick onto the bad GPU.
    const bool still_needed = open.count(p.profile) > 0 || shrinking.count(p.profile) > 0;
    if (holds_bad(p) || still_needed) continue;
    end_running(p, devices, "Slurm placed another one on the tainted GPU");
  }

  // A bad GPU under a Slurm job: a hold that follows the job (one per job).
  for (size_t i = 0; i < n; ++i) {
    if (!bad(static_cast<int64_t>(i)) || views[i].job == 0 || views[i].placeholder != 0) continue;
    const auto it = std::find_if(node.jobs.begin(), node.jobs.end(),
                                 [&](const NodeJob& j) { return j.view.job_id == views[i].job; });
    if (it == node.jobs.end() || followed.count(it->view.job_id)) continue;
    const Device& d = node.devices[i];
    if (!CanAskFor(node, d.profile)) continue;
    followed.insert(it->view.job_id);
    // The whole job's components on this node: their GPUs of the kind free together.
    const uint32_t whole = own::WholeJobId(it->view);
    std::vector<uint32_t> components;
    int64_t gpus = free_of_kind[d.profile];
    for (const NodeJob& j : node.jobs) {
      if (!j.view.HoldsNodes() || own::WholeJobId(j.view) != whole) continue;
      components.push_back(j.view.job_id);
      followed.insert(j.view.job_id);
      for (int64_t x : j.indices) {
        gpus += x >= 0 && x < static_cast<int64_t>(n) &&
                node.devices[static_cast<size_t>(x)].profile == d.profile;
      }
    }
    std::sort(components.begin(), components.end());
    const own::JobPolicy policy = own::PolicyForWhole(Whole(*it), cfg, now, node.guaranteed_jobs);
    // A drain lets the job finish, as a node drain does; a failure ends it where it may.
    const bool drain_only = d.driver_taint.empty();
    const bool preempt = !drain_only && own::Actionable(it->view) && policy.preemptible;
    const std::string what = DescribeOut(d);
    const std::string hold = StrCat("a health hold for ", gpus, " GPU(s) takes its GPUs ");
    std::string message;
    if (drain_only) {
      message = StrCat("an admin drained ", what, " under job ", JoinIds(components),
                       ": left to finish; ", hold, "the moment it ends, and keeps the drained one");
    } else if (preempt) {
      message = StrCat("the driver tainted ", what, " under job ", JoinIds(components),
                       ": the job is checkpoint-signalled and requeued after its grace (",
                       policy.why, "); ", hold, "when it ends, and keeps the bad one");
    } else {
      message = StrCat("the driver tainted ", what, " under job ", JoinIds(components),
                       ", which may not be preempted (", policy.why, "): left to finish; ", hold,
                       "the moment it ends, and keeps the bad one");
    }
    DeviceAction a =
        Make(SubmitPlaceholder{.gpus = gpus,
                               .victims = preempt ? components : std::vector<uint32_t>{},
                               .gres_type = GresTypeFor(node, d.profile),
                               .profile = d.profile,
                               .health = d.name,
                               .slot = ++last_slot,
                               .under_job = it->view.job_id},
             node, plan::Cause::kReservation, "GpuUnhealthyUnderJob", std::move(message));
    a.event_type = plan::EventType::kWarning;
    plan->actions.push_back(std::move(a));
  }

  if (pending) return;  // the last submission of 1-GPU holds is still being placed
  for (const auto& [profile, devices] : open) {
    if (!CanAskFor(node, profile)) continue;  // Select refuses gives here, with the reason
    const int64_t free = free_of_kind[profile];
    std::vector<std::string> names;
    bool drained_only = true;
    for (size_t i : devices) {
      names.push_back(DescribeOut(node.devices[i]));
      drained_only &= node.devices[i].driver_taint.empty();
    }
    submit_singles(
        profile, free, node.devices[devices.front()].name, "GpuHeldUnhealthy",
        StrCat(drained_only ? "an admin drained " : "the driver tainted ", StrJoin(names, ", "),
               ": held from Slurm too (", free, " health hold(s) of 1 GPU submitted on the ", free,
               " free GPU(s) of its kind; the one Slurm places on it stays)"),
        true);
  }
}

}  // namespace

NodePlan PlanNode(const NodeDevices& node, const config::Config& cfg, Clock::TimePoint now) {
  NodePlan plan;
  const std::vector<DeviceView> views = Owners(node);
  plan.violations = Violations(views);
  std::set<std::string> bad;
  for (const Violation& v : plan.violations) bad.insert(v.device);

  // Gives whose placeholder ended behind the bridge's back (an admin's scancel, a node
  // failure, a limit Slurm enforced): their pods run on lifted devices no placeholder holds
  // in Slurm, and Slurm may start a job there at once (the requeued victim fits exactly).
  std::set<uint32_t> repairing;  // jobs requeued at once to end a double booking
  RepairLostGives(node, views, cfg, now, &plan, &repairing);
  // GPUs the driver tainted for their health, kept from Slurm too.
  PlanHealth(node, views, cfg, now, repairing, &plan);

  // Devices no hold guards and nothing uses: Slurm's (the default owner).
  std::vector<std::string> unguarded;
  for (const DeviceView& v : views) {
    if (v.owner == Owner::kUnguarded && !bad.count(v.name)) unguarded.push_back(v.name);
  }
  if (!unguarded.empty()) {
    std::string message = StrCat("devices ", StrJoin(unguarded, ","), " held for Slurm");
    plan.actions.push_back(Make(AddDeviceHold{.devices = std::move(unguarded)}, node,
                                plan::Cause::kReservation, "GpusHeldForSlurm", std::move(message)));
  }

  const int64_t now_unix = own::ToUnix(now);
  // A victim that ended after the checkpoint signal instead of waiting for the grace is
  // requeued like a preempted one (Slurm's own PreemptMode=REQUEUE does the same with a job
  // that exits in its GraceTime); only the run we signalled, not one its user cancelled.
  for (const EndedVictim& e : node.ended_victims) {
    const slurm::JobView& j = e.view;
    const int64_t at = own::ToUnix(e.signalled_at);
    if (j.state == slurm::JobState::kCancelled) continue;
    if (j.start_time > at || (j.end_time != 0 && j.end_time < at)) continue;  // another run
    const own::JobPolicy policy = own::PolicyFor(j, cfg, now);
    if (policy.mode == plan::JobPreemptMode::kCancel || !j.requeue) continue;
    if (!e.recorded && j.exit_signal != policy.signal) continue;  // not our signal's doing
    DeviceAction a =
        Make(plan::PreemptSlurmJobs{.job_ids = {j.job_id},
                                    .mode = policy.mode,
                                    .preemptor = e.pod,
                                    .at_unix = at,
                                    .ended_after_signal = true,
                                    .since_unix = at},
             node, plan::Cause::kLend, "EndedJobRequeued",
             StrCat("job ", j.job_id, " ended ", slurm::JobStateName(j.state),
                    " after the checkpoint signal instead of waiting for its grace: requeued as a "
                    "preempted job (its GPUs go to ",
                    e.pod, ")"));
    a.event_type = plan::EventType::kWarning;
    plan.actions.push_back(std::move(a));
  }
  // The maintenance cycle's taint keeps new pods off the node, and its Slurm drain makes the
  // node unhealthy, which holds a return back until the node is healthy again: the cycle
  // waits for the node to be free in Slurm, so a give no pod uses any more goes back at once.
  const bool maintenance =
      std::any_of(node.taints.begin(), node.taints.end(),
                  [](const inventory::Taint& t) { return t.key == health::kMaintenanceTaintKey; });
  for (const Placeholder& p : node.placeholders) {
    if (!p.health.empty()) continue;  // PlanHealth's
    std::vector<std::string> mine, held, lifted;
    bool in_use = false;
    for (const DeviceView& v : views) {
      if (v.placeholder != p.job_id || p.job_id == 0 || bad.count(v.name)) continue;
      mine.push_back(v.name);
      in_use |= !v.pods.empty();
      (v.owner == Owner::kKubernetes ? lifted : held).push_back(v.name);
    }
    if (!p.running && !p.wanted) {
      if (p.timed_out && p.pod_waiting) {
        plan.actions.push_back(
            RecordUnused(node, p, now_unix, "its placeholder did not start within give_timeout"));
      }
      plan.actions.push_back(Make(
          EndPlaceholder{.placeholder_job = p.job_id}, node, plan::Cause::kLend, "GiveCancelled",
          StrCat("placeholder ", p.job_id, " cancelled: ",
                 p.timed_out ? StrCat("it did not start within give_timeout (",
                                      own::FormatSeconds(cfg.gpu_sharing.give_timeout), ")")
                             : StrCat(p.pod, " no longer waits for GPUs"))));
      continue;
    }
    if (!p.running) {
      // A give planned on GPUs that were idle, which Slurm gave to a job meanwhile (the pod
      // came within a poll of the job's start): with no victim left to wait for and too few
      // free GPUs, it would pend until gpu_sharing.give_timeout. Cancelled now; the next pass
      // plans the pod again, with victims if it must.
      int free = 0;
      for (size_t i = 0; i < views.size(); ++i) {
        const DeviceView& v = views[i];
        // A lost give's own devices count for its restoring placeholder (its pod uses them).
        const bool own_pod =
            !v.pods.empty() && std::all_of(v.pods.begin(), v.pods.end(),
                                           [&](const std::string& x) { return x == p.pod; });
        free += v.job == 0 && v.placeholder == 0 &&
                (v.pods.empty() ? !bad.count(v.name) : own_pod) &&
                (i >= node.devices.size() || node.devices[i].profile == p.profile);
      }
      const bool victims_left = std::any_of(p.victims.begin(), p.victims.end(), [&](uint32_t id) {
        return std::any_of(node.jobs.begin(), node.jobs.end(),
                           [&](const NodeJob& j) { return j.view.job_id == id; });
      });
      if (!victims_left && free < p.gpus) {
        plan.actions.push_back(Make(
            EndPlaceholder{.placeholder_job = p.job_id}, node, plan::Cause::kLend, "GiveReplanned",
            StrCat("placeholder ", p.job_id, " cancelled: the ", p.gpus, " GPU(s) it waits for on ",
                   node.node, " were given to Slurm jobs meanwhile (", free, " free); ", p.pod,
                   " is planned again")));
        continue;
      }
      // The give waits for its victims: signal each once, preempt after its grace.
      PlanVictims(node, p, cfg, now, repairing, p.pod, p.pod, &plan);
      continue;
    }
    if (p.returning) {
      if (!lifted.empty()) {
        plan.actions.push_back(HoldAgainForSlurm(node, p.job_id, std::move(lifted)));
      } else if (!in_use) {
        plan.actions.push_back(
            Make(EndPlaceholder{.placeholder_job = p.job_id,
                                .devices = mine,
                                .since_unix = p.idle_since ? own::ToUnix(*p.idle_since) : 0},
                 node, plan::Cause::kReturn, "GpusReturned",
                 StrCat("devices ", StrJoin(mine, ","), " back to Slurm (placeholder ", p.job_id,
                        " ends)")));
      }
      continue;
    }
    // A give: Slurm holds the devices now, so Kubernetes may have them.
    if (!held.empty()) {
      std::string message = StrCat("devices ", StrJoin(held, ","), " lent to ", p.pod);
      plan.actions.push_back(
          Make(RemoveDeviceHold{.devices = std::move(held),
                                .placeholder_job = p.job_id,
                                .pod = p.pod,
                                .since_unix = p.submitted ? own::ToUnix(*p.submitted) : 0},
               node, plan::Cause::kLend, "GpusLent", std::move(message)));
      continue;
    }
    if (in_use == p.idle_since.has_value()) {
      DeviceAction a = Make(RecordIdleSince{.placeholder_job = p.job_id,
                                            .at_ms = in_use ? 0 : own::ToUnixMillis(now)},
                            node, plan::Cause::kReturn, "GpusIdle",
                            StrCat("devices ", StrJoin(mine, ","), in_use ? " in use" : " idle"));
      a.quiet = true;
      plan.actions.push_back(std::move(a));
      continue;
    }
    const own::ReturnDecision d =
        maintenance && !in_use
            ? own::ReturnDecision{.now = true, .why = "the node is in maintenance"}
            : ReturnStarts(p.start, p.idle_since, in_use, node.healthy, cfg.lending, now);
    if (!d.now) {
      // The idle-since keeps milliseconds: the return starts when it is due, not at the next
      // whole second.
      if (d.at) KeepEarliest(&plan.recheck_at, *d.at);
      continue;
    }
    if (p.pod_waiting && node.healthy) {
      plan.actions.push_back(RecordUnused(node, p, now_unix,
                                          StrCat("kube-scheduler did not place the pod on ",
                                                 StrJoin(mine, ","), " before they went back")));
    }
    plan.actions.push_back(
        Make(MarkReturning{.placeholder_job = p.job_id}, node, plan::Cause::kReturn,
             "GpusReturning", StrCat("devices ", StrJoin(mine, ","), " return to Slurm: ", d.why)));
    plan.actions.push_back(HoldAgainForSlurm(node, p.job_id, std::move(mine)));
  }
  return plan;
}

own::ReturnDecision ReturnStarts(Clock::TimePoint lent_at,
                                 std::optional<Clock::TimePoint> idle_since, bool in_use,
                                 bool healthy, const own::LendingConfig& lending,
                                 Clock::TimePoint now) {
  own::ReturnDecision d =
      own::ShouldReturn(lent_at, idle_since, in_use, healthy, lending, now, kHoldSettle);
  if (d.now) {
    StrAppend(&d.why, "; held again for ", own::FormatSeconds(kHoldSettle),
              " before they are Slurm's (what kube-scheduler decided before the holds is "
              "written by then)");
  }
  return d;
}

std::optional<DeviceAction> PlanDevicesCondition(const NodeDevices& node) {
  std::vector<std::string> bad;
  for (const Device& d : node.devices) {
    if (d.Out()) {
      bad.push_back(DescribeOut(d));
    }
  }
  plan::ConditionSpec spec{.type = std::string(health::kGpuDevicesHealthyCondition)};
  if (bad.empty()) {
    spec.status = "True";
    spec.reason = "AllGpusInService";
    spec.message = StrCat("none of the ", node.devices.size(),
                          " GPUs carries the driver's health taint or an admin's drain");
  } else {
    spec.status = "False";
    spec.reason = "GpusOutOfService";
    spec.message =
        StrCat(bad.size(), " of ", node.devices.size(),
               " GPUs out of service, kept from Slurm and Kubernetes: ", StrJoin(bad, ", "));
  }
  std::optional<plan::ConditionSpec> update = health::ConditionUpdate(
      node.devices_condition ? &*node.devices_condition : nullptr, std::move(spec));
  if (!update) return std::nullopt;
  std::string message = update->message;
  DeviceAction a = Make(plan::SetNodeCondition{std::move(*update)}, node, plan::Cause::kHealth,
                        "GpuDevicesHealth", std::move(message));
  a.quiet = true;
  return a;
}

}  // namespace skb::devices

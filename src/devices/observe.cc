// SPDX-License-Identifier: Apache-2.0
#include "src/devices/observe.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/ownership/time_codec.h"

namespace skb::devices {
namespace {

namespace own = skb::ownership;

// A node leaving GPU sharing: no proven mapping, so its devices are known by name only
// (index -1): those the driver still publishes and those the bridge still holds.
NodeDevices Leaving(const std::string& node, const std::string& k8s, const World& w,
                    const std::vector<Placeholder>& placeholders) {
  NodeDevices n;
  n.node = node;
  n.k8s_node = k8s;
  n.placeholders = placeholders;
  const auto held = w.held.find(k8s);
  const auto is_held = [&](const std::string& d) {
    return held != w.held.end() && held->second.count(d) > 0;
  };
  std::set<std::string> published;
  if (auto slice = w.slices.find(k8s); slice != w.slices.end()) {
    for (const SliceDevice& d : slice->second) published.insert(d.name);
  }
  std::set<std::string> names = published;
  if (held != w.held.end()) names.insert(held->second.begin(), held->second.end());
  for (const std::string& d : names) {
    n.devices.push_back(
        {.index = -1, .name = d, .k8s_hold = is_held(d), .published = published.count(d) > 0});
  }
  if (auto c = w.claims.find(k8s); c != w.claims.end()) n.claims = c->second;
  return n;
}

// The Slurm GRES type of a node's whole GPUs when it also has MIG slices: the one type of
// its Gres that is no slice's profile ("" when it has no slices, or not exactly one such
// type: a whole-GPU placeholder could then be given a slice, and the node gets no such give).
std::string WholeGresType(const slurm::NodeView& sn, const DeviceMapping& m) {
  std::set<std::string> profiles;
  for (const std::string& p : m.profile_by_idx) {
    if (!p.empty()) profiles.insert(p);
  }
  if (profiles.empty()) return "";
  std::set<std::string> whole;
  for (const slurm::GpuCount& g : sn.gpus) {
    if (!profiles.count(g.type)) whole.insert(g.type);
  }
  return whole.size() == 1 ? *whole.begin() : "";
}

}  // namespace

std::string PlaceholderPartitionProblem(const std::vector<slurm::PartitionView>& partitions,
                                        const std::string& partition, const std::string& node) {
  const auto p = std::find_if(partitions.begin(), partitions.end(),
                              [&](const slurm::PartitionView& v) { return v.name == partition; });
  if (p == partitions.end()) {
    return StrCat("the placeholder partition ", partition, " does not exist in Slurm");
  }
  if (std::find(p->nodes.begin(), p->nodes.end(), node) == p->nodes.end()) {
    return StrCat("the placeholder partition ", partition, " does not include the node");
  }
  if (p->max_time_minutes) {
    return StrCat("the placeholder partition ", partition, " has MaxTime=", *p->max_time_minutes,
                  " min: Slurm would end a placeholder while its pod runs (set MaxTime=UNLIMITED)");
  }
  if (p->preempt_mode != slurm::PreemptMode::kOff) {
    const char* mode = p->preempt_mode == slurm::PreemptMode::kCancel    ? "CANCEL"
                       : p->preempt_mode == slurm::PreemptMode::kRequeue ? "REQUEUE"
                       : p->preempt_mode == slurm::PreemptMode::kSuspend ? "SUSPEND"
                                                                         : "unknown";
    return StrCat("the placeholder partition ", partition, " has PreemptMode=", mode,
                  ": Slurm could preempt a placeholder while its pod runs (set PreemptMode=OFF)");
  }
  return "";
}

bool IsPlaceholder(const slurm::JobView& job) {
  return job.name == kPlaceholderJobName && ParsePlaceholderRecord(job.admin_comment).has_value();
}

void ApplyBorrowing(const std::map<std::string, std::string>& borrowing_pods, World* w) {
  for (PendingPod& p : w->pending) {
    auto it = borrowing_pods.find(p.pod);
    if (it != borrowing_pods.end()) {
      p.borrowing = it->second;
    } else {
      p.borrowing.clear();
    }
  }
}

const std::string& K8sNameOf(const World& w, const std::string& node) {
  const auto it = w.paired.find(node);
  return it != w.paired.end() ? it->second.name : node;
}

Observation Observe(const World& w, const config::Config& cfg, Clock::TimePoint now) {
  Observation out;
  const SharingConfig& sharing = cfg.gpu_sharing;

  // Placeholders by node (pending ones name their node only in their record) and the
  // signal times of their victims.
  std::map<std::string, std::vector<Placeholder>> placeholders;
  struct Signal {
    Clock::TimePoint at;
    bool exactly = false;  // the record kept the millisecond
  };
  std::map<uint32_t, Signal> signalled;
  std::map<uint32_t, std::string> signalled_for;  // victim -> the give's pod
  // Victims of placeholders that record no signal (yet): their placeholder's submission.
  std::map<uint32_t, Clock::TimePoint> unrecorded;
  for (const slurm::JobView& j : w.jobs) {
    if (j.name != kPlaceholderJobName) continue;
    if (!IsPlaceholder(j)) {
      if (j.HoldsNodes() || j.state == slurm::JobState::kPending) {
        out.suspicious[j.job_id] =
            StrCat("job ", j.job_id, " is named ", kPlaceholderJobName,
                   " but carries no readable placeholder record: treated as an ordinary job");
      }
      continue;
    }
    const bool pending = j.state == slurm::JobState::kPending;
    if (!pending && !j.HoldsNodes()) continue;  // ended: its GPUs are Slurm's again
    if (j.partition != sharing.placeholder.partition) {
      out.misplaced[j.job_id] =
          StrCat("placeholder ", j.job_id, " runs in partition ", j.partition, ", not ",
                 sharing.placeholder.partition,
                 " (gpu_sharing.placeholder.partition changed?): still honoured, its GPUs stay "
                 "held for Kubernetes; new gives use ",
                 sharing.placeholder.partition);
    }
    const PlaceholderRecord r = *ParsePlaceholderRecord(j.admin_comment);
    Placeholder p;
    p.job_id = j.job_id;
    p.pod = r.pod;
    p.gpus = r.gpus;
    p.victims = r.victims;
    p.profile = r.profile;
    p.running = !pending;
    if (auto it = j.gpu_indices.find(r.node); it != j.gpu_indices.end()) p.indices = it->second;
    p.start = own::FromUnix(j.start_time);
    if (j.submit_time > 0) p.submitted = own::FromUnix(j.submit_time);
    p.returning = r.returning;
    if (r.idle_since > 0) {
      p.idle_since =
          r.idle_since_ms > 0 ? own::FromUnixMillis(r.idle_since_ms) : own::FromUnix(r.idle_since);
    }
    // For whom its victims are signalled and preempted: the give's pod, or the bad GPU.
    const std::string for_whom = r.health.empty() ? r.pod : HealthHoldPreemptor(r.node, r.health);
    if (r.signalled_at > 0) {
      const Signal s = r.signalled_at_ms > 0
                           ? Signal{.at = own::FromUnixMillis(r.signalled_at_ms), .exactly = true}
                           : Signal{.at = own::FromUnix(r.signalled_at)};
      for (uint32_t v : r.victims) {
        signalled[v] = s;
        signalled_for[v] = for_whom;
      }
    } else if (j.submit_time > 0) {
      for (uint32_t v : r.victims) {
        unrecorded[v] = own::FromUnix(j.submit_time);
        signalled_for[v] = for_whom;
      }
    }
    if (!r.health.empty()) {
      // A health hold: no pod; PlanNode's health step decides its fate (and its victims',
      // when it follows a job on the bad GPU).
      p.health = r.health;
      p.slot = r.slot;
      p.under_job = r.under_job;
      placeholders[r.node].push_back(std::move(p));
      continue;
    }
    const auto pod = w.pod_node.find(r.pod);
    const std::string& k8s = K8sNameOf(w, r.node);
    p.pod_waiting = pod != w.pod_node.end() && pod->second.empty();
    p.wanted = p.pod_waiting || (pod != w.pod_node.end() && pod->second == k8s);
    if (pending && j.submit_time > 0 && now - own::FromUnix(j.submit_time) > sharing.give_timeout) {
      p.timed_out = true;  // waited too long: cancelled, the pod is planned again
      p.wanted = false;
    }
    placeholders[r.node].push_back(std::move(p));
  }

  // Victims that ended after the signal, by the node they ended on.
  std::map<std::string, std::vector<EndedVictim>> ended_on;
  for (const slurm::JobView& j : w.jobs) {
    if (j.HoldsNodes() || j.state == slurm::JobState::kPending || j.requeue_pending) continue;
    Clock::TimePoint at;
    const auto s = signalled.find(j.job_id);
    const bool recorded = s != signalled.end();
    if (recorded) {
      at = s->second.at;
    } else {
      const auto u = unrecorded.find(j.job_id);
      if (u == unrecorded.end() || j.exit_signal == 0) continue;
      at = u->second;
    }
    for (const std::string& node : j.nodes) {
      ended_on[node].push_back(
          {.view = j, .signalled_at = at, .pod = signalled_for[j.job_id], .recorded = recorded});
    }
  }

  // Ordinary jobs holding GPUs, by node: indexed once, not scanned again for every node.
  std::map<std::string, std::vector<const slurm::JobView*>> jobs_on;
  // Heterogeneous jobs' components, by het_job_id: preempted together.
  std::map<uint32_t, std::vector<slurm::JobView>> het;
  for (const slurm::JobView& j : w.jobs) {
    if (!j.HoldsNodes() || IsPlaceholder(j)) continue;
    if (j.het_job_id != 0) het[j.het_job_id].push_back(j);
    for (const auto& [node, idx] : j.gpu_indices) {
      if (!idx.empty()) jobs_on[node].push_back(&j);
    }
  }

  // Nodes where a job's GPU indices could not be read: which GPUs it uses is unknown there.
  std::map<std::string, std::string> unread_jobs;
  for (const slurm::JobView& j : w.jobs) {
    if (!j.HoldsNodes()) continue;
    for (const auto& [node, why] : j.unreadable_gpus) {
      unread_jobs.emplace(
          node, StrCat("the GPU indices of Slurm job ", j.job_id, " cannot be read (", why, ")"));
    }
  }

  for (const slurm::NodeView& sn : w.slurm_nodes) {
    const auto paired = w.paired.find(sn.name);
    if (paired == w.paired.end()) continue;  // not a managed node
    const std::string& k8s = paired->second.name;
    const auto slice = w.slices.find(k8s);
    const auto on_node = placeholders.find(sn.name);
    const std::vector<Placeholder> none;
    const std::vector<Placeholder>& mine = on_node != placeholders.end() ? on_node->second : none;
    const auto bad_pool = w.unreadable.find(k8s);
    const auto bad_job = unread_jobs.find(sn.name);
    if (bad_pool != w.unreadable.end() || bad_job != unread_jobs.end()) {
      // Frozen, not leaving: kube-scheduler may still allocate from the slices it has, and
      // a job whose GPUs are unknown may use any of them, so every hold and placeholder
      // stays as it is until both sides read again.
      const auto held = w.held.find(k8s);
      const size_t holds = held != w.held.end() ? held->second.size() : 0;
      const std::string what =
          bad_pool != w.unreadable.end()
              ? StrCat("the driver's pool cannot be read (", bad_pool->second, ")")
              : bad_job->second;
      const std::string why = StrCat(what, ": its ", mine.size(), " placeholder(s) and ", holds,
                                     " hold(s) stay, nothing is planned");
      out.node_granular[sn.name] = why;
      out.unreadable[sn.name] = why;
      if (!mine.empty() || holds > 0) out.sharing[sn.name] = {.leaving = true, .why = why};
      continue;
    }
    std::string not_eligible;
    DeviceMapping m;
    if (!sharing.enabled) {
      // Winding down what a run with GPU sharing left (a placeholder, a hold): as a node
      // that leaves sharing, each node gives its lent GPUs back and goes whole to the node
      // lane; a node with nothing left is simply node-granular.
      not_eligible = "gpu_sharing is off";
    } else if (slice == w.slices.end() || slice->second.empty()) {
      not_eligible = StrCat("no ResourceSlice of driver ", sharing.driver);
    } else {
      const DerivedGres gres = sharing.GresFilesOf(sn.name, sn.TotalGpus(), slice->second);
      if (!gres.unproven.empty()) {
        not_eligible = StrCat("GPU mapping not proven: ", gres.unproven);
      } else {
        m = MapGresFiles(std::span<const GresDevice>(gres.gres), slice->second,
                         sharing.TrustNames());
        if (!m.proven) not_eligible = StrCat("GPU mapping not proven: ", m.reason);
      }
    }
    if (!not_eligible.empty()) {
      const auto held = w.held.find(k8s);
      const bool holds = held != w.held.end() && !held->second.empty();
      if (mine.empty() && !holds) {
        out.node_granular[sn.name] = not_eligible;
        continue;
      }
      NodeDevices n = Leaving(sn.name, k8s, w, mine);
      const std::string left =
          StrCat(mine.size(), " placeholder(s) and ", holds ? held->second.size() : 0, " hold(s)");
      const auto still_published = std::count_if(n.devices.begin(), n.devices.end(),
                                                 [](const Device& d) { return d.published; });
      out.sharing[sn.name] = {.leaving = true, .why = StrCat(left, " left")};
      out.node_granular[sn.name] =
          StrCat("leaving GPU sharing (", not_eligible, "): the device lane winds down its ", left,
                 still_published == 0
                     ? std::string(" first")
                     : StrCat("; the ", still_published,
                              " device(s) the driver still publishes stay held for Slurm until "
                              "the GPUs map again or the slice goes"));
      out.leaving.push_back(std::move(n));
      continue;
    }
    NodeDevices n;
    n.node = sn.name;
    n.k8s_node = k8s;
    n.labels = paired->second.labels;
    n.taints = paired->second.taints;
    n.unused_gives = paired->second.unused_gives;
    n.devices_condition = paired->second.devices_condition;
    n.model = sn.gpus.empty() ? "" : sn.gpus.front().type;
    n.whole_gres_type = WholeGresType(sn, m);
    if (!n.whole_gres_type.empty()) n.model = n.whole_gres_type;
    n.healthy = !sn.Unavailable();
    if (w.partitions_known) {
      n.no_gives =
          PlaceholderPartitionProblem(w.partitions, sharing.placeholder.partition, sn.name);
    }
    const auto held = w.held.find(k8s);
    std::map<std::string, std::string> taint_of;  // device -> the driver's taint
    for (const SliceDevice& d : slice->second) {
      if (!d.taint.empty()) taint_of[d.name] = d.taint;
    }
    const auto drained = w.drained.find(k8s);
    for (size_t i = 0; i < m.device_by_idx.size(); ++i) {
      const auto taint = taint_of.find(m.device_by_idx[i]);
      Device d{.index = static_cast<int64_t>(i),
               .name = m.device_by_idx[i],
               .k8s_hold = held != w.held.end() && held->second.count(m.device_by_idx[i]),
               .driver_taint = taint != taint_of.end() ? taint->second : "",
               .profile = m.profile_by_idx[i]};
      if (drained != w.drained.end()) {
        if (auto r = drained->second.find(d.name); r != drained->second.end()) {
          d.drained = r->second.empty() ? "drained" : r->second;
        }
      }
      n.devices.push_back(std::move(d));
    }
    if (auto on = jobs_on.find(sn.name); on != jobs_on.end()) {
      for (const slurm::JobView* j : on->second) {
        NodeJob nj{.view = *j, .indices = j->gpu_indices.at(sn.name)};
        if (auto s = signalled.find(j->job_id); s != signalled.end()) {
          nj.signalled_at = s->second.at;
          nj.signalled_exactly = s->second.exactly;
        }
        if (j->het_job_id != 0) nj.het_components = het[j->het_job_id];
        for (const slurm::JobView& c :
             nj.het_components.empty() ? std::vector<slurm::JobView>{*j} : nj.het_components) {
          if (auto g = w.guaranteed_jobs.find(c.job_id); g != w.guaranteed_jobs.end()) {
            n.guaranteed_jobs.insert(*g);
          }
        }
        n.jobs.push_back(std::move(nj));
      }
    }
    n.placeholders = mine;
    if (auto c = w.claims.find(k8s); c != w.claims.end()) n.claims = c->second;
    if (auto e = ended_on.find(sn.name); e != ended_on.end()) n.ended_victims = e->second;
    out.sharing[sn.name] = {.eligible = true,
                            .all_held = std::all_of(n.devices.begin(), n.devices.end(),
                                                    [](const Device& d) { return d.k8s_hold; })};
    const PairedNode& pn = paired->second;
    if (pn.handover == plan::Handover::kHandedOver) {
      out.nodes.push_back(std::move(n));
      continue;
    }
    out.node_granular[sn.name] =
        StrCat("waiting for the node lane to hand it over: ",
               pn.handover_why.empty() ? "the node lane has not planned it as eligible yet"
                                       : pn.handover_why);
    if (pn.handover == plan::Handover::kHoldsWanted) out.handing_over.push_back(std::move(n));
  }
  return out;
}

const NodeDevices* FindNode(const Observation& o, const std::string& node) {
  for (const auto* list : {&o.nodes, &o.handing_over, &o.leaving}) {
    for (const NodeDevices& n : *list) {
      if (n.node == node) return &n;
    }
  }
  return nullptr;
}

}  // namespace skb::devices

// SPDX-License-Identifier: Apache-2.0
#include "src/plan/testing/node_model.h"

#include <algorithm>
#include <chrono>
#include <variant>

#include "src/base/overloaded.h"
#include "src/base/strings.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/lending_config.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::plan::testing {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;

// How long an evicted pod takes to go (its termination grace).
constexpr Clock::Duration kEvictionGrace = std::chrono::seconds(30);

Status Refused(const Action& a, std::string_view why) {
  return FailedPreconditionError(StrCat(ToString(a), ": ", why));
}

GpuPod* FindPod(ManagedNode* n, const PodRef& ref) {
  for (auto* list : {&n->pods, &n->claim_pods}) {
    for (GpuPod& p : *list) {
      if (p.namespace_name == ref.namespace_name && p.name == ref.name && p.uid == ref.uid) {
        return &p;
      }
    }
  }
  return nullptr;
}

bool Listed(const std::vector<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void SetCondition(ManagedNode* n, inventory::NodeCondition c) {
  for (auto& cur : n->k8s->conditions) {
    if (cur.type == c.type) {
      cur = std::move(c);
      return;
    }
  }
  n->k8s->conditions.push_back(std::move(c));
}

// Signalled jobs whose script does not trap the signal die of it.
void Signal(const SignalSlurmJobs& o, ManagedNode* n, Clock::TimePoint now, Log* log) {
  for (uint32_t id : o.job_ids) {
    ++log->signals[id];
    if (!log->untrapped.count(id)) continue;
    for (auto& j : n->jobs) {
      if (j.job_id != id) continue;
      j.state = slurm::JobState::kFailed;
      j.exit_signal = o.signal;
      j.end_time = ownership::ToUnix(now);
      n->ended_jobs.push_back(j);
    }
    std::erase_if(n->jobs, [&](const slurm::JobView& j) { return j.job_id == id; });
  }
}

// Records the preemption in each job's admin comment, then requeues it (from the node's
// jobs, or from its ended jobs for a run that ended after the signal).
Status Preempt(const Action& a, const PreemptSlurmJobs& o, ManagedNode* n,
               const config::Config& cfg, Log* log) {
  log->preemptors.push_back(o.preemptor);
  std::vector<slurm::JobView>& from = o.ended_after_signal ? n->ended_jobs : n->jobs;
  for (uint32_t id : o.job_ids) {
    // Asked for a running job: counted even if it has just left (the executor skips it).
    if (!o.ended_after_signal) ++log->preemptions[id];
    for (auto& j : from) {
      if (j.job_id != id) continue;
      if (o.ended_after_signal && j.start_time > o.at_unix) {
        return Refused(a, StrCat("requeued another run of job ", id));
      }
      if (o.ended_after_signal && j.state == slurm::JobState::kCancelled) {
        return Refused(a, StrCat("requeued the cancelled job ", id));
      }
      if (o.ended_after_signal) ++log->preemptions[id];
      j.admin_comment =
          ownership::RecordPreemption(j.admin_comment, o.at_unix, o.preemptor, cfg.lending);
      log->requeued.push_back(j);
    }
    std::erase_if(from, [&](const slurm::JobView& j) { return j.job_id == id; });
  }
  return OkStatus();
}

Status Release(const Action& a, const ReleaseReservationPod& o, ManagedNode* n) {
  GpuPod* p = FindPod(n, o.pod);
  if (p == nullptr) return OkStatus();
  switch (o.check) {
    case ReleaseCheck::kNoSlurmJobs:
      for (const auto& j : n->jobs) {
        if (j.HoldsNodes()) {
          return Refused(a, StrCat("released while job ", j.job_id, " holds the node"));
        }
      }
      break;
    case ReleaseCheck::kSwapTaint:
      if (!HasTaint(*n, ownership::kSwapTaintKey)) {
        return Refused(a, "swap release without the swap taint");
      }
      break;
    case ReleaseCheck::kNodeGone:
      if (n->k8s) return Refused(a, "node-gone release of an existing node");
      break;
  }
  p->annotations[ownership::kReleasedAnnotation] = "true";
  std::erase(p->finalizers, std::string(ownership::kFinalizer));
  return OkStatus();
}

void Patch(const AnnotationPatch& patch, std::map<std::string, std::string>* m) {
  for (const auto& [k, v] : patch.set) (*m)[k] = v;
  for (const auto& k : patch.remove) m->erase(k);
}

}  // namespace

GpuPod PodOfSpec(const ReservationSpec& spec, std::string phase, std::string uid) {
  GpuPod p;
  p.namespace_name = spec.namespace_name;
  p.name = spec.name;
  p.node_name = spec.node;
  p.gpus = spec.gpus;
  p.phase = std::move(phase);
  p.reservation = true;
  p.priority = spec.priority;
  p.uid = std::move(uid);
  p.labels = spec.labels;
  p.annotations = spec.annotations;
  p.finalizers = spec.finalizers;
  p.priority_class_name = spec.priority_class_name;
  return p;
}

bool HasTaint(const ManagedNode& n, std::string_view key) {
  if (!n.k8s) return false;
  return std::any_of(n.k8s->taints.begin(), n.k8s->taints.end(),
                     [&](const inventory::Taint& t) { return t.key == key; });
}

Status ApplyAction(const Action& a, ManagedNode* n, const config::Config& cfg, Clock::TimePoint now,
                   Log* log) {
  return std::visit(
      Overloaded{
          [&](const DrainSlurmNode& o) {
            n->slurm->drain = true;
            n->slurm->reason = o.reason;
            n->slurm->reason_uid = 0;
            n->slurm->reason_time = ownership::ToUnix(now);
            return OkStatus();
          },
          [&](const ResumeSlurmNode& o) {
            if (n->slurm->reason != o.expected_reason) {
              return Refused(a, StrCat("the drain reason is '", n->slurm->reason, "'"));
            }
            n->slurm->drain = false;
            n->slurm->reason.clear();
            if (o.down_too && n->slurm->base_state == slurm::NodeBaseState::kDown) {
              n->slurm->base_state = slurm::NodeBaseState::kIdle;
            }
            return OkStatus();
          },
          [&](const RebootSlurmNode& o) {
            // Slurm's ASAP reboot: drained with the reason, rebooted once idle (the caller's
            // CompleteReboot).
            if (n->slurm->reboot_requested || n->slurm->reboot_issued) return OkStatus();
            n->slurm->reboot_requested = true;
            n->slurm->drain = true;
            n->slurm->reason = o.reason;
            ++log->reboots;
            return OkStatus();
          },
          [&](const CreateSlurmReservation& o) {
            log->reservations.insert(o.name);
            return OkStatus();
          },
          [&](const DeleteSlurmReservation& o) {
            log->reservations.erase(o.name);
            return OkStatus();
          },
          [&](const SubmitCheckJob& o) {
            if (!log->reservations.count(o.reservation)) {
              return Refused(a, StrCat("no reservation ", o.reservation));
            }
            ++log->check_jobs;
            return OkStatus();
          },
          [&](const RequeueSlurmJobs& o) {
            std::erase_if(n->jobs,
                          [&](const slurm::JobView& j) { return Listed(o.job_ids, j.job_id); });
            return OkStatus();
          },
          [&](const SetNodeCondition& o) {
            const ConditionSpec& c = o.condition;
            SetCondition(n, {c.type, c.status, c.reason, c.message, now});
            return OkStatus();
          },
          [&](const SetSlurmFeatures& o) {
            n->slurm->features = n->slurm->active_features = o.features;
            return OkStatus();
          },
          [&](const CreateReservationPod& o) {
            const ReservationSpec& r = o.reservation;
            for (const GpuPod& p : n->pods) {
              if (p.namespace_name == r.namespace_name && p.name == r.name) {
                return Refused(a, "AlreadyExists");
              }
            }
            n->pods.push_back(PodOfSpec(
                r, "Pending",
                StrCat("uid-", r.name, "-", ownership::ToUnix(now), "-", n->pods.size())));
            return OkStatus();
          },
          [&](const EvictPod& o) {
            GpuPod* p = FindPod(n, o.pod);
            if (p == nullptr || p->terminating) return OkStatus();
            if (p->reservation) return Refused(a, "evicted the bridge's reservation");
            ++log->evictions[StrCat(p->namespace_name, "/", p->name)];
            p->terminating = true;
            p->deletion_time = now + kEvictionGrace;
            return OkStatus();
          },
          [&](const DeleteReservationPod& o) {
            GpuPod* p = FindPod(n, o.pod);
            // NotFound or already deleting: done.
            if (p == nullptr || p->terminating) return OkStatus();
            p->terminating = true;
            p->deletion_time = now + ownership::ReservationGrace(cfg.lending);
            return OkStatus();
          },
          [&](const PatchPodAnnotations& o) {
            GpuPod* p = FindPod(n, o.pod);
            if (p == nullptr) return Refused(a, "the pod is gone");
            Patch(o.annotations, &p->annotations);
            return OkStatus();
          },
          [&](const ReleaseReservationPod& o) { return Release(a, o, n); },
          [&](const SignalSlurmJobs& o) {
            Signal(o, n, now, log);
            return OkStatus();
          },
          [&](const PreemptSlurmJobs& o) { return Preempt(a, o, n, cfg, log); },
          [&](const SetNodeTaint& o) {
            if (!HasTaint(*n, o.taint.key)) {
              n->k8s->taints.push_back({o.taint.key, o.taint.value, o.taint.effect});
            }
            return OkStatus();
          },
          [&](const RemoveNodeTaint& o) {
            std::erase_if(n->k8s->taints, [&](const auto& t) { return t.key == o.taint.key; });
            return OkStatus();
          },
          [&](const PatchNodeAnnotations& o) {
            Patch(o.annotations, &n->k8s->annotations);
            Patch(o.labels, &n->k8s->labels);
            return OkStatus();
          },
          [&](const RestoreFinalizer& o) {
            GpuPod* p = FindPod(n, o.pod);
            // Aborted: the pod went or is going.
            if (p == nullptr || p->terminating) return OkStatus();
            if (std::find(p->finalizers.begin(), p->finalizers.end(), ownership::kFinalizer) ==
                p->finalizers.end()) {
              p->finalizers.push_back(ownership::kFinalizer);
            }
            return OkStatus();
          },
      },
      a.op);
}

void RunKubelet(ManagedNode* n, Clock::TimePoint now) {
  std::erase_if(n->pods, [](const GpuPod& p) { return p.terminating && p.finalizers.empty(); });
  int64_t used = 0;
  for (const GpuPod& p : n->pods) {
    if (p.phase == "Running") used += p.gpus;
  }
  for (GpuPod& p : n->pods) {
    if (p.terminating && p.deletion_time && now >= *p.deletion_time) p.phase = "Failed";
    if (p.phase == "Pending" && p.reservation) {
      p.phase = used + p.gpus <= n->k8s->gpu_allocatable ? "Running" : "Failed";
      if (p.phase == "Running") {
        used += p.gpus;
        p.started = now;
      }
    }
  }
}

}  // namespace skb::plan::testing

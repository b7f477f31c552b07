// SPDX-License-Identifier: Apache-2.0
#include "src/health/maintenance.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/time_codec.h"

namespace skb::health {
namespace {

using inventory::GpuPod;
using inventory::ManagedNode;
using inventory::NodeCondition;
using plan::Action;
using plan::NodePlan;

constexpr auto kCheckSlack = std::chrono::minutes(2);

bool IsFailedPhase(std::string_view p) {
  return p == kPhaseDrainTimedOut || p == kPhaseRebootTimedOut || p == kPhaseCheckFailed;
}

int64_t Minutes(std::chrono::milliseconds d) {
  return std::max<int64_t>(1, std::chrono::ceil<std::chrono::minutes>(d).count());
}

// Builds the cycle's actions for one node, in the order they must run (one chain: a
// failed step holds back the ones after it until the next pass).
class CyclePlanner {
 public:
  CyclePlanner(const ManagedNode& node, const HealthConfig& cfg, const HealthVerdict& verdict,
               const MaintenanceState& st, Clock::TimePoint now, NodePlan* plan)
      : node_(node),
        cfg_(cfg),
        verdict_(verdict),
        st_(st),
        now_(now),
        plan_(plan),
        s_(*node.slurm) {}

  void Plan() {
    if (st_.running && IsFailedPhase(st_.phase)) return Failed();
    if (!st_.running) {
      if (!st_.requested) return;
      return StartDraining("requested");
    }
    if (st_.phase == kPhaseDraining) return Draining();
    if (st_.phase == kPhaseRebooting) return Rebooting();
    if (st_.phase == kPhaseChecking) return Checking();
    // A phase this bridge does not know (written by a newer one, or by hand): start over.
    Say(StrCat("unknown maintenance phase '", st_.phase, "': the cycle starts again"));
    StartDraining(StrCat("phase '", st_.phase, "' unknown"));
  }

 private:
  void Say(std::string line) { plan_->explanation.push_back(std::move(line)); }

  Action& Add(plan::Operation op, std::string event_reason, std::string event_message,
              plan::EventType type = plan::EventType::kNormal) {
    Action a;
    a.op = std::move(op);
    a.node = node_.name;
    a.k8s_node = node_.K8sNameIfDifferent();
    a.cause = plan::Cause::kMaintenance;
    a.chain = plan::Chain::kHealth;
    a.event_type = type;
    a.event_reason = std::move(event_reason);
    a.event_message = std::move(event_message);
    plan_->actions.push_back(std::move(a));
    return plan_->actions.back();
  }

  // The phase record. A new phase gets a new lastTransitionTime (the phase's start, which
  // the timeouts count from), though the status may stay True.
  void SetPhase(std::string_view phase, std::string_view status, std::string message,
                std::string event_reason, plan::EventType type = plan::EventType::kNormal) {
    plan::ConditionSpec c{std::string(kMaintenanceCondition), std::string(status),
                          std::string(phase), ConditionMessage(message)};
    c.transition = plan::ConditionSpec::Transition::kNow;
    Add(plan::SetNodeCondition{c}, std::move(event_reason),
        StrCat("Maintenance of ", node_.name, ": ", phase, ": ", message), type);
  }

  std::string DrainReason() const {
    std::string why = StrCat("maintenance: ", cfg_.reboot_condition, "=True");
    if (!st_.request_message.empty()) StrAppend(&why, ": ", st_.request_message);
    return SlurmReason(why);
  }

  plan::TaintSpec Taint() const { return {std::string(kMaintenanceTaintKey), "", "NoSchedule"}; }

  bool Lent() const { return s_.DrainedBy() == slurm::DrainOrigin::kBridgeLend; }

  // Keeps Slurm off the node: the bridge's maintenance drain, unless a drain of an admin's
  // or of a lend already does.
  void EnsureDrained() {
    if (s_.DrainedBy() == slurm::DrainOrigin::kOther) {
      Say(StrCat("Slurm drain by an admin in place ('", s_.reason, "'): it keeps jobs off"));
      return;
    }
    if (Lent()) {
      Say(StrCat("lent to Kubernetes ('", s_.reason, "'): the lend's drain keeps jobs off"));
      return;
    }
    const std::string reason = DrainReason();
    if (s_.drain && s_.reason == reason) return;
    Add(plan::DrainSlurmNode{reason}, "SlurmNodeDrained",
        StrCat("Drained Slurm node ", node_.name, " for maintenance"), plan::EventType::kWarning);
  }

  void EnsureTainted() {
    const bool tainted = std::any_of(node_.k8s->taints.begin(), node_.k8s->taints.end(),
                                     [](const auto& t) { return t.key == kMaintenanceTaintKey; });
    if (!tainted) {
      Add(plan::SetNodeTaint{Taint()}, "MaintenanceTainted",
          StrCat("Tainted ", node_.k8s->name, " ", kMaintenanceTaintKey,
                 ":NoSchedule: no new pods during maintenance"));
    }
  }

  // GPU pods that keep the node busy: bound here (asking for the GPU resource or using
  // ResourceClaims), not the bridge's reservation, not done.
  std::vector<const GpuPod*> BusyPods() const {
    std::vector<const GpuPod*> out;
    for (const auto* list : {&node_.pods, &node_.claim_pods}) {
      for (const GpuPod& p : *list) {
        if (p.reservation || p.phase == "Succeeded" || p.phase == "Failed") continue;
        out.push_back(&p);
      }
    }
    return out;
  }

  std::vector<const slurm::JobView*> BusyJobs() const {
    std::vector<const slurm::JobView*> out;
    for (const slurm::JobView& j : node_.jobs) {
      if (j.HoldsNodes()) out.push_back(&j);
    }
    return out;
  }

  void StartDraining(std::string_view why) {
    SetPhase(kPhaseDraining, "True",
             StrCat("draining both schedulers (", why, "): Slurm jobs get ",
                    FormatDuration(cfg_.maintenance_deadline), ", then are requeued"),
             "MaintenanceDraining");
    // The steps of the phase run in the same pass; its clock starts now.
    DrainSteps(now_);
  }

  void Draining() {
    if (!st_.requested) {
      // Withdrawn before the reboot was asked for: undo what the cycle did.
      Say("the request was withdrawn while draining: the cycle stops");
      return GiveBack(kPhaseCancelled, "the request was withdrawn before the reboot");
    }
    const Clock::TimePoint timeout = st_.phase_since + cfg_.drain_timeout;
    std::vector<const slurm::JobView*> jobs = BusyJobs();
    std::vector<const GpuPod*> pods = BusyPods();
    if (jobs.empty() && pods.empty() && (s_.drain || Lent())) return StartRebooting();
    if (now_ >= timeout) {
      std::string left =
          StrCat(jobs.size(), " Slurm job(s) and ", pods.size(), " pod(s) still on the node after ",
                 FormatDuration(cfg_.drain_timeout));
      return Fail(kPhaseDrainTimedOut, left);
    }
    plan_->RecheckBy(timeout);
    DrainSteps(st_.phase_since);
  }

  // Draining's steps: Slurm drained, the node tainted, GPU pods evicted, Slurm jobs requeued
  // once the deadline (from `since`) passed.
  void DrainSteps(Clock::TimePoint since) {
    EnsureDrained();
    EnsureTainted();
    for (const GpuPod* p : BusyPods()) {
      if (p->terminating) continue;
      Add(plan::EvictPod{{p->namespace_name, p->name, p->uid}}, "MaintenanceEviction",
          StrCat("Evicting pod ", p->namespace_name, "/", p->name, " from ", node_.k8s->name,
                 " for maintenance"));
    }
    const Clock::TimePoint deadline = since + cfg_.maintenance_deadline;
    std::vector<uint32_t> requeue;
    for (const slurm::JobView* j : BusyJobs()) {
      if (j->completing) continue;
      if (now_ < deadline) continue;
      if (!j->requeue || !j->batch) {
        Say(StrCat("job ", j->job_id, " cannot be requeued: the drain waits for it"));
        continue;
      }
      requeue.push_back(j->job_id);
    }
    if (now_ < deadline) {
      plan_->RecheckBy(deadline);
      Say(StrCat("Slurm jobs may finish until the deadline, in ", FormatDuration(deadline - now_)));
    }
    if (!requeue.empty()) {
      Add(plan::RequeueSlurmJobs{requeue}, "MaintenanceDeadlinePassed",
          StrCat("Requeued ", requeue.size(), " Slurm job(s) on ", node_.name,
                 ": maintenance deadline passed"),
          plan::EventType::kWarning);
    }
  }

  void StartRebooting() {
    const bool by_slurm = cfg_.reboot_by == HealthConfig::RebootBy::kSlurm;
    // The record first: the reboot counts as done once the node boots after the phase began.
    SetPhase(kPhaseRebooting, "True",
             by_slurm ? "both schedulers drained: Slurm reboots the node (RebootProgram)"
                      : "both schedulers drained: waiting for the site to reboot the node",
             "MaintenanceRebooting");
    if (by_slurm) AskReboot();
  }

  void AskReboot() {
    Add(plan::RebootSlurmNode{SlurmReason(
            StrCat("maintenance reboot (", cfg_.reboot_condition, ")"))},
        "SlurmNodeRebootRequested", StrCat("Asked Slurm to reboot ", node_.name));
  }

  // Slurm has seen the node boot since the phase began. Not strictly after: Slurm's BootTime
  // is whole seconds worked out from the node's uptime (now less uptime, a second either
  // way), and the phase's start is whole seconds too; a node that booted before the phase
  // began booted before the drain, far earlier.
  bool BootTimeMoved() const { return s_.boot_time >= ownership::ToUnix(st_.phase_since); }
  // ... and it is back: registered (reboot flags cleared) and responding.
  bool BootedSincePhase() const {
    return BootTimeMoved() && !s_.reboot_requested && !s_.reboot_issued && !s_.not_responding;
  }

  void Rebooting() {
    if (BootedSincePhase()) {
      Say(StrCat("node booted at ", s_.boot_time, ", after the reboot was asked for"));
      if (cfg_.check_command.empty()) {
        return Complete("rebooted; no check configured (health.maintenance.check.command)");
      }
      return StartChecking();
    }
    const Clock::TimePoint timeout = st_.phase_since + cfg_.reboot_timeout;
    if (now_ >= timeout) {
      return Fail(kPhaseRebootTimedOut,
                  StrCat("the node did not boot again within ", FormatDuration(cfg_.reboot_timeout),
                         " (Slurm: ", s_.StateString(), ")"));
    }
    plan_->RecheckBy(timeout);
    if (cfg_.reboot_by == HealthConfig::RebootBy::kSlurm && !s_.reboot_requested &&
        !s_.reboot_issued && !BootTimeMoved()) {
      // Asked in the pass that began the phase, but not seen yet (or refused): ask again.
      // A node that booted already is coming back (registered, not yet responding: about a
      // second), and another request would reboot it twice.
      AskReboot();
    }
    Say("waiting for the node to boot again");
  }

  void StartChecking() {
    SetPhase(kPhaseChecking, "True",
             StrCat("rebooted; running the check job in reservation ",
                    MaintenanceReservationName(node_.name)),
             "MaintenanceChecking");
    CheckSteps();
  }

  // The reservation, the node resumed into it, the check job: each idempotent.
  void CheckSteps() {
    const std::string resv = MaintenanceReservationName(node_.name);
    Add(plan::CreateSlurmReservation{resv, Minutes(cfg_.check_timeout + kCheckSlack)},
        "MaintenanceReservationCreated",
        StrCat("Created Slurm reservation ", resv, " on ", node_.name, " for the check job"));
    const bool down = s_.base_state == slurm::NodeBaseState::kDown;
    if ((s_.drain || down) && s_.DrainedByBridge()) {
      Add(plan::ResumeSlurmNode{.expected_reason = s_.reason, .down_too = true}, "SlurmNodeResumed",
          StrCat("Resumed Slurm node ", node_.name, " into reservation ", resv,
                 " for the check job"));
    }
    Add(plan::SubmitCheckJob{resv, cfg_.check_command, node_.slurm->TotalGpus(),
                             Minutes(cfg_.check_timeout), CheckSince()},
        "MaintenanceCheckSubmitted",
        StrCat("Submitted the check job on ", node_.name, ": ", cfg_.check_command));
  }

  // The check's reservation goes (quiet: it is there only while Checking; kUnchanged when
  // it is gone already).
  void DeleteReservation() {
    const std::string resv = MaintenanceReservationName(node_.name);
    Add(plan::DeleteSlurmReservation{resv}, "MaintenanceReservationDeleted",
        StrCat("Deleted Slurm reservation ", resv));
    plan_->actions.back().quiet = true;
  }

  // From when a check job is this cycle's: the phase's start, or the node's boot if earlier.
  // The phase's record carries the time the condition was written, which may be seconds
  // after the pass that began the phase submitted the check job (a restarted bridge's first
  // pass; a slow write): that job is still this cycle's, and submitting another beside it
  // ran two checks. A check of an earlier cycle ran before this cycle's reboot.
  int64_t CheckSince() const {
    const int64_t since = ownership::ToUnix(st_.phase_since);
    return s_.boot_time > 0 ? std::min(since, s_.boot_time) : since;
  }

  // The check job of this phase: submitted since CheckSince(); the newest.
  const slurm::JobView* CheckJob() const {
    const slurm::JobView* found = nullptr;
    const int64_t since = CheckSince();
    for (const auto* list : {&node_.jobs, &node_.ended_jobs}) {
      for (const slurm::JobView& j : *list) {
        if (j.name != kMaintenanceCheckJobName || j.submit_time < since) continue;
        if (found == nullptr || j.job_id > found->job_id) found = &j;
      }
    }
    return found;
  }

  void Checking() {
    const slurm::JobView* job = CheckJob();
    const Clock::TimePoint timeout = st_.phase_since + cfg_.check_timeout + kCheckSlack;
    if (job != nullptr && !job->HoldsNodes() && job->state != slurm::JobState::kPending) {
      const std::string what = StrCat(
          "check job ", job->job_id, " ended ", slurm::JobStateName(job->state), " (exit ",
          job->exit_code,
          job->exit_signal != 0 ? StrCat(", signal ", job->exit_signal) : std::string(), ")");
      DeleteReservation();
      if (job->state == slurm::JobState::kComplete && job->exit_code == 0) {
        return Complete(StrCat("rebooted; ", what));
      }
      return Fail(kPhaseCheckFailed, what);
    }
    if (now_ >= timeout) {
      DeleteReservation();
      return Fail(
          kPhaseCheckFailed,
          StrCat("no check result within ", FormatDuration(cfg_.check_timeout + kCheckSlack),
                 job != nullptr ? StrCat(" (job ", job->job_id, " still ",
                                         slurm::JobStateName(job->state), ")")
                                : std::string(" (no check job ran)")));
    }
    plan_->RecheckBy(timeout);
    if (job != nullptr) {
      Say(StrCat("check job ", job->job_id, " ", slurm::JobStateName(job->state)));
      return;
    }
    CheckSteps();
  }

  // The node leaves the cycle healthy: both schedulers get it back (unless another signal
  // keeps it from Slurm), the request is closed, then the record says Completed. The
  // request is closed first: a record of Completed beside an open request reads as a new
  // request.
  void Complete(const std::string& what) {
    if (!verdict_.firing.empty()) {
      const std::string reason = SlurmReason(verdict_.firing.front().description);
      Add(plan::DrainSlurmNode{reason}, "SlurmNodeDrained",
          StrCat("Maintenance of ", node_.name, " done, but ", verdict_.firing.front().description,
                 ": the node stays drained"),
          plan::EventType::kWarning);
    } else {
      Resume();
    }
    Add(plan::RemoveNodeTaint{Taint()}, "MaintenanceUntainted",
        StrCat("Removed the maintenance taint from ", node_.k8s->name));
    plan_->actions.back().quiet = true;
    CloseRequest(what);
    SetPhase(kPhaseCompleted, "False", what, "MaintenanceCompleted");
  }

  void Resume() {
    const bool down = s_.base_state == slurm::NodeBaseState::kDown;
    if ((s_.drain || down) && s_.DrainedByBridge() && !Lent()) {
      Add(plan::ResumeSlurmNode{.expected_reason = s_.reason, .down_too = true}, "SlurmNodeResumed",
          StrCat("Resumed Slurm node ", node_.name, " after maintenance"));
    }
  }

  void CloseRequest(const std::string& what) {
    const NodeCondition* req = node_.k8s->FindCondition(cfg_.reboot_condition);
    if (req == nullptr || req->status != "True") return;
    plan::ConditionSpec c{cfg_.reboot_condition, "False", std::string(kRequestClosedReason),
                          ConditionMessage(StrCat("done by the bridge: ", what))};
    c.transition = plan::ConditionSpec::Transition::kNow;
    Add(plan::SetNodeCondition{c}, "MaintenanceRequestClosed",
        StrCat("Closed ", cfg_.reboot_condition, " on ", node_.k8s->name));
    plan_->actions.back().quiet = true;
  }

  // Withdrawn (Draining, or after a failure): the node is given back as it is.
  void GiveBack(std::string_view phase, const std::string& what) {
    DeleteReservation();
    if (verdict_.firing.empty()) Resume();
    Add(plan::RemoveNodeTaint{Taint()}, "MaintenanceUntainted",
        StrCat("Removed the maintenance taint from ", node_.k8s->name));
    plan_->actions.back().quiet = true;
    SetPhase(phase, "False", what, StrCat("Maintenance", phase));
  }

  void Fail(std::string_view phase, const std::string& what) {
    Add(plan::DrainSlurmNode{SlurmReason(StrCat("maintenance ", phase, ": ", what))},
        "SlurmNodeDrained", StrCat("Slurm node ", node_.name, " stays drained: ", what),
        plan::EventType::kWarning);
    SetPhase(phase, "True",
             StrCat(what, "; the node stays out: `bridgectl maintenance retry ", node_.k8s->name,
                    "` starts again, clearing ", cfg_.reboot_condition, " gives it back"),
             StrCat("Maintenance", phase), plan::EventType::kWarning);
  }

  void Failed() {
    if (!st_.requested) {
      Say(StrCat("the request was cleared after ", st_.phase, ": the node is given back"));
      return GiveBack(kPhaseCancelled, StrCat("request cleared after ", st_.phase));
    }
    Say(StrCat("maintenance ", st_.phase,
               ": the node stays out until `bridgectl maintenance retry` or the request clears"));
  }

  const ManagedNode& node_;
  const HealthConfig& cfg_;
  const HealthVerdict& verdict_;
  const MaintenanceState& st_;
  const Clock::TimePoint now_;
  NodePlan* plan_;
  const slurm::NodeView& s_;
};

}  // namespace

std::string MaintenanceReservationName(std::string_view node) { return StrCat("skb-maint-", node); }

bool MaintenanceState::Failed() const { return running && IsFailedPhase(phase); }

MaintenanceState ReadMaintenanceState(const inventory::K8sNode& node, const HealthConfig& cfg) {
  MaintenanceState st;
  if (!cfg.reboot_condition.empty()) {
    if (const NodeCondition* r = node.FindCondition(cfg.reboot_condition);
        r != nullptr && r->status == "True") {
      st.requested = true;
      st.request_message = r->message;
    }
  }
  if (const NodeCondition* m = node.FindCondition(kMaintenanceCondition); m != nullptr) {
    st.phase = m->reason;
    st.running = m->status == "True";
    st.phase_since = m->last_transition;
  }
  return st;
}

NodePlan PlanMaintenance(const inventory::ManagedNode& node, const HealthConfig& cfg,
                         const HealthVerdict& verdict, Clock::TimePoint now) {
  NodePlan plan;
  if (!node.k8s || !node.slurm) return plan;
  const MaintenanceState st = ReadMaintenanceState(*node.k8s, cfg);
  if (!st.Active()) return plan;
  plan.explanation.push_back(
      StrCat("maintenance: ", st.running ? st.phase : std::string("requested"),
             st.requested ? StrCat(" (", cfg.reboot_condition, "=True)") : std::string()));
  CyclePlanner(node, cfg, verdict, st, now, &plan).Plan();
  return plan;
}

}  // namespace skb::health

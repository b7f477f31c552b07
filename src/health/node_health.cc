// SPDX-License-Identifier: Apache-2.0
#include "src/health/node_health.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/health/maintenance.h"

namespace skb::health {
namespace {

using inventory::K8sNode;
using inventory::NodeCondition;
using plan::Action;

constexpr size_t kMaxConditionMessageBytes = 1024;

// Replaces control characters with spaces and cuts `text` to `max` bytes on a UTF-8
// boundary, marking the cut with "...".
std::string Sanitize(std::string_view text, size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max));
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
  }
  if (out.size() <= max) return out;
  size_t cut = max - 3;
  // Back up to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  out += "...";
  return out;
}

std::string ConditionDescription(const NodeCondition& c) {
  std::string detail = !c.message.empty() ? c.message : c.reason;
  if (detail.empty()) return StrCat(c.type, "=", c.status);
  return StrCat(c.type, "=", c.status, ": ", detail);
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool IsHealthDrain(const slurm::NodeView& n) {
  return n.DrainedBy() == slurm::DrainOrigin::kBridge;
}

// Sets a condition on the Kubernetes node; only emits an action when it differs. `healthy`:
// the state a working node is in (Slurm up, not drained).
void WantCondition(const inventory::ManagedNode& node, plan::ConditionSpec spec,
                   std::string_view event_reason, std::string event_message, bool healthy,
                   NodePlan* plan) {
  const K8sNode& k = *node.k8s;
  const NodeCondition* cur = k.FindCondition(spec.type);
  std::optional<plan::ConditionSpec> update = ConditionUpdate(cur, std::move(spec));
  if (!update) return;
  Action a;
  a.op = plan::SetNodeCondition{std::move(*update)};
  a.node = node.name;
  a.k8s_node = node.K8sNameIfDifferent();
  a.event_reason = std::string(event_reason);
  a.event_message = std::move(event_message);
  a.cause = plan::Cause::kSlurmState;
  // Good news (back to the state a working node is in) is Normal, anything else a Warning.
  a.event_type = healthy ? plan::EventType::kNormal : plan::EventType::kWarning;
  // A healthy state published for the first time is no news (and not "healthy again"):
  // the condition is the record, no Event. Half the Events of a node's set-up.
  a.quiet = healthy && cur == nullptr;
  a.chain = plan::Chain::kStatus;  // never held back by a drain or a lend that fails
  plan->actions.push_back(std::move(a));
}

// A Kubernetes node whose Slurm name (kubernetes.node_names) Slurm does not have: said on
// the node, with both names, so that a wrong naming rule is found from `kubectl describe`.
void PlanUnpaired(const inventory::ManagedNode& node, NodePlan* plan) {
  const std::string& k8s_name = node.k8s->name;
  std::string msg = StrCat("Kubernetes node ", k8s_name, " pairs with Slurm node ", node.name,
                           " (kubernetes.node_names), which Slurm does not have");
  WantCondition(node, {std::string(kSlurmHealthyCondition), "Unknown", "SlurmNodeNotFound", msg},
                "SlurmNodeNotFound", msg, /*healthy=*/false, plan);
}

// Publishes Slurm's view as conditions; only emits an action when the condition differs.
void PlanSlurmConditions(const inventory::ManagedNode& node, const HealthVerdict& verdict,
                         NodePlan* plan) {
  const slurm::NodeView& s = *node.slurm;
  auto want = [&](plan::ConditionSpec spec, std::string_view event_reason,
                  std::string event_message, bool healthy) {
    WantCondition(node, std::move(spec), event_reason, std::move(event_message), healthy, plan);
  };

  // NOT_RESPONDING alone is transient (slurmctld sets it after a resume or its own restart
  // until the next ping, and marks the node DOWN itself after SlurmdTimeout): publishing
  // it would flap the condition and spam Warning Events. DOWN and FAIL are Slurm's verdict.
  bool down = s.base_state == slurm::NodeBaseState::kDown;
  if (s.fail || down) {
    std::string reason = s.not_responding ? "SlurmNodeNotResponding"
                         : s.fail         ? "SlurmNodeFailed"
                                          : "SlurmNodeDown";
    std::string msg = s.reason.empty() ? StrCat("Slurm state ", s.StateString())
                                       : StrCat("Slurm state ", s.StateString(), ": ", s.reason);
    want({std::string(kSlurmHealthyCondition), "False", reason, msg}, reason,
         StrCat("Slurm reports node ", node.name, " unhealthy: ", msg), /*healthy=*/false);
  } else {
    want({std::string(kSlurmHealthyCondition), "True", "SlurmNodeUp", "slurmd is responding"},
         "SlurmNodeUp", StrCat("Slurm reports node ", node.name, " healthy again"),
         /*healthy=*/true);
  }

  if (s.drain) {
    bool jobs_running = std::any_of(node.jobs.begin(), node.jobs.end(),
                                    [](const slurm::JobView& j) { return j.HoldsNodes(); });
    std::string reason = verdict.maintenance && !jobs_running ? "ReadyForMaintenance"
                         : s.DrainedByBridge()                ? "DrainedByBridge"
                                                              : "DrainedByAdmin";
    std::string msg = s.reason;
    if (!s.DrainedByBridge() && s.reason_uid != 0) StrAppend(&msg, " (uid ", s.reason_uid, ")");
    want({std::string(kSlurmDrainedCondition), "True", reason, msg}, reason,
         StrCat("Slurm node ", node.name, " drained: ", msg), /*healthy=*/false);
  } else {
    want({std::string(kSlurmDrainedCondition), "False", "NotDrained", ""}, "SlurmNodeNotDrained",
         StrCat("Slurm node ", node.name, " accepts jobs"), /*healthy=*/true);
  }
}

}  // namespace

std::string FormatDuration(Clock::Duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 120) return StrCat(s, "s");
  if (s < 7200) return StrCat(s / 60, "m");
  return StrCat(s / 3600, "h");
}

std::string SlurmReason(std::string_view text) {
  return Sanitize(StrCat(plan::kReasonPrefix, text), kMaxReasonBytes);
}

std::optional<plan::ConditionSpec> ConditionUpdate(const NodeCondition* cur,
                                                   plan::ConditionSpec want) {
  want.message = ConditionMessage(want.message);
  if (cur != nullptr && cur->status == want.status && cur->reason == want.reason &&
      cur->message == want.message) {
    return std::nullopt;
  }
  if (cur == nullptr || cur->status != want.status) {
    want.transition = plan::ConditionSpec::Transition::kNow;
  } else if (cur->last_transition != Clock::TimePoint{}) {
    want.transition = plan::ConditionSpec::Transition::kKeep;
    want.since = cur->last_transition;
  }
  return want;
}

std::string ConditionMessage(std::string_view text) {
  return Sanitize(text, kMaxConditionMessageBytes);
}

HealthVerdict AssessHealth(const K8sNode& node, const HealthConfig& cfg, Clock::TimePoint now) {
  HealthVerdict v;
  for (const ConditionRule& rule : cfg.conditions) {
    const NodeCondition* c = node.FindCondition(rule.type);
    if (c == nullptr || !Contains(rule.bad_status, c->status)) continue;
    Signal sig{StrCat("condition ", rule.type), ConditionDescription(*c), rule.severity,
               std::nullopt};
    if (rule.grace.count() > 0) {
      sig.fires_at = c->last_transition + rule.grace;
      if (*sig.fires_at > now) {
        v.pending.push_back(std::move(sig));
        continue;
      }
    }
    v.firing.push_back(std::move(sig));
  }
  for (const TaintRule& rule : cfg.taints) {
    for (const auto& t : node.taints) {
      if (t.key != rule.key) continue;
      if (rule.value && t.value != *rule.value) continue;
      if (!rule.effects.empty() && !Contains(rule.effects, t.effect)) continue;
      std::string desc = StrCat("taint ", inventory::TaintString(t));
      v.firing.push_back({StrCat("taint ", rule.key), desc, rule.severity, std::nullopt});
      break;
    }
  }
  if (cfg.cordon && node.unschedulable) {
    v.firing.push_back({"cordon", "cordoned (spec.unschedulable)", *cfg.cordon, std::nullopt});
  }
  if (const NodeCondition* m = node.FindCondition(cfg.maintenance_condition);
      m != nullptr && m->status == "True") {
    v.maintenance = true;
    v.maintenance_since = m->last_transition;
    v.firing.push_back(
        {StrCat("condition ", m->type), ConditionDescription(*m), Severity::kDrain, std::nullopt});
  }
  // The admin drain request (bridgectl drain): built in so the command works whatever the
  // rules say; a configured rule on the same type already covers it.
  if (const NodeCondition* d = node.FindCondition(kDrainRequestedCondition);
      d != nullptr && d->status == "True" && cfg.maintenance_condition != d->type &&
      std::none_of(cfg.conditions.begin(), cfg.conditions.end(),
                   [&](const ConditionRule& r) { return r.type == d->type; })) {
    v.firing.push_back({StrCat("condition ", d->type, " (admin drain request)"),
                        ConditionDescription(*d), Severity::kDrain, std::nullopt});
  }
  std::stable_sort(v.firing.begin(), v.firing.end(), [](const Signal& a, const Signal& b) {
    return a.severity == Severity::kDownNow && b.severity != Severity::kDownNow;
  });
  return v;
}

NodePlan PlanNodeHealth(const inventory::ManagedNode& node, const HealthConfig& cfg,
                        Clock::TimePoint now) {
  NodePlan plan;
  if (!node.k8s) {
    plan.explanation.push_back("not a Kubernetes node (or not selected): nothing to do");
    return plan;
  }
  if (!node.slurm) {
    plan.explanation.push_back(StrCat("Slurm has no node ", node.name, " (Kubernetes node ",
                                      node.k8s->name,
                                      ", kubernetes.node_names): only a Warning condition"));
    if (cfg.slurm_conditions) PlanUnpaired(node, &plan);
    return plan;
  }
  const slurm::NodeView& s = *node.slurm;
  HealthVerdict verdict = AssessHealth(*node.k8s, cfg, now);
  for (const Signal& sig : verdict.firing) {
    plan.explanation.push_back(StrCat("signal ", sig.description, " (rule ", sig.rule,
                                      ", severity ", SeverityName(sig.severity), ")"));
  }
  for (const Signal& sig : verdict.pending) {
    plan.explanation.push_back(StrCat("signal ", sig.description, " within grace; fires in ",
                                      FormatDuration(*sig.fires_at - now)));
    plan.RecheckBy(*sig.fires_at);
  }

  // The maintenance cycle has the Slurm node while it runs (src/health/maintenance.h).
  if (ReadMaintenanceState(*node.k8s, cfg).Active()) {
    NodePlan m = PlanMaintenance(node, cfg, verdict, now);
    for (auto& a : m.actions) plan.actions.push_back(std::move(a));
    for (auto& e : m.explanation) plan.explanation.push_back(std::move(e));
    plan.RecheckBy(m.recheck_at);
    if (cfg.slurm_conditions) PlanSlurmConditions(node, verdict, &plan);
    return plan;
  }

  const bool lent = s.DrainedBy() == slurm::DrainOrigin::kBridgeLend;
  if (!verdict.firing.empty()) {
    const Signal& top = verdict.firing.front();
    std::string text = top.description;
    if (verdict.firing.size() > 1) StrAppend(&text, " (+", verdict.firing.size() - 1, " more)");
    std::string reason = SlurmReason(text);
    const std::string_view rule = top.rule;  // "condition <type>" for a condition rule
    const plan::Cause cause =
        rule.starts_with("condition ") && rule.substr(10) == cfg.maintenance_condition
            ? plan::Cause::kMaintenance
            : plan::Cause::kHealth;
    if (s.DrainedBy() == slurm::DrainOrigin::kOther) {
      plan.explanation.push_back(
          StrCat("Slurm drain by an admin is in place ('", s.reason, "'): left as it is"));
    } else if (lent) {
      plan.explanation.push_back(
          StrCat("node is lent to Kubernetes ('", s.reason, "'): its drain stays"));
    } else if (!s.drain || s.reason != reason) {
      Action a;
      a.op = plan::DrainSlurmNode{reason};
      a.node = node.name;
      a.k8s_node = node.K8sNameIfDifferent();
      a.cause = cause;
      a.event_type = plan::EventType::kWarning;
      a.event_reason = "SlurmNodeDrained";
      a.event_message = StrCat("Drained Slurm node ", node.name, ": ", text);
      plan.actions.push_back(std::move(a));
    }
    // Work that must leave now: a down-severity signal, or maintenance past its deadline.
    std::vector<uint32_t> evict;
    bool down_now = top.severity == Severity::kDownNow;
    bool deadline_passed = false;
    if (verdict.maintenance) {
      Clock::TimePoint deadline = verdict.maintenance_since + cfg.maintenance_deadline;
      deadline_passed = now >= deadline;
      if (!deadline_passed) plan.RecheckBy(deadline);
    }
    if (down_now || deadline_passed) {
      for (const slurm::JobView& j : node.jobs) {
        if (!j.HoldsNodes() || j.completing) continue;
        if (!j.requeue) {
          plan.explanation.push_back(
              StrCat("job ", j.job_id, " cannot be requeued (--no-requeue): left to finish"));
          continue;
        }
        evict.push_back(j.job_id);
      }
    }
    if (!evict.empty()) {
      Action a;
      a.op = plan::RequeueSlurmJobs{evict};
      a.node = node.name;
      a.k8s_node = node.K8sNameIfDifferent();
      a.cause = down_now ? plan::Cause::kHealth : plan::Cause::kMaintenance;
      a.event_type = plan::EventType::kWarning;
      a.event_reason = down_now ? "SlurmJobsRequeued" : "MaintenanceDeadlinePassed";
      a.event_message = StrCat("Requeued ", evict.size(), " Slurm job(s) on ", node.name, ": ",
                               down_now ? text : "maintenance deadline passed");
      plan.actions.push_back(std::move(a));
    }
  } else if (IsHealthDrain(s)) {
    Action a;
    a.op = plan::ResumeSlurmNode{.expected_reason = s.reason};
    a.node = node.name;
    a.k8s_node = node.K8sNameIfDifferent();
    // The drain's reason is the only record of why it was made.
    a.cause = s.reason.find(cfg.maintenance_condition) != std::string::npos
                  ? plan::Cause::kMaintenance
                  : plan::Cause::kHealth;
    a.event_reason = "SlurmNodeResumed";
    a.event_message =
        StrCat("Resumed Slurm node ", node.name, ": the signal cleared ('", s.reason, "')");
    plan.actions.push_back(std::move(a));
  } else if (s.DrainedBy() == slurm::DrainOrigin::kOther) {
    plan.explanation.push_back(
        StrCat("Slurm drain by an admin ('", s.reason, "'): never resumed by the bridge"));
  }

  if (cfg.slurm_conditions) PlanSlurmConditions(node, verdict, &plan);
  if (plan.explanation.empty()) plan.explanation.push_back("healthy: no signal");
  return plan;
}

NodePlan PlanNodeConditions(const inventory::ManagedNode& node, const HealthConfig& cfg,
                            Clock::TimePoint now) {
  NodePlan plan;
  if (!node.k8s || !cfg.slurm_conditions) return plan;
  if (!node.slurm) {
    PlanUnpaired(node, &plan);
    return plan;
  }
  PlanSlurmConditions(node, AssessHealth(*node.k8s, cfg, now), &plan);
  return plan;
}

}  // namespace skb::health

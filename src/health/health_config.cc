// SPDX-License-Identifier: Apache-2.0
#include "src/health/health_config.h"

#include "src/base/strings.h"

namespace skb::health {
namespace {

void ReadSeverity(config::JsonReader& r, std::string_view key, Severity* out) {
  std::string s(SeverityName(*out));
  r.Enum(key, &s, {"drain", "down"});
  *out = s == "down" ? Severity::kDownNow : Severity::kDrain;
}

}  // namespace

bool IsBridgeCondition(std::string_view type) {
  return type == kSlurmHealthyCondition || type == kSlurmDrainedCondition ||
         type == kGpuDevicesHealthyCondition || type == kMaintenanceConditionType;
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kDrain:
      return "drain";
    case Severity::kDownNow:
      return "down";
  }
  return "drain";
}

Status ReadHealthConfig(config::JsonReader r, HealthConfig* out) {
  std::vector<ConditionRule> conditions;
  if (r.ObjectList("conditions", [&](config::JsonReader& c) {
        ConditionRule rule;
        c.String("type", &rule.type);
        c.StringList("bad_status", &rule.bad_status);
        c.Duration("grace", &rule.grace);
        ReadSeverity(c, "severity", &rule.severity);
        if (rule.type.empty()) c.Fail("type", "must name a node condition type");
        if (IsBridgeCondition(rule.type)) {
          c.Fail("type", StrCat("'", rule.type, "' is written by the bridge itself"));
        }
        if (rule.bad_status.empty()) c.Fail("bad_status", "must list at least one status");
        for (const auto& st : rule.bad_status) {
          if (st != "True" && st != "False" && st != "Unknown") {
            c.Fail("bad_status", StrCat("'", st, "' is not True, False or Unknown"));
          }
        }
        conditions.push_back(std::move(rule));
      })) {
    out->conditions = std::move(conditions);
  }
  std::vector<TaintRule> taints;
  if (r.ObjectList("taints", [&](config::JsonReader& t) {
        TaintRule rule;
        std::string value;
        t.String("key", &rule.key);
        t.String("value", &value);
        if (!value.empty()) rule.value = value;
        t.StringList("effects", &rule.effects);
        ReadSeverity(t, "severity", &rule.severity);
        if (rule.key.empty()) t.Fail("key", "must name a taint key");
        for (const auto& e : rule.effects) {
          if (e != "NoSchedule" && e != "PreferNoSchedule" && e != "NoExecute") {
            t.Fail("effects", StrCat("'", e, "' is not NoSchedule, PreferNoSchedule or NoExecute"));
          }
        }
        taints.push_back(std::move(rule));
      })) {
    out->taints = std::move(taints);
  }
  std::string cordon = out->cordon ? std::string(SeverityName(*out->cordon)) : "ignore";
  r.Enum("cordon", &cordon, {"drain", "down", "ignore"});
  if (cordon == "ignore") {
    out->cordon.reset();
  } else {
    out->cordon = cordon == "down" ? Severity::kDownNow : Severity::kDrain;
  }
  config::JsonReader m = r.Object("maintenance");
  m.String("condition", &out->maintenance_condition);
  m.Duration("deadline", &out->maintenance_deadline);
  if (IsBridgeCondition(out->maintenance_condition)) {
    m.Fail("condition", "is written by the bridge itself");
  }
  m.Duration("drain_timeout", &out->drain_timeout);
  config::JsonReader rb = m.Object("reboot");
  std::string reboot_condition;
  rb.String("condition", &reboot_condition);
  if (!reboot_condition.empty()) {
    out->reboot_condition = reboot_condition;
  } else if (out->reboot_condition == out->maintenance_condition) {
    // A configuration from before the cycle that named its maintenance condition
    // RebootRequested keeps its meaning: the cycle is off until it names another.
    out->reboot_condition.clear();
  }
  std::string by = out->reboot_by == HealthConfig::RebootBy::kSite ? "site" : "slurm";
  rb.Enum("by", &by, {"slurm", "site"});
  out->reboot_by = by == "site" ? HealthConfig::RebootBy::kSite : HealthConfig::RebootBy::kSlurm;
  rb.Duration("timeout", &out->reboot_timeout);
  if (IsBridgeCondition(out->reboot_condition)) {
    rb.Fail("condition", "is written by the bridge itself");
  }
  if (!out->reboot_condition.empty() && out->reboot_condition == out->maintenance_condition) {
    rb.Fail("condition", "must differ from maintenance.condition");
  }
  if (out->reboot_timeout.count() <= 0) rb.Fail("timeout", "must be positive");
  m.Merge(rb.Finish());
  config::JsonReader ck = m.Object("check");
  ck.String("command", &out->check_command);
  ck.Duration("timeout", &out->check_timeout);
  if (out->check_timeout < std::chrono::minutes(1)) {
    ck.Fail("timeout", "must be at least 1m (Slurm's time limits count minutes)");
  }
  m.Merge(ck.Finish());
  if (out->drain_timeout <= out->maintenance_deadline) {
    m.Fail("drain_timeout", "must be longer than maintenance.deadline (jobs are requeued then)");
  }
  r.Merge(m.Finish());
  r.Bool("slurm_conditions", &out->slurm_conditions);
  return r.Finish();
}

}  // namespace skb::health

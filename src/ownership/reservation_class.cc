// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/reservation_class.h"

#include "src/base/strings.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/job_policy.h"

namespace skb::ownership {

std::string_view ReservationClassName(ReservationClass c) {
  switch (c) {
    case ReservationClass::kIdle:
      return "idle";
    case ReservationClass::kPreemptible:
      return "preemptible";
    case ReservationClass::kProtected:
      return "protected";
  }
  return "idle";
}

std::optional<ReservationClass> ClassByName(std::string_view name) {
  for (ReservationClass c :
       {ReservationClass::kIdle, ReservationClass::kPreemptible, ReservationClass::kProtected}) {
    if (ReservationClassName(c) == name) return c;
  }
  return std::nullopt;
}

const PriorityClassRef& ClassRef(ReservationClass c, const LendingConfig& cfg) {
  switch (c) {
    case ReservationClass::kIdle:
      return cfg.idle_class;
    case ReservationClass::kPreemptible:
      return cfg.preemptible_class;
    case ReservationClass::kProtected:
      return cfg.protected_class;
  }
  return cfg.idle_class;
}

std::optional<ReservationClass> ClassByPriorityClassName(std::string_view name,
                                                         const LendingConfig& cfg) {
  for (ReservationClass c :
       {ReservationClass::kIdle, ReservationClass::kPreemptible, ReservationClass::kProtected}) {
    if (ClassRef(c, cfg).name == name) return c;
  }
  return std::nullopt;
}

ReservationClass ClassFor(const std::vector<slurm::JobView>& jobs, const config::Config& cfg,
                          Clock::TimePoint now, std::string* why,
                          std::span<const slurm::JobView> het_jobs,
                          const GuaranteedJobs& guaranteed) {
  ReservationClass c = ReservationClass::kIdle;
  std::string reason = "no Slurm job on the node";
  for (const slurm::JobView& j : jobs) {
    if (!j.HoldsNodes()) continue;
    JobPolicy p =
        PolicyForWhole(WholeJob(j, het_jobs.empty() ? jobs : het_jobs), cfg, now, guaranteed);
    if (!p.preemptible) {
      if (why) *why = StrCat("job ", j.job_id, ": ", p.why);
      return ReservationClass::kProtected;
    }
    if (c == ReservationClass::kIdle) reason = StrCat("job ", j.job_id, ": ", p.why);
    c = ReservationClass::kPreemptible;
  }
  if (why) *why = reason;
  return c;
}

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "src/base/strings.h"
#include "src/health/node_health.h"
#include "src/ownership/internal/facts.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/reservation.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership::internal {

using inventory::GpuPod;
using inventory::ManagedNode;

Facts Observe(const ManagedNode& node, const config::Config& cfg, Clock::TimePoint now,
              Clock::Duration min_update_interval) {
  Facts f;
  f.node = &node;
  f.cfg = &cfg;
  f.lending = &cfg.lending;
  f.update_interval =
      std::max<Clock::Duration>(cfg.lending.reservation_update_interval, min_update_interval);
  f.now = now;
  f.k8s_node = &*node.k8s;
  f.slurm_node = &*node.slurm;
  f.reservation_namespace = ReservationNamespace(cfg);
  f.reservation_name = ReservationName(cfg.lending, f.k8s_node->name);
  for (const GpuPod& p : node.pods) {
    if (IsOurReservation(p, f.reservation_namespace)) {
      if (f.reservation == nullptr || (p.terminating && !f.reservation->terminating)) {
        if (f.reservation != nullptr) f.extra_ours.push_back(f.reservation);
        f.reservation = &p;
      } else {
        f.extra_ours.push_back(&p);
      }
      continue;
    }
    if (p.namespace_name == f.reservation_namespace && p.name == f.reservation_name) f.foreign = &p;
    if (!Terminal(p)) f.k8s_pods.push_back(&p);
  }
  for (const GpuPod& p : node.nominated_pods) {
    if (!Terminal(p) && p.node_name.empty()) f.nominated.push_back(&p);
  }
  std::stable_sort(f.nominated.begin(), f.nominated.end(),
                   [](const GpuPod* a, const GpuPod* b) { return a->priority > b->priority; });
  for (const slurm::JobView& j : node.jobs) {
    if (j.HoldsNodes()) f.jobs.push_back(&j);
  }

  f.lend_drain = f.slurm_node->DrainedBy() == slurm::DrainOrigin::kBridgeLend;
  f.admin_drain = f.slurm_node->DrainedBy() == slurm::DrainOrigin::kOther;
  const auto& ann = f.k8s_node->annotations;
  // Garbled lent-at: the lend goes on, and Lend() writes the record again from what is known.
  f.lent_at = TimeAnnotation(ann, kLentAtAnnotation, now, &f.lent_at_garbled);
  if (const std::string* v = Find(ann, kLentToAnnotation)) f.lent_to = *v;
  auto repaired = [&](const char* key) {
    StrAppend(&f.garbled, f.garbled.empty() ? "" : ", ", key, " ('", *Find(ann, key), "')");
    f.repair.set[key] = StrCat(ToUnix(now));
  };
  bool garbled = false;
  f.idle_since = TimeAnnotation(ann, kIdleSinceAnnotation, now, &garbled);
  if (garbled) repaired(kIdleSinceAnnotation);
  f.lend_refused_at = TimeAnnotation(ann, kLendRefusedAtAnnotation, now, &garbled);
  if (garbled) repaired(kLendRefusedAtAnnotation);
  if (const std::string* v = Find(ann, kSignalledAtAnnotation)) {
    f.signalled = ParseSignalled(*v);
    // A signal recorded in the future: the grace starts now (the job keeps all of it).
    bool future = false;
    for (auto& [id, t] : f.signalled) {
      if (t.at > now + kClockSkewAllowance) {
        t = {now, /*exact=*/true};
        future = true;
      }
    }
    if (future) {
      StrAppend(&f.garbled, f.garbled.empty() ? "" : ", ", kSignalledAtAnnotation, " ('", *v, "')");
      f.repair.set[kSignalledAtAnnotation] = FormatSignalled(f.signalled);
    }
  }
  if (const std::string* v = Find(ann, kLendBlockedAnnotation)) f.lend_blocked = *v;
  if (const std::string* v = Find(ann, kReturnBlockedAnnotation)) f.return_blocked = *v;
  f.swap_taint = HasTaint(*f.k8s_node, kSwapTaintKey);
  f.swap_guard = Find(f.k8s_node->labels, kSwapGuardLabel) != nullptr;
  f.busy_taint = HasTaint(*f.k8s_node, kBusyTaintKey);

  health::HealthVerdict verdict = health::AssessHealth(*f.k8s_node, cfg.health, now);
  if (!verdict.firing.empty()) {
    f.healthy = false;
    f.unhealthy_why = verdict.firing.front().description;
  } else if (f.slurm_node->fail || f.slurm_node->base_state == slurm::NodeBaseState::kDown) {
    f.healthy = false;
    f.unhealthy_why = StrCat("Slurm state ", f.slurm_node->StateString());
  }
  return f;
}

}  // namespace skb::ownership::internal

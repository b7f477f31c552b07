// SPDX-License-Identifier: Apache-2.0
#include "src/ownership/reservation.h"

#include <algorithm>
#include <chrono>

#include "src/base/strings.h"
#include "src/ownership/internal/records.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/reservation_class.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::ownership {
namespace {

// The reservation container's whole program (/bin/sh -c): it ignores the kubelet's stop
// signals and exits only once the bridge has marked the pod released, which the kubelet
// projects into kAnnotationsFile (the downward API writes each annotation as key="value" on
// a line of its own). Until then a deleted reservation runs on, holding its GPUs, up to the
// kubelet's kill at its termination grace (ReservationGrace). A real kubelet projects nothing
// more once the pod is terminating, so once told to stop (SIGTERM) the container also asks
// the bridge at `release_url`, naming itself by the downward-API environment (pod_actions.cc).
// No wget -T: Debian 12's busybox 1.35 crashes on it (the bridge's HTTP server closes a
// connection it does not finish within its own timeout).
std::string ContainerScript(const LendingConfig& l) {
  const std::string annotation =
      StrCat("grep -qs '^", kReleasedAnnotation, "=\"true\"' ", kAnnotationsFile);
  if (l.release_url.empty()) {
    return StrCat("trap '' TERM INT HUP; until ", annotation, "; do sleep 1; done");
  }
  return StrCat("stopping=0; trap 'stopping=1' TERM; trap '' INT HUP; until ", annotation,
                " || { [ \"$stopping\" = 1 ] && wget -q -O - \"", l.release_url, "?name=$",
                kPodNameEnv, "&uid=$", kPodUidEnv,
                "\" 2>/dev/null | grep -qx released; }; do sleep 1; done");
}

}  // namespace

std::string ReservationName(const LendingConfig& cfg, std::string_view k8s_node_name) {
  std::string name = cfg.name_pattern;
  const size_t at = name.find("{node}");
  if (at != std::string::npos) name.replace(at, 6, k8s_node_name);
  if (name.size() > 253) name.resize(253);
  return name;
}

std::string FormatJobList(const std::vector<slurm::JobView>& jobs) {
  std::vector<const slurm::JobView*> sorted;
  for (const slurm::JobView& j : jobs) {
    if (j.HoldsNodes()) sorted.push_back(&j);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const slurm::JobView* a, const slurm::JobView* b) { return a->job_id < b->job_id; });
  auto clean = [](std::string s) {
    for (char& c : s) {
      if (c == ' ' || c == ';' || static_cast<unsigned char>(c) < 0x20) c = '_';
    }
    return s.empty() ? std::string("-") : s;
  };
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < kMaxListedJobs; ++i) {
    const slurm::JobView& j = *sorted[i];
    StrAppend(&out, i ? ";" : "", j.job_id, " ",
              clean(j.user_name.empty() ? StrCat(j.user_id) : j.user_name), " ", clean(j.account),
              " ", j.gpus_per_node, " ", j.start_time);
  }
  if (sorted.size() > kMaxListedJobs)
    StrAppend(&out, ";+", sorted.size() - kMaxListedJobs, " more");
  return out;
}

std::vector<uint32_t> JobIdsOfList(std::string_view list, size_t* more) {
  std::vector<uint32_t> ids;
  if (more != nullptr) *more = 0;
  for (std::string_view entry : StrSplit(list, ';', /*skip_empty=*/true)) {
    const std::string_view first = entry.substr(0, entry.find(' '));
    if (first.starts_with('+')) {
      size_t n = 0;
      if (more != nullptr && ParseInteger(first.substr(1), &n)) *more = n;
      continue;
    }
    uint32_t id = 0;
    if (ParseInteger(first, &id) && id > 0) ids.push_back(id);
  }
  return ids;
}

plan::ReservationSpec BuildReservation(const inventory::ManagedNode& node, ReservationClass cls,
                                       const config::Config& cfg, Clock::TimePoint now) {
  const LendingConfig& l = cfg.lending;
  plan::ReservationSpec spec;
  const std::string k8s_name = node.k8s ? node.k8s->name : node.name;
  spec.namespace_name = internal::ReservationNamespace(cfg);
  spec.name = ReservationName(l, k8s_name);
  spec.node = k8s_name;
  if (node.k8s) spec.node_uid = node.k8s->uid;
  spec.gpu_resource = l.gpu_resource;
  if (node.k8s) {
    spec.gpus = node.k8s->gpu_allocatable > 0 ? node.k8s->gpu_allocatable : node.k8s->gpu_capacity;
    // A MIG slice (the device plugin's "mixed" strategy) is a GPU to a pod: held as well,
    // or a pod asking one would land beside Slurm's jobs.
    spec.slices = node.k8s->slices;
  }
  if (spec.gpus <= 0 && spec.slices.empty() && node.slurm) spec.gpus = node.slurm->TotalGpus();
  const PriorityClassRef& pc = ClassRef(cls, l);
  spec.priority_class_name = pc.name;
  spec.priority = pc.value;
  spec.image = l.image;
  spec.command = {"/bin/sh", "-c", ContainerScript(l)};
  spec.labels = {{kRoleLabel, kReservationRole},
                 {kClassLabel, std::string(ReservationClassName(cls))},
                 {kManagedByLabel, "slurm-k8s-bridge"}};
  spec.annotations = {{kJobsAnnotation, FormatJobList(node.jobs)},
                      {kJobsUpdatedAtAnnotation, StrCat(ToUnix(now))},
                      {kSlurmNodeAnnotation, node.name}};
  spec.finalizers = {kFinalizer};
  const auto grace = std::chrono::duration_cast<std::chrono::seconds>(ReservationGrace(l));
  spec.termination_grace_seconds = grace.count();
  spec.tolerations = {plan::TolerationSpec{}};
  return spec;
}

}  // namespace skb::ownership

// SPDX-License-Identifier: Apache-2.0
#include "src/plan/published_owner.h"

#include <algorithm>

#include "src/base/strings.h"
#include "src/health/health_config.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"

namespace skb::plan {
namespace {

constexpr std::string_view kPrefix = "slurm-k8s-bridge.io/";

template <typename Map>
bool AnyKeyUnderPrefix(const Map& m) {
  return std::any_of(m.begin(), m.end(), [](const auto& kv) {
    return std::string_view(kv.first).starts_with(kPrefix);
  });
}

const std::string* Annotation(const std::map<std::string, std::string>& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? nullptr : &it->second;
}

bool Tainted(const inventory::K8sNode& node, std::string_view key) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [&](const inventory::Taint& t) { return t.key == key; });
}

std::string PodName(const inventory::GpuPod& p) { return StrCat(p.namespace_name, "/", p.name); }

}  // namespace

bool PublishedByBridge(const inventory::K8sNode& node, bool has_reservation) {
  if (has_reservation) return true;
  if (node.FindCondition(health::kSlurmHealthyCondition) != nullptr ||
      node.FindCondition(health::kSlurmDrainedCondition) != nullptr) {
    return true;
  }
  if (AnyKeyUnderPrefix(node.labels) || AnyKeyUnderPrefix(node.annotations)) return true;
  return std::any_of(node.taints.begin(), node.taints.end(), [](const inventory::Taint& t) {
    return std::string_view(t.key).starts_with(kPrefix);
  });
}

std::optional<slurm::NodeView> PublishedSlurmView(const inventory::K8sNode& node) {
  const inventory::NodeCondition* healthy = node.FindCondition(health::kSlurmHealthyCondition);
  const inventory::NodeCondition* drained = node.FindCondition(health::kSlurmDrainedCondition);
  if (healthy == nullptr && drained == nullptr) return std::nullopt;
  if (healthy != nullptr && healthy->reason == "SlurmNodeNotFound") return std::nullopt;
  slurm::NodeView v;
  v.name = node.name;
  if (healthy != nullptr && healthy->status == "False") {
    if (healthy->reason == "SlurmNodeFailed") {
      v.fail = true;
    } else {
      v.base_state = slurm::NodeBaseState::kDown;
      v.not_responding = healthy->reason == "SlurmNodeNotResponding";
    }
  }
  if (drained != nullptr && drained->status == "True") {
    v.drain = true;
    v.reason = drained->message;
  }
  return v;
}

std::string PublishedSlurmState(const slurm::NodeView& view) {
  const std::string s = view.StateString();
  if (view.base_state != slurm::NodeBaseState::kUnknown) return s;
  const size_t base = slurm::NodeBaseStateName(slurm::NodeBaseState::kUnknown).size();
  return StrCat("?", std::string_view(s).substr(std::min(base, s.size())));
}

PublishedOwner OwnerFromKubernetes(const inventory::K8sNode& node,
                                   const std::vector<inventory::GpuPod>& reservations) {
  PublishedOwner out;
  auto explain = [&](std::string line) { out.explanation.push_back(std::move(line)); };
  // A terminating reservation first, as the ownership planner takes it (facts.h).
  const inventory::GpuPod* r = nullptr;
  for (const inventory::GpuPod& p : reservations) {
    if (r == nullptr || (p.terminating && !r->terminating)) r = &p;
  }
  const std::string* lent_at = Annotation(node.annotations, ownership::kLentAtAnnotation);
  const std::string* lent_to = Annotation(node.annotations, ownership::kLentToAnnotation);
  const std::optional<slurm::NodeView> slurm = PublishedSlurmView(node);
  const slurm::DrainOrigin drain = slurm ? slurm->DrainedBy() : slurm::DrainOrigin::kNone;
  const bool lend_drain = drain == slurm::DrainOrigin::kBridgeLend;
  const bool lent = lent_at != nullptr || lend_drain;
  const bool swap_taint = Tainted(node, ownership::kSwapTaintKey);

  if (r != nullptr) {
    explain(StrCat("reservation ", PodName(*r), ": ", r->phase.empty() ? "?" : r->phase,
                   r->terminating ? ", being deleted" : ""));
  } else {
    explain("no reservation pod of the bridge on the node");
  }
  if (lent_at != nullptr) {
    explain(StrCat(
        "annotation ", ownership::kLentAtAnnotation, "=", *lent_at,
        lent_to != nullptr ? StrCat(" (", ownership::kLentToAnnotation, "=", *lent_to, ")") : ""));
  }
  if (slurm && slurm->drain) explain(StrCat("Slurm drain as published: '", slurm->reason, "'"));
  if (swap_taint) explain(StrCat("taint ", ownership::kSwapTaintKey));

  const auto decide = [&](NodeOwner o, std::string why) {
    out.owner = o;
    explain(StrCat("owner: ", NodeOwnerName(o), " (", why, ")"));
  };
  if (r != nullptr && r->terminating) {
    const std::string* replacing = Annotation(r->annotations, ownership::kReplacingAnnotation);
    if (replacing != nullptr && *replacing == "true") {
      decide(NodeOwner::kSwapping, "the reservation is being replaced");
    } else {
      decide(NodeOwner::kLending, "the reservation is being deleted: a lend under way");
    }
    return out;
  }
  if (r != nullptr && lent) {
    decide(NodeOwner::kReturning, "lent, and a new reservation exists");
    return out;
  }
  if (r != nullptr && swap_taint) {
    decide(NodeOwner::kSwapping, "a new reservation under the swap taint");
    return out;
  }
  if (lent) {
    decide(NodeOwner::kKubernetes, "lent and no reservation");
    return out;
  }
  if (r == nullptr && Annotation(node.annotations, ownership::kGpuSharedSinceAnnotation)) {
    decide(NodeOwner::kGpuShared,
           StrCat("annotation ", ownership::kGpuSharedSinceAnnotation, ", no reservation"));
    return out;
  }
  if (!slurm) {
    decide(NodeOwner::kUnknown, "Slurm's view of the node is not published");
    return out;
  }
  if (drain == slurm::DrainOrigin::kBridge) {
    decide(NodeOwner::kUnhealthy, "drained by the bridge for health");
    return out;
  }
  // Without a reservation (lending off) the daemon's owner also reads Slurm's health.
  if (r == nullptr && (slurm->fail || slurm->base_state == slurm::NodeBaseState::kDown)) {
    decide(NodeOwner::kUnhealthy, "down or failing in Slurm");
    return out;
  }
  decide(NodeOwner::kSlurm, r != nullptr ? "its reservation holds the GPUs"
                                         : "not lent (no reservation: lending off?)");
  return out;
}

std::string LeaseStaleness(const std::string& holder, std::optional<Clock::TimePoint> renewed,
                           Clock::Duration duration, Clock::TimePoint now) {
  if (holder.empty()) return "no replica holds it";
  if (!renewed) return StrCat(holder, " holds it but no renewal is recorded");
  if (now <= *renewed + duration) return "";
  return StrCat(holder, " has not renewed it for ", ownership::FormatSeconds(now - *renewed),
                " (its duration ", ownership::FormatSeconds(duration), ")");
}

std::string PublishedK8sHealth(const inventory::K8sNode& node) {
  const inventory::NodeCondition* ready = node.FindCondition("Ready");
  std::string h = ready == nullptr ? "Ready?" : (ready->status == "True" ? "Ready" : "NotReady");
  if (node.unschedulable) StrAppend(&h, ", cordoned");
  const inventory::NodeCondition* d = node.FindCondition(health::kDrainRequestedCondition);
  if (d != nullptr && d->status == "True") StrAppend(&h, ", ", health::kDrainRequestedCondition);
  return h;
}

}  // namespace skb::plan

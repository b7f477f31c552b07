// SPDX-License-Identifier: Apache-2.0
#include "src/decommission/decommission.h"

#include <algorithm>

#include "src/base/overloaded.h"
#include "src/base/strings.h"
#include "src/ownership/preemption_record.h"

namespace skb::decommission {
namespace {

std::string JobList(const std::vector<uint32_t>& jobs) {
  std::string out;
  for (size_t i = 0; i < jobs.size() && i < 3; ++i) StrAppend(&out, i ? ", " : "", jobs[i]);
  if (jobs.size() > 3) StrAppend(&out, " and ", jobs.size() - 3, " more");
  return out;
}

std::string PodList(const std::vector<NamespacedName>& pods) {
  std::string out;
  for (size_t i = 0; i < pods.size() && i < 3; ++i) StrAppend(&out, i ? ", " : "", pods[i].Key());
  if (pods.size() > 3) StrAppend(&out, " and ", pods.size() - 3, " more");
  return out;
}

std::string SlurmWork(const NodeFacts& n) {
  return StrCat(n.slurm_jobs.size() == 1 ? "Slurm job " : "Slurm jobs ", JobList(n.slurm_jobs),
                n.slurm_jobs.size() == 1 ? " runs" : " run", " there");
}

std::string K8sWork(const NodeFacts& n) {
  return StrCat(n.gpu_pods.size() == 1 ? "pod " : "pods ", PodList(n.gpu_pods),
                n.gpu_pods.size() == 1 ? " uses" : " use", " its GPUs");
}

// The reason a drain the bridge made for health or maintenance keeps, without the
// bridge's prefix: "k8s-bridge: GPUHealthy=False: XID 79" -> "decommissioned: GPUHealthy=...".
std::string KeptReason(std::string_view bridge_reason) {
  std::string_view rest = bridge_reason.substr(slurm::kBridgeReasonPrefix.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return StrCat(kDecommissionReasonPrefix, rest.empty() ? "drained by the bridge" : rest);
}

}  // namespace

std::string_view HolderName(Holder h) {
  switch (h) {
    case Holder::kSlurm:
      return "Slurm's";
    case Holder::kKubernetes:
      return "Kubernetes'";
    case Holder::kBoth:
      return "shared";
    case Holder::kNeither:
      return "free";
  }
  return "free";
}

bool Touched(const NodeFacts& n) {
  return !n.bridge_annotations.empty() || !n.bridge_labels.empty() || !n.bridge_taints.empty() ||
         !n.bridge_conditions.empty() || !n.reservations.empty() || !n.hold_rules.empty() ||
         !n.drain_rules.empty() || !n.placeholders.empty() ||
         n.drain == slurm::DrainOrigin::kBridge || n.drain == slurm::DrainOrigin::kBridgeLend;
}

NodeOutcome HolderOf(const NodeFacts& n) {
  NodeOutcome o;
  o.node = n.k8s_name.empty() ? n.slurm_name : n.k8s_name;
  o.k8s_name = n.k8s_name;
  o.slurm_name = n.slurm_name;
  const bool slurm_work = !n.slurm_jobs.empty();
  const bool k8s_work = !n.gpu_pods.empty();
  if (slurm_work && k8s_work) {
    o.holder = Holder::kBoth;
    o.why = StrCat(SlurmWork(n), " and ", K8sWork(n));
  } else if (slurm_work) {
    o.holder = Holder::kSlurm;
    o.why = SlurmWork(n);
  } else if (k8s_work) {
    o.holder = Holder::kKubernetes;
    o.why = K8sWork(n);
  } else if (n.live_reservation || !n.hold_rules.empty()) {
    o.holder = Holder::kSlurm;
    o.why =
        n.live_reservation ? "its reservation held it for Slurm" : "its GPUs were held for Slurm";
  } else if (n.drain == slurm::DrainOrigin::kBridgeLend) {
    o.holder = Holder::kKubernetes;
    o.why = "lent to Kubernetes";
  } else {
    o.holder = Holder::kNeither;
    o.why = "no work and nothing held";
  }
  return o;
}

std::string WithoutPreemptionRecord(std::string_view admin_comment) {
  std::string out;
  for (std::string_view token : StrSplit(admin_comment, ' ', /*skip_empty=*/true)) {
    if (token.starts_with(ownership::kPreemptedToken)) continue;
    StrAppend(&out, out.empty() ? "" : " ", token);
  }
  return out;
}

Plan PlanDecommission(const Facts& facts) {
  Plan plan;
  std::vector<Step> protect, release, clean;
  for (const NodeFacts& n : facts.nodes) {
    if (!Touched(n)) continue;
    NodeOutcome o = HolderOf(n);
    const bool keep_off_k8s = o.holder == Holder::kSlurm || o.holder == Holder::kBoth;
    const bool keep_off_slurm = o.holder == Holder::kKubernetes || o.holder == Holder::kBoth;
    if (keep_off_k8s && !n.k8s_name.empty() && !n.cordoned) {
      protect.push_back(Cordon{n.k8s_name});
    }
    if (!n.slurm_name.empty() && n.drain != slurm::DrainOrigin::kOther) {
      if (keep_off_slurm) {
        protect.push_back(
            DrainAs{n.slurm_name, StrCat(kDecommissionReasonPrefix,
                                         o.holder == Holder::kBoth ? "shared by both schedulers: "
                                                                   : "held by Kubernetes: ",
                                         o.why)});
      } else if (n.drain == slurm::DrainOrigin::kBridge) {
        protect.push_back(DrainAs{n.slurm_name, KeptReason(n.drain_reason)});
      } else if (n.drain == slurm::DrainOrigin::kBridgeLend) {
        clean.push_back(Resume{n.slurm_name});
      }
    }
    for (const NamespacedName& pod : n.reservations) release.push_back(ReleaseReservation{pod});
    for (uint32_t id : n.placeholders) release.push_back(CancelPlaceholder{id});
    for (const std::string& rule : n.hold_rules) release.push_back(DeleteRule{rule});
    for (const auto& [rule, what] : n.drain_rules) {
      release.push_back(DeleteRule{rule});
      plan.warnings.push_back(StrCat(o.node, " ", what,
                                     ": drained with bridgectl, now in service on both sides; "
                                     "keep it out by the site's own means if it is still bad"));
    }
    if (!n.k8s_name.empty() && (!n.bridge_annotations.empty() || !n.bridge_labels.empty() ||
                                !n.bridge_taints.empty() || !n.bridge_conditions.empty())) {
      clean.push_back(CleanNode{n.k8s_name, n.bridge_annotations, n.bridge_labels, n.bridge_taints,
                                n.bridge_conditions});
    }
    plan.nodes.push_back(std::move(o));
  }
  for (uint32_t id : facts.unplaced_placeholders) release.push_back(CancelPlaceholder{id});
  for (const NamespacedName& pod : facts.unbound_reservations) {
    release.push_back(ReleaseReservation{pod});
  }
  for (const std::string& rule : facts.other_rules) release.push_back(DeleteRule{rule});
  for (const NamespacedName& q : facts.quotas) release.push_back(DeleteQuota{q});
  for (const std::string& pc : facts.priority_classes) release.push_back(DeletePriorityClass{pc});
  for (const JobRecord& j : facts.job_records) {
    std::string comment = WithoutPreemptionRecord(j.admin_comment);
    if (comment != j.admin_comment) clean.push_back(SetAdminComment{j.job_id, comment});
  }
  for (auto* part : {&protect, &release, &clean}) {
    for (Step& s : *part) plan.steps.push_back(std::move(s));
  }
  return plan;
}

std::string DescribeStep(const Step& s) {
  return std::visit(
      Overloaded{
          [](const Cordon& c) { return StrCat("cordon ", c.node, " in Kubernetes"); },
          [](const DrainAs& d) { return StrCat("drain ", d.node, " in Slurm: '", d.reason, "'"); },
          [](const Resume& r) {
            return StrCat("resume ", r.node, " in Slurm (the bridge's lend)");
          },
          [](const ReleaseReservation& r) { return StrCat("release reservation ", r.pod.Key()); },
          [](const CancelPlaceholder& c) { return StrCat("cancel placeholder job ", c.job_id); },
          [](const DeleteRule& r) { return StrCat("delete DeviceTaintRule ", r.name); },
          [](const DeleteQuota& q) { return StrCat("delete ResourceQuota ", q.quota.Key()); },
          [](const DeletePriorityClass& p) { return StrCat("delete PriorityClass ", p.name); },
          [](const CleanNode& c) {
            std::string what;
            auto add = [&](const char* kind, const std::vector<std::string>& keys) {
              if (keys.empty()) return;
              StrAppend(&what, what.empty() ? "" : "; ", kind, " ", StrJoin(keys, ", "));
            };
            add("annotations", c.annotations);
            add("labels", c.labels);
            add("taints", c.taints);
            add("conditions", c.conditions);
            return StrCat("remove from node ", c.node, ": ", what);
          },
          [](const SetAdminComment& c) {
            return StrCat("remove the preemption record from job ", c.job_id);
          },
      },
      s);
}

std::vector<std::string> Describe(const Plan& plan) {
  std::vector<std::string> out;
  for (const NodeOutcome& o : plan.nodes) {
    out.push_back(StrCat(o.node, ": ", HolderName(o.holder), " (", o.why, ")"));
  }
  for (const Step& s : plan.steps) out.push_back(DescribeStep(s));
  for (const std::string& w : plan.warnings) out.push_back(StrCat("warning: ", w));
  return out;
}

}  // namespace skb::decommission

// SPDX-License-Identifier: Apache-2.0
// The ActionExecutor's pod actions: the bridge's reservation pod (create, delete, annotate,
// release, restore its finalizer) and evictions. The contract of each is in
// src/ownership/ownership.h. Every one re-checks at the source and is idempotent; an Event
// is recorded only when something changed.
#include <algorithm>
#include <optional>

#include "bridge/logging.h"
#include "bridge/reconcile/action_executor.h"
#include "k8s/api_error.h"
#include "k8s/field_reader.h"
#include "src/base/strings.h"
#include "src/ownership/hetjob.h"
#include "src/ownership/job_policy.h"
#include "src/ownership/preemption_record.h"
#include "src/ownership/schema.h"

namespace skb::bridge {

using plan::Action;
using slurm::WriteOutcome;

namespace {

bool HasRole(const nlohmann::json& pod) {
  const auto* labels = pod.contains("metadata") ? &pod["metadata"] : nullptr;
  if (labels == nullptr || !labels->contains("labels") || !(*labels)["labels"].is_object()) {
    return false;
  }
  const auto& l = (*labels)["labels"];
  auto it = l.find(ownership::kRoleLabel);
  return it != l.end() && it->is_string() && it->get<std::string>() == ownership::kReservationRole;
}

// The index of the bridge's finalizer in a pod's metadata.finalizers, if it is there.
std::optional<size_t> OurFinalizerIndex(const nlohmann::json& meta) {
  if (!meta.contains("finalizers") || !meta["finalizers"].is_array()) return std::nullopt;
  const auto& f = meta["finalizers"];
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i].is_string() && f[i].get<std::string>() == ownership::kFinalizer) return i;
  }
  return std::nullopt;
}

nlohmann::json PodObject(const plan::ReservationSpec& r) {
  nlohmann::json tolerations = nlohmann::json::array();
  for (const auto& t : r.tolerations) {
    nlohmann::json j = {{"operator", t.op}};
    if (!t.key.empty()) j["key"] = t.key;
    if (!t.value.empty()) j["value"] = t.value;
    if (!t.effect.empty()) j["effect"] = t.effect;
    tolerations.push_back(std::move(j));
  }
  nlohmann::json resources = {
      {"requests", {{r.gpu_resource, std::to_string(r.gpus)}, {"cpu", "1m"}, {"memory", "8Mi"}}},
      {"limits", {{r.gpu_resource, std::to_string(r.gpus)}, {"cpu", "10m"}, {"memory", "16Mi"}}}};
  for (const auto& [slice, count] : r.slices) {
    resources["requests"][slice] = std::to_string(count);
    resources["limits"][slice] = std::to_string(count);
  }
  nlohmann::json container = {{"name", "reservation"},
                              {"image", r.image},
                              {"resources", std::move(resources)},
                              {"env",
                               {{{"name", ownership::kPodNameEnv},
                                 {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                                {{"name", ownership::kPodUidEnv},
                                 {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}}}},
                              {"volumeMounts",
                               {{{"name", "reservation"},
                                 {"mountPath", ownership::kAnnotationsMountPath},
                                 {"readOnly", true}}}},
                              {"securityContext",
                               {{"runAsNonRoot", true},
                                {"runAsUser", 65534},
                                {"readOnlyRootFilesystem", true},
                                {"allowPrivilegeEscalation", false},
                                {"capabilities", {{"drop", {"ALL"}}}}}}};
  if (!r.command.empty()) container["command"] = r.command;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", r.name},
            {"namespace", r.namespace_name},
            {"labels", r.labels},
            {"annotations", r.annotations},
            {"finalizers", r.finalizers}}},
          {"spec",
           {{"nodeName", r.node},
            {"priorityClassName", r.priority_class_name},
            {"restartPolicy", "Always"},
            {"terminationGracePeriodSeconds", r.termination_grace_seconds},
            {"automountServiceAccountToken", false},
            // Pod Security "restricted" (the chart's reservation namespace enforces
            // "baseline" and warns and audits "restricted"): non-root, the runtime's seccomp
            // profile, no privilege escalation, no caps.
            {"securityContext",
             {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
            {"tolerations", std::move(tolerations)},
            {"containers", {std::move(container)}},
            {"volumes",
             {{{"name", "reservation"},
               {"downwardAPI",
                {{"items",
                  {{{"path", "annotations"},
                    {"fieldRef", {{"fieldPath", "metadata.annotations"}}}}}}}}}}}}}};
}

// `ref` re-read at the source: nullopt when it is gone; Aborted when another pod has taken
// its name (the uid differs).
StatusOr<std::optional<nlohmann::json>> LoadPod(k8s::KubeClient* kube, const plan::PodRef& ref) {
  auto pod = kube->Get(k8s::Resource::Pods(), ref.namespace_name, ref.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) return std::optional<nlohmann::json>();
    return pod.status();
  }
  if (!ref.uid.empty() && k8s::MetadataString(*pod, "uid") != ref.uid) {
    return AbortedError(StrCat("pod ", ref.name, " was re-created (uid changed)"));
  }
  return std::optional<nlohmann::json>(*std::move(pod));
}

}  // namespace

void ActionExecutor::RecordPod(const Action& a, const std::string& ns, const std::string& name,
                               const std::string& uid) {
  events_->Record(k8s::PodRef(ns, name, uid), ToK8sEventType(a.event_type), a.event_reason,
                  a.event_message);
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::CreateReservationPod& op) {
  const plan::ReservationSpec& r = op.reservation;
  // The node is the reservation's controller (owner reference): `kubectl drain` evicts a
  // pod with a controller without --force, and the garbage collector removes the pod
  // with its node.
  // The uid comes from the planner's cache; a node it does not know is read. A cached uid
  // of a node deleted meanwhile makes an orphan the garbage collector deletes, which the
  // planner then sees as a reservation of a deleted node (released, ReleaseCheck::kNodeGone).
  std::string node_uid = r.node_uid;
  if (node_uid.empty()) {
    auto node = kube_->Get(k8s::Resource::Nodes(), "", r.node);
    if (!node.ok()) {
      if (node.status().code() == StatusCode::kNotFound) {
        return FailedPreconditionError(StrCat("cannot create reservation ", r.namespace_name, "/",
                                              r.name, ": node ", r.node, " is gone"));
      }
      return node.status();
    }
    node_uid = k8s::MetadataString(*node, "uid");
  }
  nlohmann::json pod = PodObject(r);
  pod["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                         {"kind", "Node"},
                                         {"name", r.node},
                                         {"uid", node_uid},
                                         {"controller", true},
                                         {"blockOwnerDeletion", false}}};
  auto created = kube_->Create(k8s::Resource::Pods(), r.namespace_name, pod);
  if (created.ok()) {
    Record(a);
    RecordPod(a, r.namespace_name, r.name, k8s::MetadataString(*created, "uid"));
    return Effect::kChanged;
  }
  const Status& s = created.status();
  if (s.code() == StatusCode::kAlreadyExists) {
    auto existing = kube_->Get(k8s::Resource::Pods(), r.namespace_name, r.name);
    if (!existing.ok()) {
      // Gone between the create and the read: the old pod just left. Create again.
      if (existing.status().code() == StatusCode::kNotFound) {
        return AbortedError(StrCat("previous reservation ", r.name, " left meanwhile: retry"));
      }
      return existing.status();
    }
    if (HasRole(*existing)) {
      // The previous reservation (a swap, a return after a lend) may still be on its way
      // out: terminating, or terminal and not yet removed. Our live pod is what a retry
      // after a crash finds; a departing one means "not yet": try again shortly (the pod
      // cache no longer shows it, so no event would wake the planner).
      std::string phase =
          existing->contains("status") ? k8s::StringAt((*existing)["status"], "phase") : "";
      if (!k8s::MetadataString(*existing, "deletionTimestamp").empty() || phase == "Succeeded" ||
          phase == "Failed") {
        return AbortedError(StrCat("previous reservation ", r.namespace_name, "/", r.name,
                                   " is still terminating"));
      }
      return Effect::kUnchanged;
    }
    return FailedPreconditionError(StrCat("pod ", r.namespace_name, "/", r.name,
                                          " exists and is not the bridge's (no ",
                                          ownership::kRoleLabel, " label): left alone"));
  }
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kPermissionDenied) {
    return FailedPreconditionError(
        StrCat("cannot create reservation ", r.namespace_name, "/", r.name, ": ", s.message()));
  }
  return s;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::DeleteReservationPod& op) {
  ASSIGN_OR_RETURN(std::optional<nlohmann::json> pod, LoadPod(kube_, op.pod));
  if (!pod) return Effect::kUnchanged;
  if (!HasRole(*pod)) {
    return FailedPreconditionError(StrCat("pod ", op.pod.namespace_name, "/", op.pod.name,
                                          " is not the bridge's: never deleted"));
  }
  if (!k8s::MetadataString(*pod, "deletionTimestamp").empty()) return Effect::kUnchanged;
  k8s::DeleteOptions opts;
  opts.precondition_uid = k8s::MetadataString(*pod, "uid");
  auto r = kube_->Delete(k8s::Resource::Pods(), op.pod.namespace_name, op.pod.name, opts);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return r.status();
  }
  Record(a);
  RecordPod(a, op.pod.namespace_name, op.pod.name, op.pod.uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::PatchPodAnnotations& op) {
  nlohmann::json ann = nlohmann::json::object();
  for (const auto& [k, v] : op.annotations.set) ann[k] = v;
  for (const auto& k : op.annotations.remove) ann[k] = nullptr;
  nlohmann::json patch = {{"metadata", {{"annotations", ann}}}};
  if (!op.pod.uid.empty()) patch["metadata"]["uid"] = op.pod.uid;
  auto r = kube_->Patch(k8s::Resource::Pods(), op.pod.namespace_name, op.pod.name,
                        k8s::PatchType::kJsonMerge, patch);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) {
      return AbortedError(StrCat("pod ", op.pod.name, " is gone"));
    }
    // A uid in a merge patch that does not match is refused as a conflict or invalid.
    if (r.status().code() == StatusCode::kInvalidArgument) {
      return AbortedError(StrCat("pod ", op.pod.name, " was re-created: ", r.status().message()));
    }
    return r.status();
  }
  // Job-list refreshes are routine: an Event only when the planner asked for one.
  if (!a.quiet && !a.event_reason.empty()) {
    Record(a);
  }
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::RestoreFinalizer& op) {
  ASSIGN_OR_RETURN(std::optional<nlohmann::json> pod, LoadPod(kube_, op.pod));
  if (!pod) return AbortedError(StrCat("pod ", op.pod.name, " is gone"));
  const std::string uid = k8s::MetadataString(*pod, "uid");
  const nlohmann::json& meta = (*pod)["metadata"];
  if (meta.contains("deletionTimestamp")) {
    // Kubernetes refuses new finalizers on a pod being deleted; the lend handles it.
    return AbortedError(StrCat("pod ", op.pod.name, " is being deleted"));
  }
  if (OurFinalizerIndex(meta)) return Effect::kUnchanged;
  const bool has_list = meta.contains("finalizers") && meta["finalizers"].is_array();
  nlohmann::json ops =
      nlohmann::json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", uid}}});
  if (has_list) {
    ops.push_back(
        {{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", ownership::kFinalizer}});
  } else {
    ops.push_back({{"op", "add"},
                   {"path", "/metadata/finalizers"},
                   {"value", nlohmann::json::array({ownership::kFinalizer})}});
  }
  auto r = kube_->Patch(k8s::Resource::Pods(), op.pod.namespace_name, op.pod.name,
                        k8s::PatchType::kJsonPatch, ops);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) {
      return AbortedError(StrCat("pod ", op.pod.name, " is gone"));
    }
    if (r.status().code() == StatusCode::kInvalidArgument) {  // a "test" failed
      return AbortedError(StrCat("pod ", op.pod.name, " changed: ", r.status().message()));
    }
    return r.status();
  }
  Record(a);
  RecordPod(a, op.pod.namespace_name, op.pod.name, op.pod.uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::ReleaseReservationPod& op) {
  // Verify at the source what makes the release safe.
  if (op.check == plan::ReleaseCheck::kNoSlurmJobs) {
    // The drain first, then the jobs: a node still drained takes no new job, so when both
    // hold no job can start before the release. Without the drain check, an admin's resume
    // after the planner's snapshot would let Slurm start a job beside the pod it is lent to.
    ASSIGN_OR_RETURN(slurm::NodeView n, slurm_->LoadNode(a.node));
    if (!n.drain) {
      return AbortedError(StrCat("Slurm node ", a.node, " is no longer drained (resumed by hand?",
                                 " state ", n.StateString(),
                                 "): drain it again before the release"));
    }
    auto jobs = slurm_->LoadJobs(0);
    if (!jobs.ok()) return jobs.status();
    for (const auto& j : jobs->items) {
      if (!j.HoldsNodes()) continue;
      if (std::find(j.nodes.begin(), j.nodes.end(), a.node) != j.nodes.end()) {
        return AbortedError(StrCat("Slurm job ", j.job_id, " still holds node ", a.node,
                                   ": reservation not released"));
      }
    }
  } else if (op.check == plan::ReleaseCheck::kNodeGone) {
    auto node = kube_->Get(k8s::Resource::Nodes(), "", a.K8sNode());
    if (node.ok()) {
      return FailedPreconditionError(
          StrCat("node ", a.node,
                 " exists but the bridge does not manage it (label removed?): "
                 "its reservation keeps its finalizer; label the node again, or remove the "
                 "finalizer by hand once Slurm has left it"));
    }
    if (node.status().code() != StatusCode::kNotFound) return node.status();
  } else {
    auto node = kube_->Get(k8s::Resource::Nodes(), "", a.K8sNode());
    if (!node.ok()) return node.status();
    bool tainted = false;
    if (node->contains("spec") && (*node)["spec"].contains("taints")) {
      for (const auto& t : (*node)["spec"]["taints"]) {
        if (k8s::StringAt(t, "key") == ownership::kSwapTaintKey &&
            k8s::StringAt(t, "effect") == "NoSchedule") {
          tainted = true;
        }
      }
    }
    if (!tainted) {
      return AbortedError(StrCat("node ", a.node, " lacks the ", ownership::kSwapTaintKey,
                                 " taint: reservation not released"));
    }
    // The admission guard goes on before the old reservation's GPUs stop counting: the
    // taint alone does not stop a pod bound by spec.nodeName or tolerating every taint.
    if (k8s::StringAt((*node)["metadata"]["labels"], ownership::kSwapGuardLabel).empty()) {
      return AbortedError(StrCat("node ", a.node, " lacks the ", ownership::kSwapGuardLabel,
                                 " label: reservation not released"));
    }
  }
  ASSIGN_OR_RETURN(std::optional<nlohmann::json> pod, LoadPod(kube_, op.pod));
  if (!pod) return Effect::kUnchanged;
  const std::string uid = k8s::MetadataString(*pod, "uid");
  const nlohmann::json& meta = (*pod)["metadata"];
  nlohmann::json ops =
      nlohmann::json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", uid}}});
  bool changed = false;
  const bool has_annotations = meta.contains("annotations") && meta["annotations"].is_object();
  if (!has_annotations) {
    ops.push_back({{"op", "add"},
                   {"path", "/metadata/annotations"},
                   {"value", {{ownership::kReleasedAnnotation, "true"}}}});
    changed = true;
  } else if (meta["annotations"].value(ownership::kReleasedAnnotation, "") != "true") {
    ops.push_back({{"op", "add"},
                   {"path", StrCat("/metadata/annotations/",
                                   k8s::JsonPointerSegment(ownership::kReleasedAnnotation))},
                   {"value", "true"}});
    changed = true;
  }
  if (std::optional<size_t> i = OurFinalizerIndex(meta)) {
    std::string path = StrCat("/metadata/finalizers/", *i);
    ops.push_back({{"op", "test"}, {"path", path}, {"value", ownership::kFinalizer}});
    ops.push_back({{"op", "remove"}, {"path", path}});
    changed = true;
  }
  if (changed) {
    auto r = kube_->Patch(k8s::Resource::Pods(), op.pod.namespace_name, op.pod.name,
                          k8s::PatchType::kJsonPatch, ops);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
      if (r.status().code() == StatusCode::kInvalidArgument) {  // a "test" failed
        return AbortedError(StrCat("pod ", op.pod.name, " changed: ", r.status().message()));
      }
      return r.status();
    }
  }
  // Shorten the pending deletion: the GPUs count in Kubernetes until the pod is gone.
  k8s::DeleteOptions opts;
  opts.precondition_uid = uid;
  opts.grace_period_seconds = 1;
  auto d = kube_->Delete(k8s::Resource::Pods(), op.pod.namespace_name, op.pod.name, opts);
  if (!d.ok() && d.status().code() != StatusCode::kNotFound) return d.status();
  // The release is the annotation and the finalizer; the shortened deletion is repeated
  // by a re-plan that has not yet seen the pod go, and changes nothing that counts.
  if (!changed) return Effect::kUnchanged;
  Record(a);
  RecordPod(a, op.pod.namespace_name, op.pod.name, uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::Run(const Action& a, const plan::EvictPod& op) {
  // At the source: still this pod (uid), still on this node, not the bridge's own.
  ASSIGN_OR_RETURN(std::optional<nlohmann::json> pod, LoadPod(kube_, op.pod));
  if (!pod) return Effect::kUnchanged;
  if (k8s::StringAt((*pod)["spec"], "nodeName") != a.K8sNode()) {
    return AbortedError(StrCat("pod ", op.pod.name, " is no longer on node ", a.K8sNode()));
  }
  if (HasRole(*pod)) {
    return FailedPreconditionError(
        StrCat("pod ", op.pod.namespace_name, "/", op.pod.name, " is the bridge's: never evicted"));
  }
  if (!k8s::MetadataString(*pod, "deletionTimestamp").empty()) return Effect::kUnchanged;
  k8s::DeleteOptions opts;
  opts.precondition_uid = k8s::MetadataString(*pod, "uid");
  auto r = k8s::EvictPod(*kube_, op.pod.namespace_name, op.pod.name, opts);
  if (!r.ok()) {
    const Status& s = r.status();
    if (s.code() == StatusCode::kNotFound) return Effect::kUnchanged;
    if (k8s::IsTooManyRequests(s)) {
      // The Eviction API's answer while a PodDisruptionBudget allows no disruption: said on
      // the node and the pod, and tried again with back-off (the bridge does not watch
      // budgets; the recorder's rate limit keeps the retries from spamming Events).
      const std::string why = StrCat("evicting pod ", op.pod.namespace_name, "/", op.pod.name,
                                     " is refused for now (its PodDisruptionBudget allows no "
                                     "disruption): ",
                                     s.message());
      Record(a, k8s::EventType::kWarning, "ReclaimBlocked", StrCat(a.event_message, " -- ", why));
      return UnavailableError(why);
    }
    return s;
  }
  Record(a);
  RecordPod(a, op.pod.namespace_name, op.pod.name, op.pod.uid);
  return Effect::kChanged;
}

}  // namespace skb::bridge

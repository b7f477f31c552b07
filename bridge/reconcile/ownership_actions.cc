// The ActionExecutor's node-ownership actions (reservation pods, job signals and
// preemption, node taints and annotations): the contract of each is in
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

std::string MetaString(const nlohmann::json& obj, const char* key) {
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const auto& m = obj["metadata"];
  auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : "";
}

// JSON Pointer escaping of one path segment (RFC 6901): "~" -> "~0", "/" -> "~1".
std::string PointerSegment(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
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
  nlohmann::json container = {{"name", "reservation"},
                              {"image", r.image},
                              {"resources", std::move(resources)},
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
            // Pod Security "restricted" (the chart's reservation namespace enforces it):
            // non-root, the runtime's seccomp profile, no privilege escalation, no caps.
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

// Job `listed` of an action, re-read at the source; nullopt when Slurm no longer knows it,
// or when the whole job it belongs to (ownership::WholeJobId: a heterogeneous job's leader)
// is among `done` already: Slurm acts on a heterogeneous job once, by its leader's id.
StatusOr<std::optional<skb::slurm::JobView>> LoadListed(slurm::SlurmClient* slurm, uint32_t listed,
                                                        const std::vector<uint32_t>& done) {
  auto job = slurm->LoadJob(listed);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) return std::optional<skb::slurm::JobView>();
    return job.status();
  }
  if (std::find(done.begin(), done.end(), ownership::WholeJobId(*job)) != done.end()) {
    return std::optional<skb::slurm::JobView>();
  }
  return std::optional<skb::slurm::JobView>(*std::move(job));
}

}  // namespace

void ActionExecutor::RecordPod(const Action& a, const std::string& ns, const std::string& name,
                               const std::string& uid) {
  events_->Record(k8s::PodRef(ns, name, uid), ToK8sEventType(a.event_type), a.event_reason,
                  a.event_message);
}

StatusOr<Effect> ActionExecutor::CreateReservation(const Action& a) {
  const plan::ReservationSpec& r = a.reservation;
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
    node_uid = MetaString(*node, "uid");
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
    RecordPod(a, r.namespace_name, r.name, MetaString(*created, "uid"));
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
      if (!MetaString(*existing, "deletionTimestamp").empty() || phase == "Succeeded" ||
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

StatusOr<Effect> ActionExecutor::DeleteReservation(const Action& a) {
  auto pod = kube_->Get(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return pod.status();
  }
  if (!a.pod.uid.empty() && MetaString(*pod, "uid") != a.pod.uid) {
    return AbortedError(StrCat("pod ", a.pod.name, " was re-created (uid changed)"));
  }
  if (!HasRole(*pod)) {
    return FailedPreconditionError(StrCat("pod ", a.pod.namespace_name, "/", a.pod.name,
                                          " is not the bridge's: never deleted"));
  }
  if (!MetaString(*pod, "deletionTimestamp").empty()) return Effect::kUnchanged;
  k8s::DeleteOptions opts;
  opts.precondition_uid = MetaString(*pod, "uid");
  auto r = kube_->Delete(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name, opts);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return r.status();
  }
  Record(a);
  RecordPod(a, a.pod.namespace_name, a.pod.name, a.pod.uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::PatchPodAnnotations(const Action& a) {
  nlohmann::json ann = nlohmann::json::object();
  for (const auto& [k, v] : a.annotations.set) ann[k] = v;
  for (const auto& k : a.annotations.remove) ann[k] = nullptr;
  nlohmann::json patch = {{"metadata", {{"annotations", ann}}}};
  if (!a.pod.uid.empty()) patch["metadata"]["uid"] = a.pod.uid;
  auto r = kube_->Patch(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name,
                        k8s::PatchType::kJsonMerge, patch);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) {
      return AbortedError(StrCat("pod ", a.pod.name, " is gone"));
    }
    // A uid in a merge patch that does not match is refused as a conflict or invalid.
    if (r.status().code() == StatusCode::kInvalidArgument) {
      return AbortedError(StrCat("pod ", a.pod.name, " was re-created: ", r.status().message()));
    }
    return r.status();
  }
  // Job-list refreshes are routine: an Event only when the planner asked for one.
  if (!a.quiet && !a.event_reason.empty()) {
    Record(a);
  }
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::RestoreFinalizer(const Action& a) {
  auto pod = kube_->Get(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) {
      return AbortedError(StrCat("pod ", a.pod.name, " is gone"));
    }
    return pod.status();
  }
  const std::string uid = MetaString(*pod, "uid");
  if (!a.pod.uid.empty() && uid != a.pod.uid) {
    return AbortedError(StrCat("pod ", a.pod.name, " was re-created (uid changed)"));
  }
  const nlohmann::json& meta = (*pod)["metadata"];
  if (meta.contains("deletionTimestamp")) {
    // Kubernetes refuses new finalizers on a pod being deleted; the lend handles it.
    return AbortedError(StrCat("pod ", a.pod.name, " is being deleted"));
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
  auto r = kube_->Patch(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name,
                        k8s::PatchType::kJsonPatch, ops);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) {
      return AbortedError(StrCat("pod ", a.pod.name, " is gone"));
    }
    if (r.status().code() == StatusCode::kInvalidArgument) {  // a "test" failed
      return AbortedError(StrCat("pod ", a.pod.name, " changed: ", r.status().message()));
    }
    return r.status();
  }
  Record(a);
  RecordPod(a, a.pod.namespace_name, a.pod.name, a.pod.uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::ReleaseReservation(const Action& a) {
  // Verify at the source what makes the release safe.
  if (a.release_check == plan::ReleaseCheck::kNoSlurmJobs) {
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
      if (!ownership::HoldsNode(j)) continue;
      if (std::find(j.nodes.begin(), j.nodes.end(), a.node) != j.nodes.end()) {
        return AbortedError(StrCat("Slurm job ", j.job_id, " still holds node ", a.node,
                                   ": reservation not released"));
      }
    }
  } else if (a.release_check == plan::ReleaseCheck::kNodeGone) {
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
  auto pod = kube_->Get(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return pod.status();
  }
  const std::string uid = MetaString(*pod, "uid");
  if (!a.pod.uid.empty() && uid != a.pod.uid) {
    return AbortedError(StrCat("pod ", a.pod.name, " was re-created (uid changed)"));
  }
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
    ops.push_back(
        {{"op", "add"},
         {"path", StrCat("/metadata/annotations/", PointerSegment(ownership::kReleasedAnnotation))},
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
    auto r = kube_->Patch(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name,
                          k8s::PatchType::kJsonPatch, ops);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
      if (r.status().code() == StatusCode::kInvalidArgument) {  // a "test" failed
        return AbortedError(StrCat("pod ", a.pod.name, " changed: ", r.status().message()));
      }
      return r.status();
    }
  }
  // Shorten the pending deletion: the GPUs count in Kubernetes until the pod is gone.
  k8s::DeleteOptions opts;
  opts.precondition_uid = uid;
  opts.grace_period_seconds = 1;
  auto d = kube_->Delete(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name, opts);
  if (!d.ok() && d.status().code() != StatusCode::kNotFound) return d.status();
  // The release is the annotation and the finalizer; the shortened deletion is repeated
  // by a re-plan that has not yet seen the pod go, and changes nothing that counts.
  if (!changed) return Effect::kUnchanged;
  Record(a);
  RecordPod(a, a.pod.namespace_name, a.pod.name, uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::SignalJobs(const Action& a) {
  slurm::SignalScope scope = slurm::SignalScope::kFullJob;
  if (a.signal_scope == plan::SignalScope::kBatchOnly) scope = slurm::SignalScope::kBatchStep;
  if (a.signal_scope == plan::SignalScope::kSteps) scope = slurm::SignalScope::kSteps;
  std::string sent;
  const auto now = clock_->Now();
  std::vector<uint32_t> targets;
  for (uint32_t listed : a.job_ids) {
    // A component of a heterogeneous job stands for the whole job: Slurm signals every
    // component through the leader's id (a component's own id reaches none of them).
    ASSIGN_OR_RETURN(std::optional<skb::slurm::JobView> job, LoadListed(slurm_, listed, targets));
    if (!job) continue;
    const uint32_t id = ownership::WholeJobId(*job);
    targets.push_back(id);
    {
      // A signal is not idempotent, and the planner may ask again before the informer
      // shows the signalled-at annotation it recorded: one signal per job per window.
      MutexLock lock(&signalled_mu_);
      auto it = signalled_.find({id, a.signal});
      if (it != signalled_.end() && now - it->second < kSignalDedupWindow) continue;
      std::erase_if(signalled_,
                    [&](const auto& e) { return now - e.second >= kSignalDedupWindow; });
    }
    Status s = slurm_->SignalJob(id, a.signal, scope);
    if (s.ok()) {
      MutexLock lock(&signalled_mu_);
      signalled_[{id, a.signal}] = now;
    }
    if (s.ok()) {
      StrAppend(&sent, sent.empty() ? "" : ",", id);
      continue;
    }
    // No longer running (finished, requeued, gone): nothing to signal.
    if (s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kNotFound) continue;
    return s;
  }
  if (sent.empty()) return Effect::kUnchanged;
  Record(a, StrCat(a.event_message, " (jobs ", sent, ")"));
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::PreemptJobs(const Action& a) {
  std::string done;
  Status first_error;
  std::vector<uint32_t> targets;
  for (uint32_t listed : a.job_ids) {
    // `listed` runs on a.node; Slurm requeues and cancels a heterogeneous job only whole,
    // by its leader's id (a component's own id is refused), wherever the leader runs.
    ASSIGN_OR_RETURN(std::optional<skb::slurm::JobView> job, LoadListed(slurm_, listed, targets));
    if (!job) continue;
    const uint32_t id = ownership::WholeJobId(*job);
    bool here = std::find(job->nodes.begin(), job->nodes.end(), a.node) != job->nodes.end();
    bool active = job->state == skb::slurm::JobState::kRunning ||
                  job->state == skb::slurm::JobState::kSuspended;
    if (a.ended_after_signal) {
      // Only the run that ended after our signal: not one requeued meanwhile (pending, or
      // started again), not one its user cancelled. Requeue first (a finished job's
      // record is what Slurm may refuse to update), then say why in its comment.
      bool finished = !active && job->state != skb::slurm::JobState::kPending &&
                      job->state != skb::slurm::JobState::kCancelled && !job->completing;
      if (!here || !finished || job->requeue_pending || job->start_time > a.at_unix) continue;
      targets.push_back(id);
      auto o = slurm_->RequeueJob(id, a.preempt_mode == plan::JobPreemptMode::kRequeueHold);
      if (!o.ok() && o.status().code() == StatusCode::kUnavailable) return o.status();
      if (!o.ok()) {
        // Best effort: the job has left the node already; nothing waits for this.
        Record(a, k8s::EventType::kWarning, "EndedJobRequeueFailed",
               StrCat("Slurm job ", id, " ended ", skb::slurm::JobStateName(job->state),
                      " after the checkpoint signal and Slurm refused to requeue it: ",
                      o.status().message()));
        continue;
      }
      if (auto c = slurm_->SetAdminComment(
              listed,
              ownership::RecordPreemption(job->admin_comment, a.at_unix, a.preemptor, lending_));
          !c.ok()) {
        Logger("reconcile")
            ->warn("admin_comment_failed job={} error=\"{}\"", id, c.status().message());
      }
    } else {
      if (!here || !active || job->requeue_pending) continue;
      targets.push_back(id);
      // The record goes on the component here (its own comment: a write to the leader's id
      // would overwrite every component's); the whole job's policy reads every component.
      std::string comment =
          ownership::RecordPreemption(job->admin_comment, a.at_unix, a.preemptor, lending_);
      if (auto c = slurm_->SetAdminComment(listed, comment); !c.ok()) {
        if (first_error.ok()) first_error = c.status();
        continue;
      }
      StatusOr<WriteOutcome> o =
          a.preempt_mode == plan::JobPreemptMode::kCancel
              ? slurm_->CancelJob(id)
              : slurm_->RequeueJob(id, a.preempt_mode == plan::JobPreemptMode::kRequeueHold);
      if (!o.ok()) {
        if (first_error.ok()) first_error = o.status();
        continue;
      }
    }
    if (a.preempt_mode == plan::JobPreemptMode::kRequeue) {
      // Without this the requeued job waits ~2 min (Slurm's requeue begin time) even when
      // other nodes are free. Best effort: the job is safe either way.
      if (auto e = slurm_->MakeEligibleNow(id); !e.ok()) {
        Logger("reconcile")
            ->warn("make_eligible_failed job={} error=\"{}\"", id, e.status().message());
      }
    }
    StrAppend(&done, done.empty() ? "" : ",", id);
  }
  if (!done.empty()) {
    Record(a, StrCat(a.event_message, " (jobs ", done, ")"));
  }
  if (!first_error.ok()) {
    // Slurm refused (e.g. a job that cannot be requeued): the planner asks again; the
    // busy taint keeps Kubernetes off the node meanwhile.
    if (first_error.code() == StatusCode::kUnavailable) return first_error;
    return FailedPreconditionError(
        StrCat("preempting jobs on ", a.node, ": ", first_error.message()));
  }
  return done.empty() ? Effect::kUnchanged : Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::EvictPod(const Action& a) {
  // At the source: still this pod (uid), still on this node, not the bridge's own.
  auto pod = kube_->Get(k8s::Resource::Pods(), a.pod.namespace_name, a.pod.name);
  if (!pod.ok()) {
    if (pod.status().code() == StatusCode::kNotFound) return Effect::kUnchanged;
    return pod.status();
  }
  if (!a.pod.uid.empty() && MetaString(*pod, "uid") != a.pod.uid) {
    return AbortedError(StrCat("pod ", a.pod.name, " was re-created (uid changed)"));
  }
  if (k8s::StringAt((*pod)["spec"], "nodeName") != a.K8sNode()) {
    return AbortedError(StrCat("pod ", a.pod.name, " is no longer on node ", a.K8sNode()));
  }
  if (HasRole(*pod)) {
    return FailedPreconditionError(
        StrCat("pod ", a.pod.namespace_name, "/", a.pod.name, " is the bridge's: never evicted"));
  }
  if (!MetaString(*pod, "deletionTimestamp").empty()) return Effect::kUnchanged;
  k8s::DeleteOptions opts;
  opts.precondition_uid = MetaString(*pod, "uid");
  auto r = k8s::EvictPod(*kube_, a.pod.namespace_name, a.pod.name, opts);
  if (!r.ok()) {
    const Status& s = r.status();
    if (s.code() == StatusCode::kNotFound) return Effect::kUnchanged;
    if (k8s::IsTooManyRequests(s)) {
      // The Eviction API's answer while a PodDisruptionBudget allows no disruption: said on
      // the node and the pod, and tried again with back-off (the bridge does not watch
      // budgets; the recorder's rate limit keeps the retries from spamming Events).
      const std::string why = StrCat("evicting pod ", a.pod.namespace_name, "/", a.pod.name,
                                     " is refused for now (its PodDisruptionBudget allows no "
                                     "disruption): ",
                                     s.message());
      Record(a, k8s::EventType::kWarning, "ReclaimBlocked", StrCat(a.event_message, " -- ", why));
      return UnavailableError(why);
    }
    return s;
  }
  Record(a);
  RecordPod(a, a.pod.namespace_name, a.pod.name, a.pod.uid);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::ChangeTaint(const Action& a, bool add) {
  const std::string node_name = a.K8sNode();
  ASSIGN_OR_RETURN(nlohmann::json node, kube_->Get(k8s::Resource::Nodes(), "", node_name));
  nlohmann::json taints = nlohmann::json::array();
  bool present = false;
  if (node.contains("spec") && node["spec"].contains("taints") &&
      node["spec"]["taints"].is_array()) {
    for (const auto& t : node["spec"]["taints"]) {
      bool same =
          k8s::StringAt(t, "key") == a.taint.key && k8s::StringAt(t, "effect") == a.taint.effect;
      if (same) {
        present = true;
        if (!add) continue;  // removing it
      }
      taints.push_back(t);
    }
  }
  if (add == present) return Effect::kUnchanged;  // already so
  if (add) {
    nlohmann::json t = {{"key", a.taint.key}, {"effect", a.taint.effect}};
    if (!a.taint.value.empty()) t["value"] = a.taint.value;
    taints.push_back(std::move(t));
  }
  nlohmann::json ops = nlohmann::json::array(
      {{{"op", "test"},
        {"path", "/metadata/resourceVersion"},
        {"value", MetaString(node, "resourceVersion")}},
       {{"op", "add"}, {"path", "/spec/taints"}, {"value", std::move(taints)}}});
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", node_name, k8s::PatchType::kJsonPatch, ops);
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kInvalidArgument) {
      return AbortedError(StrCat("node ", node_name, " changed meanwhile"));
    }
    return r.status();
  }
  Record(a);
  return Effect::kChanged;
}

StatusOr<Effect> ActionExecutor::PatchNodeAnnotations(const Action& a) {
  const std::string node_name = a.K8sNode();
  const auto merge = [](const plan::AnnotationPatch& p) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [k, v] : p.set) m[k] = v;
    for (const auto& k : p.remove) m[k] = nullptr;
    return m;
  };
  // A plan made from a cache that has not seen this patch yet repeats it: a node that
  // already reads as asked is left alone, with no second Event and kUnchanged.
  if (auto current = kube_->Get(k8s::Resource::Nodes(), "", node_name); current.ok()) {
    const nlohmann::json& m = (*current)["metadata"];
    const auto holds = [&](std::string_view field, const plan::AnnotationPatch& p) {
      const nlohmann::json empty = nlohmann::json::object();
      const nlohmann::json& have = m.contains(field) ? m[std::string(field)] : empty;
      for (const auto& [k, v] : p.set) {
        if (!have.contains(k) || have[k] != v) return false;
      }
      for (const auto& k : p.remove) {
        if (have.contains(k)) return false;
      }
      return true;
    };
    if (holds("annotations", a.annotations) && holds("labels", a.labels)) {
      return Effect::kUnchanged;
    }
  }
  nlohmann::json meta = nlohmann::json::object();
  if (!a.annotations.empty()) meta["annotations"] = merge(a.annotations);
  if (!a.labels.empty()) meta["labels"] = merge(a.labels);
  auto r = kube_->Patch(k8s::Resource::Nodes(), "", node_name, k8s::PatchType::kJsonMerge,
                        {{"metadata", std::move(meta)}});
  if (!r.ok()) return r.status();
  if (!a.event_reason.empty()) Record(a);
  return Effect::kChanged;
}

}  // namespace skb::bridge

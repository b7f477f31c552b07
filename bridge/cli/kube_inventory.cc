// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/kube_inventory.h"

#include <algorithm>
#include <map>
#include <set>

#include "bridge/reconcile/k8s_convert.h"
#include "k8s/json_selection.h"
#include "k8s/lease_info.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "k8s/time_format.h"
#include "src/base/strings.h"
#include "src/devices/k8s_devices.h"
#include "src/health/health_config.h"
#include "src/ownership/reservation.h"
#include "src/ownership/schema.h"
#include "src/ownership/time_codec.h"
#include "src/plan/published_owner.h"

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;
using nlohmann::json;

// The component the bridge's Event recorder writes (k8s/api_event_recorder.h).
constexpr char kBridgeComponent[] = "slurm-k8s-bridge";
// The live pods, as the daemon's pod informer lists them (bridge/controller.cc).
constexpr char kLivePods[] = "status.phase!=Succeeded,status.phase!=Failed";
// describe shows this many of the node's latest Events.
constexpr size_t kMaxEvents = 20;

std::string Key(const inventory::GpuPod& p) { return StrCat(p.namespace_name, "/", p.name); }

const std::string* Find(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

StatusOr<std::vector<inventory::GpuPod>> ListPods(k8s::KubeClient& kube, k8s::ListOptions options) {
  options.limit = 500;
  // Only what the daemon's pod informer decodes (a cluster's every pod is listed).
  options.item_selection = k8s::JsonSelection::PodWatchEvent().Find("object");
  ASSIGN_OR_RETURN(k8s::ListResult r, k8s::ListAll(kube, k8s::Resource::Pods(), "", options));
  std::vector<inventory::GpuPod> out;
  for (const json& item : r.items) {
    auto info = k8s::ParsePod(item);
    if (!info.ok()) continue;
    if (auto p = ToGpuPod(*info)) out.push_back(std::move(*p));
  }
  std::sort(out.begin(), out.end(),
            [](const inventory::GpuPod& a, const inventory::GpuPod& b) { return Key(a) < Key(b); });
  return out;
}

std::string EventTime(const json& e) {
  for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
    auto it = e.find(key);
    if (it != e.end() && it->is_string() && !it->get<std::string>().empty()) return *it;
  }
  return "";
}

std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

bool FromBridge(const json& e) {
  if (Str(e, "reportingComponent") == kBridgeComponent) return true;
  auto src = e.find("source");
  return src != e.end() && src->is_object() && Str(*src, "component") == kBridgeComponent;
}

// One node of the answer, and what was read to say so.
struct Summary {
  v1::NodeSummary node;
  std::vector<std::string> explanation;
};

// The reservations and the other GPU pods bound to each node, by its name.
struct OnNode {
  std::vector<inventory::GpuPod> reservations;
  std::vector<const inventory::GpuPod*> pods;
};
std::map<std::string, OnNode> ByNode(const KubeView& view) {
  std::map<std::string, OnNode> out;
  for (const inventory::GpuPod& r : view.reservations) out[r.node_name].reservations.push_back(r);
  for (const inventory::GpuPod& p : view.gpu_pods) out[p.node_name].pods.push_back(&p);
  return out;
}

Summary Summarize(const inventory::K8sNode& k, const OnNode& on) {
  Summary out;
  v1::NodeSummary& s = out.node;
  const std::vector<inventory::GpuPod>& reservations = on.reservations;
  std::string slurm_name = k.name;
  const inventory::GpuPod* listing = nullptr;  // the reservation whose job list is shown
  for (const inventory::GpuPod& r : reservations) {
    if (const std::string* n = Find(r.annotations, ownership::kSlurmNodeAnnotation);
        n != nullptr && !n->empty()) {
      slurm_name = *n;
    }
    if (!r.terminating || listing == nullptr) listing = &r;
  }
  s.set_name(slurm_name);
  s.set_k8s_name(k.name);
  s.set_in_kubernetes(true);
  if (auto model = k.Label(devices::kGpuProductLabel)) s.set_gpu_model(*model);
  s.set_gpus(k.GpuUnits());
  s.set_k8s_health(plan::PublishedK8sHealth(k));
  const bool not_found = [&] {
    const inventory::NodeCondition* c = k.FindCondition(health::kSlurmHealthyCondition);
    return c != nullptr && c->reason == "SlurmNodeNotFound";
  }();
  if (auto slurm = plan::PublishedSlurmView(k)) {
    s.set_in_slurm(true);
    s.set_slurm_state(plan::PublishedSlurmState(*slurm));
    s.set_slurm_reason(slurm->reason);
  } else if (not_found) {
    s.set_slurm_state("not in Slurm");
  } else {
    s.set_slurm_state("?");
    s.add_unknown("in_slurm");
    s.add_unknown("slurm_state");
  }
  const plan::PublishedOwner owner = plan::OwnerFromKubernetes(k, reservations);
  s.set_owner(std::string(plan::NodeOwnerName(owner.owner)));
  out.explanation = owner.explanation;
  if (listing != nullptr && Find(listing->annotations, ownership::kJobsAnnotation) != nullptr) {
    size_t more = 0;
    for (uint32_t id :
         ownership::JobIdsOfList(*Find(listing->annotations, ownership::kJobsAnnotation), &more)) {
      s.add_jobs(id);
    }
    std::string as_of = "its creation";
    if (const std::string* at = Find(listing->annotations, ownership::kJobsUpdatedAtAnnotation)) {
      if (auto t = ownership::ParseUnix(*at)) as_of = k8s::FormatTime(ownership::FromUnix(*t));
    }
    out.explanation.push_back(StrCat("jobs as reservation ", Key(*listing), " lists them, as of ",
                                     as_of, more > 0 ? StrCat(" (+", more, " more)") : ""));
  } else {
    s.add_unknown("jobs");
    out.explanation.push_back("jobs: not known from Kubernetes without a reservation pod");
  }
  for (const inventory::GpuPod& r : reservations) s.add_pods(Key(r));
  for (const inventory::GpuPod* p : on.pods) s.add_pods(Key(*p));
  s.add_unknown("features");
  s.add_unknown("gpu_mode");
  return out;
}

const inventory::K8sNode* FindNode(const KubeView& view, const std::string& name) {
  for (const inventory::K8sNode& k : view.nodes) {
    if (k.name == name) return &k;
  }
  for (const inventory::GpuPod& r : view.reservations) {
    const std::string* n = Find(r.annotations, ownership::kSlurmNodeAnnotation);
    if (n == nullptr || *n != name) continue;
    for (const inventory::K8sNode& k : view.nodes) {
      if (k.name == r.node_name) return &k;
    }
  }
  return nullptr;
}

// The Lease's holder and why the published state may be stale.
void ReadLease(k8s::KubeClient& kube, const std::string& ns, Clock::TimePoint now, KubeView* view) {
  const std::string where = StrCat(ns, "/", kLeaseName);
  auto obj = kube.Get(k8s::Resource::Leases(), ns, kLeaseName);
  if (!obj.ok()) {
    view->stale_why =
        StrCat("the bridge's Lease ", where, " was not read (", obj.status().message(),
               "): whether the bridge runs and keeps this up to date is not known");
    return;
  }
  auto lease = k8s::ParseLease(*obj);
  if (!lease.ok()) {
    view->stale_why = StrCat("the bridge's Lease ", where, " is unreadable");
    return;
  }
  view->leader = lease->holder_identity;
  std::optional<Clock::TimePoint> renewed;
  if (auto t = k8s::ParseTime(lease->renew_time); t.ok()) renewed = *t;
  const std::string why =
      plan::LeaseStaleness(lease->holder_identity, renewed,
                           std::chrono::seconds(lease->lease_duration_seconds.value_or(0)), now);
  if (!why.empty()) {
    view->stale_why =
        StrCat("the bridge's Lease ", where, ": ", why, ": what it published may be stale");
  }
}

}  // namespace

StatusOr<KubeView> ReadKubeView(k8s::KubeClient& kube, Clock::TimePoint now,
                                const std::string& events_of_node) {
  KubeView view;
  k8s::ListOptions nodes_options;
  nodes_options.limit = 500;
  nodes_options.item_selection = k8s::JsonSelection::NodeWatchEvent().Find("object");
  ASSIGN_OR_RETURN(k8s::ListResult nodes,
                   k8s::ListAll(kube, k8s::Resource::Nodes(), "", nodes_options));
  std::vector<inventory::K8sNode> all;
  for (const json& item : nodes.items) {
    auto info = k8s::ParseNode(item);
    if (info.ok()) all.push_back(ToK8sNode(*info));
  }
  k8s::ListOptions reservations_options;
  reservations_options.label_selector =
      StrCat(ownership::kRoleLabel, "=", ownership::kReservationRole);
  ASSIGN_OR_RETURN(view.reservations, ListPods(kube, reservations_options));
  k8s::ListOptions live;
  live.field_selector = kLivePods;
  ASSIGN_OR_RETURN(std::vector<inventory::GpuPod> pods, ListPods(kube, live));
  std::set<std::string> reservation_keys, reserved_nodes;
  for (const inventory::GpuPod& r : view.reservations) {
    reservation_keys.insert(Key(r));
    reserved_nodes.insert(r.node_name);
  }
  for (inventory::GpuPod& p : pods) {
    if (!reservation_keys.contains(Key(p))) view.gpu_pods.push_back(std::move(p));
  }
  for (inventory::K8sNode& k : all) {
    if (plan::PublishedByBridge(k, reserved_nodes.contains(k.name))) {
      view.nodes.push_back(std::move(k));
    }
  }
  std::sort(
      view.nodes.begin(), view.nodes.end(),
      [](const inventory::K8sNode& a, const inventory::K8sNode& b) { return a.name < b.name; });
  ReadLease(kube, view.reservations.empty() ? kLeaseNamespace : view.reservations[0].namespace_name,
            now, &view);
  if (!events_of_node.empty()) {
    k8s::ListOptions options;
    options.field_selector =
        StrCat("involvedObject.kind=Node,involvedObject.name=", events_of_node);
    options.limit = 500;
    ASSIGN_OR_RETURN(k8s::ListResult events,
                     k8s::ListAll(kube, k8s::Resource::Events(), "", options));
    for (json& e : events.items) {
      if (e.is_object() && FromBridge(e)) view.events.push_back(std::move(e));
    }
  }
  return view;
}

v1::ListNodesResponse NodesFromKubernetes(const KubeView& view) {
  v1::ListNodesResponse out;
  std::map<std::string, OnNode> on = ByNode(view);
  for (const inventory::K8sNode& k : view.nodes) *out.add_nodes() = Summarize(k, on[k.name]).node;
  out.set_ready(view.stale_why.empty());
  out.set_ready_reason(view.stale_why);
  out.set_leader(view.leader);
  out.set_source("kubernetes");
  return out;
}

StatusOr<v1::DescribeNodeResponse> DescribeFromKubernetes(const KubeView& view,
                                                          const std::string& name) {
  const inventory::K8sNode* k = FindNode(view, name);
  if (k == nullptr) {
    return NotFoundError(StrCat("no node '", name,
                                "' the bridge published anything on in Kubernetes (neither a "
                                "node of that name nor a reservation naming it)"));
  }
  Summary s = Summarize(*k, ByNode(view)[k->name]);
  v1::DescribeNodeResponse out;
  *out.mutable_node() = std::move(s.node);
  if (!view.stale_why.empty()) out.add_explanation(view.stale_why);
  for (std::string& line : s.explanation) out.add_explanation(std::move(line));
  for (const inventory::NodeCondition& c : k->conditions) {
    v1::ConditionView* v = out.add_conditions();
    v->set_type(c.type);
    v->set_status(c.status);
    v->set_reason(c.reason);
    v->set_message(c.message);
    v->set_last_transition_time(k8s::FormatTime(c.last_transition));
  }
  for (const inventory::Taint& t : k->taints) out.add_taints(inventory::TaintString(t));
  out.set_unschedulable(k->unschedulable);
  std::vector<const json*> events;
  for (const json& e : view.events) {
    const auto obj = e.find("involvedObject");
    if (obj != e.end() && obj->is_object() && Str(*obj, "name") == k->name) events.push_back(&e);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const json* a, const json* b) { return EventTime(*a) < EventTime(*b); });
  const size_t from = events.size() > kMaxEvents ? events.size() - kMaxEvents : 0;
  for (size_t i = from; i < events.size(); ++i) {
    const json& e = *events[i];
    out.add_events(
        StrCat(EventTime(e), " ", Str(e, "type"), " ", Str(e, "reason"), ": ", Str(e, "message")));
  }
  out.set_source("kubernetes");
  return out;
}

}  // namespace skb::bridge::cli

// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/format.h"

#include <algorithm>

#include "k8s/time_format.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

namespace v1 = ::skb::api::v1;

std::string Dash(const std::string& s) { return s.empty() ? "-" : s; }

// The answer's source cannot know this field of the node (NodeSummary.unknown).
bool Unknown(const v1::NodeSummary& n, std::string_view field) {
  return std::find(n.unknown().begin(), n.unknown().end(), field) != n.unknown().end();
}

// A field's cell: "?" when unknown, else `known`.
std::string Cell(const v1::NodeSummary& n, std::string_view field, const std::string& known) {
  return Unknown(n, field) ? "?" : known;
}

constexpr char kFromKubernetes[] = "kubernetes";

std::string Gpus(const v1::NodeSummary& n) {
  if (n.gpus() == 0) return "-";
  std::string model = n.gpu_model();
  // "NVIDIA-H100-80GB-HBM3" -> "H100-80GB-HBM3": the vendor is implied.
  if (model.rfind("NVIDIA-", 0) == 0) model = model.substr(7);
  return model.empty() ? StrCat(n.gpus()) : StrCat(model, "x", n.gpus());
}

template <typename List>
std::string Join(const List& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) StrAppend(&out, out.empty() ? "" : sep, i);
  return out;
}

std::string Count(int n, const std::string& joined) {
  if (n == 0) return "0";
  return joined.size() <= 30 ? joined : StrCat(n);
}

nlohmann::json GpuOwnersJson(const v1::NodeSummary& n) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : n.gpu_owners()) {
    out.push_back({{"index", g.index()},
                   {"device", g.device()},
                   {"owner", g.owner()},
                   {"jobId", g.job_id()},
                   {"pods", std::vector<std::string>(g.pods().begin(), g.pods().end())},
                   {"sinceUnix", g.since_unix()},
                   {"health", g.health().empty() ? "healthy" : g.health()}});
  }
  return out;
}

nlohmann::json SummaryJson(const v1::NodeSummary& n) {
  return {{"name", n.name()},
          {"k8sName", n.k8s_name()},
          {"inKubernetes", n.in_kubernetes()},
          {"inSlurm", n.in_slurm()},
          {"gpuModel", n.gpu_model()},
          {"gpus", n.gpus()},
          {"owner", n.owner()},
          {"k8sHealth", n.k8s_health()},
          {"slurmState", n.slurm_state()},
          {"slurmReason", n.slurm_reason()},
          {"jobs", std::vector<uint32_t>(n.jobs().begin(), n.jobs().end())},
          {"pods", std::vector<std::string>(n.pods().begin(), n.pods().end())},
          {"features", std::vector<std::string>(n.features().begin(), n.features().end())},
          {"gpuMode", n.gpu_mode()},
          {"gpuModeReason", n.gpu_mode_reason()},
          {"gpuOwners", GpuOwnersJson(n)},
          {"unknown", std::vector<std::string>(n.unknown().begin(), n.unknown().end())}};
}

// A node shared GPU by GPU: its split; any other: its whole-node owner.
std::string Owner(const v1::NodeSummary& n) {
  return n.gpu_mode() == "gpu" ? GpuSplit(n) : n.owner();
}

std::string GpuJob(const v1::GpuOwner& g) {
  if (g.job_id() == 0) return "-";
  return g.owner() == "slurm" ? StrCat(g.job_id()) : StrCat(g.job_id(), " (placeholder)");
}

std::string Preempted(const v1::JobSummary& j) {
  if (j.preemptions() == 0) return "0";
  return StrCat(j.preemptions(), " (", j.preemptions_in_window(), " recent)");
}

std::string UnixTime(int64_t t) {
  if (t <= 0) return "-";
  return k8s::FormatTime(Clock::TimePoint{} + std::chrono::seconds(t));
}

}  // namespace

std::string GpuSplit(const v1::NodeSummary& n) {
  int slurm = 0, idle = 0, k8s = 0, held = 0, moving = 0, unguarded = 0, out = 0;
  for (const auto& g : n.gpu_owners()) {
    const std::string& o = g.owner();
    if (o == "slurm" || o == "idle") ++slurm;
    if (o == "idle") ++idle;
    if (o == "k8s" || o == "held-for-k8s") ++k8s;
    if (o == "held-for-k8s") ++held;
    if (o == "to-k8s" || o == "to-slurm") ++moving;
    if (o == "unguarded") ++unguarded;
    if (o == "out") ++out;
  }
  std::string split = StrCat("slurm ", slurm);
  if (idle > 0) StrAppend(&split, " (", idle, " idle)");
  StrAppend(&split, " / k8s ", k8s);
  if (held > 0) StrAppend(&split, " (", held, " held)");
  if (moving > 0) StrAppend(&split, " / moving ", moving);
  if (unguarded > 0) StrAppend(&split, " / unguarded ", unguarded);
  if (out > 0) StrAppend(&split, " / out (unhealthy) ", out);
  return split;
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Render(const Listing& listing, bool headers) {
  if (headers) return Table(listing.rows) + listing.notes;
  if (listing.rows.size() <= 1) return "";
  return Table({listing.rows.begin() + 1, listing.rows.end()});
}

std::string Names(const Listing& listing) {
  std::string out;
  for (const std::string& n : listing.names) StrAppend(&out, n, "\n");
  return out;
}

bool KeepOnlyNode(v1::ListNodesResponse* resp, const std::string& name) {
  auto* nodes = resp->mutable_nodes();
  for (int i = 0; i < nodes->size(); ++i) {
    const v1::NodeSummary& n = nodes->Get(i);
    if (n.name() != name && n.k8s_name() != name) continue;
    v1::NodeSummary keep = n;
    nodes->Clear();
    *nodes->Add() = std::move(keep);
    return true;
  }
  nodes->Clear();
  return false;
}

Listing NodesListing(const v1::ListNodesResponse& resp, bool wide) {
  Listing out;
  std::vector<std::vector<std::string>>& rows = out.rows;
  std::vector<std::string> head = {"NODE",  "GPUS",   "OWNER", "K8S",
                                   "SLURM", "REASON", "JOBS",  "PODS"};
  if (wide) {
    head.push_back("MODE");
    head.push_back("FEATURES");
    head.push_back("K8S-NAME");
  }
  rows.push_back(head);
  for (const auto& n : resp.nodes()) {
    std::vector<std::string> row = {n.name(),
                                    Gpus(n),
                                    Owner(n),
                                    Dash(n.k8s_health()),
                                    Dash(n.slurm_state()),
                                    Dash(n.slurm_reason()),
                                    Cell(n, "jobs", Count(n.jobs_size(), Join(n.jobs(), ","))),
                                    Count(n.pods_size(), Join(n.pods(), ","))};
    if (wide) {
      row.push_back(Cell(n, "gpu_mode", Dash(n.gpu_mode())));
      row.push_back(Cell(n, "features", Dash(Join(n.features(), ","))));
      row.push_back(Dash(n.k8s_name()));
    }
    rows.push_back(std::move(row));
    out.names.push_back("node/" + n.name());
  }
  if (!resp.ready()) StrAppend(&out.notes, "\n(not ready: ", resp.ready_reason(), ")\n");
  if (resp.source() == kFromKubernetes) {
    StrAppend(&out.notes,
              "\n(from Kubernetes: what the bridge published there. ? = not known there: Slurm's "
              "base state, the jobs of a node without a reservation; JOBS as the reservation "
              "last listed them. Slurm nodes outside Kubernetes are not listed.)\n");
  }
  return out;
}

nlohmann::json NodesJson(const v1::ListNodesResponse& resp) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : resp.nodes()) nodes.push_back(SummaryJson(n));
  return {{"leader", resp.leader()},
          {"ready", resp.ready()},
          {"readyReason", resp.ready_reason()},
          {"source", resp.source().empty() ? "daemon" : resp.source()},
          {"nodes", std::move(nodes)}};
}

Listing JobsListing(const v1::ListJobsResponse& resp, bool wide) {
  Listing out;
  std::vector<std::vector<std::string>>& rows = out.rows;
  std::vector<std::string> head = {"JOBID", "USER",  "PARTITION",   "STATE",     "NODES",
                                   "GPUS",  "OWNER", "PREEMPTIBLE", "PREEMPTED", "WHY"};
  if (wide) {
    for (const char* h : {"ACCOUNT", "QOS", "REASON", "RESTARTS", "STARTED"}) head.push_back(h);
  }
  rows.push_back(head);
  for (const auto& j : resp.jobs()) {
    const int64_t gpus = j.gpus_per_node() * std::max(1, j.nodes_size());
    std::vector<std::string> row = {j.display_id().empty() ? StrCat(j.job_id()) : j.display_id(),
                                    j.user().empty() ? StrCat(j.user_id()) : j.user(),
                                    Dash(j.partition()),
                                    Dash(j.state()),
                                    Count(j.nodes_size(), Join(j.nodes(), ",")),
                                    gpus == 0 ? "-" : StrCat(gpus),
                                    Dash(j.owner()),
                                    j.preemptible() ? "yes" : "no",
                                    Preempted(j),
                                    Dash(j.preemptible_why())};
    if (row[4] == "0") row[4] = "-";
    if (wide) {
      row.push_back(Dash(j.account()));
      row.push_back(Dash(j.qos()));
      row.push_back(Dash(j.state_reason()));
      row.push_back(StrCat(j.restart_count()));
      row.push_back(UnixTime(j.start_time_unix()));
    }
    out.names.push_back("job/" + row[0]);
    rows.push_back(std::move(row));
  }
  if (resp.omitted() > 0) {
    StrAppend(&out.notes, "\n(", resp.omitted(), " more jobs not listed: the answer is capped)\n");
  }
  if (!resp.ready()) StrAppend(&out.notes, "\n(not ready: ", resp.ready_reason(), ")\n");
  return out;
}

nlohmann::json JobsJson(const v1::ListJobsResponse& resp) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& j : resp.jobs()) {
    jobs.push_back({{"jobId", j.job_id()},
                    {"displayId", j.display_id()},
                    {"user", j.user()},
                    {"userId", j.user_id()},
                    {"account", j.account()},
                    {"partition", j.partition()},
                    {"qos", j.qos()},
                    {"state", j.state()},
                    {"stateReason", j.state_reason()},
                    {"nodes", std::vector<std::string>(j.nodes().begin(), j.nodes().end())},
                    {"gpusPerNode", j.gpus_per_node()},
                    {"owner", j.owner()},
                    {"preemptible", j.preemptible()},
                    {"preemptibleWhy", j.preemptible_why()},
                    {"preemptions", j.preemptions()},
                    {"preemptionsInWindow", j.preemptions_in_window()},
                    {"lastPreemptedUnix", j.last_preempted_unix()},
                    {"restartCount", j.restart_count()},
                    {"startTimeUnix", j.start_time_unix()}});
  }
  return {{"leader", resp.leader()},
          {"ready", resp.ready()},
          {"readyReason", resp.ready_reason()},
          {"omitted", resp.omitted()},
          {"jobs", std::move(jobs)}};
}

std::string DescribeText(const v1::DescribeNodeResponse& resp) {
  const v1::NodeSummary& n = resp.node();
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    StrAppend(&out, key, std::string(key.size() < 16 ? 16 - key.size() : 1, ' '), value, "\n");
  };
  line("Name:", n.name());
  if (resp.source() == kFromKubernetes) {
    line("Source:", "Kubernetes (what the bridge published; ? = not known there)");
  }
  line("Kubernetes:", n.in_kubernetes() ? n.k8s_name() : "(not a managed Kubernetes node)");
  line("GPUs:", Gpus(n));
  line("Owner:", Owner(n));
  if (n.gpu_mode() == "gpu") {
    line("GPU mode:", "gpu (shared GPU by GPU)");
  } else if (!n.gpu_mode().empty()) {
    line("GPU mode:", StrCat(n.gpu_mode(), " (whole node: ", Dash(n.gpu_mode_reason()), ")"));
  }
  line("K8s health:", Dash(n.k8s_health()));
  line("Slurm state:", Dash(n.slurm_state()));
  line("Slurm reason:", Dash(n.slurm_reason()));
  line("Features:", Cell(n, "features", Dash(Join(n.features(), ","))));
  line("Jobs:", Cell(n, "jobs", Dash(Join(n.jobs(), ","))));
  line("GPU pods:", Dash(Join(n.pods(), ",")));
  line("Cordoned:", resp.unschedulable() ? "yes" : "no");
  if (n.gpu_owners_size() > 0) {
    out += "GPU owners:\n";
    std::vector<std::vector<std::string>> rows = {
        {"  INDEX", "DEVICE", "OWNER", "JOB", "PODS", "SINCE", "HEALTH"}};
    for (const auto& g : n.gpu_owners()) {
      rows.push_back({StrCat("  ", g.index()), Dash(g.device()), g.owner(), GpuJob(g),
                      Dash(Join(g.pods(), ",")), UnixTime(g.since_unix()),
                      g.health().empty() ? "healthy" : g.health()});
    }
    out += Table(rows);
  }
  if (resp.conditions_size() > 0) {
    out += "Conditions:\n";
    std::vector<std::vector<std::string>> rows = {
        {"  TYPE", "STATUS", "SINCE", "REASON", "MESSAGE"}};
    for (const auto& c : resp.conditions()) {
      rows.push_back({"  " + c.type(), c.status(), Dash(c.last_transition_time()), Dash(c.reason()),
                      Dash(c.message())});
    }
    out += Table(rows);
  }
  line("Taints:", Dash(Join(resp.taints(), ", ")));
  out += "Why:\n";
  for (const auto& e : resp.explanation()) StrAppend(&out, "  ", e, "\n");
  if (resp.source() == kFromKubernetes) {
    out += "Events (the bridge's, latest last):\n";
    if (resp.events_size() == 0) out += "  none kept by the apiserver\n";
    for (const auto& e : resp.events()) StrAppend(&out, "  ", e, "\n");
    out += "Planned actions:\n  ? (only the daemon plans: bridgectl describe node on its host)\n";
    return out;
  }
  out += "Planned actions:\n";
  if (resp.planned_actions_size() == 0) out += "  none (the node is where the rules want it)\n";
  for (const auto& a : resp.planned_actions()) StrAppend(&out, "  ", a, "\n");
  if (!resp.recheck_at().empty()) line("Recheck at:", resp.recheck_at());
  return out;
}

nlohmann::json DescribeJson(const v1::DescribeNodeResponse& resp) {
  nlohmann::json conditions = nlohmann::json::array();
  for (const auto& c : resp.conditions()) {
    conditions.push_back({{"type", c.type()},
                          {"status", c.status()},
                          {"reason", c.reason()},
                          {"message", c.message()},
                          {"lastTransitionTime", c.last_transition_time()}});
  }
  return {{"node", SummaryJson(resp.node())},
          {"conditions", std::move(conditions)},
          {"taints", std::vector<std::string>(resp.taints().begin(), resp.taints().end())},
          {"unschedulable", resp.unschedulable()},
          {"explanation",
           std::vector<std::string>(resp.explanation().begin(), resp.explanation().end())},
          {"plannedActions",
           std::vector<std::string>(resp.planned_actions().begin(), resp.planned_actions().end())},
          {"recheckAt", resp.recheck_at()},
          {"source", resp.source().empty() ? "daemon" : resp.source()},
          {"events", std::vector<std::string>(resp.events().begin(), resp.events().end())}};
}

}  // namespace skb::bridge::cli

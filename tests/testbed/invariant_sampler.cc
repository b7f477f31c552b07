// SPDX-License-Identifier: Apache-2.0
#include "tests/testbed/invariant_sampler.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <nlohmann/json.hpp>

#include "k8s/quantity.h"
#include "src/base/strings.h"
#include "src/devices/gres.h"
#include "src/devices/k8s_devices.h"
#include "src/devices/observe.h"

namespace skb::testbed {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

// `resource` in a resource list (requests or limits); 0 when absent or unreadable.
int64_t Amount(const json& list, const std::string& resource) {
  if (!list.is_object() || !list.contains(resource) || !list[resource].is_string()) return 0;
  auto q = k8s::Quantity::Parse(list[resource].get<std::string>());
  return q.ok() ? q->Value() : 0;
}

// A container's request of `resource` (the limit when no request is given, as the
// apiserver defaults it).
int64_t ContainerGpus(const json& c, const std::string& resource) {
  if (!c.contains("resources")) return 0;
  const json& r = c["resources"];
  const int64_t req = r.contains("requests") ? Amount(r["requests"], resource) : 0;
  return req > 0 ? req : (r.contains("limits") ? Amount(r["limits"], resource) : 0);
}

// The pod's effective request: the sum of its containers, or its largest init container.
// Read here on purpose, not through the bridge's parser: an oracle that shares the code it
// checks agrees with its bugs.
int64_t PodGpus(const json& pod, const std::string& resource) {
  const json& spec = pod.value("spec", json::object());
  int64_t sum = 0, init = 0;
  for (const json& c : spec.value("containers", json::array())) sum += ContainerGpus(c, resource);
  for (const json& c : spec.value("initContainers", json::array())) {
    init = std::max(init, ContainerGpus(c, resource));
  }
  return std::max(sum, init);
}

std::string JobStateText(const slurm::JobView& j) {
  std::string s(slurm::JobStateName(j.state));
  if (j.completing) s += "+COMPLETING";
  return s;
}

}  // namespace

std::map<std::string, NodeSample> SampleNodes(const std::vector<slurm::JobView>& jobs,
                                              const std::vector<json>& running_pods,
                                              const std::vector<json>& nodes,
                                              const SamplerOptions& options) {
  const std::string& resource = options.gpu_resource;
  std::map<std::string, NodeSample> by_node;
  for (const json& n : nodes) {
    NodeSample& s = by_node[n["metadata"].value("name", "")];
    const json status = n.value("status", json::object());
    s.allocatable = Amount(status.value("allocatable", json::object()), resource);
    s.capacity = Amount(status.value("capacity", json::object()), resource);
  }
  for (const auto& j : jobs) {
    if (j.state != slurm::JobState::kRunning && j.state != slurm::JobState::kSuspended &&
        !j.completing) {
      continue;
    }
    for (const auto& n : j.nodes) {
      by_node[n].slurm.push_back(
          {StrCat("job ", j.job_id, " (", JobStateText(j), ")"), j.gpus_per_node});
    }
  }
  for (const json& p : running_pods) {
    const json& md = p["metadata"];
    const std::string node = p.value("spec", json::object()).value("nodeName", "");
    const int64_t gpus = PodGpus(p, resource);
    if (node.empty() || gpus <= 0) continue;
    const json labels = md.value("labels", json::object());
    const bool reservation = labels.value("slurm-k8s-bridge.io/role", "") == "reservation" &&
                             md.value("namespace", "") == options.bridge_namespace;
    if (reservation) {
      by_node[node].reservation_gpus += gpus;
    } else {
      by_node[node].pods.push_back(
          {StrCat("pod ", md.value("namespace", ""), "/", md.value("name", "")), gpus});
    }
  }
  return by_node;
}

std::vector<std::string> DoubleBookings(const std::map<std::string, NodeSample>& nodes) {
  std::vector<std::string> out;
  for (const auto& [name, n] : nodes) {
    if (n.slurm.empty() || n.pods.empty()) continue;
    std::string line = StrCat("node ", name, " (", n.allocatable, " of ", n.capacity,
                              " GPUs allocatable, reservations ", n.reservation_gpus, "):");
    for (const auto& h : n.slurm) StrAppend(&line, " Slurm ", h.who, " [", h.gpus, " GPUs]");
    StrAppend(&line, " and");
    for (const auto& h : n.pods) StrAppend(&line, " ", h.who, " [", h.gpus, " GPUs]");
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> DeviceDoubleBookings(const std::vector<slurm::JobView>& jobs,
                                              const std::vector<nlohmann::json>& claims,
                                              const SamplerOptions& options) {
  std::map<std::pair<std::string, std::string>, std::string> slurm_held;  // (node, device)
  for (const slurm::JobView& j : jobs) {
    const bool holds = j.state == slurm::JobState::kRunning ||
                       j.state == slurm::JobState::kSuspended || j.completing;
    if (!holds || devices::IsPlaceholder(j)) continue;
    for (const auto& [node, indices] : j.gpu_indices) {
      const auto layout = options.devices_by_index.find(node);
      for (int64_t i : indices) {
        const bool listed = layout != options.devices_by_index.end() && i >= 0 &&
                            i < static_cast<int64_t>(layout->second.size());
        slurm_held[{node,
                    listed ? layout->second[static_cast<size_t>(i)] : devices::DeviceName(i)}] =
            StrCat("job ", j.job_id, " (", slurm::JobStateName(j.state),
                   j.completing ? "+COMPLETING" : "", ")");
      }
    }
  }
  std::vector<std::string> out;
  for (const auto& [node, list] : devices::ClaimsByNode(claims, options.dra_driver)) {
    for (const devices::Claim& c : list) {
      for (const std::string& d : c.devices) {
        auto it = slurm_held.find({node, d});
        if (it == slurm_held.end()) continue;
        out.push_back(StrCat("node ", node, " device ", d, ": Slurm ", it->second,
                             " and the allocated claim of ", c.pod));
      }
    }
  }
  return out;
}

InvariantSampler::InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm)
    : InvariantSampler(kube, slurm, Options{}) {}

InvariantSampler::InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm,
                                   Options options)
    : kube_(kube),
      slurm_(slurm),
      options_(std::move(options)),
      ledger_(options_.period, "invariant sampler", "") {
  thread_ = std::thread([this] { ledger_.Run([this] { return Sample(); }, stop_); });
}

void InvariantSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) {
    thread_.join();
    ledger_.Finish();
  }
}

bool InvariantSampler::LoadJobs() {
  // Since the answer before, as the oracle's reader asks (oracle_slurm_reader.cc says why):
  // slurmctld says when no job changed, and the jobs read before are still its word.
  auto r = slurm_->LoadJobs(jobs_.update_time);
  if (!r.ok()) {
    jobs_ = {};  // the next read is a whole one
    return false;
  }
  if (r->changed || jobs_.update_time == 0) jobs_ = std::move(*r);
  return true;
}

bool InvariantSampler::Sample() {
  if (options_.per_device) {
    // Two reads at once: Slurm's jobs (GRES indices) and the claims.
    const auto t0 = Steady::now();
    auto claims_f = std::async(std::launch::async, [this, t0] {
      k8s::ListOptions opts;
      opts.resource_version = "0";  // from the watch cache: oracle.h says why
      auto r = kube_->List(k8s::Resource::ResourceClaims(), "", opts);
      ledger_.NoteKubeRead(t0);
      return r;
    });
    const bool jobs = LoadJobs();
    ledger_.NoteSlurmRead(t0);
    auto claims = claims_f.get();
    if (!jobs || !claims.ok()) return false;
    ledger_.Record(DeviceDoubleBookings(jobs_.items, claims->items, options_));
    return true;
  }
  // The two reads at once: the state they show is from the same few milliseconds. The
  // nodes only describe a finding (their GPUs allocatable and in capacity): read after a
  // sample that found one, they are not a request every tick (the samplers' own reads were
  // a share of the load that slowed a busy machine's apiservers).
  const auto t0 = Steady::now();
  auto pods_f = std::async(std::launch::async, [this, t0] {
    k8s::ListOptions opts;
    opts.field_selector = "status.phase=Running";
    opts.resource_version = "0";
    auto r = kube_->List(k8s::Resource::Pods(), "", opts);
    ledger_.NoteKubeRead(t0);
    return r;
  });
  const bool jobs = LoadJobs();
  ledger_.NoteSlurmRead(t0);
  auto pods = pods_f.get();
  if (!jobs || !pods.ok()) return false;  // a failed read is not a sample
  std::vector<std::string> found =
      DoubleBookings(SampleNodes(jobs_.items, pods->items, {}, options_));
  if (!found.empty()) {
    auto nodes = kube_->List(k8s::Resource::Nodes(), "", {});
    if (nodes.ok()) {
      found = DoubleBookings(SampleNodes(jobs_.items, pods->items, nodes->items, options_));
    } else {
      found.push_back(
          StrCat("(the nodes, read to describe the above: ", nodes.status().ToString(), ")"));
    }
  }
  ledger_.Record(found);
  return true;
}

}  // namespace skb::testbed

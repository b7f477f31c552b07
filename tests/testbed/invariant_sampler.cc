#include "tests/testbed/invariant_sampler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "bridge/reconcile/k8s_convert.h"
#include "k8s/node_info.h"
#include "k8s/pod_info.h"
#include "src/base/strings.h"

namespace skb::testbed {

InvariantSampler::InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm)
    : kube_(kube), slurm_(slurm) {
  thread_ = std::thread([this] { Run(); });
}

void InvariantSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) {
    thread_.join();
    stopped_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - started_)
                      .count();
  }
}

double InvariantSampler::seconds() const {
  const int64_t stopped = stopped_ns_;
  const auto elapsed = stopped != 0 ? std::chrono::nanoseconds(stopped)
                                    : std::chrono::steady_clock::now() - started_;
  return std::chrono::duration<double>(elapsed).count();
}

std::string InvariantSampler::first_violation() {
  std::lock_guard<std::mutex> lock(mu_);
  return first_;
}

int64_t InvariantSampler::Allocatable(const std::string& node) {
  auto it = allocatable_.find(node);
  if (it != allocatable_.end()) return it->second;
  // Read once per node (GPU counts do not change in the tests); 0 = unknown: no pod is
  // treated as refused on that node.
  auto got = kube_->Get(k8s::Resource::Nodes(), "", node);
  if (!got.ok()) return 0;
  auto info = k8s::ParseNode(*got);
  const int64_t n = info.ok() ? info->AllocatableGpus() : 0;
  allocatable_[node] = n;
  return n;
}

void InvariantSampler::Run() {
  while (!stop_) {
    Sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void InvariantSampler::Sample() {
  auto jobs = slurm_->LoadJobs(0);
  k8s::ListOptions opts;
  opts.field_selector = "status.phase=Running";
  auto pods = kube_->List(k8s::Resource::Pods(), "", opts);
  if (!jobs.ok() || !pods.ok()) return;  // a failed read is not a sample
  std::map<std::string, std::set<uint32_t>> slurm;
  for (const auto& j : jobs->items) {
    if (j.state != slurm::JobState::kRunning && j.state != slurm::JobState::kSuspended) continue;
    for (const auto& n : j.nodes) slurm[n].insert(j.job_id);
  }
  // The Running GPU pods of each node, in the order they started.
  struct GpuPod {
    std::string start;  // status.startTime (RFC 3339, UTC: sorts as text); "" unknown
    bool reservation = false;
    int64_t gpus = 0;
    std::string name;  // ns/name
  };
  std::map<std::string, std::vector<GpuPod>> by_node;
  for (const auto& p : pods->items) {
    // The bridge's own view of a pod (its GPU count and whether it is a reservation).
    auto info = k8s::ParsePod(p);
    if (!info.ok()) continue;
    std::optional<inventory::GpuPod> pod = bridge::ToGpuPod(*info);
    if (!pod || pod->node_name.empty()) continue;
    GpuPod g;
    g.reservation = pod->reservation;
    g.gpus = pod->gpus;
    if (p.contains("status")) g.start = p["status"].value("startTime", "");
    g.name = StrCat(pod->namespace_name, "/", pod->name);
    by_node[pod->node_name].push_back(std::move(g));
  }
  for (auto& [node, gpu_pods] : by_node) {
    // A kubelet admits pods in the order they reach it and rejects one whose GPUs are no
    // longer free (OutOfnvidia.com/gpu, phase Failed); kwok admits everything. A pod bound by
    // a kube-scheduler whose cache lags (after an apiserver restart it relists) onto a node
    // whose reservation already runs would be rejected by a real kubelet, so it is counted
    // apart, not as a double booking. Ties and unknown start times count against the bridge.
    std::stable_sort(gpu_pods.begin(), gpu_pods.end(), [](const GpuPod& a, const GpuPod& b) {
      if (a.start.empty() != b.start.empty()) return !a.start.empty();
      if (a.start != b.start) return a.start < b.start;
      return !a.reservation && b.reservation;
    });
    const int64_t allocatable = Allocatable(node);
    int64_t used = 0;
    for (const GpuPod& g : gpu_pods) {
      if (allocatable > 0 && used + g.gpus > allocatable && !g.start.empty()) {
        if (!g.reservation) ++kubelet_rejects_;
        continue;  // a kubelet would have refused it
      }
      used += g.gpus;
      if (g.reservation || !slurm.count(node)) continue;
      ++violations_;
      std::lock_guard<std::mutex> lock(mu_);
      if (first_.empty()) {
        first_ = StrCat("node ", node, ": Slurm job ", *slurm[node].begin(), " and pod ", g.name);
      }
    }
  }
  ++samples_;
}

}  // namespace skb::testbed

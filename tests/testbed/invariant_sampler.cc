#include "tests/testbed/invariant_sampler.h"

#include <chrono>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

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
  for (const auto& p : pods->items) {
    const auto& meta = p["metadata"];
    if (meta.contains("labels") &&
        meta["labels"].value("slurm-k8s-bridge.io/role", "") == "reservation") {
      continue;
    }
    bool gpu = false;
    for (const auto& c : p["spec"].value("containers", nlohmann::json::array())) {
      if (c.contains("resources") && c["resources"].contains("requests") &&
          c["resources"]["requests"].contains("nvidia.com/gpu")) {
        gpu = true;
      }
    }
    const std::string node = p["spec"].value("nodeName", "");
    if (!gpu || node.empty()) continue;
    if (slurm.count(node)) {
      ++violations_;
      std::lock_guard<std::mutex> lock(mu_);
      if (first_.empty()) {
        first_ = StrCat("node ", node, ": Slurm job ", *slurm[node].begin(), " and pod ",
                        meta.value("namespace", ""), "/", meta.value("name", ""));
      }
    }
  }
  ++samples_;
}

}  // namespace skb::testbed

// Invariant 1 (docs/architecture.md), sampled: every 100 ms, which nodes run a Slurm job and which
// a Kubernetes GPU pod that is not a reservation. A node with both is a double booking. kwok,
// unlike a kubelet, admits a pod whose GPUs are already taken; the sampler applies a kubelet's
// admission (pods in start order, one that no longer fits is refused) before it looks, and counts
// the pods a kubelet would have refused in kubelet_rejects(). Used by the lending e2e tests and the
// chaos suite for their whole duration.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "bridge/slurm/libslurm_client.h"
#include "k8s/kube_client.h"

namespace skb::testbed {

class InvariantSampler {
 public:
  // Starts sampling at once; both clients must outlive the sampler.
  InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm);
  ~InvariantSampler() { Stop(); }
  InvariantSampler(const InvariantSampler&) = delete;
  InvariantSampler& operator=(const InvariantSampler&) = delete;

  void Stop();
  // Samples taken (a failed read of either side is not a sample: during an apiserver or
  // slurmctld restart nothing is counted) and double-booked ones.
  int samples() const { return samples_; }
  int violations() const { return violations_; }
  // Samples x non-reservation GPU pods a kubelet would have refused (the node's GPUs were
  // taken when they started), left out of violations().
  int kubelet_rejects() const { return kubelet_rejects_; }
  // Seconds from construction to Stop() (or to now while it runs): how long it watched.
  double seconds() const;
  std::string first_violation();

 private:
  void Run();
  void Sample();
  // The node's allocatable GPUs (read once; 0 when unknown).
  int64_t Allocatable(const std::string& node);

  k8s::KubeClient* const kube_;
  bridge::slurm::LibSlurmClient* const slurm_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<int64_t> stopped_ns_{0};  // since started_; 0 while running
  std::atomic<bool> stop_{false};
  std::atomic<int> samples_{0}, violations_{0}, kubelet_rejects_{0};
  std::map<std::string, int64_t> allocatable_;  // sampler thread only
  std::mutex mu_;
  std::string first_;
  std::thread thread_;
};

}  // namespace skb::testbed

// SPDX-License-Identifier: Apache-2.0
// Invariant 1 (docs/architecture.md), sampled: on every node, no GPU held by a Slurm job while a
// Kubernetes GPU pod that is not the bridge's reservation runs there. Used by the lending
// e2e tests and the chaos suite for their whole duration, beside the oracle
// (tests/testbed/oracle.h), which checks the same rule without any of the bridge's code.
//
// What holds a node's GPUs, as strictly as the rule reads:
//  - every Slurm job allocated to the node that is RUNNING, SUSPENDED or COMPLETING (a
//    completing job keeps its allocation until its epilog ends), GPUs asked or not;
//  - every Running pod asking the GPU resource, except reservations (label
//    slurm-k8s-bridge.io/role=reservation in the bridge's namespace). Nothing is excused:
//    the testbed's kubelets refuse a pod that does not fit (kubelet-admission), as real ones.
// Each sample reads Slurm's jobs and the Running pods at once, from two threads, so the two
// systems are read as close together as the clients allow. The nodes (allocatable and
// capacity, which change during tests as GPUs are lost and recovered) only describe a
// finding: they are read after a sample that found one.
//
// Rate: one sample per period (100 ms by default), kept by a SampleLedger (sample_ledger.h,
// shared with the oracle). RateCheck() tells a test whether it kept the claim.
//
//   InvariantSampler sampler(kube, slurm);
//   ... the test ...
//   sampler.Stop();
//   EXPECT_TRUE(sampler.RateCheck(0.9)) << sampler.RateReport();
//   EXPECT_EQ(sampler.violations(), 0) << sampler.first_violation();
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bridge/slurm/libslurm_client.h"
#include "k8s/kube_client.h"
#include "tests/testbed/sample_ledger.h"

namespace skb::testbed {

// What one sample saw on one node. GPU indices are not known on either side yet (device
// plugin); the per-device rule (GPU-granular sharing) will add them to Hold.
struct NodeSample {
  struct Hold {
    std::string who;   // "job 12 (COMPLETING)" or "pod ns/name"
    int64_t gpus = 0;  // as the holder asked (Slurm: per node)
  };
  int64_t allocatable = -1;  // GPUs allocatable now; -1 when the node is not in Kubernetes
  int64_t capacity = -1;
  std::vector<Hold> slurm;  // Slurm jobs holding the node
  std::vector<Hold> pods;   // Running non-reservation GPU pods
  int64_t reservation_gpus = 0;
};

struct SamplerOptions {
  std::chrono::milliseconds period{100};
  std::string gpu_resource = "nvidia.com/gpu";
  std::string bridge_namespace = "slurm-bridge";
  // GPU-granular sharing (DRA): the rule per device instead of per node. A device is held
  // by every Slurm job (not the bridge's placeholder) RUNNING, SUSPENDED or COMPLETING
  // with its GRES index there, and by every ResourceClaim allocated on it (allocated, not
  // only in use: kube-scheduler counts it taken from that moment). GRES index N is device
  // gpu-N of the node's pool (the testbed's gres.conf lists /dev/nvidia0..7 in order).
  bool per_device = false;
  std::string dra_driver = "gpu.nvidia.com";
  // Nodes whose GRES index N is not gpu-N (the testbed's MIG node): node -> the device of
  // each index, found by the test from the testbed's own layout.
  std::map<std::string, std::vector<std::string>> devices_by_index;
};

// One sample, per node, from what the three reads returned (Slurm's jobs, the Running pods,
// the nodes).
std::map<std::string, NodeSample> SampleNodes(const std::vector<slurm::JobView>& jobs,
                                              const std::vector<nlohmann::json>& running_pods,
                                              const std::vector<nlohmann::json>& nodes,
                                              const SamplerOptions& options);

// The double bookings in one sample: one line per node whose GPUs both sides hold.
std::vector<std::string> DoubleBookings(const std::map<std::string, NodeSample>& nodes);
// Per device (SamplerOptions::per_device): one line per device a Slurm job and an allocated
// claim hold at once.
std::vector<std::string> DeviceDoubleBookings(const std::vector<slurm::JobView>& jobs,
                                              const std::vector<nlohmann::json>& claims,
                                              const SamplerOptions& options);

class InvariantSampler {
 public:
  using Options = SamplerOptions;
  // Starts sampling at once; both clients must outlive the sampler and be safe to call
  // from another thread.
  InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm);
  InvariantSampler(k8s::KubeClient* kube, bridge::slurm::LibSlurmClient* slurm, Options options);
  ~InvariantSampler() { Stop(); }
  InvariantSampler(const InvariantSampler&) = delete;
  InvariantSampler& operator=(const InvariantSampler&) = delete;

  void Stop();
  // The schedule's figures (sample_ledger.h).
  const sampling::SampleLedger& ledger() const { return ledger_; }
  int samples() const { return ledger_.samples(); }
  int violations() const { return ledger_.violations(); }  // double-booked node-samples
  std::chrono::milliseconds period() const { return options_.period; }
  std::string first_violation() const { return ledger_.first_violation(); }

  // SampleLedger::RateCheck: samples >= fraction * (ticks - failed - blind) less one tick,
  // and at least one sample.
  ::testing::AssertionResult RateCheck(double fraction) const {
    return ledger_.RateCheck(fraction);
  }
  // "invariant sampler: 812 samples in 82.3 s (one per 100 ms claimed: ...)".
  std::string RateReport() const { return ledger_.RateReport(); }

 private:
  bool Sample();  // false when a read failed
  // Reads Slurm's jobs into jobs_; false when the read failed.
  bool LoadJobs();

  k8s::KubeClient* const kube_;
  bridge::slurm::LibSlurmClient* const slurm_;
  const Options options_;
  sampling::SampleLedger ledger_;
  bridge::slurm::Loaded<bridge::slurm::JobView> jobs_;  // the last answer (sampling thread)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace skb::testbed

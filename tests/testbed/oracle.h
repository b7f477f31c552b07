// SPDX-License-Identifier: Apache-2.0
// The invariant oracle: a second checker of invariant 1 (docs/architecture.md: no GPU given
// to both schedulers at once) that shares no code with the bridge, run beside
// InvariantSampler (tests/testbed/invariant_sampler.h), which reads the world through the
// bridge's own clients and parsers and so cannot see a bug in them.
//
// It reads for itself, every 100 ms (half a period after the ticks of a sampler made with
// it, so that the two checkers' reads do not queue behind each other):
//  - Slurm: slurm_load_jobs(last_update, &msg, SHOW_ALL | SHOW_DETAIL) (the answer before
//    stands when slurmctld says no job changed since it), in a reader process of its own
//    (tests/testbed/oracle_slurm_reader.cc: libslurm's state is process-wide and not safe for
//    concurrent use, and the bridge's client in the same test process owns it), which sends
//    each job's raw fields; the job state, GRES detail and TRES are interpreted here.
//  - Kubernetes: plain HTTPS GETs with libcurl and the admin client certificate of
//    $KUBECONFIG; the JSON read here with nlohmann. Device-plugin mode reads the Running pods
//    every tick and the nodes only to describe a finding, after the sample that found it
//    (half the requests a tick: the samplers' own reads were a share of the load that slowed
//    a busy machine's apiservers).
//    The per-tick lists ask resourceVersion=0: the apiserver serves them from its watch cache
//    as it stands, the state every watcher (kube-scheduler, the kubelet, the bridge) has
//    been sent. A list without a resourceVersion is a consistent read: the apiserver first
//    waits until an etcd progress notification proves its cache fresh, and on a testbed
//    that writes other kinds of objects all the time that wait is most of the read
//    (measured on a dra testbed with a ConfigMap patched in a loop: p90 84-89 ms for the
//    claims and the slices, 11-13 ms with resourceVersion=0; idle, 10 ms against 8). It
//    was the "slow apiserver" of the lowest rate checks, a wait the checkers' own reads
//    asked for. The cache is no staler than what the bridge acts on: the cache applies
//    an event before it sends it to any watcher, so a list started after the bridge saw a
//    pod or claim go shows it gone; a change not yet in the cache is a few milliseconds
//    old, well inside the 100 ms between ticks.
//  - Device identity: $SKB_TESTBED_DIR/gpu-identity.json, the testbed's own record of which
//    physical GPU (or MIG slice) each GRES index and each DRA device is (scripts/lib/testbed/
//    dra.sh, write_gpu_identity), re-read whenever it changes.
// It includes nothing from src/, k8s/ or bridge/ (oracle_isolation_test checks it).
//
// The rule, as strictly as it reads:
//  - device-plugin mode, per node: a Slurm job holding the node (RUNNING, SUSPENDED or
//    COMPLETING, GPUs asked or not) and a Running pod that asks a GPU resource (any of
//    OracleOptions::gpu_resources, in any container, init or ephemeral container, or the
//    pod's own resources) and is not the bridge's reservation (label
//    slurm-k8s-bridge.io/role=reservation in the bridge's namespace).
//  - dra mode, per physical GPU: a Slurm job that is not a placeholder (partition
//    OracleOptions::placeholder_partition) holding it by GRES index, and an allocated
//    ResourceClaim holding it; two allocated claims holding it; a MIG slice counts against
//    its parent GPU. Fail closed: a GRES detail it cannot read, a GPU count that disagrees
//    with the indices, an index or device the identity file does not list, a node list
//    libslurm cannot expand, an unreadable claim result, a published device without an
//    identity are each a violation naming the job, claim or device. A COMPLETING job's
//    indices are not shown by Slurm (slurmctld packs GRES detail only for jobs not finished):
//    it holds what it was last seen holding, or, never seen, every GPU of its nodes.
// Every finding counts as a violation; the first is kept.
//
//   Oracle oracle({.per_device = true});
//   ... the test ...
//   oracle.Stop();
//   EXPECT_TRUE(oracle.RateCheck(0.9));
//   EXPECT_EQ(oracle.violations(), 0) << oracle.first_violation();
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/testbed/oracle_wire.h"
#include "tests/testbed/sample_ledger.h"

namespace skb::oracle {

// ---- Slurm, as the reader process sends it ----

// SlurmJob, one job of slurm_load_jobs as the reader process sends it: oracle_wire.h.
bool FromJson(const nlohmann::json& j, SlurmJob* job, std::string* error);

// Whether a job in this state holds its nodes' resources: base RUNNING or SUSPENDED, or the
// COMPLETING flag (its epilog has not ended) whatever the base state.
bool JobHolds(uint32_t job_state);
// Whether slurmctld sends the job's GRES detail: started and not finished (RUNNING,
// SUSPENDED); a COMPLETING job's base state is finished.
bool DetailShown(uint32_t job_state);
// "RUNNING", "COMPLETED+COMPLETING", "CANCELLED+COMPLETING", "STATE_99".
std::string JobStateText(uint32_t job_state);

// One entry of a node's gres_detail_str, as slurmctld writes it (gres_ctld.c,
// gres_ctld_job_build_details): "NAME[:TYPE]:COUNT(IDX:LIST)" or "NAME[:TYPE](CNT:COUNT)".
struct GresEntry {
  std::string name;  // "gpu"
  std::string type;  // "h100", "1g.10gb", or ""
  uint64_t count = 0;
  bool indexed = false;          // IDX form
  std::vector<int64_t> indices;  // sorted, as the LIST names them
};
// Parses one node's detail: entries joined by ',' (a LIST holds commas too: "0-1,3").
// Anything else is an error, never a partial result.
bool ParseGresDetail(std::string_view detail, std::vector<GresEntry>* out, std::string* error);
// bit_fmt's list: "0-2,5" -> 0 1 2 5. Ranges ascending; "" is the empty list.
bool ParseIndexList(std::string_view list, std::vector<int64_t>* out, std::string* error);
// "gres/gpu=N" of a TRES string (tres_alloc_str); nullopt when it names none. An unreadable
// count is an error.
bool TresGpus(std::string_view tres, std::optional<uint64_t>* out, std::string* error);

// ---- Device identity: $SKB_TESTBED_DIR/gpu-identity.json ----

struct GpuIdentity {
  struct Node {
    std::string driver;  // the DRA driver of its devices ("gpu.nvidia.com")
    std::string pool;    // its pool (the testbed's: the node's name)
    std::map<int64_t, std::string> by_gres_index;  // Slurm's GRES index -> physical id
    std::map<std::string, std::string> by_device;  // DRA device name -> physical id
    std::map<std::string, std::string> parent;     // a MIG slice's id -> its GPU's id
  };
  std::map<std::string, Node> nodes;
  // The parent GPU of a physical id ("" for a whole GPU).
  std::string ParentOf(const std::string& id) const;
};
bool ParseGpuIdentity(const nlohmann::json& j, GpuIdentity* out, std::string* error);

// ---- The rule ----

struct OracleOptions {
  std::chrono::milliseconds period{100};
  // dra mode: the rule per physical GPU (needs gpu-identity.json); otherwise per node.
  bool per_device = false;
  // Device-plugin mode: the resources that are GPUs; a trailing '*' matches a prefix.
  std::vector<std::string> gpu_resources = {"nvidia.com/gpu", "nvidia.com/mig-*"};
  std::string bridge_namespace = "slurm-bridge";
  // dra mode: jobs of this partition are the bridge's placeholders (they hold Kubernetes'
  // GPUs from Slurm).
  std::string placeholder_partition = "skb-gpu-hold";
  // Empty: $SKB_TESTBED_DIR/gpu-identity.json and $KUBECONFIG.
  std::string identity_file;
  std::string kubeconfig;
  // The reader process; empty: $SKB_ORACLE_SLURM_READER, else the one this build made.
  std::string slurm_reader;
};

// What the Slurm side last showed per job: node -> GRES indices (a COMPLETING job's detail
// is not sent, its last RUNNING one still holds). Entries of jobs gone from Slurm are
// dropped.
using IndexMemory = std::map<uint32_t, std::map<std::string, std::vector<int64_t>>>;

// dra mode: one line per finding of one sample (see the header comment).
std::vector<std::string> DeviceViolations(const std::vector<SlurmJob>& jobs,
                                          const std::vector<nlohmann::json>& claims,
                                          const std::vector<nlohmann::json>& slices,
                                          const GpuIdentity& identity, const OracleOptions& options,
                                          IndexMemory* memory);
// Device-plugin mode: one line per node both sides hold (and per pod whose GPU request it
// cannot read). `nodes` only describes a finding (the node's GPUs allocatable and in
// capacity); nullptr: not read.
std::vector<std::string> NodeViolations(const std::vector<SlurmJob>& jobs,
                                        const std::vector<nlohmann::json>& running_pods,
                                        const std::vector<nlohmann::json>* nodes,
                                        const OracleOptions& options);
// Whether `resource` is one of `patterns` (a trailing '*' matches a prefix).
bool IsGpuResource(const std::string& resource, const std::vector<std::string>& patterns);
// A Kubernetes quantity's sign: 1 positive, 0 zero, -1 negative; nullopt unreadable.
std::optional<int> QuantitySign(const nlohmann::json& quantity);

// ---- Kubernetes access ----

struct KubeAccess {
  std::string server;  // https://127.0.0.1:16443
  // Each either a file or the PEM itself (the kubeconfig's *-data, base64-decoded).
  std::string ca_file, ca_pem;
  std::string cert_file, cert_pem;
  std::string key_file, key_pem;
};
// The current context's cluster and user of a kubeconfig (YAML).
bool ParseKubeconfig(const std::string& text, KubeAccess* out, std::string* error);
bool Base64Decode(std::string_view in, std::string* out);

// ---- The oracle ----

class Oracle {
 public:
  using Options = OracleOptions;
  // Starts sampling at once.
  explicit Oracle(Options options = {});
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  void Stop();
  // The schedule's figures (sample_ledger.h).
  const sampling::SampleLedger& ledger() const { return ledger_; }
  int samples() const { return ledger_.samples(); }
  int violations() const { return ledger_.violations(); }
  int failed_reads() const { return ledger_.failed_reads(); }
  std::chrono::milliseconds period() const { return options_.period; }
  std::string first_violation() const { return ledger_.first_violation(); }
  // The last reason a read failed ("" if none did).
  std::string last_failure();

  // SampleLedger::RateCheck: samples >= fraction * (ticks - failed - blind) less one tick,
  // and at least one sample.
  ::testing::AssertionResult RateCheck(double fraction) const {
    return ledger_.RateCheck(fraction);
  }
  std::string RateReport() const;  // the ledger's, with the last failed read

 private:
  struct Io;  // the reader process and the HTTP handles (oracle.cc)
  bool Sample();
  void Fail(const std::string& why);

  const Options options_;
  sampling::SampleLedger ledger_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::string last_failure_;
  std::unique_ptr<Io> io_;  // used by the sampling thread only
  IndexMemory memory_;      // the sampling thread's
  std::thread thread_;
};

}  // namespace skb::oracle

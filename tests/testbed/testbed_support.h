// SPDX-License-Identifier: Apache-2.0
// Helpers for tests that run against the real testbed (scripts/testbed up): run a command
// with a deadline and capture its output, wait for a condition, read the testbed's
// environment. Tests are started by scripts/test (or by hand after
// `eval "$(scripts/testbed env)"`), so KUBECONFIG, SLURM_CONF and PATH point at the testbed.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "k8s/kube_client.h"
#include "src/base/status.h"

namespace skb::testbed {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by the deadline or a signal
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv[0] (looked up in PATH) with the given arguments, feeding `stdin_text` to its
// standard input, and kills it (SIGKILL to its process group) past `timeout`.
CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         const std::string& stdin_text = "");

// Shorthand: runs `sh -c script`.
CommandResult Shell(const std::string& script,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Polls `done` every `interval` until it returns true or `timeout` passes. Returns whether
// it became true.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval = std::chrono::milliseconds(200));

// The other half of WaitFor, for "nothing bad happens" checks: calls `check` every
// `interval` for `window` and returns "" when it returned "" every time, or the first thing
// it reported (it stops there). A test that sleeps and then looks once passes whenever the
// bad thing comes and goes within the sleep; this looks throughout the stated window.
std::string HoldsFor(const std::function<std::string()>& check, std::chrono::milliseconds window,
                     std::chrono::milliseconds interval = std::chrono::milliseconds(200));

// Paths of this build, compiled into one generated file (testbed_paths.cc) so that no other
// object's compile line names the checkout or the build tree: ccache then serves every other
// test object to any clone of the sources, wherever it is.
const std::string& SourceDir();        // the checkout (scripts/testbed, the chart, ...)
const std::string& DaemonBinary();     // slurm-k8s-bridge
const std::string& BridgectlBinary();  // bridgectl
const std::string& PluginFile();       // job_submit_k8s_bridge.so ("" when not built)

// `bridgectl --socket SOCKET ARGS...` (30 s budget): a daemon's view, asked over its socket.
CommandResult Bridgectl(const std::string& socket, const std::vector<std::string>& args);

// The testbed's state directory (SKB_TESTBED_DIR) or an error explaining how to get one.
skb::StatusOr<std::string> TestbedDir();

// Number of nodes the testbed runs (SKB_TESTBED_NODES, default 4).
int TestbedNodeCount();

// Whether the tests run against the testbed in dra mode (SKB_TESTBED_GPU_ALLOCATION=dra, as
// the dra lane of scripts/test and `eval "$(scripts/testbed env)"` of such a testbed set
// it); tests of label dra skip themselves otherwise, saying so with kNeedsDraMode.
bool DraMode();
inline constexpr char kNeedsDraMode[] =
    "needs the testbed in dra mode: SKB_TESTBED_GPU_ALLOCATION=dra scripts/testbed up --no-bridge";

// A pod as tests create them to probe kube-scheduler and the (simulated) kubelets: one
// container asking `gpus` of `resource` (requests = limits).
struct TestPod {
  std::string name;
  std::string namespace_name = "default";
  std::map<std::string, std::string> labels;
  int gpus = 8;
  std::string resource = "nvidia.com/gpu";
  std::string priority_class;  // "" for none
  // Set: the pod is bound at creation and kube-scheduler never sees it (no taint, no
  // resource check but the kubelet's admission).
  std::string node_name;
  // Placed by kube-scheduler on this node (a nodeSelector on kubernetes.io/hostname).
  std::string node_selector;
  // Tolerates every taint (`operator: Exists` without a key), as many DaemonSets and
  // system pods do: NoSchedule guards do not keep it away.
  bool tolerate_all = false;
  int grace_seconds = 1;
  std::vector<std::string> finalizers;
};
nlohmann::json PodManifest(const TestPod& pod);

// An inference pod as the tests and benchmarks create it in `default`: PriorityClass
// inference-high (above the lending threshold), `gpus` nvidia.com/gpu, label skb-e2e=LABEL.
nlohmann::json InferencePod(const std::string& name, const std::string& label, int gpus = 8);
// The same pod before PodManifest, for a test to place it (node_selector, tolerate_all).
TestPod InferenceTestPod(const std::string& name, const std::string& label, int gpus = 8);

// The same inference pod bound to `node` by spec.nodeName: it bypasses kube-scheduler (and
// so every NoSchedule taint); only the kubelet's admission can refuse it.
nlohmann::json NodeNamePod(const std::string& name, const std::string& label,
                           const std::string& node, int gpus = 8);

// The same inference pod tolerating every taint (kube-scheduler places it on a node the
// bridge tainted NoSchedule).
nlohmann::json TolerateAllPod(const std::string& name, const std::string& label, int gpus = 8);

// Creates namespace `ns` (already there is fine) and waits until it has its default
// ServiceAccount: pods created before kube-controller-manager made it are refused
// (serviceaccount "default" not found).
Status CreateNamespace(const std::string& ns,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));
// Waits (bounded) until namespace `ns` has its default ServiceAccount.
Status WaitForDefaultServiceAccount(const std::string& ns,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Runs `scripts/testbed ARGS...` of this source tree: the kubelet and GPU faults
// (kubelet-fail, kubelet-restart, gpu-lost, gpu-recovered, force-delete) and component
// stop/start/restart.
CommandResult TestbedCommand(const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout = std::chrono::seconds(120));

// The whole file, "" when it cannot be read.
std::string ReadAll(const std::string& path);

// `s` without leading and trailing whitespace (command output).
std::string Trim(const std::string& s);

// A Slurm job's state as squeue shows it ("RUNNING", "PENDING"); "" once squeue no longer
// lists the job.
std::string SqueueState(const std::string& job_id);
// The GRES indices Slurm gave job `job_id` on its (first) node, as `scontrol -d show job`
// prints them ("5", "0-4", "0-1,4"); "" when it holds none.
std::string SlurmGpuIndices(const std::string& job_id);

// Writes `path`: a kubeconfig for the testbed's apiserver (its server and CA, taken from
// $KUBECONFIG) with a token of ServiceAccount `ns`/`service_account` valid for 2 h (kubectl
// create token), and nothing of the admin's credentials: what that ServiceAccount's RBAC
// allows, and no more.
Status WriteServiceAccountKubeconfig(const std::string& ns, const std::string& service_account,
                                     const std::string& path);

// A Kubernetes client with the testbed's admin kubeconfig ($KUBECONFIG), not rate
// limited (tests and benchmarks measure the bridge, not their own client).
StatusOr<std::unique_ptr<k8s::KubeClient>> AdminKubeClient();

// Points the testbed slurmctld's job_submit plugin at the daemon socket `socket` by
// rewriting its config file (k8s_bridge.conf next to slurm.conf; the plugin re-reads it)
// and waits until slurmctld's log shows the plugin loaded it. Restores the original file
// when destroyed, and waits the same way for the plugin to load it again. Check ok() before relying
// on it.
class PluginPointer {
 public:
  PluginPointer(const std::string& socket, const std::string& failure_policy);
  ~PluginPointer();
  PluginPointer(const PluginPointer&) = delete;
  PluginPointer& operator=(const PluginPointer&) = delete;

  bool ok() const { return ok_; }
  // Points it elsewhere (another policy, another socket, another budget per job: the
  // plugin's TimeoutMs, 1..1000), waiting the same way.
  bool Repoint(const std::string& socket, const std::string& failure_policy, int timeout_ms = 100);

 private:
  std::string conf_, log_, original_;
  bool ok_ = false;
};

// `kubectl get ARGS -o json`, parsed; null when it fails.
nlohmann::json KubectlGetJson(std::vector<std::string> args);

// Deletes namespace `ns` a test made: its pods first, waited for (so the next test finds
// every device they held free), then its ResourceClaims (a claim allocated by hand holds
// its device until it is gone), then the namespace, not waited for.
void DeleteTestNamespace(const std::string& ns);

}  // namespace skb::testbed

// Helpers for tests that run against the real testbed (scripts/testbed up): run a command
// with a deadline and capture its output, wait for a condition, read the testbed's
// environment. Tests are started by scripts/test (or by hand after
// `eval "$(scripts/testbed env)"`), so KUBECONFIG, SLURM_CONF and PATH point at the testbed.
#pragma once

#include <chrono>
#include <functional>
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

// The testbed's state directory (SKB_TESTBED_DIR) or an error explaining how to get one.
skb::StatusOr<std::string> TestbedDir();

// Number of nodes the testbed runs (SKB_TESTBED_NODES, default 4).
int TestbedNodeCount();

// An inference pod as the tests and benchmarks create it in `default`: PriorityClass
// inference-high (above the lending threshold), `gpus` nvidia.com/gpu, label skb-e2e=LABEL.
nlohmann::json InferencePod(const std::string& name, const std::string& label, int gpus = 8);

// The whole file, "" when it cannot be read.
std::string ReadAll(const std::string& path);

// `s` without leading and trailing whitespace (command output).
std::string Trim(const std::string& s);

// A Kubernetes client with the testbed's admin kubeconfig ($KUBECONFIG), not rate
// limited (tests and benchmarks measure the bridge, not their own client).
StatusOr<std::unique_ptr<k8s::KubeClient>> AdminKubeClient();

// Points the testbed slurmctld's job_submit plugin at the daemon socket `socket` by
// rewriting its config file (k8s_bridge.conf next to slurm.conf; the plugin re-reads it)
// and waits until slurmctld's log shows the plugin loaded it. Restores the original file
// when destroyed. Check ok() before relying on it.
class PluginPointer {
 public:
  PluginPointer(const std::string& socket, const std::string& failure_policy);
  ~PluginPointer();
  PluginPointer(const PluginPointer&) = delete;
  PluginPointer& operator=(const PluginPointer&) = delete;

  bool ok() const { return ok_; }
  // Points it elsewhere (another policy, another socket), waiting the same way.
  bool Repoint(const std::string& socket, const std::string& failure_policy);

 private:
  std::string conf_, log_, original_;
  bool ok_ = false;
};

}  // namespace skb::testbed

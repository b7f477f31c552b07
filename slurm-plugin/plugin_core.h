// SPDX-License-Identifier: Apache-2.0
// The job_submit plugin's logic, free of Slurm symbols so it can be unit-tested and fuzzed
// outside slurmctld: its config file, the connection to the daemon with a hard time
// budget, and the checking of the daemon's answers.
//
// Config file (key=value lines, '#' comments; default path: k8s_bridge.conf next to
// slurm.conf):
//   SocketPath=/run/slurm-k8s-bridge/bridge.sock   daemon socket
//   TimeoutMs=5                                    budget per job (1..1000)
//   FailurePolicy=open                             open: accept without an answer;
//                                                  closed: refuse
// The file is re-read by the plugin's background thread when it changes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "bridge/api/v1/bridge.pb.h"

namespace skb::plugin {

struct PluginConfig {
  std::string socket_path = "/run/slurm-k8s-bridge/bridge.sock";
  std::chrono::milliseconds budget{5};
  bool fail_closed = false;
};

// Parses the config text; unknown keys and bad values are reported in *error (the
// caller keeps its previous config then).
bool ParsePluginConfig(std::string_view text, PluginConfig* out, std::string* error);

// Checks a response frame against the request it answers. Returns false with *why when
// it is not a well-formed v1 Response to request `request_id` carrying an AdmitResponse.
bool InterpretAdmitResponse(std::string_view frame, uint64_t request_id,
                            api::v1::AdmitResponse* out, std::string* why);

// Where log lines go (slurm_info/slurm_error in slurmctld, stderr in tests).
using LogFn = void (*)(bool error, const std::string& line);

// The connection to the daemon. Admit() runs on slurmctld's thread with its locks held:
// it never waits longer than the budget. A background thread re-reads the config and
// reconnects. Thread-safe.
class BridgeConnection {
 public:
  BridgeConnection(std::string config_path, LogFn log);
  ~BridgeConnection();  // Stop()s

  void Start();  // loads the config, starts the background thread
  void Stop();   // joins it

  enum class Outcome { kAnswered, kUnavailable };
  Outcome Admit(const api::v1::JobDescription& job, api::v1::AdmitResponse* out, std::string* why);

  PluginConfig config() const;
  const std::atomic<uint64_t>& fail_open() const { return fail_open_; }
  void CountFailure(bool closed) { ++(closed ? fail_closed_ : fail_open_); }
  void CountDecision(bool accepted) { ++(accepted ? admitted_ : rejected_); }

 private:
  void Loop();
  bool ReloadConfig();                                        // true when the socket path changed
  int ConnectNow(const std::string& path, std::string* why);  // non-blocking; -1 on failure
  void CloseLocked();

  const std::string config_path_;
  const LogFn log_;
  mutable std::timed_mutex mu_;  // guards fd_, config_, next_id_
  int fd_ = -1;
  PluginConfig config_;
  uint64_t next_id_ = 1;
  struct timespec config_mtime_ {};
  std::mutex thread_mu_;
  std::condition_variable thread_cv_;
  bool stop_ = false;
  bool kick_ = false;
  std::thread thread_;
  std::atomic<uint64_t> admitted_{0}, rejected_{0}, fail_open_{0}, fail_closed_{0}, timeouts_{0},
      protocol_errors_{0};
};

}  // namespace skb::plugin

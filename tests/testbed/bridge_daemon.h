// SPDX-License-Identifier: Apache-2.0
// A slurm-k8s-bridge daemon started by a test or benchmark against the testbed: its own
// config (JSON, merged over what the testbed needs: kubeconfig, slurm.conf, a private
// socket), its own log file, stopped with SIGTERM or killed with SIGKILL.
//
//   BridgeDaemon d(skb::testbed::DaemonBinary(), R"({"slurm": {"poll_interval": "100ms"}})");
//   ASSERT_TRUE(d.Start().ok());
//   ... d.socket() for bridgectl, d.Log() on failure ...
//   d.Kill();   // or d.Stop()
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace skb::testbed {

class BridgeDaemon {
 public:
  // `config_overlay` is a JSON object merged (RFC 7386) over the base config.
  BridgeDaemon(std::string binary, std::string config_overlay,
               std::vector<std::string> extra_args = {"--no-leader-election"});
  ~BridgeDaemon();  // Stop()s and removes its directory

  // Starts the process and waits until `ready_line` appears in its log (default: the
  // reconcile worker has synced its caches).
  Status Start(const std::string& ready_line = "caches_synced",
               std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // A new config overlay for the next Start (a config change rolled out: Stop, then Start
  // with the new file; the socket, directory and log stay the same).
  void SetOverlay(std::string config_overlay) { overlay_ = std::move(config_overlay); }
  const std::string& overlay() const { return overlay_; }
  // SIGTERM and wait. Returns the exit status (waitpid's).
  int Stop();
  // SIGKILL and wait: a crash.
  void Kill();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // -1 when not running
  // Whether the process has ended by itself (reaps it).
  bool Exited();

  const std::string& socket() const { return socket_; }
  // The config file it was last started with (for another run of the binary with the same
  // config: --decommission).
  std::string ConfigPath() const { return dir_ + "/config.json"; }
  const std::string& dir() const { return dir_; }
  std::string Log() const;
  // The last `bytes` of the log, for failure messages.
  std::string LogTail(size_t bytes = 4000) const;
  // "http://127.0.0.1:PORT" of its HTTP server (server.http_address "127.0.0.1:0" in the
  // overlay), from its last `http_listening` log line (a restart appends to the same log);
  // "" when it has none.
  std::string HttpBase() const;

 private:
  const std::string binary_;
  std::string overlay_;
  const std::vector<std::string> extra_args_;
  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace skb::testbed

// The daemon's Unix-socket server for the job_submit plugin and bridgectl: frames in,
// frames out (bridge/api/frame.h), one poll() thread, no blocking on any peer.
//
// Security: the socket is created mode 0600 (owned by `owner_uid` when given, which needs
// root) before listen(), so nobody can connect in between; every accepted peer is checked
// with SO_PEERCRED against `allowed_uids` (root is always allowed) and dropped with a
// logged reason otherwise. Bad input (garbage, huge length prefixes, too many bytes) drops
// that connection only, with the reason in the log.
//
//   UnixServer server({.path = "/run/skb/bridge.sock"}, [&](std::string_view f, uint32_t pid) {
//     return service.HandleFrame(f, pid);
//   });
//   RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "bridge/plugin_server/admission_service.h"
#include "src/base/status.h"

namespace skb::bridge {

class UnixServer {
 public:
  struct Options {
    std::string path;
    // chown the socket to this uid (the daemon must be root); nullopt = keep the daemon's.
    std::optional<uid_t> owner_uid;
    // Peers allowed besides root (uid 0) and the daemon's own euid.
    std::set<uid_t> allowed_uids;
    size_t max_connections = 64;
  };
  using Handler = std::function<HandleResult(std::string_view frame, uint32_t peer_pid)>;

  UnixServer(Options options, Handler handler);
  ~UnixServer();  // Stop()s
  UnixServer(const UnixServer&) = delete;
  UnixServer& operator=(const UnixServer&) = delete;

  // Creates the socket (and its directory, 0755, if missing) and starts serving.
  // FailedPrecondition when another process already serves on the path.
  Status Start();
  // Stops serving, closes every connection and removes the socket file. Idempotent.
  void Stop();

  struct Stats {
    uint64_t accepted = 0, denied = 0, dropped = 0, frames = 0;
  };
  Stats stats() const;

 private:
  void Loop();

  const Options options_;
  const Handler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the loop
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0}, denied_{0}, dropped_{0}, frames_{0};
};

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
// The daemon's Unix-socket server for the job_submit plugin and bridgectl: frames in,
// frames out (bridge/api/frame.h), no blocking on any peer.
//
// Threads. One poll() thread owns every connection and answers the frames the classifier
// puts in the inline lane (the plugin's admissions and pings: microseconds, from a
// snapshot). Frames in the worker lane (bridgectl's queries, which build the whole
// inventory and can take as long as the cluster is big) go to one worker thread; the
// answer comes back to the poll thread through the eventfd. So an admission is never
// queued behind a query on another connection. Per connection there is at most one
// request in flight: the connection's next frame is not looked at until the answer to the
// previous one is queued for writing, so answers keep the order of the requests and the
// worker's queue never holds more than max_connections entries. One worker, not a pool:
// queries only read caches, and two of them at once would only share the same cores.
//
// Bounds, per connection: at most max_frames_per_wakeup frames answered per turn of the
// loop (a pipelining peer cannot starve the others); at most max_pending_frames decoded
// but unanswered frames and max_buffered_bytes of undecoded input, beyond which the
// server stops reading from that peer (the kernel's socket buffer then holds the client
// back: backpressure, nothing dropped); no new frame is answered while more than
// max_buffered_bytes of answers wait to be written. A peer that stalls with a partial
// frame in the input or unread answers in the output for stall_timeout is dropped with a
// logged reason. An idle connection (nothing half-sent, nothing unread) is kept: the
// plugin holds one open for its whole life.
//
// accept4() failing for lack of fds or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) leaves
// the listening fd readable; the loop then stops polling it for accept_backoff instead of
// spinning, logs one warning per episode (and a recovery line with the number of failed
// accepts when one succeeds again), and counts every failure.
//
// Security: the socket is created mode 0600 (owned by `owner_uid` when given, which needs
// CAP_CHOWN unless it is the process's own uid; Start fails otherwise) before listen(), so
// nobody can connect in between; every accepted peer is checked
// with SO_PEERCRED against `allowed_uids` (root is always allowed) and dropped with a
// logged reason otherwise. Bad input (garbage, huge length prefixes) drops that
// connection only, with the reason in the log.
//
//   UnixServer server({.path = "/run/skb/bridge.sock"},
//                     [&](std::string_view f, uint32_t pid) { return service.HandleFrame(f, pid);
//                     }, AdmissionService::LaneOf);
//   RETURN_IF_ERROR(server.Start());
//   ...
//   server.Stop();
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bridge/plugin_server/admission_service.h"
#include "src/base/status.h"
#include "src/base/thread_annotations.h"

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
    // Frames answered per connection per turn of the loop.
    size_t max_frames_per_wakeup = 8;
    // Decoded but unanswered frames per connection before the server stops reading it.
    size_t max_pending_frames = 32;
    // Undecoded input, and unwritten answers, per connection before the server stops
    // reading it / answering it.
    size_t max_buffered_bytes = 256 * 1024;
    // A partial frame or unread answers with no byte moving for this long: dropped.
    std::chrono::milliseconds stall_timeout{10'000};
    // accept4() out of fds or memory: the listening fd is not polled for this long.
    std::chrono::milliseconds accept_backoff{200};
  };
  using Handler = std::function<HandleResult(std::string_view frame, uint32_t peer_pid)>;
  // Which thread answers a frame (see the file comment). Called on the poll thread.
  enum class Lane { kInline, kWorker };
  using Classifier = std::function<Lane(std::string_view frame)>;

  // `classify` empty: every frame is answered inline.
  UnixServer(Options options, Handler handler, Classifier classify = {});
  ~UnixServer();  // Stop()s
  UnixServer(const UnixServer&) = delete;
  UnixServer& operator=(const UnixServer&) = delete;

  // Creates the socket (and its directory, 0755, if missing) and starts serving.
  // FailedPrecondition when another process already serves on the path.
  Status Start();
  // Stops serving, closes every connection and removes the socket file. Idempotent.
  // Waits for a query the worker is answering.
  void Stop();

  struct Stats {
    uint64_t accepted = 0, denied = 0, dropped = 0, frames = 0;
    uint64_t worker_frames = 0;  // of `frames`, answered on the worker thread
    uint64_t accept_errors = 0;  // accept4() failures (EMFILE, ...)
    uint64_t wakeups = 0;        // returns from poll(): what a spinning loop would inflate
    uint64_t stalled = 0;        // of `dropped`, for stall_timeout
  };
  Stats stats() const;

 private:
  struct Job {
    int fd = -1;
    uint64_t conn_id = 0;
    uint32_t pid = 0;
    std::string frame;
  };
  struct Done {
    int fd = -1;
    uint64_t conn_id = 0;
    HandleResult result;
  };
  void Loop();
  void Work();
  void Wake();

  const Options options_;
  const Handler handler_;
  const Classifier classify_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() and the worker wake the loop
  std::thread thread_, worker_;

  Mutex mu_;
  std::condition_variable_any work_cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::deque<Job> jobs_ GUARDED_BY(mu_);    // at most one per connection
  std::vector<Done> done_ GUARDED_BY(mu_);  // answers for the poll thread

  std::atomic<uint64_t> accepted_{0}, denied_{0}, dropped_{0}, frames_{0}, worker_frames_{0},
      accept_errors_{0}, wakeups_{0}, stalled_{0};
};

}  // namespace skb::bridge

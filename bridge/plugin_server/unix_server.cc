// SPDX-License-Identifier: Apache-2.0
#include "bridge/plugin_server/unix_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "bridge/api/frame.h"
#include "bridge/logging.h"
#include "src/base/strings.h"

namespace skb::bridge {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Errno(std::string_view what) { return StrCat(what, ": ", std::strerror(errno)); }

struct Connection {
  int fd = -1;
  uint64_t id = 0;  // fds are reused; answers from the worker name the connection by id
  pid_t pid = 0;
  uid_t uid = 0;
  api::FrameDecoder decoder;
  std::deque<std::string> pending;  // decoded, not answered yet
  bool in_flight = false;           // a frame of this connection is with the worker
  std::string out;                  // bytes not yet written
  SteadyClock::time_point last_io;  // last byte read or written
};

}  // namespace

UnixServer::UnixServer(Options options, Handler handler, Classifier classify)
    : options_(std::move(options)), handler_(std::move(handler)), classify_(std::move(classify)) {}

UnixServer::~UnixServer() { Stop(); }

Status UnixServer::Start() {
  if (listen_fd_ >= 0) return FailedPreconditionError("server already started");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.path.empty() || options_.path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError(StrCat("socket path '", options_.path, "' is empty or longer than ",
                                       sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, options_.path.c_str(), options_.path.size() + 1);
  if (auto slash = options_.path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = options_.path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return FailedPreconditionError(Errno(StrCat("create socket directory ", dir)));
    }
  }
  // A socket file left by a crashed daemon is removed; a live one is not ours to take.
  struct stat st {};
  if (lstat(options_.path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return FailedPreconditionError(StrCat(options_.path, " exists and is not a socket"));
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live =
        probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      return FailedPreconditionError(StrCat("another process already serves on ", options_.path));
    }
    unlink(options_.path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return UnavailableError(Errno("socket"));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Status s = FailedPreconditionError(Errno(StrCat("bind ", options_.path)));
    close(fd);
    return s;
  }
  // Permissions are set before listen(): until then every connect() is refused.
  if (chmod(options_.path.c_str(), 0600) != 0 ||
      (options_.owner_uid && chown(options_.path.c_str(), *options_.owner_uid, -1) != 0)) {
    Status s = FailedPreconditionError(Errno(StrCat("set owner/mode of ", options_.path)));
    close(fd);
    unlink(options_.path.c_str());
    return s;
  }
  if (listen(fd, 128) != 0) {
    Status s = UnavailableError(Errno("listen"));
    close(fd);
    unlink(options_.path.c_str());
    return s;
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    close(fd);
    unlink(options_.path.c_str());
    return UnavailableError(Errno("eventfd"));
  }
  listen_fd_ = fd;
  {
    MutexLock lock(&mu_);
    stop_ = false;
  }
  worker_ = std::thread([this] { Work(); });
  thread_ = std::thread([this] { Loop(); });
  Logger("plugin")->info("listening socket={} mode=0600 owner_uid={}", options_.path,
                         options_.owner_uid ? static_cast<int64_t>(*options_.owner_uid)
                                            : static_cast<int64_t>(geteuid()));
  return OkStatus();
}

void UnixServer::Stop() {
  if (listen_fd_ < 0) return;
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  Wake();
  if (thread_.joinable()) thread_.join();
  if (worker_.joinable()) worker_.join();
  close(listen_fd_);
  close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
  {
    MutexLock lock(&mu_);
    jobs_.clear();
    done_.clear();
  }
  unlink(options_.path.c_str());
}

void UnixServer::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

UnixServer::Stats UnixServer::stats() const {
  return {.accepted = accepted_.load(),
          .denied = denied_.load(),
          .dropped = dropped_.load(),
          .frames = frames_.load(),
          .worker_frames = worker_frames_.load(),
          .accept_errors = accept_errors_.load(),
          .wakeups = wakeups_.load(),
          .stalled = stalled_.load()};
}

void UnixServer::Work() {
  pthread_setname_np(pthread_self(), "plugin-queries");
  for (;;) {
    Job job;
    {
      MutexLock lock(&mu_);
      while (!stop_ && jobs_.empty()) work_cv_.wait(mu_);
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    HandleResult r = handler_(job.frame, job.pid);
    {
      MutexLock lock(&mu_);
      done_.push_back({job.fd, job.conn_id, std::move(r)});
    }
    Wake();
  }
}

void UnixServer::Loop() {
  pthread_setname_np(pthread_self(), "plugin-server");
  auto log = Logger("plugin");
  std::map<int, Connection> conns;
  uint64_t next_id = 1;
  auto drop = [&](std::map<int, Connection>::iterator it, std::string_view reason) {
    log->warn("connection_dropped pid={} uid={} reason=\"{}\"", it->second.pid, it->second.uid,
              reason);
    ++dropped_;
    close(it->first);
    return conns.erase(it);
  };
  // Queues a handler's answer for writing; false: the connection must be dropped.
  auto answer = [&](Connection& c, const HandleResult& h, std::string* why) {
    if (h.response.empty() || !api::EncodeFrame(h.response, &c.out, api::kMaxQueryResponseSize)) {
      *why = h.drop_reason.empty() ? "no response" : h.drop_reason;
      return false;
    }
    return true;
  };
  // Reads what the peer sent, unless the connection already holds its bound.
  auto wants_read = [&](const Connection& c) {
    return c.pending.size() < options_.max_pending_frames &&
           c.decoder.buffered() < options_.max_buffered_bytes;
  };
  // Has a frame it may answer now (without waiting for the peer or the worker).
  auto runnable = [&](const Connection& c) {
    return !c.in_flight && !c.pending.empty() && c.out.size() <= options_.max_buffered_bytes;
  };
  // Waits on the peer: half a frame it must finish, or answers it must read. Not while the
  // worker has its request: a client may well wait for that answer before sending more.
  auto waits_on_peer = [&](const Connection& c) {
    return !c.out.empty() ||
           (!c.in_flight && c.pending.empty() && c.decoder.buffered() > 0 && wants_read(c));
  };
  // Decodes, answers up to max_frames_per_wakeup frames, writes; false: dropped (`why`).
  auto serve = [&](Connection& c, std::string* why) {
    std::string frame;
    while (c.pending.size() < options_.max_pending_frames) {
      auto r = c.decoder.Next(&frame);
      if (r == api::FrameDecoder::Result::kNeedMore) break;
      if (r == api::FrameDecoder::Result::kError) {
        *why = c.decoder.error();
        return false;
      }
      c.pending.push_back(std::move(frame));
    }
    for (size_t n = 0; n < options_.max_frames_per_wakeup && runnable(c); ++n) {
      std::string f = std::move(c.pending.front());
      c.pending.pop_front();
      ++frames_;
      if (classify_ && classify_(f) == Lane::kWorker) {
        ++worker_frames_;
        c.in_flight = true;
        {
          MutexLock lock(&mu_);
          jobs_.push_back({c.fd, c.id, static_cast<uint32_t>(c.pid), std::move(f)});
        }
        work_cv_.notify_one();
        break;
      }
      if (!answer(c, handler_(f, static_cast<uint32_t>(c.pid)), why)) return false;
    }
    if (!c.out.empty()) {
      ssize_t n = write(c.fd, c.out.data(), c.out.size());
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        c.last_io = SteadyClock::now();
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        *why = Errno("write");
        return false;
      }
    }
    return true;
  };

  std::vector<pollfd> fds;
  char buf[16 * 1024];
  SteadyClock::time_point accept_resume{};  // listening fd not polled before this
  uint64_t episode_failures = 0;            // accept4() failures since the last success
  for (;;) {
    const auto now = SteadyClock::now();
    const bool accept_paused = now < accept_resume;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accept_paused ? -1 : listen_fd_, POLLIN, 0});
    int timeout_ms = -1;
    auto until = [&](SteadyClock::time_point t) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
      const int v = static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
      timeout_ms = timeout_ms < 0 ? v : std::min(timeout_ms, v);
    };
    if (accept_paused) until(accept_resume);
    for (const auto& [fd, c] : conns) {
      short events = 0;
      if (wants_read(c)) events |= POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      // An fd with nothing to wait for is left out: a hung-up peer would wake poll() at once.
      fds.push_back({events == 0 ? -1 : fd, events, 0});
      if (runnable(c)) timeout_ms = 0;
      if (waits_on_peer(c)) until(c.last_io + options_.stall_timeout);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      log->error("poll_failed error=\"{}\"", std::strerror(errno));
      break;
    }
    ++wakeups_;
    if (fds[0].revents != 0) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof(count));
      std::vector<Done> done;
      {
        MutexLock lock(&mu_);
        if (stop_) break;
        done.swap(done_);
      }
      for (Done& d : done) {
        auto it = conns.find(d.fd);
        if (it == conns.end() || it->second.id != d.conn_id) continue;  // gone meanwhile
        it->second.in_flight = false;
        it->second.last_io = SteadyClock::now();  // the stall clock starts with the answer
        std::string why;
        if (!answer(it->second, d.result, &why)) drop(it, why);
      }
    }
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) {
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            ++accept_errors_;
            if (episode_failures++ == 0) {
              log->warn("accept_failed error=\"{}\" connections={} backoff_ms={}",
                        std::strerror(errno), conns.size(), options_.accept_backoff.count());
            }
            accept_resume = SteadyClock::now() + options_.accept_backoff;
          }
          break;
        }
        if (episode_failures > 0) {
          log->info("accept_recovered failed_accepts={}", episode_failures);
          episode_failures = 0;
        }
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
          log->warn("peer_denied reason=\"SO_PEERCRED failed: {}\"", std::strerror(errno));
          ++denied_;
          close(cfd);
          continue;
        }
        const bool allowed =
            cred.uid == 0 || cred.uid == geteuid() || options_.allowed_uids.count(cred.uid) != 0;
        if (!allowed) {
          log->warn("peer_denied pid={} uid={} reason=\"uid not allowed\"", cred.pid, cred.uid);
          ++denied_;
          close(cfd);
          continue;
        }
        if (conns.size() >= options_.max_connections) {
          log->warn("peer_denied pid={} uid={} reason=\"too many connections ({})\"", cred.pid,
                    cred.uid, conns.size());
          ++denied_;
          close(cfd);
          continue;
        }
        ++accepted_;
        Connection& c = conns[cfd];
        c.fd = cfd;
        c.id = next_id++;
        c.pid = cred.pid;
        c.uid = cred.uid;
        c.last_io = SteadyClock::now();
        log->debug("connection_accepted pid={} uid={}", cred.pid, cred.uid);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      auto it = conns.find(fds[i].fd);
      if (it == conns.end()) continue;
      Connection& c = it->second;
      if (fds[i].revents & (POLLERR | POLLNVAL)) {
        drop(it, "socket error");
        continue;
      }
      if (fds[i].revents & (POLLIN | POLLHUP)) {
        ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          // The peer closed: normal for a plugin shutting down; no drop counted.
          log->debug("connection_closed pid={}", c.pid);
          close(c.fd);
          conns.erase(it);
          continue;
        }
        if (n > 0) {
          c.decoder.Append(buf, static_cast<size_t>(n));
          c.last_io = SteadyClock::now();
        }
      }
    }
    // Every connection gets its turn (also those the worker just answered, or with frames
    // left from the last turn), then the stalled ones go.
    const auto after = SteadyClock::now();
    for (auto it = conns.begin(); it != conns.end();) {
      std::string why;
      if (!serve(it->second, &why)) {
        it = drop(it, why);
      } else if (waits_on_peer(it->second) &&
                 after - it->second.last_io >= options_.stall_timeout) {
        ++stalled_;
        it = drop(it, it->second.out.empty() ? "partial frame stalled"
                                             : "peer does not read its answers");
      } else {
        ++it;
      }
    }
  }
  for (auto& [fd, c] : conns) close(fd);
}

}  // namespace skb::bridge

#include "bridge/plugin_server/unix_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "bridge/api/frame.h"
#include "bridge/logging.h"
#include "src/base/strings.h"

namespace skb::bridge {
namespace {

std::string Errno(std::string_view what) { return StrCat(what, ": ", std::strerror(errno)); }

struct Connection {
  int fd = -1;
  pid_t pid = 0;
  uid_t uid = 0;
  api::FrameDecoder decoder;
  std::string out;  // bytes not yet written
};

}  // namespace

UnixServer::UnixServer(Options options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

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
  thread_ = std::thread([this] { Loop(); });
  Logger("plugin")->info("listening socket={} mode=0600 owner_uid={}", options_.path,
                         options_.owner_uid ? static_cast<int64_t>(*options_.owner_uid)
                                            : static_cast<int64_t>(geteuid()));
  return OkStatus();
}

void UnixServer::Stop() {
  if (listen_fd_ < 0) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
  unlink(options_.path.c_str());
}

UnixServer::Stats UnixServer::stats() const {
  return {accepted_.load(), denied_.load(), dropped_.load(), frames_.load()};
}

void UnixServer::Loop() {
  pthread_setname_np(pthread_self(), "plugin-server");
  auto log = Logger("plugin");
  std::map<int, Connection> conns;
  auto drop = [&](int fd, std::string_view reason) {
    auto it = conns.find(fd);
    if (it != conns.end()) {
      log->warn("connection_dropped pid={} uid={} reason=\"{}\"", it->second.pid, it->second.uid,
                reason);
      conns.erase(it);
    }
    ++dropped_;
    close(fd);
  };
  std::vector<pollfd> fds;
  char buf[16 * 1024];
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& [fd, c] : conns) {
      fds.push_back({fd, static_cast<short>(c.out.empty() ? POLLIN : (POLLIN | POLLOUT)), 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      log->error("poll_failed error=\"{}\"", std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;  // Stop()
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) break;
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
        c.pid = cred.pid;
        c.uid = cred.uid;
        log->debug("connection_accepted pid={} uid={}", cred.pid, cred.uid);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      const int fd = fds[i].fd;
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Connection& c = it->second;
      if (fds[i].revents & (POLLERR | POLLNVAL)) {
        drop(fd, "socket error");
        continue;
      }
      if (fds[i].revents & (POLLIN | POLLHUP)) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          // The peer closed: normal for a plugin shutting down; no drop counted.
          log->debug("connection_closed pid={}", c.pid);
          conns.erase(it);
          close(fd);
          continue;
        }
        if (n > 0) c.decoder.Append(buf, static_cast<size_t>(n));
        std::string frame;
        bool dropped = false;
        for (;;) {
          auto r = c.decoder.Next(&frame);
          if (r == api::FrameDecoder::Result::kNeedMore) break;
          if (r == api::FrameDecoder::Result::kError) {
            drop(fd, c.decoder.error());
            dropped = true;
            break;
          }
          ++frames_;
          HandleResult h = handler_(frame, static_cast<uint32_t>(c.pid));
          if (h.response.empty() ||
              !api::EncodeFrame(h.response, &c.out, api::kMaxQueryResponseSize)) {
            drop(fd, h.drop_reason.empty() ? "no response" : h.drop_reason);
            dropped = true;
            break;
          }
        }
        if (dropped) continue;
      }
      if (!c.out.empty()) {
        ssize_t n = write(fd, c.out.data(), c.out.size());
        if (n > 0) {
          c.out.erase(0, static_cast<size_t>(n));
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          drop(fd, Errno("write"));
          continue;
        }
        if (c.out.size() > 2 * size_t{api::kMaxQueryResponseSize}) {
          drop(fd, "peer does not read its answers");
        }
      }
    }
  }
  for (auto& [fd, c] : conns) close(fd);
}

}  // namespace skb::bridge

// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/daemon_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bridge/api/frame.h"
#include "src/base/strings.h"

namespace skb::bridge::cli {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

std::string DefaultSocketPath() {
  const char* env = std::getenv("SKB_BRIDGE_SOCKET");
  return env != nullptr && *env != '\0' ? env : "/run/slurm-k8s-bridge/bridge.sock";
}

DaemonConnection::DaemonConnection(std::string socket_path, std::chrono::milliseconds timeout)
    : path_(std::move(socket_path)), timeout_(timeout) {}

StatusOr<api::v1::Response> DaemonConnection::Call(api::v1::Request request) const {
  const auto deadline = Clock::now() + timeout_;
  request.set_protocol_version(api::v1::PROTOCOL_VERSION_1);
  request.set_request_id(1);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError(StrCat("socket path too long: ", path_));
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return UnavailableError(StrCat("socket: ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    if (e == EACCES) {
      return PermissionDeniedError(StrCat("cannot connect to the daemon at ", path_,
                                          ": permission denied (run as root or as the "
                                          "daemon's user)"));
    }
    return UnavailableError(StrCat("cannot connect to the daemon at ", path_, ": ",
                                   std::strerror(e),
                                   " (is slurm-k8s-bridge running? set --socket or "
                                   "$SKB_BRIDGE_SOCKET)"));
  }
  std::string out;
  if (!api::EncodeFrame(request.SerializeAsString(), &out)) {
    return InvalidArgumentError("request too large");
  }
  size_t sent = 0;
  api::FrameDecoder decoder(api::kMaxQueryResponseSize);
  std::string frame;
  char buf[64 * 1024];
  for (;;) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    int ms = RemainingMs(deadline);
    if (ms == 0) {
      return UnavailableError(
          StrCat("the daemon at ", path_, " did not answer within ", timeout_.count(), " ms"));
    }
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(StrCat("poll: ", std::strerror(errno)));
    if (r == 0) continue;
    if ((p.revents & POLLOUT) && sent < out.size()) {
      ssize_t n = write(fd, out.data() + sent, out.size() - sent);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return UnavailableError(StrCat("write to the daemon: ", std::strerror(errno)));
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        return UnavailableError(StrCat("the daemon at ", path_,
                                       " closed the connection (it refuses this user, or "
                                       "does not know this request; see its log)"));
      }
      if (n > 0) decoder.Append(buf, static_cast<size_t>(n));
      auto d = decoder.Next(&frame);
      if (d == api::FrameDecoder::Result::kError) {
        return InternalError(StrCat("bad answer from the daemon: ", decoder.error()));
      }
      if (d == api::FrameDecoder::Result::kFrame) break;
    }
  }
  api::v1::Response resp;
  if (!resp.ParseFromString(frame)) return InternalError("undecodable answer from the daemon");
  return resp;
}

}  // namespace skb::bridge::cli

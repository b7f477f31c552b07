// SPDX-License-Identifier: Apache-2.0
#include "slurm-plugin/plugin_core.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bridge/api/frame.h"

namespace skb::plugin {
namespace {

namespace v1 = ::skb::api::v1;
using Clock = std::chrono::steady_clock;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

bool ParsePluginConfig(std::string_view text, PluginConfig* out, std::string* error) {
  PluginConfig cfg;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      *error = "line " + std::to_string(line_no) + ": expected Key=Value";
      return false;
    }
    std::string key(Trim(line.substr(0, eq)));
    std::string value(Trim(line.substr(eq + 1)));
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key == "socketpath") {
      if (value.empty() || value.size() >= sizeof(sockaddr_un::sun_path) || value[0] != '/') {
        *error = "line " + std::to_string(line_no) +
                 ": SocketPath must be an absolute path of "
                 "at most 107 bytes";
        return false;
      }
      cfg.socket_path = value;
    } else if (key == "timeoutms") {
      char* end = nullptr;
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || v < 1 || v > 1000) {
        *error = "line " + std::to_string(line_no) + ": TimeoutMs must be 1..1000";
        return false;
      }
      cfg.budget = std::chrono::milliseconds(v);
    } else if (key == "failurepolicy") {
      if (value != "open" && value != "closed") {
        *error = "line " + std::to_string(line_no) + ": FailurePolicy must be open or closed";
        return false;
      }
      cfg.fail_closed = value == "closed";
    } else {
      *error = "line " + std::to_string(line_no) + ": unknown key '" + key + "'";
      return false;
    }
  }
  *out = cfg;
  return true;
}

bool InterpretAdmitResponse(std::string_view frame, uint64_t request_id, v1::AdmitResponse* out,
                            std::string* why) {
  v1::Response resp;
  if (!resp.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    *why = "undecodable response";
    return false;
  }
  if (resp.request_id() != request_id) {
    *why = "response to request " + std::to_string(resp.request_id()) + ", expected " +
           std::to_string(request_id);
    return false;
  }
  if (resp.has_error()) {
    *why = "daemon error: " + resp.error().message().substr(0, 200);
    return false;
  }
  if (!resp.has_admit() || (resp.admit().decision() != v1::AdmitResponse::ACCEPT &&
                            resp.admit().decision() != v1::AdmitResponse::REJECT)) {
    *why = "response carries no admission decision";
    return false;
  }
  if (resp.admit().user_message().size() > 4096 || resp.admit().admin_comment().size() > 8192) {
    *why = "response fields exceed their limits";
    return false;
  }
  *out = resp.admit();
  return true;
}

BridgeConnection::BridgeConnection(std::string config_path, LogFn log)
    : config_path_(std::move(config_path)), log_(log) {}

BridgeConnection::~BridgeConnection() { Stop(); }

PluginConfig BridgeConnection::config() const {
  std::lock_guard<std::timed_mutex> lock(mu_);
  return config_;
}

bool BridgeConnection::ReloadConfig() {
  struct stat st {};
  if (stat(config_path_.c_str(), &st) != 0) {
    if (config_mtime_.tv_sec != -1) {
      config_mtime_ = {-1, 0};
      log_(false, "no config file " + config_path_ +
                      "; using defaults socket=" + config().socket_path +
                      " timeout_ms=" + std::to_string(config().budget.count()) +
                      " policy=" + (config().fail_closed ? "closed" : "open"));
    }
    return false;
  }
  if (st.st_mtim.tv_sec == config_mtime_.tv_sec && st.st_mtim.tv_nsec == config_mtime_.tv_nsec) {
    return false;
  }
  config_mtime_ = st.st_mtim;
  std::ifstream in(config_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  PluginConfig parsed;
  std::string error;
  if (!ParsePluginConfig(ss.str().substr(0, 64 * 1024), &parsed, &error)) {
    log_(true, "config " + config_path_ + " rejected (keeping the previous one): " + error);
    return false;
  }
  bool path_changed = false;
  {
    std::lock_guard<std::timed_mutex> lock(mu_);
    path_changed = parsed.socket_path != config_.socket_path;
    config_ = parsed;
    if (path_changed) CloseLocked();
  }
  log_(false, "config loaded from " + config_path_ + ": socket=" + parsed.socket_path +
                  " timeout_ms=" + std::to_string(parsed.budget.count()) +
                  " policy=" + (parsed.fail_closed ? "closed" : "open"));
  return path_changed;
}

int BridgeConnection::ConnectNow(const std::string& path, std::string* why) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  // A Unix-socket connect completes or fails at once (EAGAIN when the backlog is full).
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *why = "connect " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

void BridgeConnection::CloseLocked() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void BridgeConnection::Start() {
  ReloadConfig();
  thread_ = std::thread([this] { Loop(); });
}

void BridgeConnection::Stop() {
  {
    std::lock_guard<std::mutex> lock(thread_mu_);
    stop_ = true;
  }
  thread_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::timed_mutex> lock(mu_);
  CloseLocked();
}

void BridgeConnection::Loop() {
  pthread_setname_np(pthread_self(), "k8s_bridge");
  bool was_connected = false;
  std::string last_error;
  std::unique_lock<std::mutex> tl(thread_mu_);
  while (!stop_) {
    thread_cv_.wait_for(tl, std::chrono::milliseconds(200), [this] { return stop_ || kick_; });
    if (stop_) break;
    kick_ = false;
    tl.unlock();
    ReloadConfig();
    std::string path;
    bool connected;
    {
      std::lock_guard<std::timed_mutex> lock(mu_);
      connected = fd_ >= 0;
      path = config_.socket_path;
    }
    if (!connected) {
      std::string why;
      int fd = ConnectNow(path, &why);
      if (fd >= 0) {
        std::lock_guard<std::timed_mutex> lock(mu_);
        if (fd_ < 0 && config_.socket_path == path) {
          fd_ = fd;
          connected = true;
        } else {
          close(fd);
        }
      } else if (why != last_error) {
        log_(true, "daemon unreachable: " + why);
        last_error = why;
      }
    }
    if (connected && !was_connected) {
      log_(false, "connected to daemon at " + path);
      last_error.clear();
    }
    was_connected = connected;
    tl.lock();
  }
}

BridgeConnection::Outcome BridgeConnection::Admit(const v1::JobDescription& job,
                                                  v1::AdmitResponse* out, std::string* why) {
  std::unique_lock<std::timed_mutex> lock(mu_, std::defer_lock);
  const auto budget = std::chrono::milliseconds(5);
  if (!lock.try_lock_for(budget)) {
    ++timeouts_;
    *why = "plugin busy (lock not acquired within budget)";
    return Outcome::kUnavailable;
  }
  const auto deadline = Clock::now() + config_.budget;
  auto fail = [&](std::string reason, bool timeout) {
    CloseLocked();
    if (timeout) ++timeouts_;
    *why = std::move(reason);
    {
      std::lock_guard<std::mutex> tl(thread_mu_);
      kick_ = true;
    }
    thread_cv_.notify_all();
    return Outcome::kUnavailable;
  };
  // A daemon restart leaves a dead connection behind: detect it and reconnect inline (a
  // Unix-socket connect does not block).
  if (fd_ >= 0) {
    char probe;
    ssize_t n = recv(fd_, &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) CloseLocked();
  }
  if (fd_ < 0) {
    std::string err;
    fd_ = ConnectNow(config_.socket_path, &err);
    if (fd_ < 0) return fail("daemon not reachable (" + err + ")", false);
  }
  v1::Request req;
  req.set_protocol_version(v1::PROTOCOL_VERSION_1);
  req.set_request_id(next_id_++);
  *req.mutable_admit()->mutable_job() = job;
  auto* c = req.mutable_admit()->mutable_counters();
  c->set_admitted(admitted_);
  c->set_rejected(rejected_);
  c->set_fail_open(fail_open_);
  c->set_fail_closed(fail_closed_);
  c->set_timeouts(timeouts_);
  c->set_protocol_errors(protocol_errors_);
  std::string wire;
  if (!api::EncodeFrame(req.SerializeAsString(), &wire)) {
    ++protocol_errors_;
    *why = "request too large to send";
    return Outcome::kUnavailable;
  }
  size_t sent = 0;
  while (sent < wire.size()) {
    ssize_t n = send(fd_, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      pollfd p{fd_, POLLOUT, 0};
      int ms = RemainingMs(deadline);
      if (ms == 0 || poll(&p, 1, ms) <= 0) {
        return fail("timed out sending to the daemon (budget " +
                        std::to_string(config_.budget.count()) + "ms)",
                    true);
      }
      continue;
    }
    return fail(std::string("send: ") + std::strerror(errno), false);
  }
  api::FrameDecoder decoder;
  std::string frame;
  char buf[4096];
  for (;;) {
    auto r = decoder.Next(&frame);
    if (r == api::FrameDecoder::Result::kFrame) break;
    if (r == api::FrameDecoder::Result::kError) {
      ++protocol_errors_;
      return fail("bad frame from the daemon: " + decoder.error(), false);
    }
    pollfd p{fd_, POLLIN, 0};
    int ms = RemainingMs(deadline);
    int pr = ms == 0 ? 0 : poll(&p, 1, ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) {
      return fail("no answer within the budget of " + std::to_string(config_.budget.count()) + "ms",
                  true);
    }
    ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return fail("the daemon closed the connection", false);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return fail(std::string("recv: ") + std::strerror(errno), false);
    }
    decoder.Append(buf, static_cast<size_t>(n));
  }
  if (!InterpretAdmitResponse(frame, req.request_id(), out, why)) {
    ++protocol_errors_;
    return fail(*why, false);
  }
  return Outcome::kAnswered;
}

}  // namespace skb::plugin

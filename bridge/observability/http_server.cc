#include "bridge/observability/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "bridge/observability/metrics.h"
#include "src/base/strings.h"

namespace skb::observability {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Errno(int err) { return std::strerror(err); }

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string Serialize(const HttpResponse& r, bool head) {
  std::string out =
      StrCat("HTTP/1.1 ", r.status, " ", ReasonPhrase(r.status),
             "\r\nContent-Type: ", r.content_type, "\r\nContent-Length: ", r.body.size(), "\r\n");
  if (r.status == 405) out.append("Allow: GET, HEAD\r\n");
  out.append("Cache-Control: no-store\r\nConnection: close\r\n\r\n");
  if (!head) out.append(r.body);
  return out;
}

HttpResponse Plain(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

StatusOr<HostPort> ParseHostPort(std::string_view address) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        StrCat("http address '", address, "': ", why, " (want host:port, [ipv6]:port or :port)"));
  };
  HostPort hp;
  std::string_view port;
  if (address.starts_with('[')) {
    size_t close = address.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    hp.host = std::string(address.substr(1, close - 1));
    if (hp.host.empty()) return bad("empty IPv6 address");
    if (close + 1 >= address.size() || address[close + 1] != ':') return bad("missing ':port'");
    port = address.substr(close + 2);
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad("missing ':port'");
    hp.host = std::string(address.substr(0, colon));
    if (hp.host.find(':') != std::string::npos) return bad("IPv6 addresses need brackets");
    port = address.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad("port must be a number 0-65535");
  }
  unsigned value = 0;
  std::from_chars(port.data(), port.data() + port.size(), value);
  if (value > 65535) return bad("port must be a number 0-65535");
  hp.port = static_cast<uint16_t>(value);
  return hp;
}

struct HttpServer::Connection {
  int fd = -1;
  SteadyClock::time_point deadline;
  std::string in;
  std::string out;
  size_t written = 0;
  bool writing = false;

  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
};

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string path, Handler handler) {
  handlers_[std::move(path)] = std::move(handler);
}

Status HttpServer::Start() {
  if (thread_.joinable() || listen_fd_ >= 0) {
    return FailedPreconditionError("http server already started");
  }
  ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options_.address));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_text = std::to_string(hp.port);
  int gai =
      ::getaddrinfo(hp.host.empty() ? nullptr : hp.host.c_str(), port_text.c_str(), &hints, &res);
  if (gai != 0) {
    return InvalidArgumentError(
        StrCat("http address '", options_.address, "': ", ::gai_strerror(gai)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  // For ":port", prefer one dual-stack IPv6 socket (IPV6_V6ONLY off) that also takes IPv4;
  // hosts without IPv6 fall back to the IPv4 wildcard.
  std::vector<const addrinfo*> candidates;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) candidates.push_back(ai);
  if (hp.host.empty()) {
    std::stable_partition(candidates.begin(), candidates.end(),
                          [](const addrinfo* ai) { return ai->ai_family == AF_INET6; });
  }
  std::string last_error = "no address";
  int fd = -1;
  for (const addrinfo* ai : candidates) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = Errno(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6) {
      int v6only = hp.host.empty() ? 0 : 1;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    }
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) break;
    last_error = Errno(errno);
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) {
    return UnavailableError(
        StrCat("http: cannot listen on '", options_.address, "': ", last_error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  if (::pipe2(wake_fds_, O_NONBLOCK | O_CLOEXEC) != 0) {
    int err = errno;
    ::close(fd);
    return UnavailableError(StrCat("http: pipe: ", Errno(err)));
  }
  listen_fd_ = fd;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
  return OkStatus();
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    stopping_ = true;
    char b = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fds_[1], &b, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fds_[0], &wake_fds_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

HttpResponse HttpServer::Dispatch(const HttpRequest& request) const {
  auto it = handlers_.find(request.path);
  if (it == handlers_.end()) return Plain(404, "not found\n");
  try {
    return it->second(request);
  } catch (...) {  // a throwing handler must not take the daemon down
    return Plain(500, "internal error\n");
  }
}

namespace {

// Parses the request head; on error fills `error` with the response to send instead.
bool ParseRequest(std::string_view head, HttpRequest* req, HttpResponse* error) {
  size_t eol = head.find_first_of("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    *error = Plain(400, "malformed request line\n");
    return false;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!version.starts_with("HTTP/1.")) {
    *error = Plain(505, "only HTTP/1.x is supported\n");
    return false;
  }
  if (method != "GET" && method != "HEAD") {
    *error = Plain(405, "only GET and HEAD are supported\n");
    return false;
  }
  if (!target.starts_with('/')) {
    *error = Plain(400, "request target must be a path\n");
    return false;
  }
  size_t q = target.find('?');
  req->method = std::string(method);
  req->path = std::string(target.substr(0, q));
  req->query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  return true;
}

}  // namespace

void HttpServer::Run() {
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<pollfd> fds;
  // Builds the response for a connection whose request head is complete (or too large).
  auto respond = [&](Connection& c, bool too_large) {
    HttpRequest req;
    HttpResponse resp;
    bool head = false;
    if (too_large) {
      resp = Plain(431, "request too large\n");
    } else if (ParseRequest(c.in, &req, &resp)) {
      head = req.method == "HEAD";
      resp = Dispatch(req);
    }
    c.out = Serialize(resp, head);
    c.in.clear();
    c.writing = true;
  };

  while (!stopping_.load()) {
    fds.clear();
    fds.push_back({wake_fds_[0], POLLIN, 0});
    bool accepting = conns.size() < options_.max_connections;
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    auto now = SteadyClock::now();
    int timeout_ms = -1;
    for (const auto& c : conns) {
      fds.push_back({c->fd, static_cast<short>(c->writing ? POLLOUT : POLLIN), 0});
      auto left = std::chrono::ceil<std::chrono::milliseconds>(c->deadline - now).count();
      int ms = static_cast<int>(std::max<int64_t>(0, left));
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) break;  // cannot happen with valid fds; stop serving
    if (stopping_.load() || (fds[0].revents & POLLIN)) break;
    now = SteadyClock::now();

    // Existing connections first (their pollfd entries start at index 2).
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = *conns[i];
      short ev = fds[i + 2].revents;
      bool close_it = false;
      if (ev & (POLLERR | POLLNVAL)) {
        close_it = true;
      } else if (!c.writing && (ev & (POLLIN | POLLHUP))) {
        char buf[4096];
        ssize_t got = ::recv(c.fd, buf, sizeof buf, 0);
        if (got > 0) {
          c.in.append(buf, static_cast<size_t>(got));
          size_t end = c.in.find("\r\n\r\n");
          if (end == std::string::npos) end = c.in.find("\n\n");
          if (end != std::string::npos && end <= options_.max_request_bytes) {
            c.in.resize(end);
            respond(c, false);
          } else if (c.in.size() > options_.max_request_bytes) {
            respond(c, true);
          }
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          close_it = true;  // the peer left before finishing its request
        }
      }
      if (!close_it && c.writing && ((ev & (POLLOUT | POLLIN | POLLHUP)) != 0 || c.written == 0)) {
        while (c.written < c.out.size()) {
          ssize_t put =
              ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
          if (put > 0) {
            c.written += static_cast<size_t>(put);
          } else {
            if (put < 0 && (errno == EAGAIN || errno == EINTR)) break;
            close_it = true;
            break;
          }
        }
        if (c.written == c.out.size()) {
          ::shutdown(c.fd, SHUT_WR);
          close_it = true;
        }
      }
      if (!close_it && now >= c.deadline) close_it = true;  // too slow: drop it
      if (close_it) conns[i].reset();
    }
    std::erase_if(conns, [](const auto& c) { return c == nullptr; });

    if (accepting && (fds[1].revents & POLLIN)) {
      while (conns.size() < options_.max_connections) {
        int cfd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) break;  // EAGAIN, or a connection reset before we got to it
        auto c = std::make_unique<Connection>();
        c->fd = cfd;
        c->deadline = now + options_.connection_timeout;
        conns.push_back(std::move(c));
      }
    }
  }
  conns.clear();
}

void AddStandardHandlers(HttpServer* server, const Registry* registry,
                         std::function<Status()> readiness) {
  server->Handle("/metrics", [registry](const HttpRequest&) {
    HttpResponse r;
    r.content_type = std::string(kExpositionContentType);
    registry->RenderTo(&r.body);
    return r;
  });
  server->Handle("/healthz", [](const HttpRequest&) { return Plain(200, "ok\n"); });
  server->Handle("/readyz", [readiness = std::move(readiness)](const HttpRequest&) {
    Status s = readiness ? readiness() : OkStatus();
    if (s.ok()) return Plain(200, "ok\n");
    return Plain(503, StrCat("not ready: ", s.message(), "\n"));
  });
}

}  // namespace skb::observability

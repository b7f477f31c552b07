// SPDX-License-Identifier: Apache-2.0
#include "bridge/observability/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "bridge/observability/metrics.h"
#include "src/base/strings.h"

namespace skb::observability {
namespace {

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

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(std::string path, Handler handler) {
  handlers_[std::move(path)] = std::move(handler);
}

namespace {

// civetweb's `listening_ports` for a parsed address: numeric hosts as they are ("[::1]"
// bracketed), names resolved (the first address getaddrinfo gives), and every interface as
// "+port" (one dual-stack socket: IPv6 and IPv4).
// `wake_host` is set to the numeric address a local connection reaches the listener on.
StatusOr<std::string> ListeningPort(const std::string& address, const HostPort& hp,
                                    std::string* wake_host) {
  if (hp.host.empty()) {
    *wake_host = "127.0.0.1";
    return StrCat("+", hp.port);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int gai = ::getaddrinfo(hp.host.c_str(), "0", &hints, &res);
  if (gai != 0)
    return InvalidArgumentError(StrCat("http address '", address, "': ", ::gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
  char host[INET6_ADDRSTRLEN] = {};
  if (res->ai_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(res->ai_addr)->sin6_addr, host,
                sizeof host);
    *wake_host = host;
    return StrCat("[", host, "]:", hp.port);
  }
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr, host,
              sizeof host);
  *wake_host = host;
  return StrCat(host, ":", hp.port);
}

// What civetweb says while Start() sets up its ports (on the calling thread): the reason a
// bind failed ("Address already in use") is only in these messages.
thread_local std::string* start_messages = nullptr;

// civetweb's own diagnostics (bad requests, timeouts) go to the log at debug: they are about
// clients, and a scraper hammering the port must not flood the daemon's log.
int LogMessage(const mg_connection*, const char* message) {
  if (start_messages != nullptr)
    StrAppend(start_messages, start_messages->empty() ? "" : "; ", message);
  spdlog::debug("http {}", message);
  return 1;  // handled: civetweb writes nothing itself
}

void Send(mg_connection* conn, const HttpResponse& r, bool head) {
  std::string out =
      StrCat("HTTP/1.1 ", r.status, " ", ReasonPhrase(r.status),
             "\r\nContent-Type: ", r.content_type, "\r\nContent-Length: ", r.body.size(), "\r\n");
  if (r.status == 405) out.append("Allow: GET, HEAD\r\n");
  out.append("Cache-Control: no-store\r\nConnection: close\r\n\r\n");
  if (!head) out.append(r.body);
  mg_write(conn, out.data(), out.size());
}

// Opens and closes a TCP connection to host:port, without waiting for it to be accepted.
void Poke(const std::string& host, uint16_t port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    return;
  }
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  [[maybe_unused]] int r = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len);
  ::close(fd);
}

}  // namespace

int HttpServer::OnRequest(mg_connection* conn, void* self) {
  const mg_request_info* info = mg_get_request_info(conn);
  const auto* server = static_cast<const HttpServer*>(self);
  HttpRequest request;
  request.method = info->request_method != nullptr ? info->request_method : "";
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  request.query = info->query_string != nullptr ? info->query_string : "";
  const bool head = request.method == "HEAD";
  HttpResponse response;
  if (request.method != "GET" && !head) {
    response = Plain(405, "only GET and HEAD\n");
  } else {
    response = server->Dispatch(request);
  }
  Send(conn, response, head);
  return response.status;  // non-zero: civetweb closes the connection (keep-alive is off)
}

HttpResponse HttpServer::Dispatch(const HttpRequest& request) const {
  auto it = handlers_.find(request.path);
  if (it == handlers_.end()) return Plain(404, "not found\n");
  try {
    return it->second(request);
  } catch (const std::exception& e) {
    return Plain(500, StrCat("internal error: ", e.what(), "\n"));
  }
}

Status HttpServer::Start() {
  if (ctx_ != nullptr) return FailedPreconditionError("http server already started");
  ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options_.address));
  ASSIGN_OR_RETURN(std::string ports, ListeningPort(options_.address, hp, &wake_host_));
  const std::string threads = StrCat(std::max<size_t>(options_.max_connections, 1));
  const std::string timeout = StrCat(options_.connection_timeout.count());
  const std::string max_request = StrCat(options_.max_request_bytes);
  const char* config[] = {"listening_ports", ports.c_str(), "num_threads", threads.c_str(),
                          // Accepted connections waiting for a worker (then the backlog).
                          "connection_queue", threads.c_str(), "request_timeout_ms",
                          timeout.c_str(), "max_request_size", max_request.c_str(),
                          "enable_keep_alive", "no", "linger_timeout_ms", "0",
                          // No files are served: only the registered handlers answer.
                          "enable_directory_listing", "no", nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = &LogMessage;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = this;
  init.configuration_options = config;
  // Only the text: `code` is a pointer in civetweb 1.15 (Debian 12) and a number in 1.16
  // (Debian 13), and the library writes it either way.
  char text[256] = {};
  mg_error_data error{};
  error.text = text;
  error.text_buffer_size = sizeof text;
  mg_init_library(0);
  std::string messages;
  start_messages = &messages;
  mg_context* ctx = mg_start2(&init, &error);
  start_messages = nullptr;
  if (ctx == nullptr) {
    mg_exit_library();
    return UnavailableError(StrCat("http: cannot listen on '", options_.address, "': ", text,
                                   messages.empty() ? "" : " (", messages,
                                   messages.empty() ? "" : ")"));
  }
  mg_set_request_handler(ctx, "/", &HttpServer::OnRequest, this);
  mg_server_port bound[2] = {};
  if (mg_get_server_ports(ctx, 2, bound) > 0) port_ = static_cast<uint16_t>(bound[0].port);
  ctx_ = ctx;
  return OkStatus();
}

void HttpServer::Stop() {
  if (ctx_ == nullptr) return;
  // civetweb's accept loop reads its stop flag between polls of up to 2 s; a connection to
  // the listener wakes it at once (a daemon's shutdown, every test's teardown).
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      Poke(wake_host_, port_.load());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  mg_stop(ctx_);  // closes the listener and every connection, joins the workers
  stopped = true;
  waker.join();
  ctx_ = nullptr;
  mg_exit_library();
  port_ = 0;
}

std::optional<std::string_view> QueryValue(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
  }
  return std::nullopt;
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

// SPDX-License-Identifier: Apache-2.0
// The daemon's HTTP server for its operational endpoints (/metrics, /healthz, /readyz), on
// civetweb (Debian's libcivetweb, the server prometheus-cpp's own exposer uses): a pool of
// worker threads, GET and HEAD only, one request per connection (`Connection: close`),
// bounded request size and time. Handlers run on the worker threads and must be quick and
// thread-safe.
//
//   HttpServer server({.address = cfg.server.http_address});
//   AddStandardHandlers(&server, &registry, [&] { return ReadinessStatus(); });
//   RETURN_IF_ERROR(server.Start());   // binds and listens; errors name the address
//   ...
//   server.Stop();                     // closes the listener and every connection; joins
//
// Not prometheus::Exposer itself: it serves registries only, and the probes need two more
// paths on the same port.
//
// Thread-safety: Handle() before Start(); Start()/Stop() from one controlling thread;
// port() from any thread after Start().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::observability {

class Registry;

// "host:port" as in config `server.http_address`: "127.0.0.1:9464", "[::1]:9464",
// "localhost:9464", or ":9464" (every interface, IPv6 and IPv4 where available). Port 0
// asks the kernel for a free port.
struct HostPort {
  std::string host;  // empty = every interface; no brackets
  uint16_t port = 0;
};
StatusOr<HostPort> ParseHostPort(std::string_view address);

struct HttpRequest {
  std::string method;  // "GET" or "HEAD"
  std::string path;    // without the query string
  std::string query;   // after '?', undecoded; may be empty
};

// The value of `key` in a query string (a=1&b=2), undecoded; nullopt when absent.
std::optional<std::string_view> QueryValue(std::string_view query, std::string_view key);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1:9464";
  // A connection must deliver its request headers and take the whole response within this
  // time, or it is closed (slow or idle clients hold a worker at most this long).
  std::chrono::milliseconds connection_timeout{5000};
  // Request line plus headers; larger requests are refused and closed.
  size_t max_request_bytes = 8192;
  // Connections served at once (one worker thread each); further ones wait in civetweb's
  // queue and then in the listen backlog until one of these finishes.
  size_t max_connections = 16;
};

}  // namespace skb::observability

struct mg_connection;
struct mg_context;

namespace skb::observability {

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `path` (exact match) with `handler`. Call before Start().
  void Handle(std::string path, Handler handler);

  // Binds and listens, then serves on a new thread. InvalidArgument for a malformed
  // address; Unavailable when the address cannot be bound (in use, not local, no
  // permission); FailedPrecondition if already started.
  Status Start();
  // Stops serving, closes the listener and all connections, joins the thread. Idempotent.
  void Stop();

  // The bound port (the real one when the address asked for port 0); 0 before Start().
  uint16_t port() const { return port_.load(); }

 private:
  static int OnRequest(mg_connection* conn, void* self);
  HttpResponse Dispatch(const HttpRequest& request) const;

  const HttpServerOptions options_;
  std::map<std::string, Handler, std::less<>> handlers_;
  mg_context* ctx_ = nullptr;
  std::string wake_host_;  // where Stop() connects to wake civetweb's accept loop
  std::atomic<uint16_t> port_{0};
};

// Registers the daemon's three endpoints on `server`:
//   /metrics  the registry's exposition (text format 0.0.4)
//   /healthz  200 "ok" while the process serves at all (liveness)
//   /readyz   200 "ok" when `readiness` returns OK, else 503 with the status message
//             (e.g. "informer caches not synced") as the body
// `registry` must outlive the server; `readiness` runs on a worker thread.
void AddStandardHandlers(HttpServer* server, const Registry* registry,
                         std::function<Status()> readiness);

}  // namespace skb::observability

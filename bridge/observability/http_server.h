// A deliberately small HTTP/1.1 server for the daemon's operational endpoints (/metrics,
// /healthz, /readyz): POSIX sockets, one thread running poll(), GET and HEAD only, one
// request per connection (`Connection: close`), bounded request size and time. It is not a
// general web server: handlers run on the server thread and must be quick.
//
//   HttpServer server({.address = cfg.server.http_address});
//   AddStandardHandlers(&server, &registry, [&] { return ReadinessStatus(); });
//   RETURN_IF_ERROR(server.Start());   // binds and listens; errors name the address
//   ...
//   server.Stop();                     // closes the listener and every connection; joins
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
#include <string>
#include <string_view>
#include <thread>

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

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1:9464";
  // A connection must deliver its request headers and take the whole response within this
  // time, or it is closed (slow or idle clients cannot pin the single thread's resources).
  std::chrono::milliseconds connection_timeout{5000};
  // Request line plus headers; larger requests get 431 and are closed.
  size_t max_request_bytes = 8192;
  // Further connections wait in the listen backlog until one of these finishes.
  size_t max_connections = 64;
};

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
  struct Connection;
  void Run();
  HttpResponse Dispatch(const HttpRequest& request) const;

  const HttpServerOptions options_;
  std::map<std::string, Handler, std::less<>> handlers_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // self-pipe: Stop() wakes poll()
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Registers the daemon's three endpoints on `server`:
//   /metrics  the registry's exposition (text format 0.0.4)
//   /healthz  200 "ok" while the process serves at all (liveness)
//   /readyz   200 "ok" when `readiness` returns OK, else 503 with the status message
//             (e.g. "informer caches not synced") as the body
// `registry` must outlive the server; `readiness` runs on the server thread.
void AddStandardHandlers(HttpServer* server, const Registry* registry,
                         std::function<Status()> readiness);

}  // namespace skb::observability

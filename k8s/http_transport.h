// SPDX-License-Identifier: Apache-2.0
// The HTTP layer under the Kubernetes client: one interface, so the client logic does not
// care how bytes move, and one implementation on libcurl (curl_transport.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;            // path and query, starting with '/': "/api/v1/nodes?limit=500"
  std::string body;            // sent when non-empty
  std::string content_type;    // of the body
  // Whole-request deadline. Zero: the transport's default (RestConfig::timeout). For streams
  // it bounds the whole stream, so callers set it above the server-side timeoutSeconds.
  std::chrono::milliseconds timeout{0};
};

struct HttpResponse {
  long status = 0;          // HTTP status code
  std::string body;         // whole body (Send), or the body of a non-2xx reply (Stream)
  std::string retry_after;  // Retry-After header, if any
};

// Receives a streamed body chunk by chunk; returns false to stop the stream.
using StreamSink = std::function<bool(std::string_view chunk)>;

// Implementations are thread-safe: any number of calls may run concurrently.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends `req` and reads the whole response. Any HTTP status is a response (the caller maps
  // it); errors are transport failures: Unavailable (connection refused/reset, TLS handshake,
  // truncated reply), DeadlineExceeded, FailedPrecondition (certificate rejected, bad client
  // certificate), ResourceExhausted (reply larger than the transport accepts).
  virtual StatusOr<HttpResponse> Send(const HttpRequest& req) = 0;

  // Sends `req` and hands a 2xx body to `sink` as it arrives, never holding more than one
  // chunk. Returns when the server ends the stream, `sink` returns false (OK in both cases),
  // or `*cancel` becomes true (Cancelled; checked at least once a second even when no data
  // flows). A non-2xx body is collected into the returned response instead. A connection
  // dropped mid-stream is Unavailable.
  virtual StatusOr<HttpResponse> Stream(const HttpRequest& req, const StreamSink& sink,
                                        const std::atomic<bool>* cancel) = 0;
};

}  // namespace skb::k8s

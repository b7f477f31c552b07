// SPDX-License-Identifier: Apache-2.0
// HttpTransport on libcurl: TLS verification on by default, CA and client certificate from
// memory (CURLOPT_*_BLOB, no temporary files), HTTP/2 over TLS when the server offers it,
// and connection reuse.
//
// Reuse: finished easy handles go back to a small pool and keep their live connection, so
// consecutive requests skip the TCP and TLS handshakes; a share handle additionally shares
// the DNS cache and TLS sessions between handles. Concurrent requests use separate handles
// (and connections); a watch holds its handle for the stream's lifetime.
//
//   ASSIGN_OR_RETURN(auto transport, CurlTransport::Create(config));
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "k8s/http_transport.h"
#include "k8s/rest_config.h"
#include "k8s/token_source.h"

typedef void CURL;    // NOLINT: libcurl's own spelling, keeps <curl/curl.h> out of this header
typedef void CURLSH;  // NOLINT

namespace skb::k8s {

// Thread-safe.
class CurlTransport final : public HttpTransport {
 public:
  // FailedPrecondition when the config cannot work (no server, cert without key).
  static StatusOr<std::unique_ptr<CurlTransport>> Create(const RestConfig& config);
  ~CurlTransport() override;

  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  StatusOr<HttpResponse> Send(const HttpRequest& req) override;
  StatusOr<HttpResponse> Stream(const HttpRequest& req, const StreamSink& sink,
                                const std::atomic<bool>* cancel) override;

  // Largest whole response Send accepts (a full unpaginated list of a big cluster can be
  // hundreds of MB; beyond this the caller should paginate).
  static constexpr size_t kMaxResponseBytes = 512u << 20;

 private:
  explicit CurlTransport(const RestConfig& config);
  struct Transfer;

  CURL* Acquire();
  void Release(CURL* easy);
  StatusOr<HttpResponse> Perform(const HttpRequest& req, const StreamSink* sink,
                                 const std::atomic<bool>* cancel);

  const RestConfig config_;
  std::string url_base_;    // scheme://host:port requests go to
  std::string connect_to_;  // CURLOPT_CONNECT_TO entry for tls_server_name, or ""
  TokenSource tokens_;
  CURLSH* share_ = nullptr;
  std::mutex share_mu_[4];  // one per curl_lock_data kind we share (see the .cc)
  std::mutex pool_mu_;
  std::vector<CURL*> idle_;  // GUARDED_BY(pool_mu_)
};

}  // namespace skb::k8s

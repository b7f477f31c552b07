// SPDX-License-Identifier: Apache-2.0
// KubeClient over HTTP: builds apiserver requests, rate-limits them client-side (token
// bucket, RestConfig::qps/burst) and maps responses to typed Status values (api_error.h).
//
//   ASSIGN_OR_RETURN(RestConfig cfg, LoadKubeconfig(path, ""));
//   cfg.qps = 20; cfg.burst = 40;
//   ASSIGN_OR_RETURN(std::unique_ptr<KubeClient> client, NewRestClient(cfg));
#pragma once

#include <memory>

#include "k8s/http_transport.h"
#include "k8s/kube_client.h"
#include "k8s/rate_limiter.h"
#include "k8s/rest_config.h"

namespace skb::k8s {

// Thread-safe.
class RestClient final : public KubeClient {
 public:
  RestClient(std::unique_ptr<HttpTransport> transport, const RestConfig& config);

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns, const std::string& name,
                               const std::string& subresource) override;
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const ListOptions& options) override;
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override;
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object, const WriteOptions& options,
                                  const std::string& subresource) override;
  StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options,
                                 const std::string& subresource) override;
  StatusOr<nlohmann::json> Delete(const Resource& r, const std::string& ns, const std::string& name,
                                  const DeleteOptions& options) override;
  StatusOr<nlohmann::json> CreateSubresource(const Resource& r, const std::string& ns,
                                             const std::string& name,
                                             const std::string& subresource,
                                             const nlohmann::json& body) override;
  Status Watch(const Resource& r, const std::string& ns, const ListOptions& options,
               const WatchHandler& handler, const std::atomic<bool>* cancel) override;

 private:
  // Waits for the rate limiter, sends, and turns a non-2xx reply into an error.
  // Decodes a 2xx reply's body (only the `selection` of it when not null).
  StatusOr<nlohmann::json> Call(HttpRequest req, const JsonSelection* selection = nullptr);
  void Throttle();

  std::unique_ptr<HttpTransport> transport_;
  TokenBucket limiter_;
};

// A RestClient on a CurlTransport for `config`.
StatusOr<std::unique_ptr<KubeClient>> NewRestClient(const RestConfig& config);

}  // namespace skb::k8s

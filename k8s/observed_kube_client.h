// SPDX-License-Identifier: Apache-2.0
// A KubeClient decorator that reports every request to observers: as it starts (optional)
// and with its outcome once it returns. The daemon counts requests made in
// skb_kubernetes_api_requests_total at the start (a watch returns only when it ends, so a
// live watch would otherwise never be counted) and answers and failures at the end; the
// list-cache benchmark counts requests by verb. Forwards everything unchanged; thread-safe
// if `inner` and the observers are.
//
//   ObservedKubeClient kube(rest.get(), [&](const RequestInfo& r, const Status& s) { ... },
//                           [&](const RequestInfo& r) { ... });
#pragma once

#include <functional>
#include <string_view>

#include "k8s/kube_client.h"

namespace skb::k8s {

struct RequestInfo {
  std::string_view verb;         // get, list, create, update, patch, delete, watch
  const Resource* resource;      // never null
  std::string_view subresource;  // "" or "status", "eviction", ...
  bool write() const { return verb != "get" && verb != "list" && verb != "watch"; }
};

class ObservedKubeClient final : public KubeClient {
 public:
  // Called once a request returned, with its outcome.
  using Observer = std::function<void(const RequestInfo&, const Status&)>;
  // Called before a request is sent (null: none).
  using StartObserver = std::function<void(const RequestInfo&)>;
  ObservedKubeClient(KubeClient* inner, Observer observer, StartObserver on_start = nullptr)
      : inner_(inner), observer_(std::move(observer)), on_start_(std::move(on_start)) {}

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns, const std::string& name,
                               const std::string& subresource = "") override;
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const ListOptions& options) override;
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options = {}) override;
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object, const WriteOptions& options = {},
                                  const std::string& subresource = "") override;
  StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options = {},
                                 const std::string& subresource = "") override;
  StatusOr<nlohmann::json> Delete(const Resource& r, const std::string& ns, const std::string& name,
                                  const DeleteOptions& options = {}) override;
  StatusOr<nlohmann::json> CreateSubresource(const Resource& r, const std::string& ns,
                                             const std::string& name,
                                             const std::string& subresource,
                                             const nlohmann::json& body) override;
  Status Watch(const Resource& r, const std::string& ns, const ListOptions& options,
               const WatchHandler& handler, const std::atomic<bool>* cancel) override;

 private:
  // Reports the start, makes the request (`call`), reports its outcome.
  template <typename Call>
  auto Observe(std::string_view verb, const Resource& r, std::string_view sub, Call call) {
    const RequestInfo info{verb, &r, sub};
    if (on_start_) on_start_(info);
    auto result = call();
    if constexpr (std::is_same_v<decltype(result), Status>) {
      observer_(info, result);
    } else {
      observer_(info, result.status());
    }
    return result;
  }

  KubeClient* const inner_;
  const Observer observer_;
  const StartObserver on_start_;
};

}  // namespace skb::k8s

// A KubeClient decorator that reports every request's outcome to an observer: the daemon
// counts failed requests in skb_kubernetes_api_errors_total, the write-rate benchmark
// counts writes. Forwards everything unchanged; thread-safe if `inner` and the observer are.
//
//   ObservedKubeClient kube(rest.get(), [&](const RequestInfo& r, const Status& s) { ... });
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
  using Observer = std::function<void(const RequestInfo&, const Status&)>;
  ObservedKubeClient(KubeClient* inner, Observer observer)
      : inner_(inner), observer_(std::move(observer)) {}

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
  template <typename T>
  T Observe(std::string_view verb, const Resource& r, std::string_view sub, T result) {
    if constexpr (std::is_same_v<T, Status>) {
      observer_({verb, &r, sub}, result);
    } else {
      observer_({verb, &r, sub}, result.status());
    }
    return result;
  }

  KubeClient* const inner_;
  const Observer observer_;
};

}  // namespace skb::k8s

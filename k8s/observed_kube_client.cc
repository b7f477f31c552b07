// SPDX-License-Identifier: Apache-2.0
#include "k8s/observed_kube_client.h"

namespace skb::k8s {

StatusOr<nlohmann::json> ObservedKubeClient::Get(const Resource& r, const std::string& ns,
                                                 const std::string& name,
                                                 const std::string& subresource) {
  return Observe("get", r, subresource, [&] { return inner_->Get(r, ns, name, subresource); });
}

StatusOr<ListResult> ObservedKubeClient::List(const Resource& r, const std::string& ns,
                                              const ListOptions& options) {
  return Observe("list", r, "", [&] { return inner_->List(r, ns, options); });
}

StatusOr<nlohmann::json> ObservedKubeClient::Create(const Resource& r, const std::string& ns,
                                                    const nlohmann::json& object,
                                                    const WriteOptions& options) {
  return Observe("create", r, "", [&] { return inner_->Create(r, ns, object, options); });
}

StatusOr<nlohmann::json> ObservedKubeClient::Update(const Resource& r, const std::string& ns,
                                                    const nlohmann::json& object,
                                                    const WriteOptions& options,
                                                    const std::string& subresource) {
  return Observe("update", r, subresource,
                 [&] { return inner_->Update(r, ns, object, options, subresource); });
}

StatusOr<nlohmann::json> ObservedKubeClient::Patch(const Resource& r, const std::string& ns,
                                                   const std::string& name, PatchType type,
                                                   const nlohmann::json& patch,
                                                   const PatchOptions& options,
                                                   const std::string& subresource) {
  return Observe("patch", r, subresource,
                 [&] { return inner_->Patch(r, ns, name, type, patch, options, subresource); });
}

StatusOr<nlohmann::json> ObservedKubeClient::Delete(const Resource& r, const std::string& ns,
                                                    const std::string& name,
                                                    const DeleteOptions& options) {
  return Observe("delete", r, "", [&] { return inner_->Delete(r, ns, name, options); });
}

StatusOr<nlohmann::json> ObservedKubeClient::CreateSubresource(const Resource& r,
                                                               const std::string& ns,
                                                               const std::string& name,
                                                               const std::string& subresource,
                                                               const nlohmann::json& body) {
  return Observe("create", r, subresource,
                 [&] { return inner_->CreateSubresource(r, ns, name, subresource, body); });
}

Status ObservedKubeClient::Watch(const Resource& r, const std::string& ns,
                                 const ListOptions& options, const WatchHandler& handler,
                                 const std::atomic<bool>* cancel) {
  return Observe("watch", r, "", [&] { return inner_->Watch(r, ns, options, handler, cancel); });
}

}  // namespace skb::k8s

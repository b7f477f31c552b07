// SPDX-License-Identifier: Apache-2.0
// A KubeClient that passes every call to another one: the base of tests' clients that
// intercept a few calls (count or fail the writes, run a hook before a patch) and leave
// the rest to a FakeKubeClient.
//
//   class FailingPatches final : public k8s::ForwardingKubeClient {
//     using ForwardingKubeClient::ForwardingKubeClient;
//     StatusOr<nlohmann::json> Patch(...) override { return UnavailableError("injected"); }
//   };
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>

#include "k8s/kube_client.h"

namespace skb::k8s {

class ForwardingKubeClient : public KubeClient {
 public:
  explicit ForwardingKubeClient(KubeClient* to) : to_(to) {}

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns, const std::string& name,
                               const std::string& sub) override {
    return to_->Get(r, ns, name, sub);
  }
  StatusOr<ListResult> List(const Resource& r, const std::string& ns,
                            const ListOptions& o) override {
    return to_->List(r, ns, o);
  }
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& obj, const WriteOptions& o) override {
    return to_->Create(r, ns, obj, o);
  }
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const nlohmann::json& obj, const WriteOptions& o,
                                  const std::string& sub) override {
    return to_->Update(r, ns, obj, o, sub);
  }
  StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch, const PatchOptions& o,
                                 const std::string& sub) override {
    return to_->Patch(r, ns, name, type, patch, o, sub);
  }
  StatusOr<nlohmann::json> Delete(const Resource& r, const std::string& ns, const std::string& name,
                                  const DeleteOptions& o) override {
    return to_->Delete(r, ns, name, o);
  }
  StatusOr<nlohmann::json> CreateSubresource(const Resource& r, const std::string& ns,
                                             const std::string& name, const std::string& sub,
                                             const nlohmann::json& body) override {
    return to_->CreateSubresource(r, ns, name, sub, body);
  }
  Status Watch(const Resource& r, const std::string& ns, const ListOptions& o,
               const WatchHandler& h, const std::atomic<bool>* cancel) override {
    return to_->Watch(r, ns, o, h, cancel);
  }

 private:
  KubeClient* const to_;
};

}  // namespace skb::k8s

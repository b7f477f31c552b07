// SPDX-License-Identifier: Apache-2.0
#include "k8s/resource.h"

#include "src/base/strings.h"

namespace skb::k8s {

std::string Resource::ApiVersion() const {
  return group.empty() ? version : StrCat(group, "/", version);
}

std::string Resource::Name() const {
  return group.empty() ? resource : StrCat(resource, ".", group);
}

Resource Resource::Nodes() { return {"", "v1", "nodes", "Node", false}; }
Resource Resource::Pods() { return {"", "v1", "pods", "Pod", true}; }
Resource Resource::Namespaces() { return {"", "v1", "namespaces", "Namespace", false}; }
Resource Resource::Events() { return {"", "v1", "events", "Event", true}; }
Resource Resource::Leases() { return {"coordination.k8s.io", "v1", "leases", "Lease", true}; }
Resource Resource::ServiceAccounts() {
  return {"", "v1", "serviceaccounts", "ServiceAccount", true};
}
Resource Resource::Secrets() { return {"", "v1", "secrets", "Secret", true}; }
Resource Resource::ConfigMaps() { return {"", "v1", "configmaps", "ConfigMap", true}; }
Resource Resource::ClusterRoles() {
  return {"rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false};
}
Resource Resource::ClusterRoleBindings() {
  return {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false};
}
Resource Resource::PriorityClasses() {
  return {"scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false};
}
Resource Resource::ResourceQuotas() { return {"", "v1", "resourcequotas", "ResourceQuota", true}; }

Resource Resource::ResourceSlices() {
  return {"resource.k8s.io", "v1", "resourceslices", "ResourceSlice", false};
}
Resource Resource::ResourceClaims() {
  return {"resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true};
}
Resource Resource::DeviceTaintRules() {
  return {"resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", false};
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '.' || u == '_' || u == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string ResourcePath(const Resource& r, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path =
      r.group.empty() ? StrCat("/api/", r.version) : StrCat("/apis/", r.group, "/", r.version);
  if (r.namespaced && !ns.empty()) StrAppend(&path, "/namespaces/", UrlEncode(ns));
  StrAppend(&path, "/", r.resource);
  if (!name.empty()) StrAppend(&path, "/", UrlEncode(name));
  if (!subresource.empty()) StrAppend(&path, "/", subresource);
  return path;
}

}  // namespace skb::k8s

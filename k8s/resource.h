// SPDX-License-Identifier: Apache-2.0
// Which kind of object a request is about: group/version/resource and whether it lives in
// a namespace. Any type works, built-in or custom:
//
//   Resource crd{"example.com", "v1", "widgets", "Widget", /*namespaced=*/true};
//   client.Get(Resource::Pods(), "default", "web-0");
#pragma once

#include <string>
#include <string_view>

namespace skb::k8s {

struct Resource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "pods"
  std::string kind;      // "Pod": used for apiVersion/kind of objects we build
  bool namespaced = true;

  // "v1" or "coordination.k8s.io/v1".
  std::string ApiVersion() const;
  // "pods" or "leases.coordination.k8s.io", for messages.
  std::string Name() const;

  static Resource Nodes();
  static Resource Pods();
  static Resource Namespaces();
  static Resource Events();
  static Resource Leases();
  static Resource ServiceAccounts();
  static Resource Secrets();
  static Resource ConfigMaps();
  static Resource ClusterRoles();
  static Resource ClusterRoleBindings();
  static Resource PriorityClasses();
  static Resource ResourceQuotas();
  // Dynamic Resource Allocation (resource.k8s.io/v1, GA since 1.34; DeviceTaintRule since
  // 1.37): the devices a driver publishes per node, the claims allocating them, and the
  // taints that keep devices out of new allocations.
  static Resource ResourceSlices();
  static Resource ResourceClaims();
  static Resource DeviceTaintRules();
};

// "/api/v1/namespaces/ns/pods/name/status". `ns` is ignored for cluster-scoped resources
// and may be empty for namespaced ones (all namespaces, for list and watch); `name` and
// `subresource` may be empty. Path segments are percent-encoded.
std::string ResourcePath(const Resource& r, std::string_view ns, std::string_view name,
                         std::string_view subresource = "");

// Percent-encodes everything but RFC 3986 unreserved characters (for query values and path
// segments).
std::string UrlEncode(std::string_view s);

}  // namespace skb::k8s

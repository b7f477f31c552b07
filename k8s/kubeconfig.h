// Loading a RestConfig from a kubeconfig file or from inside a pod (in-cluster config).
//
//   ASSIGN_OR_RETURN(RestConfig cfg, LoadKubeconfig("/etc/bridge/kubeconfig", ""));
//   ASSIGN_OR_RETURN(RestConfig cfg, InClusterConfig());
//   ASSIGN_OR_RETURN(RestConfig cfg, DefaultRestConfig(""));  // $KUBECONFIG, ~/.kube/config,
//                                                             // then in-cluster
//
// Supported in the user entry: token, tokenFile, client-certificate(-data),
// client-key(-data). exec plugins, auth-provider and basic auth are rejected with
// Unimplemented naming the field, rather than silently connecting anonymously.
//
// Errors: NotFound (file missing), FailedPrecondition (unreadable file, unknown context /
// cluster / user, inconsistent settings), InvalidArgument (not YAML/JSON, wrong types, bad
// base64). Every message starts with "kubeconfig <path>: " and never contains secret values.
#pragma once

#include <string>
#include <string_view>

#include "k8s/rest_config.h"
#include "src/base/status.h"

namespace skb::k8s {

// Reads `path`. `context` overrides current-context when non-empty. Relative file
// references resolve against the kubeconfig's own directory, as kubectl does.
StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context);

// The same from text already in memory; `path` is used for messages and relative paths.
StatusOr<RestConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                     const std::string& context);

// What in-cluster discovery reads; the defaults are those of a real pod.
struct InClusterEnvironment {
  std::string service_host;  // $KUBERNETES_SERVICE_HOST
  std::string service_port;  // $KUBERNETES_SERVICE_PORT
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  static InClusterEnvironment FromProcess();
};

// Server from the environment, CA bundle from ca.crt, the token file (re-read by the
// transport when rotated; it must be readable now) and the namespace file (optional).
StatusOr<RestConfig> InClusterConfig(const InClusterEnvironment& env);
StatusOr<RestConfig> InClusterConfig();

// The first of: $KUBECONFIG (its first entry), ~/.kube/config if it exists, in-cluster.
StatusOr<RestConfig> DefaultRestConfig(const std::string& context);

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// Loading a RestConfig from kubeconfig files or from inside a pod (in-cluster config).
//
//   ASSIGN_OR_RETURN(RestConfig cfg, LoadKubeconfig("/etc/bridge/kubeconfig", ""));
//   ASSIGN_OR_RETURN(RestConfig cfg, InClusterConfig());
//   ASSIGN_OR_RETURN(RestConfig cfg, DefaultRestConfig(""));  // $KUBECONFIG (merged),
//                                                             // ~/.kube/config, in-cluster
//
// Supported in the user entry: token, tokenFile, client-certificate(-data),
// client-key(-data), and exec credential plugins (client.authentication.k8s.io/v1 and
// v1beta1; interactiveMode Never or IfAvailable; the token is fetched by the transport,
// exec_credential.h). auth-provider, basic auth and impersonation are rejected with
// Unimplemented naming the field, rather than silently connecting anonymously.
//
// Errors: NotFound (file missing), FailedPrecondition (unreadable file, unknown context /
// cluster / user, inconsistent settings), InvalidArgument (not YAML/JSON, wrong types, bad
// base64). Every message starts with "kubeconfig <path>: " (the file the faulty entry came
// from) and never contains secret values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s/rest_config.h"
#include "src/base/status.h"

namespace skb::k8s {

// Reads `path`. `context` overrides current-context when non-empty. Relative file
// references resolve against the kubeconfig's own directory, as kubectl does.
StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context);

// The same from text already in memory; `path` is used for messages and relative paths.
StatusOr<RestConfig> ParseKubeconfig(std::string_view text, const std::string& path,
                                     const std::string& context);

// Several files merged as kubectl merges $KUBECONFIG: missing files are skipped (NotFound
// only when none exists), the first file that sets current-context decides it, and for
// each cluster, context and user name the first file that defines it wins. Relative paths
// in an entry (certificate-authority, client-certificate, client-key, tokenFile, an exec
// command with a '/') resolve against the directory of the file the entry came from.
StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
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

// $KUBECONFIG's files merged (LoadKubeconfigFiles) when it is set, else ~/.kube/config if
// it exists; then in-cluster. As kubectl, $KUBECONFIG naming no existing file does not fall
// back to ~/.kube/config, only to in-cluster.
StatusOr<RestConfig> DefaultRestConfig(const std::string& context);

}  // namespace skb::k8s

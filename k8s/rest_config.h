// SPDX-License-Identifier: Apache-2.0
// How to reach and authenticate to an apiserver: what kubeconfig or in-cluster discovery
// produces and what the HTTP transport consumes.
//
// Secrets (token, client key) live only in memory here; nothing in k8s/ logs them or puts
// them in a Status message. Describe() is safe to log.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace skb::k8s {

// A kubeconfig `user.exec` credential plugin (client-go's ExecConfig), with paths already
// resolved. The plugin prints an ExecCredential whose status.token is the bearer token;
// exec_credential.h runs it and caches the token.
struct ExecConfig {
  // client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1.
  std::string api_version;
  // An absolute path, or a bare name looked up in $PATH when the plugin runs.
  std::string command;
  std::vector<std::string> args;
  // Added to the caller's environment (replacing a variable of the same name).
  std::vector<std::pair<std::string, std::string>> env;
  // Printed when `command` cannot be found.
  std::string install_hint;
  // Never or IfAvailable: the plugin runs without a terminal either way.
  std::string interactive_mode;
  // Pass spec.cluster in $KUBERNETES_EXEC_INFO (server, CA, TLS settings below).
  bool provide_cluster_info = false;
  std::string cluster_server;
  std::string cluster_ca_pem;
  std::string cluster_tls_server_name;
  bool cluster_insecure_skip_tls_verify = false;
  // The cluster's `client.authentication.k8s.io/exec` extension as JSON, or "" (spec.cluster.
  // config).
  std::string cluster_config_json;
  // A plugin that has not exited after this is killed (with its process group).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // For messages: "kubeconfig /etc/k.yaml users[eks].user.exec".
  std::string origin;
};

struct RestConfig {
  // "https://host:port", without a trailing slash.
  std::string server;
  // PEM bundle of the CAs to trust. Empty: the system trust store.
  std::string ca_pem;
  // Client certificate and key (PEM), both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // A static bearer token. Ignored when bearer_token_file is set.
  std::string bearer_token;
  // A token file re-read when it changes (projected service-account tokens rotate).
  std::string bearer_token_file;
  // A credential plugin for the bearer token; bearer_token and bearer_token_file are then
  // empty.
  std::optional<ExecConfig> exec;
  // Turns off server certificate verification. Only from an explicit kubeconfig setting.
  bool insecure_skip_tls_verify = false;
  // Overrides the name checked against the server certificate (kubeconfig tls-server-name).
  std::string tls_server_name;
  // The namespace of the kubeconfig context or of the in-cluster service account; may be
  // empty.
  std::string default_namespace;

  // Client-side rate limit (token bucket), as client-go's defaults. qps <= 0: unlimited.
  double qps = 5.0;
  int burst = 10;
  // Deadline of a whole non-watch request and of establishing a connection.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  std::string user_agent = "slurm-k8s-bridge";

  // Where this came from, e.g. "kubeconfig /etc/k.yaml context admin@kind": for messages.
  std::string source;

  // One line, safe to log: server, source, auth kind, TLS mode. Never secrets.
  std::string Describe() const;
};

}  // namespace skb::k8s

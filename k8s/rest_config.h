// How to reach and authenticate to an apiserver: what kubeconfig or in-cluster discovery
// produces and what the HTTP transport consumes.
//
// Secrets (token, client key) live only in memory here; nothing in k8s/ logs them or puts
// them in a Status message. Describe() is safe to log.
#pragma once

#include <chrono>
#include <string>

namespace skb::k8s {

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

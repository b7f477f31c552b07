// SPDX-License-Identifier: Apache-2.0
// Bearer tokens from a kubeconfig `exec` credential plugin (client-go's exec authenticator):
// the plugin (aws eks get-token, gke-gcloud-auth-plugin, kubelogin, an OIDC helper) runs
// without a shell and without a terminal, gets $KUBERNETES_EXEC_INFO, and prints an
// ExecCredential whose status.token is sent as the bearer token.
//
//   auto source = ExecCredentialSource::ForConfig(*rest_config.exec);
//   ASSIGN_OR_RETURN(std::string token, source->Token());
//   ... the apiserver answers 401 ...
//   source->Invalidate(token);  // the next Token() runs the plugin again
//
// Caching: a token is reused until kExpiryMargin before its status.expirationTimestamp, or,
// without one, until Invalidate. Errors never contain the token; they carry the last
// kMaxStderrBytes of the plugin's stderr.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "k8s/rest_config.h"
#include "src/base/clock.h"
#include "src/base/status.h"
#include "src/base/thread_annotations.h"

namespace skb::k8s {

// What a plugin run gave.
struct ExecCredential {
  std::string token;
  std::optional<Clock::TimePoint> expiry;  // status.expirationTimestamp
};

// $KUBERNETES_EXEC_INFO for `config`: {"apiVersion", "kind": "ExecCredential",
// "spec": {"interactive": false, "cluster": {...} when provide_cluster_info}}.
std::string ExecInfo(const ExecConfig& config);

// Parses a plugin's stdout. Unauthenticated when it is not an ExecCredential of
// `api_version` or has no status.token; Unimplemented for a client certificate. Messages
// start with `what` and quote nothing of the output but its apiVersion and kind.
StatusOr<ExecCredential> ParseExecCredential(std::string_view output,
                                             const std::string& api_version,
                                             const std::string& what);

// Runs the plugin once (blocking, up to config.timeout). FailedPrecondition when the command
// cannot be found or run (with the install hint), Unavailable on a timeout, Unauthenticated
// when it exits non-zero or prints no usable credential.
StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& config);

// "aws": the command's base name, the only part of an exec config safe to print (args and
// env often hold account names or secrets).
std::string ExecCommandName(const ExecConfig& config);

// Thread-safe. Concurrent callers share one run of the plugin.
class ExecCredentialSource {
 public:
  // A token is refreshed this long before it expires, so a request never carries one that
  // expires in flight.
  static constexpr std::chrono::seconds kExpiryMargin{10};
  static constexpr size_t kMaxStderrBytes = 1024;

  ExecCredentialSource(ExecConfig config, const Clock* clock);

  // The source shared by every transport of this process with an equal config (the daemon
  // opens several clients from one kubeconfig; the plugin should run once for all of them).
  static std::shared_ptr<ExecCredentialSource> ForConfig(const ExecConfig& config);

  // The cached token, or a fresh one from the plugin. When a refresh fails while the cached
  // token has not expired yet (it is within kExpiryMargin), the cached token is returned.
  StatusOr<std::string> Token() EXCLUDES(mu_);

  // The apiserver refused `token` (401): forget it if it is still the cached one, so the
  // next Token() runs the plugin. A token already replaced is left alone.
  void Invalidate(const std::string& token) EXCLUDES(mu_);

  // How often the plugin ran (for tests and logs).
  int runs() const EXCLUDES(mu_);

 private:
  const ExecConfig config_;
  const Clock* const clock_;
  mutable Mutex mu_;
  std::string token_ GUARDED_BY(mu_);
  std::optional<Clock::TimePoint> expiry_ GUARDED_BY(mu_);
  int runs_ GUARDED_BY(mu_) = 0;
};

}  // namespace skb::k8s

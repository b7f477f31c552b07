// SPDX-License-Identifier: Apache-2.0
// bridgectl's connection to the daemon: one request, one answer over the Unix socket
// (bridge/api), with a deadline, and errors that say what to check.
//
//   DaemonConnection conn("/run/slurm-k8s-bridge/bridge.sock", std::chrono::seconds(5));
//   api::v1::Request req;
//   req.mutable_list_nodes();
//   StatusOr<api::v1::Response> resp = conn.Call(req);
#pragma once

#include <chrono>
#include <string>

#include "bridge/api/v1/bridge.pb.h"
#include "src/base/status.h"

namespace skb::bridge::cli {

// The socket bridgectl uses: $SKB_BRIDGE_SOCKET, else the daemon's default path.
std::string DefaultSocketPath();

class DaemonConnection {
 public:
  DaemonConnection(std::string socket_path, std::chrono::milliseconds timeout);

  // Unavailable: no daemon listening (with the path and a hint), timed out, connection
  // dropped. PermissionDenied: the socket refuses this user. An Error answer is returned as
  // a Response (the caller reports its message).
  StatusOr<api::v1::Response> Call(api::v1::Request request) const;

 private:
  const std::string path_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace skb::bridge::cli

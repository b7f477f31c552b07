// SPDX-License-Identifier: Apache-2.0
// Recording Kubernetes Events about objects ("kubectl describe node1" shows them): the
// interface the bridge calls. Recording never blocks and never fails the caller; an Event is
// a best-effort record, not a transaction.
//
//   recorder->Record(NodeRef("node1"), EventType::kWarning, "SlurmDrained",
//                    "k8s-bridge: GpuHealthy: XID 79 on GPU 3");
#pragma once

#include <string>

#include "k8s/event_info.h"

namespace skb::k8s {

enum class EventType { kNormal, kWarning };

// A reference to a Node (cluster-scoped) or Pod, for Record(). `kubectl describe` lists only
// the Events whose involvedObject.uid is the object's: a Pod's Event needs the pod's
// metadata.uid (without it, `kubectl get events` still shows it, describe does not). A
// Node's Event without a uid gets the node's name as its uid, the kubelet's convention,
// which `kubectl describe node` also reads (checked against kubectl 1.37).
ObjectReference NodeRef(const std::string& name, const std::string& uid = "");
ObjectReference PodRef(const std::string& ns, const std::string& name, const std::string& uid = "");

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // Thread-safe, non-blocking. `reason` is CamelCase; `message` is for humans.
  virtual void Record(const ObjectReference& object, EventType type, const std::string& reason,
                      const std::string& message) = 0;
};

}  // namespace skb::k8s

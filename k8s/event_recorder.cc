// SPDX-License-Identifier: Apache-2.0
#include "k8s/event_recorder.h"

namespace skb::k8s {

ObjectReference NodeRef(const std::string& name, const std::string& uid) {
  return {"Node", "", name, uid.empty() ? name : uid, "v1"};
}

ObjectReference PodRef(const std::string& ns, const std::string& name, const std::string& uid) {
  return {"Pod", ns, name, uid, "v1"};
}

}  // namespace skb::k8s

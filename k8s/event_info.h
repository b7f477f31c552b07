// SPDX-License-Identifier: Apache-2.0
// A typed view of a core/v1 Event (what `kubectl describe` shows under Events).
#pragma once

#include <string>

#include "k8s/object_meta.h"

namespace skb::k8s {

struct ObjectReference {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string api_version;
};

struct EventInfo {
  ObjectMeta meta;
  ObjectReference involved;
  std::string type;  // Normal, Warning
  std::string reason;
  std::string message;
  int64_t count = 0;
  std::string first_timestamp;
  std::string last_timestamp;
  std::string source_component;
  std::vector<FieldIssue> issues;
};

StatusOr<EventInfo> ParseEvent(const nlohmann::json& obj);

}  // namespace skb::k8s

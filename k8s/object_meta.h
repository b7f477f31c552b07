// SPDX-License-Identifier: Apache-2.0
// The parts shared by every typed view: object metadata and standard conditions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "k8s/field_reader.h"
#include "src/base/status.h"

namespace skb::k8s {

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;
  std::string deletion_timestamp;  // "" unless being deleted
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;

  bool deleting() const { return !deletion_timestamp.empty(); }
};

// A standard condition (node, pod and custom conditions share this shape).
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;
};

// Reads `metadata` of `obj`. InvalidArgument when `obj` is not an object or has no string
// metadata.name (there is nothing to key it by); `what` ("node") starts the message. Other
// problems are recorded in `issues`.
StatusOr<ObjectMeta> ReadObjectMeta(const nlohmann::json& obj, std::string_view what,
                                    std::vector<FieldIssue>* issues);

// Reads a list of conditions at `key` of `reader`; malformed entries skipped with an issue.
std::vector<Condition> ReadConditions(const FieldReader& reader, std::string_view key);

// The condition of `type`, or null.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// Tolerant reading of fields from API objects into typed views (node_info.h, pod_info.h...).
//
// Objects come from outside: a field of an unexpected type (a number where a string belongs,
// a map where a list belongs) is skipped and recorded as a FieldIssue with its path and the
// reason, never a crash (nlohmann's typed getters throw) and never a silently wrong value.
//
//   std::vector<FieldIssue> issues;
//   FieldReader md(obj, "", &issues);
//   std::string name = md.Sub("metadata").String("name");
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/quantity.h"

namespace skb::k8s {

struct FieldIssue {
  std::string field;    // "status.conditions[2].type"
  std::string problem;  // "expected a string, got number"
};

// Not thread-safe; cheap to copy. `obj` must outlive the reader.
class FieldReader {
 public:
  // A reader over `obj` (treated as empty unless it is an object).
  FieldReader(const nlohmann::json& obj, std::string path, std::vector<FieldIssue>* issues);

  // Each returns the default when the key is absent or null, and records an issue when it is
  // present with the wrong type.
  std::string String(std::string_view key) const;
  bool Bool(std::string_view key) const;
  std::optional<int64_t> Int(std::string_view key) const;
  // A map of string values; entries with non-string values are skipped individually.
  std::map<std::string, std::string> StringMap(std::string_view key) const;
  // A list of strings; non-string entries are skipped individually.
  std::vector<std::string> StringList(std::string_view key) const;
  // A map of quantities ("cpu": "8", "nvidia.com/gpu": "4"); bad entries skipped.
  std::map<std::string, Quantity> QuantityMap(std::string_view key) const;
  // A nested object (an empty reader when absent or of the wrong type).
  FieldReader Sub(std::string_view key) const;
  // The elements of a list that are objects, as readers named "key[i]"; others skipped.
  std::vector<FieldReader> ObjectList(std::string_view key) const;

  std::string PathOf(std::string_view key) const;
  void AddIssue(std::string field, std::string problem) const;

 private:
  const nlohmann::json* Find(std::string_view key, nlohmann::json::value_t want) const;

  const nlohmann::json* obj_;  // null: empty
  std::string path_;
  std::vector<FieldIssue>* issues_;
};

// The string at obj[key]; "" when obj is not an object or the value is absent or not a string
// (where nlohmann's value(key, "") would throw). For one-off reads outside a typed view.
std::string StringAt(const nlohmann::json& obj, std::string_view key);
// The string at obj.metadata[key] ("uid", "resourceVersion", "deletionTimestamp"), as
// StringAt reads it.
std::string MetadataString(const nlohmann::json& obj, std::string_view key);

// One path segment of a JSON Pointer (RFC 6901), escaped for a JSON Patch path: "~" -> "~0",
// "/" -> "~1" ("/metadata/annotations/" + JsonPointerSegment("example.org/key")).
std::string JsonPointerSegment(std::string_view s);

// "string", "number", ... for messages.
std::string_view JsonTypeName(const nlohmann::json& j);

}  // namespace skb::k8s

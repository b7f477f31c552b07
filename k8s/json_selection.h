// SPDX-License-Identifier: Apache-2.0
// Decoding only the parts of a JSON document a program keeps. Watch events for Pods are
// ~5 KB of which the bridge reads a few hundred bytes; building a full nlohmann::json for
// each and then dropping most of it (field_selection.h) costs most of the decode time. A
// JsonSelection lets the decoder skip unwanted subtrees with a fast structural scan and
// build values only for the selected ones.
//
//   JsonSelection pod = JsonSelection::Fields({
//       {"metadata", JsonSelection::Fields({{"name", {}}, {"labels", {}}})},
//       {"spec", JsonSelection::Fields({{"containers", JsonSelection::Fields({{"name", {}}})}})}});
//   ASSIGN_OR_RETURN(nlohmann::json small, ParseSelected(text, pod));
//
// Semantics: a selection with no fields keeps the whole value. A selection with fields,
// applied to an object, keeps those keys (each with its own selection) and drops the rest;
// applied to a list, applies itself to every element; applied to a scalar, keeps it.
// Skipped parts are still checked for JSON structure (brackets, strings, escapes, literals),
// so malformed input is an error whether or not it is selected.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace skb::k8s {

class JsonSelection {
 public:
  JsonSelection() = default;  // keep everything
  static JsonSelection Fields(std::map<std::string, JsonSelection, std::less<>> fields);

  bool keeps_all() const { return fields_.empty(); }
  // Null when `key` is not selected.
  const JsonSelection* Find(std::string_view key) const;

  // What the informer of the bridge needs from a watch event ({"type", "object"}) when the
  // object is trimmed by SelectPodFields / SelectNodeFields.
  static const JsonSelection& PodWatchEvent();
  static const JsonSelection& NodeWatchEvent();

 private:
  // Few keys per level: a linear scan comparing lengths first beats a tree.
  std::vector<std::pair<std::string, JsonSelection>> fields_;
};

// InvalidArgument (with a byte offset) when `text` is not one JSON value (trailing
// whitespace allowed), or nested deeper than 256 levels.
StatusOr<nlohmann::json> ParseSelected(std::string_view text, const JsonSelection& selection);

}  // namespace skb::k8s

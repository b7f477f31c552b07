// A strict reader for the subset of YAML that kubeconfig files use, producing nlohmann::json.
//
// k8s/ may not depend on a YAML library, and kubeconfig files written by kubectl, kubeadm,
// kind and friends use only: block mappings and sequences, plain / single-quoted /
// double-quoted scalars, comments, an optional leading `---`, and the empty flow
// collections `{}` / `[]` (any flow collection that is valid JSON is accepted). JSON input
// (a document starting with `{`) is accepted as well, as kubectl does.
//
// Everything else (anchors, aliases, tags, block scalars `|` `>`, multi-line plain scalars,
// several documents) is rejected with an error naming the line, never misread.
//
// Plain scalars become JSON strings (so a token like 0123 keeps its exact text), except
// `null`, `~` and an empty value, which become null. Callers interpret "true"/"false".
//
//   ASSIGN_OR_RETURN(nlohmann::json doc, ParseYamlSubset(text));
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

// InvalidArgument "line N: <problem>" on anything outside the subset. The message quotes no
// value text (kubeconfig values can be secrets), only keys and structure.
StatusOr<nlohmann::json> ParseYamlSubset(std::string_view text);

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
// Reads one YAML document (a kubeconfig file) into nlohmann::json, with yaml-cpp (Debian's
// libyaml-cpp-dev) doing the YAML: block and flow collections, plain / quoted / block
// scalars, comments, anchors and aliases, `---` / `...` markers. JSON is YAML, so a JSON
// kubeconfig reads the same way, as kubectl's does.
//
// What this adds to yaml-cpp is the mapping to JSON and kubeconfig's rules:
//   - every scalar becomes a JSON string holding its exact text (a token like 0123, `true`,
//     `1e3` stays a string; callers interpret "true"/"false"), except a plain (unquoted)
//     `null`, `Null`, `NULL`, `~` or empty value, which becomes null; quoted "null" is text;
//   - mapping keys are scalars, taken as their text; a duplicate key is an error;
//   - aliases are expanded (copies), within a bound on the values produced;
//   - rejected with an error: several documents (kubectl would silently read only the
//     first), explicit tags (`!!str`, `!foo`), merge keys (`<<`), collection or null keys,
//     nesting deeper than 64.
//
//   ASSIGN_OR_RETURN(nlohmann::json doc, ParseYamlDocument(text));
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

// InvalidArgument "line N: <problem>" (1-based) on malformed or rejected input. The message
// quotes no value text (kubeconfig values can be secrets), at most a key. An empty document
// (nothing, or only comments) is null.
StatusOr<nlohmann::json> ParseYamlDocument(std::string_view text);

}  // namespace skb::k8s

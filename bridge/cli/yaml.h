// SPDX-License-Identifier: Apache-2.0
// `-o yaml`: the JSON bridgectl prints for `-o json`, written as block-style YAML the way
// kubectl writes it (a list under a key at the key's indentation). Strings that YAML could
// read as something else (numbers, true/no/null, leading or trailing blanks, ": " inside)
// are double-quoted with JSON's escapes, which YAML reads the same.
//
// Not yaml-cpp (Debian's 0.7): its emitter writes the strings "12" and "true" plain, so they
// read back as a number and a boolean (checked: `a: 12`, `b: true`); only "null" is quoted.
//
//   std::fputs(ToYaml(NodesJson(resp)).c_str(), stdout);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace skb::bridge::cli {

std::string ToYaml(const nlohmann::json& value);

}  // namespace skb::bridge::cli

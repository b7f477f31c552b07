// SPDX-License-Identifier: Apache-2.0
#include "bridge/cli/yaml.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace skb::bridge::cli {
namespace {

// Read by a YAML 1.1 or 1.2 parser as a bool or null when plain.
bool Special(std::string_view s) {
  static constexpr std::array<std::string_view, 12> kWords = {
      "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf"};
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kWords.begin(), kWords.end(), lower) != kWords.end();
}

// Plain (unquoted) only when it can only be read back as this string: a letter, '_' or '/'
// first, then letters, digits, _ . / @ + - and single inner spaces.
bool Plain(std::string_view s) {
  if (s.empty() || Special(s)) return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (!std::isalpha(first) && first != '_' && first != '/') return false;
  if (s.back() == ' ') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '@' || c == '+' || c == '-') {
      continue;
    }
    if (c == ' ' && s[i - 1] != ' ') continue;
    return false;
  }
  return true;
}

std::string Scalar(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return Plain(s) ? s : v.dump();
  }
  if (v.is_object()) return "{}";  // only empty ones get here
  if (v.is_array()) return "[]";
  return v.dump();  // number, bool, null
}

bool Nested(const nlohmann::json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void Emit(const nlohmann::json& v, size_t indent, std::string* out) {
  const std::string pad(indent, ' ');
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      *out += pad + Scalar(nlohmann::json(key)) + ":";
      if (!Nested(value)) {
        *out += " " + Scalar(value) + "\n";
      } else {
        *out += "\n";
        Emit(value, value.is_array() ? indent : indent + 2, out);
      }
    }
    return;
  }
  for (const auto& item : v) {
    if (!Nested(item)) {
      *out += pad + "- " + Scalar(item) + "\n";
      continue;
    }
    // The item as a block two columns in, its first line's indentation turned into "- ".
    std::string block;
    Emit(item, indent + 2, &block);
    block.replace(indent, 2, "- ");
    *out += block;
  }
}

}  // namespace

std::string ToYaml(const nlohmann::json& value) {
  if (!Nested(value)) return Scalar(value) + "\n";
  std::string out;
  Emit(value, 0, &out);
  return out;
}

}  // namespace skb::bridge::cli

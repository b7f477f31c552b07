// SPDX-License-Identifier: Apache-2.0
// String building without a formatting library: StrCat for messages and keys.
//
//   std::string m = skb::StrCat("node ", name, " has ", gpus, " GPUs");
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace skb {
namespace strings_internal {

inline void Append(std::string* out, std::string_view s) { out->append(s); }
inline void Append(std::string* out, const char* s) { out->append(s == nullptr ? "" : s); }
inline void Append(std::string* out, char c) { out->push_back(c); }
inline void Append(std::string* out, bool b) { out->append(b ? "true" : "false"); }
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void Append(std::string* out, T v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ec == std::errc() ? end : buf);
}

}  // namespace strings_internal

// `s` read whole as a decimal integer of type T (no spaces, nothing after it, in range):
// false otherwise, `out` then unspecified.
template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
bool ParseInteger(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(&out, args), ...);
  return out;
}

template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  (strings_internal::Append(out, args), ...);
}

// Splits `s` at every `sep`. With skip_empty, empty pieces are dropped.
std::vector<std::string_view> StrSplit(std::string_view s, char sep, bool skip_empty = false);

// The pieces with `sep` between them: {"a", "b"}, "+" -> "a+b".
std::string StrJoin(const std::vector<std::string>& pieces, std::string_view sep);

// `s` without leading and trailing ASCII whitespace.
std::string_view StripWhitespace(std::string_view s);

}  // namespace skb

// SPDX-License-Identifier: Apache-2.0
// StrCat and the small string helpers. Why not a formatting library: std::format is not in
// GCC 12's libstdc++ (Debian 12); fmt (Debian's libfmt, under spdlog) formats the same, but
// src/base is below every other folder and depends on the standard library alone, and a
// concatenation is not worth a dependency there. StrCat is absl's idiom over std::to_chars
// (shortest round-trip numbers), a dozen lines.
#include "src/base/strings.h"

namespace skb {

std::string StrJoin(const std::vector<std::string>& pieces, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i) out.append(sep);
    out.append(pieces[i]);
  }
  return out;
}

std::vector<std::string_view> StrSplit(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    std::string_view piece = s.substr(start, pos == std::string_view::npos ? pos : pos - start);
    if (!skip_empty || !piece.empty()) out.push_back(piece);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string_view StripWhitespace(std::string_view s) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace skb

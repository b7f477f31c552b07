// SPDX-License-Identifier: Apache-2.0
// UTF-8 encoding for the parsers of outside text (json_selection.cc).
#pragma once

#include <cstdint>
#include <string>

namespace skb::k8s {

// Appends code point `cp` (at most U+10FFFF; the caller has rejected surrogates) as UTF-8.
void AppendUtf8(std::string* out, uint32_t cp);

}  // namespace skb::k8s

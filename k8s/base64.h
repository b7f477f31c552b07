// SPDX-License-Identifier: Apache-2.0
// Standard base64 (RFC 4648, with padding) as kubeconfig's *-data fields use it.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

// Decodes `text`; ASCII whitespace is ignored (PEM-ish line breaks). Missing padding is
// accepted. Any other character outside the alphabet is InvalidArgument; the message never
// echoes the input (it may be a secret).
StatusOr<std::string> Base64Decode(std::string_view text);

std::string Base64Encode(std::string_view bytes);

}  // namespace skb::k8s

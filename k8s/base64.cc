// SPDX-License-Identifier: Apache-2.0
// On OpenSSL's base64 (libcrypto, which libcurl already links). What is added here: the
// alphabet is checked first (OpenSSL's decoder stops without an error at '-', PEM's end
// marker, and would return a prefix), and missing padding is restored.
#include "k8s/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

constexpr std::string_view kAllowed =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \n\r\t";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

StatusOr<std::string> Base64Decode(std::string_view text) {
  if (size_t bad = text.find_first_not_of(kAllowed); bad != std::string_view::npos) {
    return InvalidArgumentError(StrCat("invalid base64: unexpected character at offset ", bad));
  }
  const size_t chars = static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return !IsSpace(c); }));
  std::string in(text);
  in.append((4 - chars % 4) % 4, '=');
  std::string out(in.size() / 4 * 3 + 3, '\0');
  std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> ctx(EVP_ENCODE_CTX_new(),
                                                                      &EVP_ENCODE_CTX_free);
  if (ctx == nullptr) return ResourceExhaustedError("base64: no memory for a decoder");
  EVP_DecodeInit(ctx.get());
  int n = 0, last = 0;
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (EVP_DecodeUpdate(ctx.get(), o, &n, reinterpret_cast<const unsigned char*>(in.data()),
                       static_cast<int>(in.size())) < 0 ||
      EVP_DecodeFinal(ctx.get(), o + n, &last) < 0) {
    // Never the input: it may be a secret.
    return InvalidArgumentError("invalid base64: misplaced padding or truncated input");
  }
  out.resize(static_cast<size_t>(n + last));
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace skb::k8s

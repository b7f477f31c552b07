// SPDX-License-Identifier: Apache-2.0
// An immutable, compact in-memory encoding of a JSON value, for caches that hold many
// objects (the informer keeps every Node and Pod it watches). nlohmann::json spends a map
// node, a heap string and a 16-byte value per field: a Pod trimmed to the bridge's fields
// (field_selection.h) costs ~9 KB that way; encoded here it is one allocation of ~0.6 KB.
//
//   CompactJson c = CompactJson::Encode(trimmed_pod);   // once, when caching
//   nlohmann::json pod = c.Decode();                     // on each read (a few µs)
//   std::string_view rv = c.StringAt({"metadata", "resourceVersion"});  // no decode
//
// The encoding is a private, in-memory format (never stored or sent): a tag byte per value,
// LEB128 lengths and integers, and one byte for each of ~128 strings common in Kubernetes
// objects (field names, condition types, well-known label keys). Decode(Encode(v)) == v for
// every value a parser produces (binary values, which none does, become null).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

namespace skb::k8s {

// Thread-compatible: const methods may run concurrently.
class CompactJson {
 public:
  CompactJson() = default;  // encodes null
  CompactJson(CompactJson&&) noexcept = default;
  CompactJson& operator=(CompactJson&&) noexcept = default;

  static CompactJson Encode(const nlohmann::json& value);
  CompactJson Copy() const;  // explicit: copies are rarely what a cache wants
  nlohmann::json Decode() const;

  // The string at `path` (object keys from the top), or "" when a step is missing, not an
  // object, or the value is not a string. Walks the encoding without decoding it; the view
  // lives as long as this object.
  std::string_view StringAt(std::initializer_list<std::string_view> path) const;

  // Bytes held on the heap (the whole encoding).
  size_t size() const { return size_; }

  friend bool operator==(const CompactJson& a, const CompactJson& b);

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint32_t size_ = 0;
};

}  // namespace skb::k8s

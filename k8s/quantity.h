// SPDX-License-Identifier: Apache-2.0
// Kubernetes resource quantities ("8", "500m", "1Gi", "1.5", "2e3"), as in
// k8s.io/apimachinery/pkg/api/resource, held exactly in thousandths.
//
//   ASSIGN_OR_RETURN(Quantity q, Quantity::Parse("500m"));
//   q.MilliValue();  // 500
//   q.Value();       // 1 (rounded up, as Quantity.Value() does)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace skb::k8s {

class Quantity {
 public:
  Quantity() = default;
  static Quantity FromMilli(int64_t milli) { return Quantity(milli); }

  // InvalidArgument for anything that is not a quantity, and for values whose thousandths
  // do not fit in 64 bits (about 9.2e15 units) rather than a silently wrong number.
  // Precision below a thousandth (e.g. "1n") rounds up to 1m, as the apiserver does.
  static StatusOr<Quantity> Parse(std::string_view text);

  int64_t MilliValue() const { return milli_; }
  // Whole units, rounded up.
  int64_t Value() const;

  friend bool operator==(Quantity a, Quantity b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(Quantity a, Quantity b) { return a.milli_ <=> b.milli_; }

 private:
  explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace skb::k8s

// SPDX-License-Identifier: Apache-2.0
#include "k8s/quantity.h"

#include <limits>

#include "src/base/strings.h"

namespace skb::k8s {
namespace {

__extension__ typedef __int128 Int128;

constexpr Int128 kMax = std::numeric_limits<int64_t>::max();

Status Bad(std::string_view text, std::string_view why) {
  return InvalidArgumentError(StrCat("invalid quantity '", text.substr(0, 64), "': ", why));
}

Int128 Pow(Int128 base, int exp) {
  Int128 r = 1;
  for (int i = 0; i < exp; ++i) r *= base;
  return r;
}

}  // namespace

int64_t Quantity::Value() const {
  if (milli_ >= 0) return milli_ / 1000 + (milli_ % 1000 != 0 ? 1 : 0);
  return milli_ / 1000;  // toward zero is "up" for negatives
}

StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return Bad(text, "empty");
  if (s.size() > 64) return Bad(text, "too long");
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // Mantissa: digits, optionally with one '.' and more digits.
  Int128 mantissa = 0;
  int frac_digits = 0;
  size_t i = 0;
  bool any_digit = false;
  bool dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      any_digit = true;
      if (mantissa > kMax * 1000) return Bad(text, "too large");
      mantissa = mantissa * 10 + (c - '0');
      if (dot) ++frac_digits;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any_digit) return Bad(text, "no digits");
  std::string_view suffix = s.substr(i);

  // value = mantissa / 10^frac * base^exp; we want thousandths.
  int base = 10;
  int exp = 0;
  if (suffix.empty()) {
  } else if (suffix == "Ki") {
    base = 2, exp = 10;
  } else if (suffix == "Mi") {
    base = 2, exp = 20;
  } else if (suffix == "Gi") {
    base = 2, exp = 30;
  } else if (suffix == "Ti") {
    base = 2, exp = 40;
  } else if (suffix == "Pi") {
    base = 2, exp = 50;
  } else if (suffix == "Ei") {
    base = 2, exp = 60;
  } else if (suffix == "n") {
    exp = -9;
  } else if (suffix == "u") {
    exp = -6;
  } else if (suffix == "m") {
    exp = -3;
  } else if (suffix == "k") {
    exp = 3;
  } else if (suffix == "M") {
    exp = 6;
  } else if (suffix == "G") {
    exp = 9;
  } else if (suffix == "T") {
    exp = 12;
  } else if (suffix == "P") {
    exp = 15;
  } else if (suffix == "E") {
    exp = 18;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3) return Bad(text, "bad exponent");
    for (char c : e) {
      if (c < '0' || c > '9') return Bad(text, "bad exponent");
      exp = exp * 10 + (c - '0');
    }
    if (eneg) exp = -exp;
  } else {
    return Bad(text, "unknown suffix");
  }

  Int128 numerator = mantissa * 1000;  // thousandths
  Int128 denominator = Pow(10, frac_digits);
  if (base == 2) {
    numerator *= Pow(2, exp);
  } else if (exp >= 0) {
    if (exp > 30) return Bad(text, "too large");
    numerator *= Pow(10, exp);
  } else {
    if (-exp > 30) {
      // Smaller than a thousandth unless zero: rounds up to 1m like the apiserver.
      return Quantity(mantissa == 0 ? 0 : (negative ? -1 : 1));
    }
    denominator *= Pow(10, -exp);
  }
  if (numerator / denominator > kMax) return Bad(text, "too large");
  Int128 milli = numerator / denominator + (numerator % denominator != 0 ? 1 : 0);
  if (milli > kMax) return Bad(text, "too large");
  return Quantity(static_cast<int64_t>(negative ? -milli : milli));
}

}  // namespace skb::k8s

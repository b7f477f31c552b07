// SPDX-License-Identifier: Apache-2.0
// Overloaded{lambdas...}: one callable with every lambda's operator(), to std::visit a
// variant with one lambda per alternative (the compiler refuses a visit that misses one).
//
//   std::visit(Overloaded{[](const Drain& d) { ... }, [](const Resume& r) { ... }}, op);
#pragma once

namespace skb {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace skb

// util/overloaded.h — the usual visitor of lambdas for std::visit: std::visit(Overloaded{f, g}, v).
#pragma once

namespace keel {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// C++20 deduces this for an aggregate by itself; clang 16 (clang-tidy) does not implement that yet.
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace keel

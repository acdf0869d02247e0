// util/overloaded.h — the usual visitor of lambdas for std::visit: std::visit(Overloaded{f, g}, v).
#pragma once

namespace keel {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace keel

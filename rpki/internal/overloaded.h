// The usual overload set for std::visit over the PDU, event and action
// variants of rpki/.
#pragma once

namespace petrel::rpki::internal {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace petrel::rpki::internal

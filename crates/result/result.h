// Result<T, E>: a value or an error, shaped like C++23 std::expected.
//
// Used on every decode path: nothing allocates on the error path and the
// caller must look at the result ([[nodiscard]]). Errors are small values
// (enum classes or small structs with static text), never heap strings.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace petrel {

template <typename E>
struct Unexpected {
  E error;
};

template <typename E>
Unexpected(E) -> Unexpected<E>;

// Wraps an error for return from a function returning Result<T, E>.
template <typename E>
[[nodiscard]] constexpr Unexpected<std::decay_t<E>> fail(E&& e) {
  return Unexpected<std::decay_t<E>>{std::forward<E>(e)};
}

template <typename T, typename E>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  using error_type = E;

  constexpr Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  template <typename G>
  constexpr Result(Unexpected<G> u)  // NOLINT
      : v_(std::in_place_index<1>, E(std::move(u.error))) {}

  [[nodiscard]] constexpr bool ok() const { return v_.index() == 0; }
  constexpr explicit operator bool() const { return ok(); }

  constexpr T& value() & {
    assert(ok());
    return *std::get_if<0>(&v_);
  }
  constexpr const T& value() const& {
    assert(ok());
    return *std::get_if<0>(&v_);
  }
  constexpr T&& value() && {
    assert(ok());
    return std::move(*std::get_if<0>(&v_));
  }
  constexpr const E& error() const {
    assert(!ok());
    return *std::get_if<1>(&v_);
  }
  constexpr T* operator->() { return &value(); }
  constexpr const T* operator->() const { return &value(); }
  constexpr T& operator*() & { return value(); }
  constexpr const T& operator*() const& { return value(); }

 private:
  std::variant<T, E> v_;
};

// Result<void, E>: success or an error.
template <typename E>
class [[nodiscard]] Result<void, E> {
 public:
  constexpr Result() = default;
  template <typename G>
  constexpr Result(Unexpected<G> u) : err_(E(std::move(u.error))), ok_(false) {}  // NOLINT

  [[nodiscard]] constexpr bool ok() const { return ok_; }
  constexpr explicit operator bool() const { return ok_; }
  constexpr const E& error() const {
    assert(!ok_);
    return err_;
  }

 private:
  E err_{};
  bool ok_ = true;
};

}  // namespace petrel

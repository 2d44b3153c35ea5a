#pragma once
// aggregate_arity<T>(): the member count of a flat aggregate, for the static_asserts that tie a
// struct to its one field list (KernelConfig::fields(), the tuning database's field tuples).
#include <cstddef>

namespace amax {

namespace detail {
/// Converts to anything; used to count the members of an aggregate.
struct AnyInit {
  template <class T>
  constexpr operator T() const;  // NOLINT(google-explicit-constructor): declared only
};

template <class T, class... A>
constexpr std::size_t aggregate_arity_impl() {
  if constexpr (requires { T{A{}..., AnyInit{}}; }) {
    return aggregate_arity_impl<T, A..., AnyInit>();
  } else {
    return sizeof...(A);
  }
}
}  // namespace detail

/// Number of members of the aggregate T. AnyInit converts to every member type, so a member that
/// is itself an aggregate takes one initializer (no brace elision). Compile time only.
template <class T>
constexpr std::size_t aggregate_arity() {
  return detail::aggregate_arity_impl<T>();
}

}  // namespace amax

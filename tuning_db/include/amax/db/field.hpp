// amax-tune tuning database: field descriptors. Every stored struct (TuningKey, GroupKey,
// Provenance, Trial, Winner) lists its members exactly once in a constexpr tuple of Field values; the SQL
// columns, row binding and reading, JSON/CSV/text export and equality are all derived from that
// list, and a static_assert next to each list fails to compile when a member is added to the
// struct but not to its list.
#pragma once

#include <amax/aggregate_arity.hpp>

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

namespace amax::db {

/// Roles a field can play beyond being stored (bit flags, combine with |).
enum FieldRole : unsigned {
  kPlain = 0,
  /// Part of a row's identity: two rows for the same key whose identity fields are all equal
  /// describe the same measurement setup (same device, compiler, templates and tool), so a new
  /// record replaces the old one, and resume treats the key as finished.
  kIdentity = 1u << 0,
  /// A difference in this field makes a stored row stale: it must be re-tuned before it is
  /// trusted (see stale_fields()).
  kStale = 1u << 1,
  /// Identifies the physical device (used by merge to refuse mixing devices).
  kDevice = 1u << 2,
};

/// Describes one member of a stored struct.
///
/// @tparam Owner  the struct (e.g. Provenance)
/// @tparam T      the member's type: std::string, std::int64_t, std::uint64_t, double, or an
///                enum with to_string()/parse functions known to the codec (DType, TrialStatus)
///
/// The default value of a member (used for rows written by an older schema that lacked the
/// column, and for text-dump lines of such rows) is the member's default initializer in Owner.
///
/// Thread-safety: constexpr data, freely shared.
template <class Owner, class T>
struct Field {
  using owner_type = Owner;
  using value_type = T;

  std::string_view name;   ///< JSON/CSV name; the SQL column is a per-struct prefix + name
  T Owner::*member;        ///< the member it describes
  std::string_view doc;    ///< meaning and unit, for documentation and generated READMEs
  unsigned roles = kPlain; ///< FieldRole bits
  int since_schema = 1;    ///< schema_version that introduced the column

  /// The member of @p o this field describes.
  constexpr const T& get(const Owner& o) const noexcept { return o.*member; }
  /// The member of @p o this field describes (mutable).
  constexpr T& get(Owner& o) const noexcept { return o.*member; }
  /// Whether this field has role @p r.
  [[nodiscard]] constexpr bool has(FieldRole r) const noexcept { return (roles & r) != 0; }
};

/// Calls @p f(field) for every field of the tuple @p fields, in list order. Thread-safe (reads
/// constexpr data only).
template <class Tuple, class F>
constexpr void for_each_field(const Tuple& fields, F&& f) {
  std::apply([&](const auto&... field) { (f(field), ...); }, fields);
}

/// True when every field listed in @p fields compares equal in @p a and @p b. Thread-safe for
/// concurrent readers of @p a and @p b.
template <class Owner, class Tuple>
[[nodiscard]] constexpr bool fields_equal(const Owner& a, const Owner& b, const Tuple& fields) {
  return std::apply([&](const auto&... field) { return ((field.get(a) == field.get(b)) && ...); },
                    fields);
}

}  // namespace amax::db

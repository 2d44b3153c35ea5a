// amax-tune tuning database: the tuning key (arch, dtype, n).
#pragma once

#include <amax/db/field.hpp>
#include <amax/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace amax::db {

/// The element type is amax::DType (amax/dtype.hpp), stored as its canonical name ("fp32",
/// "fp16", "bf16": amax::to_string / amax::dtype_from_name) so that new types (fp8 formats) need
/// no schema change.
using amax::DType;

/// Parses a canonical dtype name exactly (amax::dtype_from_name: lower case, no aliases).
/// @throws DbError(InvalidArgument) naming @p text and the accepted values. Thread-safe.
[[nodiscard]] DType dtype_from_string(std::string_view text);

/// What a tuning result is for: one architecture, one element type, one element count.
///
/// Thread-safety: plain value type.
struct TuningKey {
  /// GPU architecture as a target ID: "sm_90", "gfx942", "gfx942:sramecc+:xnack-". Non-empty.
  std::string arch;
  /// Element type.
  DType dtype = DType::fp32;
  /// Element count, 1 <= n <= 2^63-1 (SQLite integers are signed 64-bit).
  std::uint64_t n = 0;

  friend bool operator==(const TuningKey&, const TuningKey&) = default;
  /// Orders by arch, then dtype name ("bf16" < "fp16" < "fp32"), then n: the order of SQL
  /// ORDER BY arch, dtype, n, used by every listing of the database.
  friend bool operator<(const TuningKey& a, const TuningKey& b) {
    if (a.arch != b.arch) return a.arch < b.arch;
    if (a.dtype != b.dtype) return to_string(a.dtype) < to_string(b.dtype);
    return a.n < b.n;
  }
};

/// The fields of TuningKey, listed once. SQL columns: arch, dtype, n (no prefix).
inline constexpr std::tuple key_fields{
    Field<TuningKey, std::string>{"arch", &TuningKey::arch, "GPU target ID, e.g. sm_90 or gfx942:sramecc+:xnack-"},
    Field<TuningKey, DType>{"dtype", &TuningKey::dtype, "element type: fp32, fp16 or bf16"},
    Field<TuningKey, std::uint64_t>{"n", &TuningKey::n, "element count (1 .. 2^63-1)"},
};
static_assert(aggregate_arity<TuningKey>() == std::tuple_size_v<decltype(key_fields)>,
              "every TuningKey member must be listed in key_fields");

/// "sm_90/fp32/n=1024", for messages. Thread-safe.
[[nodiscard]] std::string to_string(const TuningKey& key);

}  // namespace amax::db

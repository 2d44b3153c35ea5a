// amax-tune tuning database: the winner (fastest correct variant) of one key.
#pragma once

#include <amax/db/field.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>

#include <optional>
#include <string>
#include <tuple>

namespace amax::db {

/// The variant chosen for one key. Rules checked by TuningDb::record (DbError
/// InvalidArgument otherwise): label non-empty; median_us finite and > 0; gbps finite and >= 0;
/// when trials are recorded with it, its label names one of them with status ok.
///
/// Thread-safety: plain value type.
struct Winner {
  std::string label;       ///< canonical variant label
  double median_us = 0.0;  ///< median time per call, microseconds
  double gbps = 0.0;       ///< effective bandwidth, GB/s (1e9 B/s)

  /// Field-by-field equality over winner_fields.
  friend bool operator==(const Winner& a, const Winner& b);
};

/// The fields of Winner, listed once. SQL columns have no prefix.
inline constexpr std::tuple winner_fields{
    Field<Winner, std::string>{"label", &Winner::label, "canonical variant label"},
    Field<Winner, double>{"median_us", &Winner::median_us, "median time per call, us"},
    Field<Winner, double>{"gbps", &Winner::gbps, "effective bandwidth, GB/s (1e9 B/s)"},
};
static_assert(aggregate_arity<Winner>() == std::tuple_size_v<decltype(winner_fields)>,
              "every Winner member must be listed in winner_fields");

/// A stored winner: key, choice and provenance. There is at most one per key and provenance
/// identity (see Provenance).
///
/// Thread-safety: plain value type.
struct WinnerRow {
  TuningKey key;
  Winner winner;
  Provenance provenance;

  friend bool operator==(const WinnerRow&, const WinnerRow&) = default;
};

/// Selects winners by arch and/or dtype; an empty member matches everything. Plain value type.
struct WinnerFilter {
  std::optional<std::string> arch;  ///< exact key arch (target ID) to match
  std::optional<DType> dtype;       ///< dtype to match
};

}  // namespace amax::db

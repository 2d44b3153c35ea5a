// amax-tune tuning database: one trial = one variant measured (or failed) for one key.
#pragma once

#include <amax/db/field.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace amax::db {

/// Outcome of one variant. Expected failures are data, not exceptions (DESIGN.md section 4).
enum class TrialStatus {
  ok,              ///< compiled, bit-exact on every verification input, timed
  compile_failed,  ///< the JIT compiler rejected the source (reason: compiler log excerpt)
  wrong_result,    ///< compiled and ran but gave a wrong amax (reason: input and both values)
  launch_failed,   ///< the launch failed (reason: the driver's error)
};

/// "ok", "compile_failed", "wrong_result" or "launch_failed". Thread-safe, never throws.
[[nodiscard]] std::string_view to_string(TrialStatus status) noexcept;

/// Parses the names above (exact); std::nullopt for anything else. Thread-safe, never throws.
[[nodiscard]] std::optional<TrialStatus> parse_trial_status(std::string_view text) noexcept;

/// Parses like parse_trial_status(). @throws DbError(InvalidArgument) naming @p text and the
/// accepted values. Thread-safe.
[[nodiscard]] TrialStatus trial_status_from_string(std::string_view text);

/// The measurement of one variant for one key (key and provenance are given separately to
/// TuningDb::record and come back in TrialRow).
///
/// Rules checked by TuningDb::record (DbError InvalidArgument otherwise): label non-empty;
/// status ok <=> reason empty; every double finite and >= 0; status ok needs median_us > 0;
/// samples >= 0; launches >= -1. Measurement fields of failed trials are 0 by convention
/// (launches -1).
///
/// Thread-safety: plain value type.
struct Trial {
  std::string label;                       ///< canonical variant label, e.g. "two_stage.t256.v8.u4.b8cu"
  TrialStatus status = TrialStatus::ok;    ///< outcome
  std::string reason;                      ///< why it failed; empty for ok
  double median_us = 0.0;                  ///< median time of one amax call, microseconds
  double spread_us = 0.0;                  ///< interquartile range (p75 - p25) of the per-batch times, microseconds
  std::int64_t samples = 0;                ///< number of timed batches the median is taken over
  double gbps = 0.0;                       ///< effective bandwidth n * sizeof(dtype) / median, GB/s (1e9 B/s)
  std::int64_t registers = -1;             ///< registers per thread (VGPRs on AMD), -1 if unknown
  std::int64_t spill_bytes = -1;           ///< bytes spilled per thread, -1 if unknown (column since schema 2)
  /// Place in the winner's statistical tie set: 0 the winner, 1.. the other tied variants in the
  /// tuner's order of preference, -1 not tied (or measured before schema 3).
  std::int64_t tie_rank = -1;
  /// Median in the tuner's confirmation measurement, microseconds; 0 when the variant was not in
  /// it (since schema 3).
  double confirm_median_us = 0.0;
  /// The host's enqueue cost of one call (CPU clock around the enqueue of a gated batch, per
  /// call), median over the timed batches, microseconds; 0 unknown (failed trials, rows measured
  /// before schema 5). From schema 5 on, median_us and spread_us are GPU time (batches behind a
  /// gate kernel; the provenance's timing_protocol says which).
  double host_us = 0.0;
  /// Kernel launches and memset nodes one call enqueues at the key's size; -1 unknown (since
  /// schema 5).
  std::int64_t launches = -1;

  /// Field-by-field equality over trial_fields.
  friend bool operator==(const Trial& a, const Trial& b);
};

/// The fields of Trial, listed once. SQL columns have no prefix.
inline constexpr std::tuple trial_fields{
    Field<Trial, std::string>{"label", &Trial::label, "canonical variant label"},
    Field<Trial, TrialStatus>{"status", &Trial::status,
                              "ok, compile_failed, wrong_result or launch_failed"},
    Field<Trial, std::string>{"reason", &Trial::reason, "failure reason, empty for ok"},
    Field<Trial, double>{"median_us", &Trial::median_us, "median time per call, us"},
    Field<Trial, double>{"spread_us", &Trial::spread_us,
                         "interquartile range (p75 - p25) of per-batch times, us"},
    Field<Trial, std::int64_t>{"samples", &Trial::samples, "timed batches"},
    Field<Trial, double>{"gbps", &Trial::gbps, "effective bandwidth, GB/s (1e9 B/s)"},
    Field<Trial, std::int64_t>{"registers", &Trial::registers,
                               "registers per thread, -1 unknown"},
    Field<Trial, std::int64_t>{"spill_bytes", &Trial::spill_bytes,
                               "spilled bytes per thread, -1 unknown", kPlain, /*since_schema=*/2},
    Field<Trial, std::int64_t>{"tie_rank", &Trial::tie_rank,
                               "0 winner, 1.. tied with it by preference, -1 not tied", kPlain, 3},
    Field<Trial, double>{"confirm_median_us", &Trial::confirm_median_us,
                         "median in the confirmation measurement, us; 0 not in it", kPlain, 3},
    Field<Trial, double>{"host_us", &Trial::host_us, "host enqueue cost per call, us; 0 unknown", kPlain, 5},
    Field<Trial, std::int64_t>{"launches", &Trial::launches, "launches per call; -1 unknown", kPlain, 5},
};
static_assert(aggregate_arity<Trial>() == std::tuple_size_v<decltype(trial_fields)>,
              "every Trial member must be listed in trial_fields");

/// A stored trial: key, measurement and provenance, as read back from a database.
///
/// Thread-safety: plain value type.
struct TrialRow {
  TuningKey key;
  Trial trial;
  Provenance provenance;

  friend bool operator==(const TrialRow&, const TrialRow&) = default;
};

}  // namespace amax::db

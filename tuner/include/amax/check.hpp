#pragma once
// `amax-tune check`: does a tuning database's choice still hold on this device? Re-measures each
// stored winner against its closest alternatives (its recorded tie set and the fastest other
// trials) in interleaved rounds and reports the regret: the stored winner's time now / the best
// time now among them (DESIGN.md section 5: a winner must hold on the next run).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/measure.hpp"

namespace amax::tune {

/// What to check.
struct CheckOptions {
  std::filesystem::path db_path;       ///< the database; opened read-only, never changed
  /// Optional second database (read-only): its winner of each key, when made on this device, is
  /// measured too. With the database of a second tune this measures the reproducibility target:
  /// the first run's winners timed against the second run's.
  std::filesystem::path against;
  std::vector<DType> dtypes;           ///< only these dtypes; empty = all
  std::vector<std::uint64_t> sizes;    ///< only these element counts; empty = all
  int device = 0;                      ///< device ordinal
  TimingProtocol protocol;             ///< final_rounds interleaved rounds, tie rule
  double hold_regret = 1.05;           ///< an entry holds when its regret is at most this
  std::size_t tied_alternatives = 6;   ///< at most this many members of the recorded tie set
  std::size_t other_alternatives = 2;  ///< plus this many of the fastest other ok trials
  std::filesystem::path cache_dir = BinaryCache::default_dir();  ///< binary cache; empty = none
  bool progress = true;                ///< one line per key on stderr
};

/// One measured alternative of a key.
struct CheckedVariant {
  std::string label;
  Stats now;              ///< this run's interleaved rounds (GPU time); samples 0 when it could not be timed
  double host_us = 0;     ///< the host's enqueue cost per call in those rounds (median), us; 0 not timed
  std::string problem;    ///< why it was not timed (invalid label, compile failure, wrong result)
};

/// One key of the database.
struct CheckEntry {
  DType dtype{};
  std::uint64_t n = 0;
  std::string winner;             ///< the stored winner's label
  double stored_us = 0;           ///< its stored median
  std::string skipped;            ///< non-empty: not measured, and why (another device or arch)
  std::vector<CheckedVariant> variants;  ///< the winner first, then the alternatives
  std::string against;            ///< the other database's winner of this key, if any
  std::string best;               ///< the fastest label now
  double winner_us = 0, best_us = 0;
  double regret = 0;              ///< winner_us / best_us (>= 1); 0 when the winner could not be timed
  bool tied = false;              ///< the winner is statistically tied with the best now (TieRule)
  bool holds = false;             ///< regret <= hold_regret
};

/// The whole check.
struct CheckReport {
  DeviceInfo device;
  std::vector<CheckEntry> entries;  ///< every winner of the database that passed the filters
  int measured = 0, held = 0, skipped = 0;
  double geomean_regret = 0, max_regret = 0;  ///< over measured entries with a regret
  std::string max_at;               ///< "bf16 n=65536"
};

/// Errors that stop a check (no database, a damaged one, no device): what() says which and that
/// the file was left untouched.
struct CheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs the check. The database is opened read-only: it is never written, whatever happens.
/// Entries measured on another device (name, arch or CU count differ) are skipped with a reason
/// naming both. Errors: CheckError, BackendError (the device failed).
CheckReport run_check(const CheckOptions& options);

/// The labels a check measures for `winner` among its trials `trials` (same identity as the
/// winner): the winner, then up to `tied` members of its recorded tie set by tie rank, then up to
/// `others` of the fastest other ok trials (by stored median, then label). Pure; thread-safe.
std::vector<std::string> check_labels(const db::WinnerRow& winner, const std::vector<db::TrialRow>& trials,
                                      std::size_t tied, std::size_t others);

/// Geometric mean and maximum of regrets, and where the maximum is; fills the report's summary
/// from its entries. Pure.
void summarize(CheckReport& report);

}  // namespace amax::tune

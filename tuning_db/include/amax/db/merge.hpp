// amax-tune tuning database: merging two databases.
#pragma once

#include <amax/db/family.hpp>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace amax::db {

/// How merge() treats conflicts. Plain value type.
struct MergePolicy {
  /// For a key whose winners come from different devices (device_name, arch or CU count
  /// differ): false (default) fails with DbError(InvalidArgument) naming the key and both
  /// devices; true keeps the faster one anyway and lists the key in FamilyMergeReport::contested with
  /// different_devices set (nothing is logged: the caller reports it, once).
  bool allow_different_devices = false;
  /// Replace an existing @p out_path (default: refuse with DbError(InvalidArgument)).
  bool overwrite_output = false;
};

/// One key (or, for group keys, one bucket) of kernel family F that had several winners (in both
/// inputs, or several identities in one); the median times are in microseconds. Plain value type.
template <class F>
struct MergeDecision {
  KeyOf<F> key;                              ///< the key (for a group bucket: the kept winner's key)
  WinnerRowOf<F> kept;                       ///< the faster winner
  char kept_from = 'a';                      ///< 'a' or 'b': the input it came from
  WinnerRowOf<F> dropped;                    ///< the fastest of the others
  bool different_devices = false;            ///< kept and dropped were measured on different devices
  std::vector<std::string> differing_fields; ///< provenance fields that differ (timestamp included)
};

/// What merge() did with the rows of kernel family F. Plain value type.
template <class F>
struct FamilyMergeReport {
  std::size_t winners_written = 0;
  std::size_t trials_written = 0;
  std::size_t winners_from_a = 0;           ///< of winners_written: kept from a (the rest from b)
  std::size_t winners_from_b = 0;
  std::vector<MergeDecision<F>> contested;  ///< sorted by key (a group bucket: by its kept key)
};

/// What merge() did, per kernel family. Plain value type.
struct MergeReport {
  FamilyMergeReport<SingleFamily> single;
  FamilyMergeReport<MultiFamily> group;
  FamilyMergeReport<QuantizeFamily> quantize;
};

/// Merges the databases at @p a_path and @p b_path (opened ReadOnly, never written) into a new
/// database at @p out_path (written to a temporary file beside it and renamed at the end; left
/// in rollback-journal mode, ready to ship).
///
/// Per key, the candidates are all winner rows of the key in a and b; the one with the lowest
/// median_us wins (ties: a before b, then the newer timestamp) and keeps its provenance; the
/// trials of that key and that provenance from the same input come along; other winners and
/// trials of the key are dropped. Keys without a winner in either input keep the trials of both
/// (a's row first when the same trial is in both). Candidates measured on different devices
/// (same_device() false) make merge fail unless policy.allow_different_devices.
///
/// @throws DbError InvalidArgument (different devices, naming the key and both devices; out_path
///   exists and !overwrite_output; out_path is one of the inputs), and any error of
///   TuningDb::open on the inputs (Corrupt, FutureSchema, Io...) or of writing the output.
/// Thread-safety: may run concurrently with readers/writers of the inputs.
MergeReport merge(const std::filesystem::path& a_path, const std::filesystem::path& b_path,
                  const std::filesystem::path& out_path, const MergePolicy& policy = {});

}  // namespace amax::db

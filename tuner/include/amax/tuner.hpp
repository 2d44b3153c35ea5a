#pragma once
// The offline tuning loop: for each (dtype, size) key, verify every variant bit-exactly, time the
// survivors and record every trial and the winner in the tuning database (DESIGN.md sections 4-5).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/measure.hpp"
#include "amax/multi_tune.hpp"
#include "amax/search.hpp"
#include "amax/search_space.hpp"
#include "amax/tune_times.hpp"
#include "amax/workload.hpp"

namespace amax::tune {

/// What to tune and where to record it.
struct TuneOptions {
  std::string arch;                   ///< must equal the device's arch (target ID on AMD)
  std::vector<DType> dtypes{DType::fp32, DType::fp16, DType::bf16};
  std::vector<std::uint64_t> sizes;   ///< element counts; default_sizes() when empty
  bool tune_sizes = true;             ///< false: no single-tensor sizes (`--sizes none`: groups only)
  /// Multi-tensor group shapes to tune after the sizes: nullopt = default_groups(dtypes), empty =
  /// none. Each is keyed in the database by its shape (tensors, total bytes, largest tensor).
  std::optional<std::vector<GroupSpec>> groups;
  std::filesystem::path db_path;      ///< the tuning database (created if missing)
  unsigned jobs = 0;                  ///< parallel JIT compilations; 0 = hardware threads
  double time_budget_s = 0;           ///< stop starting new keys after this many seconds; 0 = none
  bool retune = false;                ///< re-tune keys that already have a current winner
  bool stale_only = false;            ///< tune exactly the keys whose winner is stale (sizes ignored)
  bool rebuild_db = false;            ///< move a damaged database aside and start a new one
  /// Never write db_path: read it (when it exists) to resume from, keep this run's results in
  /// memory only (the report is all that remains). Without it an unwritable database is refused.
  bool db_in_memory = false;
  int device = 0;                     ///< device ordinal
  SpaceKind space = SpaceKind::pruned;
  /// Single-tensor strategies to tune (their variants of `space`, TransformerEngine's baselines
  /// included where their strategy is listed); empty = every strategy. Multi-tensor groups are not
  /// filtered. For measuring a strategy against others (with --full: its whole grid).
  std::vector<Strategy> strategies;
  TimingProtocol protocol;
  std::filesystem::path cache_dir = BinaryCache::default_dir();  ///< binary cache; empty = none
  bool progress = true;               ///< progress lines (with an ETA) on stderr
};

/// The tuner's default size grid: power_of_two_sizes() plus 1000, 100000, 3000000, 50000000 and
/// 300000000 (sizes that are not powers of two, as real tensors are), ascending.
std::vector<std::uint64_t> default_sizes();

/// A whole run.
struct TuneReport {
  DeviceInfo device;
  std::string compiler;
  std::string protocol;
  std::vector<KeyResult> keys;
  std::vector<GroupResult> groups;  ///< tuned (or resumed) multi-tensor groups
  double wall_s = 0;
  double compile_s = 0;             ///< compiling (or reading from the cache) and loading the kernels
  TuneTimes times;                  ///< where wall_s went
  int kernels_compiled = 0;         ///< JIT-compiled in this run
  int kernels_cached = 0;           ///< read from the binary cache
  int multi_kernels_compiled = 0;   ///< multi-tensor kernels JIT-compiled in this run
  int multi_kernels_cached = 0;     ///< multi-tensor kernels read from the binary cache
  std::vector<std::string> not_done;  ///< keys left when the time budget ran out
  bool db_in_memory = false;          ///< TuneOptions::db_in_memory: nothing was saved in the file
};

/// Errors the tuner stops on (wrong device, unusable database): what() says what and how to fix.
struct TuneError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs the tuning: the sizes of every dtype, then the multi-tensor groups. Each finished key or group is committed in its own transaction, so a killed run keeps
/// every finished key and a restarted one resumes. Expected failures (a variant that does not
/// compile, launches badly or computes a wrong result) are recorded as trials, never thrown.
/// The database is checked first without changing it (a damaged one without rebuild_db, a newer
/// schema, one this process cannot write without db_in_memory: refused naming the file, its owner
/// and mode), then the device; the file is opened for writing (created, migrated, moved aside by
/// rebuild_db) only once both passed, so a run that fails there leaves it byte for byte as it was.
/// Errors: TuneError (arch mismatch naming both, no device, an unusable database), db::DbError,
/// BackendError (the device failed).
TuneReport run_tuning(const TuneOptions& options);

}  // namespace amax::tune

#pragma once
// On-disk cache of compiled kernel binaries, shared by every process of a user.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amax {

/// What identifies a compiled binary: the exact source, the target and the compiler.
struct BinaryKey {
  std::string source_hash;       ///< fnv1a64 of the rendered source, 16 hex digits
  std::string arch;              ///< "sm_90", "gfx942:sramecc+:xnack-"
  std::string compiler_version;  ///< "nvrtc 13.0"
  std::string id() const;        ///< all three joined; stored in the entry and compared on load
};

/// One cache entry: the binary and the compiler log it came with (the log holds NVRTC's resource
/// report, so usage is known for cached kernels too).
struct CachedBinary {
  std::vector<char> binary;
  std::string log;
};

/// Directory of entries `<dir>/<vendor-neutral key hash>.bin`, each: magic "AMAXBIN2", the key id,
/// the log and the binary with their lengths, and an FNV-1a 64 checksum over everything before it.
///
/// Concurrency and damage: an entry is written to a unique temporary file in the same directory
/// and renamed into place (atomic on POSIX), so a reader sees a whole entry or none; concurrent
/// writers of one key each rename a complete file. load() verifies magic, key, lengths and
/// checksum; a damaged or truncated entry is reported once (spdlog warning), removed and treated
/// as a miss, so the caller rebuilds it. Temporaries of writers killed before their rename are
/// removed by a later store() once ten minutes old. I/O failures never throw: a cache that cannot be written
/// (read-only HOME) degrades to no caching with one warning.
/// Thread-safety: all methods are safe to call concurrently, across threads and processes.
class BinaryCache {
 public:
  /// A cache in `dir` (created on first store); an empty path disables caching.
  explicit BinaryCache(std::filesystem::path dir);
  /// $AMAX_TUNE_CACHE_DIR, else $XDG_CACHE_HOME/amax-tune/kernels, else
  /// $HOME/.cache/amax-tune/kernels; empty when none of them is set.
  static std::filesystem::path default_dir();

  bool enabled() const noexcept { return !dir_.empty(); }
  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::filesystem::path path_of(const BinaryKey& key) const;

  /// The entry for `key`, or nullopt on a miss or a damaged entry (then removed).
  std::optional<CachedBinary> load(const BinaryKey& key) const;
  /// Stores an entry; returns false (after one warning) when it cannot be written.
  bool store(const BinaryKey& key, const CachedBinary& entry) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace amax

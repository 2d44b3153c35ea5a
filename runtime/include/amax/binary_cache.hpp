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
/// Trust (amax/trust.hpp): the checksum detects damage, not tampering, so GPU code is
/// read only from a directory owned by the effective user or root, not writable by group or
/// others (a 0777 or 1777 shared directory is refused), under directories that others cannot
/// rename, and only from entries owned by the user or root without group/other write permission,
/// opened with O_NOFOLLOW relative to the checked directory and checked with fstat on the
/// descriptor that is read. A directory or entry that fails is never read: one warning per process
/// and directory (naming the path, its owner and mode and what to do) and the caller compiles
/// instead. The directory and the missing parents it creates get mode 0700, entries 0600.
///
/// Concurrency and damage: an entry is written to a temporary file of this process in the same
/// directory (created with O_CREAT | O_EXCL | O_NOFOLLOW, so a planted file or symbolic link is
/// never written through) and renamed into place (atomic on POSIX), so a reader sees a whole
/// entry or none; concurrent writers of one key each rename a complete file; an existing entry of
/// another user is never replaced. load() verifies magic, key, lengths and checksum; a damaged or
/// truncated entry is reported once (warning), removed and treated as a miss, so the caller
/// rebuilds it. Temporaries of writers killed before their rename are removed by a later store()
/// once ten minutes old. I/O failures never throw: a cache that cannot be written (read-only
/// HOME) degrades to no caching with one warning.
/// Thread-safety: all methods are safe to call concurrently, across threads and processes.
class BinaryCache {
 public:
  /// A cache in `dir` (created on first store); an empty path disables caching.
  explicit BinaryCache(std::filesystem::path dir);
  /// $AMAX_TUNE_CACHE_DIR, else $XDG_CACHE_HOME/amax-tune/kernels, else
  /// $HOME/.cache/amax-tune/kernels; empty when none of them is set.
  static std::filesystem::path default_dir();

  bool enabled() const noexcept { return !dir_.empty(); }
  std::filesystem::path path_of(const BinaryKey& key) const;
  /// The name store() tries for its temporary file at `attempt` (0, 1, ...; an own leftover at
  /// one name moves it to the next): `<entry>.tmp.<pid>.<attempt>`. Predictable on purpose (the
  /// O_EXCL | O_NOFOLLOW creation is what makes it safe), so tests can plant files there.
  std::filesystem::path temporary_path(const BinaryKey& key, unsigned attempt) const;

  /// The entry for `key`, or nullopt on a miss, a damaged entry (then removed) or a directory or
  /// entry refused by the trust rule (one warning per process and directory).
  std::optional<CachedBinary> load(const BinaryKey& key) const;
  /// Stores an entry; returns false (after one warning) when it cannot be written or the
  /// directory, a file at the temporary's name or an existing entry fails the trust rule.
  bool store(const BinaryKey& key, const CachedBinary& entry) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace amax

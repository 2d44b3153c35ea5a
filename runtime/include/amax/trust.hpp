#pragma once
// The trust rule for files that hold GPU code, in one place: the kernel cache
// (binary_cache.cpp) and release bundles of compiled kernels use it, the database loaders use its
// writability check.
//
// The rule (the one ssh applies to ~/.ssh): GPU code is loaded only from a regular file owned by
// the effective user or by root, with no write permission for group or others, in a directory
// that is also owned by the effective user or root and not writable by group or others (a sticky
// 1777 directory like /tmp is refused too: anyone can add a file to it). The directories above it
// must be owned by the effective user or root and be writable only by their owner, unless they
// are sticky (then others cannot rename what is in them, which is why /tmp may be an ancestor).
// Root's files are trusted for installed code (/usr/share/...).
//
// No time of check to time of use: a directory is opened once (O_DIRECTORY, O_NOFOLLOW on the
// resolved path) and checked with fstat; files in it are opened relative to that descriptor
// with O_NOFOLLOW and checked with fstat on the descriptor the bytes are then read from.
//
// Reusing it (e.g. a loader of release bundles): `read_trusted_file(path, &why)` reads one file
// under the rule, or returns nullopt with `why` naming the path, its owner uid and mode, and what
// to do; for many files in one directory open a TrustedDir once and call read() per file. Decide
// what happens on a refusal (skip the file and compile instead, with one warning) in the caller.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

struct stat;

namespace amax::trust {

/// True when only the effective user and root can change what `st` describes: owned by
/// geteuid() or uid 0, and no write bit for group or others. Thread-safe.
bool only_owner_can_write(const struct stat& st) noexcept;

/// "uid 65534 (nobody), mode 0777" for `st`: the owner (name where the system knows it) and the
/// permission bits in octal, for messages. Thread-safe.
std::string describe_owner_and_mode(const struct stat& st);

/// Why the directory `dir_fd` (an open descriptor of the directory at `path`) fails the rule, or
/// "" when it passes. The reason names `path`, the owner and mode, and what to do. Thread-safe.
std::string check_directory_fd(int dir_fd, const std::filesystem::path& path);

/// Why the file `fd` (opened with O_NOFOLLOW, at `path`) fails the rule (not a regular file,
/// owned by another user, writable by group or others), or "" when it passes. Thread-safe.
std::string check_file_fd(int fd, const std::filesystem::path& path);

/// Why a directory above the directory `dir` (an absolute, symlink-free path such as realpath's)
/// fails the ancestor rule (lstat of each, up to /), or "" when none does. Thread-safe.
std::string check_ancestors(const std::filesystem::path& dir);

/// A directory opened and checked once; files are then opened relative to it, so that renaming
/// a directory above it cannot redirect a later read. Move-only; closes its descriptor.
/// Thread-safety: read() may be called concurrently on one object.
class TrustedDir {
 public:
  /// Resolves `dir` (realpath), checks the directories above it, opens it (O_DIRECTORY |
  /// O_NOFOLLOW) and checks the opened directory. Never throws for a bad directory: check ok(),
  /// missing() (it does not exist: nothing to warn about) and reason().
  static TrustedDir open(const std::filesystem::path& dir);

  TrustedDir(TrustedDir&& o) noexcept;
  TrustedDir& operator=(TrustedDir&& o) noexcept;
  TrustedDir(const TrustedDir&) = delete;
  TrustedDir& operator=(const TrustedDir&) = delete;
  ~TrustedDir();

  bool ok() const noexcept { return fd_ >= 0; }
  bool missing() const noexcept { return missing_; }
  /// Why it is not ok() ("" when it is).
  const std::string& reason() const noexcept { return reason_; }
  /// The descriptor of the checked directory (-1 when not ok()), for openat/renameat/unlinkat.
  int fd() const noexcept { return fd_; }

  /// The whole content of the file `name` in this directory if it passes the rule. nullopt with
  /// *why empty when there is no such file; nullopt with *why set when it is refused (a symbolic
  /// link, not a regular file, another user's file, writable by group or others) or unreadable.
  /// Reads through the descriptor that fstat checked.
  std::optional<std::string> read(const std::string& name, std::string* why) const;

 private:
  TrustedDir() = default;
  int fd_ = -1;
  bool missing_ = false;
  std::string reason_;
  std::filesystem::path path_;
};

/// Reads `file` under the rule (its directory through TrustedDir, then the file): the entry point
/// for a loader of single files such as release bundles. nullopt with *why empty when the file or
/// its directory does not exist, with *why set when refused. Thread-safe.
std::optional<std::string> read_trusted_file(const std::filesystem::path& file, std::string* why);

/// Creates `dir` and every missing directory above it with mode 0700 (existing ones are left as
/// they are). Returns false with `ec` set when one cannot be created. Safe when several processes
/// race. Thread-safe.
bool create_private_directories(const std::filesystem::path& dir, std::error_code& ec);

/// For a database file: why a user other than the effective user and root can change `file`
/// (its owner, or group/other write permission on the file or on its directory, sticky or not:
/// SQLite's -journal/-wal files are created beside it), or "" when nobody else can, or when
/// `file` does not exist. Thread-safe.
std::string database_writable_by_others(const std::filesystem::path& file);

/// The one warning for a database that others can write (`what`: "user database", "tuning
/// database"): names the file, why, that its rows are still used (each is validated and can only
/// choose among the generated variants), what that can cost (a slower variant) and what to do.
/// "" when database_writable_by_others(file) is "". Thread-safe.
std::string database_warning(std::string_view what, const std::filesystem::path& file);

}  // namespace amax::trust

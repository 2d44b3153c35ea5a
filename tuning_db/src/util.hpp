// Private helpers of amax_tuning_db: SQLite error translation, lock retry, filesystem.
#pragma once

#include <amax/db/error.hpp>

#include <SQLiteCpp/Exception.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace amax::db::detail {

/// The strings of @p v separated by @p sep.
inline std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

/// "'<path>'" quoted for messages.
std::string quoted(const std::filesystem::path& p);

/// True for SQLITE_BUSY / SQLITE_LOCKED (primary code).
bool is_busy(int sqlite_code) noexcept;

/// Translates an SQLite exception into DbError: CORRUPT/NOTADB -> Corrupt, READONLY -> ReadOnly,
/// BUSY/LOCKED -> Locked, IOERR/CANTOPEN/FULL/PERM -> Io, others -> Other.
DbError translate(const SQLite::Exception& e, const std::filesystem::path& path,
                  std::string_view what);

/// Message suffix telling the user what to do with a damaged file.
std::string corrupt_advice();

/// Runs f(), retrying while it throws SQLite::Exception with BUSY/LOCKED, sleeping with
/// exponential backoff (0.5 ms doubling to 100 ms, with jitter) until @p timeout has passed in
/// total; then DbError(Locked). Other SQLite exceptions become DbError via translate().
template <class F>
auto with_retry(const std::filesystem::path& path, std::string_view what,
                std::chrono::milliseconds timeout, F&& f) -> decltype(f());

/// Sleeps for the next backoff step; returns false when the deadline has passed.
bool backoff_sleep(std::chrono::steady_clock::time_point deadline, int attempt);

[[noreturn]] void throw_locked(const std::filesystem::path& path, std::string_view what,
                               std::chrono::milliseconds timeout, int attempts,
                               const SQLite::Exception& last);

template <class F>
auto with_retry(const std::filesystem::path& path, std::string_view what,
                std::chrono::milliseconds timeout, F&& f) -> decltype(f()) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int attempt = 0;; ++attempt) {
    try {
      return f();
    } catch (const SQLite::Exception& e) {
      if (!is_busy(e.getErrorCode())) throw translate(e, path, what);
      if (!backoff_sleep(deadline, attempt)) throw_locked(path, what, timeout, attempt + 1, e);
    }
  }
}

/// Creates @p dir and its missing parents with mkdir(2), treating "already exists as a
/// directory" as success, so any number of processes may race on it.
/// @throws DbError(Io) naming the component that could not be created and why.
void ensure_directories(const std::filesystem::path& dir, const std::filesystem::path& db_path);

/// The file's -wal, -shm and -journal companions.
std::filesystem::path sibling(const std::filesystem::path& p, std::string_view suffix);

/// Removes @p p's -wal, -shm, -journal companions, ignoring absent ones.
void remove_companions(const std::filesystem::path& p);

/// "file:" URI for @p p with percent-encoding and the given query ("immutable=1").
std::string file_uri(const std::filesystem::path& p, std::string_view query);

/// The current UTC time formatted by strftime(@p format) ("%Y%m%dT%H%M%SZ": "20261130T025100Z").
std::string utc_stamp(const char* format);

/// Whether @p s is valid UTF-8; if not, @p bad_offset receives the first bad byte's offset.
bool valid_utf8(std::string_view s, std::size_t* bad_offset = nullptr) noexcept;

/// A unique temporary name beside @p p ("<p>.tmp-<pid>-<counter>").
std::filesystem::path temp_beside(const std::filesystem::path& p);

/// Marks a database file as being opened or used by a TuningDb of this process, for its
/// lifetime (a process-wide count per absolute path). Movable, not copyable.
class FileUse {
 public:
  FileUse() = default;
  explicit FileUse(const std::filesystem::path& p);
  FileUse(FileUse&& o) noexcept : key_(std::move(o.key_)) { o.key_.clear(); }
  FileUse& operator=(FileUse&& o) noexcept;
  FileUse(const FileUse&) = delete;
  FileUse& operator=(const FileUse&) = delete;
  ~FileUse();
  /// How many FileUse objects of this process currently name @p p.
  static int count(const std::filesystem::path& p);

 private:
  std::string key_;
};

/// Removes @p db_path's -wal and -shm after a failed ReadOnly open, but only when nobody can be
/// using them: no other TuningDb of this process names the file, the -wal is empty, and an
/// exclusive POSIX lock on SQLite's SHARED byte range of the database file can be taken (every
/// connection to a WAL-mode file holds a shared lock there for as long as it is open, and a
/// newcomer must get one before it opens the -wal; SQLite's own "last connection deletes the WAL"
/// rule uses the same lock). Never throws.
void remove_unused_wal_files(const std::filesystem::path& db_path) noexcept;

}  // namespace amax::db::detail

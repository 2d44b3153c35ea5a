// amax-tune tuning database: the one exception type of the layer.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace amax::db {

/// What went wrong, for callers that react differently (e.g. the tuner offers --rebuild on
/// Corrupt, the runtime falls back to built-in defaults on anything).
enum class ErrorKind {
  Corrupt,          ///< the file is damaged or is not an SQLite database; it was left unchanged
  FutureSchema,     ///< the file's schema_version is newer than this build understands
  Locked,           ///< another connection held the lock longer than the configured bound
  Io,               ///< the file or a parent directory could not be created, opened, read or written
  ReadOnly,         ///< a write was asked of a read-only database, file or directory
  InvalidArgument,  ///< a caller value (or a text-dump line) is out of range or malformed
  Other,            ///< any other SQLite failure (the message carries SQLite's own text)
};

/// Lower-case name of a kind ("corrupt", "future_schema", ...). Thread-safe, never throws.
[[nodiscard]] std::string_view to_string(ErrorKind kind) noexcept;

/// The exception every function of amax::db throws (SQLite and filesystem errors are translated
/// into it). The message names the database path (when there is one), the operation and the
/// offending value.
///
/// Thread-safety: immutable after construction; may be read from any thread.
class DbError : public std::runtime_error {
 public:
  /// @param kind     category of the failure
  /// @param message  complete human-readable message (should name the path and the value)
  /// @param path     database file involved, empty if none
  /// @param sqlite_code  SQLite extended result code, 0 if the error did not come from SQLite
  DbError(ErrorKind kind, const std::string& message, std::filesystem::path path = {},
          int sqlite_code = 0);

  /// Category of the failure.
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  /// Database file involved; empty when none (e.g. a bad argument to a pure function).
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// SQLite extended result code (e.g. 11 = SQLITE_CORRUPT, 26 = SQLITE_NOTADB), 0 if none.
  [[nodiscard]] int sqlite_code() const noexcept { return sqlite_code_; }

 private:
  ErrorKind kind_;
  std::filesystem::path path_;
  int sqlite_code_;
};

}  // namespace amax::db

// Private: TuningDb::Impl, shared by the sources of TuningDb.
#pragma once

#include "util.hpp"

#include <amax/db/tuning_db.hpp>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace amax::db {

namespace detail {
/// The first column of every row of @p q as text.
inline std::vector<std::string> text_rows(SQLite::Statement& q) {
  std::vector<std::string> rows;
  while (q.executeStep()) rows.push_back(q.getColumn(0).getString());
  return rows;
}

/// Builds a new database at @p out_path: @p fill writes it into a temporary file beside it (rollback
/// journal), which then replaces @p out_path and its stale -wal/-shm/-journal files. On failure
/// nothing is left behind and @p out_path is unchanged. @throws DbError (Io when the rename fails).
void build_beside(const std::filesystem::path& out_path, const std::function<void(TuningDb&)>& fill);

}  // namespace detail

struct TuningDb::Impl {
  std::filesystem::path path;
  /// Registers this object as a user of `path` in this process for its lifetime (see
  /// detail::FileUse), so that a failed ReadOnly open elsewhere in the process never touches
  /// the file's locks or companions while this object may hold them.
  detail::FileUse use;
  OpenMode mode = OpenMode::ReadWrite;
  OpenOptions options;
  int version = 0;          // schema version of the file
  std::string journal;      // journal mode after open
  bool immutable = false;   // opened with immutable=1
  bool in_memory = false;   // OpenOptions::memory_fallback replaced the file
  std::unique_ptr<SQLite::Database> db;
  mutable std::mutex mu;

  /// Runs f() under the mutex with lock retry and error translation (see detail::with_retry).
  template <class F>
  auto run(std::string_view what, F&& f) const -> decltype(f()) {
    std::lock_guard<std::mutex> lock(mu);
    try {
      return detail::with_retry(path, what, options.lock_timeout, f);
    } catch (const DbError& e) {
      if (e.kind() == ErrorKind::Locked) explain_locked(e);
      throw;
    }
  }

  /// For the unix-dotfile VFS, rethrows @p e with a hint about a stale "<path>.lock" directory
  /// when one exists; returns otherwise.
  void explain_locked(const DbError& e) const;

  /// @throws DbError(ReadOnly) when opened ReadOnly.
  void require_writable(std::string_view what) const;

  /// Every row of the database, or the tables asked for.
  struct Snapshot {
    std::vector<WinnerRow> winners;
    std::vector<TrialRow> trials;
    std::vector<GroupWinnerRow> group_winners;
    std::vector<GroupTrialRow> group_trials;
    std::vector<WinnerRow> quant_winners;
    std::vector<TrialRow> quant_trials;
  };

  /// The winners (single and group) and/or trials (single and group) read in one read
  /// transaction (consistent while others write).
  Snapshot snapshot(bool with_winners = true, bool with_trials = true) const;
};

}  // namespace amax::db

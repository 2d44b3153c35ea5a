// TuningDb: the object, its state, and the file-wide operations (journal mode, integrity check).
// Opening and recovery are open.cpp, writes record.cpp, reads queries.cpp.
#include <amax/db/tuning_db.hpp>

#include "tuning_db_impl.hpp"
#include "util.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

namespace amax::db {

using detail::quoted;
namespace fs = std::filesystem;

void TuningDb::Impl::require_writable(std::string_view what) const {
  if (mode == OpenMode::ReadOnly) {
    throw DbError(ErrorKind::ReadOnly,
                  "tuning database " + quoted(path) + ": " + std::string(what) +
                      " needs a writable database, but it was opened with OpenMode::ReadOnly",
                  path);
  }
}

TuningDb::TuningDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningDb::TuningDb(TuningDb&&) noexcept = default;
TuningDb& TuningDb::operator=(TuningDb&&) noexcept = default;
TuningDb::~TuningDb() = default;

TuningDb::Impl& TuningDb::impl() const {
  if (!impl_) throw DbError(ErrorKind::InvalidArgument, "use of a moved-from TuningDb");
  return *impl_;
}

const fs::path& TuningDb::path() const noexcept {
  static const fs::path none;
  return impl_ ? impl_->path : none;
}
OpenMode TuningDb::mode() const noexcept { return impl_ ? impl_->mode : OpenMode::ReadOnly; }
int TuningDb::schema_version() const noexcept { return impl_ ? impl_->version : 0; }
bool TuningDb::in_memory() const noexcept { return impl_ && impl_->in_memory; }

void TuningDb::Impl::explain_locked(const DbError& e) const {
  if (options.vfs != "unix-dotfile") return;
  std::error_code ec;
  const fs::path lock = detail::sibling(path, ".lock");
  if (!fs::exists(fs::symlink_status(lock, ec))) return;
  throw DbError(ErrorKind::Locked,
                std::string(e.what()) + "; with the unix-dotfile VFS the lock is the directory " + quoted(lock) +
                    ", which a process killed while holding it leaves behind: if no process is using the "
                    "database, remove that directory",
                path, e.sqlite_code());
}
std::string TuningDb::journal_mode() const {
  std::lock_guard<std::mutex> lock(impl().mu);
  return impl_->journal;
}

void TuningDb::use_rollback_journal() {
  Impl& im = impl();
  im.require_writable("use_rollback_journal");
  const std::string mode = im.run("switching to the rollback journal", [&] {
    im.db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const std::string m = im.db->execAndGet("PRAGMA journal_mode = DELETE").getString();
    if (m != "delete") {
      // SQLite keeps WAL while other connections use the file; let with_retry wait for them.
      throw SQLite::Exception("journal mode is still '" + m + "' (other connections are open)", SQLITE_BUSY);
    }
    return m;
  });
  std::lock_guard<std::mutex> lock(im.mu);
  im.journal = mode;
}

std::vector<std::string> TuningDb::integrity_check() const {
  Impl& im = impl();
  return im.run("PRAGMA integrity_check", [&] {
    SQLite::Statement q(*im.db, "PRAGMA integrity_check");
    return detail::text_rows(q);
  });
}

}  // namespace amax::db

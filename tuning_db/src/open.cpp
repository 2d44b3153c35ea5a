// TuningDb: opening a file (creation, locking, integrity and schema checks, the journal, schema
// migration), the in-memory fallback and the recovery of a damaged file (rebuild).
#include <amax/db/tuning_db.hpp>
#include <amax/file_access.hpp>

#include "schema.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>

namespace amax::db {

using detail::quoted;
namespace fs = std::filesystem;

namespace {

void connect(TuningDb::Impl& im, bool immutable) {
  int flags = im.mode == OpenMode::ReadWrite ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
                                             : SQLITE_OPEN_READONLY;
  std::string name = im.path.string();
  if (immutable) {
    flags |= SQLITE_OPEN_URI;
    name = detail::file_uri(im.path, "mode=ro&immutable=1");
  }
  const auto per_attempt = std::min<std::chrono::milliseconds>(im.options.lock_timeout, std::chrono::milliseconds(1000));
  im.db.reset();
  try {
    im.db = std::make_unique<SQLite::Database>(name.c_str(), flags, static_cast<int>(per_attempt.count()),
                                               im.options.vfs.empty() ? nullptr : im.options.vfs.c_str());
  } catch (const SQLite::Exception& e) {
    throw detail::translate(e, im.path, "opening");
  }
  im.immutable = immutable;
  if (im.mode == OpenMode::ReadWrite && sqlite3_db_readonly(im.db->getHandle(), "main") == 1) {
    im.db.reset();
    throw DbError(ErrorKind::ReadOnly,
                  "tuning database " + quoted(im.path) +
                      " cannot be opened for writing (the file or its filesystem is read-only); "
                      "it can still be read (amax-tune show, export)",
                  im.path);
  }
  if (im.mode == OpenMode::ReadOnly) {
    try {
      im.db->exec("PRAGMA query_only = 1");  // belt and braces: SQLite refuses any write
    } catch (const SQLite::Exception& e) {
      throw detail::translate(e, im.path, "opening read-only");
    }
  }
}

/// First read of the file: PRAGMA quick_check (or a plain read). Damage -> DbError(Corrupt).
void check_file(TuningDb::Impl& im) {
  auto probe = [&]() -> std::vector<std::string> {
    if (!im.options.check_integrity) {
      (void)im.db->execAndGet("SELECT count(*) FROM sqlite_master").getInt();
      return {"ok"};
    }
    SQLite::Statement q(*im.db, "PRAGMA quick_check(20)");
    return detail::text_rows(q);
  };
  std::vector<std::string> rows;
  try {
    rows = im.run("checking integrity", probe);
  } catch (const DbError& e) {
    // Only "cannot create or lock the -shm/-wal" qualifies; a hot journal that needs a rollback
    // (SQLITE_READONLY_ROLLBACK) or a WAL that needs recovery must not be read around.
    const int code = e.sqlite_code();
    const bool cannot_share = (code & 0xff) == SQLITE_CANTOPEN || code == SQLITE_READONLY_CANTINIT ||
                              code == SQLITE_READONLY_CANTLOCK || code == SQLITE_READONLY_DIRECTORY;
    if (im.mode != OpenMode::ReadOnly || im.immutable || !cannot_share) throw;
    // A WAL-mode file in a directory we cannot write: no -shm/-wal can be created, so SQLite
    // cannot coordinate with writers. Nobody can be writing there without them; read it as an
    // immutable file.
    spdlog::debug("tuning database '{}': read-only open failed ({}, code {}); reopening as immutable",
                  im.path.string(), e.what(), code);
    connect(im, true);
    rows = im.run("checking integrity", probe);
  }
  if (rows.size() != 1 || rows[0] != "ok") {
    std::string what;
    for (std::size_t i = 0; i < rows.size() && i < 3; ++i) what += (i ? "; " : "") + rows[i];
    throw DbError(ErrorKind::Corrupt,
                  "tuning database " + quoted(im.path) + " is damaged: PRAGMA quick_check reports " +
                      std::to_string(rows.size()) + " problem(s): " + what + detail::corrupt_advice(),
                  im.path, SQLITE_CORRUPT);
  }
}

void check_state(const TuningDb::Impl& im, const detail::FileState& st) {
  const bool ours = st.application_id == detail::kApplicationId;
  if (!st.has_meta) {
    if (st.tables.empty() && (st.application_id == 0 || ours)) return;  // fresh file
    char id[16];
    std::snprintf(id, sizeof id, "0x%08X", static_cast<unsigned>(st.application_id));
    throw DbError(ErrorKind::InvalidArgument,
                  "file " + quoted(im.path) + " is an SQLite database of another application "
                      "(application_id " + id + ", tables: " + detail::join(st.tables, ", ") +
                      ", no 'meta' table), not an amax-tune tuning database; refusing to use it",
                  im.path);
  }
  if (st.application_id != 0 && !ours) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08X", static_cast<unsigned>(st.application_id));
    throw DbError(ErrorKind::InvalidArgument,
                  "file " + quoted(im.path) + " has application_id " + id +
                      ", not amax-tune's; refusing to use it",
                  im.path);
  }
  if (!st.version_valid) {
    throw DbError(ErrorKind::Corrupt,
                  "tuning database " + quoted(im.path) + " has an invalid meta.schema_version '" +
                      st.version_text + "' (expected a positive integer)" + detail::corrupt_advice(),
                  im.path);
  }
  if (st.version > TuningDb::kSchemaVersion) {
    throw DbError(ErrorKind::FutureSchema,
                  "tuning database " + quoted(im.path) + " has schema version " +
                      std::to_string(st.version) + ", newer than schema version " +
                      std::to_string(TuningDb::kSchemaVersion) +
                      ", the newest this build of amax-tune understands; use a newer amax-tune "
                      "or another database file (the file was left unchanged)",
                  im.path);
  }
}

void setup_journal(TuningDb::Impl& im) {
  auto read_mode = [&] { return im.db->execAndGet("PRAGMA journal_mode").getString(); };
  std::string mode = im.run("reading the journal mode", read_mode);
  if (im.options.wal && mode != "wal") {
    std::string why;
    try {
      mode = im.run("enabling WAL", [&] { return im.db->execAndGet("PRAGMA journal_mode = WAL").getString(); });
    } catch (const DbError& e) {
      if (e.kind() == ErrorKind::Locked) throw;
      why = e.what();
      mode = im.run("reading the journal mode", read_mode);
    }
    if (mode != "wal") {
      spdlog::warn(
          "tuning database '{}': the WAL journal is not available ({}); using the rollback journal "
          "('{}') instead, so readers and writers will wait for each other",
          im.path.string(),
          why.empty() ? "the filesystem or VFS offers no shared memory, e.g. a network filesystem" : why,
          mode);
    }
  }
  if (mode == "wal") im.run("setting synchronous", [&] { im.db->exec("PRAGMA synchronous = NORMAL"); });
  im.journal = mode;
}

void migrate(TuningDb::Impl& im, int from) {
  if (from >= TuningDb::kSchemaVersion) return;
  const int done_from = im.run("migrating the schema", [&] {
    SQLite::Transaction t(*im.db, SQLite::TransactionBehavior::IMMEDIATE);
    const detail::FileState now = detail::inspect(*im.db);  // another process may have migrated
    check_state(im, now);
    for (int k = now.version + 1; k <= TuningDb::kSchemaVersion; ++k) detail::apply_migration(*im.db, k);
    t.commit();
    return now.version;
  });
  if (done_from > 0 && done_from < TuningDb::kSchemaVersion) {
    spdlog::info("tuning database '{}': migrated schema version {} to {}", im.path.string(), done_from,
                 TuningDb::kSchemaVersion);
  }
}

/// Refuses a ReadWrite open when SQLite could not create its journal files beside the database
/// (-journal, -wal, -shm): otherwise the open would succeed and the first write fail.
void require_writable_directory(const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string why = access_problem(dir, W_OK | X_OK, "its directory");
  if (why.empty()) return;
  throw DbError(ErrorKind::ReadOnly,
                "tuning database " + quoted(path) + " cannot be opened for writing: " + why +
                    ", and SQLite creates its journal files there; it can still be read (amax-tune show, "
                    "export), or use a database in a writable directory",
                path);
}

/// Creates a missing database file complete: the schema is written to a temporary file beside
/// it, which is then hard-linked to @p path (link(2) fails if the name exists, so exactly one of
/// several racing creators wins and nobody's file is replaced). Readers therefore see no file or
/// a complete database, never an empty SQLite file or a half-made schema. Best effort: on any
/// failure (a filesystem without hard links, no write permission...) nothing is left behind and
/// the caller creates the file in place as before, reporting the errors of that.
void create_complete(const TuningDb::Impl& im) {
  const fs::path tmp = detail::temp_beside(im.path);
  std::error_code ec;
  fs::remove(tmp, ec);
  try {
    {
      SQLite::Database db(tmp.c_str(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 0,
                          im.options.vfs.empty() ? nullptr : im.options.vfs.c_str());
      if (im.options.wal) {
        try {
          db.exec("PRAGMA journal_mode = WAL");  // no shared memory: stays 'delete'; open() warns
        } catch (const SQLite::Exception&) {
        }
      }
      SQLite::Transaction t(db, SQLite::TransactionBehavior::IMMEDIATE);
      for (int k = 1; k <= TuningDb::kSchemaVersion; ++k) detail::apply_migration(db, k);
      t.commit();
    }  // closed: a WAL is checkpointed into the file and removed
    if (::link(tmp.c_str(), im.path.c_str()) != 0 && errno != EEXIST) {
      spdlog::debug("tuning database '{}': cannot link the new file into place ({}); creating it in place",
                    im.path.string(), std::strerror(errno));
    }
  } catch (const std::exception& e) {
    spdlog::debug("tuning database '{}': cannot prepare a new file beside it ({}); creating it in place",
                  im.path.string(), e.what());
  }
  fs::remove(tmp, ec);
  detail::remove_companions(tmp);
}

}  // namespace

std::string TuningDb::write_problem(const fs::path& path) {
  if (path.empty()) return "the tuning database path is empty";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    if (std::string why = access_problem(path, R_OK | W_OK, "the file"); !why.empty()) return why;
  }
  // The directory SQLite creates its journal files in, or the nearest existing ancestor in which
  // the missing directories would be created.
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::path dir = parent;
  while (!fs::exists(dir, ec) && dir.has_parent_path() && dir.parent_path() != dir) dir = dir.parent_path();
  if (!fs::exists(dir, ec)) dir = ".";
  if (!fs::is_directory(dir, ec)) return {};  // open() names a path component that is not a directory
  return access_problem(dir, W_OK | X_OK, dir == parent ? "its directory" : "its nearest existing directory");
}

TuningDb TuningDb::open(const fs::path& path, OpenMode mode, const OpenOptions& options) {
  if (path.empty()) throw DbError(ErrorKind::InvalidArgument, "tuning database path is empty");
  auto im = std::make_unique<Impl>();
  im->path = path;
  im->use = detail::FileUse(path);
  im->mode = mode;
  im->options = options;
  if (options.lock_timeout.count() < 0) {
    throw DbError(ErrorKind::InvalidArgument,
                  "tuning database " + quoted(path) + ": lock_timeout is negative (" +
                      std::to_string(options.lock_timeout.count()) + " ms)",
                  path);
  }
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) {
    throw DbError(ErrorKind::InvalidArgument, "tuning database path " + quoted(path) + " is a directory", path);
  }
  if (mode == OpenMode::ReadWrite && options.memory_only) return open_in_memory(path, options, "");
  if (mode == OpenMode::ReadWrite && options.memory_fallback) {
    try {
      OpenOptions plain = options;
      plain.memory_fallback = false;
      return open(path, mode, plain);
    } catch (const DbError& e) {
      if (e.kind() != ErrorKind::ReadOnly && e.kind() != ErrorKind::Io) throw;
      return open_in_memory(path, options, e.what());
    }
  }
  if (mode == OpenMode::ReadWrite) {
    detail::ensure_directories(path.parent_path(), path);
  } else if (!fs::exists(st)) {
    throw DbError(ErrorKind::Io,
                  "tuning database " + quoted(path) + " cannot be opened read-only: " +
                      (ec && ec != std::errc::no_such_file_or_directory ? ec.message()
                                                                       : std::string("no such file")),
                  path);
  }
  if (mode == OpenMode::ReadWrite) {
    if (!fs::exists(fs::symlink_status(path, ec))) {
      require_writable_directory(path);
      create_complete(*im);
    }
    connect(*im, false);
    check_file(*im);
    const detail::FileState fst = im->run("reading the schema version", [&] { return detail::inspect(*im->db); });
    check_state(*im, fst);
    require_writable_directory(path);  // after the checks: damage and a future schema come first
    setup_journal(*im);
    migrate(*im, fst.version);
    im->version = kSchemaVersion;
    return TuningDb(std::move(im));
  }

  // ReadOnly. SQLite creates -wal/-shm beside a WAL-mode file even for a read-only connection
  // (it needs them to coordinate with writers) and cannot remove them at close. If we refuse
  // the file, remove the ones this open may have created, as long as the -wal holds nothing and
  // no other connection uses them (a writer may have created or opened them meanwhile: removing
  // them from under it would send its commits to an unlinked WAL, i.e. lose them).
  const fs::path wal = detail::sibling(path, "-wal");
  const fs::path shm = detail::sibling(path, "-shm");
  const bool had_wal = fs::exists(fs::symlink_status(wal, ec));
  const bool had_shm = fs::exists(fs::symlink_status(shm, ec));
  try {
    connect(*im, options.immutable);
    check_file(*im);
    const detail::FileState fst = im->run("reading the schema version", [&] { return detail::inspect(*im->db); });
    check_state(*im, fst);
    if (fst.version == 0) {
      throw DbError(ErrorKind::InvalidArgument,
                    "tuning database " + quoted(path) +
                        " holds no amax-tune tables (an empty SQLite file); a tune into it (amax-tune --db "
                        "FILE) initializes it",
                    path);
    }
    im->version = fst.version;
    im->journal = im->run("reading the journal mode",
                          [&] { return im->db->execAndGet("PRAGMA journal_mode").getString(); });
  } catch (const DbError&) {
    im->db.reset();
    if (!had_wal && !had_shm) detail::remove_unused_wal_files(path);
    throw;
  }
  return TuningDb(std::move(im));
}

TuningDb TuningDb::open_in_memory(const fs::path& path, const OpenOptions& options, const std::string& why) {
  auto im = std::make_unique<Impl>();
  im->path = path;
  im->mode = OpenMode::ReadWrite;
  im->options = options;
  im->options.memory_fallback = false;
  im->in_memory = true;
  try {
    im->db = std::make_unique<SQLite::Database>(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  } catch (const SQLite::Exception& e) {
    throw detail::translate(e, path, "opening an in-memory database");
  }
  int version = 0;
  std::error_code ec;
  bool copied = false;
  if (fs::exists(path, ec)) {
    // The file's contents, checked like any ReadOnly open (Corrupt, FutureSchema... propagate);
    // a file that cannot even be read is replaced by an empty database.
    std::optional<TuningDb> src;
    try {
      OpenOptions ro = options;
      ro.memory_fallback = false;
      src.emplace(open(path, OpenMode::ReadOnly, ro));
    } catch (const DbError& e) {
      if (e.kind() != ErrorKind::Io && e.kind() != ErrorKind::ReadOnly) throw;
    }
    if (src) {
      im->run("copying the database into memory", [&] {
        std::lock_guard<std::mutex> lock(src->impl_->mu);
        sqlite3_backup* b = sqlite3_backup_init(im->db->getHandle(), "main", src->impl_->db->getHandle(), "main");
        if (!b) throw SQLite::Exception(im->db->getHandle());
        const int rc = sqlite3_backup_step(b, -1);
        sqlite3_backup_finish(b);
        if (rc != SQLITE_DONE) throw SQLite::Exception(sqlite3_errstr(rc), rc);
      });
      version = src->schema_version();
      copied = true;
    }
  }
  migrate(*im, version);
  im->version = kSchemaVersion;
  im->journal = "memory";
  if (!why.empty())  // memory_only asked for it: the caller says so itself
    spdlog::warn("tuning database '{}' cannot be written ({}); using an in-memory database{} instead: results of "
                 "this run are kept in memory only and are lost when it ends unless exported",
                 path.string(), why, copied ? " holding a copy of its contents" : "");
  return TuningDb(std::move(im));
}

TuningDb TuningDb::rebuild(const fs::path& path, fs::path* moved_to, const OpenOptions& options) {
  if (moved_to) moved_to->clear();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    const std::string stamp = detail::utc_stamp("%Y%m%dT%H%M%SZ");
    fs::path dest = detail::sibling(path, ".corrupt-" + stamp);
    for (int i = 1; fs::exists(fs::symlink_status(dest, ec)); ++i) {
      dest = detail::sibling(path, ".corrupt-" + stamp + "." + std::to_string(i));
    }
    fs::rename(path, dest, ec);
    if (ec) {
      throw DbError(ErrorKind::Io,
                    "cannot move tuning database " + quoted(path) + " aside to " + quoted(dest) + ": " +
                        ec.message(),
                    path);
    }
    for (const char* suffix : {"-wal", "-shm", "-journal"}) {
      const fs::path from = detail::sibling(path, suffix);
      if (fs::exists(fs::symlink_status(from, ec))) fs::rename(from, detail::sibling(dest, suffix), ec);
    }
    spdlog::warn("tuning database '{}' was moved aside to '{}'; starting a fresh database", path.string(),
                 dest.string());
    if (moved_to) *moved_to = dest;
  }
  return open(path, OpenMode::ReadWrite, options);
}

void detail::build_beside(const fs::path& out_path, const std::function<void(TuningDb&)>& fill) {
  const fs::path tmp = detail::temp_beside(out_path);
  try {
    {
      OpenOptions opts;
      opts.wal = false;
      TuningDb db = TuningDb::open(tmp, OpenMode::ReadWrite, opts);
      fill(db);
    }
    detail::remove_companions(out_path);
    std::error_code ec;
    fs::rename(tmp, out_path, ec);
    if (ec) {
      throw DbError(ErrorKind::Io, "cannot move " + quoted(tmp) + " to " + quoted(out_path) + ": " + ec.message(),
                    out_path);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    detail::remove_companions(tmp);
    throw;
  }
}

}  // namespace amax::db

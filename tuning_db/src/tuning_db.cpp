#include <amax/db/nearest.hpp>
#include <amax/db/tuning_db.hpp>
#include <amax/file_access.hpp>

#include "codec.hpp"
#include "schema.hpp"
#include "store.hpp"
#include "tuning_db_impl.hpp"
#include "util.hpp"
#include "validate.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <system_error>

namespace amax::db {

using detail::quoted;
namespace fs = std::filesystem;

namespace {

std::string identity_order() { return detail::provenance_columns(kIdentity); }

std::vector<std::string> read_rows_text(SQLite::Statement& q) {
  std::vector<std::string> rows;
  while (q.executeStep()) rows.push_back(q.getColumn(0).getString());
  return rows;
}

/// "ORDER BY" of the canonical listing of Table: key, provenance identity, (label), id.
template <class Table>
std::string listing_order() {
  std::string order = detail::field_columns(*std::get<0>(Table::parts).fields) + ", " + identity_order();
  if constexpr (detail::per_label<Table>) order += ", label";
  return order + ", id";
}

/// The rows of Table (in the file's layout) matching @p where (empty: all), parameters bound by
/// @p bind, in the order @p order; none when the file's schema predates the table. Call inside
/// Impl::run(); may throw SQLite::Exception, DbError(Corrupt) for a value it cannot parse.
template <class Table, class Bind>
std::vector<typename Table::Row> select_rows(const TuningDb::Impl& im, const std::string& where, const std::string& order,
                                             Bind&& bind) {
  if (!detail::has_table<Table>(im.version)) return {};
  SQLite::Statement q(*im.db, "SELECT " + detail::select_list<Table>(im.version) + " FROM " +
                                  detail::source<Table>(im.version) + (where.empty() ? "" : " WHERE " + where) +
                                  " ORDER BY " + order);
  bind(q);
  std::vector<typename Table::Row> out;
  while (q.executeStep()) out.push_back(detail::read_row<Table>(q, im.path));
  return out;
}

/// The rows of Table matching a WinnerFilter, in listing order.
template <class Table>
std::vector<typename Table::Row> select_filtered(const TuningDb::Impl& im, const WinnerFilter& filter) {
  std::vector<std::string> conds;
  if (filter.arch) conds.push_back("arch = ?");
  if (filter.dtype) conds.push_back("dtype = ?");
  return select_rows<Table>(im, detail::join(conds, " AND "), listing_order<Table>(), [&](SQLite::Statement& q) {
    int i = 1;
    if (filter.arch) q.bind(i++, *filter.arch);
    if (filter.dtype) q.bind(i++, std::string(to_string(*filter.dtype)));
  });
}

/// Whether @p key's counts fit SQLite's signed integers (larger ones are never stored).
template <class Key>
bool storable(const Key& key) {
  bool ok = true;
  for_each_field(detail::fields_of(key), [&](const auto& field) {
    if constexpr (std::is_same_v<detail::value_t<decltype(field)>, std::uint64_t>) {
      ok &= field.get(key) <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    }
  });
  return ok;
}

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// open

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
    return read_rows_text(q);
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
    const std::string stamp = detail::compact_utc_stamp();
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

// ---------------------------------------------------------------------------------------------
// writes

namespace {

/// record_key / record_group_key: in one transaction, @p clear deletes what the new rows replace
/// (returning how many rows), then the trials and the winner are inserted with the provenance's
/// id, and provenance rows left unreferenced are deleted.
template <class TrialsT, class WinnersT, class Key, class Clear>
void record(TuningDb::Impl& im, const Key& key, const Provenance& provenance, std::span<const Trial> trials,
            const std::optional<Winner>& winner, Clear&& clear) {
  im.run("recording " + to_string(key), [&] {
    SQLite::Transaction t(*im.db, SQLite::TransactionBehavior::IMMEDIATE);
    const int deleted = clear();
    detail::ProvenanceIds ids(*im.db);
    detail::RowWriter<TrialsT> trial_writer(*im.db, ids);
    for (const Trial& trial : trials) trial_writer.insert({key, trial, provenance});
    if (winner) detail::RowWriter<WinnersT>(*im.db, ids).insert({key, *winner, provenance});
    if (deleted > 0) detail::delete_unused_provenance(*im.db);
    t.commit();
  });
}

}  // namespace

void TuningDb::record_key(const TuningKey& key, const Provenance& provenance, std::span<const Trial> trials,
                          const std::optional<Winner>& winner) {
  Impl& im = impl();
  im.require_writable("record_key");
  detail::validate_record(im.path, key, provenance, trials, winner);
  record<detail::TrialsTable, detail::WinnersTable>(im, key, provenance, trials, winner, [&] {
    return detail::delete_same_identity<detail::TrialsTable>(*im.db, {key, {}, provenance}) +
           detail::delete_same_identity<detail::WinnersTable>(*im.db, {key, {}, provenance});
  });
}

void TuningDb::record_group_key(const GroupKey& key, const Provenance& provenance, std::span<const Trial> trials,
                                const std::optional<Winner>& winner) {
  Impl& im = impl();
  im.require_writable("record_group_key");
  detail::validate_record(im.path, key, provenance, trials, winner);
  record<detail::GroupTrialsTable, detail::GroupWinnersTable>(
      im, key, provenance, trials, winner, [&] { return detail::delete_group_bucket(*im.db, key, provenance, false); });
}

void TuningDb::import_rows(std::span<const WinnerRow> winners, std::span<const TrialRow> trials) {
  import_rows(winners, trials, {}, {});
}

void TuningDb::import_rows(std::span<const WinnerRow> winners, std::span<const TrialRow> trials,
                           std::span<const GroupWinnerRow> group_winners, std::span<const GroupTrialRow> group_trials) {
  Impl& im = impl();
  im.require_writable("import_rows");
  auto fail = [&](const std::string& what, std::size_t i, const std::string& msg) {
    throw DbError(ErrorKind::InvalidArgument,
                  "tuning database " + quoted(im.path) + ": cannot import " + what + " row " +
                      std::to_string(i) + ": " + msg,
                  im.path);
  };
  auto check = [&](const auto& rows, const std::string& what) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (const std::string e = detail::check_row(rows[i]); !e.empty()) fail(what, i, e);
    }
  };
  check(winners, "winner");
  check(trials, "trial");
  check(group_winners, "group winner");
  check(group_trials, "group trial");
  // One shape per arch, dtype, bucket and identity among the group rows themselves.
  struct Shape {
    const GroupKey* key;
    const Provenance* provenance;
    std::string row;  // "group winner row 3", for messages
  };
  std::map<std::string, Shape> shapes;  // detail::group_slot -> the first shape seen there
  auto claim = [&](const auto& rows, const std::string& what) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Shape shape{&rows[i].key, &rows[i].provenance, what + " row " + std::to_string(i)};
      const auto [it, inserted] = shapes.emplace(detail::group_slot(rows[i].key, rows[i].provenance), shape);
      if (!inserted && !(*it->second.key == rows[i].key)) {
        fail(what, i, "its key " + to_string(rows[i].key) + " lies in the bucket of " + to_string(*it->second.key) +
                          " (" + it->second.row + ") with the same provenance identity; a database keeps one shape "
                          "per bucket and identity");
      }
    }
  };
  claim(group_winners, "group winner");
  claim(group_trials, "group trial");
  im.run("importing rows", [&] {
    SQLite::Transaction t(*im.db, SQLite::TransactionBehavior::IMMEDIATE);
    detail::ProvenanceIds ids(*im.db);
    int deleted = 0;
    for (const auto& entry : shapes) {
      deleted += detail::delete_group_bucket(*im.db, *entry.second.key, *entry.second.provenance, true);
    }
    auto write = [&](auto table, const auto& rows) {
      using Table = decltype(table);
      detail::RowWriter<Table> writer(*im.db, ids);
      for (const auto& r : rows) deleted += writer.replace(r);
    };
    write(detail::WinnersTable{}, winners);
    write(detail::TrialsTable{}, trials);
    write(detail::GroupWinnersTable{}, group_winners);
    write(detail::GroupTrialsTable{}, group_trials);
    if (deleted > 0) detail::delete_unused_provenance(*im.db);
    t.commit();
  });
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
    return read_rows_text(q);
  });
}

// ---------------------------------------------------------------------------------------------
// queries

namespace {

/// The keys of @p arch and @p dtype of WinnersT whose provenance has @p provenance's identity,
/// in key order (only the key columns are read; a key that cannot be read was never written by
/// this library and is skipped).
template <class WinnersT>
auto finished(const TuningDb::Impl& im, std::string_view arch, DType dtype, const Provenance& provenance) {
  using Key = std::decay_t<decltype(std::declval<typename WinnersT::Row>().key)>;
  const auto& fields = *std::get<0>(WinnersT::parts).fields;
  return im.run("listing finished keys", [&] {
    std::vector<Key> out;
    if (!detail::has_table<WinnersT>(im.version)) return out;
    SQLite::Statement q(*im.db, "SELECT DISTINCT " + detail::field_columns(fields) + " FROM " +
                                    detail::source<WinnersT>(im.version) + " WHERE arch = ? AND dtype = ? AND " +
                                    detail::provenance_where(kIdentity) + " ORDER BY " + detail::field_columns(fields));
    q.bind(1, std::string(arch));
    q.bind(2, std::string(to_string(dtype)));
    detail::bind_provenance_where(q, 3, provenance, kIdentity);
    while (q.executeStep()) {
      Key k{};
      int i = 0;
      bool ok = true;
      for_each_field(fields, [&](const auto& field) {
        ok = ok && detail::Codec<detail::value_t<decltype(field)>>::read(q.getColumn(i++), field.get(k));
      });
      if (ok) out.push_back(std::move(k));
    }
    return out;
  });
}

}  // namespace

std::vector<TuningKey> TuningDb::finished_keys(std::string_view arch, DType dtype, const Provenance& provenance) const {
  return finished<detail::WinnersTable>(impl(), arch, dtype, provenance);
}

std::vector<GroupKey> TuningDb::finished_group_keys(std::string_view arch, DType dtype,
                                                    const Provenance& provenance) const {
  return finished<detail::GroupWinnersTable>(impl(), arch, dtype, provenance);
}

bool TuningDb::has_winner(const TuningKey& key, const Provenance& provenance) const {
  Impl& im = impl();
  if (!storable(key)) return false;
  return im.run("looking up a winner", [&] {
    SQLite::Statement q(*im.db, "SELECT 1 FROM " + detail::source<detail::WinnersTable>(im.version) + " WHERE " +
                                    detail::fields_where(key_fields) + " AND " + detail::provenance_where(kIdentity) +
                                    " LIMIT 1");
    detail::bind_provenance_where(q, detail::bind_fields(q, 1, key, key_fields), provenance, kIdentity);
    return q.executeStep();
  });
}

bool TuningDb::has_group_winner(const GroupKey& key, const Provenance& provenance) const {
  const GroupBucket bucket = group_bucket(key);
  for (const GroupKey& k : finished_group_keys(key.arch, key.dtype, provenance)) {
    if (group_bucket(k) == bucket) return true;
  }
  return false;
}

std::vector<WinnerRow> TuningDb::Impl::read_winners(const WinnerFilter& filter) const {
  return select_filtered<detail::WinnersTable>(*this, filter);
}

std::vector<GroupWinnerRow> TuningDb::Impl::read_group_winners(const WinnerFilter& filter) const {
  return select_filtered<detail::GroupWinnersTable>(*this, filter);
}

std::vector<TrialRow> TuningDb::Impl::read_all_trials() const { return select_filtered<detail::TrialsTable>(*this, {}); }

std::vector<GroupTrialRow> TuningDb::Impl::read_all_group_trials() const {
  return select_filtered<detail::GroupTrialsTable>(*this, {});
}

TuningDb::Impl::Snapshot TuningDb::Impl::snapshot(bool with_winners, bool with_trials) const {
  return run("reading a snapshot", [&] {
    SQLite::Transaction t(*db);  // one read transaction: every table of the same moment
    Snapshot s;
    if (with_winners) s.winners = read_winners({}), s.group_winners = read_group_winners({});
    if (with_trials) s.trials = read_all_trials(), s.group_trials = read_all_group_trials();
    t.commit();
    return s;
  });
}

std::vector<WinnerRow> TuningDb::winners(const WinnerFilter& filter) const {
  Impl& im = impl();
  return im.run("reading winners", [&] { return im.read_winners(filter); });
}

std::vector<GroupWinnerRow> TuningDb::group_winners(const WinnerFilter& filter) const {
  Impl& im = impl();
  return im.run("reading group winners", [&] { return im.read_group_winners(filter); });
}

namespace {

/// The trials of exactly @p key (TrialsT: trials or group_trials), by identity and label.
template <class TrialsT, class Key>
std::vector<typename TrialsT::Row> trials_of(const TuningDb::Impl& im, const Key& key) {
  if (!storable(key)) return {};
  const auto& fields = detail::fields_of(key);
  return im.run("reading trials", [&] {
    return select_rows<TrialsT>(im, detail::fields_where(fields), identity_order() + ", label, id",
                                [&](SQLite::Statement& q) { detail::bind_fields(q, 1, key, fields); });
  });
}

}  // namespace

std::vector<TrialRow> TuningDb::trials(const TuningKey& key) const {
  return trials_of<detail::TrialsTable>(impl(), key);
}

std::vector<GroupTrialRow> TuningDb::group_trials(const GroupKey& key) const {
  return trials_of<detail::GroupTrialsTable>(impl(), key);
}

std::vector<TrialRow> TuningDb::all_trials() const {
  Impl& im = impl();
  return im.run("reading trials", [&] { return im.read_all_trials(); });
}

std::vector<GroupTrialRow> TuningDb::all_group_trials() const {
  Impl& im = impl();
  return im.run("reading group trials", [&] { return im.read_all_group_trials(); });
}

namespace {

/// Every winner of WinnersT for @p arch and @p dtype, fresh ones only when @p current is given,
/// the last recorded first (the nearest rules keep the first of equally good rows).
template <class WinnersT>
std::vector<typename WinnersT::Row> candidates(const TuningDb::Impl& im, std::string_view arch, DType dtype,
                                               const Provenance* current) {
  std::string cond = "arch = ? AND dtype = ?";
  if (current) cond += " AND " + detail::provenance_where(kStale);
  return select_rows<WinnersT>(im, cond, "id DESC",
                               [&](SQLite::Statement& q) {
                                 q.bind(1, std::string(arch));
                                 q.bind(2, std::string(to_string(dtype)));
                                 if (current) detail::bind_provenance_where(q, 3, *current, kStale);
                               });
}

std::optional<WinnerRow> lookup(const TuningDb::Impl& im, std::string_view arch, DType dtype, std::uint64_t n,
                                const Provenance* current) {
  return im.run("looking up the nearest winner", [&]() -> std::optional<WinnerRow> {
    // Every candidate winner of the arch and dtype (fresh ones only for a known build), then the
    // one nearest-size rule of nearest.hpp, which the runtime's dispatch tables use too.
    auto rows = candidates<detail::WinnersTable>(im, arch, dtype, current);
    const std::size_t best = nearest_size(n, rows.size(), [&](std::size_t i) {
      return SizeCandidate{rows[i].key.n, current && same_device(rows[i].provenance, *current),
                           rows[i].provenance.timestamp};
    });
    if (best == rows.size()) return std::nullopt;
    return std::move(rows[best]);
  });
}

std::optional<GroupWinnerRow> lookup_group(const TuningDb::Impl& im, std::string_view arch, DType dtype,
                                           const GroupBucket& query, const Provenance* current) {
  return im.run("looking up the nearest group winner", [&]() -> std::optional<GroupWinnerRow> {
    auto rows = candidates<detail::GroupWinnersTable>(im, arch, dtype, current);
    const std::size_t best = nearest_group(query, rows.size(), [&](std::size_t i) {
      return GroupCandidate{group_bucket(rows[i].key), current && same_device(rows[i].provenance, *current),
                            rows[i].provenance.timestamp};
    });
    if (best == rows.size()) return std::nullopt;
    return std::move(rows[best]);
  });
}

}  // namespace

std::optional<WinnerRow> TuningDb::lookup_nearest(std::string_view arch, DType dtype, std::uint64_t n) const {
  return lookup(impl(), arch, dtype, n, nullptr);
}

std::optional<WinnerRow> TuningDb::lookup_nearest(std::string_view arch, DType dtype, std::uint64_t n,
                                                  const Provenance& current) const {
  return lookup(impl(), arch, dtype, n, &current);
}

std::optional<GroupWinnerRow> TuningDb::lookup_nearest_group(std::string_view arch, DType dtype,
                                                             const GroupBucket& query) const {
  return lookup_group(impl(), arch, dtype, query, nullptr);
}

std::optional<GroupWinnerRow> TuningDb::lookup_nearest_group(std::string_view arch, DType dtype,
                                                             const GroupBucket& query,
                                                             const Provenance& current) const {
  return lookup_group(impl(), arch, dtype, query, &current);
}

namespace {

/// The winners of WinnersT measured on @p current's device, in listing order.
template <class WinnersT>
std::vector<typename WinnersT::Row> device_winners(const TuningDb::Impl& im, const Provenance& current) {
  return im.run("listing stale keys", [&] {
    return select_rows<WinnersT>(im, detail::provenance_where(kDevice), listing_order<WinnersT>(),
                                 [&](SQLite::Statement& q) { detail::bind_provenance_where(q, 1, current, kDevice); });
  });
}

/// From @p rows, sorted so that the rows of one unit (a key; a group bucket) are adjacent, with
/// @p same_unit telling: the units none of whose rows is fresh against @p current, each as Out{the
/// unit's first row's key, the kStale fields that differ in any of its rows}.
template <class Out, class Row, class SameUnit>
std::vector<Out> stale_units(const std::vector<Row>& rows, const Provenance& current, SameUnit&& same_unit) {
  std::vector<Out> out;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    bool fresh = false;
    std::vector<bool> changed(std::tuple_size_v<decltype(provenance_fields)>, false);
    for (; j < rows.size() && same_unit(rows[j], rows[i]); ++j) {
      const auto diff = stale_fields(rows[j].provenance, current);
      fresh |= diff.empty();
      std::size_t idx = 0;
      for_each_field(provenance_fields, [&](const auto& field) {
        if (std::find(diff.begin(), diff.end(), field.name) != diff.end()) changed[idx] = true;
        ++idx;
      });
    }
    if (!fresh) {
      Out sk{rows[i].key, {}};
      std::size_t idx = 0;
      for_each_field(provenance_fields, [&](const auto& field) {
        if (changed[idx++]) sk.changed.emplace_back(field.name);
      });
      out.push_back(std::move(sk));
    }
    i = j;
  }
  return out;
}

}  // namespace

std::vector<StaleKey> TuningDb::stale_keys(const Provenance& current) const {
  return stale_units<StaleKey>(device_winners<detail::WinnersTable>(impl(), current), current,
                               [](const WinnerRow& a, const WinnerRow& b) { return a.key == b.key; });
}

std::vector<StaleGroupKey> TuningDb::stale_group_keys(const Provenance& current) const {
  auto rows = device_winners<detail::GroupWinnersTable>(impl(), current);
  // The unit is the bucket: sort its rows together (stable: keys in order within it).
  auto unit = [](const GroupWinnerRow& r) { return std::make_tuple(r.key.arch, to_string(r.key.dtype), group_bucket(r.key)); };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return unit(a) < unit(b); });
  auto out = stale_units<StaleGroupKey>(rows, current, [&](const auto& a, const auto& b) { return unit(a) == unit(b); });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

}  // namespace amax::db

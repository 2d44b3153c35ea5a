// amax-tune tuning database: TuningDb, the SQLite store of trials and winners.
#pragma once

#include <amax/db/error.hpp>
#include <amax/db/family.hpp>
#include <amax/db/group.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace amax::db {

/// How TuningDb::open treats the file.
enum class OpenMode {
  /// Create the file (and its parent directories) if missing, migrate its schema, allow writes.
  ReadWrite,
  /// Never write: the file must exist and hold a schema this build can read (an older one is
  /// read as is, with defaults for columns it lacks). Nothing is created beside a file in
  /// rollback-journal mode; a WAL-mode file in a directory the process cannot write is opened
  /// as immutable (see OpenOptions::immutable); a WAL-mode file in a writable directory gets
  /// SQLite's -wal/-shm companions (needed to read consistently while a writer works), which the
  /// next writer removes.
  ReadOnly,
};

/// Tunables of TuningDb::open. The defaults suit every normal use. Plain value type.
struct OpenOptions {
  /// Total time a single operation (open, one record, one query) may spend waiting for
  /// locks held by other connections (SQLITE_BUSY / SQLITE_LOCKED), retried with bounded
  /// exponential backoff; after it, DbError(Locked).
  std::chrono::milliseconds lock_timeout{30'000};
  /// ReadWrite: ask for PRAGMA journal_mode=WAL (readers never block the writer). If the
  /// filesystem cannot do WAL (no shared memory, e.g. some network filesystems or the
  /// "unix-none" VFS), the rollback journal is kept and one warning is logged.
  bool wal = true;
  /// Run PRAGMA quick_check at open (time linear in the file size; a few ms for a typical
  /// tuning database). A damaged file raises DbError(Corrupt) and is left unchanged.
  bool check_integrity = true;
  /// ReadOnly only: open with the URI parameter immutable=1 (no locks, no -wal/-shm files,
  /// changes by other processes are not seen). Used automatically as a fallback when a
  /// WAL-mode file lies in a directory this process cannot write (a system database).
  bool immutable = false;
  /// SQLite VFS name, empty for the default. "unix-dotfile" helps on network filesystems
  /// without POSIX locks (it has no shared memory, so it always uses the rollback journal, with
  /// one warning); note that its lock is a directory "<path>.lock" which a process killed while
  /// holding it leaves behind: every later open then fails with Locked after lock_timeout (the
  /// message says so) until the directory is removed. Processes using different VFSes on one
  /// file do not see each other's locks. "unix-none" (no locking, no WAL) is for tests only.
  std::string vfs;
  /// ReadWrite only: when the file cannot be written (it, its directory or its filesystem is
  /// read-only, or the directory cannot be created: a read-only HOME in a container), open an
  /// in-memory database instead, holding a copy of the file's contents when it exists and is
  /// readable, and log one warning naming the file and the reason. Everything works as usual
  /// (record, resume, exports) but nothing reaches the file: results are lost when the
  /// object is destroyed unless exported. in_memory() tells. Damaged or future-schema files
  /// still raise Corrupt / FutureSchema (they are not a reason to run without the file).
  bool memory_fallback = false;
  /// ReadWrite only: never write the file, whether or not it could be: open an in-memory
  /// database holding a copy of the file's contents when it exists and is readable (as
  /// memory_fallback does, without its warning: the caller asked for it). For a tune whose results
  /// are only reported (the command line's --db-in-memory). in_memory() is true.
  bool memory_only = false;
};

/// What export_json / export_csv write.
enum class ExportTable {
  Winners,       ///< winner rows (JSON: and the group winners, if there are any)
  Trials,        ///< trial rows (JSON: and the group trials, if there are any)
  All,           ///< winners and trials (JSON: all arrays; CSV: not allowed, one table per CSV)
  GroupWinners,  ///< multi-tensor winner rows only
  GroupTrials,   ///< multi-tensor trial rows only
  QuantWinners,  ///< quantize winner rows only
  QuantTrials,   ///< quantize trial rows only
};

/// The tuning database: trials (every variant measured for a key, with provenance) and winners
/// (the fastest correct variant per key and provenance identity) in one SQLite file; the same for
/// multi-tensor group keys (group trials and group winners, schema 4 on).
///
/// Schema and rules: tuning_db/README.md. Every function throws only DbError (plus
/// std::bad_alloc); a failed write leaves the database as it was (one transaction per call).
///
/// Thread-safety: one TuningDb object may be used from several threads at once; its calls are
/// serialized by an internal mutex (one SQLite connection). Several TuningDb objects, in one
/// process or many, may open the same file at once: SQLite's locks serialize the writers
/// (WAL mode lets readers proceed during writes), waiting up to OpenOptions::lock_timeout.
/// Do not use a TuningDb in a child after fork(); open a new one there.
class TuningDb {
 public:
  /// Schema version this build writes (and migrates older files to). Version 1: meta, trials,
  /// winners. Version 2: trials.spill_bytes. Version 3: trials.tie_rank, trials.confirm_median_us.
  /// Version 4: provenance stored once (table provenance, referenced by provenance_id);
  /// group_trials and group_winners. Version 5: trials.host_us and trials.launches (group trials
  /// too); median_us and spread_us are GPU time from then on. Version 6: quant_trials and
  /// quant_winners (the FP8 quantize family, keys (arch, dtype, n)).
  static constexpr int kSchemaVersion = 6;

  /// Opens (ReadWrite: creates if missing) the database at @p path.
  ///
  /// ReadWrite creates missing parent directories (safe when many processes do it at once),
  /// checks integrity, sets WAL (or falls back to the rollback journal with one warning), a busy
  /// timeout, and migrates an older schema in one transaction. ReadOnly never writes.
  ///
  /// @throws DbError Corrupt (damaged / not SQLite; the file is left byte-for-byte unchanged),
  ///   FutureSchema (message names the file's and this build's versions), InvalidArgument (an
  ///   SQLite file of another application, or an empty path), Io (cannot create a directory or
  ///   open the file; ReadOnly: file missing), ReadOnly (ReadWrite asked of a file, directory or
  ///   filesystem that is not writable: SQLite creates its journal files beside the database, so
  ///   a writable file in a read-only directory is refused at open, not at the first write),
  ///   Locked (lock_timeout exceeded). With OpenOptions::memory_fallback, ReadOnly and Io of a
  ///   ReadWrite open give an in-memory database instead (see there).
  /// Thread-safety: may be called concurrently from any thread/process.
  [[nodiscard]] static TuningDb open(const std::filesystem::path& path,
                                     OpenMode mode = OpenMode::ReadWrite,
                                     const OpenOptions& options = {});

  /// Why a ReadWrite open of @p path would be refused for want of write permission, found
  /// without opening, creating or changing anything: "" when the file (if it exists) and the
  /// directory SQLite creates its journal files in (or, where that is missing, the nearest
  /// existing ancestor the directories would be created in) can be written by this process;
  /// otherwise a sentence naming the file or directory, this process's uid, and the owner and mode
  /// of the file or directory (or its read-only filesystem). Other problems (damage, a path
  /// component that is not a directory) are left to open(). For refusing a run before its work.
  /// Thread-safety: may be called concurrently from any thread.
  [[nodiscard]] static std::string write_problem(const std::filesystem::path& path);

  /// Moves whatever is at @p path (and its -wal, -shm, -journal files) aside to
  /// "<path>.corrupt-<UTC timestamp>" (plus ".1", ".2"... if taken), logs a warning naming
  /// both, and opens a fresh ReadWrite database at @p path. For the tuner's --rebuild.
  /// @param moved_to  if non-null, receives the new name of the old file (empty if none existed)
  /// @throws DbError Io when the rename fails, or any error of open().
  /// Thread-safety: do not run while other processes use the file.
  [[nodiscard]] static TuningDb rebuild(const std::filesystem::path& path,
                                        std::filesystem::path* moved_to = nullptr,
                                        const OpenOptions& options = {});

  /// Builds a fresh database at @p out_path from a text dump (see dump_text()) read from @p in:
  /// written to a temporary file beside it, left in rollback-journal mode (so that ReadOnly
  /// opens create nothing beside it), then renamed over @p out_path (replacing any file there
  /// and removing its stale -wal/-shm/-journal files). For turning the text database shipped in
  /// the repository into an SQLite file at build time.
  /// A dump of text format version 2 (its header holds "format_version":2; dump_text() writes
  /// it) must end with the end line, whose row counts must match the rows read: a dump cut short
  /// at a line boundary, or with rows added or removed, is refused. A dump of version 1 (no
  /// format_version, no end line) is loaded with one warning (its completeness cannot be checked).
  /// @param source  the dump's file name, named in every message (empty: the messages name
  ///   @p out_path instead)
  /// @throws DbError InvalidArgument naming the input, the line number and the problem for a
  ///   malformed, cut or miscounted dump, FutureSchema for a dump of a newer schema or text format
  ///   version, Io for file errors. Nothing is written at @p out_path then.
  /// Thread-safety: do not run while other processes use @p out_path.
  static void load_text(std::istream& in, const std::filesystem::path& out_path,
                        const std::filesystem::path& source = {});

  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;
  /// Closes the connection (never throws).
  ~TuningDb();

  /// The path given to open(). Thread-safe.
  [[nodiscard]] const std::filesystem::path& path() const noexcept;
  /// The mode given to open(). Thread-safe.
  [[nodiscard]] OpenMode mode() const noexcept;
  /// The file's schema version: kSchemaVersion after a ReadWrite open; may be lower ReadOnly.
  [[nodiscard]] int schema_version() const noexcept;
  /// "wal", "delete", ... as SQLite reports it after open; "memory" for an in-memory fallback.
  /// Thread-safe.
  [[nodiscard]] std::string journal_mode() const;
  /// True when OpenOptions::memory_only or memory_fallback put an in-memory copy in place of the file:
  /// nothing written through this object reaches path(). Thread-safe.
  [[nodiscard]] bool in_memory() const noexcept;

  // -------------------------------------------------------------------------------------------
  // Results of a kernel family F (amax/family.hpp: amax::SingleFamily, keys (arch, dtype, n);
  // amax::MultiFamily, group keys, schema 4 on). DbFamily<F> (family.hpp) holds what differs. A
  // group key follows the rules of a key with the bucket of its shape (group_bucket() in
  // nearest.hpp) in the role of the key: the database holds at most one group key per arch, dtype,
  // bucket and provenance identity. A file of an older schema opened ReadOnly has no group rows:
  // every MultiFamily query answers with nothing. Explicitly instantiated for both families.

  /// Records all trials of one key and its winner in ONE transaction, replacing any trials and
  /// winner stored for the same key (MultiFamily: for every group key of the same arch, dtype and
  /// bucket, a re-tune or another shape of that bucket) and provenance identity. Without a winner
  /// (every variant failed) the key keeps no winner for this identity. SQLITE_BUSY / SQLITE_LOCKED
  /// are retried with bounded exponential backoff up to OpenOptions::lock_timeout. MultiFamily
  /// labels are multi-tensor variant labels ("multi.t512.v8.u4.c32k.warp"), stored as text (the
  /// command line checks them against the generator).
  /// @throws DbError InvalidArgument (key: empty arch, n == 0 or n > 2^63-1, a GroupKey breaking
  ///   its rules, naming the value; a trial or the winner breaking the rules of Trial / Winner;
  ///   duplicate labels; winner label not an ok trial), ReadOnly (opened ReadOnly), Locked, Io,
  ///   Corrupt.
  template <class F>
  void record(const KeyOf<F>& key, const Provenance& provenance, std::span<const Trial> trials,
              const std::optional<Winner>& winner);

  /// Keys of @p arch and @p dtype that have a winner with the identity of @p provenance (same
  /// device, arch, CU count, compiler, template hash, tool version): what a resumed run skips.
  /// Sorted by key. @throws DbError (Locked, Io, Corrupt).
  template <class F>
  [[nodiscard]] std::vector<KeyOf<F>> finished_keys(std::string_view arch, DType dtype,
                                                    const Provenance& provenance) const;

  /// Whether @p key (MultiFamily: any shape of @p key's arch, dtype and bucket, which recording
  /// @p key would replace) has a winner with the identity of @p provenance. @throws DbError.
  template <class F>
  [[nodiscard]] bool has_winner(const KeyOf<F>& key, const Provenance& provenance) const;

  /// All winners matching @p filter, sorted by key, then provenance identity.
  /// @throws DbError (Corrupt also for a stored value this build cannot parse, naming it).
  template <class F>
  [[nodiscard]] std::vector<WinnerRowOf<F>> winners(const WinnerFilter& filter = {}) const;

  /// All trials of exactly @p key (every provenance), sorted by provenance identity, then label.
  /// @throws DbError.
  template <class F>
  [[nodiscard]] std::vector<TrialRowOf<F>> trials(const KeyOf<F>& key) const;

  /// All trials, sorted by key, provenance identity, label. @throws DbError.
  template <class F>
  [[nodiscard]] std::vector<TrialRowOf<F>> all_trials() const;

  /// The winner for @p arch and @p dtype that serves @p query best by the family's rule of
  /// nearest.hpp, the rule the runtime's dispatch uses too. SingleFamily (serves_better), @p query
  /// an element count n: |log2 m - log2 n| minimal (exact integer comparison), a tie to the larger
  /// m; among several winners at that m (several devices or setups) the most recent timestamp,
  /// then the last recorded; n == 0 behaves like n == 1. MultiFamily (serves_group_better),
  /// @p query a bucket: the smallest L1 distance between buckets; ties to the larger total_bytes
  /// bucket, then the larger tensors bucket, then the newer timestamp (then the last recorded).
  /// Other arches/dtypes never match. std::nullopt when there is none. @throws DbError.
  template <class F>
  [[nodiscard]] std::optional<WinnerRowOf<F>> lookup_nearest(std::string_view arch, DType dtype,
                                                             const QueryOf<F>& query) const;

  /// As above, for a known build and device: rows stale against @p current (stale_fields()
  /// non-empty) are ignored, and among equally near winners one measured on the same device as
  /// @p current (same_device()) comes before the others.
  template <class F>
  [[nodiscard]] std::optional<WinnerRowOf<F>> lookup_nearest(std::string_view arch, DType dtype,
                                                             const QueryOf<F>& query,
                                                             const Provenance& current) const;

  /// Keys (MultiFamily: buckets, each named by its first stale stored shape) whose winners for
  /// @p current's device (same_device()) are all stale against @p current: exactly what the tuner
  /// must re-tune. Sorted by key. @throws DbError.
  template <class F>
  [[nodiscard]] std::vector<StaleKeyOf<F>> stale_keys(const Provenance& current) const;

  // -------------------------------------------------------------------------------------------
  // Export, text, import

  /// Writes {"schema_version": V, "winners": [...], "trials": [...], "group_winners": [...],
  /// "group_trials": [...]} with nlohmann/json, indented by 2, rows in the order of winners<F>() /
  /// all_trials<F>() (SingleFamily, then MultiFamily), provenance as a nested object. Winners
  /// writes winners (and group_winners), Trials trials (and group_trials), All all of them,
  /// GroupWinners / GroupTrials only that array. The group arrays appear only when they hold
  /// rows (or were asked for alone). V is the oldest schema version that has every table and
  /// column written (3, or 4 with a group array), so a database without group rows exports
  /// exactly what schema 3 did. @throws DbError.
  void export_json(std::ostream& out, ExportTable table = ExportTable::Winners) const;

  /// Writes one CSV table (RFC 4180: header row, "\n" line ends, fields holding a comma,
  /// quote, CR or LF are quoted with quotes doubled; doubles in shortest round-trip form).
  /// Columns are the SQL column names (provenance as prov_*, as in the text dump).
  /// @throws DbError InvalidArgument for ExportTable::All.
  void export_csv(std::ostream& out, ExportTable table = ExportTable::Winners) const;

  /// Writes the whole database as text, one JSON object per line, for review in git: a header
  /// line {"format":"amax-tune-db","format_version":2,"schema_version":V}, then per key (sorted by
  /// key, then provenance identity) its winner line(s) ("row":"winner") and its trial lines
  /// ("row":"trial", sorted by label); after all of them the group keys in the same way
  /// ("row":"group_winner", "row":"group_trial"); last the end line
  /// {"end":"amax-tune-db","rows":{"winner":W,"trial":T,"group_winner":GW,"group_trial":GT}}
  /// (row counts per row type, whatever the columns), which lets load_text() refuse a cut dump.
  /// Columns in list order (provenance as prov_*); doubles round-trip exactly. V is the oldest
  /// schema version that has every column written: 3 without group lines, 4 with them (builds
  /// older than text format version 2 refuse the end line). load_text() of the output rebuilds an
  /// equal database.
  /// @throws DbError.
  void dump_text(std::ostream& out) const;

  /// Inserts rows verbatim (each with its own provenance) in one transaction, replacing rows of
  /// the same key, identity (and label, for trials); a group row also replaces the rows of other
  /// shapes of its arch, dtype, bucket and identity (winners and trials). Used by merge and
  /// load_text. @throws DbError InvalidArgument (rows breaking the rules of record; group rows of
  /// two shapes of one bucket and identity, naming both), ReadOnly, Locked...
  void import_rows(std::span<const WinnerRow> winners, std::span<const TrialRow> trials,
                   std::span<const GroupWinnerRow> group_winners = {},
                   std::span<const GroupTrialRow> group_trials = {},
                   std::span<const WinnerRow> quant_winners = {}, std::span<const TrialRow> quant_trials = {});

  /// Switches the file to the rollback journal (PRAGMA journal_mode=DELETE) after a checkpoint,
  /// so that it is one self-contained file that ReadOnly opens without creating -wal/-shm.
  /// For files about to be shipped or installed. @throws DbError ReadOnly, Locked, Io.
  void use_rollback_journal();

  /// Runs PRAGMA integrity_check (full) and returns its rows ("ok" alone when healthy).
  /// @throws DbError Locked, Io, Corrupt.
  [[nodiscard]] std::vector<std::string> integrity_check() const;

  /// Private implementation (the SQLite connection); opaque to users.
  struct Impl;

 private:
  explicit TuningDb(std::unique_ptr<Impl> impl);
  static TuningDb open_in_memory(const std::filesystem::path& path, const OpenOptions& options,
                                 const std::string& why);
  Impl& impl() const;  // throws DbError(InvalidArgument) on a moved-from object
  std::unique_ptr<Impl> impl_;
};

}  // namespace amax::db

// TuningDb::open: schema creation, migration, future schema, damaged files, read-only opens,
// WAL fallback, rebuild.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <grp.h>

#include <random>
#include <regex>

namespace amax::db::test {
namespace {

class OpenTest : public TempDirTest {};

const std::vector<std::string> kTrialColumns{
    "id",         "arch",           "dtype",         "n",
    "label",      "status",         "reason",        "median_us",
    "spread_us",  "samples",        "gbps",          "registers",
    "spill_bytes", "tie_rank", "confirm_median_us",  // versions 2 and 3; version 4 rebuilt the table in
    "provenance_id",                                 // field-list order, the provenance as an id;
    "host_us",    "launches"};                       // version 5 added these

std::vector<std::string> column_names(const fs::path& db, const std::string& table) {
  std::vector<std::string> out;
  for (const auto& row : raw_query(db, "SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid")) {
    out.push_back(row);
  }
  return out;
}

TEST_F(OpenTest, CreatesSchemaAndParentDirectories) {
  const fs::path p = file("x/y/z/tuning.sqlite");
  {
    TuningDb db = TuningDb::open(p);
    EXPECT_EQ(db.schema_version(), 6);
    EXPECT_EQ(TuningDb::kSchemaVersion, 6);
    EXPECT_EQ(db.mode(), OpenMode::ReadWrite);
    EXPECT_EQ(db.path(), p);
    EXPECT_EQ(db.journal_mode(), "wal");
    EXPECT_TRUE(db.winners<SingleFamily>().empty());
    EXPECT_EQ(db.integrity_check(), std::vector<std::string>{"ok"});
  }
  ASSERT_TRUE(fs::is_regular_file(p));
  EXPECT_EQ(raw_query(p, "SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"6"});
  EXPECT_EQ(raw_query(p, "PRAGMA application_id"), std::vector<std::string>{"1095582040"});
  EXPECT_EQ(raw_query(p, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
            (std::vector<std::string>{"group_trials", "group_winners", "meta", "provenance", "quant_trials",
                                      "quant_winners", "trials", "winners"}));
  EXPECT_EQ(raw_query(p, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"),
            (std::vector<std::string>{"group_trials_identity", "group_winners_identity", "provenance_unique",
                                      "quant_trials_identity", "quant_winners_identity", "trials_identity",
                                      "winners_identity"}));
  EXPECT_EQ(column_names(p, "trials"), kTrialColumns);
  EXPECT_EQ(column_names(p, "winners"),
            (std::vector<std::string>{"id", "arch", "dtype", "n", "label", "median_us", "gbps", "provenance_id"}));
  EXPECT_EQ(column_names(p, "provenance"),
            (std::vector<std::string>{"id", "device_name", "arch", "cu_count", "driver_version", "compiler",
                                      "template_hash", "tool_version", "timing_protocol", "timestamp"}));
  EXPECT_EQ(column_names(p, "group_trials"),
            (std::vector<std::string>{"id", "arch", "dtype", "tensors", "total_bytes", "largest_bytes", "label",
                                      "status", "reason", "median_us", "spread_us", "samples", "gbps", "registers",
                                      "spill_bytes", "tie_rank", "confirm_median_us", "provenance_id", "host_us",
                                      "launches"}));
  EXPECT_EQ(column_names(p, "group_winners"),
            (std::vector<std::string>{"id", "arch", "dtype", "tensors", "total_bytes", "largest_bytes", "label",
                                      "median_us", "gbps", "provenance_id"}));
  EXPECT_EQ(column_names(p, "quant_trials"),
            (std::vector<std::string>{"id", "arch", "dtype", "n", "label", "status", "reason", "median_us",
                                      "spread_us", "samples", "gbps", "registers", "spill_bytes", "tie_rank",
                                      "confirm_median_us", "host_us", "launches", "provenance_id"}));
  EXPECT_EQ(column_names(p, "quant_winners"),
            (std::vector<std::string>{"id", "arch", "dtype", "n", "label", "median_us", "gbps", "provenance_id"}));
  EXPECT_EQ(raw_query(p, "SELECT sql FROM sqlite_master WHERE name = 'quant_trials_identity'"),
            std::vector<std::string>{"CREATE UNIQUE INDEX quant_trials_identity ON quant_trials (arch, dtype, n, "
                                     "provenance_id, label)"});
  EXPECT_EQ(raw_query(p, "SELECT sql FROM sqlite_master WHERE name = 'trials_identity'"),
            std::vector<std::string>{"CREATE UNIQUE INDEX trials_identity ON trials (arch, dtype, n, provenance_id, label)"});
  EXPECT_EQ(raw_query(p, "SELECT sql FROM sqlite_master WHERE name = 'group_winners_identity'"),
            std::vector<std::string>{"CREATE UNIQUE INDEX group_winners_identity ON group_winners (arch, dtype, "
                                     "tensors, total_bytes, largest_bytes, provenance_id)"});
  // Clean close: the WAL was checkpointed and removed.
  EXPECT_EQ(listing(p.parent_path()), std::vector<std::string>{"tuning.sqlite"});
}

TEST_F(OpenTest, ReopenKeepsData) {
  const fs::path p = file("t.db");
  {
    TuningDb db = TuningDb::open(p);
    record_simple(db, key(1024), h200(), "atomic.t256", 3.5);
  }
  TuningDb db = TuningDb::open(p);
  ASSERT_EQ(db.winners<SingleFamily>().size(), 1u);
  EXPECT_EQ(db.winners<SingleFamily>()[0].winner.label, "atomic.t256");
}

// The version-1 schema, written out by hand (not by the library).
const char* kV1Schema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value NOT NULL);
INSERT INTO meta (key, value) VALUES ('application', 'amax-tune tuning database');
INSERT INTO meta (key, value) VALUES ('schema_version', 1);
CREATE TABLE trials (
  id INTEGER PRIMARY KEY,
  arch TEXT NOT NULL DEFAULT '', dtype TEXT NOT NULL DEFAULT 'fp32', n INTEGER NOT NULL DEFAULT 0,
  label TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'ok', reason TEXT NOT NULL DEFAULT '',
  median_us REAL NOT NULL DEFAULT 0.0, spread_us REAL NOT NULL DEFAULT 0.0,
  samples INTEGER NOT NULL DEFAULT 0, gbps REAL NOT NULL DEFAULT 0.0, registers INTEGER NOT NULL DEFAULT -1,
  prov_device_name TEXT NOT NULL DEFAULT '', prov_arch TEXT NOT NULL DEFAULT '',
  prov_cu_count INTEGER NOT NULL DEFAULT 0, prov_driver_version TEXT NOT NULL DEFAULT '',
  prov_compiler TEXT NOT NULL DEFAULT '', prov_template_hash TEXT NOT NULL DEFAULT '',
  prov_tool_version TEXT NOT NULL DEFAULT '', prov_timing_protocol TEXT NOT NULL DEFAULT '',
  prov_timestamp TEXT NOT NULL DEFAULT '');
CREATE UNIQUE INDEX trials_identity ON trials (arch, dtype, n, prov_device_name, prov_arch, prov_cu_count,
  prov_compiler, prov_template_hash, prov_tool_version, label);
CREATE TABLE winners (
  id INTEGER PRIMARY KEY,
  arch TEXT NOT NULL DEFAULT '', dtype TEXT NOT NULL DEFAULT 'fp32', n INTEGER NOT NULL DEFAULT 0,
  label TEXT NOT NULL DEFAULT '', median_us REAL NOT NULL DEFAULT 0.0, gbps REAL NOT NULL DEFAULT 0.0,
  prov_device_name TEXT NOT NULL DEFAULT '', prov_arch TEXT NOT NULL DEFAULT '',
  prov_cu_count INTEGER NOT NULL DEFAULT 0, prov_driver_version TEXT NOT NULL DEFAULT '',
  prov_compiler TEXT NOT NULL DEFAULT '', prov_template_hash TEXT NOT NULL DEFAULT '',
  prov_tool_version TEXT NOT NULL DEFAULT '', prov_timing_protocol TEXT NOT NULL DEFAULT '',
  prov_timestamp TEXT NOT NULL DEFAULT '');
CREATE UNIQUE INDEX winners_identity ON winners (arch, dtype, n, prov_device_name, prov_arch, prov_cu_count,
  prov_compiler, prov_template_hash, prov_tool_version);
PRAGMA application_id = 1095582040;
INSERT INTO trials (arch, dtype, n, label, status, reason, median_us, spread_us, samples, gbps, registers,
  prov_device_name, prov_arch, prov_cu_count, prov_driver_version, prov_compiler, prov_template_hash,
  prov_tool_version, prov_timing_protocol, prov_timestamp)
  VALUES ('gfx942', 'bf16', 4096, 'two_stage.t256.v8.u4.b8cu', 'ok', '', 4.25, 0.5, 25, 3.5, 40,
          'AMD Instinct MI300X', 'gfx942:sramecc+:xnack-', 304, '6.8.5', 'hiprtc 6.4', 'ff00', '0.0.9',
          'warmup=10', '2026-01-02T03:04:05Z');
INSERT INTO winners (arch, dtype, n, label, median_us, gbps, prov_device_name, prov_arch, prov_cu_count,
  prov_driver_version, prov_compiler, prov_template_hash, prov_tool_version, prov_timing_protocol, prov_timestamp)
  VALUES ('gfx942', 'bf16', 4096, 'two_stage.t256.v8.u4.b8cu', 4.25, 3.5, 'AMD Instinct MI300X',
          'gfx942:sramecc+:xnack-', 304, '6.8.5', 'hiprtc 6.4', 'ff00', '0.0.9', 'warmup=10',
          '2026-01-02T03:04:05Z');
)sql";

Provenance mi300x_v1() {
  Provenance p;
  p.device_name = "AMD Instinct MI300X";
  p.arch = "gfx942:sramecc+:xnack-";
  p.cu_count = 304;
  p.driver_version = "6.8.5";
  p.compiler = "hiprtc 6.4";
  p.template_hash = "ff00";
  p.tool_version = "0.0.9";
  p.timing_protocol = "warmup=10";
  p.timestamp = "2026-01-02T03:04:05Z";
  return p;
}

TEST_F(OpenTest, ReadsAndMigratesHandMadeVersion1File) {
  const fs::path p = file("v1.db");
  raw_exec(p, kV1Schema);
  const std::string before = read_bytes(p);
  const TuningKey k{"gfx942", DType::bf16, 4096};
  Trial expected_trial;
  expected_trial.label = "two_stage.t256.v8.u4.b8cu";
  expected_trial.median_us = 4.25;
  expected_trial.spread_us = 0.5;
  expected_trial.samples = 25;
  expected_trial.gbps = 3.5;
  expected_trial.registers = 40;
  expected_trial.spill_bytes = -1;  // the columns did not exist in version 1
  expected_trial.tie_rank = -1;
  expected_trial.confirm_median_us = 0;
  {
    // ReadOnly reads the old schema as is and migrates nothing.
    const TuningDb ro = TuningDb::open(p, OpenMode::ReadOnly);
    EXPECT_EQ(ro.schema_version(), 1);
    const auto trials = ro.trials<SingleFamily>(k);
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0], (TrialRow{k, expected_trial, mi300x_v1()}));
  }
  EXPECT_EQ(read_bytes(p), before);

  LogCapture log;
  {
    TuningDb db = TuningDb::open(p);
    EXPECT_EQ(db.schema_version(), 6);
    const auto trials = db.trials<SingleFamily>(k);
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0], (TrialRow{k, expected_trial, mi300x_v1()}));
    const auto winners = db.winners<SingleFamily>();
    ASSERT_EQ(winners.size(), 1u);
    EXPECT_EQ(winners[0], (WinnerRow{k, Winner{"two_stage.t256.v8.u4.b8cu", 4.25, 3.5}, mi300x_v1()}));
    Trial t = ok_trial("atomic.t128", 9.0);
    t.spill_bytes = 7;
    db.record<SingleFamily>(key(8), h200(), std::vector<Trial>{t}, std::nullopt);
    EXPECT_EQ(db.trials<SingleFamily>(key(8)).at(0).trial.spill_bytes, 7);
  }
  EXPECT_EQ(log.count("migrated schema version 1 to 6"), 1) << log.text();
  EXPECT_EQ(raw_query(p, "SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"6"});
  // The migrated tables have exactly the columns (names, types, NOT NULL, defaults) of a fresh file.
  const fs::path fresh = file("fresh.db");
  { (void)TuningDb::open(fresh); }
  for (const char* table : {"trials", "winners", "meta", "provenance", "group_trials", "group_winners"}) {
    const std::string q = std::string("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('") +
                          table + "') ORDER BY name";
    EXPECT_EQ(raw_query(p, q), raw_query(fresh, q)) << table;
  }
  // ... and the same tables and indexes, created by the same statements.
  const std::string schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name";
  EXPECT_EQ(raw_query(p, schema), raw_query(fresh, schema));
  EXPECT_EQ(column_names(p, "trials"), kTrialColumns);
}

TEST_F(OpenTest, FutureSchemaIsRefusedNamingBothVersions) {
  const fs::path p = file("future.db");
  { (void)TuningDb::open(p); }
  raw_exec(p, "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
  const std::string before = read_bytes(p);
  for (OpenMode mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    const std::string msg = expect_db_error(ErrorKind::FutureSchema, [&] { (void)TuningDb::open(p, mode); });
    EXPECT_NE(msg.find("schema version 99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("schema version 6"), std::string::npos) << msg;
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(p), before);
}

TEST_F(OpenTest, InvalidSchemaVersionIsCorrupt) {
  const fs::path p = file("bad_version.db");
  { (void)TuningDb::open(p); }
  raw_exec(p, "UPDATE meta SET value = 'two' WHERE key = 'schema_version'");
  const std::string msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)TuningDb::open(p); });
  EXPECT_NE(msg.find("'two'"), std::string::npos) << msg;
}

TEST_F(OpenTest, ForeignSqliteDatabaseIsRefusedUntouched) {
  const fs::path p = file("browser.sqlite");
  raw_exec(p, "CREATE TABLE cookies (name TEXT); INSERT INTO cookies VALUES ('c');");
  const std::string before = read_bytes(p);
  for (OpenMode mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [&] { (void)TuningDb::open(p, mode); });
    EXPECT_NE(msg.find("another application"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cookies"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(p), before);
}

// ---------------------------------------------------------------------------------------------
// Damaged files

enum class Damage { TruncatedMidPage, ZeroFilled, RandomBytes, TextFile, GarbagePage };

std::string damage_name(const ::testing::TestParamInfo<Damage>& info) {
  switch (info.param) {
    case Damage::TruncatedMidPage: return "TruncatedMidPage";
    case Damage::ZeroFilled: return "ZeroFilled";
    case Damage::RandomBytes: return "RandomBytes";
    case Damage::TextFile: return "TextFile";
    case Damage::GarbagePage: return "GarbagePage";
  }
  return "unknown";
}

class DamagedFileTest : public TempDirTest, public ::testing::WithParamInterface<Damage> {};

/// A real database of ~30 pages.
void make_populated(const fs::path& p) {
  TuningDb db = TuningDb::open(p);
  for (std::uint64_t i = 0; i < 20; ++i) {
    std::vector<Trial> trials;
    for (int v = 0; v < 10; ++v) {
      trials.push_back(ok_trial("two_stage.t" + std::to_string(64 << (v % 4)) + ".v" + std::to_string(v) +
                                    ".padding-padding-padding-padding",
                                1.0 + v));
    }
    db.record<SingleFamily>(key(1024 * (i + 1)), h200(), trials, Winner{trials[0].label, 1.0, 100.0});
  }
}

TEST_P(DamagedFileTest, DetectedAtOpenAndLeftByteForByteUnchanged) {
  const fs::path p = file("damaged.db");
  make_populated(p);
  std::string bytes = read_bytes(p);
  const std::size_t page = 4096;
  ASSERT_GE(bytes.size(), 10 * page);
  std::mt19937 rng(1234);
  switch (GetParam()) {
    case Damage::TruncatedMidPage:
      bytes.resize(page * (bytes.size() / page / 2) + page / 2);
      break;
    case Damage::ZeroFilled:
      bytes.assign(bytes.size(), '\0');
      break;
    case Damage::RandomBytes:
      for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
      break;
    case Damage::TextFile:
      bytes = "this is a text file, not a database\n";
      break;
    case Damage::GarbagePage:  // header intact, one b-tree page overwritten
      for (std::size_t i = 2 * page; i < 3 * page; ++i) bytes[i] = static_cast<char>(rng() & 0xff);
      break;
  }
  write_bytes(p, bytes);
  for (OpenMode mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    SCOPED_TRACE(mode == OpenMode::ReadWrite ? "ReadWrite" : "ReadOnly");
    const std::string msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)TuningDb::open(p, mode); });
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("left unchanged"), std::string::npos) << msg;
    EXPECT_EQ(read_bytes(p), bytes) << "open modified the damaged file";
    EXPECT_EQ(listing(dir()), std::vector<std::string>{"damaged.db"});
  }
}

INSTANTIATE_TEST_SUITE_P(Damage, DamagedFileTest,
                         ::testing::Values(Damage::TruncatedMidPage, Damage::ZeroFilled, Damage::RandomBytes,
                                           Damage::TextFile, Damage::GarbagePage),
                         damage_name);

TEST_F(OpenTest, RebuildMovesTheDamagedFileAside) {
  const fs::path p = file("t.db");
  const std::string garbage = "not a database at all";
  write_bytes(p, garbage);
  fs::path moved;
  LogCapture log;
  {
    TuningDb db = TuningDb::rebuild(p, &moved);
    record_simple(db, key(64), h200(), "atomic.t64", 2.0);
    EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
  }
  EXPECT_TRUE(std::regex_match(moved.filename().string(), std::regex(R"(t\.db\.corrupt-\d{8}T\d{6}Z)")))
      << moved;
  EXPECT_EQ(read_bytes(moved), garbage);
  EXPECT_EQ(log.count("was moved aside to"), 1) << log.text();
  // A second rebuild within the same second picks a new name.
  fs::path moved2;
  { (void)TuningDb::rebuild(p, &moved2); }
  EXPECT_NE(moved2, moved);
  EXPECT_TRUE(fs::exists(moved2));
  EXPECT_TRUE(TuningDb::open(p).winners<SingleFamily>().empty());
  // Nothing to move: moved_to is empty.
  fs::path none = "x";
  { (void)TuningDb::rebuild(file("new.db"), &none); }
  EXPECT_TRUE(none.empty());
}

// ---------------------------------------------------------------------------------------------
// Read-only opens

TEST_F(OpenTest, ReadOnlyMissingFileCreatesNothing) {
  const std::string msg =
      expect_db_error(ErrorKind::Io, [&] { (void)TuningDb::open(file("sub/none.db"), OpenMode::ReadOnly); });
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
  EXPECT_TRUE(listing(dir()).empty());
}

TEST_F(OpenTest, ReadOnlyEmptyFileIsRefused) {
  write_bytes(file("empty.db"), "");
  const std::string msg =
      expect_db_error(ErrorKind::InvalidArgument, [&] { (void)TuningDb::open(file("empty.db"), OpenMode::ReadOnly); });
  EXPECT_NE(msg.find("no amax-tune tables"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(file("empty.db")), "");
}

TEST_F(OpenTest, BadPaths) {
  expect_db_error(ErrorKind::InvalidArgument, [&] { (void)TuningDb::open(""); });
  expect_db_error(ErrorKind::InvalidArgument, [&] { (void)TuningDb::open(dir()); });
  write_bytes(file("plain"), "x");
  const std::string msg = expect_db_error(ErrorKind::Io, [&] { (void)TuningDb::open(file("plain/sub/t.db")); });
  EXPECT_NE(msg.find("is not a directory"), std::string::npos) << msg;
  TuningDb db = TuningDb::open(file("ok.db"));
  TuningDb moved = std::move(db);
  expect_db_error(ErrorKind::InvalidArgument, [&] { (void)db.winners<SingleFamily>(); });  // NOLINT(bugprone-use-after-move)
}

/// A WAL-mode database with one winner (as a normal ReadWrite session leaves it).
void make_wal_db(const fs::path& p) {
  TuningDb db = TuningDb::open(p);
  record_simple(db, key(1024), h200(), "atomic.t256", 3.5);
  ASSERT_EQ(db.journal_mode(), "wal");
}

TEST_F(OpenTest, ReadOnlyRollbackFileInReadOnlyDirectoryWritesNothing) {
  const fs::path sys = file("system");
  const fs::path p = sys / "amax.db";
  {
    TuningDb db = TuningDb::open(p);
    record_simple(db, key(1024), h200(), "atomic.t256", 3.5);
    db.use_rollback_journal();
    EXPECT_EQ(db.journal_mode(), "delete");
  }
  const std::string before = read_bytes(p);
  fs::permissions(sys, static_cast<fs::perms>(0555));
  {
    const TuningDb db = TuningDb::open(p, OpenMode::ReadOnly);
    EXPECT_EQ(db.mode(), OpenMode::ReadOnly);
    EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
    EXPECT_EQ(listing(sys), std::vector<std::string>{"amax.db"});  // no -wal/-shm/-journal, even while open
    TuningDb& w = const_cast<TuningDb&>(db);
    const std::string msg =
        expect_db_error(ErrorKind::ReadOnly, [&] { record_simple(w, key(1), h200(), "x", 1.0); });
    EXPECT_NE(msg.find("OpenMode::ReadOnly"), std::string::npos) << msg;
  }
  EXPECT_EQ(listing(sys), std::vector<std::string>{"amax.db"});
  EXPECT_EQ(read_bytes(p), before);
}

TEST_F(OpenTest, ForcedImmutableWalFileInReadOnlyDirectoryCreatesNoCompanions) {
  // Root ignores permission bits, so this forces the path an unprivileged reader takes.
  const fs::path sys = file("system");
  const fs::path p = sys / "amax.db";
  make_wal_db(p);
  const std::string before = read_bytes(p);
  fs::permissions(sys, static_cast<fs::perms>(0555));
  OpenOptions opts;
  opts.immutable = true;
  {
    const TuningDb db = TuningDb::open(p, OpenMode::ReadOnly, opts);
    ASSERT_EQ(db.winners<SingleFamily>().size(), 1u);
    EXPECT_EQ(db.lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1000)->winner.label, "atomic.t256");
    EXPECT_EQ(listing(sys), std::vector<std::string>{"amax.db"});
  }
  EXPECT_EQ(listing(sys), std::vector<std::string>{"amax.db"});
  EXPECT_EQ(read_bytes(p), before);
}

/// Drops to an unprivileged user when running as root (as CI does); returns false if it could
/// not (then the caller runs as itself, which honours permission bits anyway unless root).
bool drop_privileges() {
  if (::geteuid() != 0) return true;
  return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0 && ::geteuid() != 0;
}

TEST_F(OpenTest, UnprivilegedReaderOfWalFileInReadOnlyDirectory) {
  const fs::path sys = file("system");
  const fs::path p = sys / "amax.db";
  make_wal_db(p);
  const std::string before = read_bytes(p);
  fs::permissions(p, static_cast<fs::perms>(0444));
  fs::permissions(sys, static_cast<fs::perms>(0555));
  const int rc = run_in_child([&]() -> int {
    if (!drop_privileges()) return 10;
    {
      const TuningDb db = TuningDb::open(p, OpenMode::ReadOnly);  // falls back to immutable
      if (db.winners<SingleFamily>().size() != 1) return 11;
      if (listing(sys) != std::vector<std::string>{"amax.db"}) return 12;
    }
    try {
      (void)TuningDb::open(p, OpenMode::ReadWrite);
      return 13;
    } catch (const DbError& e) {
      if (e.kind() != ErrorKind::ReadOnly) {
        std::fprintf(stderr, "ReadWrite open gave %s\n", e.what());
        return 14;
      }
    }
    return 0;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop privileges to test as an unprivileged user";
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(listing(sys), std::vector<std::string>{"amax.db"});
  EXPECT_EQ(read_bytes(p), before);
}

TEST_F(OpenTest, ReadWriteRefusedOnReadOnlyDirectoryForUnprivilegedUser) {
  const fs::path sys = file("locked");
  fs::create_directories(sys);
  fs::permissions(sys, static_cast<fs::perms>(0555));
  const int rc = run_in_child([&]() -> int {
    if (!drop_privileges()) return 10;
    try {
      (void)TuningDb::open(sys / "sub" / "t.db");
      return 11;
    } catch (const DbError& e) {
      if (e.kind() != ErrorKind::ReadOnly || std::string(e.what()).find("sub") == std::string::npos) {
        std::fprintf(stderr, "%s\n", e.what());
        return 12;
      }
    }
    return 0;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop privileges";
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(listing(sys).empty());
}

TEST_F(OpenTest, WalUnavailableFallsBackToRollbackJournalWithOneWarning) {
  LogCapture log;
  OpenOptions opts;
  opts.vfs = "unix-none";  // no shared memory: WAL impossible, as on some network filesystems
  {
    TuningDb db = TuningDb::open(file("nfs.db"), OpenMode::ReadWrite, opts);
    EXPECT_EQ(db.journal_mode(), "delete");
    record_simple(db, key(256), h200(), "atomic.t64", 1.5);
    EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
  }
  EXPECT_EQ(log.count("warning: "), 1) << log.text();
  EXPECT_EQ(log.count("WAL journal is not available"), 1) << log.text();
  EXPECT_NE(log.text().find(file("nfs.db").string()), std::string::npos) << log.text();
}

TEST_F(OpenTest, WalCanBeDeclined) {
  OpenOptions opts;
  opts.wal = false;
  LogCapture log;
  TuningDb db = TuningDb::open(file("plain.db"), OpenMode::ReadWrite, opts);
  EXPECT_EQ(db.journal_mode(), "delete");
  EXPECT_EQ(log.count("warning"), 0) << log.text();
}

}  // namespace
}  // namespace amax::db::test

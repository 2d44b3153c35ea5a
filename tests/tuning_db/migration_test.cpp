// Schema 4's migration on real files written by older code: data/schema_v3.db (written by the
// schema-3 library, db4's 3e70465) and data/schema_v2.db (written by the schema-2 library), each
// with its text dump made by that code. A ReadWrite open migrates (provenance moved into its own
// table) keeping every row and value; a ReadOnly open reads the old layout without writing.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <algorithm>

namespace amax::db::test {
namespace {

const fs::path kData = AMAX_DB_TEST_DATA;

class MigrationTest : public TempDirTest {
 protected:
  /// A copy of data/@p name in the test directory (the committed file stays untouched).
  fs::path copy_of(const std::string& name) {
    const fs::path p = file(name);
    fs::copy_file(kData / name, p);
    return p;
  }
  /// The rows of a committed dump, as the current code reads it (load_text into a fresh file).
  TuningDb reference(const std::string& dump) {
    std::ifstream in(kData / dump);
    TuningDb::load_text(in, file("reference.db"));
    return TuningDb::open(file("reference.db"), OpenMode::ReadOnly);
  }
  static std::string dump_of(const TuningDb& db) {
    std::ostringstream out;
    db.dump_text(out);
    return out.str();
  }
};


/// Every query of group rows answers with nothing (not an error).
void expect_no_group_rows(const TuningDb& db) {
  const GroupKey k{"sm_90", DType::bf16, 4096, 128u << 20, 32u << 10};
  EXPECT_TRUE(db.winners<MultiFamily>().empty());
  EXPECT_TRUE(db.all_trials<MultiFamily>().empty());
  EXPECT_TRUE(db.trials<MultiFamily>(k).empty());
  EXPECT_TRUE(db.finished_keys<MultiFamily>("sm_90", DType::bf16, h200()).empty());
  EXPECT_FALSE(db.has_winner<MultiFamily>(k, h200()));
  EXPECT_FALSE(db.lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k)));
  EXPECT_FALSE(db.lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k), h200()));
  EXPECT_TRUE(db.stale_keys<MultiFamily>(h200()).empty());
  std::ostringstream json;
  db.export_json(json, ExportTable::All);
  EXPECT_EQ(json.str().find("group_"), std::string::npos);
  std::ostringstream csv;
  db.export_csv(csv, ExportTable::GroupWinners);
  const std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);  // the header only
}

/// The identity of the H200 build of data/system-db.jsonl (its rows of sm_90/fp32/n=1048576 in
/// schema_v3.db): h200() with that template hash.
Provenance shipped_h200() { return h200("4fa76a069bc56780"); }

TEST_F(MigrationTest, Schema3FileIsReadAsItIsReadOnlyWithoutWritingAnything) {
  const fs::path p = copy_of("schema_v3.db");
  const std::string before = read_bytes(p);
  const TuningDb ref = reference("schema_v3.jsonl");
  {
    const TuningDb ro = TuningDb::open(p, OpenMode::ReadOnly);
    EXPECT_EQ(ro.schema_version(), 3);
    EXPECT_EQ(ro.journal_mode(), "delete");
    ASSERT_EQ(ro.winners<SingleFamily>().size(), 11u);
    ASSERT_EQ(ro.all_trials<SingleFamily>().size(), 22u);
    EXPECT_EQ(ro.winners<SingleFamily>(), ref.winners<SingleFamily>());
    EXPECT_EQ(ro.all_trials<SingleFamily>(), ref.all_trials<SingleFamily>());
    // Its text is exactly the dump the schema-3 code made (no group rows: a schema-3 dump).
    EXPECT_EQ(dump_of(ro), dump_of(ref));
    // Queries that select by provenance read the old prov_* columns.
    const TuningKey k{"sm_90", DType::fp32, 1048576};
    EXPECT_EQ(ro.trials<SingleFamily>(k).size(), 7u);  // three identities
    EXPECT_EQ(ro.finished_keys<SingleFamily>("sm_90", DType::fp32, shipped_h200()),
              (std::vector<TuningKey>{{"sm_90", DType::fp32, 1000}, {"sm_90", DType::fp32, 1024}, k}));
    EXPECT_TRUE(ro.has_winner<SingleFamily>(k, shipped_h200()));
    const auto w = ro.lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1 << 20, shipped_h200());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->winner.label, "self_reset.t512.v4.u2.buncapped");
    EXPECT_EQ(w->provenance.timestamp, "2026-12-01T23:56:08Z");
    EXPECT_EQ(ro.stale_keys<SingleFamily>(shipped_h200()), ref.stale_keys<SingleFamily>(shipped_h200()));
    // sample.jsonl's H200 rows (hash 5f0c2a9e): n = 2^20 also has a fresh winner, 2^26 has not.
    EXPECT_EQ(ro.stale_keys<SingleFamily>(shipped_h200()),
              (std::vector<StaleKey<TuningKey>>{{{"sm_90", DType::bf16, 67108864}, {"template_hash"}}}));
    expect_no_group_rows(ro);
    EXPECT_EQ(listing(dir()), (std::vector<std::string>{"reference.db", "schema_v3.db"}));  // nothing beside it
  }
  EXPECT_EQ(read_bytes(p), before);
}

TEST_F(MigrationTest, Schema3FileMigratesKeepingEveryRowAndValue) {
  const fs::path p = copy_of("schema_v3.db");
  const TuningDb ref = reference("schema_v3.jsonl");
  const std::vector<std::string> ids_before = raw_query(p, "SELECT id, n, label, prov_timestamp FROM trials ORDER BY id");
  const std::size_t provenances =
      raw_query(p, "SELECT DISTINCT " + std::string("prov_device_name, prov_arch, prov_cu_count, prov_driver_version, "
                                                    "prov_compiler, prov_template_hash, prov_tool_version, "
                                                    "prov_timing_protocol, prov_timestamp") +
                       " FROM trials UNION SELECT prov_device_name, prov_arch, prov_cu_count, prov_driver_version, "
                       "prov_compiler, prov_template_hash, prov_tool_version, prov_timing_protocol, prov_timestamp "
                       "FROM winners")
          .size();
  EXPECT_EQ(provenances, 9u);
  LogCapture log;
  {
    TuningDb db = TuningDb::open(p);
    EXPECT_EQ(db.schema_version(), 6);
    EXPECT_EQ(db.winners<SingleFamily>(), ref.winners<SingleFamily>());
    EXPECT_EQ(db.all_trials<SingleFamily>(), ref.all_trials<SingleFamily>());
    EXPECT_EQ(dump_of(db), dump_of(ref));
    EXPECT_EQ(db.integrity_check(), std::vector<std::string>{"ok"});
    expect_no_group_rows(db);
  }
  EXPECT_EQ(log.count("migrated schema version 3 to 6"), 1) << log.text();
  EXPECT_EQ(raw_query(p, "SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"6"});
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM provenance"), std::vector<std::string>{std::to_string(provenances)});
  // Row ids (the last tie-break of every listing) are kept.
  EXPECT_EQ(raw_query(p, "SELECT t.id, t.n, t.label, p.timestamp FROM trials AS t JOIN provenance AS p "
                         "ON p.id = t.provenance_id ORDER BY t.id"),
            ids_before);
  // The migrated file has the tables and indexes of a fresh one.
  { (void)TuningDb::open(file("fresh.db")); }
  const std::string schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name";
  EXPECT_EQ(raw_query(p, schema), raw_query(file("fresh.db"), schema));
  // A second open migrates nothing; ReadOnly reads the new layout alike.
  LogCapture again;
  const TuningDb ro = TuningDb::open(p, OpenMode::ReadOnly);
  EXPECT_EQ(ro.schema_version(), 6);
  EXPECT_EQ(ro.all_trials<SingleFamily>(), ref.all_trials<SingleFamily>());
  EXPECT_EQ(again.count("migrated"), 0);
}

TEST_F(MigrationTest, MigratedFileTakesNewRowsOfBothKinds) {
  const fs::path p = copy_of("schema_v3.db");
  TuningDb db = TuningDb::open(p);
  const TuningKey k{"sm_90", DType::fp32, 1048576};
  // A re-tune of one identity of a key with three: the other two stay, the replaced rows go,
  // and the provenance row only they used is deleted.
  Provenance retune = shipped_h200();
  retune.timing_protocol = "short";
  retune.timestamp = "2026-12-02T10:00:00Z";
  const std::size_t prov_before = std::stoul(raw_query(p, "SELECT count(*) FROM provenance").at(0));
  db.record<SingleFamily>(k, retune, std::vector<Trial>{ok_trial("self_reset.t512.v4.u2.buncapped", 4.0)},
                Winner{"self_reset.t512.v4.u2.buncapped", 4.0, 1.0});
  const auto trials = db.trials<SingleFamily>(k);
  EXPECT_EQ(trials.size(), 5u);  // 3 of the 580.65.06 build, 1 H100, 1 new
  EXPECT_EQ(db.winners<SingleFamily>().size(), 11u);
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM provenance"), std::vector<std::string>{std::to_string(prov_before)});
  record_group_simple(db, gkey(64, 64u << 20, 1u << 20), retune, "multi.t512.v8.u4.c32k.warp", 20.0);
  EXPECT_EQ(db.winners<MultiFamily>().size(), 1u);
  EXPECT_EQ(raw_query(p, "SELECT count(*) FROM provenance"), std::vector<std::string>{std::to_string(prov_before)});
}

TEST_F(MigrationTest, Schema2FileReadOnlyAndMigrated) {
  const fs::path p = copy_of("schema_v2.db");
  const std::string before = read_bytes(p);
  const TuningDb ref = reference("schema_v2.jsonl");
  ASSERT_EQ(ref.winners<SingleFamily>().size(), 13u);
  ASSERT_EQ(ref.all_trials<SingleFamily>().size(), 19u);
  {
    const TuningDb ro = TuningDb::open(p, OpenMode::ReadOnly);
    EXPECT_EQ(ro.schema_version(), 2);
    EXPECT_EQ(ro.winners<SingleFamily>(), ref.winners<SingleFamily>());
    EXPECT_EQ(ro.all_trials<SingleFamily>(), ref.all_trials<SingleFamily>());  // tie_rank -1, confirm_median_us 0: the defaults
    expect_no_group_rows(ro);
  }
  EXPECT_EQ(read_bytes(p), before);
  TuningDb db = TuningDb::open(p);
  EXPECT_EQ(db.schema_version(), 6);
  EXPECT_EQ(db.winners<SingleFamily>(), ref.winners<SingleFamily>());
  EXPECT_EQ(db.all_trials<SingleFamily>(), ref.all_trials<SingleFamily>());
  EXPECT_EQ(dump_of(db), dump_of(ref));
  EXPECT_EQ(db.integrity_check(), std::vector<std::string>{"ok"});
}

TEST_F(MigrationTest, InMemoryFallbackMigratesItsCopyOnly) {
  const fs::path sys = file("ro");
  fs::create_directories(sys);
  fs::copy_file(kData / "schema_v3.db", sys / "t.db");
  const std::string before = read_bytes(sys / "t.db");
  fs::permissions(sys / "t.db", static_cast<fs::perms>(0444));
  fs::permissions(sys, static_cast<fs::perms>(0555));
  const TuningDb ref = reference("schema_v3.jsonl");
  const int rc = run_in_child([&]() -> int {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 10;
    OpenOptions o;
    o.memory_fallback = true;
    TuningDb db = TuningDb::open(sys / "t.db", OpenMode::ReadWrite, o);
    if (!db.in_memory() || db.schema_version() != 6) return 11;
    if (db.all_trials<SingleFamily>() != ref.all_trials<SingleFamily>() || db.winners<SingleFamily>() != ref.winners<SingleFamily>()) return 12;
    record_group_simple(db, gkey(2, 2, 1), h200(), "m", 1.0);
    return db.winners<MultiFamily>().size() == 1 ? 0 : 13;
  });
  if (rc == 10) GTEST_SKIP() << "cannot drop privileges";
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(read_bytes(sys / "t.db"), before);
}

}  // namespace
}  // namespace amax::db::test

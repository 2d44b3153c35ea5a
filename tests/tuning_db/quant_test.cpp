// The quantize family's rows (DbFamily<QuantizeFamily>): keys (arch, dtype, n) in tables of their
// own, recorded, looked up by the nearest-size rule, dumped, loaded, exported and merged like the
// other families'; a schema 5 file migrates to them; corrupt rows are refused naming the table.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <amax/db/merge.hpp>

#include <nlohmann/json.hpp>

#include <sstream>

namespace amax::db::test {
namespace {

class QuantDbTest : public OpenDbTest {};

const std::string kKeep = "quant.keep.t256.v8.u4.k8.buncapped";
const std::string kCast = "quant.cast.t512.v8.u4.k0.b4cu";

void record_quant(TuningDb& db, const TuningKey& k, const Provenance& p, const std::string& label, double us) {
  const std::vector<Trial> trials{ok_trial(label, us), ok_trial(label == kKeep ? kCast : kKeep, us + 1.0)};
  db.record<QuantizeFamily>(k, p, trials, Winner{label, us, 100.0});
}

std::string dump_of(const TuningDb& db) {
  std::ostringstream out;
  db.dump_text(out);
  return out.str();
}

TEST_F(QuantDbTest, RowsOfTheirOwnBesideTheSingleTensorRowsOfTheSameKey) {
  const TuningKey k = key(1 << 20, DType::bf16);
  record_simple(db(), k, h200(), "one_pass.t512.v8.u2.buncapped", 3.0);
  record_quant(db(), k, h200(), kKeep, 5.5);
  // Re-recording the quantize key replaces only its own rows.
  record_quant(db(), k, h200(), kCast, 5.0);
  ASSERT_EQ(db().winners<SingleFamily>().size(), 1u);
  EXPECT_EQ(db().winners<SingleFamily>()[0].winner.label, "one_pass.t512.v8.u2.buncapped");
  EXPECT_EQ(db().trials<SingleFamily>(k).size(), 1u);
  const auto ws = db().winners<QuantizeFamily>();
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0], (WinnerRow{k, Winner{kCast, 5.0, 100.0}, h200()}));
  const auto ts = db().trials<QuantizeFamily>(k);
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].trial.label, kCast);
  EXPECT_EQ(ts[1].trial.label, kKeep);
  EXPECT_EQ(ts[1].trial.median_us, 6.0);
  EXPECT_TRUE(db().has_winner<QuantizeFamily>(k, h200()));
  EXPECT_FALSE(db().has_winner<QuantizeFamily>(key(1 << 21, DType::bf16), h200()));
  EXPECT_EQ(db().finished_keys<QuantizeFamily>("sm_90", DType::bf16, h200()), std::vector<TuningKey>{k});
  EXPECT_TRUE(db().finished_keys<QuantizeFamily>("sm_90", DType::fp32, h200()).empty());
  EXPECT_EQ(db().all_trials<SingleFamily>().size(), 1u);
}

TEST_F(QuantDbTest, NearestRuleIsTheSingleTensorOne) {
  record_quant(db(), key(1 << 16, DType::bf16), h200(), kKeep, 3.0);
  record_quant(db(), key(1 << 20, DType::bf16), h200(), kKeep, 4.0);
  record_quant(db(), key(1 << 26, DType::bf16), h200(), kCast, 90.0);
  auto n_of = [&](std::uint64_t n) {
    const auto w = db().lookup_nearest<QuantizeFamily>("sm_90", DType::bf16, n);
    return w ? w->key.n : 0;
  };
  EXPECT_EQ(n_of(0), 1u << 16);
  EXPECT_EQ(n_of(1 << 18), 1u << 20);  // 2 octaves from both: the larger
  EXPECT_EQ(n_of(1 << 19), 1u << 20);
  EXPECT_EQ(n_of((1 << 18) - 1), 1u << 16);
  EXPECT_EQ(n_of(1 << 23), 1u << 26);  // 3 octaves from both: the larger
  EXPECT_FALSE(db().lookup_nearest<QuantizeFamily>("sm_90", DType::fp32, 1024));
  EXPECT_FALSE(db().lookup_nearest<QuantizeFamily>("sm_80", DType::bf16, 1024));
  // A stale row is passed over against the current build.
  EXPECT_EQ(db().lookup_nearest<QuantizeFamily>("sm_90", DType::bf16, 1 << 16, h200())->key.n, 1u << 16);
  EXPECT_FALSE(db().lookup_nearest<QuantizeFamily>("sm_90", DType::bf16, 1 << 16, h200("ffff0000")));
  const auto stale = db().stale_keys<QuantizeFamily>(h200("ffff0000"));
  ASSERT_EQ(stale.size(), 3u);
  EXPECT_EQ(stale[0].key, key(1 << 16, DType::bf16));
  EXPECT_EQ(stale[0].changed, std::vector<std::string>{"template_hash"});
  EXPECT_TRUE(db().stale_keys<SingleFamily>(h200("ffff0000")).empty());
}

TEST_F(QuantDbTest, TextDumpRoundTripsAndCountsTheQuantizeRows) {
  record_simple(db(), key(4096), h200(), "one_pass.t512.v4.u2.buncapped", 2.0);
  record_quant(db(), key(4096, DType::bf16), h200(), kKeep, 3.25);
  db().record<QuantizeFamily>(key(8192, DType::fp16), h100(),
                              std::vector<Trial>{failed_trial(kCast, TrialStatus::wrong_result, "byte 3")}, std::nullopt);
  const std::string text = dump_of(db());
  std::istringstream lines(text);
  std::string header, line, last;
  std::getline(lines, header);
  EXPECT_EQ(header, "{\"format\":\"amax-tune-db\",\"format_version\":2,\"schema_version\":6}");
  int quant_winner = 0, quant_trial = 0;
  while (std::getline(lines, line)) {
    quant_winner += line.starts_with("{\"row\":\"quant_winner\"");
    quant_trial += line.starts_with("{\"row\":\"quant_trial\"");
    last = line;
  }
  EXPECT_EQ(quant_winner, 1);
  EXPECT_EQ(quant_trial, 3);
  EXPECT_EQ(last, "{\"end\":\"amax-tune-db\",\"rows\":{\"winner\":1,\"trial\":1,\"group_winner\":0,\"group_trial\":0,"
                  "\"quant_winner\":1,\"quant_trial\":3}}");
  std::istringstream in(text);
  TuningDb::load_text(in, file("copy.db"), "dump.jsonl");
  const TuningDb copy = TuningDb::open(file("copy.db"), OpenMode::ReadOnly);
  EXPECT_EQ(copy.winners<QuantizeFamily>(), db().winners<QuantizeFamily>());
  EXPECT_EQ(copy.all_trials<QuantizeFamily>(), db().all_trials<QuantizeFamily>());
  EXPECT_EQ(copy.winners<SingleFamily>(), db().winners<SingleFamily>());
  EXPECT_EQ(dump_of(copy), text);
}

TEST_F(QuantDbTest, DumpWithoutQuantizeRowsKeepsItsOlderSchemaVersion) {
  record_simple(db(), key(4096), h200(), "one_pass.t512.v4.u2.buncapped", 2.0);
  std::istringstream lines(dump_of(db()));
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "{\"format\":\"amax-tune-db\",\"format_version\":2,\"schema_version\":5}");
}

TEST_F(QuantDbTest, LoadTextRefusesBadQuantizeRowsNamingTheLine) {
  record_quant(db(), key(4096, DType::bf16), h200(), kKeep, 3.25);
  const std::string text = dump_of(db());
  auto load = [&](std::string t) {
    std::istringstream in(t);
    return expect_db_error(ErrorKind::InvalidArgument, [&] { TuningDb::load_text(in, file("bad.db"), "bad.jsonl"); });
  };
  std::string zero_n = text;
  const auto at = zero_n.find("\"n\":4096");
  zero_n.replace(at, 8, "\"n\":0");
  EXPECT_NE(load(zero_n).find("text dump 'bad.jsonl', line 2: "), std::string::npos) << load(zero_n);
  EXPECT_NE(load(zero_n).find("n = 0"), std::string::npos) << load(zero_n);
  std::string old = text;
  old.replace(old.find("\"schema_version\":6"), 18, "\"schema_version\":5");
  EXPECT_NE(load(old).find("line 2: a quant_winner row needs a dump of schema version 6 or later (the header says 5)"),
            std::string::npos)
      << load(old);
  std::string miscounted = text;
  miscounted.replace(miscounted.find("\"quant_trial\":2"), 15, "\"quant_trial\":1");
  EXPECT_NE(load(miscounted).find("the end line states 1 quant_trial rows, but the dump holds 2"), std::string::npos)
      << load(miscounted);
  EXPECT_FALSE(fs::exists(file("bad.db")));
}

TEST_F(QuantDbTest, CorruptStoredRowIsRefusedNamingTheTable) {
  record_quant(db(), key(4096, DType::bf16), h200(), kKeep, 3.25);
  raw_exec(file("t.db"), "UPDATE quant_winners SET dtype = 'fp64'");
  const std::string msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)db().winners<QuantizeFamily>(); });
  EXPECT_NE(msg.find("table quant_winners, column dtype: stored value 'fp64'"), std::string::npos) << msg;
  EXPECT_EQ(db().all_trials<QuantizeFamily>().size(), 2u);  // the trials are intact
}

TEST_F(QuantDbTest, ExportsTheQuantizeArraysAndTables) {
  record_simple(db(), key(4096), h200(), "one_pass.t512.v4.u2.buncapped", 2.0);
  record_quant(db(), key(4096, DType::bf16), h200(), kKeep, 3.25);
  std::ostringstream all;
  db().export_json(all, ExportTable::All);
  const auto j = nlohmann::json::parse(all.str());
  EXPECT_EQ(j["schema_version"], 6);
  ASSERT_EQ(j["quant_winners"].size(), 1u);
  EXPECT_EQ(j["quant_winners"][0]["label"], kKeep);
  EXPECT_EQ(j["quant_trials"].size(), 2u);
  EXPECT_EQ(j["winners"].size(), 1u);
  EXPECT_FALSE(j.contains("group_winners"));
  std::ostringstream only;
  db().export_json(only, ExportTable::QuantWinners);
  const auto q = nlohmann::json::parse(only.str());
  EXPECT_EQ(q.size(), 2u);  // schema_version and quant_winners
  EXPECT_EQ(q["quant_winners"].size(), 1u);
  std::ostringstream csv;
  db().export_csv(csv, ExportTable::QuantWinners);
  const std::string c = csv.str();
  EXPECT_TRUE(c.starts_with("arch,dtype,n,label,median_us,gbps,prov_device_name,")) << c;
  EXPECT_NE(c.find("\nsm_90,bf16,4096," + kKeep + ",3.25,100,NVIDIA H200,"), std::string::npos) << c;
}

TEST_F(QuantDbTest, MergeKeepsTheFasterQuantizeWinnerPerKey) {
  record_quant(db(), key(4096, DType::bf16), h200(), kKeep, 3.25);
  record_quant(db(), key(8192, DType::bf16), h200(), kKeep, 4.0);
  {
    TuningDb b = TuningDb::open(file("b.db"));
    Provenance newer = h200();
    newer.driver_version = "590.10";
    record_quant(b, key(4096, DType::bf16), newer, kCast, 3.0);
    record_quant(b, key(8192, DType::bf16), newer, kCast, 4.5);
  }
  const MergeReport r = merge(file("t.db"), file("b.db"), file("m.db"));
  EXPECT_EQ(r.quantize.winners_written, 2u);
  EXPECT_EQ(r.quantize.winners_from_a, 1u);
  EXPECT_EQ(r.quantize.winners_from_b, 1u);
  EXPECT_EQ(r.quantize.trials_written, 4u);
  ASSERT_EQ(r.quantize.contested.size(), 2u);
  EXPECT_EQ(r.quantize.contested[0].kept.winner.label, kCast);
  EXPECT_EQ(r.quantize.contested[0].differing_fields, std::vector<std::string>{"driver_version"});
  EXPECT_EQ(r.single.winners_written, 0u);
  const TuningDb m = TuningDb::open(file("m.db"), OpenMode::ReadOnly);
  const auto ws = m.winners<QuantizeFamily>();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].winner.median_us, 3.0);
  EXPECT_EQ(ws[1].winner.median_us, 4.0);
  EXPECT_TRUE(m.winners<SingleFamily>().empty());
}

TEST_F(TempDirTest, Schema5FileMigratesToEmptyQuantizeTables) {
  const fs::path p = file("v5.db");
  {
    TuningDb db = TuningDb::open(p);
    record_simple(db, key(1024), h200(), "one_pass.t512.v4.u2.buncapped", 2.0);
    record_group_simple(db, gkey(4, 4096, 1024), h200(), "multi.t512.v8.u4.c32k.b4cu.warp", 7.0);
  }
  // What a build of schema 5 wrote: no quantize tables.
  raw_exec(p, "DROP TABLE quant_trials; DROP TABLE quant_winners; UPDATE meta SET value = 5 WHERE key = "
              "'schema_version'");
  {
    const TuningDb ro = TuningDb::open(p, OpenMode::ReadOnly);
    EXPECT_EQ(ro.schema_version(), 5);
    EXPECT_TRUE(ro.winners<QuantizeFamily>().empty());
    EXPECT_TRUE(ro.all_trials<QuantizeFamily>().empty());
    EXPECT_FALSE(ro.lookup_nearest<QuantizeFamily>("sm_90", DType::fp32, 1024));
  }
  LogCapture log;
  TuningDb db = TuningDb::open(p);
  EXPECT_EQ(log.count("migrated schema version 5 to 6"), 1) << log.text();
  EXPECT_EQ(db.schema_version(), 6);
  EXPECT_EQ(db.winners<SingleFamily>().size(), 1u);
  EXPECT_EQ(db.winners<MultiFamily>().size(), 1u);
  EXPECT_TRUE(db.winners<QuantizeFamily>().empty());
  record_quant(db, key(1024), h200(), kKeep, 3.0);
  EXPECT_EQ(db.winners<QuantizeFamily>().size(), 1u);
  { (void)TuningDb::open(file("fresh.db")); }
  const std::string schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name";
  EXPECT_EQ(raw_query(p, schema), raw_query(file("fresh.db"), schema));
}

}  // namespace
}  // namespace amax::db::test

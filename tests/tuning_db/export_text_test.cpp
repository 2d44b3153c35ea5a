// TuningDb: export_json, export_csv, dump_text / load_text.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

namespace amax::db::test {
namespace {

class ExportTest : public TempDirTest {
 protected:
  /// One key: a winner and two trials (one failed, with a reason that needs CSV quoting).
  TuningDb small_db() {
    TuningDb db = TuningDb::open(file("small.db"));
    const std::vector<Trial> trials{
        ok_trial("two_stage.t256", 3.5, 1.25),
        failed_trial("atomic.t64", TrialStatus::compile_failed, "error: \"x\", line 2\nnext")};
    db.record<SingleFamily>(key(1024), h200(), trials, Winner{"two_stage.t256", 3.5, 1.25});
    return db;
  }
};

const char* const kProvJson = R"(
        "device_name": "NVIDIA H200",
        "arch": "sm_90",
        "cu_count": 132,
        "driver_version": "580.65.06",
        "compiler": "nvrtc 13.0",
        "template_hash": "a1b2c3d4",
        "tool_version": "0.1.0",
        "timing_protocol": "warmup=10 batches=25 rotate=4xL2",
        "timestamp": "2026-11-30T02:51:00Z"
      })";

TEST_F(ExportTest, JsonWinnersExact) {
  const TuningDb db = small_db();
  std::ostringstream out;
  db.export_json(out);
  const std::string expected = std::string(R"({
  "schema_version": 5,
  "winners": [
    {
      "arch": "sm_90",
      "dtype": "fp32",
      "n": 1024,
      "label": "two_stage.t256",
      "median_us": 3.5,
      "gbps": 1.25,
      "provenance": {)") + kProvJson + R"(
    }
  ]
}
)";
  EXPECT_EQ(out.str(), expected);
}

TEST_F(ExportTest, JsonAllHasTrials) {
  const TuningDb db = small_db();
  std::ostringstream out;
  db.export_json(out, ExportTable::All);
  const std::string s = out.str();
  EXPECT_NE(s.find(R"("winners": [)"), std::string::npos);
  const auto t = s.find(R"("trials": [)");
  ASSERT_NE(t, std::string::npos) << s;
  const std::string failed = R"(
    {
      "arch": "sm_90",
      "dtype": "fp32",
      "n": 1024,
      "label": "atomic.t64",
      "status": "compile_failed",
      "reason": "error: \"x\", line 2\nnext",
      "median_us": 0.0,
      "spread_us": 0.0,
      "samples": 0,
      "gbps": 0.0,
      "registers": -1,
      "spill_bytes": -1,
      "tie_rank": -1,
      "confirm_median_us": 0.0,
      "host_us": 0.0,
      "launches": -1,
      "provenance": {)";
  EXPECT_NE(s.find(failed, t), std::string::npos) << s;
  std::ostringstream trials_only;
  db.export_json(trials_only, ExportTable::Trials);
  EXPECT_EQ(trials_only.str().find("\"winners\""), std::string::npos);
}

const char* const kProvCsv = "NVIDIA H200,sm_90,132,580.65.06,nvrtc 13.0,a1b2c3d4,0.1.0,warmup=10 batches=25 rotate=4xL2,"
                             "2026-11-30T02:51:00Z";
const char* const kProvHeader = "prov_device_name,prov_arch,prov_cu_count,prov_driver_version,prov_compiler,"
                                "prov_template_hash,prov_tool_version,prov_timing_protocol,prov_timestamp";

TEST_F(ExportTest, CsvExact) {
  const TuningDb db = small_db();
  std::ostringstream w;
  db.export_csv(w);
  EXPECT_EQ(w.str(), std::string("arch,dtype,n,label,median_us,gbps,") + kProvHeader + "\n" +
                         "sm_90,fp32,1024,two_stage.t256,3.5,1.25," + kProvCsv + "\n");
  std::ostringstream t;
  db.export_csv(t, ExportTable::Trials);
  EXPECT_EQ(t.str(),
            std::string("arch,dtype,n,label,status,reason,median_us,spread_us,samples,gbps,registers,spill_bytes,"
                        "tie_rank,confirm_median_us,host_us,launches,") +
                kProvHeader + "\n" +
                "sm_90,fp32,1024,atomic.t64,compile_failed,\"error: \"\"x\"\", line 2\nnext\",0,0,0,0,-1,-1,-1,0,0,-1," +
                kProvCsv + "\n" + "sm_90,fp32,1024,two_stage.t256,ok,,3.5,0.35,25,1.25,32,0,-1,0,0,-1," + kProvCsv + "\n");
  std::ostringstream bad;
  expect_db_error(ErrorKind::InvalidArgument, [&] { db.export_csv(bad, ExportTable::All); });
}

TEST_F(ExportTest, DumpTextExact) {
  const TuningDb db = small_db();
  std::ostringstream out;
  db.dump_text(out);
  const std::string prov =
      R"("prov_device_name":"NVIDIA H200","prov_arch":"sm_90","prov_cu_count":132,"prov_driver_version":"580.65.06",)"
      R"("prov_compiler":"nvrtc 13.0","prov_template_hash":"a1b2c3d4","prov_tool_version":"0.1.0",)"
      R"("prov_timing_protocol":"warmup=10 batches=25 rotate=4xL2","prov_timestamp":"2026-11-30T02:51:00Z"})";
  const std::string expected =
      std::string(R"({"format":"amax-tune-db","format_version":2,"schema_version":5})") + "\n" +
      R"({"row":"winner","arch":"sm_90","dtype":"fp32","n":1024,"label":"two_stage.t256","median_us":3.5,"gbps":1.25,)" +
      prov + "\n" +
      R"({"row":"trial","arch":"sm_90","dtype":"fp32","n":1024,"label":"atomic.t64","status":"compile_failed",)"
      R"("reason":"error: \"x\", line 2\nnext","median_us":0.0,"spread_us":0.0,"samples":0,"gbps":0.0,)"
      R"("registers":-1,"spill_bytes":-1,"tie_rank":-1,"confirm_median_us":0.0,"host_us":0.0,"launches":-1,)" +
      prov + "\n" +
      R"({"row":"trial","arch":"sm_90","dtype":"fp32","n":1024,"label":"two_stage.t256","status":"ok","reason":"",)"
      R"("median_us":3.5,"spread_us":0.35,"samples":25,"gbps":1.25,"registers":32,"spill_bytes":0,)"
      R"("tie_rank":-1,"confirm_median_us":0.0,"host_us":0.0,"launches":-1,)" +
      prov + "\n" + R"({"end":"amax-tune-db","rows":{"winner":1,"trial":2,"group_winner":0,"group_trial":0}})" + "\n";
  EXPECT_EQ(out.str(), expected);
}

TEST_F(ExportTest, DumpLoadRoundTripIsExact) {
  {
    TuningDb db = TuningDb::open(file("src.db"));
    Provenance mi = h200();
    mi.device_name = "AMD Instinct MI300X (ünïcödé, \"quoted\")";
    mi.arch = "gfx942:sramecc+:xnack-";
    mi.cu_count = 304;
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1} << 20, (std::uint64_t{1} << 62) + 1}) {
      for (DType d : {DType::fp32, DType::bf16, DType::fp16}) {
        Trial a = ok_trial("a.t" + std::to_string(n), 0.1 + 0.2, 1e-300);
        a.spread_us = 123456.789;
        Trial b = failed_trial("b", TrialStatus::wrong_result, "tab\there, newline\nthere, nul-free");
        db.record<SingleFamily>(key(n, d), h200(), std::vector<Trial>{a, b}, Winner{a.label, a.median_us, 2.0 / 3.0});
        db.record<SingleFamily>(key(n, d, "gfx942"), mi, std::vector<Trial>{b}, std::nullopt);
      }
    }
    record_simple(db, key(5), h200("other-hash"), "x", 9.75);
  }
  const TuningDb src = TuningDb::open(file("src.db"), OpenMode::ReadOnly);
  std::ostringstream dump1;
  src.dump_text(dump1);
  std::istringstream in(dump1.str());
  TuningDb::load_text(in, file("out/loaded.db"));
  EXPECT_EQ(listing(file("out")), std::vector<std::string>{"loaded.db"});  // no temp files left
  const TuningDb loaded = TuningDb::open(file("out/loaded.db"), OpenMode::ReadOnly);
  EXPECT_EQ(loaded.journal_mode(), "delete");  // shippable: ReadOnly opens create nothing
  EXPECT_EQ(loaded.winners<SingleFamily>(), src.winners<SingleFamily>());
  EXPECT_EQ(loaded.all_trials<SingleFamily>(), src.all_trials<SingleFamily>());
  std::ostringstream dump2;
  loaded.dump_text(dump2);
  EXPECT_EQ(dump2.str(), dump1.str());
  // One row per line, winner before the trials of its key and identity, sorted.
  std::istringstream lines(dump1.str());
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 1u + 9u * (3u + 1u) + 2u + 1u);  // header, 9 x (sm_90 winner + 2 trials, gfx942 trial), key 5, end
  EXPECT_EQ(all.back(), R"({"end":"amax-tune-db","rows":{"winner":10,"trial":28,"group_winner":0,"group_trial":0}})");
  all.pop_back();
  EXPECT_NE(all[1].find(R"({"row":"trial","arch":"gfx942","dtype":"bf16","n":1,)"), std::string::npos) << all[1];
  EXPECT_NE(all[2].find(R"({"row":"trial","arch":"gfx942","dtype":"bf16","n":1048576,)"), std::string::npos) << all[2];
  EXPECT_NE(all.back().find(R"({"row":"trial","arch":"sm_90","dtype":"fp32","n":4611686018427387905,)"),
            std::string::npos) << all.back();
}

TEST_F(ExportTest, LoadTextReplacesOutputAndItsStaleCompanions) {
  const fs::path out = file("amax.db");
  { (void)small_db(); }
  std::ostringstream dump;
  TuningDb::open(file("small.db")).dump_text(dump);
  write_bytes(out, "old garbage");
  write_bytes(fs::path(out.string() + "-wal"), "stale wal");
  std::istringstream in(dump.str());
  TuningDb::load_text(in, out);
  EXPECT_FALSE(fs::exists(out.string() + "-wal"));
  EXPECT_EQ(TuningDb::open(out, OpenMode::ReadOnly).winners<SingleFamily>().size(), 1u);
}

TEST_F(ExportTest, LoadTextAcceptsOlderDumpsAndCrlf) {
  const std::string text =
      "{\"format\":\"amax-tune-db\",\"schema_version\":1}\r\n"
      "\r\n"
      R"({"row":"trial","arch":"sm_90","dtype":"fp16","n":7,"label":"l","status":"ok","reason":"","median_us":2,)"
      R"("spread_us":0.5,"samples":3,"gbps":1,"registers":10,"prov_device_name":"d","prov_arch":"sm_90",)"
      R"("prov_cu_count":1,"prov_driver_version":"v","prov_compiler":"c","prov_template_hash":"h",)"
      R"("prov_tool_version":"t","prov_timing_protocol":"p","prov_timestamp":"s"})"
      "\r\n";
  std::istringstream in(text);
  TuningDb::load_text(in, file("v1.db"));
  const auto rows = TuningDb::open(file("v1.db")).all_trials<SingleFamily>();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].trial.spill_bytes, -1);  // not in a version-1 dump: the default
  EXPECT_EQ(rows[0].trial.median_us, 2.0);
  EXPECT_EQ(rows[0].key, key(7, DType::fp16));
}

struct BadText {
  const char* name;
  std::string text;
  ErrorKind kind;
  const char* needle;
};

class LoadTextErrorTest : public TempDirTest, public ::testing::WithParamInterface<BadText> {};

const std::string kHeader = "{\"format\":\"amax-tune-db\",\"schema_version\":3}\n";
const std::string kHeader2 = "{\"format\":\"amax-tune-db\",\"format_version\":2,\"schema_version\":3}\n";
std::string kEnd(int winners, int trials) {
  return R"({"end":"amax-tune-db","rows":{"winner":)" + std::to_string(winners) + R"(,"trial":)" +
         std::to_string(trials) + R"(,"group_winner":0,"group_trial":0}})" + "\n";
}
const std::string kWinner =
    R"({"row":"winner","arch":"sm_90","dtype":"fp32","n":1024,"label":"w","median_us":3.5,"gbps":1.25,)"
    R"("prov_device_name":"d","prov_arch":"sm_90","prov_cu_count":1,"prov_driver_version":"v","prov_compiler":"c",)"
    R"("prov_template_hash":"h","prov_tool_version":"t","prov_timing_protocol":"p","prov_timestamp":"s"})";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  return s.replace(s.find(from), from.size(), to);
}

// The input's name, when given, is what every message names (not the output).
TEST_F(ExportTest, LoadTextErrorsNameTheInputFile) {
  std::istringstream in(kHeader2 + kWinner + "\n");
  const std::string msg = expect_db_error(ErrorKind::InvalidArgument,
                                          [&] { TuningDb::load_text(in, file("out.db"), "dumps/in.jsonl"); });
  EXPECT_EQ(msg.rfind("text dump 'dumps/in.jsonl', line 2: the end line", 0), 0u) << msg;
  EXPECT_FALSE(fs::exists(file("out.db")));
}

// A dump with its end line loads; the counts of every row type are checked, the group ones too.
TEST_F(ExportTest, LoadTextAcceptsTheEndLineWithMatchingCounts) {
  std::istringstream in(kHeader2 + kWinner + "\n" + kEnd(1, 0));
  TuningDb::load_text(in, file("ok.db"));
  EXPECT_EQ(TuningDb::open(file("ok.db"), OpenMode::ReadOnly).winners<SingleFamily>().size(), 1u);
}

TEST_P(LoadTextErrorTest, NamesTheLineAndTheProblemAndWritesNothing) {
  std::istringstream in(GetParam().text);
  const std::string msg =
      expect_db_error(GetParam().kind, [&] { TuningDb::load_text(in, file("out.db")); });
  EXPECT_NE(msg.find(GetParam().needle), std::string::npos) << msg;
  EXPECT_TRUE(listing(dir()).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LoadTextErrorTest,
    ::testing::Values(
        BadText{"Empty", "", ErrorKind::InvalidArgument, "line 1: the input is empty"},
        BadText{"NoHeader", kWinner + "\n", ErrorKind::InvalidArgument, "line 1: expected the header"},
        BadText{"BadJson", kHeader + kWinner + "\n{\"row\": \n", ErrorKind::InvalidArgument, "line 3: not valid JSON"},
        BadText{"NotObject", kHeader + "[1,2]\n", ErrorKind::InvalidArgument, "line 2: expected a JSON object, got array"},
        BadText{"UnknownField", kHeader + replace(kWinner, "\"gbps\"", "\"colour\":1,\"gbps\"") + "\n",
                ErrorKind::InvalidArgument, "line 2: unknown field 'colour'"},
        BadText{"MissingField", kHeader + replace(kWinner, "\"gbps\":1.25,", "") + "\n", ErrorKind::InvalidArgument,
                "line 2: missing field 'gbps'"},
        BadText{"WrongType", kHeader + replace(kWinner, "\"n\":1024", "\"n\":\"many\"") + "\n",
                ErrorKind::InvalidArgument, "line 2: field 'n' has the invalid value \"many\""},
        BadText{"NegativeN", kHeader + replace(kWinner, "\"n\":1024", "\"n\":-5") + "\n", ErrorKind::InvalidArgument,
                "field 'n' has the invalid value -5"},
        BadText{"BadDtype", kHeader + replace(kWinner, "\"fp32\"", "\"fp64\"") + "\n", ErrorKind::InvalidArgument,
                "field 'dtype' has the invalid value \"fp64\""},
        BadText{"RuleBroken", kHeader + replace(kWinner, "\"median_us\":3.5", "\"median_us\":0") + "\n",
                ErrorKind::InvalidArgument, "line 2: winner 'w' has median_us = 0"},
        BadText{"UnknownRow", kHeader + replace(kWinner, "\"winner\"", "\"loser\"") + "\n", ErrorKind::InvalidArgument,
                "line 2: unknown row type \"loser\""},
        BadText{"Duplicate", kHeader + kWinner + "\n" + kWinner + "\n", ErrorKind::InvalidArgument,
                "line 3: duplicates line 2"},
        BadText{"FutureVersion", "{\"format\":\"amax-tune-db\",\"schema_version\":7}\n", ErrorKind::FutureSchema,
                "schema version 7, but this build of amax-tune understands versions 1 to 6"},
        // Text format 2: the end line with the row counts is required and checked.
        BadText{"CutShort", kHeader2 + kWinner + "\n", ErrorKind::InvalidArgument,
                "line 2: the end line {\"end\":\"amax-tune-db\",\"rows\":{...}} is missing after 1 rows: the dump is "
                "cut short"},
        BadText{"CutShortEmpty", kHeader2, ErrorKind::InvalidArgument, "line 1: the end line"},
        BadText{"Miscounted", kHeader2 + kWinner + "\n" + kEnd(2, 0), ErrorKind::InvalidArgument,
                "line 3: the end line states 2 winner rows, but the dump holds 1: rows were lost or added"},
        BadText{"MiscountedTrials", kHeader2 + kWinner + "\n" + kEnd(1, 1), ErrorKind::InvalidArgument,
                "line 3: the end line states 1 trial rows, but the dump holds 0"},
        BadText{"UnknownCount", kHeader2 + kWinner + "\n" + R"({"end":"amax-tune-db","rows":{"winner":1,"loser":0}})" "\n",
                ErrorKind::InvalidArgument, "line 3: the end line counts an unknown row type \"loser\""},
        BadText{"BadCount", kHeader2 + kWinner + "\n" + R"({"end":"amax-tune-db","rows":{"winner":-1}})" "\n",
                ErrorKind::InvalidArgument, "line 3: the end line's count of winner rows is -1 (expected a count)"},
        BadText{"BadEndLine", kHeader2 + kWinner + "\n" + R"({"end":"other","rows":{}})" "\n",
                ErrorKind::InvalidArgument, "line 3: expected the end line"},
        BadText{"RowAfterEnd", kHeader2 + kEnd(0, 0) + kWinner + "\n", ErrorKind::InvalidArgument,
                "line 3: a line after the end line (line 2)"},
        BadText{"FutureTextFormat", "{\"format\":\"amax-tune-db\",\"format_version\":3,\"schema_version\":4}\n",
                ErrorKind::FutureSchema, "line 1: the dump has text format version 3, but this build of amax-tune "
                "understands versions 1 to 2"},
        BadText{"BadTextFormat", "{\"format\":\"amax-tune-db\",\"format_version\":\"2\",\"schema_version\":4}\n",
                ErrorKind::InvalidArgument, "line 1: the header's format_version is \"2\" (expected a positive integer)"}),
    [](const ::testing::TestParamInfo<BadText>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace amax::db::test

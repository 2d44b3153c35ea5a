// The amax-tune command line as a user meets it (CPU): exit codes and error messages for bad
// input, the database commands on real files, emit. Runs the real binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

struct CmdResult {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs amax-tune with `args` (through `launcher`, e.g. "setpriv ... ", when given).
CmdResult run(const std::string& args, const std::string& launcher = "") {
  const std::string cmd = launcher + std::string(AMAX_TUNE_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  return CmdResult{WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A dump's text without its last line (the end line {"end":...} of a text format 2 dump).
std::string without_end_line(const std::string& text) {
  const auto last = text.rfind('\n', text.size() - 2);
  EXPECT_EQ(text.compare(last + 1, 7, "{\"end\":"), 0) << "no end line: " << text.substr(last + 1);
  return text.substr(0, last + 1);
}

// `rows` (a header and rows) with the end line that states their counts, as `export` writes it.
std::string with_end_line(const std::string& rows) {
  auto count = [&](const char* tag) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = rows.find(std::string("{\"row\":\"") + tag + "\"", at)) != std::string::npos; ++at) ++n;
    return std::to_string(n);
  };
  return rows + R"({"end":"amax-tune-db","rows":{"winner":)" + count("winner") + R"(,"trial":)" + count("trial") +
         R"(,"group_winner":)" + count("group_winner") + R"(,"group_trial":)" + count("group_trial") + "}}\n";
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("amax-cli-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  // A real database made from the shipped text dump.
  fs::path shipped_db() {
    const auto db = dir / "sys.db";
    const CmdResult r = run("import " + std::string(AMAX_SYSTEM_DB_TEXT) + " -o " + db.string());
    EXPECT_EQ(r.code, 0) << r.out;
    return db;
  }
  fs::path dir;
};

}  // namespace

TEST_F(Cli, BadArgumentsAreUsageErrorsNamingTheValue) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--arch sm_9x --db " + (dir / "a.db").string(), "invalid arch 'sm_9x'"},
      {"--arch gfx942:sramecc --db " + (dir / "a.db").string(), "target feature 'sramecc' must end in + or -"},
      {"--arch gfx942:xnack --db " + (dir / "a.db").string(), "invalid arch 'gfx942:xnack': target feature 'xnack' must end in + or -"},
      {"--arch gfx942:foo+ --db " + (dir / "a.db").string(), "invalid arch 'gfx942:foo+': unknown target feature 'foo+'"},
      {"--arch gfx942::xnack+ --db " + (dir / "a.db").string(), "invalid arch 'gfx942::xnack+': empty target feature"},
      {"--arch gfx942: --db " + (dir / "a.db").string(), "invalid arch 'gfx942:': empty target feature"},
      {"--arch gfx942:xnack+:xnack- --db " + (dir / "a.db").string(), "target feature 'xnack' given twice"},
      {"--arch gfx942:xnack-:sramecc+ --db " + (dir / "a.db").string(), "must come in the order sramecc, xnack"},
      {"emit --arch gfx942:foo+ --dtype bf16 --list", "invalid arch 'gfx942:foo+': unknown target feature 'foo+'"},
      {"show --arch gfx942:xnack --db " + (dir / "none.db").string(), "invalid arch 'gfx942:xnack'"},
      {"--arch sm_90 --dtypes fp32,fp8 --db " + (dir / "a.db").string(), "unknown dtype 'fp8' in --dtypes 'fp32,fp8'"},
      {"--arch sm_90 --sizes 0 --db " + (dir / "a.db").string(), "invalid size '0' in --sizes '0': sizes must be at least 1"},
      {"--arch sm_90 --sizes 2^70 --db " + (dir / "a.db").string(), "invalid size '2^70'"},
      {"--arch sm_90 --sizes 3..16 --db " + (dir / "a.db").string(), "a range needs a power of two A <= B"},
      {"--arch sm_90 --sizes 2^10..2^5 --db " + (dir / "a.db").string(), "a range needs a power of two A <= B"},
      {"--arch sm_90 --sizes , --db " + (dir / "a.db").string(), "empty item"},
      {"--arch sm_90 --sizes 12x --db " + (dir / "a.db").string(), "invalid size '12x' in --sizes '12x': not a number"},
      {"--arch sm_90 --time-budget -5 --db " + (dir / "a.db").string(), "--time-budget must be >= 0 seconds, got -5"},
      {"emit --arch sm_90 --dtype fp32 --label one_pass.t256.v8.u4.b8cu", "vector of 8 x fp32 = 32 bytes exceeds 16 bytes"},
      {"emit --arch sm_90 --dtype bf16 --label one_pass.t256", "invalid variant label 'one_pass.t256'"},
      {"emit --arch sm_90 --dtype bf16 --label one_pass.t256.v8.u4.b8cu.amax",
       "the epilogue field 'amax' is the default and is written by leaving it out"},
      {"emit --arch sm_90 --dtype half8", "unknown dtype 'half8'"},
      {"emit --arch sm_90", "emit needs --label LABEL, --list or --out-dir DIR"},
      {"--arch sm_90 --sizes '' --db " + (dir / "a.db").string(), "--sizes is empty"},
      {"--arch sm_90 --device -1 --db " + (dir / "a.db").string(), "--device must be a device ordinal >= 0, got -1"},
      {"--arch sm_90 --device 0,0 --db " + (dir / "a.db").string(), "--device: device 0 is listed twice"},
      {"--arch sm_90 --device 0,x --db " + (dir / "a.db").string(),
       "--device must be a device ordinal >= 0, a list N,M,... or all, got 'x'"},
      {"--arch sm_90 --device 1,-2 --db " + (dir / "a.db").string(), "--device must be a device ordinal >= 0, got -2"},
      {"--arch sm_90 --device 0, --db " + (dir / "a.db").string(),
       "--device must be a device ordinal >= 0, a list N,M,... or all, got ''"},
      {"--arch sm_90 --device 0,1 --json - --db " + (dir / "a.db").string(), "--json is per GPU in a node tune"},
      {"--arch sm_90 --time-budget nan --db " + (dir / "a.db").string(), "--time-budget must be >= 0 seconds, got nan"},
      {"--dtypes fp64 --db " + (dir / "a.db").string(), "unknown dtype 'fp64'"},  // before any device query
      {"--strategies self_reset,spin --db " + (dir / "a.db").string(),
       "unknown strategy 'spin' in --strategies 'self_reset,spin' (expected atomic, two_stage, one_pass, "
       "self_reset, first_reset, first_reset_warp)"},
      {"--strategies , --db " + (dir / "a.db").string(), "unknown strategy '' in --strategies ','"},
      {"emit --arch sm_90 --dtype bf16 --label self_reset.t512.v8.u2.b4cu.c8", "bad epilogue field 'c8'"},
      {"-j -1 --db " + (dir / "a.db").string(), "--jobs"},
      {"emit --list --arch sm_90 -o " + (dir / "l.txt").string(), "-o/--out goes with --label"},
      {"emit --list --label x --arch sm_90", "emit takes one of --label, --list and --out-dir"},
      {"emit --arch sm_90 --dtype fp32 --label multi.t512.v8.u4.c32k.b4cu.warp", "vector of 8 x fp32 = 32 bytes exceeds 16 bytes"},
      {"emit --arch sm_90 --dtype bf16 --label multi.t512.v8.u4.c32.b4cu.warp", "bad chunk_kib field 'c32'"},
      {"emit --list --family double --arch sm_90", "unknown --family 'double' (expected single or multi)"},
      {"export --db " + (dir / "none.db").string(), "--format is required"},
      {"bench --regime lukewarm", "--regime must be cold, warm or both, got 'lukewarm'"},
      {"bench --rounds 1", "--rounds must be at least 3, got 1"},
      {"bench --quantize --formats e4m3,e4m3fnuz",
       "--formats: 'e4m3fnuz' is not an FP8 format the quantize bench has (e4m3, e5m2)"},
      {"bench --quantize --rounds 2", "--rounds must be at least 3, got 2"},
      {"bench-multi --groups 500x4096", "invalid group '500x4096' in --groups '500x4096': not TENSORSxN:DTYPE"},
      {"bench-multi --groups 500x4096:fp32,8x1M:fp64", "invalid group '8x1M:fp64' in --groups '500x4096:fp32,8x1M:fp64': unknown dtype 'fp64'"},
      {"bench-multi --groups 5x12q:bf16", "invalid group '5x12q:bf16'"},
      {"bench-multi --rounds 2", "--rounds must be at least 3, got 2"},
      {"bench-multi --groups ''", "--groups is empty"},
      {"bench-multi --groups 20000000x4096:bf16",
       "invalid group '20000000x4096:bf16' in --groups '20000000x4096:bf16': 20000000 tensors exceed the limit of "
       "16777215 (2^24 - 1) per call"},
      {"--arch sm_90 --groups 4x2^41:fp32 --db " + (dir / "a.db").string(),
       "invalid group '4x2^41:fp32' in --groups '4x2^41:fp32': 2199023255552 elements per tensor exceed the limit of "
       "2^40 - 1"},
      {"--arch sm_90 --groups 16000000x2^39:fp32 --db " + (dir / "a.db").string(), "is more than 2^62 bytes"},
      {"--arch sm_90 --sizes none --groups none --db " + (dir / "a.db").string(),
       "nothing to tune: --sizes none and --groups none"},
      {"export --format json --groups --db " + (dir / "a.db").string(), "--groups selects the CSV table"},
      {"check --dtypes fp64 --db " + (dir / "a.db").string(), "unknown dtype 'fp64' in --dtypes 'fp64'"},
      {"check --sizes 0 --db " + (dir / "a.db").string(), "invalid size '0' in --sizes '0': sizes must be at least 1"},
      {"check --sizes 2^10..2^5 --db " + (dir / "a.db").string(), "a range needs a power of two A <= B"},
      {"check --device -1 --db " + (dir / "a.db").string(), "--device must be a device ordinal >= 0, got -1"},
      {"check --retune=maybe --db " + (dir / "a.db").string(), "--retune"},
      {"check --rounds 3 --db " + (dir / "a.db").string(), "--rounds"},
      // Issue 24 item 6: arch names are checked against the archs this tool knows, with the list.
      {"--arch sm_91 --db " + (dir / "a.db").string(), "unknown arch 'sm_91': amax-tune knows sm_50, sm_52, "},
      {"--arch '' --db " + (dir / "a.db").string(), "invalid arch '': the name is empty"},
      {"--arch sm_1 --db " + (dir / "a.db").string(),
       "invalid arch 'sm_1': compute capability '1' needs a major and a minor digit (sm_90 is 9.0)"},
      {"emit --arch sm_999 --dtype bf16 --list", "unknown arch 'sm_999': amax-tune knows "},
      {"emit --arch gfx9422 --dtype bf16 --list", "unknown arch 'gfx9422': amax-tune knows "},
      {"emit --arch gfx1 --dtype bf16 --list", "gfx950, gfx1030, gfx1100, gfx1101, gfx1102, gfx1200, gfx1201 (an AMD "
                                              "target ID may add :sramecc+/- and :xnack+/-)"},
      {"emit --arch '' --list", "invalid arch '': the name is empty"},
      {"show --arch sm_91 --db " + (dir / "none.db").string(), "unknown arch 'sm_91'"},
      {"show --arch '' --db " + (dir / "none.db").string(), "invalid arch '': the name is empty"},
      // Item 7: a --groups error names --groups, and what in the group is wrong.
      {"bench-multi --groups '5x12q:bf16'",
       "invalid group '5x12q:bf16' in --groups '5x12q:bf16': element count '12q': not a number"},
      {"--arch sm_90 --groups '0x4k:fp32' --db " + (dir / "a.db").string(),
       "invalid group '0x4k:fp32' in --groups '0x4k:fp32': counts must be at least 1"},
      // Item 9: emit says which dtype it assumed.
      {"emit --arch sm_90 --label one_pass.t256.v8.u4.b8cu",
       "variant not valid for sm_90 fp32 (--dtype not given, fp32 assumed; choose with --dtype fp16 or bf16): "
       "one_pass.t256.v8.u4.b8cu: vector of 8 x fp32 = 32 bytes exceeds 16 bytes"},
      {"bundle --arch sm_90", "bundle needs -o DIR"},
      {"bundle --arch sm_9x -o " + (dir / "b").string(), "invalid arch 'sm_9x'"},
      {"bundle --arch sm_90,gfx9422 -o " + (dir / "b").string(), "unknown arch 'gfx9422': amax-tune knows sm_50, "},
      {"bundle --arch sm_91 -o " + (dir / "b").string(), "unknown arch 'sm_91'"},
      {"bundle --arch , -o " + (dir / "b").string(), "--arch lists no arch"},
  };
  for (const auto& c : cases) {
    const CmdResult r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "amax-tune: error: ")) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.expect)) << c.args << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(dir / "a.db")) << "a rejected command created the database";
}

TEST_F(Cli, UnknownOptionsAndSubcommandsAreRejected) {
  EXPECT_NE(run("--no-such-option").code, 0);
  EXPECT_NE(run("frobnicate").code, 0);
  const CmdResult v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(has(v.out, "0.1.0")) << v.out;
}

// A device ordinal that no machine has: the message, whether GPUs are present or not, and nothing
// tuned anywhere (no database written).
TEST_F(Cli, TuningWithoutTheDeviceSaysSo) {
  const CmdResult r = run("--arch sm_90 --device 99 --db " + (dir / "t.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: no nvidia device 99 to tune for --arch sm_90: ")) << r.out;
  EXPECT_FALSE(fs::exists(dir / "t.db"));
}

TEST_F(Cli, ShowExportImportMergeOnRealFiles) {
  const auto db = shipped_db();
  CmdResult r = run("show --db " + db.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "78 winners in ")) << r.out;
  EXPECT_TRUE(has(r.out, "'NVIDIA H200' (sm_90, 132 CUs)")) << r.out;
  r = run("show --db " + db.string() + " --dtype bf16");
  EXPECT_TRUE(has(r.out, "26 winners in ")) << r.out;
  // Where no entry serves, the built-in default and its source.
  r = run("show --db " + db.string() + " --arch gfx942");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "0 winners in ")) << r.out;
  EXPECT_TRUE(has(r.out, "built-in default for gfx942 where no entry serves: two_stage.t512.v4.u2.b65535 (fp32), "
                         "two_stage.t512.v8.u2.b65535 (fp16, bf16): ROCm TransformerEngine's two-stage amax")) << r.out;
  r = run("show --db " + db.string() + " --arch sm_90 --dtype bf16");
  EXPECT_TRUE(has(r.out, "26 winners in ")) << r.out;
  EXPECT_TRUE(has(r.out, "built-in default for sm_90 where no entry serves: one_pass.t512.v8.u2.buncapped up to "
                         "2^21 elements, atomic.t512.v8.u4.buncapped above (bf16): the H200 winners")) << r.out;
  // --integrity: SQLite's full check first ("ok"), then the row counts of the file.
  const std::string text = slurp(AMAX_SYSTEM_DB_TEXT);
  auto rows = [&](const char* kind) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = text.find(std::string("\"row\":\"") + kind + "\"", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  const std::size_t groups = rows("group_winner");
  r = run("show --integrity --db " + db.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("ok\nschema version ", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, ", 78 winners, " + std::to_string(rows("trial")) + " trials" +
                             (groups ? ", " + std::to_string(groups) + " group winners, " +
                                           std::to_string(rows("group_trial")) + " group trials"
                                     : std::string()) +
                             "\n78 winners in ")) << r.out;

  r = run("export --format csv --db " + db.string() + " -o " + (dir / "w.csv").string());
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string csv = slurp(dir / "w.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 79) << "header + 78 rows";
  r = run("export --format text --db " + db.string() + " -o " + (dir / "round.jsonl").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(slurp(dir / "round.jsonl"), slurp(AMAX_SYSTEM_DB_TEXT)) << "text dump does not round-trip";
  r = run("export --format yaml --db " + db.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "unknown --format 'yaml'")) << r.out;

  // Exporting or importing onto the input is refused and the input survives.
  const std::string db_bytes = slurp(db);
  r = run("export --format text --db " + db.string() + " -o " + db.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "is the database being exported")) << r.out;
  EXPECT_EQ(slurp(db), db_bytes);
  fs::copy_file(AMAX_SYSTEM_DB_TEXT, dir / "dump.jsonl");
  r = run("import " + (dir / "dump.jsonl").string() + " -o " + (dir / "dump.jsonl").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(slurp(dir / "dump.jsonl"), slurp(AMAX_SYSTEM_DB_TEXT));

  // Merging a database with itself keeps every winner; onto an input is refused.
  fs::copy_file(db, dir / "b.db");
  r = run("merge " + db.string() + " " + (dir / "b.db").string() + " -o " + (dir / "m.db").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "78 winners")) << r.out;
  const std::string before = slurp(db);
  r = run("merge " + db.string() + " " + (dir / "b.db").string() + " -o " + db.string());
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_EQ(slurp(db), before) << "a refused merge modified its input";
}

TEST_F(Cli, DamagedOrMissingDatabasesAreReportedAndLeftUntouched) {
  const auto db = shipped_db();
  const std::string good = slurp(db);
  const auto bad = dir / "damaged.db";
  std::ofstream(bad, std::ios::binary) << good.substr(0, good.size() / 2 + 100);
  const std::string damaged = slurp(bad);
  for (const std::string cmd : {"show --db ", "export --format json --db "}) {
    const CmdResult r = run(cmd + bad.string());
    EXPECT_EQ(r.code, 1) << cmd << r.out;
    EXPECT_TRUE(has(r.out, bad.string())) << r.out;
    EXPECT_EQ(slurp(bad), damaged) << cmd << "modified the damaged file";
  }
  const CmdResult m = run("show --db " + (dir / "missing.db").string());
  EXPECT_EQ(m.code, 1);
  EXPECT_TRUE(has(m.out, "no such file")) << m.out;
  EXPECT_FALSE(fs::exists(dir / "missing.db"));
  std::ofstream(dir / "junk.jsonl") << "{\"format\":\"amax-tune-db\",\"schema_version\":2}\n{not json\n";
  const CmdResult i = run("import " + (dir / "junk.jsonl").string() + " -o " + (dir / "j.db").string());
  EXPECT_EQ(i.code, 1) << i.out;
  EXPECT_TRUE(has(i.out, "line 2")) << i.out;
  EXPECT_FALSE(fs::exists(dir / "j.db"));
  // A well-formed dump whose label is no valid variant is refused, naming the line.
  std::string dump = slurp(AMAX_SYSTEM_DB_TEXT);
  const auto at = dump.find("\"label\":\"") + 9;
  dump.replace(at, dump.find('"', at) - at, "two_stage.t2048.v8.u4.b8cu");
  std::ofstream(dir / "badlabel.jsonl") << dump;
  const CmdResult b = run("import " + (dir / "badlabel.jsonl").string() + " -o " + (dir / "b.db").string());
  EXPECT_EQ(b.code, 1) << b.out;  // a bad input file is a failed run, not a usage error
  EXPECT_TRUE(has(b.out, "badlabel.jsonl line 2: variant not valid")) << b.out;
  EXPECT_TRUE(has(b.out, "threads 2048 exceeds the block limit 1024")) << b.out;
  EXPECT_FALSE(fs::exists(dir / "b.db"));
}

// Multi-tensor rows (schema 4): import checks their labels against the multi-tensor family, show
// lists their winners in a second table, export and merge carry them.
TEST_F(Cli, MultiTensorRowsAreCheckedShownExportedAndMerged) {
  const std::string prov =
      R"("prov_device_name":"NVIDIA H200","prov_arch":"sm_90","prov_cu_count":132,"prov_driver_version":"cuda driver 13.0",)"
      R"("prov_compiler":"nvrtc 13.0","prov_template_hash":"0123456789abcdef","prov_tool_version":"0.1.0",)"
      R"("prov_timing_protocol":"p","prov_timestamp":"2026-12-02T00:00:00Z"})";
  // 100000 tensors of 512 bf16 elements: a group bucket no shipped row is in.
  const std::string key =
      R"("arch":"sm_90","dtype":"bf16","tensors":100000,"total_bytes":102400000,"largest_bytes":1024,)";
  const std::string winner = R"({"row":"group_winner",)" + key +
                             R"("label":"multi.t512.v8.u4.c32k.b4cu.warp","median_us":60.5,"gbps":2218.25,)" + prov + "\n";
  const std::string trial = R"({"row":"group_trial",)" + key +
                            R"("label":"multi.t512.v8.u4.c32k.b4cu.warp","status":"ok","reason":"","median_us":60.5,)"
                            R"("spread_us":0.5,"samples":15,"gbps":2218.25,"registers":32,"spill_bytes":0,"tie_rank":0,)"
                            R"("confirm_median_us":61.0,"host_us":3.25,"launches":1,)" + prov + "\n";
  std::string single = without_end_line(slurp(AMAX_SYSTEM_DB_TEXT));
  single.replace(0, single.find('\n'), R"({"format":"amax-tune-db","format_version":2,"schema_version":5})");
  const std::string text = with_end_line(single + winner + trial);
  // The shipped file's own rows: the added winner is the line after them; its group winners add up.
  const std::string winner_line = "multi.jsonl line " + std::to_string(std::count(single.begin(), single.end(), '\n') + 1);
  auto rows = [&](const char* kind) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = single.find(std::string("\"row\":\"") + kind + "\"", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  const std::size_t shipped_groups = rows("group_winner");
  const std::string counts = "78 winners, " + std::to_string(rows("trial")) + " trials, " +
                             std::to_string(shipped_groups + 1) + " group winners, " +
                             std::to_string(rows("group_trial") + 1) + " group trials\n";
  std::ofstream(dir / "multi.jsonl") << text;
  const auto db = dir / "m.db";
  CmdResult r = run("import " + (dir / "multi.jsonl").string() + " -o " + db.string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("show --db " + db.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "78 winners in ")) << r.out;
  EXPECT_TRUE(has(r.out, std::to_string(shipped_groups + 1) + " multi-tensor group winners\n")) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90      bf16    100000      102400000          1024 multi.t512.v8.u4.c32k.b4cu.warp         "
                         "     60.50     2218  'NVIDIA H200' (sm_90, 132 CUs), 2026-12-02T00:00:00Z")) << r.out;
  r = run("show --db " + db.string() + " --dtype fp32");
  EXPECT_FALSE(has(r.out, "multi.t512.v8.u4.c32k.b4cu.warp")) << r.out;  // the bf16 row is not shown
  r = run("show --integrity --db " + db.string());
  EXPECT_TRUE(has(r.out, ", " + counts)) << r.out;
  // CSV is one table per file: the group winners with --groups; without it a note says they are left out.
  r = run("export --format csv --groups --db " + db.string() + " -o " + (dir / "g.csv").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(slurp(dir / "g.csv"), ",multi.t512.v8.u4.c32k.b4cu.warp,")) << slurp(dir / "g.csv");
  r = run("export --format csv --db " + db.string() + " -o " + (dir / "w.csv").string());
  EXPECT_TRUE(has(r.out, "note: " + std::to_string(shipped_groups + 1) +
                             " multi-tensor group winners are not in this CSV; export them with --groups")) << r.out;
  EXPECT_FALSE(has(slurp(dir / "w.csv"), "multi.t512")) << slurp(dir / "w.csv");
  r = run("export --format text --db " + db.string() + " -o " + (dir / "round.jsonl").string());
  EXPECT_EQ(r.code, 0) << r.out;
  // The dump sorts rows by key: the added rows land among the shipped ones; every line comes back.
  auto sorted_lines = [](const std::string& t) {
    std::vector<std::string> v;
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) v.push_back(line);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted_lines(slurp(dir / "round.jsonl")), sorted_lines(text));
  fs::copy_file(db, dir / "m2.db");
  r = run("merge " + db.string() + " " + (dir / "m2.db").string() + " -o " + (dir / "mm.db").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, ": " + counts)) << r.out;

  // Labels of the wrong family or invalid variants are refused naming the line (158: the group winner).
  struct Bad {
    std::string text, needle;
  };
  const std::string first_label = single.substr(single.find("\"label\":\"") + 9, single.find("\",\"median_us\"") - single.find("\"label\":\"") - 9);
  for (const Bad& b : std::vector<Bad>{
           {single + winner.substr(0, winner.find("multi.")) + "two_stage.t512.v8.u2.b16cu" +
                winner.substr(winner.find("\",\"median_us")) + trial,
            winner_line + ": a multi-tensor row needs a multi-tensor (multi.*) variant, not "
            "'two_stage.t512.v8.u2.b16cu'"},
           {single + winner.substr(0, winner.find("c32k")) + "c3k" + winner.substr(winner.find("c32k") + 4) + trial,
            winner_line + ": variant not valid: multi.t512.v8.u4.c3k.b4cu.warp: chunk of 3 KiB is not a power of two"},
           {single + winner.substr(0, winner.find("b4cu.warp")) + "b4cu.warp.scale" +
                winner.substr(winner.find("b4cu.warp") + 9) + trial,
            winner_line + ": 'multi.t512.v8.u4.c32k.b4cu.warp.scale' is a fused (.scale) variant; databases hold "
                          "amax-only variants"},
           {single + winner.substr(0, winner.find("1024,")) + "1023," + winner.substr(winner.find("1024,") + 5) + trial,
            winner_line + ": largest_bytes = 1023 is not a whole number of 2-byte bf16 elements"},
           {[&] {
              std::string t = without_end_line(text);
              t.replace(t.find(first_label), first_label.size(), "multi.t512.v8.u4.c32k.b4cu.warp");
              return t;
            }(),
            "multi.jsonl line 2: a single-tensor row needs a single-tensor variant, not 'multi.t512.v8.u4.c32k.b4cu.warp'"},
       }) {
    std::ofstream(dir / "multi.jsonl", std::ios::trunc) << with_end_line(b.text);
    r = run("import " + (dir / "multi.jsonl").string() + " -o " + (dir / "bad.db").string());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(has(r.out, b.needle)) << r.out;
    EXPECT_FALSE(fs::exists(dir / "bad.db"));
  }
}

TEST_F(Cli, EmitPrintsSelfContainedSourceAndListsTheSpace) {
  CmdResult r = run("emit --arch sm_90 --dtype bf16 --label one_pass.t256.v8.u4.b8cu");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("// amax-tune generated kernel: one_pass.t256.v8.u4 bf16 (nvidia)", 0), 0u) << r.out.substr(0, 200);
  EXPECT_FALSE(has(r.out, "#include"));
  EXPECT_TRUE(has(r.out, "amax_one_pass_t256_v8_u4_bf16"));
  EXPECT_TRUE(has(r.out, "#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n"));
  r = run("emit --arch sm_90 --dtype bf16 --label one_pass.t256.v8.u4.b8cu.scale");  // the fused variant
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("// amax-tune generated kernel: one_pass.t256.v8.u4.scale bf16 (nvidia)", 0), 0u) << r.out.substr(0, 200);
  EXPECT_TRUE(has(r.out, "#define AMAX_KERNEL_NAME amax_one_pass_t256_v8_u4_scale_bf16\n"));
  EXPECT_TRUE(has(r.out, "#define AMAX_EPILOGUE AMAX_EPILOGUE_SCALE\n"));
  r = run("emit --list --arch gfx942:sramecc+:xnack- --dtype fp16");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "348 variants (75 compiled kernels) in the pruned space for gfx942:sramecc+:xnack- fp16")) << r.out;
  EXPECT_FALSE(has(r.out, "left out:")) << r.out;
  r = run("emit --list --full --arch sm_90 --dtype bf16");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "3920 variants (560 compiled kernels) in the full space for sm_90 bf16")) << r.out;
  r = run("emit --out-dir " + (dir / "src").string() + " --arch gfx90a --dtype fp32");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "src"), fs::directory_iterator{}), 75);
}

TEST_F(Cli, EmitTheMultiTensorFamily) {
  CmdResult r = run("emit --arch sm_90 --dtype bf16 --label multi.t512.v8.u4.c32k.b4cu.warp");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("// amax-tune generated multi-tensor kernel: multi.t512.v8.u4 bf16 (sm_90, 1600 tensors "
                        "per launch; the chunk size, grid cap and combine are not compiled in)", 0), 0u) << r.out.substr(0, 200);
  EXPECT_FALSE(has(r.out, "#include"));
  EXPECT_TRUE(has(r.out, "#define AMAX_MULTI_KERNEL_NAME amax_multi_t512_v8_u4_bf16_k1600"));
  r = run("emit --arch sm_90 --dtype bf16 --label multi.t512.v8.u4.c32k.b4cu.warp.scale");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "#define AMAX_EPILOGUE AMAX_EPILOGUE_SCALE\n"));
  EXPECT_TRUE(has(r.out, "#define AMAX_MULTI_KERNEL_NAME amax_multi_t512_v8_u4_scale_bf16_k1600"));
  r = run("emit --list --family multi --arch sm_90 --dtype fp32");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "multi.t1024.v4.u8.c256k.buncapped.warp\n")) << r.out;
  EXPECT_TRUE(has(r.out, "360 multi-tensor variants in the pruned space for sm_90 fp32 (1600 tensors per launch at most)")) << r.out;
  r = run("emit --family multi --out-dir " + (dir / "msrc").string() + " --arch gfx90a --dtype fp16");
  EXPECT_EQ(r.code, 0) << r.out;
  // AMD: threads 256 and 512 x unroll 2/4/8; the 5 chunk sizes, 4 grid caps and 2 combines share kernels.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "msrc"), fs::directory_iterator{}), 2 * 3);
  EXPECT_TRUE(has(r.out, "wrote 6 multi-tensor kernel sources (240 variants) to ")) << r.out;
  EXPECT_TRUE(fs::exists(dir / "msrc" / "amax_multi_t256_v8_u2_fp16_k192.hip"));
}

TEST_F(Cli, CheckReportsDamagedAndMissingDatabasesAndNeverWritesThem) {
  const auto db = shipped_db();
  const std::string good = slurp(db);
  const auto bad = dir / "damaged.db";
  std::ofstream(bad, std::ios::binary) << good.substr(0, good.size() / 2 + 100);
  const std::string damaged = slurp(bad);
  const auto damaged_time = fs::last_write_time(bad);
  for (const std::string extra : {"", " --retune"}) {
    const CmdResult r = run("check --db " + bad.string() + extra);
    EXPECT_EQ(r.code, 1) << extra << r.out;
    EXPECT_TRUE(has(r.out, "amax-tune: error: cannot check " + bad.string())) << r.out;
    EXPECT_TRUE(has(r.out, "(the file was left untouched)")) << r.out;
    EXPECT_EQ(slurp(bad), damaged) << "check" << extra << " modified the damaged file";
    EXPECT_EQ(fs::last_write_time(bad), damaged_time);
  }
  const CmdResult ag = run("check --db " + db.string() + " --against " + bad.string());
  EXPECT_EQ(ag.code, 1) << ag.out;
  EXPECT_TRUE(has(ag.out, "amax-tune: error: cannot check " + bad.string())) << ag.out;
  EXPECT_EQ(slurp(bad), damaged);
  const CmdResult m = run("check --db " + (dir / "missing.db").string());
  EXPECT_EQ(m.code, 1) << m.out;
  EXPECT_TRUE(has(m.out, "no such file")) << m.out;
  EXPECT_FALSE(fs::exists(dir / "missing.db"));
  // A sound database on a machine without a GPU: the device is missing, the file is unchanged.
  const auto good_time = fs::last_write_time(db);
  const CmdResult g = run("check --db " + db.string());
  if (g.code == 0 || has(g.out, "summary:")) GTEST_SKIP() << "a GPU is present (the check ran): " << g.out;
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_TRUE(has(g.out, "amax-tune: error: no GPU device 0 to check on")) << g.out;
  EXPECT_TRUE(has(g.out, db.string() + " was left untouched")) << g.out;
  EXPECT_EQ(slurp(db), good);
  EXPECT_EQ(fs::last_write_time(db), good_time);
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
}

// `amax-tune bundle` without a GPU: the built-in defaults for sm_90 (no --db: 3 dtypes x 2 shapes x
// (4 strategies x 2 epilogues + first_reset and first_reset_warp amax-only) = 60 kernels, and the
// fused variant of each dtype's large-n default, atomic uncapped, run as self_reset with unroll 8:
// 63; the multi-tensor default of 3 dtypes x 2 epilogues x 3
// descriptor capacities = 18 kernels), gfx942 listed as skipped with the reason where no compiler
// here can target it; --strict makes a skip a failure.
TEST_F(Cli, BundleCompilesTheDefaultsAndReportsSkippedArches) {
  const auto out = dir / "k.bundle";
  CmdResult r = run("bundle --arch sm_90 -o " + out.string());
  if (has(r.out, "sm_90: skipped")) GTEST_SKIP() << "no NVRTC here: " << r.out;
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90: 63 kernels (0 for database winners, 63 for built-in defaults")) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90: 18 multi-tensor kernels (0 for database group winners, 18 for built-in multi-tensor "
                         "defaults; amax-only and scale epilogue, 192, 512, 1600 descriptors per launch), "))
      << r.out;
  EXPECT_TRUE(has(r.out, "wrote 81 code objects")) << r.out;
  EXPECT_TRUE(fs::exists(out / "index.json"));
  const std::string index = slurp(out / "index.json");
  EXPECT_TRUE(has(index, "\"kernel\": \"amax_multi_t512_v8_u4_bf16_k1600\"")) << index;
  EXPECT_TRUE(has(index, "\"label\": \"multi.t512.v8.u4.scale\"")) << index;
  r = run("bundle --arch sm_90,gfx942 -o " + out.string());
  if (!has(r.out, "gfx942: skipped")) GTEST_SKIP() << "a compiler here targets gfx942: " << r.out;
  EXPECT_EQ(r.code, 0) << r.out;
  r = run("bundle --strict --arch sm_90,gfx942 -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--strict: gfx942 cannot be compiled here: ")) << r.out;
}

// Issue 24 item 4: an unknown processor is refused before any compile (exit 2, the known ones
// listed, no hipRTC crash printed), and a refused or failed run leaves no output behind: no
// directory, no temporary one, and an existing bundle at -o untouched.
TEST_F(Cli, BundleRefusesUnknownProcessorsBeforeAnyCompileAndLeavesNothingBehind) {
  const auto out = dir / "k.bundle";
  CmdResult r = run("bundle --arch sm_90,gfx9422 -o " + out.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: unknown arch 'gfx9422': amax-tune knows " + std::string("sm_50, sm_52, ")))
      << r.out;
  EXPECT_TRUE(has(r.out, "gfx90a, gfx940, gfx941, gfx942, gfx950, ")) << r.out;
  EXPECT_TRUE(has(r.out, "in --arch 'sm_90,gfx9422'")) << r.out;
  EXPECT_FALSE(has(r.out, "munmap_chunk")) << r.out;
  EXPECT_FALSE(has(r.out, "sm_90: ")) << "compiled before refusing: " << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir)) << "left behind in " << dir;
  // A run that fails (--strict with an arch no compiler here targets) writes nothing, and an
  // existing bundle at -o stays byte for byte as it was.
  fs::create_directories(out);
  std::ofstream(out / "index.json") << "{\"format\": \"amax-tune-bundle\", \"version\": 1, \"entries\": []}\n";
  const std::string before = slurp(out / "index.json");
  r = run("bundle --strict --arch sm_90,gfx950 -o " + out.string());
  if (r.code == 0) GTEST_SKIP() << "a compiler here targets gfx950: " << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: --strict: gfx950 cannot be compiled here: ")) << r.out;
  EXPECT_TRUE(has(r.out, "; nothing was written to " + out.string())) << r.out;
  EXPECT_FALSE(has(r.out, "sm_90: ")) << "compiled before failing: " << r.out;
  EXPECT_EQ(slurp(out / "index.json"), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator{}), 1);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1) << "a temporary directory is left";
  // -o naming a directory that is not a bundle is refused before any compile, its files kept.
  fs::create_directories(dir / "notes");
  std::ofstream(dir / "notes" / "todo.txt") << "mine\n";
  r = run("bundle --arch sm_90 -o " + (dir / "notes").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "it exists and is not a kernel bundle (it holds todo.txt)")) << r.out;
  EXPECT_EQ(slurp(dir / "notes" / "todo.txt"), "mine\n");
}

// A compiler that crashes while compiling (hipRTC 5.2's comgr aborts on processors it does not
// know; here a library in NVRTC's shape that aborts in nvrtcCompileProgram) is a failed run: exit 1
// naming the compiler and the signal, and no output (no directory, no temporary one).
TEST_F(Cli, BundleWithACrashingCompilerFailsAndWritesNothing) {
  const auto out = dir / "k.bundle";
  const CmdResult r = run("bundle --arch sm_90 -o " + out.string(),
                          "env AMAX_TUNE_NVRTC_LIBRARY=" + std::string(AMAX_TEST_CRASHING_NVRTC) + " ");
  if (has(r.out, "this build has no nvidia backend")) GTEST_SKIP() << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: nvrtc 13.0 crashed compiling for sm_90 (Aborted); nothing was written to " +
                         out.string()))
      << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir)) << "left behind in " << dir;
}

// A bundle run killed by a signal leaves its staging directory .<name>.tmp-<pid> beside -o (its
// finish() never ran); the next run into the same -o removes it, also when that run fails, and
// leaves a live process's one (a run writing now: here this test's id) and other names alone.
TEST_F(Cli, BundleRemovesWhatAKilledRunLeft) {
  const auto out = dir / "a";
  const pid_t killed = ::fork();
  if (killed == 0) {  // in a process group of its own, as a shell job: the signal reaches its compile child too
    ::setpgid(0, 0);
    const std::string o = out.string();
    ::execl(AMAX_TUNE_EXE, AMAX_TUNE_EXE, "bundle", "--arch", "sm_90", "-o", o.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(killed, 0);
  const auto left = dir / (".a.tmp-" + std::to_string(killed));
  bool exited = false;
  for (int i = 0; i < 3000 && !fs::exists(left); ++i) {
    if (::waitpid(killed, nullptr, WNOHANG) == killed) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    ::kill(-killed, SIGKILL);
    ASSERT_EQ(::waitpid(killed, nullptr, 0), killed);
  }
  if (!fs::exists(left)) GTEST_SKIP() << "the run ended before it could be killed (no compiler here?)";
  const auto live = dir / (".a.tmp-" + std::to_string(::getpid())), other = dir / (".b.tmp-" + std::to_string(killed));
  for (const auto& d : {live, other}) {
    fs::create_directories(d);
    std::ofstream(d / "index.json") << "{}\n";
  }
  const CmdResult r = run("bundle --from " + (dir / "absent").string() + " --arch sm_80 -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "removed " + left.string() + ", left by bundle process " + std::to_string(killed) +
                             ", which is gone"))
      << r.out;
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::exists(live / "index.json"));
  EXPECT_TRUE(fs::exists(other / "index.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 2) << "left behind in " << dir;
}

// --update keeps the other arches' entries of the bundle at -o; --from copies an arch's entries
// from another bundle (verified) instead of compiling them: how the release adds the entries
// of the ROCm 5.7 / 6.4 compilers to the build's bundle.
TEST_F(Cli, BundleUpdateKeepsOtherArchesAndFromCopiesEntries) {
  const auto a = dir / "a", b = dir / "b";
  CmdResult r = run("bundle --arch sm_90 -o " + a.string());
  if (has(r.out, "sm_90: skipped")) GTEST_SKIP() << "no NVRTC here: " << r.out;
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("bundle --arch sm_80 -o " + b.string());
  ASSERT_EQ(r.code, 0) << r.out;
  // b gets a's sm_90 entries, keeping its own sm_80 ones.
  r = run("bundle --update --from " + a.string() + " --arch sm_90 -o " + b.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90: 81 kernels copied from " + a.string())) << r.out;
  EXPECT_TRUE(has(r.out, "--update: kept 81 entries of the existing bundle for other arches")) << r.out;
  EXPECT_TRUE(has(r.out, "wrote 162 code objects")) << r.out;
  const std::string index = slurp(b / "index.json");
  EXPECT_TRUE(has(index, "\"arch\": \"sm_80\"")) << index;
  EXPECT_TRUE(has(index, "\"arch\": \"sm_90\"")) << index;
  // Without --update the bundle holds only what this run made; an arch --from lacks is an error.
  r = run("bundle --from " + a.string() + " --arch sm_80 -o " + (dir / "c").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--from " + a.string() + " holds no entries for sm_80")) << r.out;
  EXPECT_FALSE(fs::exists(dir / "c"));
  r = run("bundle --from " + (dir / "absent").string() + " --arch sm_80 -o " + (dir / "c").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "no kernel bundle there (no index.json)")) << r.out;
}

// The shipped winners go into the bundle when they are fresh, and are left out (reported) when
// their template hash is not this build's: the shipped dump as it is, then with every row's
// template hash set to the one this build reports.
TEST_F(Cli, BundleShipsFreshWinnersAndReportsStaleOnes) {
  const std::string text = slurp(AMAX_SYSTEM_DB_TEXT);
  const std::string key = "\"prov_template_hash\":\"";
  const auto at = text.find(key);
  ASSERT_NE(at, std::string::npos);
  const std::string recorded = text.substr(at + key.size(), 16);
  CmdResult r = run("bundle --arch sm_90 --db " + shipped_db().string() + " -o " + (dir / "a").string());
  if (has(r.out, "sm_90: skipped")) GTEST_SKIP() << "no NVRTC here: " << r.out;
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string tag = "template hash ";
  std::string current;
  if (const auto p = r.out.find(tag); p != std::string::npos) current = r.out.substr(p + tag.size(), 16);
  if (current.empty() || current == recorded) GTEST_SKIP() << "the shipped winners are fresh for this build: " << r.out;
  EXPECT_TRUE(has(r.out, "stale database winners not bundled (template_hash differs")) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90: 63 kernels (0 for database winners, 63 for built-in defaults")) << r.out;
  // The same rows made fresh: their 48 distinct amax-only kernels and the 33 distinct kernels their
  // fused calls run (fused_variant: the scale epilogue, an atomic winner as self_reset of its threads
  // and nvec with a grid <= 4 per CU where that is pruned) are bundled, and the defaults they
  // lack. (This part runs only when the templates differ from the shipped rows', so it is checked when a
  // template changes: the counts follow data/system-db.jsonl.)
  std::string fresh = text;
  for (auto p = fresh.find(key + recorded); p != std::string::npos; p = fresh.find(key + recorded, p))
    fresh.replace(p + key.size(), 16, current);
  // The group rows likewise, with the multi-tensor family's hash (reported when they are stale).
  const auto group_at = text.find(key, text.find("\"row\":\"group_winner\""));
  ASSERT_NE(group_at, std::string::npos);
  const std::string group_recorded = text.substr(group_at + key.size(), 16);
  std::string group_current = group_recorded;
  if (const auto g = r.out.find("stale database group winners not bundled"); g != std::string::npos)
    if (const auto p = r.out.find(tag, g); p != std::string::npos) group_current = r.out.substr(p + tag.size(), 16);
  for (auto p = fresh.find(key + group_recorded); p != std::string::npos; p = fresh.find(key + group_recorded, p))
    fresh.replace(p + key.size(), 16, group_current);
  std::ofstream(dir / "fresh.jsonl") << fresh;
  r = run("import " + (dir / "fresh.jsonl").string() + " -o " + (dir / "fresh.db").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("bundle --arch sm_90 --db " + (dir / "fresh.db").string() + " -o " + (dir / "b").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "stale")) << r.out;
  EXPECT_TRUE(has(r.out, "(81 for database winners, ")) << r.out;
  // The group winners: 13 distinct compiled kernels (threads, nvec, unroll per dtype) x 2 epilogues
  // x 3 capacities; the multi-tensor defaults (t512 u4 with 16-byte vectors) are among them.
  EXPECT_TRUE(has(r.out, "sm_90: 78 multi-tensor kernels (78 for database group winners, 0 for built-in")) << r.out;
}

// Issue 24 item 3: a dump ends with a line stating its row counts; a dump cut at a line boundary,
// or with a row removed, is refused naming the file and what is missing, and nothing is written;
// a dump of text format 1 (no end line) is imported with one warning.
TEST_F(Cli, ImportRefusesACutOrMiscountedDumpAndWarnsOnceForAnOldOne) {
  const std::string shipped = slurp(AMAX_SYSTEM_DB_TEXT);
  std::vector<std::string> lines;
  {
    std::istringstream in(shipped);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_GT(lines.size(), 100u);
  EXPECT_EQ(lines.front().rfind(R"({"format":"amax-tune-db","format_version":2,)", 0), 0u) << lines.front();
  auto join = [](auto first, auto last) {
    std::string t;
    for (auto it = first; it != last; ++it) t += *it + "\n";
    return t;
  };
  // `head -n 100`: 99 rows and no end line.
  const fs::path cut = dir / "cut.jsonl";
  std::ofstream(cut) << join(lines.begin(), lines.begin() + 100);
  CmdResult r = run("import " + cut.string() + " -o " + (dir / "cut.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: text dump '" + cut.string() + "', line 100: the end line "
                         "{\"end\":\"amax-tune-db\",\"rows\":{...}} is missing after 99 rows: the dump is cut short"))
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "cut.db"));
  // One winner row removed: the end line's count of winners no longer holds.
  const fs::path less = dir / "less.jsonl";
  std::ofstream(less) << join(lines.begin(), lines.begin() + 1) + join(lines.begin() + 2, lines.end());
  ASSERT_EQ(lines[1].rfind(R"({"row":"winner",)", 0), 0u) << lines[1];
  r = run("import " + less.string() + " -o " + (dir / "less.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "text dump '" + less.string() + "', line " + std::to_string(lines.size() - 1) +
                         ": the end line states 78 winner rows, but the dump holds 77: rows were lost or added"))
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "less.db"));
  // A row after the end line.
  const fs::path after = dir / "after.jsonl";
  std::ofstream(after) << shipped + lines[1] + "\n";
  r = run("import " + after.string() + " -o " + (dir / "after.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "line " + std::to_string(lines.size() + 1) + ": a line after the end line (line " +
                         std::to_string(lines.size()) + ")")) << r.out;
  // Text format 1 (the header without format_version, no end line): imported, one warning.
  const fs::path old = dir / "old.jsonl";
  std::string old_header = lines.front();
  old_header.erase(old_header.find(R"("format_version":2,)"), 19);
  std::ofstream(old) << old_header + "\n" + join(lines.begin() + 1, lines.end() - 1);
  r = run("import " + old.string() + " -o " + (dir / "old.db").string());
  EXPECT_EQ(r.code, 0) << r.out;
  std::size_t group_winners = 0;
  for (const auto& l : lines) group_winners += l.rfind(R"({"row":"group_winner",)", 0) == 0;
  EXPECT_TRUE(has(r.out, "imported 78 winners and " + std::to_string(group_winners) + " multi-tensor group winners into "))
      << r.out;
  const std::string warning = "text dump '" + old.string() + "' is of text format version 1 (no end line stating "
                              "its row counts): its " + std::to_string(lines.size() - 2) + " rows are loaded, but "
                              "whether rows were lost cannot be checked";
  EXPECT_TRUE(has(r.out, warning)) << r.out;
  EXPECT_EQ(r.out.find("warning"), r.out.rfind("warning")) << "more than one warning:\n" << r.out;
  // Exported again, it carries the end line and is the shipped text.
  r = run("export --format text --db " + (dir / "old.db").string() + " -o " + (dir / "again.jsonl").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(slurp(dir / "again.jsonl") == shipped) << "the re-export differs from the shipped dump";
  // A newer text format is refused naming both versions.
  std::ofstream(dir / "new.jsonl") << R"({"format":"amax-tune-db","format_version":3,"schema_version":4})" "\n";
  r = run("import " + (dir / "new.jsonl").string() + " -o " + (dir / "new.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "the dump has text format version 3, but this build of amax-tune understands versions 1 "
                         "to 2")) << r.out;
}

namespace {
// Runs amax-tune as an unprivileged user (nobody) when this process is root: root may write any
// file, so a read-only file is read-only only to another user.
CmdResult run_unprivileged(const std::string& args) {
  return run(args, ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "");
}
}  // namespace

// Issue 24 item 2: a tune into a database it cannot write is refused before any work (exit 1),
// naming the file, its owner and mode and the ways out; --db-in-memory is the explicit way to run
// without writing it. --json's directory is checked before the work too.
TEST_F(Cli, ATuneIntoAnUnwritableDatabaseIsRefusedBeforeAnyWork) {
  if (::geteuid() == 0 && std::system("command -v setpriv > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "running as root without setpriv: no user here for whom a file is read-only";
  const auto db = shipped_db();
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string bytes = slurp(db);
  CmdResult r = run_unprivileged("--arch sm_90 --db " + db.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: cannot tune into the tuning database " + db.string() + ": the file '" +
                         db.string() + "' is not writable by this user (uid ")) << r.out;
  EXPECT_TRUE(has(r.out, ", mode 0444 (r--r--r--); nothing was tuned. Make it writable, name another database with "
                         "--db FILE (or $AMAX_TUNE_DB), or tune without keeping the results with --db-in-memory"))
      << r.out;
  EXPECT_TRUE(has(r.out, "owned by ")) << r.out;
  EXPECT_FALSE(has(r.out, "no NVIDIA device")) << "the database must be refused before the device is asked: " << r.out;
  EXPECT_EQ(slurp(db), bytes);
  // A new database in a directory this user cannot write: the directory is named.
  const auto locked = dir / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  r = run_unprivileged("--arch sm_90 --db " + (locked / "new.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, ": its directory '" + locked.string() + "' is not writable by this user (uid ")) << r.out;
  EXPECT_TRUE(has(r.out, "mode 0555 (r-xr-xr-x)")) << r.out;
  EXPECT_FALSE(fs::exists(locked / "new.db"));
  // --db-in-memory: the database is read, never written; without a GPU the run then stops at the device.
  r = run_unprivileged("--arch sm_90 --sizes 1024 --dtypes fp32 --groups none --db-in-memory --db " + db.string());
  if (r.code == 0) GTEST_SKIP() << "a GPU is present (the in-memory tune ran)";
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_FALSE(has(r.out, "cannot tune into")) << r.out;
  EXPECT_TRUE(has(r.out, "sm_90")) << r.out;
  EXPECT_EQ(slurp(db), bytes);
}

TEST_F(Cli, TuneOutputPathsAreCheckedBeforeTheWork) {
  const auto db = dir / "t.db";
  CmdResult r = run("--arch sm_90 --json " + (dir / "no" / "such" / "s.json").string() + " --db " + db.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "amax-tune: error: --json " + (dir / "no" / "such" / "s.json").string() + ": its directory '" +
                         (dir / "no" / "such").string() + "' does not exist; nothing was tuned")) << r.out;
  r = run("--arch sm_90 --json " + dir.string() + " --db " + db.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--json " + dir.string() + ": it is a directory")) << r.out;
  EXPECT_FALSE(fs::exists(db));
  r = run("--arch sm_90 --rebuild --db-in-memory --db " + db.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--rebuild moves a damaged database aside and --db-in-memory never writes it")) << r.out;
}

// Issue 24 item 5: a tune that fails at the device check leaves the database as it was: the same
// bytes, no journal files beside it, a damaged one not moved aside even with --rebuild.
TEST_F(Cli, AFailedTuneLeavesTheDatabaseAsItWas) {
  const auto db = shipped_db();
  const std::string bytes = slurp(db);
  auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto before = listing();
  CmdResult r = run("--arch sm_90 --sizes 1024 --groups none --db " + db.string());
  if (r.code == 0) GTEST_SKIP() << "a GPU is present (tuning ran)";
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(slurp(db), bytes) << "a failed tune changed the database";
  EXPECT_EQ(listing(), before) << "a failed tune left files beside the database";
  // A damaged database with --rebuild: not moved aside when the device check fails.
  const auto bad = dir / "damaged.db";
  std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2 + 100);
  const std::string damaged = slurp(bad);
  const auto with_bad = listing();
  r = run("--arch sm_90 --rebuild --db " + bad.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(slurp(bad), damaged);
  EXPECT_EQ(listing(), with_bad) << "--rebuild moved the file aside before the device check: " << r.out;
  // Without --rebuild the damage is reported (before the device) and the file left alone.
  r = run("--arch sm_90 --db " + bad.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "cannot use the tuning database " + bad.string())) << r.out;
  EXPECT_EQ(listing(), with_bad);
}

// Issue 24 items 7-9: list options take spaces after commas; `show` without a user database shows
// the system database (without one either, the built-in default); merge prints a summary (the
// per-key lines with --verbose) and warns once for --allow-different-devices; messages name flags.
TEST_F(Cli, ListsWithSpacesAreAccepted) {
  // Every list parsed, then the --json check stops the run before any device or database.
  const CmdResult r = run("--arch sm_90 --sizes '1M, 4M' --dtypes 'fp32, bf16' --groups '8x1M:fp32, 4x4k:bf16' "
                          "--json " + (dir / "no" / "s.json").string() + " --db " + (dir / "t.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--json " + (dir / "no" / "s.json").string() + ": its directory")) << r.out;
  EXPECT_FALSE(has(r.out, "invalid")) << r.out;
}

TEST_F(Cli, ShowWithoutAUserDatabaseShowsTheSystemDatabaseOrTheDefault) {
  const auto sys = shipped_db();
  const std::string env = "AMAX_TUNE_DB=" + (dir / "none.db").string() + " AMAX_TUNE_SYSTEM_DB=";
  CmdResult r = run("show", env + sys.string() + " ");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "note: no user database at " + (dir / "none.db").string() + ": showing the system database"))
      << r.out;
  EXPECT_TRUE(has(r.out, "78 winners in " + sys.string() + "\n")) << r.out;
  r = run("show --arch gfx942", env + (dir / "nosys.db").string() + " ");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "0 winners: no user database (" + (dir / "none.db").string() + ") and no system database (" +
                         (dir / "nosys.db").string() + ")\nbuilt-in default for gfx942 where no entry serves: "
                         "two_stage.t512.v4.u2.b65535 (fp32)")) << r.out;
  // A database named with --db must exist.
  r = run("show --db " + (dir / "none.db").string(), env + sys.string() + " ");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "no such file")) << r.out;
  EXPECT_FALSE(fs::exists(dir / "none.db"));
}

TEST_F(Cli, MergePrintsASummaryAndWarnsOnceForDifferentDevices) {
  const auto a = shipped_db();
  // The same rows measured on "another device": every key is contested across devices.
  std::string text = slurp(AMAX_SYSTEM_DB_TEXT);
  for (std::size_t at = 0; (at = text.find("\"NVIDIA H200\"", at)) != std::string::npos; ++at)
    text.replace(at, 13, "\"NVIDIA H100\"");
  std::ofstream(dir / "h100.jsonl") << text;
  const auto b = dir / "h100.db";
  ASSERT_EQ(run("import " + (dir / "h100.jsonl").string() + " -o " + b.string()).code, 0);
  std::size_t groups = 0;
  for (std::size_t at = 0; (at = text.find("{\"row\":\"group_winner\"", at)) != std::string::npos; ++at) ++groups;
  const std::string keys = std::to_string(78 + groups);
  const auto out = dir / "m.db";
  CmdResult r = run("merge " + a.string() + " " + b.string() + " -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "(and " + std::to_string(78 + groups - 1) + " more key(s)); rows from different devices are "
                         "never mixed silently: give --allow-different-devices to keep the faster winner anyway"))
      << r.out;
  EXPECT_FALSE(fs::exists(out));
  r = run("merge --allow-different-devices " + a.string() + " " + b.string() + " -o " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "  winners kept: 78 from " + a.string() + ", 0 from " + b.string() + " (group winners: " +
                         std::to_string(groups) + " from " + a.string() + ", 0 from " + b.string() + "); " + keys +
                         " keys had more than one winner (the fastest kept) (listed with --verbose)\n")) << r.out;
  EXPECT_TRUE(has(r.out, "warning: --allow-different-devices: " + keys + " of them kept a winner measured on another "
                         "device than the winner it replaced (listed with --verbose)\n")) << r.out;
  EXPECT_EQ(r.out.find("warning"), r.out.rfind("warning")) << "warned more than once:\n" << r.out;
  EXPECT_FALSE(has(r.out, ": kept ")) << "per-key lines without --verbose:\n" << r.out;
  // An existing output is named with the flag that replaces it.
  r = run("merge " + a.string() + " " + b.string() + " -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "the output exists (give --overwrite to replace it)")) << r.out;
  EXPECT_FALSE(has(r.out, "MergePolicy")) << r.out;
  r = run("merge --verbose --overwrite --allow-different-devices " + a.string() + " " + b.string() + " -o " +
          out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  // One line per key: "  sm_90/bf16/n=1000: kept LABEL (T us, from A) over LABEL (T us), measured on different devices".
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = r.out.find(": kept ", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 78 + groups) << r.out;
  const auto first = r.out.find("  sm_90/bf16/n=1000: kept ");
  ASSERT_NE(first, std::string::npos) << r.out;
  const std::string line = r.out.substr(first, r.out.find('\n', first) - first);
  EXPECT_TRUE(has(line, " us, from " + a.string() + ") over ")) << line;
  EXPECT_TRUE(line.ends_with(" us), measured on different devices")) << line;
}

// One exit-code rule: 2 for a command line that is wrong in itself, 1 for a run that failed (a
// missing or bad file, no device).
TEST_F(Cli, ExitCodesFollowOneRule) {
  CmdResult r = run("import " + (dir / "missing.jsonl").string() + " -o " + (dir / "x.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "cannot read the text dump " + (dir / "missing.jsonl").string() + ": No such file")) << r.out;
  r = run("merge " + (dir / "missing.db").string() + " " + (dir / "missing2.db").string() + " -o " +
          (dir / "x.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "no such file")) << r.out;
  EXPECT_EQ(run("--no-such-option").code, 2);
  EXPECT_EQ(run("merge a.db").code, 2);  // a required argument left out
  // No --arch: the device's own, and there is none here (on a GPU machine: one small key).
  r = run("--sizes 1024 --dtypes fp32 --groups none --db " + (dir / "t.db").string());
  if (r.code == 0) GTEST_SKIP() << "a GPU is present (tuning ran)";
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--arch not given and no GPU found")) << r.out;
  r = run("--device all --sizes 1024 --dtypes fp32 --groups none --db " + (dir / "t.db").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--device all: no GPU found")) << r.out;
  EXPECT_FALSE(fs::exists(dir / "t.db"));
}

TEST_F(Cli, EmitSaysWhichDtypeItAssumed) {
  CmdResult r = run("emit --arch sm_90 --label one_pass.t256.v4.u4.b8cu");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "note: --dtype not given, fp32 assumed; choose with --dtype fp16 or bf16\n")) << r.out;
  r = run("emit --arch sm_90 --dtype fp32 --label one_pass.t256.v4.u4.b8cu");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "assumed")) << r.out;
}

// Issue 24 item 2 for the benchmarks: the output directory is checked before anything is measured.
TEST_F(Cli, BenchOutputDirectoriesAreCheckedFirst) {
  std::ofstream(dir / "file") << "x";
  for (const std::string cmd : {"bench --no-plot", "bench --quantize", "bench-multi"}) {
    const CmdResult r = run(cmd + " -o " + (dir / "file").string());
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "amax-tune: error: -o " + (dir / "file").string() + ": '" + (dir / "file").string() +
                           "' is not a directory; nothing was measured")) << cmd << "\n" << r.out;
  }
}

// Dispatch decisions from real SQLite tuning databases (no GPU): lookup order, nearest size in
// log2, validation of untrusted rows, staleness, overrides.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"

using namespace amax;
namespace fs = std::filesystem;

namespace {

db::Provenance prov(const std::string& device = "NVIDIA H200", const std::string& hash = template_hash()) {
  return db::Provenance{.device_name = device, .arch = "sm_90", .cu_count = 132, .driver_version = "cuda driver 13.0",
                        .compiler = "nvrtc 13.0", .template_hash = hash, .tool_version = std::string(generator_version()),
                        .timing_protocol = "test", .timestamp = "2026-11-30T00:00:00Z"};
}
const db::Provenance kId = prov();

class Dispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("amax-dispatch-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
    for (const char* v : {"AMAX_TUNE_FORCE_LABEL", "AMAX_TUNE_FORCE_STRATEGY", "NVTE_USE_ATOMIC_AMAX",
                          "AMAX_TUNE_FORCE_MULTI_LABEL", "AMAX_TUNE_FORCE_QUANTIZE_LABEL"})
      unsetenv(v);
  }
  void TearDown() override { fs::remove_all(dir); }
  // A database with one winner per (dtype, n, label).
  std::string make_db(const std::string& name,
                      const std::vector<std::tuple<const char*, std::uint64_t, std::string>>& rows,
                      const db::Provenance& p = prov()) {
    const auto path = (dir / name).string();
    auto d = db::TuningDb::open(path);
    for (const auto& [dt, n, label] : rows) {
      const db::Trial t{label, db::TrialStatus::ok, "", 2.0, 0.1, 5, 1.0, 32, 0};
      d.record<SingleFamily>(db::TuningKey{"sm_90", db::dtype_from_string(dt), n}, p, std::span(&t, 1),
                   db::Winner{label, 2.0, 1.0});
    }
    return path;
  }
  // The same for an MI300X-like device: rows of (target ID, dtype, n, label), each provenance under its target ID.
  std::string make_db_for(const std::string& name,
                          const std::vector<std::tuple<const char*, const char*, std::uint64_t, std::string>>& rows) {
    const auto path = (dir / name).string();
    auto d = db::TuningDb::open(path);
    for (const auto& [arch_id, dt, n, label] : rows) {
      db::Provenance p = provenance_for(ArchInfo::parse(arch_id));
      p.timing_protocol = "test", p.timestamp = "2026-12-01T00:00:00Z";
      const db::Trial t{label, db::TrialStatus::ok, "", 2.0, 0.1, 5, 1.0, 32, 0};
      d.record<SingleFamily>(db::TuningKey{arch_id, db::dtype_from_string(dt), n}, p, std::span(&t, 1), db::Winner{label, 2.0, 1.0});
    }
    return path;
  }
  // The provenance a process on an MI300X reporting target ID `a` runs with.
  static db::Provenance provenance_for(const ArchInfo& a) {
    return db::Provenance{.device_name = "AMD Instinct MI300X", .arch = a.name, .cu_count = 304,
                          .driver_version = "hip driver 60443484", .compiler = "hiprtc 6.4.43484",
                          .template_hash = template_hash(), .tool_version = std::string(generator_version())};
  }
  fs::path dir;
  const ArchInfo arch = ArchInfo::parse("sm_90");
};

}  // namespace

TEST_F(Dispatch, NothingLoadedGivesTheBuiltInDefault) {
  DispatchTables t(arch, kId);
  EXPECT_EQ(t.load(Source::user_db, (dir / "missing.db").string()), 0u);
  EXPECT_TRUE(t.warnings().empty()) << "a missing database is not a problem";
  const Choice small = t.choose(DType::bf16, 1000);
  EXPECT_EQ(small.source, Source::builtin_default);
  EXPECT_EQ(small.config.label(), "one_pass.t512.v8.u2.buncapped");
  EXPECT_EQ(t.choose(DType::fp32, 1ull << 30).config.label(), "atomic.t512.v4.u4.buncapped");
  // AMD: ROCm TransformerEngine's shipped two-stage kernel at every size (512 threads, 32 bytes per
  // thread per iteration = one 16-byte vector x 2, at most 65535 blocks), cited by explain and show.
  const auto gfx942 = ArchInfo::parse("gfx942:sramecc+:xnack-");
  for (std::uint64_t n : {1ull, 1000ull, 1ull << 21, 1ull << 30}) {
    EXPECT_EQ(builtin_default(gfx942, DType::fp16, n).label(), "two_stage.t512.v8.u2.b65535") << n;
    EXPECT_EQ(builtin_default(gfx942, DType::fp32, n).label(), "two_stage.t512.v4.u2.b65535") << n;
  }
  EXPECT_EQ(builtin_default(gfx942, DType::bf16, 1), transformer_engine_config(DType::bf16, Strategy::two_stage));
  EXPECT_NE(builtin_default_source(gfx942).find("ROCm/TransformerEngine common/recipe/current_scaling.cu"),
            std::string::npos);
  EXPECT_NE(builtin_default_source(gfx942).find("512 threads, 32 bytes per thread per iteration"), std::string::npos);
  EXPECT_NE(builtin_default_source(ArchInfo::parse("sm_90")).find("H200"), std::string::npos);
}

TEST_F(Dispatch, TargetIdsWithFeaturesAreDistinctKeys) {
  // Rows tuned under xnack- are never served to an xnack+ process, and the reverse.
  const auto minus = ArchInfo::parse("gfx942:sramecc+:xnack-"), plus = ArchInfo::parse("gfx942:xnack+");
  const auto db_path = make_db_for("xnack.db", {{"gfx942:sramecc+:xnack-", "bf16", 1u << 20, "atomic.t256.v8.u2.b8cu"},
                                                {"gfx942:xnack+", "bf16", 1u << 20, "one_pass.t128.v8.u1.b2cu"}});
  DispatchTables m(minus, provenance_for(minus));
  EXPECT_EQ(m.load(Source::user_db, db_path), 1u);
  EXPECT_EQ(m.choose(DType::bf16, 1u << 20).config.label(), "atomic.t256.v8.u2.b8cu");
  DispatchTables p(plus, provenance_for(plus));
  EXPECT_EQ(p.load(Source::user_db, db_path), 1u);
  EXPECT_EQ(p.choose(DType::bf16, 1u << 20).config.label(), "one_pass.t128.v8.u1.b2cu");
  // A process whose device reports yet another feature set gets neither: the built-in default.
  const auto other = ArchInfo::parse("gfx942:sramecc-:xnack-");
  DispatchTables o(other, provenance_for(other));
  EXPECT_EQ(o.load(Source::user_db, db_path), 0u);
  EXPECT_EQ(o.choose(DType::bf16, 1u << 20).source, Source::builtin_default);
}

TEST_F(Dispatch, NearestTunedSizeInLog2TiesGoToTheLarger) {
  DispatchTables t(arch, kId);
  ASSERT_EQ(t.load(Source::system_db, make_db("sys.db", {{"bf16", 1024, "one_pass.t128.v8.u1.b2cu"},
                                                         {"bf16", 4096, "one_pass.t256.v8.u1.b2cu"},
                                                         {"bf16", 1u << 20, "atomic.t512.v8.u4.buncapped"}})),
            3u);
  EXPECT_EQ(t.choose(DType::bf16, 1).config.label(), "one_pass.t128.v8.u1.b2cu");
  EXPECT_EQ(t.choose(DType::bf16, 2000).config.label(), "one_pass.t128.v8.u1.b2cu");  // log2 10.97: 1024
  EXPECT_EQ(t.choose(DType::bf16, 2048).config.label(), "one_pass.t256.v8.u1.b2cu");  // tie 1024/4096 -> 4096
  EXPECT_EQ(t.choose(DType::bf16, 65535).config.label(), "one_pass.t256.v8.u1.b2cu");    // 3.99 vs 4.01 octaves
  EXPECT_EQ(t.choose(DType::bf16, 65536).config.label(), "atomic.t512.v8.u4.buncapped");  // 4 vs 4: the larger
  EXPECT_EQ(t.choose(DType::bf16, 1ull << 40).config.label(), "atomic.t512.v8.u4.buncapped");
  const Choice c = t.choose(DType::bf16, 1000);
  EXPECT_EQ(c.source, Source::system_db);
  ASSERT_NE(c.entry, nullptr);
  EXPECT_EQ(c.entry->n, 1024u);
  // Other dtypes are not served by bf16 rows.
  EXPECT_EQ(t.choose(DType::fp16, 1000).source, Source::builtin_default);
}

TEST_F(Dispatch, UserDatabaseComesBeforeTheSystemDatabase) {
  DispatchTables t(arch, kId);
  t.load(Source::user_db, make_db("user.db", {{"fp32", 1u << 20, "two_stage.t256.v4.u4.b8cu"}}));
  t.load(Source::system_db, make_db("sys.db", {{"fp32", 1u << 20, "atomic.t512.v4.u4.buncapped"},
                                               {"fp16", 1u << 20, "atomic.t512.v8.u4.buncapped"}}));
  EXPECT_EQ(t.choose(DType::fp32, 1000).source, Source::user_db);
  EXPECT_EQ(t.choose(DType::fp32, 1000).config.label(), "two_stage.t256.v4.u4.b8cu");
  EXPECT_EQ(t.choose(DType::fp16, 1000).source, Source::system_db);
}

// Rows of a database written when spin and the clustered variants (label suffix .cN) were
// generated name variants that no longer exist: skipped as invalid, with one warning naming the
// first, and the other rows of the file still serve their keys.
TEST_F(Dispatch, RowsOfRetiredVariantsAreSkippedWithOneWarning) {
  DispatchTables t(arch, kId);
  const auto old = make_db("retired.db", {{"bf16", 4096, "spin.t512.v8.u2.b4cu"},
                                          {"bf16", 8192, "self_reset.t512.v8.u2.b4cu.c8"},
                                          {"bf16", 1u << 20, "one_pass.t256.v8.u2.b4cu"}});
  EXPECT_EQ(t.load(Source::user_db, old), 1u);
  ASSERT_EQ(t.warnings().size(), 1u);
  EXPECT_NE(t.warnings()[0].find("2 entries for sm_90 are invalid and are skipped (first: bf16 n=4096: "),
            std::string::npos) << t.warnings()[0];
  EXPECT_NE(t.warnings()[0].find("'spin'"), std::string::npos) << t.warnings()[0];
  EXPECT_EQ(t.choose(DType::bf16, 1u << 20).source, Source::user_db);
  EXPECT_EQ(t.choose(DType::bf16, 1u << 20).config.label(), "one_pass.t256.v8.u2.b4cu");
  EXPECT_EQ(t.choose(DType::bf16, 4096).config.label(), "one_pass.t256.v8.u2.b4cu") << "the nearest usable row";
  EXPECT_THROW(KernelConfig::parse("self_reset.t512.v8.u2.b4cu.c8"), std::invalid_argument);
}

TEST_F(Dispatch, InvalidAndStaleRowsAreSkippedWithOneWarningEach) {
  DispatchTables t(arch, kId);
  const auto bad = make_db("bad.db", {{"fp32", 1024, "atomic.t512.v8.u4.buncapped"},   // 32-byte fp32 vector
                                      {"fp32", 2048, "atomic.t500.v4.u4.buncapped"},   // not a warp multiple
                                      {"fp32", 4096, "one_pass.t256.v4.u2.b4cu"}});     // fine
  EXPECT_EQ(t.load(Source::user_db, bad), 1u);
  ASSERT_EQ(t.warnings().size(), 1u);
  EXPECT_NE(t.warnings()[0].find("2 entries for sm_90 are invalid"), std::string::npos) << t.warnings()[0];
  EXPECT_NE(t.warnings()[0].find("32 bytes exceeds 16 bytes"), std::string::npos) << t.warnings()[0];
  const auto stale = make_db("stale.db", {{"bf16", 1024, "one_pass.t256.v8.u2.b4cu"}}, prov("NVIDIA H200", "0000000000000000"));
  EXPECT_EQ(t.load(Source::system_db, stale), 0u);
  ASSERT_EQ(t.warnings().size(), 2u);
  EXPECT_NE(t.warnings()[1].find("1 entries were made with another template_hash"), std::string::npos) << t.warnings()[1];
  EXPECT_EQ(t.choose(DType::bf16, 1024).source, Source::builtin_default);
}

TEST_F(Dispatch, ADamagedDatabaseIsSkippedWithAWarning) {
  const auto path = dir / "damaged.db";
  { std::ofstream(path) << std::string(8192, 'x'); }
  DispatchTables t(arch, kId);
  EXPECT_EQ(t.load(Source::user_db, path.string()), 0u);
  ASSERT_EQ(t.warnings().size(), 1u);
  EXPECT_NE(t.warnings()[0].find("is unusable and is skipped"), std::string::npos);
  EXPECT_EQ(t.choose(DType::fp32, 5).source, Source::builtin_default);
}

TEST_F(Dispatch, SameDeviceRowsArePreferredOverAnotherSkuOfTheArch) {
  DispatchTables t(arch, kId);
  make_db("mixed.db", {{"fp32", 4096, "one_pass.t128.v4.u1.b2cu"}}, prov("NVIDIA H100 80GB HBM3"));
  {
    auto d = db::TuningDb::open(dir / "mixed.db");
    const db::Trial tr{"one_pass.t1024.v4.u1.b2cu", db::TrialStatus::ok, "", 2.0, 0.1, 5, 1.0, 32, 0};
    d.record<SingleFamily>(db::TuningKey{"sm_90", DType::fp32, 4096}, prov(), std::span(&tr, 1),
                 db::Winner{"one_pass.t1024.v4.u1.b2cu", 2.0, 1.0});
  }
  EXPECT_EQ(t.load(Source::user_db, (dir / "mixed.db").string()), 2u);
  const Choice c = t.choose(DType::fp32, 4096);
  EXPECT_EQ(c.config.label(), "one_pass.t1024.v4.u1.b2cu");
  EXPECT_TRUE(c.entry->same_device);
}

// Issue 26: the multi-tensor override is read with the single-tensor ones (read_environment, its
// warning among theirs) and chosen by choose(dtype, shape) before the tables, as choose() does for one
// tensor; a label invalid for a dtype is not forced for it and says why.
TEST_F(Dispatch, MultiTensorOverrideIsReadWithTheOthersAndChosenFirst) {
  const auto path = (dir / "groups.db").string();
  const std::string tuned = "multi.t256.v8.u8.c32k.b2cu.warp";
  {
    auto d = db::TuningDb::open(path);
    const db::Trial t{tuned, db::TrialStatus::ok, "", 9.0, 0.1, 5, 1800.0, 62, 0};
    d.record<MultiFamily>(db::GroupKey{"sm_90", DType::bf16, 8, 16777216, 2097152}, prov("NVIDIA H200", multi_template_hash()),
                       std::span(&t, 1), db::Winner{tuned, 9.0, 1800.0});
  }
  const GroupShape shape{8, 16777216, 2097152};
  DispatchTables plain(arch, kId);
  plain.read_environment();
  ASSERT_EQ(plain.load(Source::user_db, path), 1u);
  EXPECT_FALSE(plain.forced_label<MultiConfig>());
  GroupChoice g = plain.choose(DType::bf16, shape);
  EXPECT_EQ(g.source, Source::user_db);
  EXPECT_EQ(g.config.label(), tuned);
  ASSERT_NE(g.entry, nullptr);
  EXPECT_EQ(g.entry->shape, shape);
  EXPECT_EQ(g.why, "");
  g = plain.choose(DType::fp32, shape);
  EXPECT_EQ(g.source, Source::builtin_default);
  EXPECT_EQ(g.config.label(), "multi.t512.v4.u4.c32k.b4cu.warp");
  EXPECT_EQ(g.entry, nullptr);

  setenv("AMAX_TUNE_FORCE_MULTI_LABEL", "multi.t1024.v8.u2.c64k.buncapped.thread", 1);
  DispatchTables forced(arch, kId);
  forced.read_environment();
  forced.load(Source::user_db, path);
  EXPECT_TRUE(forced.warnings().empty());
  ASSERT_TRUE(forced.forced_label<MultiConfig>());
  g = forced.choose(DType::bf16, shape);
  EXPECT_EQ(g.source, Source::override_env);
  EXPECT_EQ(g.config.label(), "multi.t1024.v8.u2.c64k.buncapped.thread");
  EXPECT_EQ(g.entry, nullptr);
  g = forced.choose(DType::fp32, shape);  // v8 is invalid for fp32: not forced
  EXPECT_EQ(g.source, Source::builtin_default);
  EXPECT_EQ(g.config.label(), "multi.t512.v4.u4.c32k.b4cu.warp");
  EXPECT_EQ(g.why, "AMAX_TUNE_FORCE_MULTI_LABEL is not valid for sm_90 fp32 (multi.t1024.v8.u2.c64k.buncapped.thread: "
                   "vector of 8 x fp32 = 32 bytes exceeds 16 bytes): ");
  EXPECT_EQ(forced.choose(DType::bf16, 10).source, Source::builtin_default) << "the single-tensor choice is its own";

  setenv("AMAX_TUNE_FORCE_MULTI_LABEL", "multi.t512.nonsense", 1);
  setenv("AMAX_TUNE_FORCE_STRATEGY", "three_stage", 1);
  DispatchTables bad(arch, kId);
  bad.read_environment();
  ASSERT_EQ(bad.warnings().size(), 2u);
  EXPECT_EQ(bad.warnings()[1],
            "AMAX_TUNE_FORCE_MULTI_LABEL ignored: invalid multi-tensor variant label 'multi.t512.nonsense': expected "
            "7 to 8 '.'-separated fields (multi.tT.vN.uU.cCk.bB.COMBINE[.scale], e.g. multi.t512.v8.u4.c32k.b4cu.thread), "
            "got 3");
  EXPECT_FALSE(bad.forced_label<MultiConfig>());
  EXPECT_EQ(bad.choose(DType::bf16, shape).source, Source::builtin_default);
  unsetenv("AMAX_TUNE_FORCE_STRATEGY");
  unsetenv("AMAX_TUNE_FORCE_MULTI_LABEL");
}

// Group rows are judged by the single-tensor rows' rule (unusable_row): a fused label and a label
// invalid for the dtype are skipped, counted in one warning naming the first.
TEST_F(Dispatch, InvalidGroupRowsAreSkippedByTheRuleOfSingleRows) {
  const auto path = (dir / "bad-groups.db").string();
  {
    auto d = db::TuningDb::open(path);
    const auto add = [&](DType dt, std::uint64_t tensors, const std::string& label, double us) {
      const db::Trial t{label, db::TrialStatus::ok, "", us, 0.1, 5, 1.0, 32, 0};
      d.record<MultiFamily>(db::GroupKey{"sm_90", dt, tensors, tensors << 20, 1u << 20},
                         prov("NVIDIA H200", multi_template_hash()), std::span(&t, 1), db::Winner{label, us, 1.0});
    };
    add(DType::bf16, 4, "multi.t512.v8.u4.c32k.b4cu.thread.scale", 5.0);
    add(DType::fp32, 4, "multi.t512.v8.u4.c32k.b4cu.thread", 5.0);
    add(DType::bf16, 64, "multi.t512.v8.u4.c32k.b4cu.thread", 7.0);
  }
  DispatchTables t(arch, kId);
  EXPECT_EQ(t.load(Source::user_db, path), 1u);
  ASSERT_EQ(t.warnings().size(), 1u);
  EXPECT_EQ(t.warnings()[0], "user database " + path +
                                 ": 2 multi-tensor entries for sm_90 are invalid and are skipped (first: sm_90/bf16/4 "
                                 "tensors, 4 MiB, largest 1 MiB: a fused (.scale) label: the tables hold amax-only "
                                 "winners)");
  EXPECT_EQ(t.table<MultiConfig>(Source::user_db, DType::bf16).size(), 1u);
}

TEST_F(Dispatch, EnvironmentOverrides) {
  setenv("AMAX_TUNE_FORCE_LABEL", "two_stage.t256.v8.u4.b8cu", 1);
  DispatchTables t(arch, kId);
  t.read_environment();
  EXPECT_EQ(t.choose(DType::bf16, 10).source, Source::override_env);
  EXPECT_EQ(t.choose(DType::bf16, 10).config.label(), "two_stage.t256.v8.u4.b8cu");
  EXPECT_EQ(t.choose(DType::fp32, 10).source, Source::builtin_default) << "v8 is invalid for fp32: not forced";
  unsetenv("AMAX_TUNE_FORCE_LABEL");

  setenv("NVTE_USE_ATOMIC_AMAX", "1", 1);
  DispatchTables te(arch, kId);
  te.read_environment();
  EXPECT_EQ(te.choose(DType::fp32, 10).config.label(), "atomic.t512.v4.u2.buncapped");
  unsetenv("NVTE_USE_ATOMIC_AMAX");

  setenv("AMAX_TUNE_FORCE_STRATEGY", "self_reset", 1);
  DispatchTables sr(arch, kId);
  sr.read_environment();
  EXPECT_TRUE(sr.warnings().empty());
  EXPECT_EQ(sr.choose(DType::bf16, 1000).source, Source::override_env);
  EXPECT_EQ(sr.choose(DType::bf16, 1000).config.label(), "self_reset.t512.v8.u2.buncapped");
  unsetenv("AMAX_TUNE_FORCE_STRATEGY");

  // A retired strategy is an unknown one: ignored with one warning listing the strategies there are.
  setenv("AMAX_TUNE_FORCE_STRATEGY", "spin", 1);
  DispatchTables sp(arch, kId);
  sp.read_environment();
  ASSERT_EQ(sp.warnings().size(), 1u);
  EXPECT_NE(sp.warnings()[0].find("'spin' ignored (expected " + strategy_names() + ")"), std::string::npos)
      << sp.warnings()[0];
  EXPECT_EQ(sp.choose(DType::bf16, 1u << 24).source, Source::builtin_default);
  unsetenv("AMAX_TUNE_FORCE_STRATEGY");

  setenv("AMAX_TUNE_FORCE_STRATEGY", "three_stage", 1);
  setenv("AMAX_TUNE_FORCE_LABEL", "nonsense", 1);
  DispatchTables bad(arch, kId);
  bad.read_environment();
  ASSERT_EQ(bad.warnings().size(), 2u);
  EXPECT_NE(bad.warnings()[1].find("'three_stage' ignored (expected atomic, two_stage, one_pass, self_reset, first_reset, first_reset_warp)"),
            std::string::npos) << bad.warnings()[1];
  EXPECT_EQ(bad.choose(DType::fp32, 10).source, Source::builtin_default);
  unsetenv("AMAX_TUNE_FORCE_STRATEGY");
  unsetenv("AMAX_TUNE_FORCE_LABEL");
}

// The quantize family's lookup: its forced label where valid for the arch and dtype (else why not),
// else the built-in default (its tables are empty until the tuning database holds the family).
TEST_F(Dispatch, QuantizeForcedLabelElseTheBuiltInDefault) {
  DispatchTables plain(arch, kId);
  plain.read_environment();
  for (const auto& [d, n] : {std::pair{DType::bf16, std::uint64_t{1} << 20},
                             std::pair{DType::fp32, std::uint64_t{1000}}, std::pair{DType::bf16, std::uint64_t{1} << 28}}) {
    const Choice<QuantizeConfig> q = plain.choose_quantize(d, n);
    EXPECT_EQ(q.source, Source::builtin_default);
    EXPECT_EQ(q.config, builtin_quantize_default(arch, d, n));
    EXPECT_EQ(q.entry, nullptr);
  }

  setenv("AMAX_TUNE_FORCE_QUANTIZE_LABEL", "quant.reread.t256.v8.u2.k0.b2cu", 1);
  DispatchTables forced(arch, kId);
  forced.read_environment();
  EXPECT_TRUE(forced.warnings().empty());
  Choice<QuantizeConfig> q = forced.choose_quantize(DType::bf16, 1u << 20);
  EXPECT_EQ(q.source, Source::override_env);
  EXPECT_EQ(q.config.label(), "quant.reread.t256.v8.u2.k0.b2cu");
  q = forced.choose_quantize(DType::fp32, 1u << 20);  // v8 x fp32: invalid, not forced
  EXPECT_EQ(q.source, Source::builtin_default);
  EXPECT_EQ(q.why.rfind("AMAX_TUNE_FORCE_QUANTIZE_LABEL is not valid for sm_90 fp32 (quant.reread.t256.v8.u2.k0.b2cu",
                        0),
            0u)
      << q.why;
  EXPECT_EQ(forced.choose(DType::bf16, std::uint64_t{1u << 20}).source, Source::builtin_default)
      << "the single-tensor choice is its own";

  setenv("AMAX_TUNE_FORCE_QUANTIZE_LABEL", "quant.keep.nonsense", 1);
  DispatchTables bad(arch, kId);
  bad.read_environment();
  ASSERT_EQ(bad.warnings().size(), 1u);
  EXPECT_EQ(bad.warnings()[0].rfind("AMAX_TUNE_FORCE_QUANTIZE_LABEL ignored: ", 0), 0u) << bad.warnings()[0];
  unsetenv("AMAX_TUNE_FORCE_QUANTIZE_LABEL");
}

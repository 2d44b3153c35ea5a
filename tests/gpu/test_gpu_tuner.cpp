// End-to-end tuning of a small grid on the GPU into a fresh database, then `amax-tune check` on it
// (label `gpu`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

#include "amax/backend.hpp"
#include "amax/check.hpp"
#include "amax/search.hpp"
#include "amax/search_space.hpp"
#include "amax/tuner.hpp"

using namespace amax;

TEST(GpuTuner, TunesASmallGridRecordsEveryTrialAndResumes) {
  Vendor v;
  if (!first_available_vendor(v)) GTEST_SKIP() << "no GPU present, GPU test skipped";
  const auto dir = std::filesystem::temp_directory_path() / ("amax-tuner-test-" + std::to_string(std::random_device{}()));
  tune::TuneOptions o;
  o.arch = make_backend(v, 0)->device().arch;
  o.dtypes = {DType::bf16, DType::fp32};
  o.sizes = {1000, 1u << 16, 3000000};
  o.db_path = dir / "tuning.db";
  o.cache_dir = dir / "kernels";
  o.progress = false;
  const auto r = tune::run_tuning(o);
  ASSERT_EQ(r.keys.size(), 6u);
  // One variant per distinct launch at each size (the pruned space and TE's two configurations).
  const auto cu = static_cast<std::uint32_t>(r.device.cu_count);
  auto expect_variants = [&](DType d, std::uint64_t n) {
    return tune::distinct_launches(tune::candidates(ArchInfo::parse(r.device.arch), d, SpaceKind::pruned), d, n, cu)
        .size();
  };
  for (const auto& k : r.keys) {
    EXPECT_FALSE(k.resumed);
    ASSERT_GE(k.winner, 0) << to_string(k.dtype) << " " << k.n;
    EXPECT_EQ(k.variants.size(), expect_variants(k.dtype, k.n));
    for (const auto& var : k.variants) EXPECT_EQ(var.status, db::TrialStatus::ok) << var.config.label() << ": " << var.reason;
    const auto& w = k.variants[k.winner];
    // The winner heads its tie set, and every member is tied (tie rule) with the fastest finalist.
    ASSERT_FALSE(k.tie_set.empty());
    EXPECT_EQ(k.tie_set[0], static_cast<std::size_t>(k.winner));
    EXPECT_EQ(w.tie_rank, 0);
    const tune::TieRule rule;
    const tune::VariantResult* fastest = nullptr;
    for (std::size_t i : k.tie_set)
      if (!fastest || k.variants[i].stats.median_us < fastest->stats.median_us) fastest = &k.variants[i];
    for (std::size_t i : k.tie_set) EXPECT_TRUE(rule.tied(k.variants[i].stats, fastest->stats)) << k.variants[i].config.label();
    for (const auto& var : k.variants)
      if (var.finalist && var.tie_rank < 0 && k.confirmation != tune::Confirmation::pooled) {
        EXPECT_LT(fastest->stats.median_us, var.stats.median_us);  // outside the tie set: slower than it
      }
    EXPECT_NE(k.confirmation, tune::Confirmation::none);
    EXPECT_GT(k.ceiling.median_us, 0);
    EXPECT_TRUE(w.finalist);
  }
  // The time breakdown: every work item counted, the parts within the whole, and every timed batch
  // of a variant (screen, final, confirmation) under its kind; the ceiling's under no kind.
  const tune::TuneTimes& t = r.times;
  EXPECT_EQ(t.keys.items, 6);
  EXPECT_EQ(t.groups.items, static_cast<int>(r.groups.size()));
  EXPECT_LE(t.startup_s + r.compile_s + t.keys.wall_s + t.groups.wall_s, r.wall_s);
  EXPECT_LE(t.device_s, t.startup_s);
  EXPECT_LE(t.load_s, r.compile_s);
  EXPECT_GT(t.fill_s, 0.0);  // the input region, filled beside the compiles
  // On NVIDIA the work items whose kernels were built while the pool still compiled are verified
  // beside it: with this cold kernel cache the multi-tensor kernels (first in the pool) are built
  // seconds before the single-tensor ones, so some are; every variant above still passed.
  EXPECT_LE(t.verify_beside_s, r.compile_s);
  EXPECT_LE(t.verified_beside, 6 + static_cast<int>(r.groups.size()));
  if (v == Vendor::nvidia) {
    EXPECT_GT(t.verified_beside, 0);
  }
  long variant_batches = 0, kind_batches = 0;
  std::size_t timed_variants = 0;
  int kind_variants = 0;
  for (const tune::FamilyTimes* f : {&t.keys, &t.groups}) {
    double phases = 0;
    for (const auto& p : f->phases) {
      phases += p.wall_s;
      EXPECT_LE(p.timed.wall_s, p.wall_s + 1e-3);
      EXPECT_LE(p.timed.gpu_s, p.timed.wall_s);
    }
    EXPECT_LE(phases, f->wall_s);
    EXPECT_GT((*f)[tune::Phase::screen].timed.batches, 0);
    EXPECT_GT((*f)[tune::Phase::final].timed.gpu_s, 0);
    EXPECT_GT((*f)[tune::Phase::ceiling].timed.batches, 0);
    EXPECT_EQ((*f)[tune::Phase::verify].timed.batches, 0);
    for (auto p : {tune::Phase::screen, tune::Phase::final, tune::Phase::confirm}) variant_batches += (*f)[p].timed.batches;
  }
  for (const auto& [name, k] : t.kinds) kind_batches += k.timed.batches, kind_variants += k.variants;
  EXPECT_EQ(kind_batches, variant_batches);
  for (const auto& k : r.keys)
    for (const auto& var : k.variants) timed_variants += var.status == db::TrialStatus::ok;
  for (const auto& g : r.groups)
    for (const auto& var : g.variants) timed_variants += var.status == db::TrialStatus::ok;
  EXPECT_EQ(static_cast<std::size_t>(kind_variants), timed_variants);
  EXPECT_TRUE(t.kinds.count(std::string(to_string(r.keys[0].variants[r.keys[0].winner].config.strategy))));
  auto db = db::TuningDb::open(o.db_path, db::OpenMode::ReadOnly);
  const auto winners = db.winners<SingleFamily>();
  ASSERT_EQ(winners.size(), 6u);
  for (const auto& w : winners) {
    EXPECT_EQ(w.provenance.arch, o.arch);
    const auto trials = db.trials<SingleFamily>(w.key);
    EXPECT_EQ(trials.size(), expect_variants(w.key.dtype, w.key.n));
    int winners_in_trials = 0;
    for (const auto& t : trials)
      if (t.trial.tie_rank == 0) {
        ++winners_in_trials;
        EXPECT_EQ(t.trial.label, w.winner.label);
      }
    EXPECT_EQ(winners_in_trials, 1);
    EXPECT_GT(w.winner.gbps, 0);
  }
  // A second run resumes every key and measures nothing; all kernels come from the cache.
  const auto again = tune::run_tuning(o);
  ASSERT_EQ(again.keys.size(), 6u);
  for (const auto& k : again.keys) {
    EXPECT_TRUE(k.resumed);
    ASSERT_TRUE(k.stored);
  }
  o.retune = true;
  o.sizes = {1000};
  o.dtypes = {DType::bf16};
  const auto re = tune::run_tuning(o);
  EXPECT_EQ(re.kernels_compiled, 0);
  EXPECT_GT(re.kernels_cached, 0);
  std::filesystem::remove_all(dir);
}

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

struct CmdResult {
  int code;
  std::string out;
};

CmdResult run_cli(const std::string& args, const std::string& env = "") {
  FILE* p = popen((env + std::string(AMAX_TUNE_EXE) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

}  // namespace

// A tune restricted to one strategy over the full space (what `amax-tune --full --strategies
// first_reset_warp` runs): every first_reset_warp variant of the full space (560 bf16, 420 fp32 on
// NVIDIA: threads 32-512) passes the tuner's adversarial verification and times ok, one per
// distinct launch, and only that strategy is tuned.
TEST(GpuTuner, StrategiesRestrictTheSpaceAndEveryVariantOfTheStrategyInTheFullSpaceVerifies) {
  Vendor v;
  if (!first_available_vendor(v)) GTEST_SKIP() << "no GPU present, GPU test skipped";
  const ArchInfo arch = ArchInfo::parse(make_backend(v, 0)->device().arch);
  if (arch.vendor != Vendor::nvidia) GTEST_SKIP() << "the counts below are NVIDIA's (wave 32)";
  constexpr Strategy kOnly = Strategy::first_reset_warp;
  const auto dir =
      std::filesystem::temp_directory_path() / ("amax-tuner-frw-" + std::to_string(std::random_device{}()));
  tune::TuneOptions o;
  o.arch = arch.name;
  o.dtypes = {DType::bf16, DType::fp32};
  o.sizes = {1u << 20};
  o.groups = std::vector<tune::GroupSpec>{};  // single tensors only
  o.space = SpaceKind::full;
  o.strategies = {kOnly};
  o.db_path = dir / "tuning.db";
  o.cache_dir = dir / "kernels";
  o.progress = false;
  const auto r = tune::run_tuning(o);
  ASSERT_EQ(r.keys.size(), 2u);
  const auto cu = static_cast<std::uint32_t>(r.device.cu_count);
  for (const auto& k : r.keys) {
    std::vector<KernelConfig> only;
    for (const auto& c : tune::candidates(arch, k.dtype, SpaceKind::full))
      if (c.strategy == kOnly) only.push_back(c);
    EXPECT_EQ(only.size(), k.dtype == DType::bf16 ? 560u : 420u);
    EXPECT_EQ(k.variants.size(), tune::distinct_launches(only, k.dtype, k.n, cu).size());
    for (const auto& var : k.variants) {
      EXPECT_EQ(var.config.strategy, kOnly) << var.config.label();
      EXPECT_EQ(var.status, db::TrialStatus::ok) << var.config.label() << ": " << var.reason;
      EXPECT_EQ(var.launches, 1) << var.config.label();
    }
    ASSERT_GE(k.winner, 0) << to_string(k.dtype);
    EXPECT_EQ(k.variants[k.winner].config.strategy, kOnly);
  }
  std::filesystem::remove_all(dir);
}

TEST(GpuTuner, CheckReportsEveryKeyAndNeverChangesTheDatabaseWithoutRetune) {
  Vendor v;
  if (!first_available_vendor(v)) GTEST_SKIP() << "no GPU present, GPU test skipped";
  const auto dir = std::filesystem::temp_directory_path() / ("amax-check-test-" + std::to_string(std::random_device{}()));
  tune::TuneOptions o;
  o.arch = make_backend(v, 0)->device().arch;
  o.dtypes = {DType::bf16, DType::fp32};
  o.sizes = {1000, 1u << 20};
  o.db_path = dir / "tuning.db";
  o.cache_dir = dir / "kernels";
  o.progress = false;
  const auto tuned = tune::run_tuning(o);
  ASSERT_EQ(tuned.keys.size(), 4u);
  const std::string bytes = slurp(o.db_path);
  const auto mtime = std::filesystem::last_write_time(o.db_path);

  // The library: every key measured on this device, the winner first, its alternatives after it.
  tune::CheckOptions c;
  c.db_path = o.db_path;
  c.cache_dir = o.cache_dir;
  c.progress = false;
  const auto r = tune::run_check(c);
  ASSERT_EQ(r.entries.size(), 4u);
  EXPECT_EQ(r.measured, 4);
  EXPECT_EQ(r.skipped, 0);
  for (const auto& e : r.entries) {
    EXPECT_TRUE(e.skipped.empty()) << e.skipped;
    ASSERT_GE(e.variants.size(), 2u) << to_string(e.dtype) << " " << e.n;
    EXPECT_EQ(e.variants[0].label, e.winner);
    for (const auto& var : e.variants) EXPECT_EQ(var.now.samples, c.protocol.final_rounds) << var.label << var.problem;
    EXPECT_GE(e.regret, 1.0);
    EXPECT_EQ(e.holds, e.regret <= 1.05);
  }
  EXPECT_GE(r.geomean_regret, 1.0);
  EXPECT_LE(r.geomean_regret, r.max_regret);

  // The command line, twice: a table line per key and the summary; the file is unchanged.
  const CmdResult cli = run_cli("check -q --db " + o.db_path.string());
  EXPECT_TRUE(cli.code == 0 || cli.code == 1) << cli.out;
  for (const auto& k : tuned.keys)
    EXPECT_NE(cli.out.find(fmt::format("{:<5} {:>11} {}", to_string(k.dtype), k.n, k.variants[k.winner].config.label())),
              std::string::npos)
        << cli.out;
  EXPECT_NE(cli.out.find("summary: "), std::string::npos) << cli.out;
  EXPECT_EQ(cli.code == 0, cli.out.find("summary: 4 of 4 keys hold") != std::string::npos) << cli.out;
  const CmdResult filtered = run_cli("check -q --dtypes fp32 --sizes 1000 --db " + o.db_path.string());
  EXPECT_NE(filtered.out.find("1 entries of"), std::string::npos) << filtered.out;
  EXPECT_EQ(slurp(o.db_path), bytes) << "check without --retune changed the database";
  EXPECT_EQ(std::filesystem::last_write_time(o.db_path), mtime);
  std::filesystem::remove_all(dir);
}

// The node tune's plumbing on one GPU (issue 16): two workers on device 0 (allowed only with
// AMAX_TUNE_NODE_ALLOW_REPEAT, for this test; their timings share the GPU, so agreement is not
// asserted), each into its own database under <db>.node/, the report with both GPUs' winners per
// key, and the per-GPU databases merged into <db> next to an entry it already held.
TEST(GpuTuner, NodeTuneRunsOneWorkerPerListedGpuReportsAgreementAndMerges) {
  Vendor v;
  if (!first_available_vendor(v)) GTEST_SKIP() << "no GPU present, GPU test skipped";
  const auto dir = std::filesystem::temp_directory_path() / ("amax-node-test-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const auto db = dir / "tuning.db";
  // An entry the node tune does not touch: it must survive the merge.
  const CmdResult first = run_cli("--dtypes bf16 --sizes 4096 -q --db " + db.string());
  ASSERT_EQ(first.code, 0) << first.out;
  const CmdResult node = run_cli("--device 0,0 --dtypes fp32 --sizes 1000,2^20 --db " + db.string(),
                                 "AMAX_TUNE_NODE_ALLOW_REPEAT=1 ");
  ASSERT_EQ(node.code, 0) << node.out;
  EXPECT_NE(node.out.find("node tune of 2 GPUs (0, 0)"), std::string::npos) << node.out;
  EXPECT_NE(node.out.find("node agreement (2 GPUs; tie: "), std::string::npos) << node.out;
  EXPECT_NE(node.out.find(" keys agree"), std::string::npos) << node.out;
  EXPECT_NE(node.out.find("merged into " + db.string() + " (3 inputs)"), std::string::npos) << node.out;
  for (const char* f : {"gpu0.db", "gpu0-1.db", "gpu0.log", "gpu0-1.log", "gpu0.json", "report.json"})
    EXPECT_TRUE(std::filesystem::exists(dir / "tuning.db.node" / f)) << f;
  const auto report = nlohmann::json::parse(slurp(dir / "tuning.db.node" / "report.json"));
  ASSERT_EQ(report["keys"].size(), 2u) << report.dump(1);
  for (const auto& k : report["keys"]) {
    ASSERT_EQ(k["winners"].size(), 2u);
    for (const auto& w : k["winners"]) {
      EXPECT_EQ(w["device"], 0);
      EXPECT_FALSE(w["label"].get<std::string>().empty());
      EXPECT_GT(w["median_us"].get<double>(), 0.0);
      EXPECT_GT(w["samples"].get<int>(), 0);
    }
    EXPECT_GE(k["spread"].get<double>(), 1.0);
  }
  const CmdResult shown = run_cli("export --format csv --db " + db.string());
  ASSERT_EQ(shown.code, 0) << shown.out;
  for (const char* key : {",bf16,4096,", ",fp32,1000,", ",fp32,1048576,"})
    EXPECT_NE(shown.out.find(key), std::string::npos) << key << "\n" << shown.out;
  std::filesystem::remove_all(dir);
}

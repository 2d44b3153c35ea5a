// End-to-end tuning of a small grid on the GPU into a fresh database (label `gpu`).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "amax/backend.hpp"
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
  const std::size_t expect_variants = enumerate_space(ArchInfo::parse(o.arch), DType::bf16, SpaceKind::pruned).size() + 2;
  for (const auto& k : r.keys) {
    EXPECT_FALSE(k.resumed);
    ASSERT_GE(k.winner, 0) << to_string(k.dtype) << " " << k.n;
    EXPECT_EQ(k.variants.size(), expect_variants);
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
  auto db = db::TuningDb::open(o.db_path, db::OpenMode::ReadOnly);
  const auto winners = db.winners();
  ASSERT_EQ(winners.size(), 6u);
  for (const auto& w : winners) {
    EXPECT_EQ(w.provenance.arch, o.arch);
    const auto trials = db.trials(w.key);
    EXPECT_EQ(trials.size(), expect_variants);
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

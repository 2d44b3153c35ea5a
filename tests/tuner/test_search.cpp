// The search strategy's decisions on synthetic samples from a fake SampleSource (no GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "amax/launch.hpp"
#include "amax/search.hpp"
#include "amax/tuner.hpp"

using namespace amax;
using namespace amax::tune;

namespace {

// Every variant's batches take a fixed per-call time: times[i] (its label order), or throw
// BackendError for the indices in `fail`.
struct FixedSource : SampleSource {
  std::map<std::size_t, double> times;
  std::set<std::size_t> fail;
  std::map<std::size_t, int> batches_taken;
  int recovered = 0;
  std::vector<double> sample(std::size_t i, int batches, bool) override {
    if (fail.count(i)) throw BackendError("cuLaunchKernel", 700, "launch of variant " + std::to_string(i) + " failed");
    batches_taken[i] += batches;
    return std::vector<double>(static_cast<std::size_t>(batches), times.at(i));
  }
  std::vector<std::vector<double>> rounds(const std::vector<std::size_t>& which, int rounds, bool) override {
    std::vector<std::vector<double>> out;
    for (std::size_t i : which) out.emplace_back(static_cast<std::size_t>(rounds), times.at(i));
    return out;
  }
  void recover() override { ++recovered; }
};

std::vector<VariantResult> results(const std::vector<std::string>& labels) {
  std::vector<VariantResult> v;
  for (const auto& l : labels) v.push_back(VariantResult{KernelConfig::parse(l)});
  return v;
}

}  // namespace

TEST(Search, ScreeningStopsClearlySlowerVariantsAfterOneBatchAndRecordsLaunchFailures) {
  auto v = results({"atomic.t256.v8.u2.b8cu", "atomic.t512.v8.u2.b8cu", "one_pass.t256.v8.u2.b8cu",
                    "two_stage.t256.v8.u2.b8cu", "one_pass.t128.v8.u2.b8cu"});
  v[4].status = db::TrialStatus::compile_failed;
  FixedSource src;
  src.times = {{0, 10.0}, {1, 14.9}, {2, 15.1}, {3, 9.0}, {4, 1.0}};
  src.fail = {};
  TimingProtocol p;  // screen 3 batches, early stop at 1.5x
  screen(v, p, src);
  EXPECT_EQ(src.batches_taken[0], 3);
  EXPECT_EQ(src.batches_taken[1], 3);   // 14.9 <= 1.5 x 10
  EXPECT_EQ(src.batches_taken[2], 1);   // 15.1 > 1.5 x 10: one batch is its sample
  EXPECT_EQ(src.batches_taken[3], 3);
  EXPECT_EQ(src.batches_taken.count(4), 0u);  // not compiled: never timed
  EXPECT_EQ(v[2].stats.samples, 1);
  EXPECT_DOUBLE_EQ(v[3].stats.median_us, 9.0);
  EXPECT_EQ(v[4].stats.samples, 0);

  auto w = results({"atomic.t256.v8.u2.b8cu", "one_pass.t256.v8.u2.b8cu"});
  FixedSource bad;
  bad.times = {{1, 5.0}};
  bad.fail = {0};
  screen(w, p, bad);
  EXPECT_EQ(w[0].status, db::TrialStatus::launch_failed);
  EXPECT_EQ(w[0].reason, "launch of variant 0 failed");
  EXPECT_EQ(bad.recovered, 1);
  EXPECT_EQ(w[1].status, db::TrialStatus::ok);
}

TEST(Search, FinalistsAreTheFastestFewTheBestOfEachStrategyAndTheTransformerEngineBaselines) {
  const auto te = transformer_engine_baselines(DType::bf16);
  ASSERT_EQ(te.size(), 2u);
  EXPECT_EQ(te[0].label(), "atomic.t512.v8.u2.b65535");
  EXPECT_EQ(te[1].strategy, Strategy::two_stage);
  auto v = results({"one_pass.t256.v8.u1.b8cu", "one_pass.t256.v8.u2.b8cu", "one_pass.t256.v8.u4.b8cu",
                    "atomic.t256.v8.u2.b8cu", "two_stage.t256.v8.u2.b8cu", te[0].label(), te[1].label(),
                    "atomic.t128.v8.u2.b8cu", "self_reset.t512.v8.u2.b8cu"});
  const double med[] = {1, 2, 3, 7, 9, 8, 10, 6, 11};
  for (std::size_t i = 0; i < v.size(); ++i) v[i].stats = Stats::of({med[i]});
  v[7].status = db::TrialStatus::wrong_result;  // fastest atomic, but wrong: never a finalist
  TimingProtocol p;
  p.finalists = 2;
  EXPECT_EQ(finalists(v, p, DType::bf16), (std::set<std::size_t>{0, 1, 3, 4, 5, 6, 8}));  // 8: the only self_reset
}

TEST(Search, CandidatesAreTheSpacePlusTheBaselinesNotInIt) {
  const auto arch = ArchInfo::parse("sm_90");
  const auto space = enumerate_space(arch, DType::fp32, SpaceKind::pruned);
  const auto c = candidates(arch, DType::fp32, SpaceKind::pruned);
  EXPECT_EQ(c.size(), space.size() + 2);
  EXPECT_EQ(c[c.size() - 2], transformer_engine_baselines(DType::fp32)[0]);
  EXPECT_EQ(c.back(), transformer_engine_baselines(DType::fp32)[1]);
}

TEST(Measure, GbpsSizeGridsAndMemoryFit) {
  EXPECT_DOUBLE_EQ(gbps(4'000'000, 2.0), 2000.0);  // 4 MB in 2 us = 2 TB/s
  EXPECT_EQ(gbps(1024, 0.0), 0.0);
  const auto p2 = power_of_two_sizes();
  ASSERT_EQ(p2.size(), 21u);
  EXPECT_EQ(p2.front(), 1024u);
  EXPECT_EQ(p2.back(), 1ull << 30);
  const auto d = default_sizes();
  ASSERT_EQ(d.size(), 26u);
  EXPECT_EQ(d[0], 1000u);
  EXPECT_EQ(d[1], 1024u);
  DeviceInfo dev;
  dev.name = "Tiny GPU";
  dev.memory_bytes = 4ull << 30;
  dev.l2_bytes = 64ull << 20;
  const std::uint64_t max = max_input_elements(dev, DType::fp32);
  EXPECT_EQ(max, ((4ull << 30) - 5 * (64ull << 20) - (1ull << 30)) / 4);
  EXPECT_EQ(fit_error(dev, DType::fp32, max), "");
  EXPECT_EQ(fit_error(dev, DType::fp32, 1ull << 30),
            "fp32 n=1073741824 (4 GiB) does not fit in the 4 GiB of Tiny GPU with room for rotating inputs; "
            "choose smaller --sizes");
}

namespace {

std::vector<double> constant(double us, int n = 15) { return std::vector<double>(static_cast<std::size_t>(n), us); }

// 15 samples of median 10 and interquartile range exactly 1.0 (9, 9.5, 10, 10.5, 11, three times).
std::vector<double> spread_one(double shift = 0) {
  std::vector<double> v;
  for (int k = 0; k < 3; ++k)
    for (double x : {9.0, 9.5, 10.0, 10.5, 11.0}) v.push_back(x + shift);
  return v;
}

// Interleaved rounds from fixed per-variant samples: first[i] in the final pass, second[i] in the
// confirmation; records which variants each pass asked for.
struct ScriptedSource : SampleSource {
  std::map<std::size_t, std::vector<double>> first, second;
  std::vector<std::size_t> asked_first, asked_second;
  std::vector<double> sample(std::size_t, int, bool) override { throw std::logic_error("not used"); }
  std::vector<std::vector<double>> rounds(const std::vector<std::size_t>& which, int rounds, bool confirm) override {
    (confirm ? asked_second : asked_first) = which;
    std::vector<std::vector<double>> out;
    for (std::size_t i : which) {
      out.push_back((confirm ? second : first).at(i));
      EXPECT_EQ(out.back().size(), static_cast<std::size_t>(rounds));
    }
    return out;
  }
};

// A key of variants with their launches per call, all finalists.
KeyResult key_of(const std::vector<std::pair<std::string, int>>& labels_launches) {
  KeyResult k;
  k.dtype = DType::bf16;
  k.n = 1 << 20;
  for (const auto& [l, launches] : labels_launches) {
    VariantResult r{KernelConfig::parse(l)};
    r.launches = launches;
    k.variants.push_back(r);
  }
  return k;
}

}  // namespace

TEST(TieRule, MarginOfOnePercentWhenSamplesAreSteady) {
  const TieRule rule;
  const Stats a = Stats::of(constant(10.0));
  EXPECT_DOUBLE_EQ(rule.threshold_us(a, Stats::of(constant(10.09))), 0.1);  // 1% of the faster median
  EXPECT_TRUE(rule.tied(a, Stats::of(constant(10.09))));
  EXPECT_TRUE(rule.tied(Stats::of(constant(10.09)), a));
  EXPECT_FALSE(rule.tied(a, Stats::of(constant(10.11))));
  EXPECT_EQ(rule.describe(),
            "tie: |median difference| <= max(1% x faster median, 2 x combined median SE (0.93 IQR / sqrt(samples)))");
}

TEST(TieRule, TwoStandardErrorsOfTheMedianDifferenceWhenSamplesSpread) {
  const TieRule rule;
  const Stats a = Stats::of(spread_one());
  ASSERT_DOUBLE_EQ(a.median_us, 10.0);
  ASSERT_DOUBLE_EQ(a.spread_us, 1.0);
  // se = 0.93 x 1.0 / sqrt(15) each; 2 x sqrt(2) x se = 0.6792 us.
  const double expect = 2 * std::sqrt(2.0) * 0.93 / std::sqrt(15.0);
  EXPECT_NEAR(rule.threshold_us(a, Stats::of(spread_one(0.6))), expect, 1e-12);
  EXPECT_TRUE(rule.tied(a, Stats::of(spread_one(0.6))));
  EXPECT_FALSE(rule.tied(a, Stats::of(spread_one(0.7))));
  // One steady variant against a spread one: only the spread one's error counts.
  EXPECT_NEAR(rule.threshold_us(a, Stats::of(constant(10.4))), 2 * 0.93 / std::sqrt(15.0), 1e-12);
  EXPECT_TRUE(rule.tied(a, Stats::of(constant(10.4))));   // 0.4 <= 0.480
  EXPECT_FALSE(rule.tied(a, Stats::of(constant(10.5))));  // 0.5 > 0.480
}

TEST(TieRule, TiedVariantsArePreferredByLaunchesThenSpreadThenMedian) {
  auto k = key_of({{"atomic.t256.v8.u2.b8cu", 2},       // fastest, 2 launches
                   {"one_pass.t256.v8.u2.b8cu", 1},     // tied, 1 launch, spread
                   {"one_pass.t512.v8.u2.b8cu", 1},     // tied, 1 launch, steady
                   {"two_stage.t256.v8.u2.b8cu", 2},    // 1.5% slower and steady: not tied
                   {"one_pass.t128.v8.u2.b8cu", 1}});   // tied, 1 launch, steady but slower
  k.variants[0].stats = Stats::of(constant(10.0));
  k.variants[1].stats = Stats::of(spread_one(0.05));
  k.variants[2].stats = Stats::of(constant(10.06));
  k.variants[3].stats = Stats::of(constant(10.15));
  k.variants[4].stats = Stats::of(constant(10.08));
  EXPECT_EQ(tie_set(k.variants, {0, 1, 2, 3, 4}), (std::vector<std::size_t>{2, 4, 1, 0}));
}

TEST(TieRule, AmongEqualLaunchesTheLowerHostCostInQuarterMicrosecondStepsComesBeforeSpread) {
  auto k = key_of({{"one_pass.t256.v8.u2.b8cu", 1},     // fastest, spread, host 2.00 us
                   {"one_pass.t512.v8.u2.b8cu", 1},     // tied, steady, host 2.60 us
                   {"self_reset.t256.v8.u2.b8cu", 1},   // tied, steady, host 2.05 us: the same step as 2.00
                   {"self_reset.t512.v8.u2.b8cu", 1},   // tied, steady, host unknown: last
                   {"atomic.t256.v8.u2.b8cu", 2}});     // tied, host 1.0 us, but two launches
  k.variants[0].stats = Stats::of(spread_one(0.0));
  k.variants[1].stats = Stats::of(constant(10.02));
  k.variants[2].stats = Stats::of(constant(10.04));
  k.variants[3].stats = Stats::of(constant(10.01));
  k.variants[4].stats = Stats::of(constant(10.03));
  k.variants[0].host_us = 2.00;
  k.variants[1].host_us = 2.60;
  k.variants[2].host_us = 2.05;
  k.variants[3].host_us = 0.0;
  k.variants[4].host_us = 1.0;
  EXPECT_EQ(tie_set(k.variants, {0, 1, 2, 3, 4}), (std::vector<std::size_t>{2, 0, 1, 3, 4}));
  // Host costs more than half a step apart decide even against a steadier variant.
  k.variants[2].host_us = 2.20;
  EXPECT_EQ(tie_set(k.variants, {0, 1, 2, 3, 4}), (std::vector<std::size_t>{0, 2, 1, 3, 4}));
}

// ScriptedSource that also reports a host cost per variant.
struct HostCostSource : ScriptedSource {
  std::map<std::size_t, double> host;
  double host_us(std::size_t i) const override { return host.count(i) ? host.at(i) : 0.0; }
};

TEST(SelectWinner, TakesTheHostCostsOfTheSourceAndPrefersTheCheaperOfTiedVariants) {
  auto k = key_of({{"one_pass.t256.v8.u2.b8cu", 1}, {"self_reset.t256.v8.u2.b8cu", 1}, {"atomic.t256.v8.u2.b8cu", 2}});
  HostCostSource src;
  src.first = {{0, constant(10.0)}, {1, constant(10.03)}, {2, constant(9.98)}};
  src.second = src.first;
  src.host = {{0, 3.1}, {1, 2.4}, {2, 1.9}};
  TimingProtocol p;
  const std::set<std::size_t> fin{0, 1, 2};
  const auto samples = final_pass(k.variants, fin, p, src);
  EXPECT_DOUBLE_EQ(k.variants[0].host_us, 3.1);
  select_winner(k, fin, samples, p, src);
  // All three tie in GPU time (within 1%); one launch beats two, then 2.4 us of host cost beats 3.1.
  EXPECT_EQ(k.tie_set, (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_EQ(k.winner, 1);
  EXPECT_EQ(k.confirmation, Confirmation::agreed);
  EXPECT_DOUBLE_EQ(k.variants[1].host_us, 2.4);
}

TEST(SelectWinner, ConfirmationThatAgreesKeepsThePreferredTiedVariant) {
  auto k = key_of({{"atomic.t256.v8.u2.b8cu", 2}, {"one_pass.t256.v8.u2.b8cu", 1}, {"two_stage.t256.v8.u2.b8cu", 2},
                   {"one_pass.t512.v8.u2.b8cu", 1}});
  ScriptedSource src;
  src.first = {{0, constant(10.0)}, {1, constant(10.05)}, {2, constant(10.5)}, {3, constant(11.0)}};
  src.second = {{1, constant(10.02)}, {0, constant(10.0)}, {2, constant(10.4)}};
  TimingProtocol p;
  const std::set<std::size_t> fin{0, 1, 2, 3};
  const auto samples = final_pass(k.variants, fin, p, src);
  select_winner(k, fin, samples, p, src);
  EXPECT_EQ(k.winner, 1);  // one launch, tied with the 0.5% faster atomic variant
  EXPECT_EQ(k.tie_set, (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(k.confirmation, Confirmation::agreed);
  // The confirmation: the winner, the rest of its tie set, the fastest finalist outside it.
  EXPECT_EQ(src.asked_second, (std::vector<std::size_t>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(k.variants[1].confirm.median_us, 10.02);
  EXPECT_EQ(k.variants[3].confirm.samples, 0);
  EXPECT_EQ(k.variants[1].tie_rank, 0);
  EXPECT_EQ(k.variants[0].tie_rank, 1);
  EXPECT_EQ(k.variants[2].tie_rank, -1);
  EXPECT_EQ(k.variants[3].tie_rank, -1);
  EXPECT_DOUBLE_EQ(k.variants[1].stats.median_us, 10.05);  // final-pass stats kept
  EXPECT_EQ(k.variants[1].stats.samples, 15);
}

TEST(SelectWinner, ConfirmationThatDisagreesIsResolvedOnThePooledSamples) {
  auto k = key_of({{"atomic.t256.v8.u2.b8cu", 2}, {"one_pass.t256.v8.u2.b8cu", 1}, {"two_stage.t256.v8.u2.b8cu", 2}});
  ScriptedSource src;
  src.first = {{0, constant(10.0)}, {1, constant(10.05)}, {2, constant(10.3)}};
  src.second = {{1, constant(11.0)}, {0, constant(10.0)}, {2, constant(10.3)}};  // the winner was lucky
  TimingProtocol p;
  const std::set<std::size_t> fin{0, 1, 2};
  const auto samples = final_pass(k.variants, fin, p, src);
  select_winner(k, fin, samples, p, src);
  EXPECT_EQ(k.confirmation, Confirmation::pooled);
  // Pooled: variant 1 has 15 x 10.05 and 15 x 11.0 (median 10.525, IQR 0.95: threshold 0.32 us),
  // variant 0 30 x 10.0, variant 2 30 x 10.3 (3% slower, steady): only variant 0 is left.
  EXPECT_EQ(k.winner, 0);
  EXPECT_EQ(k.tie_set, (std::vector<std::size_t>{0}));
  EXPECT_DOUBLE_EQ(k.variants[1].stats.median_us, 10.525);
  EXPECT_EQ(k.variants[0].stats.samples, 30);
  EXPECT_EQ(k.variants[0].tie_rank, 0);
  EXPECT_EQ(k.variants[1].tie_rank, -1);
  EXPECT_EQ(k.confirmation_note,
            "confirmation disagreed (one_pass.t256.v8.u2.b8cu 11.00 us against atomic.t256.v8.u2.b8cu 10.00 us): "
            "pooled samples chose atomic.t256.v8.u2.b8cu (10.00 us)");
}

TEST(SelectWinner, ASingleFinalistNeedsNoConfirmationAndNoneMeansNoSecondMeasurement) {
  auto k = key_of({{"atomic.t256.v8.u2.b8cu", 2}});
  ScriptedSource src;
  src.first = {{0, constant(10.0)}};
  TimingProtocol p;
  auto samples = final_pass(k.variants, {0}, p, src);
  select_winner(k, {0}, samples, p, src);
  EXPECT_EQ(k.winner, 0);
  EXPECT_EQ(k.confirmation, Confirmation::none);
  EXPECT_TRUE(src.asked_second.empty());

  auto two = key_of({{"atomic.t256.v8.u2.b8cu", 2}, {"one_pass.t256.v8.u2.b8cu", 1}});
  ScriptedSource s2;
  s2.first = {{0, constant(10.0)}, {1, constant(12.0)}};
  p.confirm_rounds = 0;
  samples = final_pass(two.variants, {0, 1}, p, s2);
  select_winner(two, {0, 1}, samples, p, s2);
  EXPECT_EQ(two.winner, 0);  // 20% faster: no tie, the lower median wins
  EXPECT_EQ(two.confirmation, Confirmation::none);
  EXPECT_TRUE(s2.asked_second.empty());
}

TEST(Search, DistinctLaunchesTimeEachGridOfAKernelOnceKeepingTheBaselines) {
  const ArchInfo h200 = ArchInfo::parse("sm_90");
  for (DType d : {DType::bf16, DType::fp32})
    for (std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{1} << 20, std::uint64_t{1} << 30}) {
      const auto cands = candidates(h200, d, SpaceKind::pruned);
      const auto keep = distinct_launches(cands, d, n, 132);
      ASSERT_FALSE(keep.empty());
      EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
      // Every candidate has exactly one kept variant of the same kernel and grid, and no two kept
      // variants share a kernel and a grid.
      std::map<std::pair<std::string, std::uint32_t>, int> kept;
      for (std::size_t i : keep) {
        KernelConfig c = cands[i];
        c.max_blocks = BlockCap::uncapped();
        ++kept[{c.label(), launch_shape(cands[i], n, 132).grid}];
      }
      for (const auto& [cls, count] : kept) EXPECT_EQ(count, 1) << cls.first << " grid " << cls.second;
      for (const auto& c : cands) {
        KernelConfig u = c;
        u.max_blocks = BlockCap::uncapped();
        EXPECT_EQ(kept.count({u.label(), launch_shape(c, n, 132).grid}), 1u) << c.label() << " n=" << n;
      }
      // TransformerEngine's configurations are always among them (the report compares against them).
      for (const auto& te : transformer_engine_baselines(d))
        EXPECT_NE(std::find_if(keep.begin(), keep.end(), [&](std::size_t i) { return cands[i] == te; }), keep.end())
            << te.label() << " n=" << n;
      if (n == 1000) {
        EXPECT_LT(keep.size(), cands.size() / 2) << to_string(d);  // small n: most caps give one grid
      }
    }
}

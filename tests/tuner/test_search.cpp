// The search strategy's decisions on synthetic samples from a fake SampleSource (no GPU).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

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

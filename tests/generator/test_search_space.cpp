#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "amax/search_space.hpp"

using namespace amax;

TEST(SearchSpace, PrunedSpaceSizes) {
  // atomic, two_stage, one_pass: threads {128,256,512,1024} x one 16-byte nvec x unroll {1,2,4,8}
  // x 5 caps = 80 each; self_reset: threads {256,512,1024} x unroll 4 x caps {4,8,16 per CU,
  // uncapped} = 48.
  for (const char* arch : {"sm_90", "gfx942:sramecc+:xnack-"})
    for (const auto& d : all_dtypes()) {
      const auto space = enumerate_space(ArchInfo::parse(arch), d.dtype, SpaceKind::pruned);
      EXPECT_EQ(space.size(), 288u) << arch << " " << d.name;
      EXPECT_EQ(distinct_kernels(space).size(), 60u);
      std::map<Strategy, int> per;
      for (const auto& c : space) {
        EXPECT_EQ(c.nvec * d.bytes, 16u) << c.label();
        ++per[c.strategy];
      }
      EXPECT_EQ(per[Strategy::atomic], 80);
      EXPECT_EQ(per[Strategy::two_stage], 80);
      EXPECT_EQ(per[Strategy::one_pass], 80);
      EXPECT_EQ(per[Strategy::self_reset], 48);
    }
  const auto space = enumerate_space(ArchInfo::parse("sm_90"), DType::bf16, SpaceKind::pruned);
  EXPECT_NE(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t512.v8.u2.b16cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t128.v8.u2.b16cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t512.v8.u2.b2cu")), space.end());
}

TEST(SearchSpace, FullSpaceSizesAndEveryPointValid) {
  // 4 strategies. NVIDIA: threads 32..1024 (6); AMD CDNA: 64..1024 (5). nvec: fp32 {1,2,4}, 16-bit {1,2,4,8}.
  // unroll 4 values, caps 6 per-CU + uncapped = 7.
  const struct {
    const char* arch;
    DType dtype;
    std::size_t expect;
  } cases[] = {{"sm_90", DType::fp32, 4 * 6 * 3 * 4 * 7},
               {"sm_90", DType::bf16, 4 * 6 * 4 * 4 * 7},
               {"gfx90a", DType::fp32, 4 * 5 * 3 * 4 * 7},
               {"gfx942:sramecc+:xnack-", DType::fp16, 4 * 5 * 4 * 4 * 7}};
  for (const auto& c : cases) {
    const auto arch = ArchInfo::parse(c.arch);
    const auto space = enumerate_space(arch, c.dtype, SpaceKind::full);
    EXPECT_EQ(space.size(), c.expect) << c.arch;
    std::set<std::string> labels;
    for (const auto& k : space) {
      EXPECT_FALSE(k.validate(arch, c.dtype)) << k.label();
      labels.insert(k.label());
    }
    EXPECT_EQ(labels.size(), space.size()) << "duplicate labels";
  }
}

TEST(SearchSpace, AmdSpaceHasNoSubWaveBlocks) {
  for (const auto& c : enumerate_space(ArchInfo::parse("gfx90a"), DType::bf16, SpaceKind::full))
    EXPECT_EQ(c.threads % 64, 0u) << c.label();
}

TEST(SearchSpace, TransformerEngineConfigIs32BytesPerThreadPerIteration) {
  for (const auto& d : all_dtypes()) {
    const auto c = transformer_engine_config(d.dtype, Strategy::atomic);
    EXPECT_EQ(c.threads, 512u);
    EXPECT_EQ(c.nvec * c.unroll * d.bytes, 32u);
    EXPECT_EQ(c.max_blocks, BlockCap::absolute(65535));
    EXPECT_FALSE(c.validate(ArchInfo::parse("sm_90"), d.dtype));
  }
  EXPECT_EQ(transformer_engine_config(DType::bf16, Strategy::atomic).label(), "atomic.t512.v8.u2.b65535");
  EXPECT_EQ(transformer_engine_config(DType::fp32, Strategy::two_stage).label(),
            "two_stage.t512.v4.u2.b65535");
}

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "amax/search_space.hpp"

using namespace amax;

TEST(SearchSpace, PrunedSpaceSizes) {
  // atomic, two_stage, one_pass: threads {128,256,512,1024} x one 16-byte nvec x unroll {1,2,4,8}
  // x 5 caps = 80 each; self_reset: threads {256,512,1024} x unroll 4 x caps {4,8,16 per CU,
  // uncapped} = 48; first_reset: threads {256,512,1024} x unroll {1,2,4} x
  // caps {2,4,8 per CU, uncapped} = 36 from 9 kernels; first_reset_warp the same but 1024 threads
  // (no room for its ticket wave) = 24 from 6 kernels.
  for (const char* arch : {"sm_90", "gfx942:sramecc+:xnack-"})
    for (const auto& d : all_dtypes()) {
      const auto space = enumerate_space(ArchInfo::parse(arch), d.dtype, SpaceKind::pruned);
      EXPECT_EQ(space.size(), 348u) << arch << " " << d.name;
      EXPECT_EQ(distinct_kernels(space).size(), 75u);
      std::map<Strategy, int> per;
      for (const auto& c : space) {
        EXPECT_EQ(c.nvec * d.bytes, 16u) << c.label();
        ++per[c.strategy];
      }
      EXPECT_EQ(per[Strategy::atomic], 80);
      EXPECT_EQ(per[Strategy::two_stage], 80);
      EXPECT_EQ(per[Strategy::one_pass], 80);
      EXPECT_EQ(per[Strategy::self_reset], 48);
      EXPECT_EQ(per[Strategy::first_reset], 36);
      EXPECT_EQ(per[Strategy::first_reset_warp], 24);
    }
  const auto space = enumerate_space(ArchInfo::parse("sm_90"), DType::bf16, SpaceKind::pruned);
  EXPECT_NE(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t512.v8.u2.b16cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t128.v8.u2.b16cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("self_reset.t512.v8.u2.b2cu")), space.end());
  EXPECT_NE(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset.t256.v8.u1.b2cu")), space.end());
  EXPECT_NE(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset.t1024.v8.u4.buncapped")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset.t128.v8.u2.b4cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset.t512.v8.u8.b4cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset.t512.v8.u2.b16cu")), space.end());
  EXPECT_NE(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset_warp.t512.v8.u2.b4cu")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), KernelConfig::parse("first_reset_warp.t1024.v8.u2.b4cu")), space.end());
}

TEST(SearchSpace, FullSpaceSizesAndEveryPointValid) {
  // 5 strategies and first_reset_warp. NVIDIA: threads 32..1024 (6; first_reset_warp 32..512, 5);
  // AMD CDNA: 64..1024 (5; first_reset_warp 4). nvec: fp32 {1,2,4}, 16-bit {1,2,4,8}. unroll 4
  // values, caps 6 per-CU + uncapped = 7.
  const struct {
    const char* arch;
    DType dtype;
    std::size_t expect;
  } cases[] = {{"sm_90", DType::fp32, 5 * 6 * 3 * 4 * 7 + 5 * 3 * 4 * 7},
               {"sm_90", DType::bf16, 5 * 6 * 4 * 4 * 7 + 5 * 4 * 4 * 7},
               {"sm_80", DType::bf16, 5 * 6 * 4 * 4 * 7 + 5 * 4 * 4 * 7},
               {"gfx90a", DType::fp32, 5 * 5 * 3 * 4 * 7 + 4 * 3 * 4 * 7},
               {"gfx942:sramecc+:xnack-", DType::fp16, 5 * 5 * 4 * 4 * 7 + 4 * 4 * 4 * 7}};
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

// Every strategy is in the pruned space and runs on every arch: emit --list has nothing to say
// about what the space leaves out (space_notes).
TEST(SearchSpace, NoNotesWhereEveryStrategyRunsEverywhere) {
  for (const char* arch : {"sm_90", "sm_80", "gfx942"})
    for (SpaceKind kind : {SpaceKind::pruned, SpaceKind::full})
      EXPECT_TRUE(space_notes(ArchInfo::parse(arch), kind).empty()) << arch;
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

TEST(RecordedExclusions, TakeAKernelOutOfItsTargetsSpaceOnlyWithTheReason) {
  const RecordedExclusion table[] = {
      {"gfx942", DType::bf16, "one_pass.t1024.v8.u8", "spills 4 registers", "hipRTC 6.4.43484"},
      {"gfx950:xnack+", DType::fp32, "atomic.t128.v4.u1", "a block needs 1 waves per SIMD", "hipRTC 6.4.43484"},
  };
  const KernelConfig hit = KernelConfig::parse("one_pass.t1024.v8.u8.b4cu");
  // Every target ID of the processor, every grid cap of the kernel; not another dtype or processor.
  for (const char* a : {"gfx942", "gfx942:sramecc+:xnack-", "gfx942:xnack+"}) {
    const auto why = exclusion_in(table, ArchInfo::parse(a), DType::bf16, hit);
    ASSERT_TRUE(why) << a;
    EXPECT_EQ(*why, "excluded on gfx942: spills 4 registers (measured with hipRTC 6.4.43484)");
  }
  EXPECT_TRUE(exclusion_in(table, ArchInfo::parse("gfx942"), DType::bf16, KernelConfig::parse("one_pass.t1024.v8.u8.buncapped")));
  EXPECT_FALSE(exclusion_in(table, ArchInfo::parse("gfx942"), DType::fp16, hit));
  EXPECT_FALSE(exclusion_in(table, ArchInfo::parse("gfx90a"), DType::bf16, hit));
  EXPECT_FALSE(exclusion_in(table, ArchInfo::parse("gfx942"), DType::bf16, KernelConfig::parse("one_pass.t1024.v8.u4.b4cu")));
  // A full target ID in the table applies to that target ID only.
  const KernelConfig a = KernelConfig::parse("atomic.t128.v4.u1.b2cu");
  EXPECT_TRUE(exclusion_in(table, ArchInfo::parse("gfx950:xnack+"), DType::fp32, a));
  EXPECT_FALSE(exclusion_in(table, ArchInfo::parse("gfx950"), DType::fp32, a));
  EXPECT_FALSE(exclusion_in(table, ArchInfo::parse("gfx950:xnack-"), DType::fp32, a));
}

TEST(RecordedExclusions, TheBuiltInTableLeavesNoPrunedKernelOutToday) {
  // The whole-space compile test (tests/jit) measured no spill and no missed block per CU on gfx90a,
  // gfx942 and gfx950; it fails when a compile disagrees with the table.
  for (const char* a : {"gfx90a", "gfx942:sramecc+:xnack-", "gfx942:xnack+", "gfx950", "sm_90"})
    for (const auto& d : all_dtypes()) {
      EXPECT_TRUE(space_exclusions(ArchInfo::parse(a), d.dtype, SpaceKind::pruned).empty()) << a << " " << d.name;
      EXPECT_EQ(enumerate_space(ArchInfo::parse(a), d.dtype, SpaceKind::pruned).size(),
                348u)
          << a << " " << d.name;
    }
}

TEST(AmdArchFacts, GiveTheLastLevelCacheAndTheRegisterFileWithSources) {
  const AmdArchFacts* mi300 = amd_arch_facts("gfx942");
  ASSERT_NE(mi300, nullptr);
  EXPECT_EQ(mi300->last_level_cache_bytes, 256ull << 20);  // Infinity Cache (MALL), not the 4 MB L2 per XCD
  EXPECT_EQ(mi300->lds_bytes_per_cu, 64u << 10);
  EXPECT_EQ(mi300->vgprs_per_simd_lane, 512);
  EXPECT_EQ(mi300->max_waves_per_simd, 8);
  EXPECT_FALSE(mi300->source.empty());
  const AmdArchFacts* mi355 = amd_arch_facts("gfx950");
  ASSERT_NE(mi355, nullptr);
  EXPECT_EQ(mi355->last_level_cache_bytes, 256ull << 20);
  EXPECT_EQ(mi355->lds_bytes_per_cu, 160u << 10);
  EXPECT_EQ(amd_arch_facts("gfx90a")->last_level_cache_bytes, 8ull << 20);
  EXPECT_EQ(amd_arch_facts("sm_90"), nullptr);
  EXPECT_EQ(amd_arch_facts("gfx942:xnack+"), nullptr) << "keyed by processor, not target ID";
}

#include <gtest/gtest.h>

#include <algorithm>

#include "amax/kernel_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"

using namespace amax;

TEST(KernelConfig, LabelHasEveryFieldInOrder) {
  KernelConfig c{Strategy::two_stage, 256, 8, 4, BlockCap::per_cu(8)};
  EXPECT_EQ(c.label(), "two_stage.t256.v8.u4.b8cu");
  EXPECT_EQ(c.kernel_label(), "two_stage.t256.v8.u4");
  EXPECT_EQ((KernelConfig{Strategy::atomic, 512, 4, 2, BlockCap::absolute(65535)}).label(),
            "atomic.t512.v4.u2.b65535");
  EXPECT_EQ((KernelConfig{Strategy::one_pass, 64, 1, 1, BlockCap::uncapped()}).label(),
            "one_pass.t64.v1.u1.buncapped");
  EXPECT_EQ((KernelConfig{Strategy::self_reset, 512, 8, 2, BlockCap::per_cu(16)}).label(),
            "self_reset.t512.v8.u2.b16cu");
  EXPECT_EQ(KernelConfig::parse("self_reset.t512.v8.u2.b16cu"),
            (KernelConfig{Strategy::self_reset, 512, 8, 2, BlockCap::per_cu(16)}));
  EXPECT_EQ(KernelConfig::parse("self_reset.t512.v8.u2.b16cu").kernel_label(), "self_reset.t512.v8.u2");
  EXPECT_EQ(kernel_name(KernelConfig::parse("self_reset.t512.v8.u2.b16cu"), DType::bf16),
            "amax_self_reset_t512_v8_u2_bf16");
}

// spin and the clustered variants (a trailing .cN) are retired (docs/tuning.md): their labels,
// as old databases and overrides hold them, no longer parse, and the error names the bad token.
TEST(KernelConfig, RetiredSpinAndClusterLabelsDoNotParse) {
  for (const auto& [label, expect] : {std::pair{"spin.t512.v8.u2.b4cu", "bad strategy field 'spin'"},
                                      std::pair{"self_reset.t512.v8.u2.b4cu.c8", "bad epilogue field 'c8'"},
                                      std::pair{"self_reset.t512.v8.u2.b4cu.scale.c8", "expected 5 to 6"}}) {
    try {
      KernelConfig::parse(label);
      ADD_FAILURE() << label << " parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(label), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(parse_strategy("spin"));
}

// The epilogue is the last field, left out of the label when it is the amax alone: every label
// written before the field existed still parses to the amax-only variant it named.
TEST(KernelConfig, EpilogueIsOmittedWhenAmaxOnlyAndEndsTheLabelWhenFused) {
  KernelConfig c{Strategy::two_stage, 256, 8, 4, BlockCap::per_cu(8)};
  EXPECT_EQ(c.epilogue, Epilogue::amax);
  EXPECT_EQ(KernelConfig::parse("two_stage.t256.v8.u4.b8cu"), c);
  EXPECT_EQ(KernelConfig::parse("two_stage.t256.v8.u4.b8cu").epilogue, Epilogue::amax);
  c.epilogue = Epilogue::scale;
  EXPECT_EQ(c.label(), "two_stage.t256.v8.u4.b8cu.scale");
  EXPECT_EQ(c.kernel_label(), "two_stage.t256.v8.u4.scale");
  EXPECT_EQ(KernelConfig::parse("two_stage.t256.v8.u4.b8cu.scale"), c);
  EXPECT_EQ(kernel_name(c, DType::bf16), "amax_two_stage_t256_v8_u4_scale_bf16");
  EXPECT_EQ(finish_kernel_name(c, DType::fp32), "amax_two_stage_t256_v8_u4_scale_fp32_finish");
  EXPECT_NE(c, KernelConfig::parse("two_stage.t256.v8.u4.b8cu"));
  EXPECT_EQ(to_string(Epilogue::scale), "scale");
  EXPECT_EQ(parse_epilogue("amax"), Epilogue::amax);
  EXPECT_EQ(parse_epilogue("fused"), std::nullopt);
}

TEST(KernelConfig, FusedLabelsRoundTripForEveryStrategy) {
  for (const auto& d : all_dtypes())
    for (KernelConfig c : enumerate_space(ArchInfo::parse("sm_90"), d.dtype, SpaceKind::full)) {
      ASSERT_EQ(c.epilogue, Epilogue::amax) << "the tuned space is amax-only: " << c.label();
      c.epilogue = Epilogue::scale;
      const std::string label = c.label();
      ASSERT_TRUE(label.ends_with(".scale")) << label;
      ASSERT_EQ(KernelConfig::parse(label), c) << label;
    }
}

// amax_and_scale's variant for a table choice: the scale epilogue on the same variant, except
// that atomic (memset + kernel) runs as self_reset of the same threads, nvec and unroll (one
// launch) with a grid of at most 4 blocks per CU (an uncapped or absolute atomic: unroll at least
// 8), where that self_reset variant is in the pruned space; elsewhere atomic is kept.
TEST(KernelConfig, FusedVariantKeepsTheShapeAndTurnsAtomicIntoSelfResetInsideThePrunedSpace) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90"), gfx942 = ArchInfo::parse("gfx942");
  auto fused = [&](const char* label, const ArchInfo& a = ArchInfo::parse("sm_90")) {
    return fused_variant(KernelConfig::parse(label), a, DType::bf16).label();
  };
  EXPECT_EQ(fused("atomic.t256.v8.u2.b4cu"), "self_reset.t256.v8.u2.b4cu.scale");
  // a larger grid cap (per CU, uncapped or absolute) lowered to 4 blocks per CU
  EXPECT_EQ(fused("atomic.t512.v8.u4.buncapped"), "self_reset.t512.v8.u8.b4cu.scale");
  EXPECT_EQ(fused("atomic.t512.v8.u8.buncapped"), "self_reset.t512.v8.u8.b4cu.scale");
  EXPECT_EQ(fused("atomic.t256.v8.u2.b8cu"), "self_reset.t256.v8.u2.b4cu.scale");
  EXPECT_EQ(fused("atomic.t512.v8.u2.b65535"), "self_reset.t512.v8.u8.b4cu.scale");
  EXPECT_EQ(fused("atomic.t1024.v8.u8.b16cu", gfx942), "self_reset.t1024.v8.u8.b4cu.scale");
  // outside the pruned self_reset space (threads < 256, 2 blocks per CU, nvec not 16 bytes):
  // atomic kept, with its own grid cap
  EXPECT_EQ(fused("atomic.t128.v8.u2.b4cu"), "atomic.t128.v8.u2.b4cu.scale");
  EXPECT_EQ(fused("atomic.t128.v8.u2.b16cu"), "atomic.t128.v8.u2.b16cu.scale");
  EXPECT_EQ(fused("atomic.t128.v8.u2.buncapped"), "atomic.t128.v8.u2.buncapped.scale");
  EXPECT_EQ(fused("atomic.t256.v8.u2.b2cu"), "atomic.t256.v8.u2.b2cu.scale");
  EXPECT_EQ(fused("atomic.t256.v4.u2.b4cu"), "atomic.t256.v4.u2.b4cu.scale");
  // the other strategies: the epilogue only
  EXPECT_EQ(fused("two_stage.t256.v8.u2.buncapped"), "two_stage.t256.v8.u2.buncapped.scale");
  EXPECT_EQ(fused("one_pass.t1024.v8.u8.b2cu"), "one_pass.t1024.v8.u8.b2cu.scale");
  EXPECT_EQ(fused("self_reset.t512.v8.u2.b16cu"), "self_reset.t512.v8.u2.b16cu.scale");
  EXPECT_EQ(fused("atomic.t256.v8.u2.b4cu.scale"), "self_reset.t256.v8.u2.b4cu.scale");  // already fused
  // first_reset has no scale epilogue: self_reset of its shape (its own unroll, uncapped too),
  // capped at 4 per CU, in or outside the pruned space
  EXPECT_EQ(fused("first_reset.t512.v8.u2.b2cu"), "self_reset.t512.v8.u2.b4cu.scale");
  EXPECT_EQ(fused("first_reset.t256.v8.u4.b4cu"), "self_reset.t256.v8.u4.b4cu.scale");
  EXPECT_EQ(fused("first_reset.t512.v8.u2.buncapped"), "self_reset.t512.v8.u2.b4cu.scale");
  EXPECT_EQ(fused("first_reset.t128.v4.u8.b16cu"), "self_reset.t128.v4.u8.b4cu.scale");
  EXPECT_EQ(fused("first_reset_warp.t512.v8.u2.b2cu"), "self_reset.t512.v8.u2.b4cu.scale");
  // every variant of the pruned and full spaces: only strategy, epilogue and (for a mapped one, to
  // at most 4 per CU) the grid cap differ, and the unroll of an uncapped or absolute atomic; a
  // mapped one is in the pruned space
  for (const ArchInfo& arch : {sm90, gfx942})
    for (DType d : {DType::fp32, DType::bf16}) {
      const auto pruned = enumerate_space(arch, d, SpaceKind::pruned);
      int mapped = 0;
      for (SpaceKind kind : {SpaceKind::pruned, SpaceKind::full})
        for (const KernelConfig& c : enumerate_space(arch, d, kind)) {
          const KernelConfig f = fused_variant(c, arch, d);
          EXPECT_EQ(f.validate(arch, d), std::nullopt) << c.label();
          EXPECT_EQ(f.epilogue, Epilogue::scale);
          if (f.strategy != c.strategy) {
            EXPECT_TRUE(c.strategy == Strategy::atomic || resets_first(c.strategy)) << c.label();
            EXPECT_EQ(f.strategy, Strategy::self_reset) << c.label();
            KernelConfig amax_only = f;
            amax_only.epilogue = Epilogue::amax;
            // atomic is mapped only into the pruned space; first_reset (no scale epilogue) always
            if (c.strategy == Strategy::atomic || kind == SpaceKind::pruned) {
              EXPECT_NE(std::find(pruned.begin(), pruned.end(), amax_only), pruned.end()) << c.label();
            }
            EXPECT_EQ(f.max_blocks.kind, BlockCap::Kind::per_cu) << c.label();
            EXPECT_LE(f.max_blocks.value, kFusedSelfResetBlocksPerCu) << c.label();
            if (c.max_blocks.kind == BlockCap::Kind::per_cu && c.max_blocks.value <= kFusedSelfResetBlocksPerCu) {
              // a smaller cap is kept (first_reset's only where self_reset's pruned space has it)
              if (c.strategy == Strategy::atomic || std::find(pruned.begin(), pruned.end(), amax_only) != pruned.end())
                EXPECT_TRUE(f.max_blocks == c.max_blocks || f.max_blocks == BlockCap::per_cu(kFusedSelfResetBlocksPerCu))
                    << c.label();
              if (c.strategy == Strategy::atomic) EXPECT_EQ(f.max_blocks, c.max_blocks) << c.label();
            }
            ++mapped;
          }
          KernelConfig back = f;
          if (f.strategy != c.strategy) {
            const bool raised = c.strategy == Strategy::atomic && c.max_blocks.kind != BlockCap::Kind::per_cu;
            EXPECT_EQ(f.unroll, raised ? std::max(c.unroll, kFusedSelfResetUnroll) : c.unroll) << c.label();
            back.unroll = c.unroll;
          }
          back.strategy = c.strategy;
          back.epilogue = c.epilogue;
          back.max_blocks = c.max_blocks;
          EXPECT_EQ(back, c);
        }
      EXPECT_GT(mapped, 0) << arch.name;
    }
}

TEST(KernelConfig, LabelRoundTripsOverTheFullSpaces) {
  std::size_t n = 0;
  for (const char* arch : {"sm_90", "gfx942:sramecc+:xnack-", "gfx1100"})
    for (const auto& d : all_dtypes())
      for (const auto& c : enumerate_space(ArchInfo::parse(arch), d.dtype, SpaceKind::full)) {
        const KernelConfig back = KernelConfig::parse(c.label());
        ASSERT_EQ(back, c) << c.label();
        ASSERT_EQ(back.label(), c.label());
        ++n;
      }
  EXPECT_GT(n, 3000u);
}

TEST(KernelConfig, ParseRejectsMalformedLabelsNamingTheField) {
  struct Case {
    const char* label;
    const char* expect;
  } cases[] = {
      {"", "expected 5 to 6 '.'-separated fields"},
      {"two_stage.t256.v8.u4", "expected 5 to 6 '.'-separated fields"},
      {"two_stage.t256.v8.u4.b8cu.scale.x", "expected 5 to 6 '.'-separated fields (strategy.tT.vN.uU.bB[.scale]"},
      {"two_stage.t256.v8.u4.b8cu.cx", "bad epilogue field 'cx'"},
      {"two_stage.t256.v8.u4.b8cu.x", "bad epilogue field 'x'"},
      {"two_stage.t256.v8.u4.b8cu.", "bad epilogue field ''"},
      {"two_stage.t256.v8.u4.b8cu.amax", "the epilogue field 'amax' is the default and is written by leaving it out"},
      {"three_stage.t256.v8.u4.b8cu", "bad strategy field 'three_stage'"},
      {"two_stage.256.v8.u4.b8cu", "bad threads field '256'"},
      {"two_stage.t256.v8.u4.b0cu", "bad max_blocks field 'b0cu'"},
      {"two_stage.t256.vx.u4.b8cu", "bad nvec field 'vx'"},
      {"two_stage.t256.v8.u-1.b8cu", "bad unroll field 'u-1'"},
      {"two_stage.t0256.v8.u4.b8cu", "bad threads field 't0256'"},
      {"two_stage.t99999999999.v8.u4.b8cu", "bad threads field"},
      {"two_stage.t256.v8.u4.bcu", "bad max_blocks field 'bcu'"},
  };
  for (const auto& c : cases) {
    try {
      KernelConfig::parse(c.label);
      ADD_FAILURE() << "accepted " << c.label;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos)
          << c.label << " -> " << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("'") + c.label + "'"), std::string::npos);
    }
  }
}

TEST(KernelConfig, ValidateGivesTheReason) {
  const auto sm90 = ArchInfo::parse("sm_90");
  const auto gfx942 = ArchInfo::parse("gfx942:sramecc+:xnack-");
  auto reason = [](const KernelConfig& c, const ArchInfo& a, DType d) {
    auto r = c.validate(a, d);
    return r ? *r : std::string("valid");
  };
  EXPECT_EQ(reason({Strategy::one_pass, 256, 4, 4, BlockCap::per_cu(8)}, sm90, DType::fp32), "valid");
  EXPECT_EQ(reason({Strategy::one_pass, 96, 4, 4, {}}, gfx942, DType::fp32),
            "one_pass.t96.v4.u4.buncapped: threads 96 is not a positive multiple of the wave size 64 "
            "of gfx942:sramecc+:xnack-");
  EXPECT_EQ(reason({Strategy::one_pass, 96, 4, 4, {}}, sm90, DType::fp32), "valid");
  EXPECT_EQ(reason({Strategy::one_pass, 32, 4, 4, {}}, gfx942, DType::fp32),
            "one_pass.t32.v4.u4.buncapped: threads 32 is not a positive multiple of the wave size 64 "
            "of gfx942:sramecc+:xnack-");
  EXPECT_EQ(reason({Strategy::atomic, 2048, 4, 1, {}}, sm90, DType::fp32),
            "atomic.t2048.v4.u1.buncapped: threads 2048 exceeds the block limit 1024 of sm_90");
  EXPECT_EQ(reason({Strategy::atomic, 256, 8, 1, {}}, sm90, DType::fp32),
            "atomic.t256.v8.u1.buncapped: vector of 8 x fp32 = 32 bytes exceeds 16 bytes");
  EXPECT_EQ(reason({Strategy::atomic, 256, 8, 1, {}}, sm90, DType::bf16), "valid");
  EXPECT_EQ(reason({Strategy::atomic, 256, 16, 1, {}}, sm90, DType::fp16),
            "atomic.t256.v16.u1.buncapped: vector of 16 x fp16 = 32 bytes exceeds 16 bytes");
  EXPECT_EQ(reason({Strategy::atomic, 256, 3, 1, {}}, sm90, DType::fp16),
            "atomic.t256.v3.u1.buncapped: nvec 3 is not a power of two");
  EXPECT_EQ(reason({Strategy::atomic, 256, 4, 3, {}}, sm90, DType::fp32),
            "atomic.t256.v4.u3.buncapped: unroll 3 is not a power of two in 1..16");
  EXPECT_EQ(reason({Strategy::atomic, 256, 4, 32, {}}, sm90, DType::fp32),
            "atomic.t256.v4.u32.buncapped: unroll 32 is not a power of two in 1..16");
  EXPECT_EQ(reason({Strategy::atomic, 256, 4, 1, BlockCap::per_cu(2000)}, sm90, DType::fp32),
            "atomic.t256.v4.u1.b2000cu: max blocks per CU 2000 is outside 1..1024");
}

TEST(KernelConfig, BlockCapResolvesAgainstTheCuCount) {
  EXPECT_EQ(BlockCap::per_cu(8).max_blocks(132), 1056u);
  EXPECT_EQ(BlockCap::per_cu(8).max_blocks(304), 2432u);
  EXPECT_EQ(BlockCap::absolute(65535).max_blocks(132), 65535u);
  EXPECT_EQ(BlockCap::uncapped().max_blocks(132), 0x7fffffffu);
}

TEST(KernelConfig, KernelNamesContainTheKernelLabel) {
  KernelConfig c{Strategy::two_stage, 256, 8, 4, BlockCap::per_cu(8)};
  EXPECT_EQ(kernel_name(c, DType::bf16), "amax_two_stage_t256_v8_u4_bf16");
  EXPECT_EQ(finish_kernel_name(c, DType::bf16), "amax_two_stage_t256_v8_u4_bf16_finish");
}

TEST(Arch, ParsesNvidiaAndAmdTargets) {
  const auto a = ArchInfo::parse("sm_90");
  EXPECT_EQ(a.vendor, Vendor::nvidia);
  EXPECT_EQ(a.wave_size, 32);
  const auto b = ArchInfo::parse("gfx942:sramecc+:xnack-");
  EXPECT_EQ(b.vendor, Vendor::amd);
  EXPECT_EQ(b.processor, "gfx942");
  EXPECT_EQ(b.wave_size, 64);
  EXPECT_EQ(ArchInfo::parse("gfx90a").wave_size, 64);
  EXPECT_EQ(ArchInfo::parse("gfx1100").wave_size, 32);
  for (const char* bad : {"", "sm_", "sm_9x", "gfx", "gfx942:sramecc", "cuda", "gfx90a::", "gfx942:foo+",
                          "gfx942:xnack", "gfx942:", "gfx942::xnack+", "gfx942:xnack+:", "gfx942:xnack+:xnack+",
                          "gfx942:xnack-:sramecc+", "gfx942:sramecc+:xnack-:xnack+"}) {
    try {
      ArchInfo::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Arch, TargetIdFeaturesAndWhichDeviceServesARequest) {
  const auto id = ArchInfo::parse("gfx942:sramecc+:xnack-");
  EXPECT_EQ(id.name, "gfx942:sramecc+:xnack-");
  EXPECT_EQ(id.feature("sramecc"), std::optional<bool>(true));
  EXPECT_EQ(id.feature("xnack"), std::optional<bool>(false));
  EXPECT_EQ(ArchInfo::parse("gfx942:xnack+").feature("sramecc"), std::nullopt);
  EXPECT_EQ(ArchInfo::parse("gfx942").feature("xnack"), std::nullopt);
  const auto req = [](const char* a, const char* dev) { return ArchInfo::parse(a).accepts(ArchInfo::parse(dev)); };
  EXPECT_TRUE(req("gfx942", "gfx942:sramecc+:xnack-"));
  EXPECT_TRUE(req("gfx942", "gfx942:xnack+"));
  EXPECT_TRUE(req("gfx942:xnack-", "gfx942:sramecc+:xnack-"));
  EXPECT_TRUE(req("gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-"));
  EXPECT_FALSE(req("gfx942:xnack-", "gfx942:sramecc+:xnack+"));
  EXPECT_FALSE(req("gfx942:xnack+", "gfx942:sramecc+:xnack-"));
  EXPECT_FALSE(req("gfx942:xnack+", "gfx942")) << "a device reporting no xnack setting does not promise xnack+";
  EXPECT_FALSE(req("gfx942", "gfx950"));
  EXPECT_FALSE(req("gfx942", "sm_90"));
  EXPECT_TRUE(req("sm_90", "sm_90"));
  EXPECT_FALSE(req("sm_90", "sm_90a"));
}

TEST(DType, NamesRoundTrip) {
  for (const auto& d : all_dtypes()) EXPECT_EQ(parse_dtype(d.name), d.dtype);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("half"), DType::fp16);
  EXPECT_FALSE(parse_dtype("fp8"));
  EXPECT_EQ(info(DType::fp16).bytes, 2u);
  EXPECT_EQ(dtype_from_name("bf16"), DType::bf16);
  EXPECT_FALSE(dtype_from_name("bfloat16"));  // exact canonical names only
  EXPECT_EQ(kDTypeCount, all_dtypes().size());
  for (std::size_t i = 0; i < kDTypeCount; ++i) EXPECT_EQ(index(all_dtypes()[i].dtype), i);
}

TEST(Strategy, TableGivesNamesAndParsing) {
  ASSERT_EQ(std::size(kStrategies), 6u);
  for (std::size_t i = 0; i < std::size(kStrategies); ++i) {
    const auto& s = kStrategies[i];
    EXPECT_EQ(static_cast<std::size_t>(s.value), i);
    EXPECT_EQ(to_string(s.value), s.name);
    EXPECT_EQ(parse_strategy(s.name), s.value);
  }
  EXPECT_EQ(info(Strategy::two_stage).macro, "AMAX_STRATEGY_TWO_STAGE");
  EXPECT_EQ(info(Strategy::self_reset).name, "self_reset");
  EXPECT_EQ(info(Strategy::self_reset).macro, "AMAX_STRATEGY_SELF_RESET");
  EXPECT_FALSE(parse_strategy("ONE_PASS"));
  EXPECT_FALSE(parse_strategy("spin"));
}

// first_reset: label, parsing and #defines from the field list; valid on every vendor without the
// scale epilogue, the refusal naming its reason.
TEST(KernelConfig, FirstResetLabelsParseValidateAndDefine) {
  const KernelConfig c{Strategy::first_reset, 512, 8, 2, BlockCap::uncapped()};
  EXPECT_EQ(static_cast<int>(Strategy::first_reset), 4);
  EXPECT_EQ(info(Strategy::first_reset).macro, "AMAX_STRATEGY_FIRST_RESET");
  EXPECT_EQ(c.label(), "first_reset.t512.v8.u2.buncapped");
  EXPECT_EQ(c.kernel_label(), "first_reset.t512.v8.u2");
  EXPECT_EQ(KernelConfig::parse("first_reset.t512.v8.u2.buncapped"), c);
  EXPECT_EQ(c.compile_time_defines(),
            "#define AMAX_STRATEGY AMAX_STRATEGY_FIRST_RESET\n#define AMAX_THREADS 512\n#define AMAX_NVEC 8\n"
            "#define AMAX_UNROLL 2\n#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n");
  for (const char* arch : {"sm_80", "sm_90", "sm_100", "gfx90a", "gfx942", "gfx950"})
    EXPECT_EQ(c.validate(ArchInfo::parse(arch), DType::bf16), std::nullopt) << arch;
  EXPECT_EQ(KernelConfig::parse("first_reset.t512.v4.u2.b4cu.scale").validate(ArchInfo::parse("gfx942"), DType::fp32),
            "first_reset.t512.v4.u2.b4cu.scale: first_reset has no scale epilogue: every block ends with an atomic "
            "max on the output, so no block holds the final amax to derive the scale from (amax_and_scale runs "
            "self_reset for it)");
}

// first_reset_warp: its own label and define; the block limit and the one-wave block
// reduction count its ticket wave (512 + 32 threads fit on NVIDIA, 1024 + 32 do not; AMD's wave is
// 64); no scale epilogue.
TEST(KernelConfig, FirstResetWarpCountsItsTicketWave) {
  const KernelConfig c{Strategy::first_reset_warp, 512, 8, 2, BlockCap::per_cu(4)};
  EXPECT_EQ(info(Strategy::first_reset_warp).macro, "AMAX_STRATEGY_FIRST_RESET_WARP");
  EXPECT_EQ(c.label(), "first_reset_warp.t512.v8.u2.b4cu");
  EXPECT_EQ(KernelConfig::parse("first_reset_warp.t512.v8.u2.b4cu"), c);
  EXPECT_TRUE(resets_first(c.strategy));
  EXPECT_EQ(block_threads(c.strategy, c.threads, 32), 544u);
  EXPECT_EQ(block_threads(c.strategy, c.threads, 64), 576u);
  EXPECT_EQ(block_threads(Strategy::first_reset, 512, 32), 512u);
  for (const char* arch : {"sm_80", "sm_90", "gfx90a", "gfx942", "gfx950"})
    EXPECT_EQ(c.validate(ArchInfo::parse(arch), DType::bf16), std::nullopt) << arch;
  EXPECT_EQ(KernelConfig::parse("first_reset_warp.t1024.v8.u2.b4cu").validate(ArchInfo::parse("sm_90"), DType::bf16),
            "first_reset_warp.t1024.v8.u2.b4cu: threads 1024 + the ticket wave exceeds the block limit 1024 of sm_90");
  EXPECT_EQ(KernelConfig::parse("first_reset_warp.t1024.v8.u2.b4cu").validate(ArchInfo::parse("gfx942"), DType::bf16),
            "first_reset_warp.t1024.v8.u2.b4cu: threads 1024 + the ticket wave exceeds the block limit 1024 of gfx942");
  EXPECT_NE(KernelConfig::parse("first_reset_warp.t512.v8.u2.b4cu.scale").validate(ArchInfo::parse("sm_90"), DType::bf16),
            std::nullopt);
  // Its kernel is launch-bounded by the whole block (NVIDIA's 2048 threads per SM: 3 of 544).
  EXPECT_EQ(min_blocks_per_sm(c, DType::bf16), 3u);
}

TEST(KernelConfigFields, CompileTimePartDropsOnlyLaunchParameters) {
  const KernelConfig c{Strategy::two_stage, 256, 8, 4, BlockCap::per_cu(8)};
  const KernelConfig k = c.compile_time_part();
  EXPECT_EQ(k, (KernelConfig{Strategy::two_stage, 256, 8, 4, BlockCap::uncapped()}));
  EXPECT_EQ(k.kernel_label(), c.kernel_label());
  EXPECT_EQ(k.label(), "two_stage.t256.v8.u4.buncapped");
  const KernelConfig te{Strategy::atomic, 512, 4, 2, BlockCap::absolute(65535)};
  EXPECT_EQ(te.compile_time_part().label(), "atomic.t512.v4.u2.buncapped");
  // The epilogue is compiled in: it stays.
  const KernelConfig fused{Strategy::self_reset, 256, 8, 4, BlockCap::per_cu(8), Epilogue::scale};
  EXPECT_EQ(fused.compile_time_part().label(), "self_reset.t256.v8.u4.buncapped.scale");
}

TEST(DType, BitPatternsDeriveFromTheTable) {
  EXPECT_EQ(info(DType::fp32).inf_abs_bits, 0x7f800000u);
  EXPECT_EQ(info(DType::fp16).inf_abs_bits, 0x7c00u);
  EXPECT_EQ(info(DType::bf16).inf_abs_bits, 0x7f80u);
  EXPECT_EQ(info(DType::fp32).sign_bit(), 0x80000000u);
  EXPECT_EQ(info(DType::fp16).sign_bit(), 0x8000u);
  EXPECT_EQ(info(DType::fp32).quiet_nan_bits(), 0x7fc00000u);
  EXPECT_EQ(info(DType::fp16).quiet_nan_bits(), 0x7e00u);
  EXPECT_EQ(info(DType::bf16).quiet_nan_bits(), 0x7fc0u);
  EXPECT_EQ(info(DType::fp32).max_pow2_bits(), 0x7f000000u);  // 2^127
  EXPECT_EQ(info(DType::fp16).max_pow2_bits(), 0x7800u);      // 2^15
  EXPECT_EQ(info(DType::bf16).max_pow2_bits(), 0x7f00u);      // 2^127
}

// The multi-tensor kernel family: labels, parsing, validation, the space, the default and the
// rendered source (CPU; compiled by tests/jit, run by tests/gpu/test_gpu_multi.cpp).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "amax/multi_config.hpp"
#include "amax/render.hpp"

using namespace amax;

TEST(MultiConfig, LabelListsEveryFieldAfterTheFamilyTag) {
  const MultiConfig c{512, 8, 4, 32, Combine::warp};
  EXPECT_EQ(c.label(), "multi.t512.v8.u4.c32k.warp");
  EXPECT_EQ((MultiConfig{256, 4, 1, 1024, Combine::block}.label()), "multi.t256.v4.u1.c1024k.block");
  EXPECT_EQ(multi_kernel_name(c, DType::bf16, 1600), "amax_multi_t512_v8_u4_c32k_warp_bf16_k1600");
  EXPECT_TRUE(MultiConfig::is_multi_label("multi.t512.v8.u4.c32k.warp"));
  EXPECT_FALSE(MultiConfig::is_multi_label("one_pass.t512.v8.u2.b4cu"));
  EXPECT_FALSE(MultiConfig::is_multi_label("multi"));
}

TEST(MultiConfig, ParseRoundTripsTheFullSpaces) {
  for (const char* a : {"sm_90", "gfx942", "gfx1100"})
    for (const auto& d : all_dtypes())
      for (const auto& c : enumerate_multi_space(ArchInfo::parse(a), d.dtype, SpaceKind::full))
        ASSERT_EQ(MultiConfig::parse(c.label()), c) << c.label();
}

TEST(MultiConfig, ParseErrorsNameTheLabelAndTheToken) {
  auto message = [](const char* label) {
    try {
      MultiConfig::parse(label);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("multi.t512.v8.u4.c32.warp"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32.warp': bad chunk_kib field 'c32'");
  EXPECT_EQ(message("multi.t512.v8.u4.c32k.wave"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32k.wave': bad combine field 'wave'");
  EXPECT_EQ(message("multi.t0512.v8.u4.c32k.warp"),
            "invalid multi-tensor variant label 'multi.t0512.v8.u4.c32k.warp': bad threads field 't0512'");
  EXPECT_NE(message("one_pass.t512.v8.u2.b4cu").find("expected multi.tT.vN.uU.cCk.COMBINE"), std::string::npos);
  EXPECT_NE(message("multi.t512.v8.u4.c32k").find("got 5 '.'-separated tokens"), std::string::npos);
}

TEST(MultiConfig, ValidateGivesTheReason) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90");
  EXPECT_FALSE(MultiConfig{}.validate(sm90, DType::fp32));
  EXPECT_EQ(*MultiConfig({512, 8, 4, 32, Combine::warp}).validate(sm90, DType::fp32),
            "multi.t512.v8.u4.c32k.warp: vector of 8 x fp32 = 32 bytes exceeds 16 bytes");
  EXPECT_EQ(*MultiConfig({500, 4, 4, 32, Combine::warp}).validate(sm90, DType::fp32),
            "multi.t500.v4.u4.c32k.warp: threads 500 is not a positive multiple of the wave size 32 of sm_90");
  EXPECT_EQ(*MultiConfig({512, 4, 4, 24, Combine::warp}).validate(sm90, DType::fp32),
            "multi.t512.v4.u4.c24k.warp: chunk of 24 KiB is not a power of two in 4..4096 KiB");
  EXPECT_EQ(*MultiConfig({512, 4, 4, 8192, Combine::block}).validate(sm90, DType::fp32),
            "multi.t512.v4.u4.c8192k.block: chunk of 8192 KiB is not a power of two in 4..4096 KiB");
  EXPECT_TRUE(MultiConfig({32, 4, 4, 4, Combine::warp}).validate(ArchInfo::parse("gfx942"), DType::fp32));
}

TEST(MultiConfig, PrunedSpaceIsSixteenByteVectorsWithAVectorPerThread) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90");
  for (const auto& d : all_dtypes()) {
    const auto space = enumerate_multi_space(sm90, d.dtype, SpaceKind::pruned);
    // threads 256/512/1024 x unroll 4 x chunks 8..512 KiB (7) x 2 combines, less the chunks
    // smaller than a vector per thread (1024 threads x 16 B = 16 KiB: 8 KiB left out).
    EXPECT_EQ(space.size(), 3u * 4 * 7 * 2 - 4 * 2) << d.name;
    std::set<std::string> labels;
    for (const auto& c : space) {
      EXPECT_EQ(c.nvec * d.bytes, 16u);
      EXPECT_GE(c.chunk_kib * 1024u, c.threads * 16u) << c.label();
      EXPECT_FALSE(c.validate(sm90, d.dtype));
      labels.insert(c.label());
    }
    EXPECT_EQ(labels.size(), space.size());
  }
}

TEST(MultiConfig, DefaultRuleAndCapacities) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90"), gfx = ArchInfo::parse("gfx942"), sm61 = ArchInfo::parse("sm_61");
  EXPECT_EQ(builtin_multi_default(sm90, DType::fp32, {500, 500 * 16384, 16384}).label(), "multi.t512.v4.u4.c32k.warp");
  EXPECT_EQ(builtin_multi_default(sm90, DType::bf16, {8, 8ull << 27, 1ull << 27}).label(), "multi.t512.v8.u4.c256k.block");
  EXPECT_EQ(builtin_multi_default(sm90, DType::bf16, {32, 32ull << 22, 4ull << 20}).label(), "multi.t512.v8.u4.c32k.block");
  EXPECT_EQ(multi_max_tensors(sm90), 1600u);
  EXPECT_EQ(multi_max_tensors(gfx), 192u);
  EXPECT_EQ(multi_max_tensors(sm61), 192u);
  EXPECT_EQ(multi_capacities(sm90), (std::vector<std::uint32_t>{192, 1600}));
  EXPECT_EQ(multi_capacities(gfx), (std::vector<std::uint32_t>{192}));
  // 40-byte header, pointers, counts, chunk starts (k + 1), padded to 8: within each target's limit.
  const MultiArgsLayout big = multi_args_layout(1600), small = multi_args_layout(192);
  EXPECT_EQ(big.ptr_offset, 40u);
  EXPECT_EQ(big.n_offset, 40u + 8 * 1600);
  EXPECT_EQ(big.chunk_offset, 40u + 16 * 1600);
  EXPECT_EQ(big.bytes, 32048u);
  EXPECT_LE(big.bytes, 32764u);
  EXPECT_EQ(small.bytes, 3888u);
  EXPECT_LE(small.bytes, 4096u);
}

TEST(MultiConfig, RenderedSourceDefinesEveryFieldAndHasNoSingleTensorEntryPoint) {
  const MultiConfig c{256, 8, 2, 64, Combine::block};
  const std::string s = render_multi_source(c, DType::fp16, ArchInfo::parse("sm_90"), 1600);
  for (const char* line : {"#define AMAX_MULTI 1\n", "#define AMAX_THREADS 256\n", "#define AMAX_NVEC 8\n",
                           "#define AMAX_UNROLL 2\n", "#define AMAX_CHUNK_KIB 64\n", "#define AMAX_COMBINE AMAX_COMBINE_BLOCK\n",
                           "#define AMAX_ELEM_BYTES 2\n", "#define AMAX_DTYPE AMAX_DTYPE_FP16\n", "#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n",
                           "#define AMAX_MULTI_MAX_TENSORS 1600\n", "#define AMAX_MULTI_ARGS_BYTES 32048\n",
                           "#define AMAX_MULTI_KERNEL_NAME amax_multi_t256_v8_u2_c64k_block_fp16_k1600\n",
                           "template hash "})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  EXPECT_NE(s.find(multi_template_hash()), std::string::npos);
  EXPECT_EQ(s.find("#define AMAX_STRATEGY "), std::string::npos);
  EXPECT_EQ(s.find("#include"), std::string::npos);
  EXPECT_NE(s.find("#ifndef AMAX_MULTI"), std::string::npos);  // the single-tensor entry points are skipped
  const std::string amd = render_multi_source(c, DType::fp16, ArchInfo::parse("gfx942"), 192);
  EXPECT_NE(amd.find("#define AMAX_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE"), std::string::npos);
  EXPECT_NE(amd.find("#define AMAX_MULTI_ARGS_BYTES 3888\n"), std::string::npos);
  // The single-tensor hash does not cover the multi-tensor template; the multi-tensor one does.
  EXPECT_NE(multi_template_hash(), template_hash());
}

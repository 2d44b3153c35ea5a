// The multi-tensor kernel family: labels, parsing, validation, the space, the default and the
// rendered source (CPU; compiled by tests/jit, run by tests/gpu/test_gpu_multi.cpp).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "amax/multi_config.hpp"
#include "amax/render.hpp"

using namespace amax;

TEST(MultiConfig, LabelListsEveryFieldAfterTheFamilyTag) {
  const MultiConfig c{512, 8, 4, 32, BlockCap::per_cu(4), Combine::thread};
  EXPECT_EQ(c.label(), "multi.t512.v8.u4.c32k.b4cu.thread");
  EXPECT_EQ(c.kernel_label(), "multi.t512.v8.u4");  // the chunk size, grid cap and combine are launch parameters
  EXPECT_EQ((MultiConfig{256, 4, 1, 1024, BlockCap::uncapped(), Combine::warp}.label()),
            "multi.t256.v4.u1.c1024k.buncapped.warp");
  MultiConfig fused = c;
  fused.epilogue = Epilogue::scale;
  EXPECT_EQ(fused.label(), "multi.t512.v8.u4.c32k.b4cu.thread.scale");
  EXPECT_EQ(multi_kernel_name(c, DType::bf16, 1600), "amax_multi_t512_v8_u4_bf16_k1600");
  EXPECT_EQ(multi_kernel_name(fused, DType::bf16, 192), "amax_multi_t512_v8_u4_scale_bf16_k192");
  // Configs that differ only in the grid cap, the chunk size and the combine share one kernel.
  MultiConfig other = c;
  other.max_blocks = BlockCap::uncapped();
  other.chunk_kib = 256;
  other.combine = Combine::warp;
  EXPECT_EQ(multi_kernel_name(other, DType::bf16, 1600), multi_kernel_name(c, DType::bf16, 1600));
  EXPECT_EQ(other.compile_time_part(), c.compile_time_part());
  EXPECT_EQ(c.compile_time_part().max_blocks, BlockCap::uncapped());
  EXPECT_EQ(other.compile_time_part().chunk_kib, 32u);
  EXPECT_EQ(other.compile_time_part().combine, Combine::thread);
  other.unroll = 8;  // the unroll is compiled in
  EXPECT_NE(multi_kernel_name(other, DType::bf16, 1600), multi_kernel_name(c, DType::bf16, 1600));
  EXPECT_TRUE(MultiConfig::is_multi_label("multi.t512.v8.u4.c32k.b4cu.thread"));
  EXPECT_FALSE(MultiConfig::is_multi_label("one_pass.t512.v8.u2.b4cu"));
  EXPECT_FALSE(MultiConfig::is_multi_label("multi"));
}

TEST(MultiConfig, ParseRoundTripsTheFullSpaces) {
  for (const char* a : {"sm_90", "gfx942", "gfx1100"})
    for (const auto& d : all_dtypes())
      for (auto c : enumerate_multi_space(ArchInfo::parse(a), d.dtype, SpaceKind::full)) {
        ASSERT_EQ(MultiConfig::parse(c.label()), c) << c.label();
        c.epilogue = Epilogue::scale;
        ASSERT_EQ(MultiConfig::parse(c.label()), c) << c.label();
      }
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
  EXPECT_EQ(message("multi.t512.v8.u4.c32.b4cu.warp"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32.b4cu.warp': bad chunk_kib field 'c32'");
  EXPECT_EQ(message("multi.t512.v8.u4.c32k.b4cu.wave"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32k.b4cu.wave': bad combine field 'wave'");
  EXPECT_EQ(message("multi.t0512.v8.u4.c32k.b4cu.warp"),
            "invalid multi-tensor variant label 'multi.t0512.v8.u4.c32k.b4cu.warp': bad threads field 't0512'");
  EXPECT_EQ(message("multi.t512.v8.u4.c32k.b0cu.warp"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32k.b0cu.warp': bad max_blocks field 'b0cu'");
  EXPECT_EQ(message("multi.t512.v8.u4.c32k.b4cu.warp.amax"),
            "invalid multi-tensor variant label 'multi.t512.v8.u4.c32k.b4cu.warp.amax': the epilogue field 'amax' is "
            "the default and is written by leaving it out");
  EXPECT_EQ(message("one_pass.t512.v8.u2.b4cu"),
            "invalid multi-tensor variant label 'one_pass.t512.v8.u2.b4cu': expected 7 to 8 '.'-separated fields "
            "(multi.tT.vN.uU.cCk.bB.COMBINE[.scale], e.g. multi.t512.v8.u4.c32k.b4cu.thread), got 5");
  EXPECT_NE(message("multi.t512.v8.u4.c32k.warp").find("got 6"), std::string::npos);  // the grid cap left out
  EXPECT_NE(message("other.t512.v8.u4.c32k.b4cu.warp").find("expected 7 to 8"), std::string::npos);
}

TEST(MultiConfig, ValidateGivesTheReason) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90");
  EXPECT_FALSE(MultiConfig{}.validate(sm90, DType::fp32));
  EXPECT_EQ(*MultiConfig({512, 8, 4, 32, BlockCap::per_cu(4), Combine::warp}).validate(sm90, DType::fp32),
            "multi.t512.v8.u4.c32k.b4cu.warp: vector of 8 x fp32 = 32 bytes exceeds 16 bytes");
  EXPECT_EQ(*MultiConfig({500, 4, 4, 32, BlockCap::per_cu(4), Combine::warp}).validate(sm90, DType::fp32),
            "multi.t500.v4.u4.c32k.b4cu.warp: threads 500 is not a positive multiple of the wave size 32 of sm_90");
  EXPECT_EQ(*MultiConfig({512, 4, 4, 24, BlockCap::per_cu(4), Combine::warp}).validate(sm90, DType::fp32),
            "multi.t512.v4.u4.c24k.b4cu.warp: chunk of 24 KiB is not a power of two in 4..4096 KiB");
  EXPECT_EQ(*MultiConfig({512, 4, 4, 8192, BlockCap::uncapped(), Combine::thread}).validate(sm90, DType::fp32),
            "multi.t512.v4.u4.c8192k.buncapped.thread: chunk of 8192 KiB is not a power of two in 4..4096 KiB");
  EXPECT_EQ(*MultiConfig({512, 4, 4, 32, BlockCap::per_cu(2000), Combine::thread}).validate(sm90, DType::fp32),
            "multi.t512.v4.u4.c32k.b2000cu.thread: max blocks per CU 2000 is outside 1..1024");
  EXPECT_TRUE(MultiConfig({32, 4, 4, 4, BlockCap::per_cu(4), Combine::warp}).validate(ArchInfo::parse("gfx942"), DType::fp32));
}

TEST(MultiConfig, PrunedSpaceIsSixteenByteVectorsWithAVectorPerThread) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90");
  for (const auto& d : all_dtypes()) {
    const auto space = enumerate_multi_space(sm90, d.dtype, SpaceKind::pruned);
    // threads 256/512/1024 x unroll 2/4/8 x chunks 16..256 KiB (5) x caps 2/4/8 per CU and
    // uncapped x 2 combines: 1024 threads x 16 B = 16 KiB, so every chunk holds a vector per thread.
    EXPECT_EQ(space.size(), 3u * 3 * 5 * 4 * 2) << d.name;
    std::set<std::string> labels, kernels;
    for (const auto& c : space) {
      EXPECT_EQ(c.nvec * d.bytes, 16u);
      EXPECT_GE(c.chunk_kib * 1024u, c.threads * 16u) << c.label();
      EXPECT_FALSE(c.validate(sm90, d.dtype));
      EXPECT_EQ(c.epilogue, Epilogue::amax);
      labels.insert(c.label());
      kernels.insert(c.kernel_label());
    }
    EXPECT_EQ(labels.size(), space.size());
    EXPECT_EQ(kernels.size(), 3u * 3) << d.name;  // the chunk sizes, caps and combines share kernels
  }
  // AMD: 256 and 512 threads only.
  EXPECT_EQ(enumerate_multi_space(ArchInfo::parse("gfx942"), DType::bf16, SpaceKind::pruned).size(), 2u * 3 * 5 * 4 * 2);
}

TEST(MultiConfig, DefaultRuleAndCapacities) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90"), gfx = ArchInfo::parse("gfx942"), sm61 = ArchInfo::parse("sm_61");
  EXPECT_EQ(builtin_multi_default(sm90, DType::fp32, {500, 500 * 16384, 16384}).label(), "multi.t512.v4.u4.c32k.b4cu.thread");
  EXPECT_EQ(builtin_multi_default(sm90, DType::bf16, {8, 8ull << 27, 1ull << 27}).label(), "multi.t512.v8.u4.c32k.b4cu.warp");
  EXPECT_EQ(builtin_multi_default(sm90, DType::bf16, {32, 32ull << 22, 4ull << 20}).label(), "multi.t512.v8.u4.c32k.b4cu.warp");
  EXPECT_EQ(builtin_multi_default(sm90, DType::bf16, {33, 33ull << 22, 4ull << 20}).label(), "multi.t512.v8.u4.c32k.b4cu.thread");
  EXPECT_EQ(multi_max_tensors(sm90), 1600u);
  EXPECT_EQ(multi_max_tensors(gfx), 192u);
  EXPECT_EQ(multi_max_tensors(sm61), 192u);
  EXPECT_EQ(multi_capacities(sm90), (std::vector<std::uint32_t>{192, 512, 1600}));
  EXPECT_EQ(multi_capacities(gfx), (std::vector<std::uint32_t>{192}));
  // 72-byte header, pointers, counts, chunk starts (k + 1), padded to 8: within each target's limit.
  const MultiArgsLayout big = multi_args_layout(1600), small = multi_args_layout(192);
  EXPECT_EQ(big.ptr_offset, 72u);
  EXPECT_EQ(big.n_offset, 72u + 8 * 1600);
  EXPECT_EQ(big.chunk_offset, 72u + 16 * 1600);
  EXPECT_EQ(big.bytes, 32080u);
  EXPECT_LE(big.bytes, 32764u);
  EXPECT_EQ(small.bytes, 3920u);
  EXPECT_LE(small.bytes, 4096u);
  EXPECT_EQ(multi_args_layout(512).bytes, 10320u);  // 72 + 20 x 512 + 4, padded to 8
  // the smallest capacity that holds the list, else the largest (several launches)
  EXPECT_EQ(multi_capacity_for(sm90, 1), 192u);
  EXPECT_EQ(multi_capacity_for(sm90, 192), 192u);
  EXPECT_EQ(multi_capacity_for(sm90, 193), 512u);
  EXPECT_EQ(multi_capacity_for(sm90, 512), 512u);
  EXPECT_EQ(multi_capacity_for(sm90, 513), 1600u);
  EXPECT_EQ(multi_capacity_for(sm90, 4096), 1600u);
  EXPECT_EQ(multi_capacity_for(gfx, 500), 192u);
}

TEST(MultiConfig, RenderedSourceDefinesEveryFieldAndHasNoSingleTensorEntryPoint) {
  MultiConfig c{256, 8, 2, 64, BlockCap::per_cu(2), Combine::warp};
  c.epilogue = Epilogue::scale;
  const std::string s = render_multi_source(c, DType::fp16, ArchInfo::parse("sm_90"), 1600);
  for (const char* line : {"#define AMAX_MULTI 1\n", "#define AMAX_THREADS 256\n", "#define AMAX_NVEC 8\n",
                           "#define AMAX_UNROLL 2\n", "#define AMAX_COMBINE_THREAD 0\n",
                           "#define AMAX_COMBINE_WARP 1\n", "#define AMAX_MULTI_COMBINE_BIT 1\n",
                           "#define AMAX_ELEM_BYTES 2\n", "#define AMAX_DTYPE AMAX_DTYPE_FP16\n",
                           "#define AMAX_EPILOGUE AMAX_EPILOGUE_SCALE\n",
                           "#define AMAX_MULTI_MAX_TENSORS 1600\n", "#define AMAX_MULTI_ARGS_BYTES 32080\n",
                           "#define AMAX_MULTI_CHUNK_SHIFT_BIT 8\n",
                           "#define AMAX_MULTI_KERNEL_NAME amax_multi_t256_v8_u2_scale_fp16_k1600\n",
                           "#line 1 \"amax_multi_kernels.h\"\n", "template hash "})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  EXPECT_NE(s.find(multi_template_hash()), std::string::npos);
  EXPECT_EQ(s.find("#define AMAX_STRATEGY "), std::string::npos);
  EXPECT_EQ(s.find("AMAX_MAX_BLOCKS"), std::string::npos);  // the grid cap is not compiled in
  EXPECT_EQ(s.find("AMAX_CHUNK_KIB"), std::string::npos);   // nor the chunk size
  EXPECT_EQ(s.find("#define AMAX_COMBINE "), std::string::npos);  // nor the combine
  EXPECT_EQ(s.find("#include"), std::string::npos);
  EXPECT_NE(s.find("#ifndef AMAX_MULTI"), std::string::npos);  // the single-tensor entry points are skipped
  const std::string amd = render_multi_source(c, DType::fp16, ArchInfo::parse("gfx942"), 192);
  EXPECT_NE(amd.find("#define AMAX_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE"), std::string::npos);
  EXPECT_NE(amd.find("#define AMAX_MULTI_ARGS_BYTES 3920\n"), std::string::npos);
  // The single-tensor hash does not cover the multi-tensor template; the multi-tensor one does.
  EXPECT_NE(multi_template_hash(), template_hash());
}

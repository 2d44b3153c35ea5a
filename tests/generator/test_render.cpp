#include <gtest/gtest.h>

#include <regex>

#include "amax/render.hpp"
#include "amax/search_space.hpp"

using namespace amax;

TEST(Render, HeaderNamesLabelHashAndVersion) {
  KernelConfig c{Strategy::two_stage, 256, 8, 4, BlockCap::per_cu(8)};
  const std::string s = render_source(c, DType::bf16, Vendor::nvidia);
  EXPECT_EQ(s.rfind("// amax-tune generated kernel: two_stage.t256.v8.u4 bf16 (nvidia)\n", 0), 0u);
  EXPECT_NE(s.find("template hash " + template_hash()), std::string::npos);
  EXPECT_NE(s.find("generator version " + std::string(generator_version())), std::string::npos);
  EXPECT_NE(s.find("#define AMAX_KERNEL_NAME amax_two_stage_t256_v8_u4_bf16\n"), std::string::npos);
  EXPECT_NE(s.find("#define AMAX_THREADS 256\n"), std::string::npos);
  EXPECT_NE(s.find("#define AMAX_NVEC 8\n"), std::string::npos);
  EXPECT_NE(s.find("#define AMAX_UNROLL 4\n"), std::string::npos);
  EXPECT_NE(s.find("#define AMAX_STRATEGY AMAX_STRATEGY_TWO_STAGE\n"), std::string::npos);
}

TEST(Render, DTypeDefinesComeFromTheTable) {
  KernelConfig c{Strategy::one_pass, 256, 8, 1, {}};
  const std::string bf = render_source(c, DType::bf16, Vendor::nvidia);
  for (const char* line : {"#define AMAX_DTYPE_FP32 0\n", "#define AMAX_DTYPE_FP16 1\n", "#define AMAX_DTYPE_BF16 2\n",
                           "#define AMAX_DTYPE AMAX_DTYPE_BF16\n", "#define AMAX_ELEM_BYTES 2\n",
                           "#define AMAX_ELEM_INF 0x7f80u\n", "#define AMAX_FP32_INF 0x7f800000u\n",
                           "#define AMAX_FP32_QNAN 0x7fc00000u\n"})
    EXPECT_NE(bf.find(line), std::string::npos) << line;
  EXPECT_NE(render_source(c, DType::fp16, Vendor::amd).find("#define AMAX_ELEM_INF 0x7c00u\n"), std::string::npos);
  const std::string f32 = render_source(KernelConfig{Strategy::one_pass, 256, 4, 1, {}}, DType::fp32, Vendor::nvidia);
  EXPECT_NE(f32.find("#define AMAX_ELEM_INF 0x7f800000u\n"), std::string::npos);
  EXPECT_NE(f32.find("#define AMAX_ELEM_BYTES 4\n"), std::string::npos);
}

TEST(Render, EveryStrategyHasItsMacro) {
  const std::pair<Strategy, const char*> cases[] = {{Strategy::atomic, "AMAX_STRATEGY_ATOMIC"},
                                                    {Strategy::two_stage, "AMAX_STRATEGY_TWO_STAGE"},
                                                    {Strategy::one_pass, "AMAX_STRATEGY_ONE_PASS"},
                                                    {Strategy::self_reset, "AMAX_STRATEGY_SELF_RESET"},
                                                    {Strategy::first_reset, "AMAX_STRATEGY_FIRST_RESET"}};
  for (const auto& [strategy, macro] : cases) {
    const KernelConfig c{strategy, 512, 8, 2, BlockCap::per_cu(16)};
    for (Vendor v : {Vendor::nvidia, Vendor::amd}) {
      const std::string s = render_source(c, DType::bf16, v);
      EXPECT_NE(s.find(std::string("#define AMAX_STRATEGY ") + macro + "\n"), std::string::npos) << c.label();
      EXPECT_NE(s.find(std::string("#define ") + macro + " "), std::string::npos) << "template lacks " << macro;
    }
  }
}

// The epilogue field is rendered as AMAX_EPILOGUE (both epilogue macros defined from kEpilogues),
// and it changes the source and the entry point; the template's fused code is selected by it.
TEST(Render, EpilogueFieldRendersItsMacro) {
  for (const StrategyInfo& si : kStrategies)
    for (Vendor v : {Vendor::nvidia, Vendor::amd}) {
      KernelConfig c{si.value, 256, 8, 4, BlockCap::per_cu(8)};
      const std::string amax_only = render_source(c, DType::fp16, v);
      c.epilogue = Epilogue::scale;
      const std::string fused = render_source(c, DType::fp16, v);
      for (const std::string& s : {amax_only, fused}) {
        EXPECT_NE(s.find("#define AMAX_EPILOGUE_AMAX 0\n"), std::string::npos);
        EXPECT_NE(s.find("#define AMAX_EPILOGUE_SCALE 1\n"), std::string::npos);
        EXPECT_NE(s.find("AMAX_DEVICE amax_scale_bits_t amax_scale_rule("), std::string::npos);
      }
      EXPECT_NE(amax_only.find("#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n"), std::string::npos);
      EXPECT_NE(fused.find("#define AMAX_EPILOGUE AMAX_EPILOGUE_SCALE\n"), std::string::npos);
      EXPECT_NE(fused.find("#define AMAX_KERNEL_NAME " + kernel_name(c, DType::fp16) + "\n"), std::string::npos);
      EXPECT_NE(fused.find("_scale_fp16\n"), std::string::npos);
      EXPECT_NE(fused.find("// kernel label " + c.kernel_label() + " "), std::string::npos);
    }
}

TEST(Render, DefinesComeFromTheFieldListAndTheStrategyTable) {
  const KernelConfig c{Strategy::atomic, 128, 4, 8, BlockCap::per_cu(4)};
  const std::string s = render_source(c, DType::fp32, Vendor::amd);
  EXPECT_EQ(c.compile_time_defines(),
            "#define AMAX_STRATEGY AMAX_STRATEGY_ATOMIC\n#define AMAX_THREADS 128\n#define AMAX_NVEC 4\n"
            "#define AMAX_UNROLL 8\n#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n");
  EXPECT_NE(s.find(c.compile_time_defines()), std::string::npos);
  for (const auto& st : kStrategies)
    EXPECT_NE(s.find("#define " + std::string(st.macro) + " " + std::to_string(static_cast<int>(st.value)) + "\n"),
              std::string::npos)
        << st.name;
  EXPECT_EQ(s.find("AMAX_MAX_BLOCKS"), std::string::npos);  // launch-time fields are not compiled in
  for (const char* retired : {"SPIN", "CLUSTER"})  // retired (docs/tuning.md): no trace in a source
    EXPECT_EQ(s.find(retired), std::string::npos) << retired;
  // Each template starts at its own line 1, so compiler messages point into it.
  const auto prelude = s.find("#line 1 \"prelude_hip.h\"\n"), body = s.find("#line 1 \"amax_kernels.h\"\n");
  ASSERT_NE(prelude, std::string::npos);
  ASSERT_NE(body, std::string::npos);
  EXPECT_LT(prelude, body);
  EXPECT_EQ(vendor_prelude(Vendor::nvidia).rfind("#line 1 \"prelude_cuda.h\"\n", 0), 0u);
}

TEST(Render, TemplateHashIsSixteenHexDigits) {
  EXPECT_TRUE(std::regex_match(template_hash(), std::regex("[0-9a-f]{16}")));
}

TEST(Render, NoRenderedSourceReadsAFile) {
  const std::regex include(R"(^\s*#\s*(include|import|embed)\b)", std::regex::multiline);
  for (const char* arch : {"sm_90", "gfx90a"}) {
    const auto a = ArchInfo::parse(arch);
    for (const auto& d : all_dtypes())
      for (const auto& c : distinct_kernels(enumerate_space(a, d.dtype, SpaceKind::pruned))) {
        const std::string s = render_source(c, d.dtype, a.vendor);
        ASSERT_FALSE(std::regex_search(s, include)) << c.label() << " " << arch;
        ASSERT_EQ(s.find("__has_include"), std::string::npos);
      }
  }
}

TEST(Render, VendorPreludeSelectsWaveSize) {
  KernelConfig c{Strategy::one_pass, 256, 4, 1, {}};
  EXPECT_NE(render_source(c, DType::fp32, Vendor::nvidia).find("#define AMAX_WAVE_SIZE 32"),
            std::string::npos);
  EXPECT_NE(render_source(c, DType::fp32, Vendor::amd).find("#define AMAX_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE"),
            std::string::npos);
}

TEST(Render, LaunchParameterDoesNotChangeSource) {
  KernelConfig a{Strategy::one_pass, 256, 4, 2, BlockCap::per_cu(2)};
  KernelConfig b = a;
  b.max_blocks = BlockCap::uncapped();
  EXPECT_EQ(render_source(a, DType::fp32, Vendor::nvidia), render_source(b, DType::fp32, Vendor::nvidia));
}

TEST(Render, MinBlocksLeavesRegistersForTheLoadsInFlight) {
  // need = unroll * 16 bytes / 4 + 24 registers; cap = 65536 / (threads * min_blocks).
  EXPECT_EQ(min_blocks_per_sm({Strategy::atomic, 1024, 4, 8, {}}, DType::fp32), 1u);  // 56 regs
  EXPECT_EQ(min_blocks_per_sm({Strategy::atomic, 1024, 4, 1, {}}, DType::fp32), 2u);  // 28 regs
  EXPECT_EQ(min_blocks_per_sm({Strategy::atomic, 512, 8, 8, {}}, DType::bf16), 2u);
  EXPECT_EQ(min_blocks_per_sm({Strategy::atomic, 128, 4, 1, {}}, DType::fp32), 16u);
  EXPECT_EQ(min_blocks_per_sm({Strategy::atomic, 128, 4, 8, {}}, DType::fp32), 9u);
  KernelConfig c{Strategy::one_pass, 1024, 4, 8, {}};
  EXPECT_NE(render_source(c, DType::fp32, Vendor::nvidia).find("#define AMAX_MIN_BLOCKS 1\n"),
            std::string::npos);
}

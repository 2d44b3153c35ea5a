// The quantize family's generator side (quantize_config.hpp): labels and their parsing, validation
// naming the field, the rendered source's defines; and the device cast (templates/amax_fp8_cast.h)
// compiled for the host from the very template file and run against the CPU reference
// (fp8_cast.hpp) over structured and fresh random fp32 patterns in every format under both rules.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "amax/fp8_cast.hpp"
#include "amax/quantize_config.hpp"
#include "amax/render.hpp"

using namespace amax;

namespace {
// The template's cast, one instance per format: the format's encoding as the constants the template
// reads (the generator renders the same values as literals; RenderedSourceCarriesTheEncoding).
template <Fp8Format F>
struct DeviceCast {
#define AMAX_DEVICE static
#define AMAX_FP32_INF 0x7f800000u
#define AMAX_FP8_MANT_BITS (encoding(F).mantissa_bits)
#define AMAX_FP8_BIAS (encoding(F).bias)
#define AMAX_FP8_MAX_CODE (unsigned{encoding(F).max_code})
#define AMAX_FP8_NAN_CODE (unsigned{encoding(F).nan_code})
#define AMAX_FP8_FNUZ (encoding(F).fnuz)
#include "amax_fp8_cast.h"
#undef AMAX_DEVICE
#undef AMAX_FP32_INF
#undef AMAX_FP8_MANT_BITS
#undef AMAX_FP8_BIAS
#undef AMAX_FP8_MAX_CODE
#undef AMAX_FP8_NAN_CODE
#undef AMAX_FP8_FNUZ
};

template <Fp8Format F>
long compare_device_cast_with_reference(std::mt19937& rng) {
  long checked = 0;
  auto check = [&](std::uint32_t x) {
    for (CastRule r : {CastRule::transformer_engine, CastRule::torchao}) {
      const unsigned device = DeviceCast<F>::amax_fp8_from_fp32(x, r == CastRule::torchao);
      const std::uint8_t ref = fp8_from_fp32_bits(x, F, r);
      if (device != ref) {
        ADD_FAILURE() << info(F).name << " " << to_string(r) << " x=0x" << std::hex << x << ": template 0x" << device
                      << ", reference 0x" << int(ref);
        return false;
      }
    }
    ++checked;
    return true;
  };
  for (std::uint64_t x = 0; x < (1ull << 32); x += 509)
    if (!check(static_cast<std::uint32_t>(x))) return checked;
  for (std::uint32_t head = 0; head < 0x10000u; ++head)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      if (!check(head << 16 | low)) return checked;
  for (int i = 0; i < 1000000; ++i)
    if (!check(rng())) return checked;
  return checked;
}
}  // namespace

TEST(QuantizeConfig, LabelsRoundTripAndNameTheirKernel) {
  const QuantizeConfig keep{QuantizeKind::keep, 512, 8, 4, 4, BlockCap::uncapped()};
  EXPECT_EQ(keep.label(), "quant.keep.t512.v8.u4.k4.buncapped");
  EXPECT_EQ(keep.kernel_label(), "quant.keep.t512.v8.u4.k4");
  EXPECT_EQ(QuantizeConfig::parse(keep.label()), keep);
  const QuantizeConfig cast{QuantizeKind::cast, 256, 4, 2, 0, BlockCap::per_cu(4)};
  EXPECT_EQ(cast.label(), "quant.cast.t256.v4.u2.k0.b4cu");
  EXPECT_EQ(QuantizeConfig::parse("quant.cast.t256.v4.u2.k0.b4cu"), cast);
  EXPECT_EQ(cast.compile_time_part().label(), "quant.cast.t256.v4.u2.k0.buncapped");
  EXPECT_EQ(QuantizeConfig::parse("quant.reread.t1024.v8.u8.k0.b2cu").kind, QuantizeKind::reread);
  EXPECT_EQ(quantize_kernel_name(keep, DType::bf16, Fp8Format::e4m3), "amax_quant_keep_t512_v8_u4_k4_bf16_e4m3");
  EXPECT_EQ(quantize_kernel_name(cast, DType::fp32, Fp8Format::e5m2fnuz),
            "amax_quant_cast_t256_v4_u2_k0_fp32_e5m2fnuz");
  EXPECT_TRUE(QuantizeConfig::is_quantize_label("quant.keep.t512.v8.u4.k4.buncapped"));
  EXPECT_FALSE(QuantizeConfig::is_quantize_label("multi.t512.v8.u4.c32k.b4cu.thread"));
  EXPECT_FALSE(QuantizeConfig::is_quantize_label("one_pass.t256.v4.u1.buncapped"));
  for (const char* bad : {"quant.keep.t512.v8.u4", "quant.fast.t512.v8.u4.k4.buncapped",
                          "multi.keep.t512.v8.u4.k4.b1cu", "quant.keep.t512.v8.u4.kx.buncapped"})
    EXPECT_THROW(QuantizeConfig::parse(bad), std::invalid_argument) << bad;
  try {
    QuantizeConfig::parse("quant.fast.t512.v8.u4.k4.buncapped");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'fast'"), std::string::npos) << e.what();
  }
}

TEST(QuantizeConfig, ValidateNamesTheField) {
  const ArchInfo sm90 = ArchInfo::parse("sm_90");
  EXPECT_FALSE((QuantizeConfig{QuantizeKind::keep, 512, 8, 4, 4, {}}.validate(sm90, DType::bf16)));
  EXPECT_FALSE((QuantizeConfig{QuantizeKind::reread, 1024, 4, 4, 0, {}}.validate(sm90, DType::fp32)));
  const auto why = [&](const QuantizeConfig& c, DType d) { return c.validate(sm90, d).value_or(""); };
  EXPECT_NE(why({QuantizeKind::keep, 512, 8, 4, 0, {}}, DType::bf16).find("keep 0 is not in 1..16"), std::string::npos);
  EXPECT_NE(why({QuantizeKind::keep, 256, 8, 1, 17, {}}, DType::bf16).find("keep 17"), std::string::npos);
  EXPECT_NE(why({QuantizeKind::cast, 256, 8, 1, 2, {}}, DType::bf16).find("only keep holds vectors"),
            std::string::npos);
  EXPECT_NE(why({QuantizeKind::keep, 1024, 8, 4, 16, {}}, DType::bf16).find("1024 threads per block leave 64"),
            std::string::npos);
  EXPECT_NE(why({QuantizeKind::reread, 1024, 4, 8, 0, {}}, DType::fp32).find("need about 72 registers"),
            std::string::npos);
  EXPECT_NE(why({QuantizeKind::cast, 256, 8, 1, 0, {}}, DType::fp32).find("quant.cast.t256.v8.u1.k0"),
            std::string::npos);  // 32-byte vectors: the single-tensor rule, with this label
}

TEST(QuantizeConfig, RenderedSourceCarriesTheEncodingAndOnlyItsHash) {
  const QuantizeConfig c{QuantizeKind::keep, 512, 8, 4, 4, {}};
  const std::string s = render_quantize_source(c, DType::bf16, Fp8Format::e4m3fnuz, ArchInfo::parse("sm_90"));
  for (const char* line : {"#define AMAX_QUANTIZE AMAX_QUANTIZE_KEEP\n", "#define AMAX_QUANTIZE_KEEP 1\n",
                           "#define AMAX_QUANT_KEEP 4\n", "#define AMAX_FP8_MANT_BITS 3u\n",
                           "#define AMAX_FP8_BIAS 8u\n", "#define AMAX_FP8_MAX_CODE 127u\n",
                           "#define AMAX_FP8_NAN_CODE 128u\n", "#define AMAX_FP8_FNUZ 1\n",
                           "#define AMAX_QUANT_FLAG_TORCHAO 2u\n", "#define AMAX_MULTI 1\n",
                           "#define AMAX_EPILOGUE AMAX_EPILOGUE_AMAX\n",
                           "#define AMAX_QUANT_KERNEL_NAME amax_quant_keep_t512_v8_u4_k4_bf16_e4m3fnuz\n",
                           "#line 1 \"amax_kernels.h\"", "#line 1 \"amax_fp8_cast.h\"",
                           "#line 1 \"amax_quantize_kernels.h\"", "#line 1 \"prelude_cuda.h\""})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  EXPECT_EQ(s.find("#line 1 \"amax_multi_kernels.h\""), std::string::npos);
  // The FP8 instruction where NVIDIA sm_89+ has it for an OCP format; the integer cast elsewhere.
  EXPECT_EQ(s.find("#line 1 \"amax_fp8_cvt_cuda.h\""), std::string::npos);  // e4m3fnuz
  for (const char* arch : {"sm_89", "sm_90", "sm_90a", "sm_100", "sm_120"})
    for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
      EXPECT_TRUE(quantize_uses_fp8_instruction(ArchInfo::parse(arch), f)) << arch;
      const std::string src = render_quantize_source(c, DType::bf16, f, ArchInfo::parse(arch));
      EXPECT_NE(src.find("#line 1 \"amax_fp8_cvt_cuda.h\""), std::string::npos) << arch;
    }
  for (const char* arch : {"sm_80", "sm_86", "gfx942", "gfx950"})
    EXPECT_FALSE(quantize_uses_fp8_instruction(ArchInfo::parse(arch), Fp8Format::e4m3)) << arch;
  EXPECT_FALSE(quantize_uses_fp8_instruction(ArchInfo::parse("sm_90"), Fp8Format::e5m2fnuz));
  EXPECT_NE(s.find(quantize_template_hash()), std::string::npos);
  // The other families' hashes do not cover the quantize templates (their rows stay current).
  EXPECT_NE(quantize_template_hash(), template_hash());
  const std::string e5m2 = render_quantize_source(c, DType::bf16, Fp8Format::e5m2, ArchInfo::parse("gfx950"));
  for (const char* line : {"#define AMAX_FP8_MANT_BITS 2u\n", "#define AMAX_FP8_BIAS 15u\n",
                           "#define AMAX_FP8_MAX_CODE 123u\n", "#define AMAX_FP8_NAN_CODE 127u\n",
                           "#define AMAX_FP8_FNUZ 0\n", "#line 1 \"prelude_hip.h\""})
    EXPECT_NE(e5m2.find(line), std::string::npos) << line;
}

TEST(QuantizeConfig, TemplateCastEqualsTheCpuReferenceInEveryFormat) {
  std::mt19937 rng(std::random_device{}());
  long checked = compare_device_cast_with_reference<Fp8Format::e4m3>(rng);
  checked += compare_device_cast_with_reference<Fp8Format::e5m2>(rng);
  checked += compare_device_cast_with_reference<Fp8Format::e4m3fnuz>(rng);
  checked += compare_device_cast_with_reference<Fp8Format::e5m2fnuz>(rng);
  std::printf("quantize: amax_fp8_cast.h equals fp8_from_fp32_bits on %ld fp32 patterns x 2 rules\n", checked);
}

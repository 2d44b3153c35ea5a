// The quantize family's generator side (quantize_config.hpp): labels and their parsing, validation
// naming the field, the rendered source's defines; and the device cast (templates/amax_fp8_cast.h)
// compiled for the host from the very template file and run against the CPU reference
// (fp8_cast.hpp) over structured and fresh random fp32 patterns in every format under both rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "amax/family.hpp"
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

TEST(QuantizeSpace, PrunedIs17VariantsOfDistinctKernelsOnEveryArchAndDtype) {
  for (const char* arch : {"sm_80", "sm_90", "gfx90a", "gfx942", "gfx950"})
    for (DType d : {DType::fp32, DType::fp16, DType::bf16}) {
      const ArchInfo a = ArchInfo::parse(arch);
      const auto cs = enumerate_quantize_space(a, d, SpaceKind::pruned);
      ASSERT_EQ(cs.size(), 17u) << arch << " " << to_string(d);
      std::set<std::string> labels, kernels;
      std::map<QuantizeKind, int> per_kind;
      for (const auto& c : cs) {
        EXPECT_FALSE(c.validate(a, d)) << c.label();
        EXPECT_EQ(c.nvec * info(d).bytes, 16u) << c.label();
        EXPECT_EQ(QuantizeConfig::parse(c.label()), c);
        labels.insert(c.label());
        kernels.insert(c.kernel_label());
        ++per_kind[c.kind];
      }
      EXPECT_EQ(labels.size(), 17u);
      EXPECT_EQ(kernels.size(), 17u);
      EXPECT_EQ(per_kind[QuantizeKind::cast], 3);
      EXPECT_EQ(per_kind[QuantizeKind::keep], 10);
      EXPECT_EQ(per_kind[QuantizeKind::reread], 4);
      EXPECT_NE(std::find(cs.begin(), cs.end(), builtin_quantize_default(a, d, 1)), cs.end());
      EXPECT_NE(std::find(cs.begin(), cs.end(), builtin_quantize_default(a, d, 1ull << 30)), cs.end());
    }
  EXPECT_EQ(enumerate_quantize_space(ArchInfo::parse("sm_90"), DType::bf16, SpaceKind::pruned)[0].label(),
            "quant.cast.t256.v8.u4.k0.b8cu");
}

TEST(QuantizeSpace, FullSpaceIsValidDistinctAndHoldsThePruned) {
  for (const char* arch : {"sm_90", "gfx942"}) {
    const ArchInfo a = ArchInfo::parse(arch);
    const auto full = enumerate_quantize_space(a, DType::fp32, SpaceKind::full);
    std::set<std::string> labels;
    for (const auto& c : full) {
      EXPECT_FALSE(c.validate(a, DType::fp32)) << c.label();
      labels.insert(c.label());
    }
    EXPECT_EQ(labels.size(), full.size());
    for (const auto& c : enumerate_quantize_space(a, DType::fp32, SpaceKind::pruned))
      EXPECT_TRUE(labels.count(c.label())) << c.label();
    // Register-bound keeps are left out: 1024 threads leave 64 registers, keep 4 needs about 72.
    EXPECT_FALSE(labels.count("quant.keep.t1024.v4.u4.k4.buncapped"));
    EXPECT_TRUE(labels.count("quant.keep.t1024.v4.u4.k2.buncapped"));
  }
  // sm_90 fp32: threads 32..1024 (6), nvec 1,2,4 (3), unroll 1-8 (4): cast 6 caps each, reread 1,
  // keep those of 1-16 that fit the registers; 1024 threads at nvec 4 and unroll 8 do not fit either.
  const auto full = enumerate_quantize_space(ArchInfo::parse("sm_90"), DType::fp32, SpaceKind::full);
  EXPECT_EQ(std::count_if(full.begin(), full.end(), [](auto& c) { return c.kind == QuantizeKind::cast; }), (6 * 3 * 4 - 1) * 6);
  EXPECT_EQ(std::count_if(full.begin(), full.end(), [](auto& c) { return c.kind == QuantizeKind::reread; }), 6 * 3 * 4 - 1);
}

TEST(QuantizeDefault, OneLaunchUpTo8MiBOfInputThenTheCast) {
  for (const char* arch : {"sm_90", "gfx942"})
    for (DType d : {DType::fp32, DType::fp16, DType::bf16}) {
      const ArchInfo a = ArchInfo::parse(arch);
      const std::uint64_t last = (8ull << 20) / info(d).bytes;
      const std::string v = std::to_string(16 / info(d).bytes);
      for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4097}, last})
        EXPECT_EQ(builtin_quantize_default(a, d, n).label(), "quant.keep.t256.v" + v + ".u4.k8.buncapped") << n;
      for (std::uint64_t n : {last + 1, std::uint64_t{1} << 34})
        EXPECT_EQ(builtin_quantize_default(a, d, n).label(), "quant.cast.t512.v" + v + ".u4.k0.b4cu") << n;
    }
}

TEST(QuantizeGrid, CoversTheVectorsWithinTheCapAndTheResidentGrid) {
  const QuantizeConfig keep{QuantizeKind::keep, 256, 8, 4, 8, BlockCap::uncapped()};
  // 256 threads x 8 kept vectors of 8 elements: 16384 elements per block; n / 8 + 1 vectors.
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 0, 132, 2), 1u);
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 16383, 132, 2), 1u);  // 2048 vectors
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 16384, 132, 2), 2u);
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 100 * 16384, 132, 2), 101u);
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 1ull << 30, 132, 2), 264u);   // resident: 2 per SM
  EXPECT_EQ(quantize_grid(keep, DType::bf16, 1ull << 30, 132, 0), 65537u);  // occupancy unknown
  const QuantizeConfig reread{QuantizeKind::reread, 512, 8, 2, 0, BlockCap::uncapped()};
  EXPECT_EQ(quantize_grid(reread, DType::bf16, 1024 * 8 * 3, 132, 1), 4u);  // 3 x 1024 + 1 vectors
  EXPECT_EQ(quantize_grid(reread, DType::bf16, 1ull << 28, 304, 4), 1216u);
  const QuantizeConfig cast{QuantizeKind::cast, 512, 8, 4, 0, BlockCap::per_cu(4)};
  EXPECT_EQ(quantize_grid(cast, DType::bf16, 1ull << 28, 132, 1), 528u);  // the cap, not the resident grid
  EXPECT_EQ(quantize_grid(cast, DType::bf16, 2048 * 8 - 1, 132, 1), 1u);
}

TEST(QuantizeFamilyTag, NamesAndRendersAKernelPerFormat) {
  const QuantizeConfig c{QuantizeKind::reread, 512, 8, 4, 0, BlockCap::per_cu(2)};
  const ArchInfo gfx942 = ArchInfo::parse("gfx942"), sm90 = ArchInfo::parse("sm_90");
  EXPECT_EQ(tuned_fp8_format(gfx942), Fp8Format::e4m3fnuz);
  EXPECT_EQ(tuned_fp8_format(sm90), Fp8Format::e4m3);
  EXPECT_EQ(tuned_fp8_format(ArchInfo::parse("gfx950")), Fp8Format::e4m3);
  EXPECT_EQ(std::vector<Fp8Format>(quantize_formats(gfx942).begin(), quantize_formats(gfx942).end()),
            (std::vector<Fp8Format>{Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz}));
  EXPECT_EQ(std::vector<Fp8Format>(quantize_formats(sm90).begin(), quantize_formats(sm90).end()),
            (std::vector<Fp8Format>{Fp8Format::e4m3, Fp8Format::e5m2}));
  using F = QuantizeFamily;
  static_assert(std::is_same_v<family_of_t<QuantizeConfig>, F> && is_kernel_family_v<F>);
  EXPECT_EQ(F::kernel_name(c, DType::bf16, F::variant_of(Fp8Format::e5m2fnuz)),
            "amax_quant_reread_t512_v8_u4_k0_bf16_e5m2fnuz");
  EXPECT_EQ(F::render(c, DType::bf16, gfx942, F::variant_of(Fp8Format::e4m3fnuz)),
            render_quantize_source(c.compile_time_part(), DType::bf16, Fp8Format::e4m3fnuz, gfx942));
  EXPECT_EQ(F::template_hash(), quantize_template_hash());
  try {
    F::kernel_name(c, DType::bf16, 4);
    ADD_FAILURE() << "format 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "quantize kernel: 4 is not an FP8 format (0..3)");
  }
  EXPECT_EQ(F::fallback(c, sm90, DType::bf16, 1ull << 30, 132), builtin_quantize_default(sm90, DType::bf16, 1ull << 30));
  EXPECT_EQ(F::fused(c, sm90, DType::bf16), c);
  EXPECT_EQ(F::space(sm90, DType::fp16, SpaceKind::pruned), enumerate_quantize_space(sm90, DType::fp16, SpaceKind::pruned));
}

// The CPU reference of the amax -> scale rule (common/include/amax/scale_rule.hpp), exact bits
// case by case. Expected values were computed independently (Python: double division rounded
// once to fp32, which equals fp32 division rounded to nearest).
#include <gtest/gtest.h>

#include <bit>
#include <limits>

#include "amax/scale_rule.hpp"

using namespace amax;

namespace {
constexpr std::uint32_t kOne = 0x3f800000u, kQuietNan = 0x7fc00000u;
ScaleRule e4m3(float eps = 0, bool pow2 = false, bool nan_propagates = false) {
  return ScaleRule{info(Fp8Format::e4m3).max_finite, eps, pow2, nan_propagates};
}
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
}  // namespace

TEST(ScaleRule, FormatsHaveTheirLargestFiniteValues) {
  EXPECT_EQ(bits(info(Fp8Format::e4m3).max_finite), bits(448.0f));
  EXPECT_EQ(bits(info(Fp8Format::e5m2).max_finite), bits(57344.0f));
  EXPECT_EQ(bits(info(Fp8Format::e4m3fnuz).max_finite), bits(240.0f));
  EXPECT_EQ(bits(info(Fp8Format::e5m2fnuz).max_finite), bits(57344.0f));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fp8_format_from_int(i), static_cast<Fp8Format>(i));
  EXPECT_FALSE(fp8_format_from_int(4));
  EXPECT_FALSE(fp8_format_from_int(-1));
}

TEST(ScaleRule, AmaxOneGivesEachFormatsMaximum) {
  const struct {
    Fp8Format f;
    ScaleBits expect;
  } cases[] = {{Fp8Format::e4m3, {0x43e00000u, 0x3b124925u}},
               {Fp8Format::e5m2, {0x47600000u, 0x37924925u}},
               {Fp8Format::e4m3fnuz, {0x43700000u, 0x3b888889u}},
               {Fp8Format::e5m2fnuz, {0x47600000u, 0x37924925u}}};
  for (const auto& c : cases)
    EXPECT_EQ(reference_scale_bits(kOne, ScaleRule{info(c.f).max_finite}), c.expect) << info(c.f).name;
}

TEST(ScaleRule, TransformerEngineCasesExactBits) {
  // amax 0 with epsilon 0: scale 1 (TE returns 1 for a zero amax).
  EXPECT_EQ(reference_scale_bits(0u, e4m3()), (ScaleBits{kOne, kOne}));
  // amax below epsilon: the amax becomes epsilon: 448 / 2^-10 = 458752.
  EXPECT_EQ(reference_scale_bits(bits(0x1p-20f), e4m3(0x1p-10f)), (ScaleBits{0x48e00000u, 0x36124925u}));
  // amax 0 with an epsilon: the epsilon, not 1.
  EXPECT_EQ(reference_scale_bits(0u, e4m3(0x1p-10f)), (ScaleBits{0x48e00000u, 0x36124925u}));
  // The smallest denormal amax: 448 * 2^149 overflows fp32; the largest finite fp32 replaces it
  // (TE PR #786), and its reciprocal is the denormal 2^-128.
  EXPECT_EQ(reference_scale_bits(0x00000001u, e4m3()), (ScaleBits{0x7f7fffffu, 0x00200000u}));
  // ... rounded down to a power of two: 2^127, scale_inv 2^-127.
  EXPECT_EQ(reference_scale_bits(0x00000001u, e4m3(0, true)), (ScaleBits{0x7f000000u, 0x00400000u}));
  // +Inf: scale 1.
  EXPECT_EQ(reference_scale_bits(0x7f800000u, e4m3()), (ScaleBits{kOne, kOne}));
  // A general amax: 448 / 3 rounded to nearest; pow2 clears the mantissa: 128.
  EXPECT_EQ(reference_scale_bits(bits(3.0f), e4m3()), (ScaleBits{0x43155555u, 0x3bdb6db7u}));
  EXPECT_EQ(reference_scale_bits(bits(3.0f), e4m3(0, true)), (ScaleBits{0x43000000u, 0x3c000000u}));
  EXPECT_EQ(reference_scale_bits(bits(3.0f), ScaleRule{57344.0f}), (ScaleBits{0x46955555u, 0x385b6db7u}));
  // An explicit maximum: 240 / 2^-20.
  EXPECT_EQ(reference_scale_bits(bits(0x1p-20f), ScaleRule{240.0f}), (ScaleBits{0x4d700000u, 0x31888889u}));
}

TEST(ScaleRule, NanAmaxGivesOneOrNanWithThePropagateOption) {
  for (std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00123u}) {
    EXPECT_EQ(reference_scale_bits(nan, e4m3()), (ScaleBits{kOne, kOne})) << std::hex << nan;
    EXPECT_EQ(reference_scale_bits(nan, e4m3(0x1p-10f, true)), (ScaleBits{kOne, kOne})) << "NaN < epsilon is false";
    EXPECT_EQ(reference_scale_bits(nan, e4m3(0, false, true)), (ScaleBits{kQuietNan, kQuietNan}));
  }
  // The option changes nothing else.
  EXPECT_EQ(reference_scale_bits(bits(3.0f), e4m3(0, false, true)), reference_scale_bits(bits(3.0f), e4m3()));
  EXPECT_EQ(reference_scale_bits(0x7f800000u, e4m3(0, false, true)), (ScaleBits{kOne, kOne}));
}

TEST(ScaleRule, ValidationNamesTheValue) {
  EXPECT_FALSE(validate(e4m3()));
  EXPECT_FALSE(validate(e4m3(1e-12f, true, true)));
  EXPECT_EQ(validate(e4m3(-1.0f)).value_or(""), "epsilon is -1 (must be finite and >= 0)");
  EXPECT_EQ(validate(e4m3(-0.5f)).value_or(""), "epsilon is -0.5 (must be finite and >= 0)");
  EXPECT_EQ(validate(e4m3(std::numeric_limits<float>::quiet_NaN())).value_or(""),
            "epsilon is nan (must be finite and >= 0)");
  EXPECT_EQ(validate(e4m3(std::numeric_limits<float>::infinity())).value_or(""),
            "epsilon is inf (must be finite and >= 0)");
  EXPECT_EQ(validate(ScaleRule{0.0f}).value_or(""), "max is 0 (must be finite and > 0)");
  EXPECT_EQ(validate(ScaleRule{-448.0f}).value_or(""), "max is -448 (must be finite and > 0)");
  EXPECT_EQ(validate(ScaleRule{std::numeric_limits<float>::infinity()}).value_or(""),
            "max is inf (must be finite and > 0)");
}

// The CPU reference of the FP8 cast (common/include/amax/fp8_cast.hpp): hand-worked bytes of every
// special value in every format under both rules, then the bit-level conversion against a second,
// independent derivation (decode all 256 codes, take the nearest finite value with ties to the even
// code) over structured and fresh random fp32 patterns, the exact widening of fp16 and bf16, and
// whole quantizes through the scale rule (amax 0, amax below epsilon, a general amax).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "amax/fp8_cast.hpp"

using namespace amax;

namespace {
constexpr Fp8Format kE4m3 = Fp8Format::e4m3, kE5m2 = Fp8Format::e5m2, kE4m3fnuz = Fp8Format::e4m3fnuz,
                    kE5m2fnuz = Fp8Format::e5m2fnuz;
constexpr Fp8Format kAllFormats[] = {kE4m3, kE5m2, kE4m3fnuz, kE5m2fnuz};
constexpr CastRule kTe = CastRule::transformer_engine, kTorchao = CastRule::torchao;
constexpr CastRule kBothRules[] = {kTe, kTorchao};

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint8_t cast(float f, Fp8Format fmt, CastRule r = kTe) { return fp8_from_fp32_bits(bits(f), fmt, r); }

// The second derivation: the finite non-negative values of the format in code order (codes
// 0x00 .. max_code are increasing), the nearest one to |x| with a tie going to the even code,
// then the sign, NaN and infinity by the rules' definitions (not by the reference's code).
struct SlowCast {
  Fp8Format f;
  std::vector<double> values;  // values[c] = fp8_to_double(c), c = 0 .. max_code
  explicit SlowCast(Fp8Format fmt) : f(fmt) {
    for (unsigned c = 0; c <= encoding(f).max_code; ++c)
      values.push_back(fp8_to_double(static_cast<std::uint8_t>(c), f));
  }
  std::uint8_t operator()(std::uint32_t x_bits, CastRule r) const {
    const Fp8Encoding e = encoding(f);
    const float x = std::bit_cast<float>(x_bits);
    if (std::isnan(x)) return e.fnuz ? 0x80 : 0x7f;
    if (std::isinf(x) && e.fnuz && r == kTe) return 0x80;
    const double a = std::fabs(static_cast<double>(x));
    const auto it = std::lower_bound(values.begin(), values.end(), a);  // first value >= a
    std::size_t code;
    if (it == values.end()) {
      code = values.size() - 1;  // beyond the largest finite value: saturate (the clamp, or satfinite)
    } else if (*it == a || it == values.begin()) {
      code = static_cast<std::size_t>(it - values.begin());
    } else {
      const std::size_t hi = static_cast<std::size_t>(it - values.begin()), lo = hi - 1;
      const double dlo = a - values[lo], dhi = values[hi] - a;
      code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
    }
    if (code == 0 && e.fnuz) return 0;
    return static_cast<std::uint8_t>(code | (std::signbit(x) ? 0x80u : 0u));
  }
};

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}
}  // namespace

TEST(Fp8Cast, EncodingsDecodeToTheirDefinitions) {
  EXPECT_EQ(fp8_to_double(0x38, kE4m3), 1.0);
  EXPECT_EQ(fp8_to_double(0x3c, kE5m2), 1.0);
  EXPECT_EQ(fp8_to_double(0x40, kE4m3fnuz), 1.0);
  EXPECT_EQ(fp8_to_double(0x40, kE5m2fnuz), 1.0);
  EXPECT_EQ(fp8_to_double(0x7e, kE4m3), 448.0);
  EXPECT_EQ(fp8_to_double(0xfe, kE4m3), -448.0);
  EXPECT_EQ(fp8_to_double(0x7b, kE5m2), 57344.0);
  EXPECT_EQ(fp8_to_double(0x7f, kE4m3fnuz), 240.0);
  EXPECT_EQ(fp8_to_double(0x7f, kE5m2fnuz), 57344.0);
  EXPECT_EQ(fp8_to_double(0x01, kE4m3), std::ldexp(1.0, -9));
  EXPECT_EQ(fp8_to_double(0x01, kE5m2), std::ldexp(1.0, -16));
  EXPECT_EQ(fp8_to_double(0x01, kE4m3fnuz), std::ldexp(1.0, -10));
  EXPECT_EQ(fp8_to_double(0x01, kE5m2fnuz), std::ldexp(1.0, -17));
  EXPECT_EQ(fp8_to_double(0x78, kE4m3), 256.0);  // e4m3fn: exponent 1111 is finite below mantissa 111
  EXPECT_TRUE(std::isnan(fp8_to_double(0x7f, kE4m3)));
  EXPECT_TRUE(std::isnan(fp8_to_double(0xff, kE4m3)));
  EXPECT_EQ(fp8_to_double(0x7c, kE5m2), INFINITY);
  EXPECT_EQ(fp8_to_double(0xfc, kE5m2), -INFINITY);
  EXPECT_TRUE(std::isnan(fp8_to_double(0x7d, kE5m2)));
  EXPECT_TRUE(std::isnan(fp8_to_double(0x80, kE4m3fnuz)));
  EXPECT_TRUE(std::isnan(fp8_to_double(0x80, kE5m2fnuz)));
  EXPECT_EQ(fp8_to_double(0x80, kE4m3), 0.0);
  EXPECT_TRUE(std::signbit(fp8_to_double(0x80, kE4m3)));
  // Every code but the NaNs and e5m2's infinities decodes to a finite value that converts back to
  // itself under both rules (fnuz: the codes other than 0x80).
  for (Fp8Format f : kAllFormats)
    for (unsigned c = 0; c < 256; ++c) {
      const double v = fp8_to_double(static_cast<std::uint8_t>(c), f);
      if (!std::isfinite(v)) continue;
      for (CastRule r : kBothRules)
        EXPECT_EQ(cast(static_cast<float>(v), f, r), c) << info(f).name << " code " << c;
    }
}

TEST(Fp8Cast, SpecialValuesExactBytes) {
  const float nan_neg = -std::numeric_limits<float>::quiet_NaN();
  const float snan = std::bit_cast<float>(0x7f800001u), snan_neg = std::bit_cast<float>(0xff812345u);
  // The expected bytes were computed independently (Python: exact rationals of every code, the
  // nearest finite one with ties to the even code).
  struct Case {
    const char* what;
    float x;
    std::uint8_t e4m3, e5m2, e4m3fnuz, e5m2fnuz;  // the transformer_engine rule
  };
  const Case cases[] = {
      {"+0", 0.0f, 0x00, 0x00, 0x00, 0x00},
      {"-0 (fnuz: no negative zero)", -0.0f, 0x80, 0x80, 0x00, 0x00},
      {"quiet NaN", std::numeric_limits<float>::quiet_NaN(), 0x7f, 0x7f, 0x80, 0x80},
      {"negative quiet NaN (written without sign)", nan_neg, 0x7f, 0x7f, 0x80, 0x80},
      {"signalling NaN", snan, 0x7f, 0x7f, 0x80, 0x80},
      {"negative NaN, other payload", snan_neg, 0x7f, 0x7f, 0x80, 0x80},
      {"+Inf (saturates; fnuz TE: NaN)", INFINITY, 0x7e, 0x7b, 0x80, 0x80},
      {"-Inf", -INFINITY, 0xfe, 0xfb, 0x80, 0x80},
      {"1", 1.0f, 0x38, 0x3c, 0x40, 0x40},
      {"-1", -1.0f, 0xb8, 0xbc, 0xc0, 0xc0},
      {"448 (e4m3 max)", 448.0f, 0x7e, 0x5f, 0x7f, 0x63},
      {"240 (e4m3fnuz max; e5m2: tie of 224 and 256, even 256)", 240.0f, 0x77, 0x5c, 0x7f, 0x60},
      {"57344 (e5m2 max)", 57344.0f, 0x7e, 0x7b, 0x7f, 0x7f},
      {"-57344", -57344.0f, 0xfe, 0xfb, 0xff, 0xff},
      {"464: tie of e4m3 448 and 480 (not finite): even 448", 464.0f, 0x7e, 0x5f, 0x7f, 0x63},
      {"248: tie of e4m3fnuz 240 and 256: even is 256, saturates to 240", 248.0f, 0x78, 0x5c, 0x7f, 0x60},
      {"61440: tie of e5m2 57344 and 65536: even 65536, saturates", 61440.0f, 0x7e, 0x7b, 0x7f, 0x7f},
      {"1e30 (saturates)", 1e30f, 0x7e, 0x7b, 0x7f, 0x7f},
      {"FLT_MAX", std::numeric_limits<float>::max(), 0x7e, 0x7b, 0x7f, 0x7f},
      {"-FLT_MAX", -std::numeric_limits<float>::max(), 0xfe, 0xfb, 0xff, 0xff},
      // e4m3: 1 + 1/16 is the tie of 1 (0x38, even) and 1.125; 1 + 3/16 of 1.125 and 1.25 (0x3a, even)
      {"1.0625: tie, down to even", 1.0625f, 0x38, 0x3c, 0x40, 0x40},
      {"1.1875: tie, up to even", 1.1875f, 0x3a, 0x3d, 0x42, 0x41},
      {"1.0625 + 1 ulp: above the tie", std::nextafter(1.0625f, 2.0f), 0x39, 0x3c, 0x41, 0x40},
      {"1.0625 - 1 ulp", std::nextafter(1.0625f, 0.0f), 0x38, 0x3c, 0x40, 0x40},
      // the smallest denormals: e4m3 2^-9, e5m2 2^-16, e4m3fnuz 2^-10, e5m2fnuz 2^-17
      {"2^-9", 0x1p-9f, 0x01, 0x18, 0x02, 0x1c},
      {"2^-10: e4m3 tie of 0 and 2^-9, down to 0", 0x1p-10f, 0x00, 0x14, 0x01, 0x18},
      {"-2^-10", -0x1p-10f, 0x80, 0x94, 0x81, 0x98},
      {"2^-10 + 1 ulp: up to the smallest denormal", std::nextafter(0x1p-10f, 1.0f), 0x01, 0x14, 0x01, 0x18},
      {"3 * 2^-10: tie of denormals 1 and 2, even 2", 3 * 0x1p-10f, 0x02, 0x1a, 0x03, 0x1e},
      {"5 * 2^-10: tie of 2 and 3, even 2", 5 * 0x1p-10f, 0x02, 0x1d, 0x05, 0x21},
      {"15 * 2^-10: tie of the largest denormal 0x07 and the smallest normal 0x08", 15 * 0x1p-10f, 0x08, 0x24, 0x0f,
       0x28},
      {"2^-17", 0x1p-17f, 0x00, 0x00, 0x00, 0x01},
      {"2^-18: below half of every smallest denormal", 0x1p-18f, 0x00, 0x00, 0x00, 0x00},
      {"-2^-18", -0x1p-18f, 0x80, 0x80, 0x00, 0x00},
      {"fp32 smallest denormal", std::bit_cast<float>(1u), 0x00, 0x00, 0x00, 0x00},
      {"negative fp32 denormal", std::bit_cast<float>(0x80400000u), 0x80, 0x80, 0x00, 0x00},
      {"fp32 largest denormal", std::bit_cast<float>(0x007fffffu), 0x00, 0x00, 0x00, 0x00},
  };
  for (const Case& c : cases) {
    const std::uint8_t expect[] = {c.e4m3, c.e5m2, c.e4m3fnuz, c.e5m2fnuz};
    for (Fp8Format f : kAllFormats) {
      const std::uint8_t want = expect[static_cast<int>(f)];
      EXPECT_EQ(cast(c.x, f, kTe), want) << c.what << " " << info(f).name << " transformer_engine";
      // torchao differs only where its clamp meets an infinity that fnuz would make NaN.
      const bool differs = std::isinf(c.x) && encoding(f).fnuz;
      const std::uint8_t torchao = differs ? (c.x > 0 ? 0x7f : 0xff) : want;
      EXPECT_EQ(cast(c.x, f, kTorchao), torchao) << c.what << " " << info(f).name << " torchao";
    }
  }
}

// Every fp32 pattern whose low 16 bits are one of a few values (all 2^16 bf16-like heads, so every
// exponent, sign and NaN), every pattern at and around each rounding boundary of each format
// (the midpoints between adjacent codes, +-1 and +-2 ulp), and fresh random patterns.
TEST(Fp8Cast, MatchesTheNearestCodeDerivation) {
  std::mt19937 rng(std::random_device{}());
  long checked = 0;
  for (Fp8Format f : kAllFormats) {
    const SlowCast slow(f);
    auto check = [&](std::uint32_t x) {
      for (CastRule r : kBothRules) {
        const std::uint8_t got = fp8_from_fp32_bits(x, f, r), want = slow(x, r);
        if (got != want) {
          ADD_FAILURE() << info(f).name << " " << to_string(r) << " x=" << hex(x) << " ("
                        << std::bit_cast<float>(x) << "): got " << int(got) << ", the nearest code " << int(want);
          return false;
        }
      }
      ++checked;
      return true;
    };
    for (std::uint32_t head = 0; head < 0x10000u; ++head)
      for (std::uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
        if (!check(head << 16 | low)) return;
    for (std::size_t c = 0; c + 1 < slow.values.size(); ++c) {
      const float mid = static_cast<float>((slow.values[c] + slow.values[c + 1]) / 2);  // exact: few bits
      ASSERT_EQ(static_cast<double>(mid), (slow.values[c] + slow.values[c + 1]) / 2);
      for (int d = -2; d <= 2; ++d)
        for (std::uint32_t s : {0u, 0x80000000u}) {
          const std::uint32_t m = bits(mid) + static_cast<std::uint32_t>(d);
          if (!check(m | s)) return;
        }
    }
    for (int i = 0; i < 2000000; ++i)
      if (!check(rng())) return;
  }
  std::printf("fp8 cast: %ld fp32 patterns x 2 rules equal the nearest-code derivation\n", checked);
}

TEST(Fp8Cast, WideningIsExact) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const std::uint16_t h16 = static_cast<std::uint16_t>(h);
    const _Float16 hf = std::bit_cast<_Float16>(h16);
    const std::uint32_t got = widen_to_fp32_bits(h, DType::fp16);
    const float expect = static_cast<float>(hf);
    if (std::isnan(expect)) {
      ASSERT_TRUE(std::isnan(std::bit_cast<float>(got))) << std::hex << h;
      ASSERT_EQ(got >> 31, h >> 15) << std::hex << h;
    } else {
      ASSERT_EQ(got, bits(expect)) << std::hex << h;
    }
    ASSERT_EQ(widen_to_fp32_bits(h, DType::bf16), h << 16);
  }
  EXPECT_EQ(widen_to_fp32_bits(0x0001u, DType::fp16), bits(0x1p-24f));  // fp16's smallest denormal
  EXPECT_EQ(widen_to_fp32_bits(0x83ffu, DType::fp16), bits(-1023 * 0x1p-24f));
  EXPECT_EQ(widen_to_fp32_bits(0xdeadbeefu, DType::fp32), 0xdeadbeefu);
}

// Whole quantizes: the scale from the rule, then every byte, hand-worked.
TEST(Fp8Cast, QuantizeThroughTheScaleRule) {
  const ScaleRule e4m3{448.0f};
  // amax 0: scale 1, every element is cast as it is: zeros keep their sign (e4m3).
  {
    const float x[] = {0.0f, -0.0f, 0.0f};
    const ScaleBits s = reference_scale_bits(0u, e4m3);
    ASSERT_EQ(s.scale, bits(1.0f));
    std::uint8_t q[3];
    reference_quantize(x, DType::fp32, 3, s.scale, kE4m3, kTe, q);
    EXPECT_EQ(q[0], 0x00);
    EXPECT_EQ(q[1], 0x80);
    EXPECT_EQ(q[2], 0x00);
  }
  // amax below epsilon: the scale is 448 / 2^-10 = 458752; 2^-20 * 458752 = 0.4375 (e4m3 0x2e =
  // 1.75 * 2^-2), -2^-30 * 458752 = 2^-30 * 1.75 * 2^18 = 1.75 * 2^-12: below half of e4m3's
  // smallest denormal 2^-9, so -0 (0x80); e4m3fnuz (scale 240 / 2^-10 = 245760):
  // 2^-30 * 245760 = 1.875 * 2^-13, -0 without a sign: 0x00.
  {
    const float x[] = {0x1p-20f, -0x1p-30f};
    const ScaleBits s = reference_scale_bits(bits(0x1p-20f), ScaleRule{448.0f, 0x1p-10f});
    ASSERT_EQ(s.scale, bits(458752.0f));
    std::uint8_t q[2];
    reference_quantize(x, DType::fp32, 2, s.scale, kE4m3, kTe, q);
    EXPECT_EQ(q[0], 0x2e);
    EXPECT_EQ(q[1], 0x80);
    const ScaleBits sz = reference_scale_bits(bits(0x1p-20f), ScaleRule{240.0f, 0x1p-10f});
    reference_quantize(x, DType::fp32, 2, sz.scale, kE4m3fnuz, kTe, q);
    EXPECT_EQ(q[1], 0x00);
  }
  // A general amax, bf16 input: amax 3 gives scale 448/3 = 0x43155555 (149.33333); 3 * scale
  // rounds to 448 exactly (0x7e); -1.5 * scale = -224 (1.75 * 2^7: 0xf6); 0.75 * scale rounds to
  // 112 (0x6e); 2^-7 * scale = 1.1666 (e4m3 1.125 = 0x39); bf16 NaN (negative) -> 0x7f.
  {
    const std::uint16_t x[] = {0x4040u /*3*/, 0xbfc0u /*-1.5*/, 0x3f40u /*0.75*/, 0x3c00u /*2^-7*/, 0xffc1u};
    const ScaleBits s = reference_scale_bits(bits(3.0f), e4m3);
    ASSERT_EQ(s.scale, 0x43155555u);
    std::uint8_t q[5];
    reference_quantize(x, DType::bf16, 5, s.scale, kE4m3, kTe, q);
    const std::uint8_t expect[] = {0x7e, 0xf6, 0x6e, 0x39, 0x7f};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(q[i], expect[i]) << i;
  }
  // fp16 input with its denormals: 2^-24 (fp16's smallest) at scale 2^20 is 2^-4 (e5m2 0x2c);
  // 3 * 2^-24 at scale 2^20 is 1.5 * 2^-3 (e5m2 0x32); amax Inf: scale 1, Inf saturates (0x7b).
  {
    const std::uint16_t x[] = {0x0001u, 0x0003u, 0x7c00u};
    std::uint8_t q[3];
    reference_quantize(x, DType::fp16, 2, bits(0x1p20f), kE5m2, kTe, q);
    EXPECT_EQ(q[0], 0x2c);
    EXPECT_EQ(q[1], 0x32);
    const ScaleBits s = reference_scale_bits(0x7f800000u, ScaleRule{57344.0f});
    ASSERT_EQ(s.scale, bits(1.0f));
    reference_quantize(x + 2, DType::fp16, 1, s.scale, kE5m2, kTe, q + 2);
    EXPECT_EQ(q[2], 0x7b);
    reference_quantize(x + 2, DType::fp16, 1, s.scale, kE5m2fnuz, kTe, q + 2);
    EXPECT_EQ(q[2], 0x80);
    reference_quantize(x + 2, DType::fp16, 1, s.scale, kE5m2fnuz, kTorchao, q + 2);
    EXPECT_EQ(q[2], 0x7f);
  }
  // torchao's NaN-propagating scale: every byte is NaN.
  {
    const float x[] = {1.0f, 0.0f};
    const ScaleBits s = reference_scale_bits(0x7fc00000u, ScaleRule{448.0f, 0.0f, false, true});
    std::uint8_t q[2];
    reference_quantize(x, DType::fp32, 2, s.scale, kE4m3, kTorchao, q);
    EXPECT_EQ(q[0], 0x7f);
    EXPECT_EQ(q[1], 0x7f);
  }
}

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

#include "amax/reference.hpp"

using namespace amax;

namespace {
std::uint32_t ref16(std::initializer_list<std::uint16_t> v, DType d, NanMode m = NanMode::propagate) {
  std::vector<std::uint16_t> x(v);
  return reference_amax_bits(x.data(), d, x.size(), m);
}
std::uint32_t ref32(std::initializer_list<std::uint32_t> v, NanMode m = NanMode::propagate) {
  std::vector<std::uint32_t> x(v);
  return reference_amax_bits(x.data(), DType::fp32, x.size(), m);
}
// Independent second method: integer max over sign-cleared bits (what the kernels do).
std::uint32_t integer_method(const std::vector<std::uint8_t>& bytes, DType d, NanMode m) {
  const std::uint32_t b = info(d).bytes, inf = info(d).inf_abs_bits;
  std::uint32_t best = 0;
  for (std::size_t i = 0; i < bytes.size() / b; ++i) {
    std::uint32_t w = 0;
    std::memcpy(&w, bytes.data() + i * b, b);
    w &= b == 4 ? 0x7fffffffu : 0x7fffu;
    if (m == NanMode::ignore && w > inf) continue;
    best = std::max(best, w);
  }
  if (best > inf) return 0x7fc00000u;
  if (d == DType::fp32) return best;
  if (d == DType::bf16) return best << 16;
  if (best == inf) return 0x7f800000u;
  const std::uint32_t e = best >> 10, mant = best & 0x3ff;
  if (e == 0) return std::bit_cast<std::uint32_t>(static_cast<float>(mant) * 0x1p-24f);
  return ((e + 112) << 23) | (mant << 13);
}
}  // namespace

TEST(Reference, ExactValuesPerDtype) {
  EXPECT_EQ(ref32({}), 0x00000000u);                                   // n = 0
  EXPECT_EQ(ref32({0x80000000u, 0x80000000u}), 0x00000000u);           // -0.0 -> +0.0
  EXPECT_EQ(ref32({0xbf800000u, 0x3f000000u}), 0x3f800000u);           // |-1| > 0.5
  EXPECT_EQ(ref32({0x00000001u, 0x80000003u}), 0x00000003u);           // denormals kept
  EXPECT_EQ(ref32({0x3f800000u, 0xff800000u}), 0x7f800000u);           // -Inf -> +Inf
  EXPECT_EQ(ref32({0x3f800000u, 0xffc00001u, 0x7f800000u}), 0x7fc00000u);  // NaN wins
  EXPECT_EQ(ref32({0x3f800000u, 0xffc00001u, 0x40000000u}, NanMode::ignore), 0x40000000u);
  EXPECT_EQ(ref32({0x7fc00000u, 0xffffffffu}, NanMode::ignore), 0x00000000u);  // all NaN ignored
  EXPECT_EQ(ref16({0x0001}, DType::fp16), 0x33800000u);   // smallest fp16 denormal = 2^-24
  EXPECT_EQ(ref16({0x83ff}, DType::fp16), 0x387fc000u);   // largest fp16 denormal
  EXPECT_EQ(ref16({0x7bff}, DType::fp16), 0x477fe000u);   // 65504
  EXPECT_EQ(ref16({0xfc00}, DType::fp16), 0x7f800000u);   // -Inf
  EXPECT_EQ(ref16({0x7c01, 0x3c00}, DType::fp16), 0x7fc00000u);
  EXPECT_EQ(ref16({0x7c01, 0x3c00}, DType::fp16, NanMode::ignore), 0x3f800000u);
  EXPECT_EQ(ref16({0x8001, 0x0000}, DType::bf16), 0x00010000u);  // bf16 denormal
  EXPECT_EQ(ref16({0xc2f7, 0x42f6}, DType::bf16), 0x42f70000u);
  EXPECT_EQ(ref16({0x8000}, DType::bf16), 0x00000000u);
}

TEST(Reference, AgreesWithTheIntegerMethodOnEveryInputKind) {
  std::mt19937_64 seeds(std::random_device{}());
  for (const auto& d : all_dtypes())
    for (InputKind k : all_input_kinds())
      for (std::uint64_t n : {1ull, 2ull, 33ull, 4097ull, 65537ull})
        for (NanMode m : {NanMode::propagate, NanMode::ignore}) {
          const std::uint64_t seed = seeds();
          const auto bytes = make_input(k, d.dtype, n, seed);
          ASSERT_EQ(bytes.size(), n * d.bytes);
          ASSERT_EQ(reference_amax_bits(bytes.data(), d.dtype, n, m), integer_method(bytes, d.dtype, m))
              << d.name << " " << to_string(k) << " n=" << n << " seed=" << seed;
        }
}

TEST(Reference, InputKindsHaveTheirIntendedResult) {
  for (const auto& d : all_dtypes()) {
    const std::uint64_t n = 1001;
    auto run = [&](InputKind k, NanMode m = NanMode::propagate) {
      const auto b = make_input(k, d.dtype, n, 7);
      return reference_amax_bits(b.data(), d.dtype, n, m);
    };
    EXPECT_EQ(run(InputKind::negative_zero), 0u) << d.name;
    EXPECT_EQ(run(InputKind::pos_inf), 0x7f800000u) << d.name;
    EXPECT_EQ(run(InputKind::neg_inf), 0x7f800000u) << d.name;
    EXPECT_EQ(run(InputKind::nan_middle), 0x7fc00000u) << d.name;
    EXPECT_LT(run(InputKind::nan_middle, NanMode::ignore), 0x7f800000u) << d.name;
    EXPECT_EQ(run(InputKind::nan_and_inf, NanMode::ignore), 0x7f800000u) << d.name;
    EXPECT_EQ(run(InputKind::all_nan, NanMode::ignore), 0u) << d.name;
    EXPECT_EQ(run(InputKind::all_nan), 0x7fc00000u) << d.name;
    // Below the dtype's smallest normal: 2^-126 (fp32, bf16) or 2^-14 (fp16, 0x38800000 in fp32).
    EXPECT_LT(run(InputKind::denormals), d.dtype == DType::fp16 ? 0x38800000u : 0x00800000u) << d.name;
    EXPECT_GT(run(InputKind::denormals), 0u) << d.name;
    // The maximum is unique: removing it lowers the result.
    for (InputKind k : {InputKind::max_first, InputKind::max_last, InputKind::max_middle, InputKind::max_in_vector}) {
      auto b = make_input(k, d.dtype, n, 7);
      const auto with = reference_amax_bits(b.data(), d.dtype, n, NanMode::propagate);
      const std::uint64_t at = k == InputKind::max_first ? 0 : k == InputKind::max_last ? n - 1
                               : k == InputKind::max_middle ? n / 2 : (n / 2) / 8 * 8 + 5;
      std::memset(b.data() + at * d.bytes, 0, d.bytes);
      EXPECT_LT(reference_amax_bits(b.data(), d.dtype, n, NanMode::propagate), with) << d.name << " " << to_string(k);
    }
  }
}

#pragma once
// Shared by test_gpu_scale.cpp and test_gpu_scale_api.cpp: inputs with one known amax, the CPU
// rule of a ScaleOptions, the special cases of TE's rule, the fused configs.
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "amax/amax_tune.hpp"
#include "amax/dispatch.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

constexpr std::uint32_t kQNan = 0x7fc00000u, kOne = 0x3f800000u, kFltMax = 0x7f7fffffu;

// n elements of `dtype`, all +-0 but one, whose sign-cleared fp32 bits are `amax_bits` (low 16
// bits zero for the 16-bit types: bf16 takes the top half; fp16 only the values used below), at
// `pos`, negated (the amax is of |x|).
inline std::vector<std::uint8_t> one_hot(DType dtype, std::uint64_t n, std::uint64_t pos, std::uint32_t amax_bits) {
  std::vector<std::uint8_t> h(n * info(dtype).bytes, 0);
  if (dtype == DType::fp32) {
    const std::uint32_t v = amax_bits | 0x80000000u;
    std::memcpy(h.data() + pos * 4, &v, 4);
  } else {
    std::uint16_t v = 0;
    if (dtype == DType::bf16) {
      v = static_cast<std::uint16_t>(amax_bits >> 16);
    } else {  // fp16: the few values of the cases below
      switch (amax_bits) {
        case 0u: v = 0; break;
        case 0x7f800000u: v = 0x7c00; break;
        case 0x7fc00000u: v = 0x7e00; break;
        case 0x40400000u: v = 0x4200; break;   // 3
        case 0x447a0000u: v = 0x63d0; break;   // 1000
        case 0x3a800000u: v = 0x1400; break;   // 2^-10
        case 0x33800000u: v = 0x0001; break;   // 2^-24, the smallest fp16 denormal
        default: ADD_FAILURE() << "no fp16 value for " << std::hex << amax_bits;
      }
    }
    v |= 0x8000;
    std::memcpy(h.data() + pos * 2, &v, 2);
  }
  return h;
}

inline ScaleRule rule_of(const amax_tune::ScaleOptions& o) {
  ScaleRule r;
  r.max = o.format == AMAX_FP8_EXPLICIT_MAX ? o.max : info(*fp8_format_from_int(o.format)).max_finite;
  r.epsilon = o.epsilon;
  r.force_pow2 = o.force_pow2;
  r.nan_propagates = o.nan_propagates;
  return r;
}

inline ScaleArgs args_of(const ScaleRule& r, float* scale, float* scale_inv) {
  return {scale, scale_inv, r.max, r.epsilon, (r.force_pow2 ? kRuleForcePow2 : 0u) | (r.nan_propagates ? kRuleNanPropagates : 0u)};
}

// One special case: the amax present in the input and the rule, with the bits TE's rule gives
// (literal where worked out by hand; 0 = take the CPU reference alone).
struct SpecialCase {
  const char* what;
  std::uint32_t amax_bits;
  amax_tune::ScaleOptions options;
  NanMode mode;
  std::uint32_t expect_amax, expect_scale, expect_scale_inv;
};

inline amax_tune::ScaleOptions opts(amax_fp8_format_t f, float eps = 0, bool pow2 = false, bool nanp = false) {
  amax_tune::ScaleOptions o;
  o.format = f;
  o.epsilon = eps;
  o.force_pow2 = pow2;
  o.nan_propagates = nanp;
  return o;
}

inline std::vector<SpecialCase> special_cases(DType d) {
  std::vector<SpecialCase> c = {
      {"amax 0", 0u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0u, kOne, kOne},
      {"amax 3, e4m3", 0x40400000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x40400000u, 0x43155555u, 0x3bdb6db7u},
      {"amax 3, e4m3, pow2", 0x40400000u, opts(AMAX_FP8_E4M3, 0, true), NanMode::propagate, 0x40400000u, 0x43000000u,
       0x3c000000u},
      {"amax 3, e4m3fnuz", 0x40400000u, opts(AMAX_FP8_E4M3FNUZ), NanMode::propagate, 0x40400000u, 0x42a00000u,
       0x3c4ccccdu},
      {"amax 1000, e5m2", 0x447a0000u, opts(AMAX_FP8_E5M2), NanMode::propagate, 0x447a0000u, 0x42656042u, 0x3c8edb6du},
      {"amax 1000, e5m2fnuz", 0x447a0000u, opts(AMAX_FP8_E5M2FNUZ), NanMode::propagate, 0x447a0000u, 0x42656042u,
       0x3c8edb6du},
      {"amax 1000, e5m2, pow2", 0x447a0000u, opts(AMAX_FP8_E5M2, 0, true), NanMode::propagate, 0x447a0000u, 0x42000000u,
       0x3d000000u},
      {"amax 3, explicit max 1", 0x40400000u, amax_tune::ScaleOptions::explicit_max(1.0f), NanMode::propagate,
       0x40400000u, 0x3eaaaaabu, 0x40400000u},
      // below epsilon: the scale is max / epsilon; the amax written is the true one
      {"amax 2^-10 below epsilon 0.5", 0x3a800000u, opts(AMAX_FP8_E4M3, 0.5f), NanMode::propagate, 0x3a800000u,
       0x44600000u, 0x3a924925u},
      {"amax 0 below epsilon 0.5", 0u, opts(AMAX_FP8_E4M3, 0.5f), NanMode::propagate, 0u, 0x44600000u, 0x3a924925u},
      {"amax +Inf", 0x7f800000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x7f800000u, kOne, kOne},
      {"amax +Inf, pow2", 0x7f800000u, opts(AMAX_FP8_E4M3, 0, true), NanMode::propagate, 0x7f800000u, kOne, kOne},
      {"NaN, propagate mode, TE rule", kQNan, opts(AMAX_FP8_E4M3), NanMode::propagate, kQNan, kOne, kOne},
      {"NaN, propagate mode, nan_propagates", kQNan, opts(AMAX_FP8_E4M3, 0, false, true), NanMode::propagate, kQNan,
       kQNan, kQNan},
      {"NaN, ignore mode, TE rule (all other elements 0)", kQNan, opts(AMAX_FP8_E4M3), NanMode::ignore, 0u, kOne, kOne},
      {"NaN, ignore mode, nan_propagates", kQNan, opts(AMAX_FP8_E4M3, 0, false, true), NanMode::ignore, 0u, kOne, kOne},
  };
  if (d == DType::fp32)  // the smallest denormal: 448 / 2^-149 overflows -> FLT_MAX, 1 / FLT_MAX = 2^-128
    c.push_back({"denormal amax 2^-149", 0x00000001u, opts(AMAX_FP8_E4M3), NanMode::propagate, 1u, kFltMax, 0x00200000u});
  if (d == DType::bf16)  // the smallest bf16 denormal 2^-133: 448 * 2^133 overflows
    c.push_back({"denormal amax 2^-133", 0x00010000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x00010000u, kFltMax,
                 0x00200000u});
  if (d == DType::fp16)  // the smallest fp16 denormal 2^-24: 448 * 2^24, no overflow
    c.push_back({"denormal amax 2^-24", 0x33800000u, opts(AMAX_FP8_E4M3), NanMode::propagate, 0x33800000u, 0x4fe00000u,
                 0x2f124925u});
  return c;
}

// The fused config of a strategy for a dtype (16-byte loads).
inline KernelConfig fused(Strategy s, DType d, BlockCap cap = BlockCap::per_cu(4)) {
  return KernelConfig{s, 256, 16 / info(d).bytes, 2, cap, Epilogue::scale};
}

// Whether strategy `s` runs the scale epilogue on `arch`: not where the arch does not run it
// (strategy_unsupported_reason), nor for a strategy without the epilogue (its row's
// scale_epilogue: fused_variant runs self_reset for it).
inline bool runs_here(Strategy s, const ArchInfo& arch) {
  return info(s).scale_epilogue && !strategy_unsupported_reason(s, arch);
}

}  // namespace

// amax_quantize's argument checks that need no device (quantize_args_of, quantize_options_of,
// need_format_on): each bad argument refused with its status and a message naming it and its
// value, in the order the call checks them. The checks write nothing (they see no device memory);
// that a refused call writes no output on the GPU is tests/gpu/test_gpu_quantize_api.cpp's.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "context.hpp"

using namespace amax;
using namespace amax::capi;

namespace {
// The status and message of what `f` throws (SUCCESS and "" when nothing).
template <class F>
std::pair<amax_status_t, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const Failure& e) {
    return {e.status, e.message};
  }
  return {AMAX_STATUS_SUCCESS, ""};
}
amax_quantize_options_t defaults() {
  amax_quantize_options_t o;
  amax_quantize_options_init(&o);
  return o;
}
}  // namespace

TEST(QuantizeArgs, OptionsDefaultsAndEachBadFieldNamed) {
  amax_quantize_options_t o = defaults();
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.format, AMAX_FP8_E4M3);
  EXPECT_EQ(o.cast_rule, AMAX_CAST_TRANSFORMER_ENGINE);
  EXPECT_EQ(o.epsilon, 0.0f);
  const QuantizeArgs a = quantize_options_of(&o);
  EXPECT_EQ(a.format, Fp8Format::e4m3);
  EXPECT_EQ(a.cast_rule, CastRule::transformer_engine);
  EXPECT_EQ(a.scale.max, 448.0f);
  EXPECT_EQ(a.scale.rule_flags, 0u);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    void (*set)(amax_quantize_options_t&, float);
    const char* expect;
  } cases[] = {
      {[](amax_quantize_options_t& o, float) { o.struct_size = 4; },
       "options.struct_size is 4, expected 24 (call amax_quantize_options_init)"},
      {[](amax_quantize_options_t& o, float) { o.format = AMAX_FP8_EXPLICIT_MAX; },
       "options.format is 255 (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, AMAX_FP8_E4M3FNUZ = 2 or "
       "AMAX_FP8_E5M2FNUZ = 3: the FP8 format of the bytes)"},
      {[](amax_quantize_options_t& o, float) { o.format = static_cast<amax_fp8_format_t>(4); },
       "options.format is 4 (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, AMAX_FP8_E4M3FNUZ = 2 or "
       "AMAX_FP8_E5M2FNUZ = 3: the FP8 format of the bytes)"},
      {[](amax_quantize_options_t& o, float) { o.cast_rule = static_cast<amax_cast_rule_t>(2); },
       "options.cast_rule is 2 (expected AMAX_CAST_TRANSFORMER_ENGINE = 0 or AMAX_CAST_TORCHAO = 1)"},
      {[](amax_quantize_options_t& o, float) { o.epsilon = -0.5f; },
       "options.epsilon is -0.5 (must be finite and >= 0)"},
      {[](amax_quantize_options_t& o, float n) { o.epsilon = n; }, "options.epsilon is nan (must be finite and >= 0)"},
      {[](amax_quantize_options_t& o, float) { o.force_pow2 = 3; }, "options.force_pow2 is 3 (expected 0 or 1)"},
      {[](amax_quantize_options_t& o, float) { o.nan_propagates = 2; },
       "options.nan_propagates is 2 (expected 0 or 1)"},
  };
  for (const auto& c : cases) {
    o = defaults();
    c.set(o, nan);
    EXPECT_EQ(refusal([&] { quantize_options_of(&o); }),
              std::pair(AMAX_STATUS_INVALID_ARGUMENT, std::string(c.expect)));
    EXPECT_EQ(amax_quantize_options_check(&o), AMAX_STATUS_INVALID_ARGUMENT);
    EXPECT_STREQ(amax_last_error(), c.expect);
  }
  EXPECT_EQ(refusal([&] { quantize_options_of(nullptr); }),
            std::pair(AMAX_STATUS_NULL_POINTER, std::string("options is NULL")));
  // every format, both rules, the scale options
  for (int f : {0, 1, 2, 3})
    for (int r : {0, 1}) {
      o = defaults();
      o.format = static_cast<amax_fp8_format_t>(f);
      o.cast_rule = static_cast<amax_cast_rule_t>(r);
      o.epsilon = 1e-12f;
      o.force_pow2 = 1;
      o.nan_propagates = 1;
      const QuantizeArgs q = quantize_options_of(&o);
      EXPECT_EQ(q.format, static_cast<Fp8Format>(f));
      EXPECT_EQ(q.cast_rule, static_cast<CastRule>(r));
      EXPECT_EQ(q.scale.max, info(static_cast<Fp8Format>(f)).max_finite);
      EXPECT_EQ(q.scale.epsilon, 1e-12f);
      EXPECT_EQ(q.scale.rule_flags, kRuleForcePow2 | kRuleNanPropagates);
      EXPECT_EQ(amax_quantize_options_check(&o), AMAX_STATUS_SUCCESS) << amax_last_error();
    }
}

// Each pointer argument refused by name (and value), in the call's order, with the others valid.
TEST(QuantizeArgs, EachBadPointerAndTheDtypeNamed) {
  const amax_quantize_options_t o = defaults();
  alignas(16) static float words[4];
  alignas(16) static std::uint16_t in[64];
  alignas(16) static std::uint8_t out[64];
  float *amax = &words[0], *scale = &words[1], *inv = &words[2];
  auto args = [&](const void* i, amax_dtype_t d, std::uint64_t n, const std::uint8_t* q, float* a, float* s, float* v) {
    return refusal([&] { quantize_args_of(i, d, n, &o, q, a, s, v); });
  };
  using R = std::pair<amax_status_t, std::string>;
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, scale, inv), R(AMAX_STATUS_SUCCESS, ""));
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, nullptr, scale, inv), R(AMAX_STATUS_NULL_POINTER, "amax_out is NULL"));
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, nullptr, inv), R(AMAX_STATUS_NULL_POINTER, "scale_out is NULL"));
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, scale, nullptr),
            R(AMAX_STATUS_NULL_POINTER, "scale_inv_out is NULL"));
  EXPECT_EQ(args(in, static_cast<amax_dtype_t>(9), 64, out, amax, scale, inv),
            R(AMAX_STATUS_UNKNOWN_DTYPE,
              "unknown dtype 9 (expected AMAX_DTYPE_FP32 = 0, AMAX_DTYPE_FP16 = 1 or AMAX_DTYPE_BF16 = 2)"));
  float* odd = reinterpret_cast<float*>(reinterpret_cast<char*>(&words[3]) + 1);
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, odd, inv).first, AMAX_STATUS_MISALIGNED_POINTER);
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, odd, inv).second,
            "scale_out " + fmt::format("{}", static_cast<const void*>(odd)) + " is not aligned to 4 bytes");
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, out, amax, scale, amax).first, AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(args(in, AMAX_DTYPE_BF16, 64, out, amax, scale, amax).second.find("must be three distinct fp32 words"),
            std::string::npos);
  EXPECT_EQ(args(nullptr, AMAX_DTYPE_BF16, 64, out, amax, scale, inv), R(AMAX_STATUS_NULL_POINTER, "input is NULL"));
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 64, nullptr, amax, scale, inv), R(AMAX_STATUS_NULL_POINTER, "output is NULL"));
  // n == 0: input and output may be NULL (nothing is read or written but the three words)
  EXPECT_EQ(args(nullptr, AMAX_DTYPE_BF16, 0, nullptr, amax, scale, inv), R(AMAX_STATUS_SUCCESS, ""));
  const void* misaligned = reinterpret_cast<const char*>(in) + 1;
  EXPECT_EQ(args(misaligned, AMAX_DTYPE_BF16, 8, out, amax, scale, inv),
            R(AMAX_STATUS_MISALIGNED_POINTER,
              fmt::format("input {} is not aligned to the 2-byte elements of bf16", misaligned)));
  // output any alignment; overlapping the input refused naming both
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 8, out + 1, amax, scale, inv), R(AMAX_STATUS_SUCCESS, ""));
  const auto* inside = reinterpret_cast<const std::uint8_t*>(in) + 15;
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 8, inside, amax, scale, inv),
            R(AMAX_STATUS_INVALID_ARGUMENT,
              fmt::format("output {} (8 bytes) overlaps input {} (16 bytes)", static_cast<const void*>(inside),
                          static_cast<const void*>(in))));
  const auto* after = reinterpret_cast<const std::uint8_t*>(in) + 16;
  EXPECT_EQ(args(in, AMAX_DTYPE_BF16, 8, after, amax, scale, inv), R(AMAX_STATUS_SUCCESS, ""));
  // the bad options come first
  amax_quantize_options_t bad = defaults();
  bad.cast_rule = static_cast<amax_cast_rule_t>(-1);
  EXPECT_EQ(
      refusal([&] { quantize_args_of(nullptr, AMAX_DTYPE_BF16, 8, &bad, nullptr, nullptr, nullptr, nullptr); }).second,
      "options.cast_rule is -1 (expected AMAX_CAST_TRANSFORMER_ENGINE = 0 or AMAX_CAST_TORCHAO = 1)");
}

// The fnuz formats are gfx942's: elsewhere a clear refusal naming the device's arch.
TEST(QuantizeArgs, FnuzFormatsOnGfx942Only) {
  for (const char* a : {"gfx942", "gfx942:sramecc+:xnack-"}) {
    for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2, Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz})
      EXPECT_EQ(refusal([&] { need_format_on(ArchInfo::parse(a), f); }).first, AMAX_STATUS_SUCCESS) << a;
  }
  for (const char* a : {"sm_90", "gfx950", "sm_89"}) {
    EXPECT_EQ(refusal([&] { need_format_on(ArchInfo::parse(a), Fp8Format::e4m3); }).first, AMAX_STATUS_SUCCESS);
    EXPECT_EQ(refusal([&] { need_format_on(ArchInfo::parse(a), Fp8Format::e5m2fnuz); }),
              std::pair(AMAX_STATUS_INVALID_ARGUMENT,
                        fmt::format("options.format 3 (e5m2fnuz) is the MI300's (gfx942) FP8; this device is {}: use "
                                    "AMAX_FP8_E4M3 or AMAX_FP8_E5M2", a)));
  }
}

// Without a context every quantize call is refused by its NULL context first.
TEST(QuantizeArgs, NullContextRefusedByEveryCall) {
  const amax_quantize_options_t o = defaults();
  std::size_t ws = 0;
  amax_explanation_t e;
  EXPECT_EQ(amax_quantize_workspace_size(nullptr, AMAX_DTYPE_BF16, 1, &o, &ws), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context is NULL");
  EXPECT_EQ(amax_quantize(nullptr, nullptr, AMAX_DTYPE_BF16, 1, &o, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                          nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context is NULL");
  EXPECT_EQ(amax_preload_quantize(nullptr, nullptr, 0, nullptr, 0, &o), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_explain_quantize(nullptr, AMAX_DTYPE_BF16, 1, &o, &e), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_multi_quantize(nullptr, nullptr, 0, &o, nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_multi_quantize_workspace_size(nullptr, nullptr, 0, &o, &ws), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context is NULL");
}

// The C API's argument checking and its behaviour without a GPU (CPU; the GPU path is in
// tests/gpu/test_gpu_runtime.cpp).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "amax/amax_tune.h"
#include "amax/amax_tune.hpp"
#include "amax/backend.hpp"
#include "amax/dtype_c.hpp"
#include "amax/scale_rule.hpp"

TEST(CApi, NullArgumentsGetTheirOwnStatusAndMessage) {
  EXPECT_EQ(amax_context_create(nullptr, nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "options is NULL");
  amax_context_options_t o;
  amax_context_options_init(&o);
  EXPECT_EQ(amax_context_create(&o, nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context (out-parameter) is NULL");
  size_t ws = 0;
  EXPECT_EQ(amax_workspace_size(nullptr, AMAX_DTYPE_FP32, 10, &ws), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_compute(nullptr, nullptr, AMAX_DTYPE_FP32, 10, nullptr, nullptr, 0, nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context is NULL");
  amax_explanation_t e;
  EXPECT_EQ(amax_explain(nullptr, AMAX_DTYPE_FP32, 1, &e), AMAX_STATUS_NULL_POINTER);
  EXPECT_EQ(amax_context_destroy(nullptr), AMAX_STATUS_SUCCESS);
  amax_context_t sibling = reinterpret_cast<amax_context_t>(0x1);
  EXPECT_EQ(amax_context_create_sibling(nullptr, AMAX_NAN_IGNORE, &sibling), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "base context is NULL");
}

TEST(CApi, BadOptionsAreRejected) {
  amax_context_options_t o;
  amax_context_options_init(&o);
  amax_context_t c = nullptr;
  o.struct_size = 12;
  EXPECT_EQ(amax_context_create(&o, &c), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(amax_last_error()).find("options.struct_size is 12"), std::string::npos);
  amax_context_options_init(&o);
  o.nan_mode = static_cast<amax_nan_mode_t>(7);
  EXPECT_EQ(amax_context_create(&o, &c), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(amax_last_error()).find("nan_mode is 7"), std::string::npos);
  amax_context_options_init(&o);
  o.device = -1;
  EXPECT_EQ(amax_context_create(&o, &c), AMAX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
}

TEST(CApi, NoDeviceIsAStatusNotACrash) {
  amax::Vendor v;
  if (amax::first_available_vendor(v)) GTEST_SKIP() << "a GPU is present; covered by the gpu tests";
  amax_context_options_t o;
  amax_context_options_init(&o);
  amax_context_t c = reinterpret_cast<amax_context_t>(0x1);
  EXPECT_EQ(amax_context_create(&o, &c), AMAX_STATUS_NO_DEVICE);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(amax_last_error()).find("no GPU device 0"), std::string::npos) << amax_last_error();
  try {
    amax_tune::Context ctx;
    FAIL() << "constructed a context without a GPU";
  } catch (const amax_tune::Error& e) {
    EXPECT_EQ(e.status(), AMAX_STATUS_NO_DEVICE);
    EXPECT_NE(std::string(e.what()).find("AMAX_STATUS_NO_DEVICE: no GPU device 0"), std::string::npos);
  }
}

TEST(CApi, StatusStringsAndVersion) {
  EXPECT_STREQ(amax_status_string(AMAX_STATUS_WORKSPACE_TOO_SMALL), "AMAX_STATUS_WORKSPACE_TOO_SMALL");
  EXPECT_STREQ(amax_status_string(static_cast<amax_status_t>(99)), "AMAX_STATUS_UNKNOWN");
  EXPECT_STREQ(amax_version(), "0.1.0");
}

TEST(CApi, DTypeConversionIsTheTable) {
  for (const auto& d : amax::all_dtypes()) {
    EXPECT_EQ(static_cast<int>(amax::to_c(d.dtype)), static_cast<int>(amax::index(d.dtype)));
    EXPECT_EQ(amax::from_c(amax::to_c(d.dtype)), d.dtype);
  }
  EXPECT_EQ(amax::from_c(AMAX_DTYPE_BF16), amax::DType::bf16);
  EXPECT_FALSE(amax::from_c(static_cast<amax_dtype_t>(3)));
  EXPECT_FALSE(amax::from_c(static_cast<amax_dtype_t>(-1)));
}

// The fused call's options are checked without a device; each bad value is named.
TEST(CApi, ScaleOptionsAreCheckedNamingTheValue) {
  amax_scale_options_t o;
  amax_scale_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.format, AMAX_FP8_E4M3);
  EXPECT_EQ(o.max, 0.0f);
  EXPECT_EQ(o.epsilon, 0.0f);
  EXPECT_EQ(o.force_pow2, 0);
  EXPECT_EQ(o.nan_propagates, 0);
  EXPECT_EQ(amax_scale_options_check(&o), AMAX_STATUS_SUCCESS);
  EXPECT_STREQ(amax_last_error(), "");
  EXPECT_EQ(amax_scale_options_check(nullptr), AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "options is NULL");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    void (*set)(amax_scale_options_t&, float, float);
    const char* expect;
  } cases[] = {
      {[](amax_scale_options_t& o, float, float) { o.struct_size = 8; },
       "options.struct_size is 8, expected 24 (call amax_scale_options_init)"},
      {[](amax_scale_options_t& o, float, float) { o.format = static_cast<amax_fp8_format_t>(7); },
       "options.format is 7 (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, AMAX_FP8_E4M3FNUZ = 2, AMAX_FP8_E5M2FNUZ = 3 "
       "or AMAX_FP8_EXPLICIT_MAX = 255)"},
      {[](amax_scale_options_t& o, float, float) { o.format = static_cast<amax_fp8_format_t>(-1); },
       "options.format is -1 (expected AMAX_FP8_E4M3 = 0, AMAX_FP8_E5M2 = 1, AMAX_FP8_E4M3FNUZ = 2, AMAX_FP8_E5M2FNUZ = 3 "
       "or AMAX_FP8_EXPLICIT_MAX = 255)"},
      {[](amax_scale_options_t& o, float, float) { o.epsilon = -1.0f; }, "options.epsilon is -1 (must be finite and >= 0)"},
      {[](amax_scale_options_t& o, float, float n) { o.epsilon = n; }, "options.epsilon is nan (must be finite and >= 0)"},
      {[](amax_scale_options_t& o, float i, float) { o.epsilon = i; }, "options.epsilon is inf (must be finite and >= 0)"},
      {[](amax_scale_options_t& o, float, float) { o.format = AMAX_FP8_EXPLICIT_MAX; },
       "options.max is 0 (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX"},
      {[](amax_scale_options_t& o, float, float) { o.format = AMAX_FP8_EXPLICIT_MAX; o.max = -2.0f; },
       "options.max is -2 (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX"},
      {[](amax_scale_options_t& o, float i, float) { o.format = AMAX_FP8_EXPLICIT_MAX; o.max = i; },
       "options.max is inf (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX"},
      {[](amax_scale_options_t& o, float, float n) { o.format = AMAX_FP8_EXPLICIT_MAX; o.max = n; },
       "options.max is nan (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX"},
      {[](amax_scale_options_t& o, float, float) { o.format = AMAX_FP8_E5M2; o.max = 100.0f; },
       "options.max is 100 with options.format 1 (e5m2): set the format to AMAX_FP8_EXPLICIT_MAX = 255 for an explicit "
       "max, else leave max 0"},
      {[](amax_scale_options_t& o, float, float) { o.force_pow2 = 2; }, "options.force_pow2 is 2 (expected 0 or 1)"},
      {[](amax_scale_options_t& o, float, float) { o.nan_propagates = -1; },
       "options.nan_propagates is -1 (expected 0 or 1)"},
  };
  for (const auto& c : cases) {
    amax_scale_options_init(&o);
    c.set(o, inf, nan);
    EXPECT_EQ(amax_scale_options_check(&o), AMAX_STATUS_INVALID_ARGUMENT) << c.expect;
    EXPECT_STREQ(amax_last_error(), c.expect);
  }
  // valid: every format, an explicit max, a denormal epsilon, pow2 and the NaN option
  for (int f : {0, 1, 2, 3}) {
    amax_scale_options_init(&o);
    o.format = static_cast<amax_fp8_format_t>(f);
    o.epsilon = 1e-40f;
    o.force_pow2 = 1;
    o.nan_propagates = 1;
    EXPECT_EQ(amax_scale_options_check(&o), AMAX_STATUS_SUCCESS) << f << ": " << amax_last_error();
  }
  const amax_scale_options_t e = amax_tune::ScaleOptions::explicit_max(1.0f).to_c();
  EXPECT_EQ(amax_scale_options_check(&e), AMAX_STATUS_SUCCESS) << amax_last_error();
  EXPECT_EQ(amax_and_scale(nullptr, nullptr, AMAX_DTYPE_FP32, 1, &o, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            AMAX_STATUS_NULL_POINTER);
  EXPECT_STREQ(amax_last_error(), "context is NULL");
  EXPECT_EQ(amax_preload_scale(nullptr, nullptr, 0, nullptr, 0), AMAX_STATUS_NULL_POINTER);
}

// The C API's format values are the scale rule's Fp8Format values.
TEST(CApi, Fp8FormatValuesAreTheRulesTable) {
  EXPECT_EQ(amax::fp8_format_from_int(AMAX_FP8_E4M3), amax::Fp8Format::e4m3);
  EXPECT_EQ(amax::fp8_format_from_int(AMAX_FP8_E5M2), amax::Fp8Format::e5m2);
  EXPECT_EQ(amax::fp8_format_from_int(AMAX_FP8_E4M3FNUZ), amax::Fp8Format::e4m3fnuz);
  EXPECT_EQ(amax::fp8_format_from_int(AMAX_FP8_E5M2FNUZ), amax::Fp8Format::e5m2fnuz);
  EXPECT_EQ(amax::fp8_format_from_int(AMAX_FP8_EXPLICIT_MAX), std::nullopt);
}

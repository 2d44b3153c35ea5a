// The C API's argument checking and its behaviour without a GPU (CPU; the GPU path is in
// tests/gpu/test_gpu_runtime.cpp).
#include <gtest/gtest.h>

#include <string>

#include "amax/amax_tune.h"
#include "amax/amax_tune.hpp"
#include "amax/backend.hpp"
#include "amax/dtype_c.hpp"

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

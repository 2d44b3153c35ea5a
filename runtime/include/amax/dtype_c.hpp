#pragma once
// The one conversion between the C API's amax_dtype_t (amax_tune.h) and amax::DType: the C
// enumerators are tied to the table in amax/dtype.hpp at compile time.
#include <optional>

#include "amax/amax_tune.h"
#include "amax/dtype.hpp"

namespace amax {

static_assert(AMAX_DTYPE_FP32 == static_cast<int>(DType::fp32), "AMAX_DTYPE_FP32 must equal DType::fp32");
static_assert(AMAX_DTYPE_FP16 == static_cast<int>(DType::fp16), "AMAX_DTYPE_FP16 must equal DType::fp16");
static_assert(AMAX_DTYPE_BF16 == static_cast<int>(DType::bf16), "AMAX_DTYPE_BF16 must equal DType::bf16");
static_assert(kDTypeCount == 3, "a new DType needs its AMAX_DTYPE_* enumerator in amax_tune.h and an assert here");

/// The C enumerator of `d`. Thread-safe.
constexpr amax_dtype_t to_c(DType d) noexcept { return static_cast<amax_dtype_t>(index(d)); }

/// The DType of a C value; nullopt when `d` is not one of amax_dtype_t's enumerators (the C
/// caller may pass any int). Thread-safe.
constexpr std::optional<DType> from_c(amax_dtype_t d) noexcept {
  const auto i = static_cast<long long>(d);
  if (i < 0 || i >= static_cast<long long>(kDTypeCount)) return std::nullopt;
  return kDTypes[static_cast<std::size_t>(i)].dtype;
}

}  // namespace amax

#include "amax/dtype.hpp"

#include <array>

namespace amax {
namespace {
constexpr std::array<DTypeInfo, 3> kDTypes{{
    {DType::fp32, "fp32", 4, 0x7f800000u},
    {DType::fp16, "fp16", 2, 0x7c00u},
    {DType::bf16, "bf16", 2, 0x7f80u},
}};
}  // namespace

std::span<const DTypeInfo> all_dtypes() noexcept { return kDTypes; }
const DTypeInfo& info(DType t) noexcept { return kDTypes[static_cast<std::size_t>(t)]; }
std::string_view to_string(DType t) noexcept { return info(t).name; }

std::optional<DType> parse_dtype(std::string_view s) noexcept {
  for (const auto& d : kDTypes)
    if (d.name == s) return d.dtype;
  if (s == "float32" || s == "float") return DType::fp32;
  if (s == "float16" || s == "half") return DType::fp16;
  if (s == "bfloat16") return DType::bf16;
  return std::nullopt;
}
}  // namespace amax

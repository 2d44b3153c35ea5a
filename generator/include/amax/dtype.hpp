#pragma once
// Element types amax-tune reduces. One table (kDTypes) is the single source of names, sizes and the
// bit patterns the kernels and the CPU reference use.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace amax {

/// Element type of the input tensor. The output is always one fp32.
enum class DType : std::uint8_t { fp32 = 0, fp16 = 1, bf16 = 2 };

/// Static facts about one DType.
struct DTypeInfo {
  DType dtype;
  std::string_view name;        ///< canonical name used in labels, the DB and the CLI ("bf16")
  std::uint32_t bytes;          ///< element size in bytes (4 or 2)
  std::uint32_t inf_abs_bits;   ///< bit pattern of +Inf in the element's own format (0x7f80 for bf16)
};

/// What a NaN in the input does (DESIGN.md section 2).
/// propagate: any NaN makes the result NaN, wherever it is (PyTorch `amax`); the default.
/// ignore: NaNs are skipped as `fmaxf` does (TransformerEngine's behaviour); all-NaN gives +0.0.
enum class NanMode : std::uint8_t { propagate = 0, ignore = 1 };

/// Every supported dtype, in DType order.
std::span<const DTypeInfo> all_dtypes() noexcept;
/// Facts about `t`. Thread-safe (static data).
const DTypeInfo& info(DType t) noexcept;
/// Canonical name ("fp32", "fp16", "bf16").
std::string_view to_string(DType t) noexcept;
/// Parses a canonical name; also accepts "float32"/"float"/"half"/"float16"/"bfloat16".
/// Returns nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s) noexcept;

}  // namespace amax

#pragma once
// Element types amax-tune reduces. One table (kDTypes) is the single source of their names, sizes
// and bit patterns, for the generator, the kernels' rendered defines, the CPU reference, the
// tuner, the runtime and the tuning database alike. Header-only and constexpr (target
// amax_common), so that the tuning database can use it without depending on the generator.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace amax {

/// Element type of the input tensor. The output is always one fp32. The values are those of the C
/// API's amax_dtype_t (static_asserts in amax/dtype_c.hpp) and of the kernels' AMAX_DTYPE_* macros
/// (rendered from kDTypes).
enum class DType : std::uint8_t { fp32 = 0, fp16 = 1, bf16 = 2 };

/// Static facts about one DType. Bit patterns are in the element's own format, sign bit clear.
struct DTypeInfo {
  DType dtype;
  std::string_view name;        ///< canonical name used in labels, the DB and the CLI ("bf16")
  std::string_view macro;       ///< the kernels' preprocessor name ("AMAX_DTYPE_BF16")
  std::uint32_t bytes;          ///< element size in bytes (4 or 2)
  std::uint32_t mantissa_bits;  ///< stored fraction bits (23, 10, 7)
  std::uint32_t inf_abs_bits;   ///< bit pattern of +Inf (0x7f80 for bf16)

  /// The sign bit (0x8000 for 16-bit types).
  constexpr std::uint32_t sign_bit() const noexcept { return 1u << (bytes * 8 - 1); }
  /// The canonical quiet NaN, +Inf with the top fraction bit set (0x7fc0 for bf16).
  constexpr std::uint32_t quiet_nan_bits() const noexcept { return inf_abs_bits | (1u << (mantissa_bits - 1)); }
  /// 2^emax, the largest finite power of two (0x7f00 for bf16, 0x7800 for fp16).
  constexpr std::uint32_t max_pow2_bits() const noexcept { return inf_abs_bits - (1u << mantissa_bits); }
};

/// Every supported dtype, in DType order (kDTypes[i].dtype == DType(i)).
inline constexpr std::array<DTypeInfo, 3> kDTypes{{
    {DType::fp32, "fp32", "AMAX_DTYPE_FP32", 4, 23, 0x7f800000u},
    {DType::fp16, "fp16", "AMAX_DTYPE_FP16", 2, 10, 0x7c00u},
    {DType::bf16, "bf16", "AMAX_DTYPE_BF16", 2, 7, 0x7f80u},
}};
/// How many dtypes there are: the size of arrays indexed by DType.
inline constexpr std::size_t kDTypeCount = kDTypes.size();

namespace detail {
constexpr bool dtype_table_in_order() {
  for (std::size_t i = 0; i < kDTypeCount; ++i)
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::dtype_table_in_order(), "kDTypes must list every DType in enum order");

/// What a NaN in the input does (DESIGN.md section 2).
/// propagate: any NaN makes the result NaN, wherever it is (PyTorch `amax`); the default.
/// ignore: NaNs are skipped as `fmaxf` does (TransformerEngine's behaviour); all-NaN gives +0.0.
enum class NanMode : std::uint8_t { propagate = 0, ignore = 1 };

/// Every supported dtype, in DType order.
constexpr std::span<const DTypeInfo> all_dtypes() noexcept { return kDTypes; }
/// Facts about `t` (a valid enumerator). Thread-safe (static data).
constexpr const DTypeInfo& info(DType t) noexcept { return kDTypes[static_cast<std::size_t>(t)]; }
/// Index of `t` in kDTypes and in arrays of kDTypeCount entries.
constexpr std::size_t index(DType t) noexcept { return static_cast<std::size_t>(t); }
/// Canonical name ("fp32", "fp16", "bf16").
constexpr std::string_view to_string(DType t) noexcept { return info(t).name; }

/// The dtype whose canonical name is exactly `s` (lower case, no aliases), as stored in the tuning
/// database; nullopt for anything else. Thread-safe.
constexpr std::optional<DType> dtype_from_name(std::string_view s) noexcept {
  for (const auto& d : kDTypes)
    if (d.name == s) return d.dtype;
  return std::nullopt;
}

/// The other names of a dtype that parse_dtype accepts (the command line, the Python package's
/// string dtypes): torch's and numpy's spellings.
struct DTypeAlias {
  std::string_view name;
  DType dtype;
};
inline constexpr DTypeAlias kDTypeAliases[] = {
    {"float32", DType::fp32}, {"float", DType::fp32}, {"float16", DType::fp16},
    {"half", DType::fp16},    {"bfloat16", DType::bf16}};

/// Parses a canonical name or one of kDTypeAliases. Returns nullopt for anything else. Thread-safe.
constexpr std::optional<DType> parse_dtype(std::string_view s) noexcept {
  if (auto d = dtype_from_name(s)) return d;
  for (const auto& a : kDTypeAliases)
    if (a.name == s) return a.dtype;
  return std::nullopt;
}

}  // namespace amax

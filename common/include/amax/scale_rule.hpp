#pragma once
// FP8 current scaling: how an amax becomes `scale` and `scale_inv` (DESIGN.md section 6). The FP8
// formats' largest finite values, the rule's options and their validation, and the rule itself on
// the CPU, exact to the bit: the reference the fused kernels, their tests and the tuner's verifier
// compare against, and what the runtime writes itself where no kernel runs (n == 0).
// Header-only (target amax_common).
//
// The default rule is TransformerEngine's compute_scale_from_amax, case by case, as read in
// NVIDIA/TransformerEngine transformer_engine/common/recipe/recipe_common.cuh at commit
// 01c24fe0c2db788b91e670b1139933535978855c, with the value for an infinite quotient that
// nvte_compute_scale_from_amax passes (std::numeric_limits<float>::max(): TE PR #786;
// transformer_engine/common/recipe/current_scaling.cu at commit
// e9a0581d5a811ab490339d89760f52ee93168e69), and scale_inv = 1 / scale rounded to nearest in fp32
// (TE's reciprocal<float>, __frcp_rn: transformer_engine/common/utils.cuh at commit
// 04801f4c6f30a3a9c8069f783d85bbd197d1613a):
//   1. amax < epsilon: amax = epsilon (a NaN amax compares false and stays NaN);
//   2. amax infinite, zero or NaN: scale = 1;
//   3. else scale = max / amax, rounded to nearest;
//   4. an infinite quotient (amax tiny, e.g. a denormal) becomes the largest finite fp32;
//   5. force_pow2: the scale's mantissa bits are cleared (rounded down to a power of two);
//   6. scale_inv = 1 / scale, rounded to nearest.
// With nan_propagates (torchao's choice) a NaN amax gives scale = scale_inv = NaN (0x7fc00000)
// instead of rule 2's 1.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace amax {

/// FP8 formats whose largest finite value is the scale's numerator. The values are those of the
/// C API's amax_fp8_format_t.
enum class Fp8Format : std::uint8_t { e4m3 = 0, e5m2 = 1, e4m3fnuz = 2, e5m2fnuz = 3 };

struct Fp8FormatInfo {
  Fp8Format format;
  std::string_view name;  ///< "e4m3", ...
  float max_finite;       ///< the largest finite value: 448, 57344, 240, 57344
};

/// Every format, in enum order (kFp8Formats[i].format == Fp8Format(i)).
inline constexpr std::array<Fp8FormatInfo, 4> kFp8Formats{{
    {Fp8Format::e4m3, "e4m3", 448.0f},
    {Fp8Format::e5m2, "e5m2", 57344.0f},
    {Fp8Format::e4m3fnuz, "e4m3fnuz", 240.0f},
    {Fp8Format::e5m2fnuz, "e5m2fnuz", 57344.0f},
}};

/// The format of C API value `v`, or nullopt when it is none.
constexpr std::optional<Fp8Format> fp8_format_from_int(int v) noexcept {
  if (v < 0 || v >= static_cast<int>(kFp8Formats.size())) return std::nullopt;
  return static_cast<Fp8Format>(v);
}
constexpr const Fp8FormatInfo& info(Fp8Format f) noexcept { return kFp8Formats[static_cast<std::size_t>(f)]; }

/// The options of the rule. `max` is the format's largest finite value or an explicit one.
struct ScaleRule {
  float max = 448.0f;           ///< numerator: positive and finite
  float epsilon = 0.0f;         ///< floor of the amax: finite and >= 0 (TE's amax_epsilon)
  bool force_pow2 = false;      ///< round the scale down to a power of two (TE's force_pow_2_scales)
  bool nan_propagates = false;  ///< a NaN amax gives a NaN scale (torchao) instead of 1 (TE)
};

/// Why `r` is not a usable rule (empty when it is), naming the field and its value:
/// "epsilon is -1 (must be finite and >= 0)", "max is inf (must be finite and > 0)".
inline std::optional<std::string> validate(const ScaleRule& r) {
  auto show = [](float v) {  // shortest form that reads back as the same float: -1, 0.5, 1e-12, nan
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
    return std::string(buf);
  };
  if (!(std::isfinite(r.epsilon) && r.epsilon >= 0.0f))
    return "epsilon is " + show(r.epsilon) + " (must be finite and >= 0)";
  if (!(std::isfinite(r.max) && r.max > 0.0f)) return "max is " + show(r.max) + " (must be finite and > 0)";
  return std::nullopt;
}

/// scale and scale_inv as fp32 bits.
struct ScaleBits {
  std::uint32_t scale = 0;
  std::uint32_t scale_inv = 0;
  bool operator==(const ScaleBits&) const = default;
};

/// The rule applied to the amax whose fp32 bits are `amax_bits` (any bits: a NaN of any payload
/// counts as NaN, a negative value is taken as it is). `rule` must pass validate(). Exact: IEEE
/// fp32 division rounded to nearest (the build uses no fast-math). Thread-safe (pure).
inline ScaleBits reference_scale_bits(std::uint32_t amax_bits, const ScaleRule& rule) noexcept {
  constexpr std::uint32_t kQuietNan = 0x7fc00000u;
  float amax = std::bit_cast<float>(amax_bits);
  if (std::isnan(amax) && rule.nan_propagates) return {kQuietNan, kQuietNan};
  if (amax < rule.epsilon) amax = rule.epsilon;
  float scale = 1.0f;
  if (!(std::isinf(amax) || amax == 0.0f || std::isnan(amax))) {
    volatile float numerator = rule.max;  // no constant folding with another rounding
    scale = numerator / amax;
    if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
    if (rule.force_pow2) scale = std::bit_cast<float>(std::bit_cast<std::uint32_t>(scale) & 0xff800000u);
  }
  volatile float one = 1.0f;
  return {std::bit_cast<std::uint32_t>(scale), std::bit_cast<std::uint32_t>(one / scale)};
}

}  // namespace amax

#pragma once
// FP8 current scaling, the cast (DESIGN.md section 9): an element x and the scale become one FP8
// byte, q = FP8(x * scale). The CPU reference, exact to the bit, that the quantize kernels
// (templates/amax_quantize_kernels.h), their tests and the tuner's verifier compare against.
// Header-only and constexpr (target amax_common).
//
// The element is widened to fp32 exactly (fp16 and bf16 are subsets of fp32), multiplied by the
// fp32 scale once, rounded to nearest (IEEE, denormals kept), and the product is converted:
//   transformer_engine (default): TransformerEngine's cast. NVIDIA: `temp = temp * s;
//     static_cast<OutputType>(temp)` in unary_kernel, NVIDIA/TransformerEngine
//     transformer_engine/common/util/vectorized_pointwise.h at commit
//     4faec057c15dd6b25c640fbfafaaab591f7bf657, where OutputType is __nv_fp8_e4m3 / __nv_fp8_e5m2,
//     whose float constructor is __nv_cvt_float_to_fp8(f, __NV_SATFINITE, ...) (CUDA's
//     cuda_fp8.hpp: cvt.rn.satfinite on sm_89+, the same rules in software elsewhere): round to
//     nearest even, a magnitude beyond the largest finite value (+-Inf included) saturates to it,
//     every NaN becomes 0x7f. The fnuz formats are ROCm's TransformerEngine (ROCm/TransformerEngine
//     transformer_engine/common/amd_detail/hip_float8.h at commit
//     3304196ef3a1921d6836d9aef31ec5915ca4a5a7 and hip_f8_impl.h at commit
//     c79cd27d633eebb6fecd9465f7cf59a13395eb00: hip_f8 with negative_zero_nan and clip): round to
//     nearest even, finite values clipped to +-max, +-Inf and NaN both 0x80 (fnuz has no Inf), and
//     a result of zero is 0x00 whatever its sign (fnuz has no -0; 0x80 is its NaN).
//   torchao: `to_fp8_saturated` of `tensor.to(torch.float32) * scale` (pytorch/ao
//     torchao/float8/float8_utils.py at commit 2d812af1bb6a91dfffffb19a2fd400c23e20bc9e,
//     torchao/float8/float8_training_tensor.py at commit 469ac500461f293e0fb540700b09e835b2f3a2d0):
//     clamp to +-max (a NaN stays NaN), then torch's conversion (pytorch/pytorch
//     c10/util/Float8_e4m3fn.h at be03601fa23462e3a9c8626db21ef9ca0fbcde6b, Float8_e5m2.h at
//     cebe1d0e83ef73d6676aff68584cb6ed8fbbdf3f, Float8_e4m3fnuz.h at
//     10dd3a494bf5fe285abcce72ada5667609b81d73, Float8_e5m2fnuz.h at
//     cf52f9c30472833f5d57f5a219d678eaa58b9785): round to nearest even, fnuz zero without sign,
//     fnuz NaN 0x80. It differs from the first rule only where the clamp sees an infinity that
//     the fnuz conversion would make NaN: +-Inf into e4m3fnuz / e5m2fnuz gives +-max, not 0x80.
// A NaN is written without its sign in both rules: TE's conversion writes 0x7f for any NaN, and
// torchao's product of a NaN on an NVIDIA GPU is the canonical positive NaN, which torch's
// conversion writes as 0x7f. (On a GPU whose multiply keeps a NaN's sign, torchao would write
// 0xff for a negative NaN in e4m3fn / e5m2; this reference, and the kernels, do not.)
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "amax/dtype.hpp"
#include "amax/scale_rule.hpp"

namespace amax {

/// Whose conversion the FP8 bytes follow (above). The values are those of the kernels'
/// AMAX_QUANT_FLAG_TORCHAO bit and of the C API's rule option.
enum class CastRule : std::uint8_t { transformer_engine = 0, torchao = 1 };

/// The name of `r` ("transformer_engine", "torchao").
constexpr std::string_view to_string(CastRule r) noexcept {
  return r == CastRule::torchao ? "torchao" : "transformer_engine";
}

/// The bit layout of an FP8 format: sign, exponent, mantissa_bits, exponent bias `bias`.
struct Fp8Encoding {
  std::uint32_t mantissa_bits;  ///< 3 (e4m3, e4m3fnuz) or 2 (e5m2, e5m2fnuz)
  std::uint32_t bias;           ///< 7, 15, 8, 16
  std::uint8_t max_code;        ///< the largest finite value, sign clear: 0x7e, 0x7b, 0x7f, 0x7f
  std::uint8_t nan_code;        ///< the NaN the cast writes: 0x7f (OCP), 0x80 (fnuz)
  bool fnuz;                    ///< no infinity, no negative zero, one NaN (0x80)
};

/// The encoding of `f` (a valid enumerator), in Fp8Format order.
constexpr Fp8Encoding encoding(Fp8Format f) noexcept {
  constexpr Fp8Encoding kEncodings[] = {
      {3, 7, 0x7e, 0x7f, false}, {2, 15, 0x7b, 0x7f, false}, {3, 8, 0x7f, 0x80, true}, {2, 16, 0x7f, 0x80, true}};
  return kEncodings[static_cast<std::size_t>(f)];
}

/// The value of FP8 byte `code` of format `f`, exactly (every FP8 value is a double); NaN for a
/// NaN code, +-Inf for e5m2's infinities. Thread-safe (pure).
constexpr double fp8_to_double(std::uint8_t code, Fp8Format f) noexcept {
  const Fp8Encoding e = encoding(f);
  const bool negative = (code & 0x80u) != 0;
  const std::uint32_t mag = code & 0x7fu;
  if (e.fnuz && code == 0x80u) return std::numeric_limits<double>::quiet_NaN();
  const std::uint32_t exp_field = mag >> e.mantissa_bits, mant = mag & ((1u << e.mantissa_bits) - 1u);
  const std::uint32_t exp_all = (1u << (7 - e.mantissa_bits)) - 1u;
  if (!e.fnuz && exp_field == exp_all) {
    const bool all_ones = mant == (1u << e.mantissa_bits) - 1u;
    if (f == Fp8Format::e5m2)  // IEEE-like: exponent 11111 is Inf or NaN
      return mant == 0 ? (negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity())
                       : std::numeric_limits<double>::quiet_NaN();
    if (all_ones) return std::numeric_limits<double>::quiet_NaN();  // e4m3fn: only s.1111.111 is NaN
  }
  // value = significand * 2^(exponent - mantissa_bits), significand with the implicit bit
  const std::uint32_t significand = exp_field == 0 ? mant : (mant | (1u << e.mantissa_bits));
  int exponent = (exp_field == 0 ? 1 : static_cast<int>(exp_field)) - static_cast<int>(e.bias) -
                 static_cast<int>(e.mantissa_bits);
  double v = significand;
  for (; exponent > 0; --exponent) v *= 2.0;
  for (; exponent < 0; ++exponent) v *= 0.5;
  return negative ? -v : v;
}

namespace detail {
constexpr bool fp8_maxima_match_the_scale_rule() {
  for (const Fp8FormatInfo& i : kFp8Formats)
    if (fp8_to_double(encoding(i.format).max_code, i.format) != static_cast<double>(i.max_finite)) return false;
  return true;
}
}  // namespace detail
static_assert(detail::fp8_maxima_match_the_scale_rule(),
              "each format's largest finite code must decode to the scale rule's max_finite");

/// The FP8 byte of the fp32 value whose bits are `product_bits` (any bits), in format `f` under
/// `rule`. Integer arithmetic on the bits, the same operations as the kernels' amax_fp8_from_fp32:
/// round to nearest even with an unbounded exponent, then saturate to the largest finite code
/// (rounding is monotonic, so this equals rounding to the nearest finite value), NaN and infinity
/// as the rule says. Thread-safe (pure).
constexpr std::uint8_t fp8_from_fp32_bits(std::uint32_t product_bits, Fp8Format f, CastRule rule) noexcept {
  const Fp8Encoding e = encoding(f);
  const std::uint32_t sign = (product_bits >> 24) & 0x80u;
  const std::uint32_t a = product_bits & 0x7fffffffu;
  if (a > 0x7f800000u) return e.nan_code;
  if (a == 0x7f800000u && e.fnuz && rule == CastRule::transformer_engine) return e.nan_code;
  // The fp32 biased exponent of the format's smallest normal 2^(1 - bias).
  const std::uint32_t min_normal_exp = 128u - e.bias;
  const std::uint32_t exp = a >> 23;
  const std::uint32_t exp_eff = exp == 0 ? 1u : exp;  // an fp32 denormal has exponent 1 - 127
  const std::uint32_t significand = (a & 0x7fffffu) | (exp == 0 ? 0u : 0x800000u);
  // Below the format's normal range the result is a count of its smallest denormals: shift further.
  const std::uint32_t shift =
      23u - e.mantissa_bits + (exp_eff < min_normal_exp ? min_normal_exp - exp_eff : 0u);
  const std::uint32_t above = exp_eff > min_normal_exp ? exp_eff - min_normal_exp : 0u;
  std::uint32_t rounded = 0;  // shift >= 32: below half the smallest denormal
  if (shift < 32u)
    rounded = (significand + (1u << (shift - 1u)) - 1u + ((significand >> shift) & 1u)) >> shift;
  std::uint32_t code = (above << e.mantissa_bits) + rounded;
  if (code > e.max_code) code = e.max_code;
  if (code == 0u && e.fnuz) return 0u;
  return static_cast<std::uint8_t>(code | sign);
}

/// The exact fp32 bits of an element of type `t` given as its own bits (`elem_bits`: 32 bits for
/// fp32, the low 16 bits for fp16 and bf16). NaNs keep their sign and payload (the cast ignores
/// both). Thread-safe (pure).
constexpr std::uint32_t widen_to_fp32_bits(std::uint32_t elem_bits, DType t) noexcept {
  if (t == DType::fp32) return elem_bits;
  if (t == DType::bf16) return (elem_bits & 0xffffu) << 16;
  const std::uint32_t sign = (elem_bits & 0x8000u) << 16;
  const std::uint32_t e = (elem_bits >> 10) & 0x1fu, m = elem_bits & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);
  if (e != 0u) return sign | ((e + 112u) << 23) | (m << 13);
  if (m == 0u) return sign;
  // A denormal m * 2^-24: normalise (an fp16 denormal is an fp32 normal).
  std::uint32_t exp = 113u;  // the fp32 biased exponent of 2^-14
  std::uint32_t mm = m;
  while ((mm & 0x400u) == 0u) {
    mm <<= 1;
    --exp;
  }
  return sign | (exp << 23) | ((mm & 0x3ffu) << 13);
}

/// One element's FP8 byte: the element (its own bits, as widen_to_fp32_bits takes them) times the
/// scale (fp32 bits) in fp32, rounded to nearest, then fp8_from_fp32_bits. The build uses no
/// fast-math and the host keeps denormals, so the product is IEEE's. Thread-safe (pure).
inline std::uint8_t reference_quantize_element(std::uint32_t elem_bits, DType t, std::uint32_t scale_bits, Fp8Format f,
                                               CastRule rule) noexcept {
  volatile float x = std::bit_cast<float>(widen_to_fp32_bits(elem_bits, t));  // no folding with another rounding
  const float product = x * std::bit_cast<float>(scale_bits);
  return fp8_from_fp32_bits(std::bit_cast<std::uint32_t>(product), f, rule);
}

/// The FP8 bytes of `n` elements of type `t` at `in` (host memory, any alignment) quantized with
/// the scale whose fp32 bits are `scale_bits`, into `out` (n bytes). Elements are read
/// little-endian, as the GPUs store them. Thread-safe (pure; the buffers are the caller's).
inline void reference_quantize(const void* in, DType t, std::size_t n, std::uint32_t scale_bits, Fp8Format f,
                               CastRule rule, std::uint8_t* out) noexcept {
  const auto* p = static_cast<const unsigned char*>(in);
  const std::size_t bytes = info(t).bytes;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits = 0;
    for (std::size_t b = 0; b < bytes; ++b) bits |= static_cast<std::uint32_t>(p[i * bytes + b]) << (8 * b);
    out[i] = reference_quantize_element(bits, t, scale_bits, f, rule);
  }
}

}  // namespace amax

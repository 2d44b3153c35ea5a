// ---- amax-tune kernels: the FP8 cast (rendered before amax_quantize_kernels.h) ----
// amax_fp8_from_fp32: the fp32 bits of a product -> its FP8 byte, the same operations as the CPU
// reference amax::fp8_from_fp32_bits (common/include/amax/fp8_cast.hpp). Needs AMAX_DEVICE,
// AMAX_FP32_INF and the format's AMAX_FP8_MANT_BITS, AMAX_FP8_BIAS, AMAX_FP8_MAX_CODE,
// AMAX_FP8_NAN_CODE and AMAX_FP8_FNUZ (constant expressions; no preprocessor test reads them), and
// nothing else, so that tests/generator compiles this file for the host and runs it against the
// reference.
AMAX_DEVICE unsigned amax_fp8_from_fp32(unsigned u, bool torchao) {
  const unsigned sign = (u >> 24) & 0x80u;
  const unsigned a = u & 0x7fffffffu;
  if (a > AMAX_FP32_INF) return AMAX_FP8_NAN_CODE;
  if (AMAX_FP8_FNUZ && a == AMAX_FP32_INF && !torchao) return AMAX_FP8_NAN_CODE;
  // The fp32 biased exponent of the format's smallest normal 2^(1 - bias); below it the result is
  // a count of the format's smallest denormals, shifted further.
  const unsigned min_normal_exp = 128u - AMAX_FP8_BIAS;
  const unsigned exp = a >> 23;
  const unsigned exp_eff = exp == 0u ? 1u : exp;
  const unsigned significand = (a & 0x7fffffu) | (exp == 0u ? 0u : 0x800000u);
  unsigned shift = 23u - AMAX_FP8_MANT_BITS + (exp_eff < min_normal_exp ? min_normal_exp - exp_eff : 0u);
  shift = shift > 31u ? 31u : shift;  // at 31 a 24-bit significand rounds to 0, as at any larger shift
  const unsigned above = exp_eff > min_normal_exp ? exp_eff - min_normal_exp : 0u;
  const unsigned rounded = (significand + (1u << (shift - 1u)) - 1u + ((significand >> shift) & 1u)) >> shift;
  unsigned code = (above << AMAX_FP8_MANT_BITS) + rounded;
  code = code > AMAX_FP8_MAX_CODE ? AMAX_FP8_MAX_CODE : code;
  if (AMAX_FP8_FNUZ && code == 0u) return 0u;
  return code | sign;
}

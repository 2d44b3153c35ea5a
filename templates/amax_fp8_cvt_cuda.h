// ---- amax-tune kernels: NVIDIA's FP8 conversion instruction (rendered after amax_fp8_cast.h) ----
// Rendered only for NVIDIA sm_89+ and the OCP formats (e4m3, e5m2). cvt.rn.satfinite.e4m3x2.f32 /
// .e5m2x2.f32 (PTX ISA 7.8) converts two fp32 values to two FP8 bytes, rounding to nearest even and
// saturating to the largest finite value, NaN -> 0x7f: the conversion TransformerEngine's
// __nv_fp8_e4m3 / __nv_fp8_e5m2 constructors run on these GPUs, and equal to amax_fp8_from_fp32
// under either rule for these formats (the rules differ only in the fnuz formats' infinities);
// tests/gpu compares the two over all 2^32 fp32 patterns. Two elements per instruction instead of
// some twenty integer operations per element.
#define AMAX_FP8_HW_PAIR 1
// The FP8 bytes of `lo` (bits 0-7) and `hi` (bits 8-15).
AMAX_DEVICE unsigned amax_fp8x2_from_fp32x2(float lo, float hi) {
  unsigned short r;
#if AMAX_FP8_MANT_BITS == 3
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

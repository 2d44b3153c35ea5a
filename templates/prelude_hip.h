// ---- amax-tune prelude: AMD (hipRTC) ----
// Everything the vendor-neutral kernels need from the vendor; no header is included (hipRTC
// provides the HIP device builtins itself).
#define AMAX_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE
#define AMAX_DEVICE __device__ __forceinline__
#define AMAX_GLOBAL extern "C" __global__
// HIP's second __launch_bounds__ argument means waves per EU, not blocks per SM: only the block
// size is given; the AMDGPU backend sizes registers from it.
#define AMAX_LAUNCH_BOUNDS(n, min_blocks) __launch_bounds__(n)
#define AMAX_RESTRICT __restrict__

// Wave-wide butterfly shuffle: __shfl_xor spans the whole wavefront (64 lanes on CDNA).
AMAX_DEVICE unsigned amax_shfl_xor(unsigned v, int lane_mask) {
  return (unsigned)__shfl_xor((int)v, lane_mask, AMAX_WAVE_SIZE);
}
// One bit per lane of the wave (bit i: lane i), set where pred holds; every lane must call it.
typedef unsigned long long amax_wave_mask;
AMAX_DEVICE amax_wave_mask amax_ballot(bool pred) { return __ballot(pred); }
// The lowest set lane of a non-zero mask.
AMAX_DEVICE unsigned amax_lowest_lane(amax_wave_mask m) { return (unsigned)(__ffsll((unsigned long long)m) - 1); }
AMAX_DEVICE unsigned amax_atomic_max(unsigned* p, unsigned v) { return atomicMax(p, v); }
// Stores v at p and returns the word it replaced, atomically (device scope).
AMAX_DEVICE unsigned amax_atomic_exch(unsigned* p, unsigned v) { return atomicExch(p, v); }
// Counts a block's arrival with one agent-scope acquire-release atomic (see prelude_cuda.h).
AMAX_DEVICE unsigned amax_arrive(unsigned* p) {
  return __hip_atomic_fetch_add(p, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
}
// first_reset's words, agent scope (see prelude_cuda.h): the scoped atomic builtins emit the
// cache maintenance each target needs (on gfx942/gfx950 the XCDs' L2 caches included).
AMAX_DEVICE unsigned long long amax_fetch_add_u64(unsigned long long* p, unsigned long long v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
AMAX_DEVICE void amax_store_release(unsigned* p, unsigned v) {
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
AMAX_DEVICE unsigned amax_load_acquire(const unsigned* p) {
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}
// Per 16-bit lane unsigned max of two packed words.
AMAX_DEVICE unsigned amax_max_u16x2(unsigned a, unsigned b) {
  unsigned lo = (a & 0xffffu) > (b & 0xffffu) ? (a & 0xffffu) : (b & 0xffffu);
  unsigned hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | (hi << 16);
}
// Zeroes each 16-bit lane of w that is greater than the same lane of limit.
AMAX_DEVICE unsigned amax_zero_above_u16x2(unsigned w, unsigned limit) {
  unsigned lo = (w & 0xffffu) > (limit & 0xffffu) ? 0u : (w & 0xffffu);
  unsigned hi = (w >> 16) > (limit >> 16) ? 0u : (w & 0xffff0000u);
  return lo | hi;
}
AMAX_DEVICE unsigned amax_float_bits(float f) { return __float_as_uint(f); }
AMAX_DEVICE float amax_bits_float(unsigned u) { return __uint_as_float(u); }
// fp32 a / b and 1 / x rounded to nearest (IEEE), denormals kept. HIP's __frcp_rn is not
// correctly rounded on every ROCm (some map it to v_rcp_f32, 1 ulp), so the reciprocal is a
// division: clang compiles HIP fp32 division correctly rounded by default
// (-fhip-fp32-correctly-rounded-divide-sqrt; hipRTC is given no fast-math option).
AMAX_DEVICE float amax_div_rn(float a, float b) { return a / b; }
AMAX_DEVICE float amax_rcp_rn(float x) { return 1.0f / x; }
// Programmatic dependent launch is a CUDA (sm_90+) feature: no-ops here (see prelude_cuda.h).
AMAX_DEVICE void amax_launch_dependents() {}
AMAX_DEVICE void amax_wait_prerequisite_grid() {}

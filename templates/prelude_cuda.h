// ---- amax-tune prelude: NVIDIA (NVRTC) ----
// Everything the vendor-neutral kernels need from the vendor; no header is included.
#define AMAX_WAVE_SIZE 32
#define AMAX_DEVICE __device__ __forceinline__
#define AMAX_GLOBAL extern "C" __global__
// min_blocks (blocks per SM the register allocation must allow) is derived by the generator from
// the bytes each thread keeps in flight, so that ptxas' register cap fits them without spilling.
#define AMAX_LAUNCH_BOUNDS(n, min_blocks) __launch_bounds__(n, min_blocks)
#define AMAX_RESTRICT __restrict__

// Full-warp shuffle. The member mask covers every lane of the warp (AMAX_WAVE_SIZE lanes).
AMAX_DEVICE unsigned amax_shfl_xor(unsigned v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, AMAX_WAVE_SIZE);
}
// One bit per lane of the wave (bit i: lane i), set where pred holds; every lane must call it.
typedef unsigned amax_wave_mask;
AMAX_DEVICE amax_wave_mask amax_ballot(bool pred) { return __ballot_sync(0xffffffffu, pred); }
// The lowest set lane of a non-zero mask.
AMAX_DEVICE unsigned amax_lowest_lane(amax_wave_mask m) { return (unsigned)(__ffs((int)m) - 1); }
AMAX_DEVICE unsigned amax_atomic_max(unsigned* p, unsigned v) { return atomicMax(p, v); }
// Stores v at p and returns the word it replaced, atomically (device scope).
AMAX_DEVICE unsigned amax_atomic_exch(unsigned* p, unsigned v) { return atomicExch(p, v); }
// Counts a block's arrival with one device-scope acquire-release atomic: the block's earlier
// stores are visible to whoever sees the count (release), and the last block sees every earlier
// block's stores (acquire), without separate __threadfence() calls.
AMAX_DEVICE unsigned amax_arrive(unsigned* p) {
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
// first_reset's words (device scope): a 64-bit atomic add returning the old value (relaxed), a
// release store (the thread's earlier stores are visible to whoever acquires the value) and an
// acquire load (later loads and atomics of the thread happen after it).
AMAX_DEVICE unsigned long long amax_fetch_add_u64(unsigned long long* p, unsigned long long v) {
  return atomicAdd(p, v);
}
AMAX_DEVICE void amax_store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
AMAX_DEVICE unsigned amax_load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Per 16-bit lane unsigned max of two packed words (one VIMNMX on sm_90).
AMAX_DEVICE unsigned amax_max_u16x2(unsigned a, unsigned b) { return __vmaxu2(a, b); }
// Zeroes each 16-bit lane of w that is greater than the same lane of limit.
AMAX_DEVICE unsigned amax_zero_above_u16x2(unsigned w, unsigned limit) {
  return w & ~__vcmpgtu2(w, limit);
}
AMAX_DEVICE unsigned amax_float_bits(float f) { return __float_as_uint(f); }
AMAX_DEVICE float amax_bits_float(unsigned u) { return __uint_as_float(u); }
// fp32 a / b and 1 / x rounded to nearest (IEEE), whatever the compile options; denormals are
// kept (NVRTC runs with --ftz=false). The scale rule needs both exact (amax_scale_rule).
AMAX_DEVICE float amax_div_rn(float a, float b) { return __fdiv_rn(a, b); }
AMAX_DEVICE float amax_rcp_rn(float x) { return __frcp_rn(x); }
// Programmatic dependent launch (Hopper, sm_90+; CUDA programming guide "Programmatic Dependent
// Launch and Synchronization", PTX ISA griddepcontrol): two_stage's first stage lets its finish
// kernel be launched before it completes, and the finish kernel waits, before it reads the
// workspace, until the first stage has completed and its stores are visible. Both are no-ops in
// an ordinary launch and below sm_90.
AMAX_DEVICE void amax_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
AMAX_DEVICE void amax_wait_prerequisite_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

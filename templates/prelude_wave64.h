// ---- amax-tune prelude: the wave-64 model (AMD's wave on an NVIDIA GPU, NVRTC) ----
// Runs the sources rendered for AMD (AMAX_WAVE_SIZE 64) on an NVIDIA GPU, in place of
// prelude_hip.h: one AMD wave is two 32-lane warps of the block (threads 64w .. 64w + 31 and
// 64w + 32 .. 64w + 63), whose wave-wide operations exchange through a per-wave shared-memory
// scratch with a flag handshake (no named barrier: a block has 16 of them, and up to 16 waves). The
// rest is AMD's semantics as prelude_hip.h gives them: launch bounds of the block size only, no
// programmatic dependent launch. The memory and arithmetic operations (device-scope atomics,
// release and acquire, packed 16-bit max, fp32 division and reciprocal rounded to nearest) are
// prelude_cuda.h's own, appended after this text by the model (tests/wave64/wave64_model.cpp): the
// same orders and roundings prelude_hip.h asks of the AMD compiler. Test-only: not embedded in the
// generator, not part of any template hash (docs/amd.md, "The wave-64 model").
#define AMAX_WAVE_SIZE 64
#define AMAX_DEVICE __device__ __forceinline__
#define AMAX_GLOBAL extern "C" __global__
#define AMAX_LAUNCH_BOUNDS(n, min_blocks) __launch_bounds__(n)
#define AMAX_RESTRICT __restrict__

// ---- the wave exchange ----
// Waves per block at most (1024 threads, the block limit of both vendors).
#define AMAX_W64_MAX_WAVES 16
// How long a warp waits for the other warp of its wave before it gives up and counts a fault;
// once any fault is counted in the module, a wait gives up after AMAX_W64_DRAIN_NS instead, so
// that a broken handshake costs one timeout per launch, not one per wait.
#define AMAX_W64_TIMEOUT_NS 2000000000ull
#define AMAX_W64_DRAIN_NS 1000000ull

// Handshake timeouts of this module's kernels since the last amax_wave64_take_faults.
__device__ unsigned amax_w64_faults;
// Writes the module's fault count to *out and zeroes it (one thread; the harness launches it after
// the module's kernels).
extern "C" __global__ void amax_wave64_take_faults(unsigned* out) { *out = atomicExch(&amax_w64_faults, 0u); }

// One wave's scratch. flag[h]: warp h's exchanges so far (low 24 bits) under the tag of the block
// execution that wrote it (high 40 bits); shared memory is not zeroed at block start, so a flag
// whose tag is not this block's counts as 0 exchanges. slot[k]: the lanes' values of the exchanges
// with an even (k = 0) or odd (k = 1) count: a warp writes slot[p & 1] at its exchange p only after
// the other warp has reached exchange p - 1, which it does only after reading slot[(p - 2) & 1].
struct amax_w64_wave {
  unsigned long long flag[2];
  unsigned slot[2][64];
};
AMAX_DEVICE amax_w64_wave* amax_w64_scratch() {
  __shared__ amax_w64_wave waves[AMAX_W64_MAX_WAVES];
  return &waves[threadIdx.x / 64u];
}
// 40 bits that differ between any two block executions of the context (the grid's launch number
// %gridid and the block index, mixed).
AMAX_DEVICE unsigned long long amax_w64_tag() {
  unsigned long long grid;
  asm("mov.u64 %0, %%gridid;" : "=l"(grid));
  return (grid * 0x9e3779b97f4a7c15ull + (blockIdx.x + 1ull) * 0xc2b2ae3d27d4eb4full) >> 24;
}
AMAX_DEVICE unsigned long long amax_w64_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Waits (acquire, block scope) until the flag at f holds `tag` and at least `count` exchanges.
AMAX_DEVICE void amax_w64_wait(const unsigned long long* f, unsigned long long tag, unsigned count) {
  const unsigned long long start = amax_w64_timer_ns();
  for (;;) {
    unsigned long long v;
    asm volatile("ld.acquire.cta.u64 %0, [%1];" : "=l"(v) : "l"(f) : "memory");
    if ((v >> 24) == tag && (v & 0xffffffu) >= count) return;
    const unsigned long long waited = amax_w64_timer_ns() - start;
    if (waited > AMAX_W64_TIMEOUT_NS ||
        (waited > AMAX_W64_DRAIN_NS && *(volatile unsigned*)&amax_w64_faults != 0u)) {
      atomicAdd(&amax_w64_faults, 1u);
      return;
    }
  }
}
// The wave's exchange: every lane of the wave (both warps) calls it; returns the value of lane
// (lane ^ lane_mask) of the wave.
AMAX_DEVICE unsigned amax_w64_exchange(unsigned v, unsigned lane_mask) {
  amax_w64_wave* w = amax_w64_scratch();
  const unsigned lane = threadIdx.x % 64u, half = lane / 32u;
  const unsigned long long tag = amax_w64_tag();
  __syncwarp();  // lane 0's flag store of the previous exchange is seen by every lane
  const unsigned long long own = *(volatile unsigned long long*)&w->flag[half];
  const unsigned p = (own >> 24) == tag ? (unsigned)(own & 0xffffffu) : 0u;
  volatile unsigned* slot = w->slot[p & 1u];
  slot[lane] = v;
  __syncwarp();  // the warp's slot stores before lane 0's release
  if (lane % 32u == 0u) {
    const unsigned long long next = (tag << 24) | (p + 1u);
    asm volatile("st.release.cta.u64 [%0], %1;" ::"l"(&w->flag[half]), "l"(next) : "memory");
  }
  amax_w64_wait(&w->flag[half ^ 1u], tag, p + 1u);
  return slot[lane ^ lane_mask];
}

// Wave-wide butterfly shuffle over the 64 lanes.
AMAX_DEVICE unsigned amax_shfl_xor(unsigned v, int lane_mask) {
  return amax_w64_exchange(v, (unsigned)lane_mask & 63u);
}
// One bit per lane of the wave (bit i: lane i), set where pred holds; every lane must call it.
typedef unsigned long long amax_wave_mask;
AMAX_DEVICE amax_wave_mask amax_ballot(bool pred) {
  const unsigned mine = __ballot_sync(0xffffffffu, pred);
  const unsigned other = amax_w64_exchange(mine, 32u);
  return (threadIdx.x & 32u) ? ((amax_wave_mask)mine << 32 | other) : ((amax_wave_mask)other << 32 | mine);
}
// The lowest set lane of a non-zero mask.
AMAX_DEVICE unsigned amax_lowest_lane(amax_wave_mask m) { return (unsigned)(__ffsll((long long)m) - 1); }

// No programmatic dependent launch on AMD: no-ops (the harness launches two_stage's finish kernel
// with an ordinary launch, as the HIP backend does).
AMAX_DEVICE void amax_launch_dependents() {}
AMAX_DEVICE void amax_wait_prerequisite_grid() {}

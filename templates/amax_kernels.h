// ---- amax-tune kernels: vendor-neutral bodies ----
// Computes amax = max |x| over n elements, bit-exact (DESIGN.md section 2). The generator defines
// before this text:
//   AMAX_THREADS      threads per block (a multiple of AMAX_WAVE_SIZE, at most AMAX_WAVE_SIZE^2)
//   AMAX_NVEC         elements per vector load (AMAX_NVEC * AMAX_ELEM_BYTES <= 16)
//   AMAX_UNROLL       vector loads in flight per thread per iteration
//   AMAX_ELEM_BYTES   4 (fp32) or 2 (fp16, bf16)
//   AMAX_DTYPE        AMAX_DTYPE_FP32, AMAX_DTYPE_FP16 or AMAX_DTYPE_BF16 (each defined too)
//   AMAX_ELEM_INF     the bits of +Inf in the element's format (0x7f80u for bf16)
//   AMAX_FP32_INF     0x7f800000u; AMAX_FP32_QNAN the canonical quiet NaN 0x7fc00000u
//   AMAX_STRATEGY     one of the AMAX_STRATEGY_* values (each defined too, from the generator's
//                     kStrategies)
//   AMAX_EPILOGUE     AMAX_EPILOGUE_AMAX (the amax alone) or AMAX_EPILOGUE_SCALE (the amax, then
//                     scale and scale_inv by amax_scale_rule in the same launch; each defined too,
//                     from the generator's kEpilogues)
//   AMAX_MIN_BLOCKS   blocks per SM/CU the register budget must allow (launch bounds)
//   AMAX_KERNEL_NAME  the stage-one entry point; AMAX_FINISH_NAME the two_stage second stage
//   (a multi-tensor source defines AMAX_MULTI instead of AMAX_STRATEGY and the two names: it takes
//   the helpers below and its entry point from amax_multi_kernels.h)
// and the vendor prelude defines AMAX_WAVE_SIZE, AMAX_DEVICE, AMAX_GLOBAL, AMAX_LAUNCH_BOUNDS,
// AMAX_RESTRICT, amax_shfl_xor, amax_wave_mask, amax_ballot, amax_lowest_lane, amax_atomic_max, amax_atomic_exch, amax_arrive,
// amax_fetch_add_u64, amax_store_release, amax_load_acquire, amax_max_u16x2,
// amax_zero_above_u16x2, amax_float_bits, amax_bits_float, amax_div_rn and amax_rcp_rn.
//
// Method. Everything is integer arithmetic on the elements' bits: clearing the sign bit gives |x|,
// and for non-negative IEEE values (denormals and +Inf included) unsigned integer order is numeric
// order, while every NaN compares above +Inf. So the unsigned max of the sign-cleared bits is the
// amax, and is a NaN exactly when a NaN is present: NaN propagation whatever its position, no
// denormal flushing, |-0.0| = +0.0. The NaN-ignoring mode (fmaxf semantics) zeroes NaN lanes first.
// 16-bit inputs are processed two lanes per 32-bit word. The block result is converted to fp32
// bits once per thread; a NaN result is written as the canonical quiet NaN 0x7fc00000.
//
// Stage-one signature (every strategy):
//   AMAX_KERNEL_NAME(const void* in, unsigned long long n, float* out,
//                    unsigned* workspace, unsigned* counter, unsigned flags)
//   in: n elements, element-aligned (any offset; the unaligned head and tail are peeled);
//   out: one fp32; workspace: one word per participant (below; two_stage, one_pass with more
//            than one);
//   counter: the stream's slot: words that are 0 before the launch and are 0 again after it:
//            counter[0] the arrival count (one_pass, self_reset), counter[1] the accumulator of
//            the participants' maxima (self_reset); except first_reset's three words,
//            zero only when the slot is allocated and kept from launch to launch:
//            counter[AMAX_FIRST_RESET_WORD .. +1] the 64-bit {arrivals (low 32 bits), epoch (high
//            32 bits)}, 0 arrivals between launches, and counter[AMAX_FIRST_RESET_WORD + 2] the
//            last published epoch + 1; only with more than one participant;
//   (participants: the grid's blocks)
//   flags: bit 0 set = ignore NaN.
// two_stage second stage: AMAX_FINISH_NAME(const unsigned* workspace, unsigned count, float* out),
// launched with one block of AMAX_THREADS threads; count = the participants.
// atomic requires *out == +0.0 before the launch (the launcher memsets it).
//
// The scale epilogue (AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE) adds one last parameter by value to
// the stage-one kernel and to the two_stage second stage: amax_scale_args_t (below: the scale and
// scale_inv outputs, the rule's max, epsilon and flags). Whoever writes the amax writes scale and
// scale_inv from it, in the same launch: the single block of a one-block grid, the last block of
// one_pass and self_reset, the second stage of two_stage, and for atomic the last
// block to arrive, counted on counter[0] as one_pass does (so atomic with the epilogue uses the
// stream slot when its grid has more than one block). The amax-only kernels' signatures are
// unchanged.

#define AMAX_VEC_BYTES (AMAX_NVEC * AMAX_ELEM_BYTES)
// The constants the host shares (AMAX_FLAG_IGNORE_NAN, AMAX_RULE_*, AMAX_SCALE_ARGS_BYTES and each
// strategy's named slot word) are rendered before this text from the generator's launch_plan.hpp
// (host_device_defines).
static_assert(AMAX_FIRST_RESET_WORD % 2u == 0u, "first_reset's 64-bit slot word must be 8-byte aligned");
// first_reset: the most polls of the publication a block makes before it gives up waiting (the
// publication comes within microseconds of the launch; the bound only keeps a slot shared against
// the rules from hanging the stream).
#define AMAX_FIRST_RESET_MAX_POLLS (1u << 20)

// The threads of a block: AMAX_THREADS loading threads and, for first_reset_warp, one wave more
// (its ticket wave: threads AMAX_THREADS .. AMAX_BLOCK_THREADS - 1), which loads nothing.
#if !defined(AMAX_MULTI) && AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET_WARP
#define AMAX_BLOCK_THREADS (AMAX_THREADS + AMAX_WAVE_SIZE)
#else
#define AMAX_BLOCK_THREADS AMAX_THREADS
#endif
#if AMAX_THREADS % AMAX_WAVE_SIZE != 0
#error "AMAX_THREADS must be a multiple of the wave size"
#endif
#if AMAX_BLOCK_THREADS > AMAX_WAVE_SIZE * AMAX_WAVE_SIZE
#error "AMAX_THREADS must be at most the wave size squared, with first_reset_warp's ticket wave (the block reduction finishes in one wave)"
#endif

typedef unsigned long long amax_u64;

// One vector load's worth of input: AMAX_VEC_BYTES bytes, naturally aligned.
#if AMAX_VEC_BYTES >= 4
struct alignas(AMAX_VEC_BYTES) amax_vec_t { unsigned w[AMAX_VEC_BYTES / 4]; };
#else
struct alignas(2) amax_vec_t { unsigned short h; };
#endif

AMAX_DEVICE unsigned amax_umax(unsigned a, unsigned b) { return a > b ? a : b; }

// ---- the scale rule: amax -> scale, scale_inv (FP8 current scaling, DESIGN.md section 6) ----
// TransformerEngine's compute_scale_from_amax, case by case, plus torchao's NaN option: the same
// operations in the same order as the CPU reference amax::reference_scale_bits
// (common/include/amax/scale_rule.hpp, which cites TE's source by commit), so both agree to the
// bit. The one device function of the rule: every kernel family that writes a scale calls it.
//   1. amax < epsilon: amax = epsilon (an fp32 compare: a NaN amax stays NaN);
//   2. amax infinite, zero or NaN: scale = 1;
//   3. else scale = max / amax, fp32 division rounded to nearest (amax_div_rn);
//   4. an infinite quotient (a tiny amax, e.g. a denormal) becomes the largest finite fp32;
//   5. AMAX_RULE_FORCE_POW2: the scale's mantissa bits are cleared (down to a power of two);
//   6. scale_inv = 1 / scale rounded to nearest (amax_rcp_rn; TE's __frcp_rn), denormals kept.
// AMAX_RULE_NAN_PROPAGATES: a NaN amax (any payload) gives scale = scale_inv = 0x7fc00000.
// amax_bits: any fp32 bits (the kernels pass a sign-cleared amax). max: positive and finite;
// epsilon: finite and >= 0 (the runtime validates both).
struct amax_scale_bits_t {
  unsigned scale;
  unsigned scale_inv;
};
AMAX_DEVICE amax_scale_bits_t amax_scale_rule(unsigned amax_bits, float max, float epsilon, unsigned rule_flags) {
  amax_scale_bits_t r;
  if ((amax_bits & 0x7fffffffu) > AMAX_FP32_INF && (rule_flags & AMAX_RULE_NAN_PROPAGATES)) {
    r.scale = r.scale_inv = AMAX_FP32_QNAN;
    return r;
  }
  float amax = amax_bits_float(amax_bits);
  if (amax < epsilon) amax = epsilon;
  const unsigned a = amax_float_bits(amax) & 0x7fffffffu;
  unsigned scale = 0x3f800000u;  // 1.0f
  if (!(a >= AMAX_FP32_INF || a == 0u)) {  // not infinite, NaN or zero
    scale = amax_float_bits(amax_div_rn(max, amax));
    if ((scale & 0x7fffffffu) == AMAX_FP32_INF) scale = 0x7f7fffffu;  // FLT_MAX (TE PR #786)
    if (rule_flags & AMAX_RULE_FORCE_POW2) scale &= 0xff800000u;
  }
  r.scale = scale;
  r.scale_inv = amax_float_bits(amax_rcp_rn(amax_bits_float(scale)));
  return r;
}

// The scale epilogue's kernel parameter (passed by value; the host's ScaleArgs, launch_plan.hpp).
struct amax_scale_args_t {
  float* scale;          // one fp32, device memory
  float* scale_inv;      // one fp32, device memory
  float max;             // the rule's numerator: the FP8 format's largest finite value or explicit
  float epsilon;         // the rule's floor of the amax
  unsigned rule_flags;   // AMAX_RULE_FORCE_POW2 | AMAX_RULE_NAN_PROPAGATES
};
static_assert(sizeof(amax_scale_args_t) == AMAX_SCALE_ARGS_BYTES, "host and device disagree on amax_scale_args_t");
AMAX_DEVICE void amax_write_scale(const amax_scale_args_t& sa, unsigned amax_bits) {
  const amax_scale_bits_t r = amax_scale_rule(amax_bits, sa.max, sa.epsilon, sa.rule_flags);
  *reinterpret_cast<unsigned*>(sa.scale) = r.scale;
  *reinterpret_cast<unsigned*>(sa.scale_inv) = r.scale_inv;
}

#if AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE
#define AMAX_SCALE_PARAM , amax_scale_args_t scale_args
#define AMAX_SCALE_ARG , scale_args
#else
#define AMAX_SCALE_PARAM
#define AMAX_SCALE_ARG
#endif

// ---- folding input words into a thread's accumulator ----
#if AMAX_ELEM_BYTES == 4
// Accumulator: the sign-cleared fp32 bits.
template <bool IGNORE_NAN>
AMAX_DEVICE unsigned amax_fold_word(unsigned acc, unsigned w) {
  w &= 0x7fffffffu;
  if (IGNORE_NAN) w = w > AMAX_FP32_INF ? 0u : w;
  return amax_umax(acc, w);
}
AMAX_DEVICE unsigned amax_load_element(const unsigned char* p) {
  return *reinterpret_cast<const unsigned*>(p);
}
// Accumulator -> sign-cleared fp32 bits.
AMAX_DEVICE unsigned amax_acc_to_fp32_bits(unsigned acc) { return acc; }
#else
// Accumulator: two 16-bit lanes, each the sign-cleared element bits seen in that lane.
template <bool IGNORE_NAN>
AMAX_DEVICE unsigned amax_fold_word(unsigned acc, unsigned w) {
  w &= 0x7fff7fffu;
  if (IGNORE_NAN) w = amax_zero_above_u16x2(w, AMAX_ELEM_INF | (AMAX_ELEM_INF << 16));
  return amax_max_u16x2(acc, w);
}
AMAX_DEVICE unsigned amax_load_element(const unsigned char* p) {
  return *reinterpret_cast<const unsigned short*>(p);
}
// One sign-cleared 16-bit value -> its exact fp32 bits.
AMAX_DEVICE unsigned amax_half_to_fp32_bits(unsigned h) {
#if AMAX_DTYPE == AMAX_DTYPE_BF16
  return h << 16;  // bf16 is the top half of an fp32; NaN stays NaN
#else
  unsigned e = h >> 10, m = h & 0x3ffu;
  if (e == 0x1fu) return m ? AMAX_FP32_QNAN : AMAX_FP32_INF;
  if (e == 0u) return amax_float_bits((float)m * 5.9604644775390625e-08f);  // m * 2^-24, exact
  return ((e + 112u) << 23) | (m << 13);  // rebias 15 -> 127
#endif
}
AMAX_DEVICE unsigned amax_acc_to_fp32_bits(unsigned acc) {
  unsigned lo = acc & 0xffffu, hi = acc >> 16;
  return amax_half_to_fp32_bits(lo > hi ? lo : hi);
}
#endif

template <bool IGNORE_NAN>
AMAX_DEVICE unsigned amax_fold_vec(unsigned acc, const amax_vec_t& v) {
#if AMAX_VEC_BYTES >= 4
#pragma unroll
  for (int k = 0; k < AMAX_VEC_BYTES / 4; ++k) acc = amax_fold_word<IGNORE_NAN>(acc, v.w[k]);
  return acc;
#else
  return amax_fold_word<IGNORE_NAN>(acc, v.h);
#endif
}

// ---- one thread's partial over a range (64-bit indexing) ----
// The input splits into an unaligned head (< AMAX_NVEC elements up to the first AMAX_VEC_BYTES
// boundary), `body` aligned vectors, and a tail (< AMAX_NVEC elements). Thread `tid` of `stride`
// threads folds head element tid, tail element tid and vectors tid, tid + stride, ... Returns
// fp32 bits.
template <bool IGNORE_NAN>
AMAX_DEVICE unsigned amax_range_partial(const unsigned char* AMAX_RESTRICT in, amax_u64 n, amax_u64 gtid,
                                        amax_u64 stride) {
  const amax_u64 misalign = (amax_u64)in % AMAX_VEC_BYTES;
  amax_u64 head = misalign ? (AMAX_VEC_BYTES - misalign) / AMAX_ELEM_BYTES : 0;
  if (head > n) head = n;
  const amax_u64 body = (n - head) / AMAX_NVEC;
  const amax_u64 tail = n - head - body * AMAX_NVEC;

  unsigned acc = 0;
  if (gtid < head) acc = amax_fold_word<IGNORE_NAN>(acc, amax_load_element(in + gtid * AMAX_ELEM_BYTES));
  if (gtid < tail)
    acc = amax_fold_word<IGNORE_NAN>(
        acc, amax_load_element(in + (head + body * AMAX_NVEC + gtid) * AMAX_ELEM_BYTES));

  const amax_vec_t* AMAX_RESTRICT vp =
      reinterpret_cast<const amax_vec_t*>(in + head * AMAX_ELEM_BYTES);
  amax_u64 i = gtid;
  // AMAX_UNROLL independent vector loads in flight, then fold them.
  for (; i + (AMAX_UNROLL - 1) * stride < body; i += AMAX_UNROLL * stride) {
    amax_vec_t v[AMAX_UNROLL];
#pragma unroll
    for (int u = 0; u < AMAX_UNROLL; ++u) v[u] = vp[i + u * stride];
#pragma unroll
    for (int u = 0; u < AMAX_UNROLL; ++u) acc = amax_fold_vec<IGNORE_NAN>(acc, v[u]);
  }
  for (; i < body; i += stride) acc = amax_fold_vec<IGNORE_NAN>(acc, vp[i]);
  return amax_acc_to_fp32_bits(acc);
}

// The calling thread's partial over the whole tensor (grid-stride). Returns fp32 bits.
template <bool IGNORE_NAN>
AMAX_DEVICE unsigned amax_thread_partial(const unsigned char* AMAX_RESTRICT in, amax_u64 n) {
  return amax_range_partial<IGNORE_NAN>(in, n, (amax_u64)blockIdx.x * AMAX_THREADS + threadIdx.x,
                                        (amax_u64)gridDim.x * AMAX_THREADS);
}

// ---- block reduction: max of fp32 bits over the block; the result is valid in thread 0 ----
// The fp32 bits of an amax with any NaN made the canonical quiet NaN 0x7fc00000, which is above
// every non-NaN value, so an atomic or integer max keeps it.
AMAX_DEVICE unsigned amax_canonical(unsigned bits) { return bits > AMAX_FP32_INF ? AMAX_FP32_QNAN : bits; }

AMAX_DEVICE unsigned amax_wave_reduce(unsigned v) {
#pragma unroll
  for (int off = AMAX_WAVE_SIZE / 2; off > 0; off >>= 1) v = amax_umax(v, amax_shfl_xor(v, off));
  return v;
}

AMAX_DEVICE unsigned amax_block_reduce(unsigned v) {
  v = amax_wave_reduce(v);
#if AMAX_BLOCK_THREADS > AMAX_WAVE_SIZE
  __shared__ unsigned wave_max[AMAX_BLOCK_THREADS / AMAX_WAVE_SIZE];
  const unsigned lane = threadIdx.x % AMAX_WAVE_SIZE, wave = threadIdx.x / AMAX_WAVE_SIZE;
  if (lane == 0) wave_max[wave] = v;
  __syncthreads();
  if (wave == 0) {
    v = lane < AMAX_BLOCK_THREADS / AMAX_WAVE_SIZE ? wave_max[lane] : 0u;
    v = amax_wave_reduce(v);
  }
#endif
  return v;
}

// Max over count fp32-bit words written by other blocks (volatile: one_pass reads them in the
// same launch, after the acquire of amax_arrive). Valid in thread 0.
AMAX_DEVICE unsigned amax_reduce_words(const volatile unsigned* words, unsigned count) {
  unsigned v = 0;
  for (unsigned i = threadIdx.x; i < count; i += AMAX_THREADS) v = amax_umax(v, words[i]);
  return amax_block_reduce(v);
}

#if !defined(AMAX_MULTI) && (AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET || AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET_WARP)
// first_reset's start, by thread 0 of each block (first_reset_warp: the first thread of its ticket wave) of a grid of more than one block, before its
// loads: takes a ticket (arrival index and epoch) on the slot's 64-bit word; the first block to
// arrive zeroes the output and publishes epoch + 1 with a release store; the last moves the word
// to the next epoch with 0 arrivals (an add of 2^32 - gridDim.x). Launches on one stream never
// overlap, so every launch finds 0 arrivals and all its blocks take the same epoch. Returns the
// value the publication will have (epoch + 1).
AMAX_DEVICE unsigned amax_first_reset_enter(unsigned* counter, float* out) {
  unsigned long long* word = reinterpret_cast<unsigned long long*>(counter + AMAX_FIRST_RESET_WORD);
  const unsigned long long ticket = amax_fetch_add_u64(word, 1ull);
  const unsigned arrival = (unsigned)ticket, want = (unsigned)(ticket >> 32) + 1u;
  if (arrival == gridDim.x - 1u) amax_fetch_add_u64(word, (1ull << 32) - gridDim.x);
  if (arrival == 0u) {
    *reinterpret_cast<unsigned*>(out) = 0u;
    amax_store_release(counter + AMAX_FIRST_RESET_WORD + 2u, want);
  }
  return want;
}
#endif

// Writes the amax (a NaN as the canonical 0x7fc00000) and, with the scale epilogue, scale and
// scale_inv from it. Called by one thread.
AMAX_DEVICE void amax_write_result(float* out, unsigned bits AMAX_SCALE_PARAM) {
  bits = amax_canonical(bits);
  *reinterpret_cast<unsigned*>(out) = bits;
#if AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE
  amax_write_scale(scale_args, bits);
#endif
}

// The single-tensor entry points (not rendered into multi-tensor sources, which define
// AMAX_MULTI and bring their own: amax_multi_kernels.h).
#ifndef AMAX_MULTI
AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_BLOCK_THREADS, AMAX_MIN_BLOCKS)
AMAX_KERNEL_NAME(const void* AMAX_RESTRICT in, amax_u64 n, float* out, unsigned* workspace,
                 unsigned* counter, unsigned flags AMAX_SCALE_PARAM) {
#if AMAX_STRATEGY == AMAX_STRATEGY_TWO_STAGE
  amax_launch_dependents();  // the finish kernel may start now; it waits for this grid's stores
#endif
#if AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET
  // The ticket before the loads: thread 0's warp waits for it while the block's other warps load.
  unsigned first_reset_want = 0u;
  if (threadIdx.x == 0 && gridDim.x > 1) first_reset_want = amax_first_reset_enter(counter, out);
#elif AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET_WARP
  // The ticket in the block's extra wave, which loads nothing: no loading wave waits for it. Its
  // result reaches thread 0 through shared memory, ordered by the block reduction's barrier.
  __shared__ unsigned first_reset_want_shared;
  unsigned first_reset_want = 0u;
  if (threadIdx.x == AMAX_THREADS && gridDim.x > 1) first_reset_want_shared = amax_first_reset_enter(counter, out);
#endif
  const unsigned char* p = static_cast<const unsigned char*>(in);
  const bool loads = AMAX_BLOCK_THREADS == AMAX_THREADS || threadIdx.x < AMAX_THREADS;  // the ticket wave: +0.0
  unsigned bits = !loads                           ? 0u
                  : (flags & AMAX_FLAG_IGNORE_NAN) ? amax_thread_partial<true>(p, n)
                                                   : amax_thread_partial<false>(p, n);
  bits = amax_block_reduce(bits);
  // The participants of the cross-block step below: the blocks.
  const unsigned part = blockIdx.x, parts = gridDim.x;
  (void)part;
#if AMAX_STRATEGY == AMAX_STRATEGY_ATOMIC
  // Canonical NaN (0x7fc00000) is above every non-NaN value, so the atomic max keeps it.
  if (threadIdx.x == 0) {
    unsigned* out_bits = reinterpret_cast<unsigned*>(out);
    bits = amax_canonical(bits);
    amax_atomic_max(out_bits, bits);
#if AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE
    // The last block to arrive (acquire-release count on counter[0], as one_pass) reads the
    // final amax with an atomic (max with 0 returns it unchanged), writes scale and scale_inv and
    // resets the count. The release orders each block's atomic max before its count. One block:
    // it holds the final amax itself and needs no count.
    if (parts == 1) {
      amax_write_scale(scale_args, bits);
    } else if (amax_arrive(counter) == parts - 1) {
      amax_write_scale(scale_args, amax_atomic_max(out_bits, 0u));
      *counter = 0u;
    }
#endif
  }
  (void)workspace; (void)counter; (void)parts;
#else
  if (parts == 1) {  // one participant: it holds the result; no workspace, no counter
    if (threadIdx.x == 0) amax_write_result(out, bits AMAX_SCALE_ARG);
    return;
  }
#if AMAX_STRATEGY == AMAX_STRATEGY_TWO_STAGE
  if (threadIdx.x == 0) workspace[part] = bits;
  (void)counter;
#elif AMAX_STRATEGY == AMAX_STRATEGY_SELF_RESET
  // Thread 0 folds the block maximum into the slot's accumulator (counter[1]) with an atomic max
  // on the fp32 bits (canonical NaN, as atomic), then counts the block with an acquire-release
  // add on counter[0]. The release orders this block's atomic max before its count; the last
  // block's acquire makes every earlier block's atomic max visible to its thread 0, which takes
  // the final maximum and zeroes the accumulator in one atomic exchange, writes the output and
  // zeroes the count. The next launch on the stream finds both words 0. No barrier: only thread 0
  // of each block takes part.
  if (threadIdx.x == 0) {
    amax_atomic_max(counter + 1, amax_canonical(bits));
    if (amax_arrive(counter) == parts - 1) {
      amax_write_result(out, amax_atomic_exch(counter + 1, 0u) AMAX_SCALE_ARG);
      *counter = 0u;
    }
  }
  (void)workspace;
#elif AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET || AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET_WARP
#if AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE
#error "first_reset has no scale epilogue (no block holds the final amax)"
#endif
  // Thread 0 waits (acquire loads) until the first block's zeroing of the output is published for
  // this launch's epoch, then folds the block maximum into the output with an atomic max on the
  // fp32 bits (canonical NaN, as atomic) whose result is not used: the block does not wait for it.
  // The acquire orders the atomic after the zeroing.
  if (threadIdx.x == 0) {
#if AMAX_STRATEGY == AMAX_STRATEGY_FIRST_RESET_WARP
    first_reset_want = first_reset_want_shared;
#endif
    const unsigned* published = counter + AMAX_FIRST_RESET_WORD + 2u;
    for (unsigned polls = 0; amax_load_acquire(published) != first_reset_want && polls < AMAX_FIRST_RESET_MAX_POLLS;
         ++polls) {
    }
    amax_atomic_max(reinterpret_cast<unsigned*>(out), amax_canonical(bits));
  }
  (void)workspace;
#else  // one_pass: the last block to arrive reduces the block maxima and resets the counter
  // Thread 0 stores the block maximum, then counts the block with an acquire-release atomic:
  // the release publishes the store; in the last block the acquire, followed by the barrier,
  // makes every other block's store visible to all its threads (the pattern of CUTLASS's
  // semaphore).
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    workspace[part] = bits;
    is_last = amax_arrive(counter) == parts - 1;
  }
  __syncthreads();
  if (is_last) {
    bits = amax_reduce_words(workspace, parts);
    if (threadIdx.x == 0) {
      amax_write_result(out, bits AMAX_SCALE_ARG);
      *counter = 0u;
    }
  }
#endif
#endif
}

#if AMAX_STRATEGY == AMAX_STRATEGY_TWO_STAGE
AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_THREADS, AMAX_MIN_BLOCKS)
AMAX_FINISH_NAME(const unsigned* AMAX_RESTRICT workspace, unsigned count, float* out AMAX_SCALE_PARAM) {
  amax_wait_prerequisite_grid();  // launched as a programmatic dependent: stage one's stores first
  unsigned bits = amax_reduce_words(workspace, count);
  if (threadIdx.x == 0) amax_write_result(out, bits AMAX_SCALE_ARG);
}
#endif
#endif  // AMAX_MULTI

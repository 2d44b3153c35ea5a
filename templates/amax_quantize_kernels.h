// ---- amax-tune kernels: the FP8 quantize of current scaling (appended after amax_kernels.h) ----
// q = FP8(x * scale) for every element, bit-exact with the CPU reference amax::fp8_from_fp32_bits
// (common/include/amax/fp8_cast.hpp, which cites TransformerEngine's and torchao's sources), and,
// in one launch, the amax and scale/scale_inv it needs (DESIGN.md section 9). The loads, folds,
// block reduction and scale rule are amax_kernels.h's; amax_kernels.h renders its single-tensor
// entry points unless AMAX_MULTI is defined, so a quantize source defines AMAX_MULTI too (no
// multi-tensor template follows). The generator defines, besides what amax_kernels.h needs
// (AMAX_THREADS, AMAX_NVEC, AMAX_UNROLL, the dtype's defines, AMAX_EPILOGUE = AMAX_EPILOGUE_AMAX,
// AMAX_MIN_BLOCKS):
//   AMAX_QUANTIZE          AMAX_QUANTIZE_CAST, AMAX_QUANTIZE_KEEP or AMAX_QUANTIZE_REREAD (each
//                          defined too): which kernel (below)
//   AMAX_QUANT_KEEP        vectors per thread kept in registers across the grid barrier (KEEP: 1 or
//                          more; the others 0)
//   AMAX_FP8_MANT_BITS, AMAX_FP8_BIAS, AMAX_FP8_MAX_CODE, AMAX_FP8_NAN_CODE, AMAX_FP8_FNUZ
//                          the FP8 format's encoding, from fp8_cast.hpp's encoding()
//   AMAX_QUANT_FLAG_TORCHAO  the flags bit of the torchao rule (the CastRule value's bit)
//   AMAX_QUANT_KERNEL_NAME the entry point
// Rendering: the compile-time constants, the vendor prelude, amax_kernels.h, amax_fp8_cast.h (the
// cast, amax_fp8_from_fp32), on NVIDIA sm_89+ for the OCP formats amax_fp8_cvt_cuda.h (the
// conversion instruction, two elements at a time, AMAX_FP8_HW_PAIR), then this file.
//
// The cast (amax_fp8_from_fp32, amax_fp8_cast.h) is integer arithmetic on the fp32 bits of the product, the same
// operations as the CPU reference, so it is the same on every vendor and needs no FP8 instruction:
// round to nearest even with an unbounded exponent, saturate to the largest finite code (rounding
// is monotonic: this is rounding to the nearest finite value), every NaN the format's NaN code
// without sign; fnuz: +-Inf is NaN under TransformerEngine's rule and +-max under torchao's, and a
// zero result has no sign. The product x * scale is one fp32 multiply rounded to nearest (no
// contraction: nothing is added to it), denormals kept (the JIT compilers never flush them).
//
// Entry points (flags: bit 0 = ignore NaN in the amax, AMAX_FLAG_IGNORE_NAN; bit 1 = the torchao
// rule, AMAX_QUANT_FLAG_TORCHAO):
//   AMAX_QUANTIZE_CAST: the second launch of the two-launch path, after a fused amax + scale:
//     AMAX_QUANT_KERNEL_NAME(const void* in, unsigned long long n, unsigned char* out,
//                            const float* scale, unsigned flags)
//     reads the scale from device memory once per thread and writes the n FP8 bytes; any grid
//     (grid-stride over vectors, AMAX_UNROLL loads in flight).
//   AMAX_QUANTIZE_KEEP, AMAX_QUANTIZE_REREAD: one launch, amax + scale + cast:
//     AMAX_QUANT_KERNEL_NAME(const void* in, unsigned long long n, unsigned char* out,
//                            float* amax_out, unsigned* sync, unsigned flags,
//                            amax_scale_args_t scale_args)
//     Every thread folds its elements into the amax, the blocks combine theirs through a grid-wide
//     barrier, and every thread then casts its elements with the scale of the final amax and
//     writes the bytes; the block that completes the barrier writes amax_out, scale and
//     scale_inv (amax_write_scale). KEEP holds the first AMAX_QUANT_KEEP vectors of each thread
//     (vectors tid + k * stride, k < AMAX_QUANT_KEEP) in registers across the barrier and re-reads
//     only what lies beyond them; REREAD holds nothing and reads its vectors a second time after
//     the barrier (in the same grid-stride order, so from the L2 / last-level cache where the
//     tensor fits). Correct for any n; KEEP reads the input once when n <= grid x AMAX_THREADS x
//     AMAX_QUANT_KEEP x AMAX_NVEC (the launcher sizes the grid so).
//     With more than one block the launch must be cooperative (every block resident: the
//     barrier waits for all of them) and `sync` is the stream's slot, zero when allocated, of
//     which three words are used: sync[AMAX_QUANT_SYNC_ARRIVALS] the arrival count (0 between
//     launches), sync[AMAX_QUANT_SYNC_ACCUMULATOR] the amax accumulator (0 between launches),
//     sync[AMAX_QUANT_SYNC_PUBLISHED] the publication, kept from launch to launch: the final
//     amax's bits (bits 0-30; an amax has no sign) and a parity bit (bit 31) that each launch
//     flips. A one-block grid touches none of them.
// The unaligned head and tail of the input (as amax_range_partial splits it) are single elements;
// the body's vectors are stored as AMAX_NVEC-byte words where out + head is AMAX_NVEC-aligned,
// byte by byte otherwise (the input and the output may be misaligned differently).

// The sync words' indices in the stream slot (AMAX_QUANT_SYNC_*) come from host_device_defines
// (launch_plan.hpp: kQuantize*Word), where the host checks them against the strategies' words.
static_assert(AMAX_QUANT_SYNC_ARRIVALS != AMAX_QUANT_SYNC_ACCUMULATOR &&
                  AMAX_QUANT_SYNC_PUBLISHED != AMAX_QUANT_SYNC_ARRIVALS &&
                  AMAX_QUANT_SYNC_PUBLISHED != AMAX_QUANT_SYNC_ACCUMULATOR,
              "the quantize sync words must be three distinct words of the slot");
#define AMAX_QUANT_PARITY 0x80000000u

#if AMAX_NVEC == 8
typedef unsigned long long amax_fp8_store_t;
#elif AMAX_NVEC == 4
typedef unsigned amax_fp8_store_t;
#elif AMAX_NVEC == 2
typedef unsigned short amax_fp8_store_t;
#else
typedef unsigned char amax_fp8_store_t;
#endif

// One element's exact fp32 bits from its own bits (the low 16 bits for 16-bit types), with sign.
AMAX_DEVICE unsigned amax_elem_to_fp32_bits(unsigned e) {
#if AMAX_ELEM_BYTES == 4
  return e;
#else
  return ((e & 0x8000u) << 16) | amax_half_to_fp32_bits(e & 0x7fffu);
#endif
}

// The FP8 byte of one element (its own bits) at `scale`.
AMAX_DEVICE float amax_scaled(unsigned e, float scale) { return amax_bits_float(amax_elem_to_fp32_bits(e)) * scale; }
AMAX_DEVICE unsigned amax_quantize_element(unsigned e, float scale, bool torchao) {
  return amax_fp8_from_fp32(amax_float_bits(amax_scaled(e, scale)), torchao);
}
// The FP8 bytes of two elements (bits 0-7: `lo`'s): the conversion instruction where the vendor's
// template provides it (AMAX_FP8_HW_PAIR), else the integer cast.
AMAX_DEVICE unsigned amax_quantize_pair(unsigned lo, unsigned hi, float scale, bool torchao) {
#ifdef AMAX_FP8_HW_PAIR
  (void)torchao;
  return amax_fp8x2_from_fp32x2(amax_scaled(lo, scale), amax_scaled(hi, scale));
#else
  return amax_quantize_element(lo, scale, torchao) | (amax_quantize_element(hi, scale, torchao) << 8);
#endif
}

// The AMAX_NVEC FP8 bytes of one vector, packed little-endian (byte k = element k).
AMAX_DEVICE amax_u64 amax_quantize_vec(const amax_vec_t& v, float scale, bool torchao) {
#if AMAX_NVEC == 1
#if AMAX_VEC_BYTES >= 4
  return amax_quantize_element(v.w[0], scale, torchao);
#else
  return amax_quantize_element(v.h, scale, torchao);
#endif
#else
  amax_u64 packed = 0;
#pragma unroll
  for (int k = 0; k < AMAX_NVEC / 2; ++k) {
#if AMAX_ELEM_BYTES == 4
    const unsigned pair = amax_quantize_pair(v.w[2 * k], v.w[2 * k + 1], scale, torchao);
#else
    const unsigned pair = amax_quantize_pair(v.w[k] & 0xffffu, v.w[k] >> 16, scale, torchao);
#endif
    packed |= (amax_u64)pair << (16 * k);
  }
  return packed;
#endif
}

// The input's split (amax_range_partial's): head elements before the first AMAX_VEC_BYTES boundary,
// body vectors, tail elements.
struct amax_quant_split_t {
  amax_u64 head, body, tail;
};
AMAX_DEVICE amax_quant_split_t amax_quant_split(const unsigned char* in, amax_u64 n) {
  amax_quant_split_t s;
  const amax_u64 misalign = (amax_u64)in % AMAX_VEC_BYTES;
  s.head = misalign ? (AMAX_VEC_BYTES - misalign) / AMAX_ELEM_BYTES : 0;
  if (s.head > n) s.head = n;
  s.body = (n - s.head) / AMAX_NVEC;
  s.tail = n - s.head - s.body * AMAX_NVEC;
  return s;
}

// Stores vector i's bytes at out + head + i * AMAX_NVEC: one word where `aligned`, else bytewise.
AMAX_DEVICE void amax_store_fp8_vec(unsigned char* out_body, amax_u64 i, amax_u64 packed, bool aligned) {
  unsigned char* p = out_body + i * AMAX_NVEC;
  if (aligned) {
    *reinterpret_cast<amax_fp8_store_t*>(p) = (amax_fp8_store_t)packed;
  } else {
#pragma unroll
    for (int k = 0; k < AMAX_NVEC; ++k) p[k] = (unsigned char)(packed >> (8 * k));
  }
}

// Casts and stores the body vectors from, from + stride, ... below `body`, AMAX_UNROLL loads in flight.
AMAX_DEVICE void amax_cast_vectors(const amax_vec_t* AMAX_RESTRICT vp, amax_u64 body, amax_u64 from, amax_u64 stride,
                                   unsigned char* AMAX_RESTRICT out_body, float scale, bool torchao, bool aligned) {
  amax_u64 i = from;
  for (; i + (AMAX_UNROLL - 1) * stride < body; i += AMAX_UNROLL * stride) {
    amax_vec_t v[AMAX_UNROLL];
#pragma unroll
    for (int u = 0; u < AMAX_UNROLL; ++u) v[u] = vp[i + u * stride];
#pragma unroll
    for (int u = 0; u < AMAX_UNROLL; ++u)
      amax_store_fp8_vec(out_body, i + u * stride, amax_quantize_vec(v[u], scale, torchao), aligned);
  }
  for (; i < body; i += stride) amax_store_fp8_vec(out_body, i, amax_quantize_vec(vp[i], scale, torchao), aligned);
}

#if AMAX_QUANTIZE == AMAX_QUANTIZE_CAST
// ---- the cast kernel of the two-launch path ----
AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_THREADS, AMAX_MIN_BLOCKS)
AMAX_QUANT_KERNEL_NAME(const void* AMAX_RESTRICT in, amax_u64 n, unsigned char* AMAX_RESTRICT out,
                       const float* AMAX_RESTRICT scale_ptr, unsigned flags) {
  const unsigned char* p = static_cast<const unsigned char*>(in);
  const amax_quant_split_t s = amax_quant_split(p, n);
  const float scale = *scale_ptr;
  const bool torchao = (flags & AMAX_QUANT_FLAG_TORCHAO) != 0u;
  const amax_u64 gtid = (amax_u64)blockIdx.x * AMAX_THREADS + threadIdx.x;
  const amax_u64 stride = (amax_u64)gridDim.x * AMAX_THREADS;
  if (gtid < s.head)
    out[gtid] = (unsigned char)amax_quantize_element(amax_load_element(p + gtid * AMAX_ELEM_BYTES), scale, torchao);
  if (gtid < s.tail) {
    const amax_u64 j = s.head + s.body * AMAX_NVEC + gtid;
    out[j] = (unsigned char)amax_quantize_element(amax_load_element(p + j * AMAX_ELEM_BYTES), scale, torchao);
  }
  const amax_vec_t* AMAX_RESTRICT vp = reinterpret_cast<const amax_vec_t*>(p + s.head * AMAX_ELEM_BYTES);
  unsigned char* out_body = out + s.head;
  const bool aligned = ((amax_u64)out_body % AMAX_NVEC) == 0u;
  amax_cast_vectors(vp, s.body, gtid, stride, out_body, scale, torchao, aligned);
}

#else
// ---- one launch: amax, grid barrier, scale, cast ----
#if AMAX_QUANTIZE == AMAX_QUANTIZE_KEEP && AMAX_QUANT_KEEP < 1
#error "AMAX_QUANTIZE_KEEP keeps at least one vector per thread"
#endif
#if AMAX_QUANTIZE == AMAX_QUANTIZE_REREAD && AMAX_QUANT_KEEP != 0
#error "AMAX_QUANTIZE_REREAD keeps no vector"
#endif

// The grid barrier with the amax: thread 0 of each block folds the block's maximum (fp32 bits)
// into the accumulator (an atomic max on the canonical bits, as self_reset) and counts the block
// with an acquire-release add. The last block to arrive takes the final amax and zeroes the
// accumulator in one exchange, zeroes the count, and publishes the amax with the flipped parity in
// one release store; the others poll the publication with acquire loads until the parity flips.
// The parity every block expects was read before it arrived, when no block of this launch could
// have published yet. Returns the final amax's canonical bits (in thread 0); *is_last: the caller
// completed the barrier.
AMAX_DEVICE unsigned amax_quant_grid_amax(unsigned* sync, unsigned bits, bool* is_last) {
  const unsigned parity = amax_load_acquire(sync + AMAX_QUANT_SYNC_PUBLISHED) & AMAX_QUANT_PARITY;
  amax_atomic_max(sync + AMAX_QUANT_SYNC_ACCUMULATOR, amax_canonical(bits));
  if (amax_arrive(sync + AMAX_QUANT_SYNC_ARRIVALS) == gridDim.x - 1u) {
    const unsigned amax = amax_atomic_exch(sync + AMAX_QUANT_SYNC_ACCUMULATOR, 0u);
    sync[AMAX_QUANT_SYNC_ARRIVALS] = 0u;
    amax_store_release(sync + AMAX_QUANT_SYNC_PUBLISHED, amax | (parity ^ AMAX_QUANT_PARITY));
    *is_last = true;
    return amax;
  }
  unsigned w;
  while (((w = amax_load_acquire(sync + AMAX_QUANT_SYNC_PUBLISHED)) & AMAX_QUANT_PARITY) == parity) {
  }
  *is_last = false;
  return w & ~AMAX_QUANT_PARITY;
}

template <bool IGNORE_NAN>
AMAX_DEVICE void amax_quantize_one_launch(const unsigned char* AMAX_RESTRICT p, amax_u64 n,
                                          unsigned char* AMAX_RESTRICT out, float* amax_out, unsigned* sync,
                                          bool torchao, const amax_scale_args_t& scale_args) {
  const amax_quant_split_t s = amax_quant_split(p, n);
  const amax_u64 gtid = (amax_u64)blockIdx.x * AMAX_THREADS + threadIdx.x;
  const amax_u64 stride = (amax_u64)gridDim.x * AMAX_THREADS;
  const amax_vec_t* AMAX_RESTRICT vp = reinterpret_cast<const amax_vec_t*>(p + s.head * AMAX_ELEM_BYTES);

  // Before the barrier: load and fold. The head and tail element (at most one each) and the kept
  // vectors stay in registers.
  unsigned acc = 0;
  unsigned head_elem = 0, tail_elem = 0;
  const amax_u64 tail_index = s.head + s.body * AMAX_NVEC + gtid;
  if (gtid < s.head) acc = amax_fold_word<IGNORE_NAN>(acc, head_elem = amax_load_element(p + gtid * AMAX_ELEM_BYTES));
  if (gtid < s.tail)
    acc = amax_fold_word<IGNORE_NAN>(acc, tail_elem = amax_load_element(p + tail_index * AMAX_ELEM_BYTES));
#if AMAX_QUANT_KEEP > 0
  amax_vec_t kept[AMAX_QUANT_KEEP];
#pragma unroll
  for (int k = 0; k < AMAX_QUANT_KEEP; ++k) {
    const amax_u64 i = gtid + k * stride;
    kept[k] = i < s.body ? vp[i] : amax_vec_t();  // zero bits: +0.0, neutral in the fold
  }
#pragma unroll
  for (int k = 0; k < AMAX_QUANT_KEEP; ++k) acc = amax_fold_vec<IGNORE_NAN>(acc, kept[k]);
#endif
  // Beyond the kept vectors: fold now, read again after the barrier.
  const amax_u64 rest = gtid + (amax_u64)AMAX_QUANT_KEEP * stride;
  {
    amax_u64 i = rest;
    for (; i + (AMAX_UNROLL - 1) * stride < s.body; i += AMAX_UNROLL * stride) {
      amax_vec_t v[AMAX_UNROLL];
#pragma unroll
      for (int u = 0; u < AMAX_UNROLL; ++u) v[u] = vp[i + u * stride];
#pragma unroll
      for (int u = 0; u < AMAX_UNROLL; ++u) acc = amax_fold_vec<IGNORE_NAN>(acc, v[u]);
    }
    for (; i < s.body; i += stride) acc = amax_fold_vec<IGNORE_NAN>(acc, vp[i]);
  }

  // The amax of the block, then of the grid; thread 0 derives the scale and shares it.
  unsigned bits = amax_block_reduce(amax_acc_to_fp32_bits(acc));
  __shared__ float block_scale;
  if (threadIdx.x == 0) {
    bool is_last = true;
    if (gridDim.x > 1u) bits = amax_quant_grid_amax(sync, bits, &is_last);
    bits = amax_canonical(bits);
    const amax_scale_bits_t r = amax_scale_rule(bits, scale_args.max, scale_args.epsilon, scale_args.rule_flags);
    if (is_last) {
      *reinterpret_cast<unsigned*>(amax_out) = bits;
      *reinterpret_cast<unsigned*>(scale_args.scale) = r.scale;
      *reinterpret_cast<unsigned*>(scale_args.scale_inv) = r.scale_inv;
    }
    block_scale = amax_bits_float(r.scale);
  }
  __syncthreads();
  const float scale = block_scale;

  // After the barrier: cast and store.
  unsigned char* out_body = out + s.head;
  const bool aligned = ((amax_u64)out_body % AMAX_NVEC) == 0u;
  if (gtid < s.head) out[gtid] = (unsigned char)amax_quantize_element(head_elem, scale, torchao);
  if (gtid < s.tail) out[tail_index] = (unsigned char)amax_quantize_element(tail_elem, scale, torchao);
#if AMAX_QUANT_KEEP > 0
#pragma unroll
  for (int k = 0; k < AMAX_QUANT_KEEP; ++k) {
    const amax_u64 i = gtid + k * stride;
    if (i < s.body) amax_store_fp8_vec(out_body, i, amax_quantize_vec(kept[k], scale, torchao), aligned);
  }
#endif
  amax_cast_vectors(vp, s.body, rest, stride, out_body, scale, torchao, aligned);
}

AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_THREADS, AMAX_MIN_BLOCKS)
AMAX_QUANT_KERNEL_NAME(const void* AMAX_RESTRICT in, amax_u64 n, unsigned char* AMAX_RESTRICT out, float* amax_out,
                       unsigned* sync, unsigned flags, amax_scale_args_t scale_args) {
  const unsigned char* p = static_cast<const unsigned char*>(in);
  const bool torchao = (flags & AMAX_QUANT_FLAG_TORCHAO) != 0u;
  if (flags & AMAX_FLAG_IGNORE_NAN)
    amax_quantize_one_launch<true>(p, n, out, amax_out, sync, torchao, scale_args);
  else
    amax_quantize_one_launch<false>(p, n, out, amax_out, sync, torchao, scale_args);
}
#endif

// ---- amax-tune kernels: many tensors per launch (appended after amax_kernels.h) ----
// One launch computes the amax (and, with the scale epilogue, scale and scale_inv) of each of up
// to AMAX_MULTI_MAX_TENSORS tensors of one dtype, with the helpers of amax_kernels.h and the same
// bit-exact contract per tensor (DESIGN.md sections 2 and 6). The generator defines, besides what
// amax_kernels.h needs (AMAX_STRATEGY excepted):
//   AMAX_MULTI               1
//   AMAX_COMBINE_THREAD, AMAX_COMBINE_WARP  the values of the combines (below), from the
//                            generator's kCombines
//   AMAX_EPILOGUE            AMAX_EPILOGUE_AMAX or AMAX_EPILOGUE_SCALE (amax_kernels.h)
//   AMAX_MULTI_MAX_TENSORS   tensors per launch: as many descriptors as the kernel-parameter limit
//                            of the target holds (32764 bytes on NVIDIA sm_70+ with CUDA 12.1+,
//                            4 KiB on AMD and older NVIDIA)
//   AMAX_MULTI_ARGS_BYTES    sizeof(amax_multi_args), as the host lays it out
//   AMAX_MULTI_CHUNK_SHIFT_BIT  the first bit of the chunk shift in amax_multi_args.flags
//   AMAX_MULTI_COMBINE_BIT   the bit of the combine's value in amax_multi_args.flags
//   AMAX_MULTI_KERNEL_NAME   the entry point
//
// Work split. Tensor t of the launch is cut into chunks of 2^chunk_shift elements
// (chunk_begin[t + 1] - chunk_begin[t] of them; an empty tensor has one empty chunk, so that its
// +0.0 is written too). Block b reduces the consecutive chunks [b * cpb, (b + 1) * cpb) of the
// launch (cpb = chunks_per_block, chosen by the host from the variant's grid cap; the last block
// may have fewer): one tensor lookup (a binary search over chunk_begin) per block, then it walks
// the tensors its range covers, one segment (the part of a tensor inside the range) after another,
// each a block reduction.
// Combining. A segment that is a whole tensor is written by its block directly. A tensor cut
// between blocks ("spanning") has one segment per block it touches; each stores its maximum in the
// workspace word of the segment's first chunk (heads[s]: the tensor's first chunk, then multiples
// of cpb). The block holding a spanning tensor's first chunk also writes a record {first chunk,
// end chunk, output index, 1} into its record slot; every other block writes {0, 0, 0, 0}, so no
// slot keeps what the workspace held before. When the launch has spanning tensors, every block
// then counts itself on the stream slot's arrival word (acquire-release, as one_pass), and the
// block that arrives last reads the records and combines each spanning tensor's heads -
// AMAX_COMBINE_THREAD: a thread per record (many tensors of few segments), AMAX_COMBINE_WARP: a
// wave per valid record, its lanes reading the heads in parallel (few tensors of many segments) -
// writes their results and sets the arrival word back to 0. No memset, no second launch; the
// workspace may hold anything before the launch. Workspace words: 4 per block (records), then one
// per chunk (heads).
// Launch parameters. The variant's chunk size (as chunk_shift) and combine come in the flags word,
// not compiled in, so that the variants of one thread count and unroll share a kernel; the host's
// chunks are powers of two of at least 4 KiB, whole numbers of vectors.
//
// Entry point: AMAX_MULTI_KERNEL_NAME(const amax_multi_args args), the descriptors by value in the
// kernel parameters, so that a captured graph holds its own copy and no host memory outlives the
// call that enqueued it.

// n_out[t]: the element count in the low 40 bits, the tensor's index in the output arrays above.
#define AMAX_MULTI_N_BITS 40
#define AMAX_MULTI_N_MASK ((1ull << AMAX_MULTI_N_BITS) - 1)

struct amax_multi_args {
  unsigned count;             // tensors in this launch, 1..AMAX_MULTI_MAX_TENSORS
  unsigned spanning;          // tensors of this launch cut between blocks (0: no block counts itself)
  unsigned flags;             // bit 0: ignore NaN; bit AMAX_MULTI_COMBINE_BIT: the combine; 8 bits from
                              // AMAX_MULTI_CHUNK_SHIFT_BIT: log2 of the elements per chunk
  unsigned chunks_per_block;  // consecutive chunks per block (>= 1)
  float* out;                 // the amax array of the whole call (out[index])
  unsigned* workspace;        // 4 words per block, then one per chunk (caller's memory, any content)
  unsigned* counter;          // the stream slot's arrival word: 0 before the launch and after it
  float* scale;               // scale epilogue: scale[index], scale_inv[index] (else NULL)
  float* scale_inv;
  float max;                  // scale epilogue: the rule's numerator, epsilon and flags
  float epsilon;
  unsigned rule_flags;
  unsigned reserved;
  const void* ptr[AMAX_MULTI_MAX_TENSORS];
  amax_u64 n_out[AMAX_MULTI_MAX_TENSORS];
  unsigned chunk_begin[AMAX_MULTI_MAX_TENSORS + 1];
};
static_assert(sizeof(amax_multi_args) == AMAX_MULTI_ARGS_BYTES, "host and device disagree on amax_multi_args");

// The tensor of chunk c: the last t with chunk_begin[t] <= c (the same for every thread of a block).
AMAX_DEVICE unsigned amax_multi_tensor_of(const amax_multi_args& a, unsigned c) {
  unsigned lo = 0, hi = a.count - 1;
  while (lo < hi) {
    const unsigned mid = (lo + hi + 1) / 2;
    if (a.chunk_begin[mid] <= c) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Writes tensor `index`'s amax (a NaN as the canonical 0x7fc00000) and, with the scale epilogue,
// its scale and scale_inv by amax_scale_rule. Called by one thread.
AMAX_DEVICE void amax_multi_write(const amax_multi_args& a, unsigned index, unsigned bits) {
  bits = amax_canonical(bits);
  reinterpret_cast<unsigned*>(a.out)[index] = bits;
#if AMAX_EPILOGUE == AMAX_EPILOGUE_SCALE
  const amax_scale_bits_t r = amax_scale_rule(bits, a.max, a.epsilon, a.rule_flags);
  reinterpret_cast<unsigned*>(a.scale)[index] = r.scale;
  reinterpret_cast<unsigned*>(a.scale_inv)[index] = r.scale_inv;
#endif
}

// The max of a spanning tensor's segment heads: heads[first], then heads[k * cpb] for every
// multiple of cpb in (first, end). `lane` of LANES threads takes every LANES-th of them; a thread
// alone (LANES 1, the thread combine) keeps four loads in flight, or it would wait for each in turn.
template <unsigned LANES>
AMAX_DEVICE unsigned amax_multi_heads(const volatile unsigned* heads, unsigned first, unsigned end, unsigned cpb,
                                      unsigned lane) {
  const amax_u64 next = (amax_u64)(first / cpb + 1) * cpb;  // the second head (64-bit: no overflow)
  unsigned v = 0;
  if (LANES == 1) {
    v = heads[first];
    amax_u64 h = next;
    for (; h + 3ull * cpb < end; h += 4ull * cpb) {
      const unsigned a = heads[h], b = heads[h + cpb], c = heads[h + 2ull * cpb], d = heads[h + 3ull * cpb];
      v = amax_umax(v, amax_umax(amax_umax(a, b), amax_umax(c, d)));
    }
    for (; h < end; h += cpb) v = amax_umax(v, heads[h]);
  } else {  // head k (k = lane, lane + LANES, ...): first for k = 0, else next + (k - 1) * cpb
    for (unsigned k = lane;; k += LANES) {
      const amax_u64 h = k == 0 ? first : next + (amax_u64)(k - 1) * cpb;
      if (h >= end) break;
      v = amax_umax(v, heads[h]);
    }
  }
  return v;
}

template <bool IGNORE_NAN>
AMAX_DEVICE void amax_multi_body(const amax_multi_args& a) {
  const unsigned cpb = a.chunks_per_block, chunks = a.chunk_begin[a.count];
  const unsigned c0 = blockIdx.x * cpb;
  const unsigned c1 = chunks - c0 < cpb ? chunks : c0 + cpb;
  const unsigned chunk_shift = (a.flags >> AMAX_MULTI_CHUNK_SHIFT_BIT) & 0xffu;
  unsigned* heads = a.workspace + 4u * gridDim.x;
  // This block's record (thread 0 writes it): the spanning tensor that starts here, if any.
  __shared__ unsigned rec[4];
  if (threadIdx.x == 0) rec[0] = rec[1] = rec[2] = rec[3] = 0u;
  for (unsigned t = amax_multi_tensor_of(a, c0);; ++t) {
    const unsigned first = a.chunk_begin[t], end = a.chunk_begin[t + 1];
    const unsigned s = first > c0 ? first : c0, e = end < c1 ? end : c1;
    const amax_u64 n = a.n_out[t] & AMAX_MULTI_N_MASK;
    const amax_u64 lo = (amax_u64)(s - first) << chunk_shift;  // n == 0: lo = hi = 0
    amax_u64 hi = (amax_u64)(e - first) << chunk_shift;
    if (hi > n) hi = n;
    const unsigned char* p = static_cast<const unsigned char*>(a.ptr[t]) + lo * AMAX_ELEM_BYTES;
    const unsigned bits = amax_block_reduce(amax_range_partial<IGNORE_NAN>(p, hi - lo, threadIdx.x, AMAX_THREADS));
    if (threadIdx.x == 0) {
      const unsigned index = static_cast<unsigned>(a.n_out[t] >> AMAX_MULTI_N_BITS);
      if (s == first && e == end) {
        amax_multi_write(a, index, bits);
      } else {
        heads[s] = bits;
        if (s == first) rec[0] = first, rec[1] = end, rec[2] = index, rec[3] = 1u;
      }
    }
    if (e == c1) break;
    __syncthreads();  // amax_block_reduce's shared words are reused by the next segment
  }
  if (a.spanning == 0) return;
  // As one_pass: thread 0 writes this block's heads and record, then counts the block with an
  // acquire-release atomic; in the last block the acquire, followed by the barrier, makes every
  // other block's stores visible to all its threads.
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    unsigned* r = a.workspace + 4u * blockIdx.x;
    r[0] = rec[0];
    r[1] = rec[1];
    r[2] = rec[2];
    r[3] = rec[3];
    is_last = amax_arrive(a.counter) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  const volatile unsigned* w = a.workspace;
  const volatile unsigned* h = heads;
  if (((a.flags >> AMAX_MULTI_COMBINE_BIT) & 1u) == AMAX_COMBINE_THREAD) {
    for (unsigned b = threadIdx.x; b < gridDim.x; b += AMAX_THREADS) {
      if (w[4 * b + 3] != 1u) continue;
      amax_multi_write(a, w[4 * b + 2], amax_multi_heads<1>(h, w[4 * b], w[4 * b + 1], cpb, 0));
    }
  } else {  // AMAX_COMBINE_WARP
    // Each wave looks at AMAX_WAVE_SIZE records at once (a lane per record), then takes the valid
    // ones one after another, all its lanes reading that tensor's heads.
    const unsigned lane = threadIdx.x % AMAX_WAVE_SIZE, wave = threadIdx.x / AMAX_WAVE_SIZE;
    for (unsigned base = wave * AMAX_WAVE_SIZE; base < gridDim.x; base += AMAX_THREADS) {
      amax_wave_mask valid = amax_ballot(base + lane < gridDim.x && w[4 * (base + lane) + 3] == 1u);
      while (valid) {
        const unsigned b = base + amax_lowest_lane(valid);
        valid &= valid - 1;
        const unsigned v = amax_wave_reduce(amax_multi_heads<AMAX_WAVE_SIZE>(h, w[4 * b], w[4 * b + 1], cpb, lane));
        if (lane == 0) amax_multi_write(a, w[4 * b + 2], v);
      }
    }
  }
  __syncthreads();  // every record read before the count is reset (no other block arrives now)
  if (threadIdx.x == 0) *a.counter = 0u;
}

AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_THREADS, AMAX_MIN_BLOCKS)
AMAX_MULTI_KERNEL_NAME(const amax_multi_args a) {
  if (a.flags & AMAX_FLAG_IGNORE_NAN) amax_multi_body<true>(a);
  else amax_multi_body<false>(a);
}

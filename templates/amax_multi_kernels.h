// ---- amax-tune kernels: many tensors per launch (appended after amax_kernels.h) ----
// One launch computes the amax of each of up to AMAX_MULTI_MAX_TENSORS tensors of one dtype, with
// the helpers of amax_kernels.h and the same bit-exact contract per tensor (DESIGN.md sections 2
// and 6). The generator defines, besides what amax_kernels.h needs (AMAX_STRATEGY excepted):
//   AMAX_MULTI               1
//   AMAX_CHUNK_KIB           KiB of input per block (a power of two; a multiple of the vector)
//   AMAX_COMBINE             AMAX_COMBINE_WARP or AMAX_COMBINE_BLOCK (below)
//   AMAX_MULTI_MAX_TENSORS   tensors per launch: as many descriptors as the kernel-parameter limit
//                            of the target holds (32764 bytes on NVIDIA sm_70+ with CUDA 12.1+,
//                            4 KiB on AMD and older NVIDIA)
//   AMAX_MULTI_ARGS_BYTES    sizeof(amax_multi_args), as the host lays it out
//   AMAX_MULTI_KERNEL_NAME   the entry point
//
// Work split: tensor t of the launch is cut into chunks of AMAX_CHUNK_ELEMS elements
// (chunk_begin[t + 1] - chunk_begin[t] of them; an empty tensor has one empty chunk, so that its
// +0.0 is written too); block b of the grid (grid = chunk_begin[count]) reduces chunk b.
// Combining: a tensor of one chunk is written by its block directly. A block of a tensor of several
// chunks stores its maximum in workspace[b] and counts itself on the stream slot's arrival word
// (acquire-release, as one_pass); the block that arrives last (count == multi_chunks - 1) reduces
// every such tensor's words - AMAX_COMBINE_WARP: one wave per tensor, AMAX_COMBINE_BLOCK: the whole
// block per tensor, one after another - writes their outputs and sets the arrival word back to 0.
// No memset, no second launch; the workspace may hold anything before the launch.
//
// Entry point: AMAX_MULTI_KERNEL_NAME(const amax_multi_args args), the descriptors by value in the
// kernel parameters, so that a captured graph holds its own copy and no host memory outlives the
// call that enqueued it.

#define AMAX_COMBINE_WARP 0
#define AMAX_COMBINE_BLOCK 1
#define AMAX_CHUNK_ELEMS ((amax_u64)AMAX_CHUNK_KIB * 1024u / AMAX_ELEM_BYTES)
// n_out[t]: the element count in the low 40 bits, the tensor's index in the output array above.
#define AMAX_MULTI_N_BITS 40
#define AMAX_MULTI_N_MASK ((1ull << AMAX_MULTI_N_BITS) - 1)

#if (AMAX_CHUNK_KIB * 1024) % AMAX_VEC_BYTES != 0
#error "a chunk must be a whole number of vectors"
#endif

struct amax_multi_args {
  unsigned count;         // tensors in this launch, 1..AMAX_MULTI_MAX_TENSORS
  unsigned multi_chunks;  // chunks of the tensors that have more than one (the arrival target)
  unsigned flags;         // bit 0: ignore NaN
  unsigned reserved;
  float* out;             // the output array of the whole call
  unsigned* workspace;    // one word per chunk of this launch (caller's memory, any content)
  unsigned* counter;      // the stream slot's arrival word: 0 before the launch and after it
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

AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(AMAX_THREADS, AMAX_MIN_BLOCKS)
AMAX_MULTI_KERNEL_NAME(const amax_multi_args a) {
  const unsigned c = blockIdx.x;
  const unsigned t = amax_multi_tensor_of(a, c);
  const unsigned first = a.chunk_begin[t], chunks = a.chunk_begin[t + 1] - first;
  const amax_u64 n = a.n_out[t] & AMAX_MULTI_N_MASK;
  const amax_u64 start = (amax_u64)(c - first) * AMAX_CHUNK_ELEMS;
  const amax_u64 len = n - start < AMAX_CHUNK_ELEMS ? n - start : AMAX_CHUNK_ELEMS;  // n == 0: 0
  const unsigned char* p = static_cast<const unsigned char*>(a.ptr[t]) + start * AMAX_ELEM_BYTES;
  unsigned bits = (a.flags & AMAX_FLAG_IGNORE_NAN) ? amax_range_partial<true>(p, len, threadIdx.x, AMAX_THREADS)
                                                    : amax_range_partial<false>(p, len, threadIdx.x, AMAX_THREADS);
  bits = amax_block_reduce(bits);
  if (chunks == 1) {  // the block holds the tensor's result
    if (threadIdx.x == 0) amax_write_result(a.out + (a.n_out[t] >> AMAX_MULTI_N_BITS), bits);
    return;
  }
  // As one_pass: thread 0 stores the block maximum, then counts the block with an acquire-release
  // atomic; in the last block the acquire, followed by the barrier, makes every other block's
  // store visible to all its threads.
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    a.workspace[c] = bits;
    is_last = amax_arrive(a.counter) == a.multi_chunks - 1;
  }
  __syncthreads();
  if (!is_last) return;
  const volatile unsigned* words = a.workspace;
#if AMAX_COMBINE == AMAX_COMBINE_WARP
  const unsigned lane = threadIdx.x % AMAX_WAVE_SIZE, wave = threadIdx.x / AMAX_WAVE_SIZE;
  for (unsigned u = wave; u < a.count; u += AMAX_THREADS / AMAX_WAVE_SIZE) {
    const unsigned b = a.chunk_begin[u], e = a.chunk_begin[u + 1];
    if (e - b < 2) continue;
    unsigned v = 0;
    for (unsigned i = b + lane; i < e; i += AMAX_WAVE_SIZE) v = amax_umax(v, words[i]);
    v = amax_wave_reduce(v);
    if (lane == 0) amax_write_result(a.out + (a.n_out[u] >> AMAX_MULTI_N_BITS), v);
  }
#else
  for (unsigned u = 0; u < a.count; ++u) {
    const unsigned b = a.chunk_begin[u], e = a.chunk_begin[u + 1];
    if (e - b < 2) continue;
    const unsigned v = amax_reduce_words(words + b, e - b);
    if (threadIdx.x == 0) amax_write_result(a.out + (a.n_out[u] >> AMAX_MULTI_N_BITS), v);
    __syncthreads();  // amax_block_reduce's shared words are reused by the next tensor
  }
#endif
  if (threadIdx.x == 0) *a.counter = 0u;
}

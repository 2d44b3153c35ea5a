// Probe (not part of the build, not maintained: experiments/README.md): where amax's time goes
// beyond the streaming read, from 16 KiB to 16 MiB, in GPU time. One file, no project dependencies.
//
// Build and run on the GPU machine (sm_90: the cluster candidates need Hopper):
//   nvcc -O3 -arch=sm_90 -std=c++17 experiments/tail_probe.cu -o tail_probe && ./tail_probe
// Options: --quick (3 sizes, fewer shapes: a smoke test), --sizes 16K,1M (a subset),
// --rounds N (final rounds, default 9). With OUT set, the table is also written to
// $OUT/tail_probe.csv. Exit status 1 if any candidate gave a wrong result (it is then not timed).
//
// Protocol (nvbench's blocking-kernel method, DESIGN.md section 5):
//  - a one-thread gate kernel spins (__nanosleep) on a volatile flag in mapped pinned host memory,
//    with a %globaltimer timeout (200 ms; a batch whose gate timed out is counted and reported);
//    the start event is recorded behind it, a batch of calls is enqueued, the stop event recorded,
//    then the flag released: elapsed / calls is GPU time per call, free of the host's launch rate;
//  - cold inputs: every call of a batch reads its own slice of a 4 GiB pool (more than 60x the
//    H200's L2), slices taken in order and wrapping around, so a slice was last read >= 4 GiB ago;
//  - batches: 128 calls up to 1 MiB, 64 above (>= 0.25 ms of GPU time each);
//  - screening: every configuration of every candidate (threads x unroll x grid), 3 interleaved
//    rounds; then the 2 fastest configurations per candidate, the empty kernel and the project's
//    streaming read are re-measured in --rounds (>= 9) interleaved rounds, and the table reports
//    each candidate's faster finalist (median of the final rounds only, so the screening's lucky
//    samples do not carry over).
//  - before a configuration is timed its result is compared bit for bit with a CPU reference on
//    the same size: random values with a planted maximum (negative, so |x| matters), run twice
//    (the stream-slot state must reset itself), then a NaN planted elsewhere (the result must be
//    the canonical NaN 0x7fc00000, and the planted maximum in NaN-ignoring mode).
//
// Candidates (16-byte vector loads throughout; "beyond read" is the time minus the project's
// streaming read of the same bytes, templates/bench_kernels.h: 512 threads, 4 loads in flight,
// grid min(ceil(vectors / 2048), 4 per SM)):
//  empty        <<<1, 32>>> doing nothing: the launch floor.
//  read         the project's streaming read (the floor of the table's "beyond read").
//  read_best    the same read with this probe's shapes (threads x unroll x grid): the true floor.
//  atomic       cudaMemsetAsync of the output, then one atomicMax per block (templates/amax_kernels.h).
//  te_shape     atomic in TransformerEngine's shape: 512 threads, 2 loads in flight, uncapped grid.
//  two_stage    block maxima to a workspace, a one-block finish kernel launched as a programmatic
//               dependent (PDL), as the project's two_stage on sm_90.
//  one_pass     block maxima to a workspace, an acquire-release count, the last block reduces them.
//  self_reset   atomicMax into a slot accumulator, acquire-release count, the last block takes the
//               accumulator with atomicExch and writes the output.
//  self_reset_red  as self_reset, but the block maximum is a fire-and-forget red.relaxed.gpu.max,
//               the count a release-only add, and only the last block runs an acquire fence.
//  clusterC     (C = 2, 4, 8, 16) Hopper thread-block clusters: each block stores its maximum into
//               rank 0's shared memory (distributed shared memory), one cluster barrier, then rank
//               0 alone does self_reset's global step over gridDim / C clusters (a grid of one
//               cluster writes the output directly: no global atomics at all). 16 is non-portable.
//  spin         a single-wave grid (at most the occupancy): blocks other than 0 store their maximum
//               with bit 31 set (an fp32 amax never has the sign bit) into their own word of a
//               zeroed slot array; block 0, after its own share, polls the words (data and flag in
//               one word: no fence, no atomic), zeroes them and writes the output. One global
//               round trip after the last block's store instead of self_reset's three. Relies on
//               all blocks being co-resident: plain launch here.
//  self_reset_pdl  self_reset launched as a programmatic dependent (PDL, sm_90): griddepcontrol.wait
//               at entry, launch_dependents after the block's loads, so the next call's launch
//               overlaps this call's combine. Only what PDL buys when the previous kernel in the
//               stream triggers early too (amax after amax here); a producer that does not trigger
//               (most framework kernels) gives no overlap.
//  spin_coop    spin launched cooperatively (co-residency guaranteed by the driver; the launch
//               fails instead of hanging when the grid does not fit).
//  first_reset_late  first_reset's ticket issued before the loads but read after them (no warp
//               waits for it before loading); the first block to arrive stores its own maximum and
//               publishes, the others fold theirs in after the publication.
//  first_reset  the output zeroed inside the launch, at its start, so that every block ends with a
//               fire-and-forget red.max on it and nobody waits for the last block: thread 0 of each
//               block takes a ticket (64-bit atomic add on {arrivals, epoch}) before its loads; the
//               first to arrive zeroes the output and publishes epoch + 1 (release store); the last
//               to arrive moves the word to the next epoch with 0 arrivals. After its loads a block
//               waits (acquire load) for the publication, normally long done, and does its red.max.
//               Any grid (the first block is resident by construction), no cooperative launch, and
//               nothing to reset at the end. amax only: a fused scale needs the final value.
//  first_reset_warp  first_reset with the ticket taken by an extra warp that loads nothing: blocks
//               of T + 32 threads on first_reset's grid for T, threads 0..T-1 loading as first_reset's
//               T threads do; lane 0 of the extra warp takes the ticket (and, in the first block,
//               zeroes and publishes) while the other warps load, so no loading warp waits for the
//               atomic; thread 0 waits for the publication after the block reduction and does the
//               red.max. T = 256 and 512 only (1024 + 32 threads exceed a block's limit).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace cg = cooperative_groups;
typedef unsigned long long u64;

#define CK(x) check_cuda((x), #x, __LINE__)
static void check_cuda(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "tail_probe: line %d: %s failed: %s\n", line, what, cudaGetErrorString(e));
    std::exit(2);
  }
}

constexpr unsigned kInf = 0x7f800000u, kQNaN = 0x7fc00000u;

// ---------------------------------------------------------------------------------------------
// Device side: the same integer method as templates/amax_kernels.h (sign-cleared bits, unsigned
// max; 16-bit inputs two lanes per word; NaN-ignoring mode zeroes NaN lanes).
enum Strat { S_READ, S_ATOMIC, S_ONE_PASS, S_SELF_RESET, S_SELF_RESET_RED, S_TWO_STAGE, S_CLUSTER, S_SPIN,
             S_SELF_RESET_PDL, S_FIRST_RESET, S_FIRST_RESET_LATE, S_FIRST_RESET_WARP };

// Threads per block of strategy s when T threads load: first_reset_warp adds its ticket warp.
__host__ __device__ constexpr int block_threads(int s, int T) { return s == S_FIRST_RESET_WARP ? T + 32 : T; }

__device__ __forceinline__ unsigned pmax(unsigned a, unsigned b) { return a > b ? a : b; }

template <int EB, bool IGN>
__device__ __forceinline__ unsigned fold_word(unsigned acc, unsigned w) {
  if (EB == 4) {
    w &= 0x7fffffffu;
    if (IGN) w = w > kInf ? 0u : w;
    return pmax(acc, w);
  } else {
    w &= 0x7fff7fffu;
    if (IGN) w &= ~__vcmpgtu2(w, 0x7f807f80u);
    return __vmaxu2(acc, w);
  }
}
template <int EB>
__device__ __forceinline__ unsigned acc_to_fp32(unsigned acc) {
  if (EB == 4) return acc;
  const unsigned lo = acc & 0xffffu, hi = acc >> 16;
  return (lo > hi ? lo : hi) << 16;  // bf16 -> fp32 bits
}
template <int EB>
__device__ __forceinline__ unsigned load_elem(const unsigned char* p) {
  return EB == 4 ? *reinterpret_cast<const unsigned*>(p) : *reinterpret_cast<const unsigned short*>(p);
}

// One thread's partial over a grid-stride range with an unaligned head and tail peeled (as the
// template's amax_range_partial). READ: xor instead of max (the streaming read's minimal work).
template <int EB, int T, int U, bool IGN, bool READ>
__device__ __forceinline__ unsigned thread_partial(const unsigned char* __restrict__ in, u64 n) {
  constexpr int NV = 16 / EB;
  const u64 gtid = (u64)blockIdx.x * T + threadIdx.x, stride = (u64)gridDim.x * T;
  const u64 mis = (u64)in % 16;
  u64 head = mis ? (16 - mis) / EB : 0;
  if (head > n) head = n;
  const u64 body = (n - head) / NV, tail = n - head - body * NV;
  unsigned acc = 0;
  if (gtid < head) acc = fold_word<EB, IGN>(acc, load_elem<EB>(in + gtid * EB));
  if (gtid < tail) acc = fold_word<EB, IGN>(acc, load_elem<EB>(in + (head + body * NV + gtid) * EB));
  const uint4* __restrict__ vp = reinterpret_cast<const uint4*>(in + head * EB);
  u64 i = gtid;
  for (; i + (U - 1) * stride < body; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = vp[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (READ) {
        acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
      } else {
        acc = fold_word<EB, IGN>(acc, v[u].x); acc = fold_word<EB, IGN>(acc, v[u].y);
        acc = fold_word<EB, IGN>(acc, v[u].z); acc = fold_word<EB, IGN>(acc, v[u].w);
      }
    }
  }
  for (; i < body; i += stride) {
    const uint4 v = vp[i];
    if (READ) {
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    } else {
      acc = fold_word<EB, IGN>(acc, v.x); acc = fold_word<EB, IGN>(acc, v.y);
      acc = fold_word<EB, IGN>(acc, v.z); acc = fold_word<EB, IGN>(acc, v.w);
    }
  }
  return READ ? acc : acc_to_fp32<EB>(acc);
}

__device__ __forceinline__ unsigned warp_reduce(unsigned v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = pmax(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// Max over a block of NT threads; valid in thread 0. Callers separate two calls by a __syncthreads().
template <int NT>
__device__ __forceinline__ unsigned block_reduce(unsigned v) {
  static_assert(NT % 32 == 0 && NT / 32 <= 32, "whole warps, at most 32");
  v = warp_reduce(v);
  if (NT > 32) {
    __shared__ unsigned wmax[NT / 32];
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    if (lane == 0) wmax[w] = v;
    __syncthreads();
    if (w == 0) v = warp_reduce(lane < NT / 32 ? wmax[lane] : 0u);
  }
  return v;
}
__device__ __forceinline__ unsigned canon(unsigned b) { return b > kInf ? kQNaN : b; }
__device__ __forceinline__ unsigned arrive_acq_rel(unsigned* p) {
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
__device__ __forceinline__ unsigned arrive_release(unsigned* p) {
  unsigned old;
  asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
__device__ __forceinline__ void red_max_relaxed(unsigned* p, unsigned v) {
  asm volatile("red.relaxed.gpu.global.max.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u64 gtime() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// first_reset's wait: acquire loads of the published epoch word until it reads `want`. After 100 ms
// it gives up (a hang would stall the whole probe): the result is then wrong and the check fails.
__device__ __forceinline__ void wait_published(const unsigned* p, unsigned want) {
  u64 t0 = 0, polls = 0;
  while (ld_acquire(p) != want) {
    if (polls++ == 0) t0 = gtime();
    else if ((polls & 63) == 0 && gtime() - t0 > 100000000ull) break;
  }
}

// first_reset's ticket, by the one thread of a block that takes it: a 64-bit atomic add on the word
// ctr[0..1] = (epoch << 32) | arrivals. The first block to arrive zeroes the output and publishes
// epoch + 1 in ctr[2] with a release store; the last to arrive moves the word to the next epoch with
// 0 arrivals (a fire-and-forget add), so every launch starts at 0 arrivals. Nothing is left to
// reset at the end: the words persist from launch to launch. Returns epoch + 1, the value to wait for.
__device__ __forceinline__ unsigned first_reset_ticket(float* out, unsigned* ctr) {
  u64* word = reinterpret_cast<u64*>(ctr);
  const u64 ticket = atomicAdd(word, 1ull);
  const unsigned arrival = (unsigned)ticket, want = (unsigned)(ticket >> 32) + 1u;
  if (arrival == gridDim.x - 1) atomicAdd(word, (1ull << 32) - gridDim.x);
  if (arrival == 0) {
    st_relaxed(reinterpret_cast<unsigned*>(out), 0u);
    st_release(ctr + 2, want);
  }
  return want;
}

// Trace builds (-DTAIL_TRACE): thread 0 of every block stores %globaltimer at 4 points into
// g_trace[block * 4 + k]: 0 kernel entry, 1 its own loads folded, 2 the block reduced (every warp's
// loads done), 3 the block's last action (for the block that writes the output: after the write).
// The tail of a call is max(3) - max(2): from the last block's reduced maximum to the end.
#ifdef TAIL_TRACE
__device__ u64* g_trace;
#define TRACE_AT(block, k) \
  do { if (threadIdx.x == 0 && g_trace) g_trace[(u64)(block) * 4 + (k)] = gtime(); } while (0)
#else
#define TRACE_AT(block, k) do { } while (0)
#endif
#define TRACE(k) TRACE_AT(blockIdx.x, k)

// self_reset's global step, by one thread holding its (block's or cluster's) maximum `b`;
// `parts` participants count on ctr[0], accumulate on ctr[1]. The last writes out, resets both.
__device__ __forceinline__ void self_reset_step(unsigned b, unsigned parts, float* out, unsigned* ctr) {
  atomicMax(ctr + 1, canon(b));
  if (arrive_acq_rel(ctr) == parts - 1) {
    *reinterpret_cast<unsigned*>(out) = atomicExch(ctr + 1, 0u);
    *ctr = 0u;
  }
}

// The stage-one kernel of every strategy (one source, the strategy a template parameter).
// ws: a workspace of gridDim words (one_pass, two_stage) or the zeroed spin slots; ctr: the
// stream slot {count, accumulator}, zero before and after each launch; flags bit 0: ignore NaN.
template <int S, int EB, int T, int U>
__device__ __forceinline__ void kbody(const void* __restrict__ in_, u64 n, float* out, unsigned* ws,
                                      unsigned* ctr, unsigned flags) {
  if constexpr (S == S_TWO_STAGE) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  // self_reset_pdl: launched as a programmatic dependent, it waits for the previous kernel of the
  // stream (its input and the slot) before anything, and lets the next one launch once its own
  // loads are done, so the next call's launch overlaps this call's combine.
  if constexpr (S == S_SELF_RESET_PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned char* in = static_cast<const unsigned char*>(in_);
  // first_reset: thread 0 takes the ticket (first_reset_ticket) before its loads, the other warps
  // load meanwhile. first_reset_warp: lane 0 of the extra warp (thread T) takes it while all T
  // loading threads load, and hands the value to wait for to thread 0 in shared memory (written
  // before block_reduce's __syncthreads, read after it).
  constexpr bool kTicketWarp = S == S_FIRST_RESET_WARP;
  unsigned fr_want = 0;
  __shared__ unsigned fr_want_shared;
  if constexpr (S == S_FIRST_RESET || kTicketWarp) {
    if (threadIdx.x == (kTicketWarp ? T : 0) && gridDim.x > 1) {
      fr_want = first_reset_ticket(out, ctr);
      if constexpr (kTicketWarp) fr_want_shared = fr_want;
    }
  }
  // first_reset_late: the same ticket, issued before the loads but read after them, so that no warp
  // waits for it before loading (the atomic's result returns while the loads run). The first block
  // to arrive then stores its own maximum (no zeroing) and publishes; the others wait for that
  // publication at their end, as first_reset's do, and fold in theirs.
  u64 fr_ticket = 0;
  if constexpr (S == S_FIRST_RESET_LATE) {
    if (threadIdx.x == 0 && gridDim.x > 1) fr_ticket = atomicAdd(reinterpret_cast<u64*>(ctr), 1ull);
  }
  if constexpr (S == S_READ) {
    const unsigned acc = thread_partial<EB, T, U, false, true>(in, n);
    TRACE(1);
    TRACE(2);
    if (acc == 0x9e3779b9u) ws[0] = acc;  // practically never taken; keeps the loads
    return;
  }
  unsigned bits = 0;  // first_reset_warp's ticket warp loads nothing: it contributes 0
  if (!kTicketWarp || threadIdx.x < T)
    bits = (flags & 1u) ? thread_partial<EB, T, U, true, false>(in, n)
                        : thread_partial<EB, T, U, false, false>(in, n);
  TRACE(1);
  bits = block_reduce<block_threads(S, T)>(bits);
  TRACE(2);
  if constexpr (S == S_SELF_RESET_PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  unsigned* outb = reinterpret_cast<unsigned*>(out);
  if constexpr (S == S_ATOMIC) {
    if (threadIdx.x == 0) atomicMax(outb, canon(bits));
    return;
  }
  if constexpr (S == S_FIRST_RESET || kTicketWarp) {
    // Wait (acquire) until the first block's zeroing is published, then a fire-and-forget max.
    if (threadIdx.x == 0) {
      if (gridDim.x == 1) {
        *outb = canon(bits);
      } else {
        if constexpr (kTicketWarp) fr_want = fr_want_shared;
        wait_published(ctr + 2, fr_want);
        red_max_relaxed(outb, canon(bits));
      }
    }
    return;
  }
  if constexpr (S == S_FIRST_RESET_LATE) {
    if (threadIdx.x == 0) {
      if (gridDim.x == 1) {
        *outb = canon(bits);
      } else {
        const unsigned arrival = (unsigned)fr_ticket, want = (unsigned)(fr_ticket >> 32) + 1u;
        if (arrival == gridDim.x - 1) atomicAdd(reinterpret_cast<u64*>(ctr), (1ull << 32) - gridDim.x);
        if (arrival == 0) {
          st_relaxed(outb, canon(bits));
          st_release(ctr + 2, want);
        } else {
          wait_published(ctr + 2, want);
          red_max_relaxed(outb, canon(bits));
        }
      }
    }
    return;
  }
  if constexpr (S == S_CLUSTER) {
    // Every block stores its maximum into rank 0's shared memory; the cluster barrier (release /
    // acquire) makes them visible to rank 0, which also keeps rank 0 resident until all stores
    // landed. All threads of every block take part in the barrier.
    __shared__ unsigned cslot[16];
    cg::cluster_group cl = cg::this_cluster();
    const unsigned cs = cl.num_blocks(), rank = cl.block_rank();
    if (threadIdx.x == 0) *cl.map_shared_rank(&cslot[rank], 0) = bits;
    cl.sync();
    if (rank == 0 && threadIdx.x < 32) {
      unsigned v = threadIdx.x < cs ? cslot[threadIdx.x] : 0u;
      v = warp_reduce(v);
      if (threadIdx.x == 0) {
        if (gridDim.x == cs) *outb = canon(v);  // one cluster: no global step
        else self_reset_step(v, gridDim.x / cs, out, ctr);
      }
    }
    return;
  }
  if (gridDim.x == 1) {  // one block holds the result
    if (threadIdx.x == 0) *outb = canon(bits);
    return;
  }
  if constexpr (S == S_TWO_STAGE) {
    if (threadIdx.x == 0) ws[blockIdx.x] = canon(bits);
  } else if constexpr (S == S_SELF_RESET || S == S_SELF_RESET_PDL) {
    if (threadIdx.x == 0) self_reset_step(bits, gridDim.x, out, ctr);
  } else if constexpr (S == S_SELF_RESET_RED) {
    if (threadIdx.x == 0) {
      red_max_relaxed(ctr + 1, canon(bits));
      if (arrive_release(ctr) == gridDim.x - 1) {
        fence_acq_rel();
        *outb = atomicExch(ctr + 1, 0u);
        *ctr = 0u;
      }
    }
  } else if constexpr (S == S_ONE_PASS) {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
      ws[blockIdx.x] = canon(bits);
      is_last = arrive_acq_rel(ctr) == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last) {
      unsigned v = 0;
      const volatile unsigned* w = ws;
      for (unsigned i = threadIdx.x; i < gridDim.x; i += T) v = pmax(v, w[i]);
      v = block_reduce<T>(v);
      if (threadIdx.x == 0) {
        *outb = v;
        *ctr = 0u;
      }
    }
  } else if constexpr (S == S_SPIN) {
    if (blockIdx.x != 0) {
      if (threadIdx.x == 0) st_relaxed(ws + blockIdx.x, canon(bits) | 0x80000000u);
      return;
    }
    unsigned v = threadIdx.x == 0 ? canon(bits) : 0u;
    for (unsigned b = 1 + threadIdx.x; b < gridDim.x; b += T) {
      unsigned w;
      // A hang would stall the whole probe: after 100 ms the word is taken as NaN, which the
      // check reports as a wrong result.
      u64 t0 = gtime(), polls = 0;
      while (!((w = ld_relaxed(ws + b)) & 0x80000000u))
        if ((++polls & 63) == 0 && gtime() - t0 > 100000000ull) { w = 0xffffffffu; break; }
      st_relaxed(ws + b, 0u);
      v = pmax(v, w & 0x7fffffffu);
    }
    __syncthreads();  // block_reduce's shared words were read by wave 0 above
    v = block_reduce<T>(v);
    if (threadIdx.x == 0) *outb = v;
  }
}

template <int S, int EB, int T, int U>
__global__ void __launch_bounds__(block_threads(S, T))
    kmain(const void* __restrict__ in, u64 n, float* out, unsigned* ws, unsigned* ctr, unsigned flags) {
  TRACE(0);
  kbody<S, EB, T, U>(in, n, out, ws, ctr, flags);
  TRACE(3);
}

// two_stage's finish kernel: one block; in trace builds it records its start and end after the
// stage-one grid's `count` blocks.
template <int T>
__global__ void __launch_bounds__(T) kfinish(const unsigned* ws, unsigned count, float* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  TRACE_AT(count, 0);
  unsigned v = 0;
  for (unsigned i = threadIdx.x; i < count; i += T) v = pmax(v, ws[i]);
  v = block_reduce<T>(v);
  if (threadIdx.x == 0) *reinterpret_cast<unsigned*>(out) = v;
  TRACE_AT(count, 3);
}

__global__ void kempty() {}

__global__ void kgate(const volatile int* flag, int* timed_out, u64 timeout_ns) {
  u64 t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (*flag == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

// Fills the timing pool with finite values valid as fp32 and as bf16 pairs (|x| in [1/8, 1/4)).
__global__ void kfill(unsigned* p, u64 words) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (u64)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 0x9e3779b97f4a7c15ull >> 32);
    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12;
    p[i] = (h & 0x807f807fu) | 0x3e003e00u;
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.
typedef void (*KFn)(const void*, u64, float*, unsigned*, unsigned*, unsigned);

// The kernel of strategy S for T loading threads, or null where its block would exceed 1024 threads.
template <int S, int EB, int T, int U>
KFn kernel_or_null() {
  if constexpr (block_threads(S, T) > 1024) return nullptr;
  else return kmain<S, EB, T, U>;
}
template <int S, int EB>
KFn pick(int T, int U) {
#define PK(t, u) if (T == t && U == u) return kernel_or_null<S, EB, t, u>();
  PK(256, 1) PK(256, 2) PK(256, 4) PK(256, 8)
  PK(512, 1) PK(512, 2) PK(512, 4) PK(512, 8)
  PK(1024, 1) PK(1024, 2) PK(1024, 4) PK(1024, 8)
#undef PK
  return nullptr;
}
template <int S>
KFn pick_s(int eb, int T, int U) { return eb == 4 ? pick<S, 4>(T, U) : pick<S, 2>(T, U); }
static KFn pick_any(int s, int eb, int T, int U) {
  switch (s) {
    case S_READ: return pick_s<S_READ>(eb, T, U);
    case S_ATOMIC: return pick_s<S_ATOMIC>(eb, T, U);
    case S_ONE_PASS: return pick_s<S_ONE_PASS>(eb, T, U);
    case S_SELF_RESET: return pick_s<S_SELF_RESET>(eb, T, U);
    case S_SELF_RESET_RED: return pick_s<S_SELF_RESET_RED>(eb, T, U);
    case S_TWO_STAGE: return pick_s<S_TWO_STAGE>(eb, T, U);
    case S_CLUSTER: return pick_s<S_CLUSTER>(eb, T, U);
    case S_SPIN: return pick_s<S_SPIN>(eb, T, U);
    case S_SELF_RESET_PDL: return pick_s<S_SELF_RESET_PDL>(eb, T, U);
    case S_FIRST_RESET: return pick_s<S_FIRST_RESET>(eb, T, U);
    case S_FIRST_RESET_LATE: return pick_s<S_FIRST_RESET_LATE>(eb, T, U);
    case S_FIRST_RESET_WARP: return pick_s<S_FIRST_RESET_WARP>(eb, T, U);
  }
  return nullptr;
}
static void* finish_for(int T) {
  return T == 256 ? (void*)kfinish<256> : T == 512 ? (void*)kfinish<512> : (void*)kfinish<1024>;
}

struct Dev {
  int sms = 0;
  cudaStream_t s{};
  float* out = nullptr;
  unsigned* ws = nullptr;     // workspace (one_pass, two_stage) and the read's sink
  unsigned* slots = nullptr;  // spin slots: zero before and after every launch
  unsigned* ctr = nullptr;    // the stream slot {count, accumulator}: zero before and after
  unsigned* fr = nullptr;     // first_reset's words {arrivals, epoch, published epoch + 1}: zeroed once
};

// One timed configuration: a candidate at one shape.
struct Config {
  std::string cand;  // candidate name (the table's row)
  int strat = S_READ;
  int T = 512, U = 1;
  unsigned grid = 1;
  int cluster = 0;   // blocks per cluster (S_CLUSTER)
  bool coop = false;
  bool memset = false;
  bool empty = false;
  std::string label() const {
    if (empty) return "<<<1,32>>>";
    char b[96];
    std::snprintf(b, sizeof b, "t%d.u%d.g%u%s", T, U, grid,
                  cluster ? ("." + std::string("c") + std::to_string(cluster)).c_str() : "");
    return b;
  }
};

static cudaError_t launch(const Dev& d, const Config& c, int eb, const void* in, u64 n, unsigned flags) {
  if (c.empty) {
    kempty<<<1, 32, 0, d.s>>>();
    return cudaGetLastError();
  }
  if (c.memset) {
    const cudaError_t e = cudaMemsetAsync(d.out, 0, 4, d.s);
    if (e != cudaSuccess) return e;
  }
  KFn fn = pick_any(c.strat, eb, c.T, c.U);
  cudaLaunchConfig_t lc{};
  lc.gridDim = dim3(c.grid);
  lc.blockDim = dim3(block_threads(c.strat, c.T));
  lc.stream = d.s;
  cudaLaunchAttribute at[3];
  unsigned na = 0;
  if (c.cluster) {
    at[na].id = cudaLaunchAttributeClusterDimension;
    at[na].val.clusterDim.x = c.cluster; at[na].val.clusterDim.y = 1; at[na].val.clusterDim.z = 1;
    ++na;
  }
  if (c.strat == S_SELF_RESET_PDL) {
    at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[na].val.programmaticStreamSerializationAllowed = 1;
    ++na;
  }
  if (c.coop) {
    at[na].id = cudaLaunchAttributeCooperative;
    at[na].val.cooperative = 1;
    ++na;
  }
  lc.attrs = at;
  lc.numAttrs = na;
  unsigned* ws = c.strat == S_SPIN ? d.slots : d.ws;
  const bool fr = c.strat == S_FIRST_RESET || c.strat == S_FIRST_RESET_LATE || c.strat == S_FIRST_RESET_WARP;
  unsigned* ctr = fr ? d.fr : d.ctr;
  cudaError_t e = cudaLaunchKernelEx(&lc, fn, in, n, d.out, ws, ctr, flags);
  if (e != cudaSuccess || c.strat != S_TWO_STAGE || c.grid == 1) return e;
  cudaLaunchConfig_t fc{};
  fc.gridDim = dim3(1);
  fc.blockDim = dim3(c.T);
  fc.stream = d.s;
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  fc.attrs = &pdl;
  fc.numAttrs = 1;
  unsigned count = c.grid;
  const unsigned* wsc = d.ws;
  void* args[] = {&wsc, &count, (void*)&d.out};
  return cudaLaunchKernelExC(&fc, finish_for(c.T), args);
}

// CPU reference: max |x| as floats (independent of the kernels' integer method).
static unsigned reference(const std::vector<unsigned char>& h, int eb, bool ignore_nan) {
  float m = 0.0f;
  bool nan = false;
  const size_t n = h.size() / eb;
  for (size_t i = 0; i < n; ++i) {
    float x;
    if (eb == 4) {
      std::memcpy(&x, &h[i * 4], 4);
    } else {
      unsigned short b;
      std::memcpy(&b, &h[i * 2], 2);
      const unsigned u = (unsigned)b << 16;
      std::memcpy(&x, &u, 4);
    }
    const float a = std::fabs(x);
    if (std::isnan(a)) nan = true;
    else if (a > m) m = a;
  }
  if (nan && !ignore_nan) return kQNaN;
  unsigned u;
  std::memcpy(&u, &m, 4);
  return u;
}

struct CheckData {
  void* d_max = nullptr;   // planted maximum
  void* d_nan = nullptr;   // the same with a NaN elsewhere
  unsigned want_max = 0, want_nan = 0, want_nan_ignored = 0;
};

static CheckData make_check(int eb, u64 bytes, std::mt19937_64& rng) {
  CheckData c;
  const u64 n = bytes / eb;
  std::vector<unsigned char> h(bytes);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  for (u64 i = 0; i < n; ++i) {
    const float f = U(rng);
    unsigned u;
    std::memcpy(&u, &f, 4);
    if (eb == 4) std::memcpy(&h[i * 4], &u, 4);
    else { const unsigned short b = (unsigned short)(u >> 16); std::memcpy(&h[i * 2], &b, 2); }
  }
  const u64 pm = rng() % n;
  u64 pn = rng() % n;
  if (pn == pm) pn = (pm + 1) % n;
  const float big = -3.25f;  // |x| = 3.25, exact in bf16
  unsigned ub;
  std::memcpy(&ub, &big, 4);
  if (eb == 4) std::memcpy(&h[pm * 4], &ub, 4);
  else { const unsigned short b = (unsigned short)(ub >> 16); std::memcpy(&h[pm * 2], &b, 2); }
  c.want_max = reference(h, eb, false);
  CK(cudaMalloc(&c.d_max, bytes));
  CK(cudaMemcpy(c.d_max, h.data(), bytes, cudaMemcpyHostToDevice));
  const unsigned nan32 = 0xffc01234u;  // a negative NaN with a payload
  if (eb == 4) std::memcpy(&h[pn * 4], &nan32, 4);
  else { const unsigned short b = 0xffc1; std::memcpy(&h[pn * 2], &b, 2); }
  c.want_nan = reference(h, eb, false);
  c.want_nan_ignored = reference(h, eb, true);
  CK(cudaMalloc(&c.d_nan, bytes));
  CK(cudaMemcpy(c.d_nan, h.data(), bytes, cudaMemcpyHostToDevice));
  return c;
}

// Runs one call and returns the output's bits; 0xdeadbeef is written first so a kernel that
// writes nothing is caught. Returns false (with a message) if the launch is refused; an error
// during the kernel (sticky: the context is lost) ends the probe.
static bool run_once(const Dev& d, const Config& c, int eb, const void* in, u64 n, unsigned flags,
                     unsigned* got, std::string* err) {
  const unsigned poison = 0xdeadbeefu;
  CK(cudaMemcpyAsync(d.out, &poison, 4, cudaMemcpyHostToDevice, d.s));
  const cudaError_t e = launch(d, c, eb, in, n, flags);
  if (e != cudaSuccess) {
    *err = cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  CK(cudaStreamSynchronize(d.s));
  CK(cudaMemcpy(got, d.out, 4, cudaMemcpyDeviceToHost));
  return true;
}

// Checks a configuration bit-exactly. Returns "" when correct, else the reason.
static std::string check(const Dev& d, const Config& c, int eb, u64 n, const CheckData& cd) {
  struct Case { const void* in; unsigned flags; unsigned want; const char* what; } cases[] = {
      {cd.d_max, 0, cd.want_max, "planted max"},
      {cd.d_max, 0, cd.want_max, "planted max, second call"},
      {cd.d_nan, 0, cd.want_nan, "NaN propagated"},
      {cd.d_nan, 1, cd.want_nan_ignored, "NaN ignored"},
  };
  for (const Case& k : cases) {
    unsigned got = 0;
    std::string err;
    if (!run_once(d, c, eb, k.in, n, k.flags, &got, &err)) return "launch failed: " + err;
    if (got != k.want) {
      char b[160];
      std::snprintf(b, sizeof b, "%s: got 0x%08x, want 0x%08x", k.what, got, k.want);
      return b;
    }
  }
  return "";
}

struct Timer {
  const Dev& d;
  volatile int* hflag;
  int* dflag;
  volatile int* htimed;
  int* dtimed;
  cudaEvent_t e0, e1;
  char* pool;
  u64 pool_bytes, rot = 0;
  int timeouts = 0;

  // GPU time per call of a batch of `calls`, each on its own cold slice of the pool.
  double batch_us(const Config& c, int eb, u64 bytes, int calls) {
    const u64 n = bytes / eb, step = (bytes + 255) / 256 * 256;
    *hflag = 0;
    *htimed = 0;
    __sync_synchronize();
    kgate<<<1, 1, 0, d.s>>>(dflag, dtimed, 200ull * 1000 * 1000);
    CK(cudaEventRecord(e0, d.s));
    for (int i = 0; i < calls; ++i) {
      if (rot + bytes > pool_bytes) rot = 0;
      CK(launch(d, c, eb, pool + rot, n, 0));
      rot += step;
    }
    CK(cudaEventRecord(e1, d.s));
    __sync_synchronize();
    *hflag = 1;
    __sync_synchronize();
    CK(cudaEventSynchronize(e1));
    if (*htimed) ++timeouts;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return 1000.0 * ms / calls;
  }
};

static double median(std::vector<double> v);

// The phases of one call from the trace build's timestamps (us, medians over 7 cold calls):
// read = max(reduced) - min(entry), the time until the last block has its maximum; tail =
// max(last action) - max(reduced), the cross-block combine and the output write; block_reduce =
// the median over blocks of (reduced - own loads folded). tick: the smallest non-zero difference
// seen between two timestamps (the timer's granularity: a tail below it reads as 0).
struct Trace { double read = -1, tail = -1, block_reduce = -1, tick = -1; };
#ifdef TAIL_TRACE
static Trace trace_config(const Dev& d, Timer& tm, const Config& c, int eb, u64 bytes) {
  const unsigned blocks = c.grid + 1;  // + two_stage's finish kernel
  std::vector<u64> h((size_t)blocks * 4);
  u64* dt = nullptr;
  CK(cudaMalloc(&dt, h.size() * 8));
  CK(cudaMemcpyToSymbol(g_trace, &dt, sizeof dt));
  std::vector<double> rd, tl, br;
  u64 tick = ~0ull;
  for (int k = 0; k < 7; ++k) {
    CK(cudaMemset(dt, 0, h.size() * 8));
    if (tm.rot + bytes > tm.pool_bytes) tm.rot = 0;
    CK(launch(d, c, eb, tm.pool + tm.rot, bytes / eb, 0));
    tm.rot += (bytes + 255) / 256 * 256;
    CK(cudaStreamSynchronize(d.s));
    CK(cudaMemcpy(h.data(), dt, h.size() * 8, cudaMemcpyDeviceToHost));
    u64 start = ~0ull, reduced = 0, end = 0;
    std::vector<double> b;
    std::vector<u64> all;
    for (unsigned i = 0; i < blocks; ++i) {
      const u64* w = &h[(size_t)i * 4];
      if (w[0] == 0 && w[3] == 0) continue;  // no finish kernel
      if (w[0]) start = std::min(start, w[0]);
      if (w[2]) reduced = std::max(reduced, w[2]);
      end = std::max(end, w[3]);
      if (w[1] && w[2]) b.push_back(1e-3 * (double)(w[2] - w[1]));
      for (int j = 0; j < 4; ++j) if (w[j]) all.push_back(w[j]);
    }
    std::sort(all.begin(), all.end());
    for (size_t j = 1; j < all.size(); ++j)
      if (all[j] > all[j - 1]) tick = std::min(tick, all[j] - all[j - 1]);
    rd.push_back(1e-3 * (double)(reduced - start));
    tl.push_back(1e-3 * (double)(end - reduced));
    br.push_back(b.empty() ? 0.0 : median(b));
  }
  CK(cudaFree(dt));
  u64* none = nullptr;
  CK(cudaMemcpyToSymbol(g_trace, &none, sizeof none));
  Trace t;
  t.read = median(rd);
  t.tail = median(tl);
  t.block_reduce = median(br);
  t.tick = tick == ~0ull ? -1 : 1e-3 * (double)tick;
  return t;
}
#endif

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

static u64 parse_size(const std::string& s) {
  char* end = nullptr;
  const u64 v = std::strtoull(s.c_str(), &end, 10);
  if (*end == 'K') return v << 10;
  if (*end == 'M') return v << 20;
  return v;
}

// The swept candidates ("read", "te_shape" and "empty" are fixed shapes, added in main).
struct Cand { std::string name; int strat; int cluster; bool coop; bool memset; };
static std::vector<Cand> candidates(bool hopper) {
  std::vector<Cand> c = {{"read_best", S_READ, 0, false, false},
                         {"atomic", S_ATOMIC, 0, false, true},
                         {"one_pass", S_ONE_PASS, 0, false, false},
                         {"self_reset", S_SELF_RESET, 0, false, false},
                         {"self_reset_red", S_SELF_RESET_RED, 0, false, false},
                         {"spin", S_SPIN, 0, false, false},
                         {"spin_coop", S_SPIN, 0, true, false},
                         {"first_reset", S_FIRST_RESET, 0, false, false},
                         {"first_reset_late", S_FIRST_RESET_LATE, 0, false, false},
                         {"first_reset_warp", S_FIRST_RESET_WARP, 0, false, false}};
  if (hopper) {
    c.push_back({"two_stage", S_TWO_STAGE, 0, false, false});
    c.push_back({"self_reset_pdl", S_SELF_RESET_PDL, 0, false, false});
    for (int cs : {2, 4, 8, 16}) c.push_back({"cluster" + std::to_string(cs), S_CLUSTER, cs, false, false});
  }
  return c;
}

static std::vector<std::string> split(const std::string& list, char sep) {
  std::vector<std::string> out;
  for (size_t p = 0; p <= list.size();) {
    size_t q = list.find(sep, p);
    if (q == std::string::npos) q = list.size();
    out.push_back(list.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

// --profile NAME:SHAPE (SHAPE as the table's config column, e.g. t512.u2.g528 or t512.u2.g528.c8):
// for ncu. Per dtype and size: the 4 check calls, then 3 cold calls of that one configuration,
// nothing else (profile the last 3 with ncu --launch-skip 4 --launch-count 3 per size and dtype).
static int profile(const Dev& d, Timer& tm, const std::string& spec, const std::vector<int>& ebs,
                   const std::vector<u64>& sizes, bool hopper, std::mt19937_64& rng) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  Config c;
  c.cand = name;
  bool found = name == "read" || name == "te_shape" || name == "empty";
  if (name == "read") { c.strat = S_READ; }
  if (name == "te_shape") { c.strat = S_ATOMIC; c.memset = true; }
  if (name == "empty") c.empty = true;
  for (const Cand& k : candidates(hopper))
    if (k.name == name) {
      found = true;
      c.strat = k.strat; c.cluster = k.cluster; c.coop = k.coop; c.memset = k.memset;
    }
  if (!found) {
    std::fprintf(stderr, "tail_probe: --profile '%s': no candidate named '%s'\n", spec.c_str(), name.c_str());
    return 2;
  }
  if (!c.empty) {
    const std::vector<std::string> f = split(colon == std::string::npos ? "" : spec.substr(colon + 1), '.');
    int got = 0;
    for (const std::string& x : f) {
      if (x.size() < 2) continue;
      const long v = std::atol(x.c_str() + 1);
      if (x[0] == 't') { c.T = (int)v; ++got; }
      else if (x[0] == 'u') { c.U = (int)v; ++got; }
      else if (x[0] == 'g') { c.grid = (unsigned)v; ++got; }
      else if (x[0] == 'c') { if ((int)v != c.cluster) got = -100; }
    }
    if (got != 3 || !pick_any(c.strat, 4, c.T, c.U) || c.grid == 0 || (c.cluster && c.grid % c.cluster)) {
      std::fprintf(stderr, "tail_probe: --profile '%s': want NAME:tT.uU.gGRID[.cC] with T in 256/512/1024 "
                   "(256/512 for first_reset_warp), U in 1/2/4/8, GRID > 0 (a multiple of C for clusterC), "
                   "as the table's config column\n",
                   spec.c_str());
      return 2;
    }
  }
  int bad = 0;
  for (int eb : ebs)
    for (u64 bytes : sizes) {
      const CheckData cd = make_check(eb, bytes, rng);
      const std::string why = c.empty || c.strat == S_READ ? "" : check(d, c, eb, bytes / eb, cd);
      if (!why.empty()) {
        std::printf("WRONG: %s %s %llu B: %s\n", eb == 2 ? "bf16" : "fp32", spec.c_str(), (unsigned long long)bytes, why.c_str());
        ++bad;
      }
      for (int k = 0; k < 3; ++k) {
        if (tm.rot + bytes > tm.pool_bytes) tm.rot = 0;
        CK(launch(d, c, eb, tm.pool + tm.rot, bytes / eb, 0));
        tm.rot += (bytes + 255) / 256 * 256;
        CK(cudaStreamSynchronize(d.s));
      }
      std::printf("profiled %s %s %llu B: 3 cold calls after the 4 check calls\n", eb == 2 ? "bf16" : "fp32",
                  spec.c_str(), (unsigned long long)bytes);
      CK(cudaFree(cd.d_max));
      CK(cudaFree(cd.d_nan));
    }
  return bad ? 1 : 0;
}

int main(int argc, char** argv) {
  bool quick = false;
  std::string only, profile_spec;
  std::vector<int> ebs = {2, 4};
  int rounds = 9;
  std::vector<u64> sizes = {16ull << 10, 64ull << 10, 256ull << 10, 1ull << 20, 4ull << 20, 8ull << 20, 16ull << 20};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      sizes = {16ull << 10, 1ull << 20, 16ull << 20};
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (rounds < 1) { std::fprintf(stderr, "tail_probe: --rounds %s: must be >= 1\n", argv[i]); return 2; }
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::string list = argv[++i];
      for (size_t p = 0; p <= list.size();) {
        size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        const u64 v = parse_size(list.substr(p, q - p));
        if (v < 16 || v % 16) { std::fprintf(stderr, "tail_probe: size '%s': want a multiple of 16 bytes (e.g. 16K, 4M)\n", list.substr(p, q - p).c_str()); return 2; }
        sizes.push_back(v);
        p = q + 1;
      }
    } else if (a == "--only" && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else if (a == "--profile" && i + 1 < argc) {
      profile_spec = argv[++i];
    } else if (a == "--dtype" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v == "bf16") ebs = {2};
      else if (v == "fp32") ebs = {4};
      else { std::fprintf(stderr, "tail_probe: --dtype '%s': want bf16 or fp32\n", v.c_str()); return 2; }
    } else {
      std::fprintf(stderr, "tail_probe: unknown argument '%s' (--quick, --rounds N, --sizes 16K,1M, "
                   "--dtype bf16|fp32, --only NAME,NAME, --profile NAME:SHAPE)\n", a.c_str());
      return 2;
    }
  }

  Dev d;
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  d.sms = prop.multiProcessorCount;
  std::printf("device: %s, sm_%d%d, %d SMs, L2 %d MiB\n", prop.name, prop.major, prop.minor, d.sms,
              prop.l2CacheSize >> 20);
  const bool hopper = prop.major >= 9;
  CK(cudaStreamCreateWithFlags(&d.s, cudaStreamNonBlocking));
  CK(cudaMalloc(&d.out, 4));
  CK(cudaMalloc(&d.ws, 4u << 20));
  CK(cudaMalloc(&d.slots, 4u << 20));
  CK(cudaMemset(d.slots, 0, 4u << 20));
  CK(cudaMalloc(&d.ctr, 8));
  CK(cudaMemset(d.ctr, 0, 8));
  CK(cudaMalloc(&d.fr, 16));
  CK(cudaMemset(d.fr, 0, 16));

  const u64 max_bytes = *std::max_element(sizes.begin(), sizes.end());
  const u64 pool_bytes = (4ull << 30) + max_bytes;
  char* pool = nullptr;
  CK(cudaMalloc(&pool, pool_bytes));
  kfill<<<4 * d.sms, 512>>>(reinterpret_cast<unsigned*>(pool), pool_bytes / 4);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  int *hflag_p, *htimed_p, *dflag, *dtimed;
  CK(cudaHostAlloc(&hflag_p, sizeof(int), cudaHostAllocMapped));
  CK(cudaHostAlloc(&htimed_p, sizeof(int), cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&dflag, hflag_p, 0));
  CK(cudaHostGetDevicePointer(&dtimed, htimed_p, 0));
  Timer tm{d, hflag_p, dflag, htimed_p, dtimed, {}, {}, pool, pool_bytes};
  CK(cudaEventCreate(&tm.e0));
  CK(cudaEventCreate(&tm.e1));

  // Cluster kernels of 16 blocks need the non-portable size allowed.
  if (hopper) {
    for (int eb : {4, 2})
      for (int T : {256, 512, 1024})
        for (int U : {1, 2, 4, 8})
          CK(cudaFuncSetAttribute((const void*)pick_any(S_CLUSTER, eb, T, U),
                                  cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  } else {
    std::printf("note: sm_%d%d is below sm_90: the cluster and two_stage-PDL candidates are skipped\n",
                prop.major, prop.minor);
  }

  const std::vector<int> Ts = quick ? std::vector<int>{512} : std::vector<int>{256, 512, 1024};
  const std::vector<int> Us = quick ? std::vector<int>{2} : std::vector<int>{1, 2, 4, 8};
  const std::vector<int> caps = {1, 2, 4, 8, 16, 0};  // blocks per SM; 0: uncapped

  std::mt19937_64 rng(27);
  struct Row {
    std::string dtype, cand, config;
    u64 bytes;
    double us, lo, hi;
    Config cfg;
    Trace tr;
  };
  std::vector<Row> rows;
  std::vector<std::string> failures;
  if (!profile_spec.empty()) return profile(d, tm, profile_spec, ebs, sizes, hopper, rng);
  const std::vector<Cand> cands = candidates(hopper);
  // --only: the named candidates (and always the read and the empty kernel, the table's floors).
  auto wanted = [&](const std::string& name) {
    return only.empty() || name == "read" || name == "empty" || only.find("," + name + ",") != std::string::npos;
  };

  for (int eb : ebs) {
    const char* dname = eb == 2 ? "bf16" : "fp32";
    for (u64 bytes : sizes) {
      const u64 n = bytes / eb;
      const u64 vectors = (n * eb + 15) / 16;  // the runtime's launch_shape: ceil(n / nvec)
      const CheckData cd = make_check(eb, bytes, rng);
      // All configurations of every candidate, deduplicated by (candidate, kernel, grid).
      std::vector<Config> cfgs;
      std::map<std::string, int> seen;
      auto add = [&](Config c) {
        if (!wanted(c.cand)) return;
        const std::string key = c.cand + "/" + c.label();
        if (seen.count(key)) return;
        seen[key] = 1;
        cfgs.push_back(c);
      };
      {
        Config r;  // the project's streaming read
        r.cand = "read"; r.strat = S_READ; r.T = 512; r.U = 4;
        const u64 n16 = std::max<u64>(1, bytes / 16);
        r.grid = (unsigned)std::min<u64>(std::max<u64>(1, (n16 + 2047) / 2048), 4ull * d.sms);
        add(r);
        Config te;  // TransformerEngine's shape
        te.cand = "te_shape"; te.strat = S_ATOMIC; te.memset = true; te.T = 512; te.U = 2;
        te.grid = (unsigned)std::min<u64>((vectors + 1023) / 1024, 65535);
        add(te);
      }
      for (const Cand& k : cands)
        for (int T : Ts)
          for (int U : Us) {
            Config c;
            c.cand = k.name; c.strat = k.strat; c.T = T; c.U = U; c.cluster = k.cluster;
            c.coop = k.coop; c.memset = k.memset;
            const KFn fn = pick_any(k.strat, eb, T, U);
            if (!fn) continue;  // T + 32 threads (first_reset_warp at T = 1024): more than a block can have
            const u64 natural = std::max<u64>(1, (vectors + (u64)T * U - 1) / ((u64)T * U));
            int occ = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, block_threads(k.strat, T), 0));
            std::vector<u64> grids;
            for (int cap : caps) grids.push_back(cap ? std::min<u64>(natural, (u64)cap * d.sms) : natural);
            if (k.cluster) grids.push_back(k.cluster);  // a single cluster
            for (u64 g : grids) {
              if (k.strat == S_SPIN && g > (u64)occ * d.sms) continue;  // one wave only
              if (k.cluster) g = (g + k.cluster - 1) / k.cluster * k.cluster;
              if (g > 0x7fffffffull) continue;
              c.grid = (unsigned)g;
              if (k.cluster) {
                cudaLaunchConfig_t lc{};
                lc.gridDim = dim3(c.grid); lc.blockDim = dim3(T);
                cudaLaunchAttribute a;
                a.id = cudaLaunchAttributeClusterDimension;
                a.val.clusterDim.x = k.cluster; a.val.clusterDim.y = 1; a.val.clusterDim.z = 1;
                lc.attrs = &a; lc.numAttrs = 1;
                int clusters = 0;
                if (cudaOccupancyMaxActiveClusters(&clusters, (const void*)pick_any(S_CLUSTER, eb, T, U), &lc) != cudaSuccess ||
                    clusters == 0) {
                  cudaGetLastError();
                  continue;  // this cluster shape cannot be resident
                }
              }
              add(c);
            }
          }

      // Check, then screen (3 interleaved rounds).
      std::vector<Config> ok;
      for (const Config& c : cfgs) {
        if (c.strat == S_READ) {  // not an amax: nothing to check
          ok.push_back(c);
          continue;
        }
        const std::string why = check(d, c, eb, n, cd);
        if (!why.empty()) {
          char b[320];
          std::snprintf(b, sizeof b, "%s %s %llu B %s: %s", dname, c.cand.c_str(), (unsigned long long)bytes,
                        c.label().c_str(), why.c_str());
          if (why.rfind("launch failed", 0) == 0) {
            // Not a wrong result: this shape cannot run here (a cluster or cooperative grid the
            // device refuses). Reported, not timed, not counted as a failure.
            std::printf("cannot launch (not timed): %s\n", b);
            continue;
          }
          failures.push_back(b);
          std::printf("WRONG (not timed): %s\n", b);
          // A wrong kernel may have left the shared slot words set: the next candidates need them 0.
          CK(cudaMemset(d.ctr, 0, 8));
          CK(cudaMemset(d.fr, 0, 16));
          CK(cudaMemset(d.slots, 0, 4u << 20));
          continue;
        }
        ok.push_back(c);
      }
      const int calls = bytes <= (1ull << 20) ? 128 : 64;
      std::vector<std::vector<double>> screen(ok.size());
      for (int r = 0; r < 3; ++r)
        for (size_t i = 0; i < ok.size(); ++i) screen[i].push_back(tm.batch_us(ok[i], eb, bytes, calls));
      // Finalists: the 2 fastest configurations per candidate, plus the empty kernel.
      std::map<std::string, std::vector<std::pair<double, size_t>>> by;
      for (size_t i = 0; i < ok.size(); ++i) by[ok[i].cand].push_back({median(screen[i]), i});
      std::vector<Config> fin;
      Config e;
      e.cand = "empty"; e.empty = true;
      fin.push_back(e);
      for (auto& kv : by) {
        std::sort(kv.second.begin(), kv.second.end());
        for (size_t j = 0; j < kv.second.size() && j < 2; ++j) fin.push_back(ok[kv.second[j].second]);
      }
      std::vector<std::vector<double>> t(fin.size());
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < fin.size(); ++i) t[i].push_back(tm.batch_us(fin[i], eb, bytes, calls));
      std::map<std::string, Row> best;
      for (size_t i = 0; i < fin.size(); ++i) {
        const double m = median(t[i]);
        auto it = best.find(fin[i].cand);
        if (it == best.end() || m < it->second.us)
          best[fin[i].cand] = Row{dname, fin[i].cand, fin[i].label(), bytes, m,
                                  *std::min_element(t[i].begin(), t[i].end()),
                                  *std::max_element(t[i].begin(), t[i].end()), fin[i], Trace{}};
      }
      for (auto& kv : best) {
#ifdef TAIL_TRACE
        if (!kv.second.cfg.empty) kv.second.tr = trace_config(d, tm, kv.second.cfg, eb, bytes);
#endif
        rows.push_back(kv.second);
      }
      std::printf("%s %8llu B: %zu configurations checked and screened, %zu finalists, %d gate timeouts so far\n",
                  dname, (unsigned long long)bytes, ok.size(), fin.size(), tm.timeouts);
      std::fflush(stdout);
      CK(cudaFree(cd.d_max));
      CK(cudaFree(cd.d_nan));
    }
  }

  // The table: per dtype and size, each candidate's GPU us and the time beyond the read.
  std::map<std::string, double> read_us;
  for (const Row& r : rows)
    if (r.cand == "read") read_us[r.dtype + std::to_string(r.bytes)] = r.us;
  const char* order[] = {"empty", "read", "read_best", "te_shape", "atomic", "two_stage", "one_pass",
                         "self_reset", "self_reset_red", "self_reset_pdl", "cluster2", "cluster4", "cluster8", "cluster16",
                         "spin", "spin_coop", "first_reset", "first_reset_late", "first_reset_warp"};
  const char* csv_dir = std::getenv("OUT");
  FILE* csv = nullptr;
  if (csv_dir && *csv_dir) {
    const std::string path = std::string(csv_dir) + "/tail_probe.csv";
    csv = std::fopen(path.c_str(), "w");
    if (!csv) std::fprintf(stderr, "tail_probe: cannot write %s\n", path.c_str());
    else std::fprintf(csv, "device,dtype,bytes,candidate,config,median_us,min_us,max_us,read_us,beyond_read_us,ratio_to_read,"
                        "trace_read_us,trace_tail_us,trace_block_reduce_us,trace_tick_us\n");
  }
  std::printf("\nGPU time per call (us, median of %d interleaved rounds, cold), and in brackets the time "
              "beyond the project's streaming read; config = the candidate's faster finalist\n", rounds);
  for (const char* dn : {"bf16", "fp32"}) {
    std::printf("\n%-15s", dn);
    for (u64 b : sizes) std::printf(" %17s", b >= (1ull << 20) ? (std::to_string(b >> 20) + " MiB").c_str()
                                                              : (std::to_string(b >> 10) + " KiB").c_str());
    std::printf("\n");
    for (const char* cn : order) {
      bool any = false;
      for (const Row& r : rows) any |= r.dtype == dn && r.cand == cn;
      if (!any) continue;
      std::printf("%-15s", cn);
      for (u64 b : sizes) {
        const Row* hit = nullptr;
        for (const Row& r : rows)
          if (r.dtype == dn && r.cand == cn && r.bytes == b) hit = &r;
        if (!hit) { std::printf(" %17s", "-"); continue; }
        const double rd = read_us[std::string(dn) + std::to_string(b)];
        std::printf(" %7.2f (%+6.2f)", hit->us, hit->us - rd);
        if (csv)
          std::fprintf(csv, "\"%s\",%s,%llu,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.3f,%.3f,%.3f,%.3f\n",
                       prop.name, dn, (unsigned long long)b, cn, hit->config.c_str(), hit->us, hit->lo,
                       hit->hi, rd, hit->us - rd, hit->us / rd, hit->tr.read, hit->tr.tail,
                       hit->tr.block_reduce, hit->tr.tick);
      }
      std::printf("\n");
    }
#ifdef TAIL_TRACE
    std::printf("trace (us, medians of 7 cold calls): read phase / tail after the last block reduced "
                "/ block reduction\n");
    for (const char* cn : order) {
      bool any = false;
      for (const Row& r : rows) any |= r.dtype == dn && r.cand == cn && r.tr.read >= 0;
      if (!any) continue;
      std::printf("  %-15s", cn);
      for (u64 b : sizes)
        for (const Row& r : rows)
          if (r.dtype == dn && r.cand == cn && r.bytes == b)
            std::printf(" %5.2f/%4.2f/%4.2f", r.tr.read, r.tr.tail, r.tr.block_reduce);
      std::printf("\n");
    }
    double tick = -1;
    for (const Row& r : rows)
      if (r.tr.tick > 0 && (tick < 0 || r.tr.tick < tick)) tick = r.tr.tick;
    std::printf("  %%globaltimer granularity seen: %.3f us\n", tick);
#endif
    std::printf("configs:\n");
    for (const char* cn : order) {
      bool any = false;
      for (const Row& r : rows) any |= r.dtype == dn && r.cand == cn;
      if (!any) continue;
      std::printf("  %-15s", cn);
      for (u64 b : sizes)
        for (const Row& r : rows)
          if (r.dtype == dn && r.cand == cn && r.bytes == b) std::printf(" %s", r.config.c_str());
      std::printf("\n");
    }
  }
  if (csv) std::fclose(csv);
  std::printf("\ngate timeouts: %d (a timed-out batch measured the host's enqueue rate, not GPU time)\n",
              tm.timeouts);
  if (!failures.empty()) {
    std::printf("%zu configurations gave a wrong result and were not timed:\n", failures.size());
    for (const auto& f : failures) std::printf("  %s\n", f.c_str());
    return 1;
  }
  std::printf("every configuration was bit-exact against the CPU reference before it was timed\n");
  return 0;
}

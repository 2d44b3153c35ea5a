// Which part of the cold-input protocol moves a kernel's GPU time: the same labels (through the
// installed C API, each forced with AMAX_TUNE_FORCE_LABEL) and a streaming read, timed in GPU time
// (batches held behind a gate kernel) under several input rotations in one run:
//   walk  seq:   every call reads the next unused bytes of the region, starts ALIGN-aligned
//                (an independent harness's walk: a new address on every call);
//         slices: the bench's InputRegion walk (slices of bytes + 256 rounded up to 256, cycling);
//   region: bytes of the rotation region (4 GiB, or the bench's largest input + 5 x 60 MB L2);
//   fill  const (every byte 0x3c) or random (|x| < 2, as InputRegion fills);
//   rounds each contender's 17 batches in a row, or interleaved (one batch of each per round, as the
//          bench); batch GPU time per batch (250 us unless said).
// Median of 15 rounds after 2 sizing rounds.
// usage: rotation_probe LABELS_FILE DTYPE(bf16|fp32) N1,N2,...  -> CSV regime,label,n,median_us
#include <amax/amax_tune.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>
#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      exit(2);                                                                \
    }                                                                         \
  } while (0)

__device__ __forceinline__ unsigned long long gt() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void gate(const volatile int* rel) {
  unsigned long long t0 = gt();
  while (*rel == 0 && gt() - t0 < 500000000ull) __nanosleep(256);
}
__global__ void __launch_bounds__(256) sread(const uint4* __restrict__ p, size_t n16, unsigned* sink) {
  unsigned x = 0;
  for (size_t i = blockIdx.x * 256 + threadIdx.x; i < n16; i += (size_t)gridDim.x * 256) {
    uint4 v = p[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;
}
__global__ void fill_random(unsigned* p, size_t words) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9e3779b97f4a7c15ull;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (unsigned)(x >> 16) & 0xbfffbfffu;
  }
}

struct Regime {
  const char* name;
  bool seq;
  bool bench_region;  // largest input + 300 MB, else 4 GiB
  bool random;
  size_t align;
  bool interleaved = false;  // rounds alternate over the contenders (as the bench's), else each alone
  double batch_us = 250;     // GPU time of a batch
};

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LABELS DTYPE N1,N2,..\n", argv[0]);
    return 2;
  }
  std::vector<std::string> labels;
  {
    std::ifstream f(argv[1]);
    std::string l;
    while (std::getline(f, l))
      if (!l.empty()) labels.push_back(l);
  }
  const bool bf = std::string(argv[2]) == "bf16";
  const amax_dtype_t dt = bf ? AMAX_DTYPE_BF16 : AMAX_DTYPE_FP32;
  const size_t es = bf ? 2 : 4;
  std::vector<size_t> ns;
  {
    std::string s = argv[3];
    size_t a = 0;
    while (a < s.size()) {
      size_t b = s.find(',', a);
      if (b == std::string::npos) b = s.size();
      ns.push_back(std::stoull(s.substr(a, b - a)));
      a = b + 1;
    }
  }
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const size_t full = size_t(4) << 30;
  char* reg;
  CK(cudaMalloc(&reg, full));
  int* h;
  int* d;
  CK(cudaHostAlloc(&h, 8, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer((void**)&d, h, 0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float* out;
  CK(cudaMalloc(&out, 64));
  unsigned* sink;
  CK(cudaMalloc(&sink, 64));
  void* ws;
  const size_t wsb = 64 << 20;
  CK(cudaMalloc(&ws, wsb));
  const size_t largest = *std::max_element(ns.begin(), ns.end()) * es;
  const Regime regimes[] = {
      {"harness:seq,4GiB,const,a512", true, false, false, 512},
      {"seq,4GiB,random,a512", true, false, true, 512},
      {"bench:slices,small,random", false, true, true, 256},
      {"slices,4GiB,random", false, false, true, 256},
      {"seq,small,random,a512", true, true, true, 512},
      {"seq,4GiB,random,a256", true, false, true, 256},
      {"bench:slices,small,random,interleaved", false, true, true, 256, true},
      {"harness:seq,4GiB,random,a512,interleaved", true, false, true, 512, true},
      {"bench:slices,small,random,batch1000us", false, true, true, 256, false, 1000},
      {"bench:slices,small,random,batch60us", false, true, true, 256, false, 60},
  };
  std::vector<amax_context_t> ctx(labels.size(), nullptr);
  for (size_t i = 0; i < labels.size(); ++i) {
    setenv("AMAX_TUNE_FORCE_LABEL", labels[i].c_str(), 1);
    amax_context_options_t o;
    amax_context_options_init(&o);
    o.user_db_path = "";
    if (amax_context_create(&o, &ctx[i])) {
      fprintf(stderr, "%s: %s\n", labels[i].c_str(), amax_last_error());
      ctx[i] = nullptr;
      continue;
    }
    std::vector<uint64_t> n64(ns.begin(), ns.end());
    if (amax_preload(ctx[i], &dt, 1, n64.data(), n64.size()))
      fprintf(stderr, "%s preload: %s\n", labels[i].c_str(), amax_last_error());
  }
  unsetenv("AMAX_TUNE_FORCE_LABEL");
  printf("regime,label,n,median_us\n");
  for (const Regime& rg : regimes) {
    if (rg.random)
      fill_random<<<sms * 8, 256, 0, st>>>((unsigned*)reg, full / 4);
    else
      CK(cudaMemsetAsync(reg, 0x3c, full, st));
    CK(cudaStreamSynchronize(st));
    for (size_t n : ns) {
      const size_t bytes = n * es;
      const size_t region = rg.bench_region ? std::min(full, bytes + size_t(300) * 1000 * 1000) : full;
      size_t cursor = 0;
      auto next = [&]() -> char* {
        if (rg.seq) {
          size_t off = (cursor + rg.align - 1) / rg.align * rg.align;
          if (off + bytes > region) off = 0;
          cursor = off + bytes;
          return reg + off;
        }
        if (bytes >= region) return reg;
        const size_t stride = (bytes + 511) / 256 * 256;
        const size_t slices = (region - bytes - 256) / stride + 1;
        return reg + (cursor++ % slices) * stride;
      };
      // Median over 15 rounds (after 2 sizing rounds) of gated batches of each contender; with
      // rg.interleaved one batch of every contender per round, else every round of one contender first.
      std::vector<std::function<void(char*)>> fns;
      std::vector<std::string> names;
      fns.push_back([&](char* p) {
        size_t n16 = bytes / 16;
        unsigned g = (unsigned)std::min<size_t>(std::max<size_t>(1, (n16 + 255) / 256), (size_t)sms * 8);
        sread<<<g, 256, 0, st>>>((const uint4*)p, n16, sink);
      });
      names.push_back("stream_read");
      bool bad = false;
      for (size_t i = 0; i < labels.size(); ++i) {
        if (!ctx[i]) continue;
        fns.push_back([&, i](char* p) {
          if (amax_compute(ctx[i], p, dt, n, out, ws, wsb, st)) bad = true;
        });
        names.push_back(labels[i]);
      }
      std::vector<int> K(fns.size(), 8);
      std::vector<std::vector<double>> v(fns.size());
      auto batch = [&](size_t c, int r) {
        h[0] = 0;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        gate<<<1, 1, 0, st>>>(d);
        cudaEventRecord(e0, st);
        for (int k = 0; k < K[c]; ++k) fns[c](next());
        cudaEventRecord(e1, st);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        h[0] = 1;
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        const double us = 1000.0 * ms / K[c];
        if (r < 2)
          K[c] = std::max(2, std::min(400, (int)(rg.batch_us / std::max(0.5, us))));
        else
          v[c].push_back(us);
      };
      if (rg.interleaved) {
        for (int r = 0; r < 17; ++r)
          for (size_t c = 0; c < fns.size(); ++c) batch(c, r);
      } else {
        for (size_t c = 0; c < fns.size(); ++c)
          for (int r = 0; r < 17; ++r) batch(c, r);
      }
      for (size_t c = 0; c < fns.size(); ++c) {
        std::sort(v[c].begin(), v[c].end());
        if (!bad || c == 0) printf("%s,%s,%zu,%.3f\n", rg.name, names[c].c_str(), n, v[c][v[c].size() / 2]);
      }
      fflush(stdout);
    }
  }
  CK(cudaStreamSynchronize(st));
  for (auto c : ctx)
    if (c) amax_context_destroy(c);
  return 0;
}

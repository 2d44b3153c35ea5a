// Probe (not part of the build): host and device cost of a kernel launch against the size of its
// by-value parameters, 16 B to 32 KiB (CUDA 12.1+ allows 32764 bytes on sm_70+). Each kernel does
// nothing but read one word of its parameters. Host: wall time of N back-to-back cudaLaunchKernel
// calls (the stream never drains in between); device: events around the same N launches.
// Build and run on the GPU machine: nvcc -O2 -arch=sm_90 launch_params.cu -o lp && ./lp
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

template <int B>
struct Args { unsigned char b[B]; };
template <int B>
__global__ void k(const __grid_constant__ Args<B> a, unsigned* sink) { if (a.b[threadIdx.x % B] == 0xAB && threadIdx.x == 1000) *sink = 1; }

template <int B>
void run(unsigned* sink, cudaStream_t s) {
  Args<B> a{};
  const int n = 500;
  for (int i = 0; i < 100; ++i) k<B><<<132, 128, 0, s>>>(a, sink);
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0, s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) { a.b[0] = (unsigned char)i; k<B><<<132, 128, 0, s>>>(a, sink); }
  const auto t1 = std::chrono::steady_clock::now();
  cudaEventRecord(e1, s);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  std::printf("params %6d B: host %7.2f us per launch, device %7.2f us per launch\n", B,
              std::chrono::duration<double, std::micro>(t1 - t0).count() / n, 1000.0 * ms / n);
}

int main() {
  unsigned* sink; cudaMalloc(&sink, 4);
  cudaStream_t s; cudaStreamCreate(&s);
  run<16>(sink, s); run<1024>(sink, s); run<3920>(sink, s); run<8192>(sink, s); run<10320>(sink, s);
  run<16384>(sink, s); run<24576>(sink, s); run<32080>(sink, s);
  return 0;
}

#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "cub_amax.hpp"

namespace amax::bench {
namespace {

struct AbsToFloat {
  __device__ float operator()(float x) const { return fabsf(x); }
  __device__ float operator()(__half x) const { return fabsf(__half2float(x)); }
  __device__ float operator()(__nv_bfloat16 x) const { return fabsf(__bfloat162float(x)); }
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

template <class T>
cudaError_t run(void* temp, std::size_t& bytes, const void* in, std::uint64_t n, float* out, cudaStream_t s) {
  return cub::DeviceReduce::TransformReduce(temp, bytes, static_cast<const T*>(in), out, static_cast<std::int64_t>(n),
                                            cuda::maximum<float>{}, AbsToFloat{}, 0.0f, s);
}

cudaError_t dispatch(int dtype, void* temp, std::size_t& bytes, const void* in, std::uint64_t n, float* out,
                     cudaStream_t s) {
  switch (dtype) {
    case 0: return run<float>(temp, bytes, in, n, out, s);
    case 1: return run<__half>(temp, bytes, in, n, out, s);
    default: return run<__nv_bfloat16>(temp, bytes, in, n, out, s);
  }
}

}  // namespace

bool have_cub() noexcept { return true; }

std::size_t cub_temp_bytes(int dtype, std::uint64_t n) {
  std::size_t bytes = 0;
  check(dispatch(dtype, nullptr, bytes, nullptr, n, nullptr, nullptr), "cub::DeviceReduce::TransformReduce (size query)");
  return bytes;
}

void cub_amax(int dtype, const void* in, std::uint64_t n, float* out, void* temp, std::size_t temp_bytes, void* stream) {
  std::size_t bytes = temp_bytes;
  check(dispatch(dtype, temp, bytes, in, n, out, static_cast<cudaStream_t>(stream)), "cub::DeviceReduce::TransformReduce");
}

}  // namespace amax::bench

#pragma once
// CUB's DeviceReduce::TransformReduce with an |x| transform and a max reduction: the vendor
// library contender of `amax-tune bench` on NVIDIA (compiled by nvcc; runtime API on the
// caller's stream, which is the driver API's stream in the same primary context).
#include <cstddef>
#include <cstdint>

namespace amax::bench {

/// True when this build includes the CUB contender.
bool have_cub() noexcept;

/// Temporary storage bytes CUB needs for n elements of dtype (0 fp32, 1 fp16, 2 bf16).
/// Errors: std::runtime_error naming the CUDA error.
std::size_t cub_temp_bytes(int dtype, std::uint64_t n);

/// Enqueues max |x| of n elements at `in` into `*out` (float) on `stream` with CUB.
void cub_amax(int dtype, const void* in, std::uint64_t n, float* out, void* temp, std::size_t temp_bytes, void* stream);

}  // namespace amax::bench

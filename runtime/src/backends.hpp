#pragma once
#include <memory>
#include <string>

#include "amax/backend.hpp"

namespace amax::detail {
#if AMAX_HAVE_CUDA
int cuda_device_count() noexcept;
std::string cuda_no_device_reason();
std::unique_ptr<Backend> make_cuda_backend(int ordinal);
#endif
#if AMAX_HAVE_HIP
int hip_device_count() noexcept;
std::string hip_no_device_reason();
std::unique_ptr<Backend> make_hip_backend(int ordinal);
#endif
}  // namespace amax::detail

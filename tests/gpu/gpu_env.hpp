#pragma once
// Shared set-up of the GPU tests: the first GPU present, its JIT compiler and a kernel cache using
// a fresh binary cache directory. Tests call gpu_env() and GTEST_SKIP with skip_reason() when
// no GPU is present.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "amax/backend.hpp"
#include "amax/compiler.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"

namespace amax::test {

struct GpuEnv {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<const JitCompiler> compiler;
  std::unique_ptr<KernelCache> kernels;
  ArchInfo arch;
  std::filesystem::path cache_dir;
};

/// A GPU environment over `backend` (device 0 of its vendor) and `compiler`, with a fresh binary
/// cache directory under the system temp dir; prints the device line. Throws what the backend throws.
std::unique_ptr<GpuEnv> make_gpu_env(std::unique_ptr<Backend> backend, std::shared_ptr<const JitCompiler> compiler);
/// The process-wide GPU environment (the first vendor present), or nullptr when no GPU is present.
GpuEnv* gpu_env();
/// Why gpu_env() is null ("no GPU: ...").
std::string skip_reason();

/// Device buffer owned by RAII: the runtime's (amax/device_buffer.hpp).
using ::amax::DeviceBuffer;

/// The 32-bit word at device address p (synchronous copy).
inline std::uint32_t read_bits(Backend& b, const void* p) {
  std::uint32_t v = 0;
  b.copy_to_host(&v, p, 4);
  return v;
}

}  // namespace amax::test

#define AMAX_REQUIRE_GPU()                                                           \
  ::amax::test::GpuEnv* env = ::amax::test::gpu_env();                               \
  if (!env) GTEST_SKIP() << ::amax::test::skip_reason()

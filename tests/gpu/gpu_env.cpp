#include "gpu_env.hpp"

#include <random>

namespace amax::test {

std::string skip_reason() {
  std::string r = "no GPU present, GPU test skipped (";
  r += "nvidia: " + no_device_reason(Vendor::nvidia) + "; amd: " + no_device_reason(Vendor::amd) + ")";
  return r;
}

std::unique_ptr<GpuEnv> make_gpu_env(std::unique_ptr<Backend> backend, std::shared_ptr<const JitCompiler> compiler) {
  auto e = std::make_unique<GpuEnv>();
  e->backend = std::move(backend);
  e->compiler = std::move(compiler);
  e->arch = ArchInfo::parse(e->backend->device().arch);
  e->cache_dir = std::filesystem::temp_directory_path() /
                 ("amax-gpu-test-cache-" + std::to_string(std::random_device{}()));
  e->kernels = std::make_unique<KernelCache>(*e->backend, e->compiler, BinaryCache(e->cache_dir));
  const auto& d = e->backend->device();
  std::printf("GPU: %s (%s), %d CUs, wave %d, L2 %llu MiB, %s, %s\n", d.name.c_str(), d.arch.c_str(),
              d.cu_count, d.wave_size, static_cast<unsigned long long>(d.l2_bytes >> 20),
              d.driver_version.c_str(), e->compiler->version().c_str());
  return e;
}

GpuEnv* gpu_env() {
  static std::unique_ptr<GpuEnv> env = []() -> std::unique_ptr<GpuEnv> {
    Vendor v;
    if (!first_available_vendor(v)) return nullptr;
    return make_gpu_env(make_backend(v, 0), make_compiler(v));
  }();
  return env.get();
}

}  // namespace amax::test

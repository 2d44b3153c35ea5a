#pragma once
// What `amax-tune bench` and `bench-multi` both open before timing (internal to amax_bench): the
// device's backend, its JIT compiler and kernel cache, the reference kernels (stream read, empty
// launch, TransformerEngine's contenders) and an amax_tune::Context reading the given databases.
// Members are declared in dependency order (each refers only to those above it). Not copyable.
#include <memory>
#include <stdexcept>
#include <string>

#include "amax/amax_tune.hpp"
#include "amax/backend.hpp"
#include "amax/compiler.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/te_contenders.hpp"

namespace amax::bench {

inline Vendor bench_vendor(int device) {
  Vendor v{};
  if (!first_available_vendor(v, device))
    throw std::runtime_error("no GPU device " + std::to_string(device) + " to benchmark: " + no_device_reason(Vendor::nvidia));
  return v;
}

inline amax_tune::Options bench_context_options(int device, const std::string& user_db, const std::string& system_db) {
  amax_tune::Options opt;
  opt.device = device;
  if (!user_db.empty()) opt.user_db_path = user_db;
  if (!system_db.empty()) opt.system_db_path = system_db;
  return opt;
}

/// Opens device `device` (std::runtime_error naming it when absent; BackendError, CompileError
/// from the reference kernels; amax_tune::Error from the context). Empty database paths mean the
/// library's defaults.
struct BenchDevice {
  BenchDevice(int device, const std::string& user_db, const std::string& system_db)
      : vendor(bench_vendor(device)),
        backend(make_backend(vendor, device)),
        compiler(make_compiler(vendor)),
        kernels(*backend, compiler, BinaryCache(BinaryCache::default_dir())),
        ref(ReferenceKernels::load(*backend, *compiler, kernels.binaries())),
        te(*ref.module),
        ctx(bench_context_options(device, user_db, system_db)) {}
  BenchDevice(const BenchDevice&) = delete;
  BenchDevice& operator=(const BenchDevice&) = delete;

  Vendor vendor;
  std::unique_ptr<Backend> backend;
  std::shared_ptr<const JitCompiler> compiler;
  KernelCache kernels;
  ReferenceKernels ref;
  const TeKernels te;
  amax_tune::Context ctx;
};

}  // namespace amax::bench

#pragma once
// Kernels from config to launch: build (render + JIT through the binary cache), load once per
// process, and launch (the launch logic is written once for both vendors).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/binary_cache.hpp"
#include "amax/compiler.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

/// A compiled, not yet loaded, kernel program for the compile-time part of a config and a dtype.
struct KernelBinary {
  KernelConfig config;       ///< max_blocks normalised to uncapped (not compiled in)
  DType dtype{};
  std::vector<char> binary;  ///< CUBIN / AMD code object
  std::string log;           ///< compiler log (NVRTC: holds ptxas' resource report)
  ResourceUsage usage;       ///< of the stage-one kernel where the compiler reports it (NVRTC)
  bool from_cache = false;   ///< read from the binary cache rather than compiled
  double compile_ms = 0;     ///< 0 when from the cache
};

/// Compiles `source` for `arch` through `cache` (keyed by source hash, arch and compiler version).
/// Returns the binary and log; `from_cache` tells whether it was read back. Thread-safe.
/// Errors: CompileError with the full log.
CachedBinary compile_cached(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                            const std::string& source, const std::string& program_name, bool* from_cache = nullptr,
                            double* compile_ms = nullptr);

/// The reference kernels of the timing protocol (render_reference_kernels), loaded on a device.
struct ReferenceKernels {
  std::unique_ptr<Module> module;
  FunctionHandle stream_read = nullptr;  ///< (const void* in, unsigned long long n16, unsigned* sink), 512 threads
  FunctionHandle empty = nullptr;        ///< ()
  /// Builds (through the cache) and loads them. Errors: CompileError, BackendError.
  static ReferenceKernels load(Backend& backend, const JitCompiler& compiler, const BinaryCache& cache);
  /// Enqueues a streaming read of the first bytes / 16 16-byte vectors at `in` (16-byte aligned):
  /// 512 threads, 4 loads in flight each, at most 4 blocks per CU. `sink`: one device word,
  /// practically never written. Errors: BackendError.
  void launch_stream_read(Backend& backend, const void* in, std::uint64_t bytes, void* sink, StreamHandle stream) const;
};

/// Renders `config` for `arch` and compiles it, through `cache` (keyed by source hash, arch and
/// compiler version). Thread-safe; needs no GPU. Errors: CompileError with the full log.
KernelBinary build_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                          const KernelConfig& config, DType dtype);

/// A kernel loaded on a device: entry points of stage one and (two_stage) the finish kernel.
struct LoadedKernel {
  KernelConfig config;
  DType dtype{};
  FunctionHandle main = nullptr;
  FunctionHandle finish = nullptr;
  ResourceUsage usage;
  std::unique_ptr<Module> module;
};

/// The in-process kernel cache of one device: each (kernel label, dtype) is built and loaded once.
/// Thread-safety: all methods may be called concurrently; returned references stay valid for the
/// cache's lifetime (entries are never evicted).
class KernelCache {
 public:
  KernelCache(Backend& backend, std::shared_ptr<const JitCompiler> compiler, BinaryCache binaries);
  /// The loaded kernel, building and loading it on first use (under a per-cache lock).
  /// Errors: CompileError, BackendError.
  const LoadedKernel& get(const KernelConfig& config, DType dtype);
  /// Loads a binary built elsewhere (e.g. compiled in parallel by build_kernel); returns the
  /// existing entry when that kernel is already loaded. Errors: BackendError.
  const LoadedKernel& load(KernelBinary&& binary);
  /// The kernel if already loaded, else nullptr. Never compiles or loads (safe during capture).
  const LoadedKernel* find(const KernelConfig& config, DType dtype) const noexcept;

  Backend& backend() noexcept { return backend_; }
  const JitCompiler& compiler() const noexcept { return *compiler_; }
  const BinaryCache& binaries() const noexcept { return binaries_; }
  const ArchInfo& arch() const noexcept { return arch_; }

 private:
  Backend& backend_;
  std::shared_ptr<const JitCompiler> compiler_;
  BinaryCache binaries_;
  ArchInfo arch_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;  // key: kernel_name(config, dtype)
};

/// How one amax call on n elements is launched with a config on a device with cu_count CUs/SMs.
/// grid = ceil(vectors / (threads x unroll)) clamped to [1, the config's cap], where vectors =
/// ceil(n / nvec) + 1 (the unaligned head can add one).
struct LaunchShape {
  std::uint32_t grid = 0;             ///< 0 when n == 0 (nothing is launched)
  std::uint32_t block = 0;
  std::uint64_t workspace_bytes = 0;  ///< 4 x grid for two_stage/one_pass when grid > 1, else 0
  bool uses_counter = false;          ///< one_pass with grid > 1
  bool memset_output = false;         ///< atomic: the output is zeroed first
  bool finish_kernel = false;         ///< two_stage with grid > 1: a second launch
  int launches() const noexcept { return (grid ? 1 : 0) + (memset_output ? 1 : 0) + (finish_kernel ? 1 : 0); }
};
LaunchShape launch_shape(const KernelConfig& config, std::uint64_t n, std::uint32_t cu_count);

/// Enqueues amax of `n` elements at `in` into the fp32 at `out` on `stream`: n == 0 writes +0.0
/// with a memset and launches nothing; atomic memsets out then launches; two_stage launches stage
/// one and, with more than one block, the finish kernel; one_pass launches once.
/// workspace: at least shape.workspace_bytes bytes (any content); counter: one 32-bit word that is
/// 0 (one_pass leaves it 0), needed when shape.uses_counter. Never synchronises or allocates.
/// Errors: BackendError from the launch.
void launch_amax(Backend& backend, const LoadedKernel& kernel, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* counter, NanMode nan_mode,
                 StreamHandle stream);

}  // namespace amax

#pragma once
// Kernels from config to loaded module: build (render + JIT through the binary cache) and load
// once per process. Launching them is launch.hpp.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "amax/backend.hpp"
#include "amax/binary_cache.hpp"
#include "amax/bundle.hpp"
#include "amax/compiler.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"

namespace amax {

/// Where a loaded kernel's code object came from, in lookup order.
enum class KernelOrigin : std::uint8_t { bundle, kernel_cache, jit };
/// "bundle" / "kernel cache" / "JIT".
const char* to_string(KernelOrigin o) noexcept;

/// A compiled, not yet loaded, kernel program for the compile-time part of a config and a dtype.
struct KernelBinary {
  KernelConfig config;       ///< max_blocks normalised to uncapped (not compiled in)
  DType dtype{};
  std::vector<char> binary;  ///< CUBIN / AMD code object
  std::string log;           ///< compiler log (NVRTC: holds ptxas' resource report)
  ResourceUsage usage;       ///< of the stage-one kernel where the compiler reports it (NVRTC)
  bool from_cache = false;   ///< read from the binary cache rather than compiled
  double compile_ms = 0;     ///< 0 when from the cache
  KernelOrigin origin = KernelOrigin::jit;
};

/// The binary-cache key of `source` compiled for `arch` by `compiler`: its hash, the arch and the
/// compiler version. Thread-safe.
BinaryKey binary_key(const JitCompiler& compiler, const ArchInfo& arch, std::string_view source);

/// Compiles `source` for `arch` through `cache` (keyed by source hash, arch and compiler version).
/// Returns the binary and log; `from_cache` tells whether it was read back. Thread-safe.
/// Errors: CompileError with the full log.
CachedBinary compile_cached(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                            const std::string& source, const std::string& program_name, bool* from_cache = nullptr,
                            double* compile_ms = nullptr);

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
  ResourceUsage usage;       ///< -1 fields for bundled kernels (the bundle keeps no compiler log)
  KernelOrigin origin = KernelOrigin::jit;
  double compile_ms = 0;     ///< JIT time; 0 unless origin is jit
  /// spin: blocks of `main` (config.threads each) one CU/SM holds at once, from the backend's
  /// occupancy query when the kernel was loaded (>= 1; launch_shape caps spin's grid at this x the
  /// CU count). 0 for the other strategies (not queried).
  std::uint32_t resident_per_cu = 0;
  std::unique_ptr<Module> module;
};

/// A multi-tensor kernel (amax_multi_kernels.h) loaded on a device, compiled for `capacity`
/// descriptors per launch.
struct LoadedMultiKernel {
  MultiConfig config;
  DType dtype{};
  std::uint32_t capacity = 0;
  FunctionHandle main = nullptr;
  ResourceUsage usage;       ///< -1 fields for bundled kernels
  KernelOrigin origin = KernelOrigin::jit;
  std::unique_ptr<Module> module;
};

/// Renders the multi-tensor `config` for `arch`, `dtype` and `capacity` and compiles it through
/// `cache` (as build_kernel). `usage` is the entry point's. Thread-safe; needs no GPU.
/// Errors: CompileError with the full log.
CachedBinary build_multi_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                const MultiConfig& config, DType dtype, std::uint32_t capacity,
                                ResourceUsage* usage = nullptr, bool* from_cache = nullptr);

/// The in-process kernel cache of one device: each (kernel label, dtype) is built and loaded once,
/// looked up in the bundle of compiled kernels first, then the binary (on-disk kernel) cache, then
/// compiled by the JIT compiler. A bundle entry that is refused (arch, template hash, size or
/// SHA-256 mismatch, trust rule) gives one warning and the next source is used.
/// Thread-safety: all methods may be called concurrently; returned references stay valid for the
/// cache's lifetime (entries are never evicted).
class KernelCache {
 public:
  /// `bundle` may be nullptr (no bundle).
  KernelCache(Backend& backend, std::shared_ptr<const JitCompiler> compiler, BinaryCache binaries,
              std::shared_ptr<const Bundle> bundle = nullptr);
  /// The loaded kernel, loading it from the bundle or building it on first use.
  /// Errors: CompileError, BackendError.
  const LoadedKernel& get(const KernelConfig& config, DType dtype);
  /// The loaded kernel if it is loaded or can be loaded from the bundle (no compile, no kernel-cache
  /// read: usable during graph capture), else nullptr. The bundle entry is the one for the device's
  /// exact arch (AMD: its full target ID) or else one that serves it (Bundle::find); an entry that
  /// is refused (Bundle::read) or that the driver cannot load gives one warning and nullptr (the
  /// caller compiles instead). Errors: none beyond bad_alloc.
  const LoadedKernel* get_bundled(const KernelConfig& config, DType dtype);
  /// Loads a binary built elsewhere (e.g. compiled in parallel by build_kernel); returns the
  /// existing entry when that kernel is already loaded. Errors: BackendError.
  const LoadedKernel& load(KernelBinary&& binary);
  /// The kernel if already loaded, else nullptr. Never compiles or loads (safe during capture).
  const LoadedKernel* find(const KernelConfig& config, DType dtype) const noexcept;
  /// The multi-tensor kernel, loaded on first use from the bundle, else built (kernel cache, then
  /// JIT), as get(). Errors: CompileError, BackendError.
  const LoadedMultiKernel& get_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity);
  /// The multi-tensor kernel if it is loaded or can be loaded from the bundle, else nullptr: as
  /// get_bundled() (no compile, no kernel-cache read; a refused entry gives one warning).
  /// Errors: none beyond bad_alloc.
  const LoadedMultiKernel* get_bundled_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity);
  /// Loads a multi-tensor binary built elsewhere (build_multi_kernel, e.g. in a compile pool) for
  /// `config`'s compile-time part, `dtype` and `capacity`; returns the existing entry when that
  /// kernel is already loaded. `origin`: where the binary came from. Errors: BackendError.
  const LoadedMultiKernel& load_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity, CachedBinary&& binary,
                                      const ResourceUsage& usage, KernelOrigin origin = KernelOrigin::jit);
  /// The multi-tensor kernel if already loaded, else nullptr (safe during capture).
  const LoadedMultiKernel* find_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity) const noexcept;

  Backend& backend() noexcept { return backend_; }
  const JitCompiler& compiler() const noexcept { return *compiler_; }
  const BinaryCache& binaries() const noexcept { return binaries_; }
  const Bundle* bundle() const noexcept { return bundle_.get(); }
  const ArchInfo& arch() const noexcept { return arch_; }

 private:
  /// The verified code object of the bundle entry named `kernel` for this device (*entry: the
  /// entry), or nullopt: no bundle or no entry, an entry refused before, or one refused now (one
  /// warning; it is not used again).
  std::optional<std::vector<char>> bundled_code(const std::string& kernel, const BundleEntry** entry);
  /// Warns once that the driver could not load bundle entry `e` (`why`); it is not used again.
  void refuse_loaded(const BundleEntry& e, const char* why);
  /// Loads a bundled code object through `load` (either family's loader); a BackendError refuses
  /// the entry (refuse_loaded) and gives nullptr.
  template <class Load>
  auto load_bundled(const std::string& kernel, Load&& load) -> decltype(load(std::vector<char>{}));
  Backend& backend_;
  std::shared_ptr<const JitCompiler> compiler_;
  BinaryCache binaries_;
  std::shared_ptr<const Bundle> bundle_;
  ArchInfo arch_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;  // key: kernel_name(config, dtype)
  std::map<std::string, std::unique_ptr<LoadedMultiKernel>> multi_;  // key: multi_kernel_name
  std::mutex refused_mu_;
  std::set<std::string> refused_;  // bundle entries refused (warned once)
};

}  // namespace amax

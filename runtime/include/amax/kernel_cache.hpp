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
#include <tuple>
#include <vector>

#include "amax/backend.hpp"
#include "amax/binary_cache.hpp"
#include "amax/bundle.hpp"
#include "amax/compiler.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
#include "amax/quantize_config.hpp"

namespace amax {

/// Where a loaded kernel's code object came from, in lookup order.
enum class KernelOrigin : std::uint8_t { bundle, kernel_cache, jit };
/// "bundle" / "kernel cache" / "JIT".
const char* to_string(KernelOrigin o) noexcept;

/// A compiled, not yet loaded, kernel program of any family (Config: KernelConfig, MultiConfig or
/// QuantizeConfig): its config's compile-time part, dtype and (multi-tensor) descriptor capacity or
/// (quantize) FP8 format.
template <class Config>
struct CompiledKernel {
  Config config;             ///< the compile-time part (a single-tensor grid cap is not compiled in)
  DType dtype{};
  std::uint32_t capacity = 0;  ///< multi-tensor: descriptors per launch; quantize: the Fp8Format; else 0
  std::vector<char> binary;  ///< CUBIN / AMD code object
  std::string log;           ///< compiler log (NVRTC: holds ptxas' resource report)
  ResourceUsage usage;       ///< of the entry point where the compiler reports it (NVRTC)
  bool from_cache = false;   ///< read from the binary cache rather than compiled
  double compile_ms = 0;     ///< 0 when from the cache
  KernelOrigin origin = KernelOrigin::jit;
};
using KernelBinary = CompiledKernel<KernelConfig>;
using MultiKernelBinary = CompiledKernel<MultiConfig>;

/// The binary-cache key of `source` compiled for `arch` by `compiler`: its hash, the arch and the
/// compiler version. Thread-safe.
BinaryKey binary_key(const JitCompiler& compiler, const ArchInfo& arch, std::string_view source);

/// Compiles `source` for `arch` through `cache` (keyed by source hash, arch and compiler version).
/// Returns the binary and log; `from_cache` tells whether it was read back. Thread-safe.
/// Errors: CompileError with the full log.
CachedBinary compile_cached(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                            const std::string& source, const std::string& program_name, bool* from_cache = nullptr,
                            double* compile_ms = nullptr);

/// Renders either family's `config` for `arch`, `dtype` and (multi-tensor) `capacity`
/// (family_of_t<Config>::render) and compiles it, through `cache` (keyed by source hash, arch and
/// compiler version). `usage` is the entry point's. Thread-safe; needs no GPU.
/// Errors: CompileError with the full log.
template <class Config>
CompiledKernel<Config> build_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                    const Config& config, DType dtype, std::uint32_t capacity = 0);

/// A kernel of either family loaded on a device: its entry point and, for a two_stage single-tensor
/// kernel, the finish kernel's.
template <class Config>
struct Loaded {
  Config config;
  DType dtype{};
  std::uint32_t capacity = 0;  ///< multi-tensor: descriptors per launch; quantize: the Fp8Format; else 0
  FunctionHandle main = nullptr;
  FunctionHandle finish = nullptr;
  ResourceUsage usage;       ///< -1 fields for bundled kernels (the bundle keeps no compiler log)
  KernelOrigin origin = KernelOrigin::jit;
  double compile_ms = 0;     ///< JIT time; 0 unless origin is jit
  /// A resident-grid kernel (a strategy whose row has resident_grid; the one-launch quantize kinds):
  /// blocks of `main` (config.threads each) one CU/SM holds at once, from the backend's occupancy
  /// query when the kernel was loaded (>= 1; launch_shape caps its grid at this x the CU count). 0
  /// for the others (not queried).
  std::uint32_t resident_per_cu = 0;
  std::unique_ptr<Module> module;
};
using LoadedKernel = Loaded<KernelConfig>;
using LoadedMultiKernel = Loaded<MultiConfig>;
using LoadedQuantizeKernel = Loaded<QuantizeConfig>;

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
  // Each method serves either family (Config: KernelConfig or MultiConfig); `capacity` is the
  // multi-tensor kernel's descriptors per launch (0 for single tensors).

  /// The loaded kernel, loading it from the bundle or building it (kernel cache, then JIT) on
  /// first use. Errors: CompileError, BackendError.
  template <class Config>
  const Loaded<Config>& get(const Config& config, DType dtype, std::uint32_t capacity = 0);
  /// The loaded kernel if it is loaded or can be loaded from the bundle (no compile, no kernel-cache
  /// read: usable during graph capture), else nullptr. The bundle entry is the one for the device's
  /// exact arch (AMD: its full target ID) or else one that serves it (Bundle::find); an entry that
  /// is refused (Bundle::read) or that the driver cannot load gives one warning and nullptr (the
  /// caller compiles instead). Errors: none beyond bad_alloc.
  template <class Config>
  const Loaded<Config>* get_bundled(const Config& config, DType dtype, std::uint32_t capacity = 0);
  /// Loads a binary built elsewhere (e.g. compiled in parallel by build_kernel); returns the
  /// existing entry when that kernel is already loaded. Errors: BackendError.
  template <class Config>
  const Loaded<Config>& load(CompiledKernel<Config>&& binary);
  /// The kernel if already loaded, else nullptr. Never compiles or loads (safe during capture).
  template <class Config>
  const Loaded<Config>* find(const Config& config, DType dtype, std::uint32_t capacity = 0) const noexcept;

  const JitCompiler& compiler() const noexcept { return *compiler_; }
  const BinaryCache& binaries() const noexcept { return binaries_; }

 private:
  /// The verified code object of the bundle entry named `kernel` for this device (*entry: the
  /// entry), or nullopt: no bundle or no entry, an entry refused before, or one refused now (one
  /// warning; it is not used again).
  std::optional<std::vector<char>> bundled_code(const std::string& kernel, const BundleEntry** entry);
  /// Warns once that the driver could not load bundle entry `e` (`why`); it is not used again.
  void refuse_loaded(const BundleEntry& e, const char* why);
  Backend& backend_;
  std::shared_ptr<const JitCompiler> compiler_;
  BinaryCache binaries_;
  std::shared_ptr<const Bundle> bundle_;
  ArchInfo arch_;
  template <class Config>
  using Table = std::map<std::string, std::unique_ptr<Loaded<Config>>>;  // key: the family's kernel_name
  template <class Config>
  Table<Config>& table() const noexcept { return std::get<Table<Config>>(loaded_); }
  mutable std::mutex mu_;
  mutable std::tuple<Table<KernelConfig>, Table<MultiConfig>, Table<QuantizeConfig>> loaded_;
  std::mutex refused_mu_;
  std::set<std::string> refused_;  // bundle entries refused (warned once)
};

}  // namespace amax

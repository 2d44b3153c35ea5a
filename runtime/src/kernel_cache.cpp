#include "amax/kernel_cache.hpp"

#include <algorithm>


#include "amax/hash.hpp"
#include "amax/log.hpp"
#include "amax/render.hpp"

namespace amax {

BinaryKey binary_key(const JitCompiler& compiler, const ArchInfo& arch, std::string_view source) {
  return BinaryKey{to_hex(fnv1a64(source)), arch.name, compiler.version()};
}

const char* to_string(KernelOrigin o) noexcept {
  switch (o) {
    case KernelOrigin::bundle: return "bundle";
    case KernelOrigin::kernel_cache: return "kernel cache";
    case KernelOrigin::jit: return "JIT";
  }
  return "?";
}

CachedBinary compile_cached(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                            const std::string& source, const std::string& program_name, bool* from_cache,
                            double* compile_ms) {
  const BinaryKey key = binary_key(compiler, arch, source);
  if (auto hit = cache.load(key)) {
    if (from_cache) *from_cache = true;
    if (compile_ms) *compile_ms = 0;
    return std::move(*hit);
  }
  CompiledProgram p = compiler.compile(source, program_name, arch);
  CachedBinary out{std::move(p.binary), std::move(p.log)};
  cache.store(key, out);
  if (from_cache) *from_cache = false;
  if (compile_ms) *compile_ms = p.compile_ms;
  return out;
}

KernelBinary build_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                          const KernelConfig& config, DType dtype) {
  KernelBinary out;
  out.config = config.compile_time_part();
  out.dtype = dtype;
  const std::string name = kernel_name(out.config, dtype);
  CachedBinary b = compile_cached(compiler, cache, arch, render_source(out.config, dtype, arch.vendor),
                                  name + (arch.vendor == Vendor::nvidia ? ".cu" : ".hip"), &out.from_cache,
                                  &out.compile_ms);
  out.binary = std::move(b.binary);
  out.log = std::move(b.log);
  out.origin = out.from_cache ? KernelOrigin::kernel_cache : KernelOrigin::jit;
  if (compiler.vendor() == Vendor::nvidia) {  // the log (kept in the cache entry too) holds ptxas' report
    const auto usage = parse_ptxas_report(out.log);
    if (auto it = usage.find(name); it != usage.end()) out.usage = it->second;
  }
  return out;
}

KernelCache::KernelCache(Backend& backend, std::shared_ptr<const JitCompiler> compiler, BinaryCache binaries,
                         std::shared_ptr<const Bundle> bundle)
    : backend_(backend),
      compiler_(std::move(compiler)),
      binaries_(std::move(binaries)),
      bundle_(std::move(bundle)),
      arch_(ArchInfo::parse(backend.device().arch)) {}

std::optional<std::vector<char>> KernelCache::bundled_code(const std::string& kernel, const BundleEntry** entry) {
  if (!bundle_) return std::nullopt;
  const BundleEntry* e = bundle_->find_kernel(kernel, arch_);
  if (!e) return std::nullopt;
  *entry = e;
  {
    std::lock_guard lock(refused_mu_);
    if (refused_.count(e->kernel)) return std::nullopt;
  }
  std::string why;
  auto bytes = bundle_->read(*e, arch_, &why);
  if (!bytes) {
    std::lock_guard lock(refused_mu_);
    if (refused_.insert(e->kernel).second) log().warn("{}; it is not used and is JIT-compiled instead", why);
  }
  return bytes;
}

void KernelCache::refuse_loaded(const BundleEntry& e, const char* why) {
  // A code object the driver refuses (e.g. a code-object version older runtimes cannot load):
  // the entry is not used again and the kernel is JIT-compiled, as for a damaged entry.
  std::lock_guard lock(refused_mu_);
  if (refused_.insert(e.kernel).second)
    log().warn("bundled kernel {} ({}) in {} could not be loaded on this device: {}; it is not used and is "
               "JIT-compiled instead",
               e.kernel, e.arch, bundle_->path().string(), why);
}

template <class Load>
auto KernelCache::load_bundled(const std::string& kernel, Load&& load) -> decltype(load(std::vector<char>{})) {
  const BundleEntry* e = nullptr;
  auto bytes = bundled_code(kernel, &e);
  if (!bytes) return nullptr;
  try {
    return load(std::move(*bytes));
  } catch (const BackendError& x) {
    refuse_loaded(*e, x.what());
    return nullptr;
  }
}

const LoadedKernel* KernelCache::get_bundled(const KernelConfig& config, DType dtype) {
  if (const LoadedKernel* k = find(config, dtype)) return k;
  KernelConfig c = config;
  c.max_blocks = BlockCap::uncapped();
  return load_bundled(kernel_name(c, dtype), [&](std::vector<char>&& bytes) -> const LoadedKernel* {
    KernelBinary b;
    b.config = c;
    b.dtype = dtype;
    b.binary = std::move(bytes);
    b.origin = KernelOrigin::bundle;
    return &load(std::move(b));
  });
}

const LoadedKernel* KernelCache::find(const KernelConfig& config, DType dtype) const noexcept {
  std::lock_guard lock(mu_);
  auto it = loaded_.find(kernel_name(config, dtype));
  return it == loaded_.end() ? nullptr : it->second.get();
}

const LoadedKernel& KernelCache::get(const KernelConfig& config, DType dtype) {
  if (const LoadedKernel* k = get_bundled(config, dtype)) return *k;
  return load(build_kernel(*compiler_, binaries_, arch_, config, dtype));
}

const LoadedKernel& KernelCache::load(KernelBinary&& b) {
  std::lock_guard lock(mu_);
  const std::string name = kernel_name(b.config, b.dtype);
  if (auto it = loaded_.find(name); it != loaded_.end()) return *it->second;
  auto k = std::make_unique<LoadedKernel>();
  k->config = b.config;
  k->dtype = b.dtype;
  k->usage = b.usage;
  k->origin = b.origin;
  k->compile_ms = b.compile_ms;
  k->module = backend_.load_module(b.binary);
  k->main = k->module->function(name);
  if (b.config.strategy == Strategy::two_stage) k->finish = k->module->function(finish_kernel_name(b.config, b.dtype));
  if (b.config.strategy == Strategy::spin) {
    const std::uint32_t r = backend_.max_active_blocks_per_cu(k->main, b.config.threads);
    if (r == 0)
      throw BackendError("occupancy", 0, kernel_name(b.config, b.dtype) + ": the device holds no block of " +
                                             std::to_string(b.config.threads) + " threads of it at once");
    k->resident_per_cu = r;
  }
  return *loaded_.emplace(name, std::move(k)).first->second;
}

CachedBinary build_multi_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                const MultiConfig& config, DType dtype, std::uint32_t capacity, ResourceUsage* usage,
                                bool* from_cache) {
  const std::string name = multi_kernel_name(config, dtype, capacity);
  CachedBinary b = compile_cached(compiler, cache, arch, render_multi_source(config, dtype, arch, capacity),
                                  name + (arch.vendor == Vendor::nvidia ? ".cu" : ".hip"), from_cache);
  if (usage && compiler.vendor() == Vendor::nvidia) {
    const auto report = parse_ptxas_report(b.log);
    if (auto it = report.find(name); it != report.end()) *usage = it->second;
  }
  return b;
}

const LoadedMultiKernel* KernelCache::find_multi(const MultiConfig& config, DType dtype,
                                                 std::uint32_t capacity) const noexcept {
  std::lock_guard lock(mu_);
  auto it = multi_.find(multi_kernel_name(config, dtype, capacity));
  return it == multi_.end() ? nullptr : it->second.get();
}

const LoadedMultiKernel* KernelCache::get_bundled_multi(const MultiConfig& config, DType dtype,
                                                       std::uint32_t capacity) {
  if (const LoadedMultiKernel* k = find_multi(config, dtype, capacity)) return k;
  return load_bundled(multi_kernel_name(config, dtype, capacity), [&](std::vector<char>&& bytes) -> const LoadedMultiKernel* {
    return &load_multi(config, dtype, capacity, CachedBinary{std::move(bytes), ""}, ResourceUsage{}, KernelOrigin::bundle);
  });
}

const LoadedMultiKernel& KernelCache::get_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity) {
  if (const LoadedMultiKernel* k = get_bundled_multi(config, dtype, capacity)) return *k;
  ResourceUsage usage;
  bool from_cache = false;
  CachedBinary b = build_multi_kernel(*compiler_, binaries_, arch_, config, dtype, capacity, &usage, &from_cache);
  return load_multi(config, dtype, capacity, std::move(b), usage,
                    from_cache ? KernelOrigin::kernel_cache : KernelOrigin::jit);
}

const LoadedMultiKernel& KernelCache::load_multi(const MultiConfig& config, DType dtype, std::uint32_t capacity,
                                                 CachedBinary&& binary, const ResourceUsage& usage,
                                                 KernelOrigin origin) {
  const std::string name = multi_kernel_name(config, dtype, capacity);
  std::lock_guard lock(mu_);
  if (auto it = multi_.find(name); it != multi_.end()) return *it->second;
  auto k = std::make_unique<LoadedMultiKernel>();
  k->config = config.compile_time_part();
  k->dtype = dtype;
  k->capacity = capacity;
  k->usage = usage;
  k->origin = origin;
  k->module = backend_.load_module(binary.binary);
  k->main = k->module->function(name);
  return *multi_.emplace(name, std::move(k)).first->second;
}

}  // namespace amax

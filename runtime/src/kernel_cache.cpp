#include "amax/kernel_cache.hpp"

#include <algorithm>
#include <type_traits>

#include "amax/family.hpp"
#include "amax/hash.hpp"
#include "amax/log.hpp"

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

template <class Config>
CompiledKernel<Config> build_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                    const Config& config, DType dtype, std::uint32_t capacity) {
  using F = family_of_t<Config>;
  CompiledKernel<Config> out;
  out.config = config.compile_time_part();
  out.dtype = dtype;
  out.capacity = capacity;
  const std::string name = F::kernel_name(out.config, dtype, capacity);
  CachedBinary b = compile_cached(compiler, cache, arch, F::render(out.config, dtype, arch, capacity),
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

template <class Config>
const Loaded<Config>* KernelCache::get_bundled(const Config& config, DType dtype, std::uint32_t capacity) {
  if (const Loaded<Config>* k = find(config, dtype, capacity)) return k;
  CompiledKernel<Config> b;
  b.config = config.compile_time_part();
  b.dtype = dtype;
  b.capacity = capacity;
  b.origin = KernelOrigin::bundle;
  const BundleEntry* e = nullptr;
  auto bytes = bundled_code(family_of_t<Config>::kernel_name(b.config, dtype, capacity), &e);
  if (!bytes) return nullptr;
  b.binary = std::move(*bytes);
  try {
    return &load(std::move(b));
  } catch (const BackendError& x) {
    refuse_loaded(*e, x.what());
    return nullptr;
  }
}

template <class Config>
const Loaded<Config>* KernelCache::find(const Config& config, DType dtype, std::uint32_t capacity) const noexcept {
  std::lock_guard lock(mu_);
  const auto& t = table<Config>();
  auto it = t.find(family_of_t<Config>::kernel_name(config, dtype, capacity));
  return it == t.end() ? nullptr : it->second.get();
}

template <class Config>
const Loaded<Config>& KernelCache::get(const Config& config, DType dtype, std::uint32_t capacity) {
  if (const Loaded<Config>* k = get_bundled(config, dtype, capacity)) return *k;
  return load(build_kernel(*compiler_, binaries_, arch_, config, dtype, capacity));
}

namespace {
// The blocks of `main` one CU/SM holds at once (>= 1), for a kernel whose grid must be resident.
std::uint32_t resident_per_cu(Backend& backend, FunctionHandle main, std::uint32_t threads, const std::string& name) {
  const std::uint32_t r = backend.max_active_blocks_per_cu(main, threads);
  if (r == 0)
    throw BackendError("occupancy", 0, name + ": the device holds no block of " + std::to_string(threads) +
                                           " threads of it at once");
  return r;
}
// What loading needs besides the entry point, from the strategy's row: the finish kernel, and the
// resident blocks of a resident-grid kernel (an occupancy query). A list's kernel needs neither.
void load_row_kernels(Loaded<KernelConfig>& k, Backend& backend, const std::string& name) {
  const StrategyInfo& row = info(k.config.strategy);
  if (row.finish_kernel) k.finish = k.module->function(finish_kernel_name(k.config, k.dtype));
  if (row.resident_grid) k.resident_per_cu = resident_per_cu(backend, k.main, k.config.threads, name);
}
void load_row_kernels(Loaded<MultiConfig>&, Backend&, const std::string&) {}
// The one-launch quantize kinds wait for every block at their grid barrier: their resident blocks.
void load_row_kernels(Loaded<QuantizeConfig>& k, Backend& backend, const std::string& name) {
  if (k.config.one_launch()) k.resident_per_cu = resident_per_cu(backend, k.main, k.config.threads, name);
}
}  // namespace

template <class Config>
const Loaded<Config>& KernelCache::load(CompiledKernel<Config>&& b) {
  std::lock_guard lock(mu_);
  auto& t = table<Config>();
  const std::string name = family_of_t<Config>::kernel_name(b.config, b.dtype, b.capacity);
  if (auto it = t.find(name); it != t.end()) return *it->second;
  auto k = std::make_unique<Loaded<Config>>();
  k->config = b.config.compile_time_part();
  k->dtype = b.dtype;
  k->capacity = b.capacity;
  k->usage = b.usage;
  k->origin = b.origin;
  k->compile_ms = b.compile_ms;
  k->module = backend_.load_module(b.binary);
  k->main = k->module->function(name);
  load_row_kernels(*k, backend_, name);
  return *t.emplace(name, std::move(k)).first->second;
}

#define AMAX_KERNEL_CACHE_FAMILY(Config)                                                                            \
  template CompiledKernel<Config> build_kernel(const JitCompiler&, const BinaryCache&, const ArchInfo&,           \
                                               const Config&, DType, std::uint32_t);                              \
  template const Loaded<Config>* KernelCache::get_bundled(const Config&, DType, std::uint32_t);                   \
  template const Loaded<Config>* KernelCache::find(const Config&, DType, std::uint32_t) const noexcept;           \
  template const Loaded<Config>& KernelCache::get(const Config&, DType, std::uint32_t);                           \
  template const Loaded<Config>& KernelCache::load(CompiledKernel<Config>&&);
AMAX_KERNEL_CACHE_FAMILY(KernelConfig)
AMAX_KERNEL_CACHE_FAMILY(MultiConfig)
AMAX_KERNEL_CACHE_FAMILY(QuantizeConfig)
#undef AMAX_KERNEL_CACHE_FAMILY

}  // namespace amax

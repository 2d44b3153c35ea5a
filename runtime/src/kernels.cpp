#include "amax/kernels.hpp"

#include <algorithm>


#include "amax/hash.hpp"
#include "amax/render.hpp"

namespace amax {

CachedBinary compile_cached(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                            const std::string& source, const std::string& program_name, bool* from_cache,
                            double* compile_ms) {
  const BinaryKey key{to_hex(fnv1a64(source)), arch.name, compiler.version()};
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

ReferenceKernels ReferenceKernels::load(Backend& backend, const JitCompiler& compiler, const BinaryCache& cache) {
  const ArchInfo arch = ArchInfo::parse(backend.device().arch);
  const CachedBinary b = compile_cached(compiler, cache, arch, render_reference_kernels(arch.vendor),
                                        "amax_reference_kernels");
  ReferenceKernels k;
  k.module = backend.load_module(b.binary);
  k.stream_read = k.module->function("amax_stream_read");
  k.empty = k.module->function("amax_empty");
  return k;
}

void ReferenceKernels::launch_stream_read(Backend& backend, const void* in, std::uint64_t bytes, void* sink,
                                          StreamHandle stream) const {
  unsigned long long n16 = std::max<std::uint64_t>(1, bytes / 16);
  constexpr std::uint64_t kPerBlock = 512 * 4;  // threads x loads in flight (templates/bench_kernels.h)
  const auto grid = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>((n16 + kPerBlock - 1) / kPerBlock, 1, 4ull * backend.device().cu_count));
  void* args[] = {&in, &n16, &sink};
  backend.launch(stream_read, grid, 512, stream, args);
}

KernelBinary build_kernel(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                          const KernelConfig& config, DType dtype) {
  KernelBinary out;
  out.config = config;
  out.config.max_blocks = BlockCap::uncapped();
  out.dtype = dtype;
  const std::string name = kernel_name(out.config, dtype);
  CachedBinary b = compile_cached(compiler, cache, arch, render_source(out.config, dtype, arch.vendor),
                                  name + (arch.vendor == Vendor::nvidia ? ".cu" : ".hip"), &out.from_cache,
                                  &out.compile_ms);
  out.binary = std::move(b.binary);
  out.log = std::move(b.log);
  if (compiler.vendor() == Vendor::nvidia) {  // the log (kept in the cache entry too) holds ptxas' report
    const auto usage = parse_ptxas_report(out.log);
    if (auto it = usage.find(name); it != usage.end()) out.usage = it->second;
  }
  return out;
}

KernelCache::KernelCache(Backend& backend, std::shared_ptr<const JitCompiler> compiler, BinaryCache binaries)
    : backend_(backend),
      compiler_(std::move(compiler)),
      binaries_(std::move(binaries)),
      arch_(ArchInfo::parse(backend.device().arch)) {}

const LoadedKernel* KernelCache::find(const KernelConfig& config, DType dtype) const noexcept {
  std::lock_guard lock(mu_);
  auto it = loaded_.find(kernel_name(config, dtype));
  return it == loaded_.end() ? nullptr : it->second.get();
}

const LoadedKernel& KernelCache::get(const KernelConfig& config, DType dtype) {
  if (const LoadedKernel* k = find(config, dtype)) return *k;
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
  k->module = backend_.load_module(b.binary);
  k->main = k->module->function(name);
  if (b.config.strategy == Strategy::two_stage) k->finish = k->module->function(finish_kernel_name(b.config, b.dtype));
  return *loaded_.emplace(name, std::move(k)).first->second;
}

LaunchShape launch_shape(const KernelConfig& c, std::uint64_t n, std::uint32_t cu_count) {
  LaunchShape s;
  s.block = c.threads;
  if (n == 0) return s;
  const std::uint64_t vectors = (n + c.nvec - 1) / c.nvec + 1;
  const std::uint64_t per_block = std::uint64_t{c.threads} * c.unroll;
  std::uint64_t grid = (vectors + per_block - 1) / per_block;
  grid = std::max<std::uint64_t>(1, std::min(grid, c.max_blocks.max_blocks(cu_count)));
  s.grid = static_cast<std::uint32_t>(grid);
  s.memset_output = c.strategy == Strategy::atomic;
  if (c.strategy != Strategy::atomic && s.grid > 1) s.workspace_bytes = 4ull * s.grid;
  s.uses_counter = c.strategy == Strategy::one_pass && s.grid > 1;
  s.finish_kernel = c.strategy == Strategy::two_stage && s.grid > 1;
  return s;
}

void launch_amax(Backend& backend, const LoadedKernel& k, const LaunchShape& shape, const void* in,
                 std::uint64_t n, float* out, void* workspace, std::uint32_t* counter, NanMode nan_mode,
                 StreamHandle stream) {
  if (n == 0 || shape.grid == 0) {  // +0.0 without a zero-sized launch
    backend.memset32_async(out, 0u, 1, stream);
    return;
  }
  if (shape.memset_output) backend.memset32_async(out, 0u, 1, stream);
  unsigned long long count = n;
  unsigned flags = nan_mode == NanMode::ignore ? 1u : 0u;
  void* args[] = {&in, &count, &out, &workspace, &counter, &flags};
  backend.launch(k.main, shape.grid, shape.block, stream, args);
  if (shape.finish_kernel) {
    unsigned blocks = shape.grid;
    void* fargs[] = {&workspace, &blocks, &out};
    backend.launch(k.finish, 1, shape.block, stream, fargs);
  }
}

}  // namespace amax

#include "amax/reference_kernels.hpp"

#include <algorithm>

#include "amax/arch.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/render.hpp"
#include "reference_template.hpp"

namespace amax {

std::string render_reference_kernels(Vendor vendor) {
  std::string s = "// amax-tune reference kernels (" + std::string(to_string(vendor)) + "), template hash " +
                  template_hash() + "\n";
  s += vendor_prelude(vendor);
  s += "#line 1 \"bench_kernels.h\"\n";  // compiler messages name the template and its lines
  s += tune::detail::kTemplates[0].text;     // bench_kernels.h
  return s;
}

ReferenceKernels ReferenceKernels::load(Backend& backend, const JitCompiler& compiler, const BinaryCache& cache) {
  const ArchInfo arch = ArchInfo::parse(backend.device().arch);
  const CachedBinary b = compile_cached(compiler, cache, arch, render_reference_kernels(arch.vendor),
                                        "amax_reference_kernels");
  ReferenceKernels k;
  k.module = backend.load_module(b.binary);
  k.stream_read = k.module->function("amax_stream_read");
  k.empty = k.module->function("amax_empty");
  k.gate = k.module->function("amax_gate");
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

}  // namespace amax

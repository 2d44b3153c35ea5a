#include "wave64_model.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <stdexcept>
#include <thread>

#include "amax/dispatch.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "wave64_prelude.hpp"

namespace amax::wave64 {

ArchInfo model_target() { return ArchInfo::parse("sm_90"); }

std::size_t ModelSet::single_variants() const {
  std::size_t n = 0;
  for (const auto& k : singles) n += k.variants.size();
  return n;
}
std::size_t ModelSet::multi_variants() const {
  std::size_t n = 0;
  for (const auto& k : multis) n += k.variants.size();
  return n;
}

namespace {

template <class Config>
void add_unique(std::vector<Config>& out, const Config& c) {
  if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
}

template <class Config>
void check_valid(const Config& c, const ArchInfo& arch, DType d) {
  if (auto why = c.validate(arch, d))
    throw std::logic_error("wave-64 model set: " + c.label() + " " + std::string(to_string(d)) + " on " + arch.name +
                           ": " + *why);
}

std::vector<ArchInfo> model_archs() {
  std::vector<ArchInfo> out;
  for (const ModelDevice& m : kModelDevices) out.push_back(ArchInfo::parse(m.processor));
  return out;
}

// Configs grouped by compile-time part, in first-occurrence order.
template <class Kernel, class Config>
std::vector<Kernel> group(const std::vector<Config>& configs, DType d) {
  std::vector<Kernel> out;
  std::map<std::string, std::size_t> at;
  for (const Config& c : configs) {
    const std::string key = c.kernel_label();
    auto [it, fresh] = at.emplace(key, out.size());
    if (fresh) {
      out.push_back({});
      out.back().kernel = c.compile_time_part();
      out.back().dtype = d;
    }
    out[it->second].variants.push_back(c);
  }
  return out;
}

}  // namespace

ModelSet model_set() {
  ModelSet set;
  const auto archs = model_archs();
  for (const DTypeInfo& di : all_dtypes()) {
    const DType d = di.dtype;
    std::vector<KernelConfig> singles;
    for (const ArchInfo& arch : archs)
      for (const KernelConfig& c : enumerate_space(arch, d, SpaceKind::pruned)) {
        add_unique(singles, c);
        KernelConfig s = c;
        s.epilogue = Epilogue::scale;
        if (!s.validate(arch, d)) add_unique(singles, s);
      }
    for (const ArchInfo& arch : archs)
      for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1} << 32}) {
        for (const StrategyInfo& si : kStrategies) {
          KernelConfig c = builtin_default(arch, d, n);
          c.strategy = si.value;
          if (c.validate(arch, d)) continue;  // a strategy the arch does not run (strategy_unsupported_reason)
          add_unique(singles, c);
          const KernelConfig f = fused_variant(c, arch, d);
          check_valid(f, arch, d);
          add_unique(singles, f);
        }
      }
    for (const ArchInfo& arch : archs)
      for (const KernelConfig& c : singles) check_valid(c, arch, d);
    for (auto& k : group<SingleKernel>(singles, d)) set.singles.push_back(std::move(k));

    std::vector<MultiConfig> multis;
    for (const ArchInfo& arch : archs) {
      for (const MultiConfig& c : enumerate_multi_space(arch, d, SpaceKind::pruned)) {
        add_unique(multis, c);
        MultiConfig s = c;
        s.epilogue = Epilogue::scale;
        add_unique(multis, s);
      }
      for (std::uint64_t tensors : {std::uint64_t{2}, std::uint64_t{200}}) {
        MultiConfig c = builtin_multi_default(arch, d, GroupShape{tensors, 0, 0});
        add_unique(multis, c);
        c.epilogue = Epilogue::scale;
        add_unique(multis, c);
      }
    }
    std::uint32_t capacity = 0;
    for (const ArchInfo& arch : archs) {
      for (const MultiConfig& c : multis) check_valid(c, arch, d);
      const auto caps = multi_capacities(arch);
      if (caps.size() != 1 || (capacity && caps[0] != capacity))
        throw std::logic_error("wave-64 model set: " + arch.name + " compiles list kernels for several capacities");
      capacity = caps[0];
    }
    for (auto& k : group<MultiKernel>(multis, d)) {
      k.capacity = capacity;
      set.multis.push_back(std::move(k));
    }
  }
  return set;
}

const std::string& model_prelude() {
  static const std::string text = [] {
    // prelude_cuda.h's memory and arithmetic operations: from its first atomic to its programmatic
    // dependent launch, which the model leaves out (AMD has none).
    static constexpr std::string_view kFirst = "AMAX_DEVICE unsigned amax_atomic_max(",
                                      kEnd = "// Programmatic dependent launch";
    const std::string cuda = vendor_prelude(Vendor::nvidia);
    const std::size_t body = cuda.find('\n') + 1, first = cuda.find(kFirst), end = cuda.find(kEnd);
    if (first == std::string::npos || end == std::string::npos || end < first)
      throw std::logic_error("wave-64 model: prelude_cuda.h no longer holds `" + std::string(kFirst) + "` before `" +
                             std::string(kEnd) + "`");
    const auto line = 1 + std::count(cuda.begin() + static_cast<std::ptrdiff_t>(body),
                                     cuda.begin() + static_cast<std::ptrdiff_t>(first), '\n');
    return "#line 1 \"" + std::string(detail::kTemplates[0].name) + "\"\n" + std::string(detail::kTemplates[0].text) +
           "#line " + std::to_string(line) + " \"prelude_cuda.h\"\n" + cuda.substr(first, end - first);
  }();
  return text;
}

std::string model_source(const std::string& amd_source) {
  const std::string hip = vendor_prelude(Vendor::amd);
  const std::size_t at = amd_source.find(hip);
  if (at == std::string::npos || amd_source.find(hip, at + 1) != std::string::npos)
    throw std::logic_error("wave-64 model: the AMD prelude is not in the rendered source exactly once");
  std::string s = amd_source;
  s.replace(at, hip.size(), model_prelude());
  return s;
}

std::string model_source(const KernelConfig& kernel, DType dtype) {
  return model_source(render_source(kernel, dtype, Vendor::amd));
}

std::string model_source(const MultiConfig& kernel, DType dtype, std::uint32_t capacity) {
  return model_source(render_multi_source(kernel, dtype, ArchInfo::parse(kModelDevices[0].processor), capacity));
}

std::vector<ModelProgram> model_programs(const ModelSet& set) {
  std::vector<ModelProgram> out;
  for (const SingleKernel& k : set.singles)
    out.push_back({kernel_name(k.kernel, k.dtype) + ".wave64.cu", model_source(k.kernel, k.dtype)});
  for (const MultiKernel& k : set.multis)
    out.push_back({multi_kernel_name(k.kernel, k.dtype, k.capacity) + ".wave64.cu",
                   model_source(k.kernel, k.dtype, k.capacity)});
  return out;
}

std::vector<ModelBinary> compile_model(const JitCompiler& compiler, const BinaryCache& cache, const ArchInfo& arch,
                                       std::span<const ModelProgram> programs, unsigned threads) {
  std::vector<ModelBinary> out(programs.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, threads); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < programs.size();) try {
          out[i].code = compile_cached(compiler, cache, arch, programs[i].source, programs[i].name, &out[i].from_cache);
        } catch (const CompileError& e) {
          out[i].error = std::string(e.what()) + "\n" + e.log();
        } catch (const std::exception& e) {
          out[i].error = e.what();
        }
    });
  for (auto& t : pool) t.join();
  return out;
}

std::string break_wave_reduce(const std::string& source) {
  static constexpr std::string_view kLoop = "for (int off = AMAX_WAVE_SIZE / 2; off > 0; off >>= 1)";
  const std::size_t at = source.find(kLoop);
  if (at == std::string::npos || source.find(kLoop, at + 1) != std::string::npos)
    throw std::logic_error("wave-64 model: amax_wave_reduce's loop `" + std::string(kLoop) +
                           "` is not in the source exactly once (templates/amax_kernels.h changed?)");
  std::string s = source;
  s.replace(at, kLoop.size(), "for (int off = 16; off > 0; off >>= 1)");
  return s;
}

RangeReference::RangeReference(const std::uint8_t* data, DType dtype, std::uint64_t n, unsigned threads)
    : data_(data), dtype_(dtype), n_(n) {
  const std::uint64_t blocks = n / kBlock, supers = blocks / kSuper;
  const std::uint32_t eb = info(dtype).bytes;
  for (int m = 0; m < 2; ++m) {
    block_[m].resize(blocks);
    super_[m].resize(supers);
  }
  std::vector<std::thread> pool;
  threads = std::max(1u, threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::uint64_t b = blocks * t / threads; b < blocks * (t + 1) / threads; ++b)
        for (int m = 0; m < 2; ++m)
          block_[m][b] =
              reference_amax_bits(data + b * kBlock * eb, dtype, kBlock, m ? NanMode::ignore : NanMode::propagate);
    });
  for (auto& t : pool) t.join();
  for (int m = 0; m < 2; ++m)
    for (std::uint64_t s = 0; s < supers; ++s)
      super_[m][s] = *std::max_element(block_[m].begin() + s * kSuper, block_[m].begin() + (s + 1) * kSuper);
}

std::uint32_t RangeReference::range(std::uint64_t lo, std::uint64_t hi, NanMode mode,
                                    std::span<const std::uint64_t> dirty) const {
  if (hi > n_ || lo > hi) throw std::out_of_range("RangeReference::range: [lo, hi) outside the array");
  const int m = mode == NanMode::ignore ? 1 : 0;
  const std::uint32_t eb = info(dtype_).bytes;
  const auto clean = [&](std::uint64_t a, std::uint64_t b) {
    return std::none_of(dirty.begin(), dirty.end(), [&](std::uint64_t i) { return i >= a && i < b; });
  };
  std::uint32_t r = 0;
  for (std::uint64_t i = lo; i < hi;) {
    const std::uint64_t super = kBlock * kSuper;
    if (i % super == 0 && i + super <= hi && i / super < super_[m].size() && clean(i, i + super)) {
      r = std::max(r, super_[m][i / super]);
      i += super;
    } else if (i % kBlock == 0 && i + kBlock <= hi && i / kBlock < block_[m].size() && clean(i, i + kBlock)) {
      r = std::max(r, block_[m][i / kBlock]);
      i += kBlock;
    } else {
      const std::uint64_t e = std::min(hi, (i / kBlock + 1) * kBlock);
      r = std::max(r, reference_amax_bits(data_ + i * eb, dtype_, e - i, mode));
      i = e;
    }
  }
  return r;
}

}  // namespace amax::wave64

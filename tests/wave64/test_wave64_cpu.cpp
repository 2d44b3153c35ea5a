// The wave-64 model without a GPU: the set holds every kernel the AMD targets get, each model source
// is the AMD render with only the prelude swapped, every one compiles for sm_90 with NVRTC (so a
// template that stops compiling under the model fails here, in CI), and the reference over ranges
// that the GPU test compares with agrees with the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "amax/dispatch.hpp"
#include "amax/reference.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "wave64_model.hpp"

using namespace amax;
using namespace amax::wave64;

namespace {

const ModelSet& the_set() {
  static const ModelSet set = model_set();
  return set;
}

template <class Kernel, class Config>
bool holds(const std::vector<Kernel>& kernels, const Config& c, DType d) {
  return std::any_of(kernels.begin(), kernels.end(), [&](const Kernel& k) {
    return k.dtype == d && std::find(k.variants.begin(), k.variants.end(), c) != k.variants.end();
  });
}

}  // namespace

TEST(Wave64Model, SetHoldsEveryAmdKernelAndVariant) {
  const ModelSet& set = the_set();
  std::size_t pruned = 0, fused = 0;
  for (const ModelDevice& m : kModelDevices) {
    const ArchInfo arch = ArchInfo::parse(m.processor);
    for (const DTypeInfo& di : all_dtypes()) {
      for (const KernelConfig& c : enumerate_space(arch, di.dtype, SpaceKind::pruned)) {
        EXPECT_TRUE(holds(set.singles, c, di.dtype)) << c.label() << " " << di.name << " of " << arch.name;
        KernelConfig s = c;
        s.epilogue = Epilogue::scale;
        if (!s.validate(arch, di.dtype)) {
          EXPECT_TRUE(holds(set.singles, s, di.dtype)) << s.label() << " " << di.name << " of " << arch.name;
          ++fused;
        }
        ++pruned;
      }
      for (const StrategyInfo& si : kStrategies) {
        KernelConfig c = builtin_default(arch, di.dtype, 1u << 20);
        c.strategy = si.value;
        ASSERT_EQ(c.validate(arch, di.dtype), std::nullopt) << "every strategy is forced on AMD too";
        EXPECT_TRUE(holds(set.singles, c, di.dtype)) << c.label();
        EXPECT_TRUE(holds(set.singles, fused_variant(c, arch, di.dtype), di.dtype))
            << fused_variant(c, arch, di.dtype).label();
      }
      for (const MultiConfig& c : enumerate_multi_space(arch, di.dtype, SpaceKind::pruned)) {
        EXPECT_TRUE(holds(set.multis, c, di.dtype)) << c.label();
        MultiConfig s = c;
        s.epilogue = Epilogue::scale;
        EXPECT_TRUE(holds(set.multis, s, di.dtype)) << s.label();
      }
      for (std::uint64_t tensors : {2ull, 200ull})
        EXPECT_TRUE(holds(set.multis, builtin_multi_default(arch, di.dtype, {tensors, 0, 0}), di.dtype));
    }
  }
  // gfx942 and gfx950 have the same pruned spaces (wave 64, 1024 threads, no recorded exclusion):
  // 348 variants per dtype from 75 kernels, 288 of them with the scale epilogue too (first_reset and
  // first_reset_warp have none); the built-in default adds its b65535 grid cap to 6 strategies and
  // to three fused ones (two_stage, one_pass, self_reset; the others map to a self_reset b4cu of the
  // space).
  EXPECT_EQ(pruned, 2u * 3u * 348u);
  EXPECT_EQ(fused, 2u * 3u * 288u);
  EXPECT_EQ(set.singles.size(), 3u * (75u + 60u));
  EXPECT_EQ(set.single_variants(), 3u * (348u + 288u + 9u));
  // Lists: 256 or 512 threads x unroll 2, 4, 8 per dtype and epilogue; 5 chunks x 4 grid caps x 2
  // combines each (the built-in defaults among them).
  EXPECT_EQ(set.multis.size(), 3u * 2u * 6u);
  EXPECT_EQ(set.multi_variants(), 3u * 2u * 240u);
  for (const MultiKernel& k : set.multis) EXPECT_EQ(k.capacity, 192u) << k.kernel.label();
  std::printf("wave-64 model set: %zu single-tensor kernels (%zu variants), %zu list kernels (%zu variants)\n",
              set.singles.size(), set.single_variants(), set.multis.size(), set.multi_variants());
}

TEST(Wave64Model, SourceIsTheAmdRenderWithOnlyThePreludeSwapped) {
  const ModelSet& set = the_set();
  const std::string hip = vendor_prelude(Vendor::amd);
  const std::string& model = model_prelude();
  ASSERT_EQ(model.rfind("#line 1 \"prelude_wave64.h\"\n", 0), 0u);
  ASSERT_NE(model.find("\"prelude_cuda.h\"\nAMAX_DEVICE unsigned amax_atomic_max("), std::string::npos);
  for (std::string_view op : {"amax_arrive", "amax_store_release", "amax_load_acquire", "amax_div_rn", "amax_rcp_rn"})
    EXPECT_NE(model.find(op), std::string::npos) << op;
  EXPECT_EQ(model.find("griddepcontrol"), std::string::npos) << "no programmatic dependent launch on AMD";
  auto check = [&](const std::string& amd, const std::string& m, const std::string& what) {
    ASSERT_EQ(m.find(hip), std::string::npos) << what;
    const std::size_t at = m.find(model);
    ASSERT_NE(at, std::string::npos) << what;
    std::string back = m;
    back.replace(at, model.size(), hip);
    EXPECT_EQ(back, amd) << what;
    EXPECT_NE(m.find("#define AMAX_WAVE_SIZE 64"), std::string::npos) << what;
  };
  for (const SingleKernel& k : set.singles)
    check(render_source(k.kernel, k.dtype, Vendor::amd), model_source(k.kernel, k.dtype), k.kernel.label());
  for (const MultiKernel& k : set.multis)
    check(render_multi_source(k.kernel, k.dtype, ArchInfo::parse("gfx942"), k.capacity),
          model_source(k.kernel, k.dtype, k.capacity), k.kernel.label());
  // The AMD render does not depend on the processor: gfx950's list sources are gfx942's but for the
  // arch named in their first comment line.
  const MultiKernel& k = set.multis.front();
  auto body = [](std::string s) { return s.substr(s.find('\n')); };
  EXPECT_EQ(body(render_multi_source(k.kernel, k.dtype, ArchInfo::parse("gfx950"), k.capacity)),
            body(render_multi_source(k.kernel, k.dtype, ArchInfo::parse("gfx942"), k.capacity)));
}

TEST(Wave64Model, BrokenWaveReduceIsTheOnlyChange) {
  const std::string s = model_source(kControl, kControlDtype), b = break_wave_reduce(s);
  EXPECT_NE(s, b);
  EXPECT_EQ(b.size() + std::string("AMAX_WAVE_SIZE / 2").size() - 2, s.size());
  EXPECT_NE(b.find("for (int off = 16; off > 0; off >>= 1)"), std::string::npos);
  EXPECT_THROW(break_wave_reduce(b), std::logic_error);
  EXPECT_THROW(model_source(std::string("no prelude here")), std::logic_error);
}

TEST(Wave64Model, EveryKernelCompilesForSm90WithNvrtc) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const auto compiler = make_compiler(Vendor::nvidia);
  if (!compiler->available()) GTEST_SKIP() << "NVRTC unavailable: " << compiler->unavailable_reason();
  const ModelSet& set = the_set();
  auto programs = model_programs(set);
  // The control of the GPU test: a reduction that stops at 16 lanes must compile too.
  programs.push_back({"broken_wave_reduce.wave64.cu", break_wave_reduce(model_source(kControl, kControlDtype))});
  const BinaryCache cache{AMAX_WAVE64_CACHE};
  const auto t0 = std::chrono::steady_clock::now();
  const auto binaries =
      compile_model(*compiler, cache, model_target(), programs, std::max(2u, std::thread::hardware_concurrency()));
  std::size_t cached = 0;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const ModelBinary& b = binaries[i];
    if (!b.error.empty()) {
      ADD_FAILURE() << programs[i].name << " does not compile under the wave-64 model:\n" << b.error.substr(0, 4000);
      continue;
    }
    EXPECT_FALSE(b.code.binary.empty()) << programs[i].name;
    cached += b.from_cache;
    // ptxas' report names each entry point: the kernel's own and the fault reader of the prelude. A
    // binary from the cache carries no report (the cache keeps code objects only): its compile was
    // checked when it was made.
    if (b.from_cache) continue;
    const auto usage = parse_ptxas_report(b.code.log);
    EXPECT_TRUE(usage.count(std::string(kFaultKernel))) << programs[i].name << ": no " << kFaultKernel;
  }
  for (const SingleKernel& k : set.singles) {
    const auto& b = binaries[static_cast<std::size_t>(&k - set.singles.data())];
    if (b.from_cache) continue;
    const auto usage = parse_ptxas_report(b.code.log);
    EXPECT_TRUE(usage.count(kernel_name(k.kernel, k.dtype))) << k.kernel.label();
    if (k.kernel.strategy == Strategy::two_stage) {
      EXPECT_TRUE(usage.count(finish_kernel_name(k.kernel, k.dtype))) << k.kernel.label();
    }
  }
  std::printf("wave-64 model: %zu programs compiled for sm_90 by %s (%zu from the cache %s) in %.1f s\n",
              programs.size(), compiler->version().c_str(), cached, AMAX_WAVE64_CACHE,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST(Wave64Model, RangeReferenceAgreesWithTheReference) {
  std::mt19937_64 rng(std::random_device{}());
  for (const DTypeInfo& di : all_dtypes()) {
    const std::uint64_t n = 3 * RangeReference::kBlock * RangeReference::kSuper + 4567;
    std::vector<std::uint8_t> data = make_input(InputKind::random, di.dtype, n, rng());
    const RangeReference ref(data.data(), di.dtype, n, 2);
    const std::vector<std::uint8_t> special = make_input(InputKind::nan_and_inf, di.dtype, 64, rng());
    for (int trial = 0; trial < 40; ++trial) {
      std::uint64_t lo = rng() % n, hi = rng() % (n + 1);
      if (trial % 4 == 0) lo = 0, hi = n;
      if (lo > hi) std::swap(lo, hi);
      // Plant a few special or large elements inside (and one just outside) the range.
      std::vector<std::uint64_t> dirty;
      std::vector<std::uint8_t> saved = data;
      for (int k = 0; k < trial % 5; ++k) {
        const std::uint64_t at = lo + (hi > lo ? rng() % (hi - lo) : 0);
        if (at >= n) continue;
        std::memcpy(&data[at * di.bytes], &special[(rng() % 64) * di.bytes], di.bytes);
        dirty.push_back(at);
      }
      for (NanMode m : {NanMode::propagate, NanMode::ignore})
        EXPECT_EQ(ref.range(lo, hi, m, dirty), reference_amax_bits(data.data() + lo * di.bytes, di.dtype, hi - lo, m))
            << di.name << " [" << lo << ", " << hi << ") with " << dirty.size() << " planted";
      data = saved;
    }
  }
}

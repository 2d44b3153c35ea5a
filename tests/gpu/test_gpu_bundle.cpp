// Release bundle on the GPU (label `gpu`). CTest runs this binary with NVRTC unreachable
// (AMAX_TUNE_NVRTC_LIBRARY=/nonexistent), a fresh HOME and kernel cache, the build's bundle
// (AMAX_TUNE_BUNDLE) and system database: every shipped winner of this device's arch must then be
// served bit-exact from the bundle with zero JIT compiles, graph capture must work on a fresh
// context without amax_preload, a kernel the bundle lacks must fail with
// AMAX_STATUS_COMPILE_FAILED naming the missing compiler, and the first-call latency with the
// bundle is printed against JIT. (test_gpu_bundle_jit.cpp: refused entries, NVRTC reachable.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "amax/amax_tune.hpp"
#include "amax/bundle.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/dtype_c.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/multi_config.hpp"
#include "amax/reference.hpp"
#include "amax/render.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

amax_tune::Options options() {
  amax_tune::Options o;
  o.user_db_path = "";
  o.system_db_path = AMAX_TEST_SYSTEM_DB;
  return o;
}

bool nvrtc_unreachable() {
  const char* v = std::getenv("AMAX_TUNE_NVRTC_LIBRARY");
  return v && std::string(v) == "/nonexistent";
}

// Sets an environment variable for the lifetime of the object (then restores it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::shared_ptr<const Bundle> release_bundle() {
  const auto path = default_bundle_path();
  if (!path) return nullptr;
  std::string warning;
  std::shared_ptr<const Bundle> b = Bundle::open(*path, &warning);
  EXPECT_EQ(warning, "");
  return b;
}

}  // namespace

// Through the public API (libamax_tune: explain names the code object's origin) and through the
// runtime's kernel cache (amax_core: the origin of each kernel, and jit_compile_count() == 0).
TEST(GpuBundle, EveryShippedWinnerIsServedBitExactFromTheBundleWithoutJit) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(nvrtc_unreachable()) << "run through CTest (it sets AMAX_TUNE_NVRTC_LIBRARY=/nonexistent)";
  ASSERT_FALSE(env->compiler->available()) << "NVRTC must be unreachable here";
  Backend& b = *env->backend;
  const auto rows = db::TuningDb::open(AMAX_TEST_SYSTEM_DB, db::OpenMode::ReadOnly)
                        .winners<SingleFamily>(db::WinnerFilter{env->arch.name, std::nullopt});
  if (rows.empty()) GTEST_SKIP() << "the system database ships no winner for " << env->arch.name;
  const auto bundle = release_bundle();
  ASSERT_TRUE(bundle) << "no release bundle at " << default_bundle_path().value_or("(disabled)");
  // A shipped row made with other templates, tool version or compiler is not used by the runtime
  // (nor bundled): the release needs a re-tune (scripts/gpu.sh tune).
  const db::Provenance current{.compiler = bundle->compiler_for(env->arch),
                               .template_hash = template_hash(),
                               .tool_version = std::string(generator_version())};
  std::size_t stale = 0;
  for (const auto& r : rows) stale += !db::stale_fields(r.provenance, current).empty();
  ASSERT_EQ(stale, 0u) << stale << " of " << rows.size() << " shipped " << env->arch.name << " winners are stale for this "
                       << "build (e.g. template hash " << rows.front().provenance.template_hash << ", this build's "
                       << template_hash() << "): re-tune data/system-db.jsonl on this GPU first";
  const auto fresh_cache = std::filesystem::temp_directory_path() / ("amax-bundle-cache-" + std::to_string(::getpid()));
  KernelCache kernels(b, env->compiler, BinaryCache(fresh_cache), bundle);
  amax_tune::Context ctx(options());
  std::mt19937_64 rng(12345);
  int checked = 0;
  for (const auto& r : rows) {
    const DType d = r.key.dtype;
    const std::uint64_t n = r.key.n;
    const auto host = make_input(InputKind::random, d, n, rng());
    DeviceBuffer in(b, host.size() + 16), out(b, 4), ws(b, ctx.workspace_size(to_c(d), n));
    b.copy_to_device(in.get(), host.data(), host.size());
    ctx.compute(in.get(), to_c(d), n, out.get<float>(), ws.get(), ws.bytes(), nullptr);
    b.synchronize(nullptr);
    ASSERT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), d, n, NanMode::propagate))
        << to_string(d) << " n=" << n;
    const amax_explanation_t e = ctx.explain(to_c(d), n);
    EXPECT_EQ(e.source, AMAX_SOURCE_SYSTEM_DB) << to_string(d) << " n=" << n << ": " << e.detail;
    EXPECT_EQ(std::string(e.label), r.winner.label) << to_string(d) << " n=" << n;
    EXPECT_EQ(std::string(e.detail).rfind("code object: bundle;", 0), 0u) << to_string(d) << " n=" << n << ": " << e.detail;
    EXPECT_EQ(kernels.get(KernelConfig::parse(r.winner.label), d).origin, KernelOrigin::bundle)
        << to_string(d) << " n=" << n << " " << r.winner.label;
    ++checked;
  }
  EXPECT_EQ(jit_compile_count(), 0u);
  std::printf("bundle: %d shipped %s winners served bit-exact from the bundle, NVRTC unreachable, %llu JIT compiles\n",
              checked, env->arch.name.c_str(), static_cast<unsigned long long>(jit_compile_count()));
}

// Issue 26: the multi-tensor family is bundled too. With NVRTC unreachable, a list call on a fresh
// context (8 bf16 tensors and 3 fp32 tensors, some cut between blocks) is bit-exact; every kernel
// a fresh shipped group winner and the built-in multi-tensor default run (both epilogues, every
// descriptor capacity) is loaded from the bundle; nothing is JIT-compiled.
TEST(GpuBundle, ListCallsRunTheBundledGroupKernelsWithoutJit) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(nvrtc_unreachable()) << "run through CTest (it sets AMAX_TUNE_NVRTC_LIBRARY=/nonexistent)";
  const auto bundle = release_bundle();
  ASSERT_TRUE(bundle) << "no release bundle at " << default_bundle_path().value_or("(disabled)");
  Backend& b = *env->backend;
  const std::uint64_t before = jit_compile_count();
  amax_tune::Context ctx(options());
  std::mt19937_64 rng(2626);
  std::vector<std::vector<unsigned char>> host;
  std::vector<DeviceBuffer> bufs;
  std::vector<amax_tensor_t> list;
  std::vector<std::uint32_t> expected;
  const std::pair<DType, std::uint64_t> tensors[] = {
      {DType::bf16, 1u << 18}, {DType::bf16, 3000},    {DType::fp32, 1u << 20}, {DType::bf16, 1},
      {DType::bf16, 0},        {DType::bf16, 777777},  {DType::fp32, 12345},    {DType::bf16, 1u << 16},
      {DType::bf16, 4096},     {DType::fp32, 5},       {DType::bf16, 1u << 21}};
  for (const auto& [d, n] : tensors) {
    host.push_back(make_input(InputKind::random, d, n, rng()));
    bufs.emplace_back(b, host.back().size() + 16);
    b.copy_to_device(bufs.back().get(), host.back().data(), host.back().size());
    list.push_back(amax_tensor_t{bufs.back().get(), n, to_c(d)});
    expected.push_back(reference_amax_bits(host.back().data(), d, n, NanMode::propagate));
  }
  DeviceBuffer out(b, 4 * list.size()), ws(b, ctx.multi_workspace_size(list));
  ctx.multi_compute(list, out.get<float>(), ws.get(), ws.bytes(), nullptr);
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(list.size());
  b.copy_to_host(got.data(), out.get(), 4 * got.size());
  EXPECT_EQ(got, expected);
  // The kernels themselves, through the runtime's kernel cache.
  KernelCache kernels(b, env->compiler, BinaryCache(std::filesystem::path{}), bundle);
  db::Provenance current{.compiler = bundle->compiler_for(env->arch),
                         .template_hash = multi_template_hash(),
                         .tool_version = std::string(generator_version())};
  std::vector<std::pair<MultiConfig, DType>> configs;
  for (const auto& d : all_dtypes()) configs.emplace_back(builtin_multi_default(env->arch, d.dtype, GroupShape{}), d.dtype);
  std::size_t stale = 0;
  for (const auto& r : db::TuningDb::open(AMAX_TEST_SYSTEM_DB, db::OpenMode::ReadOnly)
                           .winners<MultiFamily>(db::WinnerFilter{env->arch.name, std::nullopt})) {
    if (!db::stale_fields(r.provenance, current).empty()) {
      ++stale;
      continue;
    }
    configs.emplace_back(MultiConfig::parse(r.winner.label), r.key.dtype);
  }
  for (auto [c, d] : configs)
    for (const auto& e : kEpilogues)
      for (const std::uint32_t k : multi_capacities(env->arch)) {
        c.epilogue = e.value;
        EXPECT_EQ(kernels.get(c, d, k).origin, KernelOrigin::bundle) << c.label() << " " << to_string(d) << " k" << k;
      }
  EXPECT_EQ(jit_compile_count(), before);
  std::printf("bundle: %zu multi-tensor configs (defaults and fresh group winners; %zu stale group winners not "
              "bundled) served from the bundle, NVRTC unreachable\n",
              configs.size(), stale);
}

// Issue 26: a list's variant that fails to compile (forced, not bundled, NVRTC unreachable) falls
// back by the single family's rule: the built-in default runs (bundled: bit-exact), explain names
// the failed variant, and the next list of that shape runs the default without another compile.
TEST(GpuBundle, ListVariantThatFailsToCompileFallsBackToTheDefaultOnce) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(nvrtc_unreachable()) << "run through CTest (it sets AMAX_TUNE_NVRTC_LIBRARY=/nonexistent)";
  const auto bundle = release_bundle();
  ASSERT_TRUE(bundle);
  const char* forced = "multi.t128.v8.u1.c16k.b2cu.thread";
  ASSERT_EQ(bundle->find(MultiConfig::parse(forced), DType::bf16, env->arch, 192), nullptr);
  const ScopedEnv force("AMAX_TUNE_FORCE_MULTI_LABEL", forced);
  amax_tune::Context ctx(options());
  Backend& b = *env->backend;
  std::mt19937_64 rng(26);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<unsigned char>> host;
    std::vector<DeviceBuffer> bufs;
    std::vector<amax_tensor_t> list;
    std::vector<std::uint32_t> expected;
    for (std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{4097}, std::uint64_t{100000}}) {
      host.push_back(make_input(InputKind::random, DType::bf16, n, rng()));
      bufs.emplace_back(b, host.back().size() + 16);
      b.copy_to_device(bufs.back().get(), host.back().data(), host.back().size());
      list.push_back(amax_tensor_t{bufs.back().get(), n, AMAX_DTYPE_BF16});
      expected.push_back(reference_amax_bits(host.back().data(), DType::bf16, n, NanMode::propagate));
    }
    if (round == 0) {
      const amax_multi_explanation_t e = ctx.multi_explain(list, AMAX_DTYPE_BF16);
      EXPECT_EQ(e.source, AMAX_SOURCE_OVERRIDE) << e.detail;
      EXPECT_EQ(std::string(e.label), forced);
    }
    DeviceBuffer out(b, 4 * list.size()), ws(b, ctx.multi_workspace_size(list));
    ctx.multi_compute(list, out.get<float>(), ws.get(), ws.bytes(), nullptr);
    b.synchronize(nullptr);
    std::vector<std::uint32_t> got(list.size());
    b.copy_to_host(got.data(), out.get(), 4 * got.size());
    EXPECT_EQ(got, expected) << "round " << round;
    const amax_multi_explanation_t e = ctx.multi_explain(list, AMAX_DTYPE_BF16);
    EXPECT_EQ(e.source, AMAX_SOURCE_DEFAULT) << e.detail;
    MultiConfig def = builtin_multi_default(env->arch, DType::bf16, GroupShape{3, 0, 0});
    EXPECT_EQ(std::string(e.label), def.label());
    EXPECT_EQ(std::string(e.detail).rfind(std::string("the chosen variant ") + forced + " failed to compile: built-in "
                                          "multi-tensor default of the arch family for 3 tensors", 0),
              0u)
        << e.detail;
  }
}

// A kernel the bundle does not hold, with NVRTC unreachable: the kernel cache's CompileError and
// the C API's AMAX_STATUS_COMPILE_FAILED name the library that could not be loaded; never a crash.
TEST(GpuBundle, UnbundledKernelWithoutNvrtcIsCompileFailedNamingWhatIsMissing) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(nvrtc_unreachable()) << "run through CTest (it sets AMAX_TUNE_NVRTC_LIBRARY=/nonexistent)";
  const auto bundle = release_bundle();
  ASSERT_TRUE(bundle);
  const KernelConfig odd{Strategy::one_pass, 64, 1, 1, BlockCap::uncapped()};  // no default or winner
  ASSERT_EQ(bundle->find(odd, DType::fp32, env->arch), nullptr) << odd.label() << " is in the bundle";
  KernelCache kernels(*env->backend, env->compiler, BinaryCache(std::filesystem::path{}), bundle);
  try {
    (void)kernels.get(odd, DType::fp32);
    ADD_FAILURE() << "compiled " << odd.label() << " without NVRTC";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent"), std::string::npos) << e.what();
  }
  // The C API without a bundle (AMAX_TUNE_BUNDLE=""): even the built-in default needs NVRTC.
  const ScopedEnv no_bundle("AMAX_TUNE_BUNDLE", "");
  amax_tune::Context ctx(options());
  DeviceBuffer in(*env->backend, 4096 * 4), out(*env->backend, 4), ws(*env->backend, ctx.workspace_size(AMAX_DTYPE_FP32, 4096));
  try {
    ctx.compute(in.get(), AMAX_DTYPE_FP32, 4096, out.get<float>(), ws.get(), ws.bytes(), nullptr);
    ADD_FAILURE() << "computed without a bundle and without NVRTC";
  } catch (const amax_tune::Error& e) {
    EXPECT_EQ(e.status(), AMAX_STATUS_COMPILE_FAILED) << e.what();
    EXPECT_NE(std::string(e.what()).find("AMAX_STATUS_COMPILE_FAILED"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nonexistent"), std::string::npos) << e.what();
    std::printf("without bundle and NVRTC: %s\n", e.what());
  }
}

TEST(GpuBundle, GraphCaptureOnAFreshContextNeedsNoPreloadForBundledKernels) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(nvrtc_unreachable()) << "run through CTest (it sets AMAX_TUNE_NVRTC_LIBRARY=/nonexistent)";
  Backend& b = *env->backend;
  amax_tune::Context ctx(options());  // fresh: nothing loaded, no amax_preload
  const std::uint64_t n = 1u << 20;
  const auto host = make_input(InputKind::random, DType::bf16, n, 7);
  DeviceBuffer in(b, host.size()), out(b, 4), ws(b, ctx.workspace_size(AMAX_DTYPE_BF16, n));
  b.copy_to_device(in.get(), host.data(), host.size());
  StreamHandle s = b.create_stream();
  b.begin_capture(s);
  ctx.compute(in.get(), AMAX_DTYPE_BF16, n, out.get<float>(), ws.get(), ws.bytes(), s);
  auto graph = b.end_capture(s);
  b.launch_graph(graph, s);
  b.synchronize(s);
  EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::bf16, n, NanMode::propagate));
  EXPECT_EQ(std::string(ctx.explain(AMAX_DTYPE_BF16, n).detail).rfind("code object: bundle;", 0), 0u);
  b.destroy_graph(graph);
  b.destroy_stream(s);
}

// One fresh process's first call (see below); its numbers (context creation, then the first amax at
// each size, ms) are appended as one line to `record`.
[[noreturn]] void first_call_child(bool jit, const std::string& record) {
          if (jit) {
            ::unsetenv("AMAX_TUNE_NVRTC_LIBRARY");
            ::setenv("AMAX_TUNE_BUNDLE", "", 1);
            const auto dir = std::filesystem::temp_directory_path() / ("amax-jit-latency-" + std::to_string(::getpid()));
            std::filesystem::remove_all(dir);
            ::setenv("AMAX_TUNE_CACHE_DIR", dir.c_str(), 1);
          }
          using clock = std::chrono::steady_clock;
          const auto t0 = clock::now();
          amax_tune::Context ctx(options());
          const double create_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
          amax::test::GpuEnv* g = amax::test::gpu_env();
          std::string line;
          std::string numbers = std::to_string(create_ms);
          for (std::uint64_t n : {std::uint64_t{4096}, std::uint64_t{1} << 20, std::uint64_t{1} << 26}) {
            DeviceBuffer in(*g->backend, n * 2), out(*g->backend, 4), ws(*g->backend, ctx.workspace_size(AMAX_DTYPE_BF16, n));
            g->backend->memset32_async(in.get(), 0x3f803f80u, n / 2, nullptr);
            g->backend->synchronize(nullptr);
            const auto t1 = clock::now();
            ctx.compute(in.get(), AMAX_DTYPE_BF16, n, out.get<float>(), ws.get(), ws.bytes(), nullptr);
            g->backend->synchronize(nullptr);
            const double ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
            const std::string detail = ctx.explain(AMAX_DTYPE_BF16, n).detail;
            numbers += " " + std::to_string(ms);
            line += " n=" + std::to_string(n) + ": " + std::to_string(ms) + " ms (" + detail.substr(0, detail.find(';')) + ")";
            if (read_bits(*g->backend, out.get()) != 0x3f800000u) std::exit(3);
          }
          std::printf("first-call latency, %s: context create %.2f ms; first bf16 amax%s\n",
                      jit ? "JIT (NVRTC, no bundle, empty kernel cache)" : "bundle (NVRTC unreachable)", create_ms,
                      line.c_str());
          std::fflush(stdout);
          std::ofstream(record, std::ios::app) << numbers << "\n";
          std::exit(0);
        }

// The first call of a process (context creation, then the first amax of three sizes, each
// synchronised): with the bundle and NVRTC unreachable, against JIT (NVRTC, no bundle, an empty
// kernel cache). Each of 5 runs per mode is a fresh child process, so that nothing is loaded yet;
// the medians are printed as `first-call latency (median of 5 fresh processes), ...`.
TEST(GpuBundle, FirstCallLatencyWithTheBundleAgainstJit) {
  AMAX_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr int kRuns = 5;
  // Each child (a re-run of this test up to its EXPECT_EXIT) appends its numbers to the record of
  // its mode; the paths travel in the environment, so a child finds its parent's (and does not
  // clear it). Only the parent gets past the EXPECT_EXITs to read them.
  std::string record[2];
  for (const bool jit : {false, true}) {
    const char* var = jit ? "AMAX_TEST_FIRST_CALL_RECORD_JIT" : "AMAX_TEST_FIRST_CALL_RECORD_BUNDLE";
    if (const char* r = std::getenv(var)) {
      record[jit] = r;
    } else {
      record[jit] = (std::filesystem::temp_directory_path() /
                     ("amax-first-call-" + std::to_string(::getpid()) + (jit ? "-jit" : "-bundle")))
                        .string();
      std::filesystem::remove(record[jit]);
      ::setenv(var, record[jit].c_str(), 1);
    }
  }
  for (const bool jit : {false, true})
    for (int run = 0; run < kRuns; ++run)
      EXPECT_EXIT(first_call_child(jit, record[jit]), ::testing::ExitedWithCode(0), "");
  for (const bool jit : {false, true}) {
    std::vector<std::vector<double>> columns(4);  // create, n = 4096, 2^20, 2^26
    std::ifstream in(record[jit]);
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      for (auto& c : columns) {
        double v = 0;
        if (f >> v) c.push_back(v);
      }
    }
    std::filesystem::remove(record[jit]);
    ASSERT_EQ(columns[0].size(), static_cast<std::size_t>(kRuns)) << record[jit];
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("first-call latency (median of %d fresh processes), %s: context create %.2f ms; first bf16 amax "
                "n=4096 %.2f ms, n=2^20 %.2f ms, n=2^26 %.2f ms\n",
                kRuns, jit ? "JIT (NVRTC, no bundle, empty kernel cache)" : "bundle (NVRTC unreachable)",
                median(columns[0]), median(columns[1]), median(columns[2]), median(columns[3]));
  }
}

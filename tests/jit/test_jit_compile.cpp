// Real JIT compilation of generated variants: NVRTC for sm_90 and hipRTC for AMD target IDs, on
// the CPU machine (neither needs a GPU), with resource usage read back from each compiler's output.
// AMD targets run where the hipRTC of this process can compile them (JitCompiler::unsupported):
// gfx90a with Debian 12's ROCm 5.2, gfx942 with ROCm 5.7 (CTest runs this program a second time
// through the trixie prefix: test_jit_rocm57), gfx942 and gfx950 with ROCm 6.4 (the sid root,
// scripts/test-rocm6.sh). Each test prints the hipRTC and comgr it used.
#include <gtest/gtest.h>

#include "amax/code_object.hpp"
#include "amax/compiler.hpp"
#include "target_name.hpp"
#include "amax/kernel_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "amax/multi_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"

using namespace amax;

namespace {

struct Target {
  const char* arch;
  Vendor vendor;
  bool whole_space;  ///< also compile the whole pruned space of every dtype (WholePrunedSpace)
};
void PrintTo(const Target& t, std::ostream* os) { *os << t.arch; }

// A spread of the pruned space: for each strategy, the smallest and largest block with the
// fewest and most loads in flight.
// The threads a block of `c` is launched with (first_reset_warp: one wave more than its label's).
std::uint32_t block_of(const KernelConfig& c, const ArchInfo& arch) {
  return block_threads(c.strategy, c.threads, static_cast<std::uint32_t>(arch.wave_size));
}

std::vector<KernelConfig> spread(const ArchInfo& arch, DType dtype) {
  std::vector<KernelConfig> out;
  for (const auto& c : distinct_kernels(enumerate_space(arch, dtype, SpaceKind::pruned)))
    if ((c.threads == 128 || c.threads == 1024 || (c.strategy == Strategy::first_reset_warp && c.threads == 512)) &&
        (c.unroll == 1 || c.unroll == 8))
      out.push_back(c);
  return out;
}

std::map<std::string, ResourceUsage> usage_of(const CompiledProgram& p, Vendor v) {
  return v == Vendor::nvidia ? p.usage : amdgpu_resource_usage(p.binary);
}

// Skips (returning true) where this build or this process's compiler cannot compile for `t`.
bool skip_reason(const Target& t, std::string& why) {
  if (!have_compiler(t.vendor)) {
    why = "this build has no " + std::string(to_string(t.vendor)) + " backend";
    return true;
  }
  if (auto u = make_compiler(t.vendor)->unsupported(ArchInfo::parse(t.arch))) {
    why = *u + (t.vendor == Vendor::amd
                    ? "; gfx942 runs in test_jit_rocm57 (ROCm 5.7 prefix: scripts/fetch-rocm.sh) and "
                      "gfx942/gfx950 in scripts/test-rocm6.sh (ROCm 6.4 sid root)"
                    : "");
    return true;
  }
  if (t.vendor == Vendor::amd && !can_read_amdgpu_code_objects()) {
    why = "built without LLVM: cannot read AMD code objects";
    return true;
  }
  return false;
}
#define SKIP_UNLESS_COMPILABLE(t)                      \
  do {                                                 \
    std::string why_;                                  \
    if (skip_reason(t, why_)) GTEST_SKIP() << why_;    \
  } while (0)

// Whether this process compiles the whole pruned space for `t`: gfx942:sramecc+:xnack- and gfx950
// with every hipRTC that knows them; gfx90a with ROCm 5.x only (ROCm 6.4 compiles its spread, which
// keeps CI's second build under its time).
bool whole_space_here(const Target& t) {
  if (!t.whole_space) return false;
  if (std::string_view(t.arch) != "gfx90a" || !have_compiler(Vendor::amd)) return true;
  return make_compiler(Vendor::amd)->version().rfind("hiprtc 5.", 0) == 0;
}

void print_toolchain(const JitCompiler& c, const ArchInfo& arch) {
  std::cout << "[ toolchain ] " << arch.name << ": " << c.toolchain();
  if (c.vendor() == Vendor::amd) std::cout << "; code-object reader: LLVM " << code_object_reader_llvm();
  std::cout << std::endl;
}

// One compiled kernel of the space: its config, its usage and the problem that would take it out.
struct Compiled {
  KernelConfig config;
  ResourceUsage usage;
  std::string target;  // amdhsa.target of the code object
  std::optional<std::string> problem;
  std::string error;   // compile or read failure
};

// Compiles `configs` for `arch` on every hardware thread (at least 2), reading usage back.
std::vector<Compiled> compile_all(const JitCompiler& compiler, const ArchInfo& arch, DType dtype,
                                  const std::vector<KernelConfig>& configs) {
  std::vector<Compiled> out(configs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < configs.size();) {
      Compiled& r = out[i];
      r.config = configs[i];
      const std::string name = kernel_name(r.config, dtype);
      try {
        const CompiledProgram p =
            compiler.compile(render_source(r.config, dtype, arch.vendor), r.config.kernel_label() + ".hip", arch);
        const auto usage = amdgpu_resource_usage(p.binary);
        if (!usage.count(name)) throw std::runtime_error(name + " missing from the code object's metadata");
        r.usage = usage.at(name);
        r.target = amdgpu_target(p.binary);
        r.problem = amdgpu_resource_problem(r.usage, arch, block_of(r.config, arch));
        if (r.config.strategy == Strategy::two_stage) {
          const auto f = usage.find(finish_kernel_name(r.config, dtype));
          if (f == usage.end()) throw std::runtime_error("no finish kernel in " + name);
          if (!r.problem) r.problem = amdgpu_resource_problem(f->second, arch, block_of(r.config, arch));
        }
      } catch (const std::exception& e) {
        r.error = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  return out;
}

struct Range {
  int lo = 1 << 30, hi = -1;
  void add(int v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  std::string str() const { return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi); }
};

class JitCompile : public ::testing::TestWithParam<Target> {};

}  // namespace

TEST_P(JitCompile, SpreadOfPrunedSpaceCompilesWithResourceUsage) {
  const Target t = GetParam();
  if (whole_space_here(t))
    GTEST_SKIP() << t.arch << ": WholePrunedSpaceOfEveryDtypeCompilesWithinItsResources compiles and checks every kernel";
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const auto arch = ArchInfo::parse(t.arch);
  int compiled = 0;
  for (const auto& d : all_dtypes()) {
    const auto configs = spread(arch, d.dtype);
    // atomic, two_stage, one_pass: 2 thread counts x 2 unrolls; self_reset: 1024 threads x 2
    // unrolls; first_reset
    // (unroll 1-4): 1024 threads x unroll 1; first_reset_warp (at most 512 threads, its ticket wave
    // beside them): 512 threads x unroll 1
    ASSERT_EQ(configs.size(), 16u);
    for (const auto& c : configs) {
      const std::string src = render_source(c, d.dtype, t.vendor);
      CompiledProgram p;
      try {
        p = compiler->compile(src, c.kernel_label() + ".src", arch);
      } catch (const CompileError& e) {
        FAIL() << c.label() << " " << d.name << ": " << e.what();
      }
      ASSERT_GT(p.binary.size(), 1000u);
      const auto usage = usage_of(p, t.vendor);
      const std::string name = kernel_name(c, d.dtype);
      ASSERT_TRUE(usage.count(name)) << name << " missing from resource report";
      const ResourceUsage& u = usage.at(name);
      EXPECT_GT(u.registers, 0) << name;
      EXPECT_EQ(u.spill_stores, 0) << name << " spills";
      EXPECT_EQ(u.spill_loads, 0) << name << " spills";
      if (c.strategy == Strategy::two_stage) {
        EXPECT_TRUE(usage.count(finish_kernel_name(c, d.dtype))) << "no finish kernel in " << name;
      } else {
        EXPECT_FALSE(usage.count(finish_kernel_name(c, d.dtype)));
      }
      if (t.vendor == Vendor::amd) {
        EXPECT_GT(u.sgprs, 0) << name;
        EXPECT_EQ(u.wave_size, 64) << name;
        EXPECT_EQ(u.max_block, static_cast<int>(block_of(c, arch))) << name << ": launch bound";
        EXPECT_EQ(u.stack_bytes, 0) << name << " uses scratch";
        EXPECT_EQ(amdgpu_target(p.binary), "amdgcn-amd-amdhsa--" + arch.name) << name;
      }
      ++compiled;
    }
  }
  print_toolchain(*compiler, arch);
  EXPECT_EQ(compiled, 3 * 16);  // three dtypes
  RecordProperty("compiled", compiled);
}

// The scale epilogue compiles for every strategy and dtype with both compilers, without spills,
// with its entry points named after the fused kernel label.
TEST_P(JitCompile, ScaleEpilogueCompilesForEveryStrategy) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const auto arch = ArchInfo::parse(t.arch);
  int compiled = 0;
  for (const auto& d : all_dtypes())
    for (const StrategyInfo& s : kStrategies) {
      if (resets_first(s.value)) continue;  // no scale epilogue (validate(); fused_variant maps it)
      const KernelConfig c{s.value, 512, 16 / d.bytes, 4, BlockCap::per_cu(8), Epilogue::scale};
      ASSERT_FALSE(c.validate(arch, d.dtype)) << *c.validate(arch, d.dtype);
      CompiledProgram p;
      try {
        p = compiler->compile(render_source(c, d.dtype, t.vendor), c.kernel_label() + ".src", arch);
      } catch (const CompileError& e) {
        FAIL() << c.label() << " " << d.name << ": " << e.what();
      }
      const auto usage = usage_of(p, t.vendor);
      const std::string name = kernel_name(c, d.dtype);
      ASSERT_TRUE(usage.count(name)) << name << " missing from resource report";
      EXPECT_EQ(usage.at(name).spill_stores, 0) << name << " spills";
      EXPECT_EQ(usage.at(name).spill_loads, 0) << name << " spills";
      EXPECT_EQ(usage.count(finish_kernel_name(c, d.dtype)), s.value == Strategy::two_stage ? 1u : 0u) << name;
      ++compiled;
    }
  EXPECT_EQ(compiled, 12);
}

TEST_P(JitCompile, CompileErrorCarriesTheFullLog) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const std::string src = "extern \"C\" __global__ void broken(float* p) { p[0] = undefined_name_x; }\n";
  try {
    compiler->compile(src, "broken.src", ArchInfo::parse(t.arch));
    FAIL() << "a broken program compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undefined_name_x"), std::string::npos) << e.log();
    EXPECT_NE(std::string(e.what()).find("broken.src"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(t.arch), std::string::npos);
  }
}

TEST_P(JitCompile, TemplateChecksPointIntoTheTemplate) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto arch = ArchInfo::parse(t.arch);
  const std::uint32_t wave = static_cast<std::uint32_t>(arch.wave_size);
  // Not a multiple of the wave size, then over wave size squared: each stopped by the template's
  // own #error, and the message names amax_kernels.h (the rendered source's #line 1).
  for (std::uint32_t threads : {wave + wave / 2, 2 * wave * wave}) {
    const KernelConfig c{Strategy::one_pass, threads, 4, 1, {}};
    try {
      make_compiler(t.vendor)->compile(render_source(c, DType::fp32, arch.vendor), "bad.src", arch);
      FAIL() << c.label() << " compiled";
    } catch (const CompileError& e) {
      EXPECT_NE(e.log().find("amax_kernels.h"), std::string::npos) << e.log();
      EXPECT_NE(e.log().find("AMAX_THREADS must be"), std::string::npos) << e.log();
    }
  }
}

// The multi-tensor family (templates/amax_multi_kernels.h) for every target: every dtype, every
// descriptor capacity of the arch (NVIDIA sm_70+: 192, 512 and 1600, up to 32 KB of kernel parameters;
// AMD: 192), both epilogues, the smallest and largest block of the pruned space with the fewest and
// most loads in flight (one chunk size, grid cap and combine: none is compiled in); each code
// object names its kernel, with registers read back and no spills; on AMD the code object's target
// ID, wave size and launch bound are checked as for the single-tensor kernels.
TEST_P(JitCompile, MultiTensorSpreadCompilesWithoutSpills) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const ArchInfo arch = ArchInfo::parse(t.arch);
  const std::uint32_t most = arch.vendor == Vendor::nvidia ? 1024 : 512;  // the space's largest block
  int compiled = 0;
  for (const auto& d : all_dtypes())
    for (std::uint32_t k : multi_capacities(arch))
      for (auto c : enumerate_multi_space(arch, d.dtype, SpaceKind::pruned))
        for (const EpilogueInfo& ep : kEpilogues) {
          if (!((c.threads == 256 && c.unroll == 2) || (c.threads == most && c.unroll == 8)) || c.chunk_kib != 64 ||
              c.max_blocks != BlockCap::per_cu(4) || c.combine != Combine::thread)
            continue;
          c.epilogue = ep.value;
          CompiledProgram p;
          try {
            p = compiler->compile(render_multi_source(c, d.dtype, arch, k), c.kernel_label() + ".src", arch);
          } catch (const CompileError& e) {
            FAIL() << c.label() << " " << d.name << " k" << k << ": " << e.what();
          }
          const auto usage = usage_of(p, t.vendor);
          const std::string name = multi_kernel_name(c, d.dtype, k);
          ASSERT_TRUE(usage.count(name)) << name << " missing from the resource report";
          const ResourceUsage& u = usage.at(name);
          EXPECT_GT(u.registers, 0) << name;
          EXPECT_EQ(u.spill_stores, 0) << name << " spills";
          EXPECT_EQ(u.spill_loads, 0) << name << " spills";
          if (t.vendor == Vendor::amd) {
            EXPECT_EQ(amdgpu_target(p.binary), "amdgcn-amd-amdhsa--" + arch.name) << name;
            EXPECT_EQ(u.wave_size, 64) << name;
            EXPECT_EQ(u.max_block, static_cast<int>(c.threads)) << name;
          }
          ++compiled;
        }
  // 3 dtypes x capacities x 2 (threads, unroll) pairs x 2 epilogues
  EXPECT_EQ(compiled, 3 * static_cast<int>(multi_capacities(arch).size()) * 2 * 2);
  std::printf("[ multi ] %s: %d multi-tensor kernels compiled, no spills\n", t.arch, compiled);
}

TEST_P(JitCompile, VersionNamesTheCompiler) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const auto v = compiler->version();
  EXPECT_EQ(v.rfind(t.vendor == Vendor::nvidia ? "nvrtc " : "hiprtc ", 0), 0u) << v;
  if (t.vendor == Vendor::amd) {
    // The version is the loaded library's (not the headers'): it appears in the library's file name.
    const std::string tc = compiler->toolchain();
    EXPECT_NE(tc.find(".so." + v.substr(7)), std::string::npos) << v << " vs " << tc;
    compiler->compile("extern \"C\" __global__ void k(int* p) { *p = 1; }\n", "k.hip", ArchInfo::parse(t.arch));
    const std::string after = compiler->toolchain();
    EXPECT_NE(after.find("libamd_comgr.so."), std::string::npos) << after;
    EXPECT_NE(after.find("comgr API "), std::string::npos) << after;
  }
  print_toolchain(*compiler, ArchInfo::parse(t.arch));
}

TEST_P(JitCompile, WholePrunedSpaceOfEveryDtypeCompilesWithinItsResources) {
  const Target t = GetParam();
  if (!whole_space_here(t))
    GTEST_SKIP() << t.arch << ": the spread only here (the whole space runs for gfx942:sramecc+:xnack-, gfx950, "
                 << "and gfx90a with ROCm 5.x)";
  SKIP_UNLESS_COMPILABLE(t);
  const auto compiler = make_compiler(t.vendor);
  const auto arch = ArchInfo::parse(t.arch);
  std::size_t total = 0;
  std::cout << fmt::format("[ resources ] | target | dtype | kernels | VGPRs | AGPRs | SGPRs | LDS bytes | scratch | "
                           "spills | wave | excluded |\n");
  for (const auto& d : all_dtypes()) {
    const auto space = enumerate_space(arch, d.dtype, SpaceKind::pruned);
    // The kernels of the space plus those its recorded exclusions took out: both are compiled, so
    // that an exclusion that no longer applies shows as well as a new one.
    auto kernels = distinct_kernels(space);
    for (const auto& [c, why] : space_exclusions(arch, d.dtype, SpaceKind::pruned)) {
      KernelConfig k = c;
      k.max_blocks = BlockCap::uncapped();
      if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
    }
    const auto results = compile_all(*compiler, arch, d.dtype, kernels);
    Range vgpr, agpr, sgpr, lds, scratch, spills, wave;
    int excluded = 0;
    for (const auto& r : results) {
      const std::string name = kernel_name(r.config, d.dtype);
      ASSERT_EQ(r.error, "") << name << " for " << arch.name;
      EXPECT_EQ(r.target, "amdgcn-amd-amdhsa--" + arch.name) << name;
      EXPECT_EQ(r.usage.max_block, static_cast<int>(block_of(r.config, arch))) << name << ": launch bound";
      vgpr.add(r.usage.registers), agpr.add(std::max(r.usage.agprs, 0)), sgpr.add(r.usage.sgprs);
      lds.add(r.usage.shared_bytes), scratch.add(r.usage.stack_bytes), spills.add(r.usage.spill_stores);
      wave.add(r.usage.wave_size);
      EXPECT_GT(r.usage.registers, 0) << name;
      EXPECT_GT(r.usage.sgprs, 0) << name;
      EXPECT_EQ(r.usage.wave_size, 64) << name;
      // The generator must know, without compiling, every kernel that leaves the space.
      const auto recorded = recorded_exclusion(arch, d.dtype, r.config);
      EXPECT_EQ(r.problem.has_value(), recorded.has_value())
          << name << " for " << arch.name << ": measured '" << r.problem.value_or("none") << "', recorded '"
          << recorded.value_or("none") << "' (generator/src/amd_exclusions.cpp lists the kernels that spill or "
          << "cannot hold one block per CU)";
      excluded += recorded.has_value();
    }
    total += results.size();
    std::cout << fmt::format("[ resources ] | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", arch.name,
                             d.name, results.size(), vgpr.str(), agpr.str(), sgpr.str(), lds.str(), scratch.str(),
                             spills.str(), wave.str(), excluded);
  }
  print_toolchain(*compiler, arch);
  EXPECT_EQ(total, 225u) << "3 dtypes x 75 kernels (48 of atomic, two_stage, one_pass; 12 of self_reset; 9 of "
                            "first_reset; 6 of first_reset_warp)";
  RecordProperty("compiled", static_cast<int>(total));
}

TEST_P(JitCompile, RefusesTheOtherVendorsArch) {
  const Target t = GetParam();
  SKIP_UNLESS_COMPILABLE(t);
  const auto other = ArchInfo::parse(t.vendor == Vendor::nvidia ? "gfx90a" : "sm_90");
  EXPECT_THROW(make_compiler(t.vendor)->compile("", "x", other), std::invalid_argument);
}

// The compiler library is opened on first use, not linked: with it made unreachable (the override
// names a file that does not exist) a compile is a CompileError naming the library and dlerror()'s
// message, with no compile counted. Runs in a child process (threadsafe death-test style re-executes
// the binary) so that the library has not been opened yet.
TEST_P(JitCompile, MissingCompilerLibraryIsACompileErrorNamingIt) {
  const Target t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* env = t.vendor == Vendor::nvidia ? "AMAX_TUNE_NVRTC_LIBRARY" : "AMAX_TUNE_HIPRTC_LIBRARY";
  EXPECT_EXIT(
      {
        ::setenv(env, "/nonexistent/libjit.so", 1);
        const auto compiler = make_compiler(t.vendor);
        int code = 0;
        if (compiler->available() || !compiler->version().empty()) code = 2;
        try {
          compiler->compile("extern \"C\" __global__ void k() {}", "k.src", ArchInfo::parse(t.arch));
          code = 3;
        } catch (const CompileError& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
        if (jit_compile_count() != 0) code = 4;
        std::exit(code);
      },
      ::testing::ExitedWithCode(0),
      "cannot compile k.src for .*could not be loaded \\(tried /nonexistent/libjit.so: "
      "/nonexistent/libjit.so: cannot open shared object file");
}


// gfx942 and gfx950 compile in the processes whose hipRTC knows them (see the file comment); the
// whole pruned space runs once per hipRTC generation for gfx942 (its MI300X target ID) and gfx950.
INSTANTIATE_TEST_SUITE_P(Targets, JitCompile,
                         ::testing::Values(Target{"sm_90", Vendor::nvidia, false}, Target{"gfx90a", Vendor::amd, true},
                                           Target{"gfx942:sramecc+:xnack-", Vendor::amd, true},
                                           Target{"gfx942:xnack+", Vendor::amd, false},
                                           Target{"gfx942", Vendor::amd, false},
                                           Target{"gfx950", Vendor::amd, true}),
                         [](const auto& info) { return test::jit_target_name(info.param.arch, info.param.vendor); });

TEST(CodeObject, RejectsBytesThatAreNotACodeObject) {
  if (!can_read_amdgpu_code_objects()) GTEST_SKIP() << "built without LLVM";
  const std::string junk = "this is not an ELF file at all, just text";
  EXPECT_THROW(amdgpu_resource_usage(junk), std::runtime_error);
  const std::string truncated_bundle = "__CLANG_OFFLOAD_BUNDLE__\x01";
  EXPECT_THROW(amdgpu_resource_usage(truncated_bundle), std::runtime_error);
}

TEST(BuildKernel, ResourceUsageComesBackFromTheCompilerAndFromTheCache) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const auto dir = std::filesystem::temp_directory_path() / ("amax-build-kernel-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto compiler = make_compiler(Vendor::nvidia);
  const BinaryCache cache(dir);
  const KernelConfig c{Strategy::one_pass, 256, 8, 4, BlockCap::per_cu(8)};
  const auto arch = ArchInfo::parse("sm_90");
  const KernelBinary first = build_kernel(*compiler, cache, arch, c, DType::bf16);
  EXPECT_FALSE(first.from_cache);
  EXPECT_GT(first.usage.registers, 0);
  EXPECT_EQ(first.usage.spill_stores, 0);
  const KernelBinary again = build_kernel(*compiler, cache, arch, c, DType::bf16);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.usage.registers, first.usage.registers);
  EXPECT_EQ(again.usage.stack_bytes, first.usage.stack_bytes);
  EXPECT_EQ(again.binary, first.binary);
  std::filesystem::remove_all(dir);
}

TEST(CodeObject, ResourceProblemFollowsTheArchsRegisterFileWaveSlotsAndLds) {
  const auto gfx942 = ArchInfo::parse("gfx942:sramecc+:xnack-");
  ResourceUsage u;
  u.registers = 64, u.agprs = 0, u.sgprs = 30, u.spill_stores = u.spill_loads = 0, u.stack_bytes = 0;
  u.shared_bytes = 68, u.wave_size = 64, u.max_block = 1024;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 1024), std::nullopt);
  // 1024 threads = 16 waves = 4 per SIMD: 512 / 4 = 128 VGPRs is the most that fits.
  u.registers = 128;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 1024), std::nullopt);
  u.registers = 129;  // rounds up to 136: 512 / 136 = 3 waves per SIMD
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 1024).value_or(""),
            "a block of 1024 threads needs 4 waves per SIMD but 136 VGPRs allow 3 on gfx942");
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 512), std::nullopt) << "2 waves per SIMD fit";
  // AGPRs share the file on gfx942: 100 VGPRs (-> 100) + 40 AGPRs = 140 -> 144.
  u.registers = 100, u.agprs = 40;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 1024).value_or(""),
            "a block of 1024 threads needs 4 waves per SIMD but 144 VGPRs allow 3 on gfx942");
  u.registers = 64, u.agprs = 0;
  u.spill_stores = u.spill_loads = 4;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 256).value_or(""), "spills 4 registers");
  u.spill_stores = u.spill_loads = 0, u.stack_bytes = 16;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 256).value_or(""), "uses 16 bytes of scratch per lane");
  u.stack_bytes = 0, u.wave_size = 32;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 256).value_or(""), "compiled for wave32, not the wave64 of gfx942");
  u.wave_size = 64, u.shared_bytes = 65 * 1024;
  EXPECT_EQ(amdgpu_resource_problem(u, gfx942, 256).value_or(""),
            "LDS 66560 bytes per block exceeds the 65536 bytes of a gfx942 CU");
  EXPECT_EQ(amdgpu_resource_problem(u, ArchInfo::parse("gfx950"), 256), std::nullopt) << "160 KiB LDS per CU";
}

TEST(HiprtcTargets, ProcessorsThisHiprtcDoesNotKnowAreRefusedNotAborted) {
  if (!have_compiler(Vendor::amd)) GTEST_SKIP() << "this build has no amd backend";
  const auto compiler = make_compiler(Vendor::amd);
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(compiler->version().c_str(), "hiprtc %d.%d", &major, &minor), 2) << compiler->version();
  const int v = major * 100 + minor;
  print_toolchain(*compiler, ArchInfo::parse("gfx90a"));
  EXPECT_EQ(compiler->unsupported(ArchInfo::parse("gfx90a")), std::nullopt);
  EXPECT_EQ(compiler->unsupported(ArchInfo::parse("gfx942:xnack+")).has_value(), v < 507) << compiler->version();
  EXPECT_EQ(compiler->unsupported(ArchInfo::parse("gfx950")).has_value(), v < 604) << compiler->version();
  if (v < 604) {
    // comgr would abort this process on gfx950: compile() refuses first, naming the versions.
    try {
      compiler->compile("extern \"C\" __global__ void k() {}\n", "k.hip", ArchInfo::parse("gfx950"));
      FAIL() << "compiled for gfx950 with " << compiler->version();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(compiler->version() + " cannot compile for gfx950"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("verified for it is 6.4"), std::string::npos) << e.what();
    }
  }
}

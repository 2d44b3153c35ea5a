// Real JIT compilation of generated variants: NVRTC for sm_90 and hipRTC for gfx90a, on the CPU
// machine (neither needs a GPU), with resource usage read back from each compiler's output.
#include <gtest/gtest.h>

#include "amax/code_object.hpp"
#include "amax/compiler.hpp"
#include "amax/kernel_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include "amax/render.hpp"
#include "amax/search_space.hpp"

using namespace amax;

namespace {

struct Target {
  const char* arch;
  Vendor vendor;
};
void PrintTo(const Target& t, std::ostream* os) { *os << t.arch; }

// A spread of the pruned space: for each strategy, the smallest and largest block with the
// fewest and most loads in flight.
std::vector<KernelConfig> spread(const ArchInfo& arch, DType dtype) {
  std::vector<KernelConfig> out;
  for (const auto& c : distinct_kernels(enumerate_space(arch, dtype, SpaceKind::pruned)))
    if ((c.threads == 128 || c.threads == 1024) && (c.unroll == 1 || c.unroll == 8)) out.push_back(c);
  return out;
}

std::map<std::string, ResourceUsage> usage_of(const CompiledProgram& p, Vendor v) {
  return v == Vendor::nvidia ? p.usage : amdgpu_resource_usage(p.binary);
}

class JitCompile : public ::testing::TestWithParam<Target> {};

// Skips the test where the build lacks the target's compiler or (AMD) the code-object reader.
#define SKIP_WITHOUT_COMPILER_OR_CODE_OBJECT_READER(t)                                               \
  do {                                                                                               \
    if (!have_compiler((t).vendor)) GTEST_SKIP() << "this build has no " << to_string((t).vendor) << " backend"; \
    if ((t).vendor == Vendor::amd && !can_read_amdgpu_code_objects())                                \
      GTEST_SKIP() << "built without LLVM: cannot read AMD code objects";                           \
  } while (0)

}  // namespace

TEST_P(JitCompile, SpreadOfPrunedSpaceCompilesWithResourceUsage) {
  const Target t = GetParam();
  SKIP_WITHOUT_COMPILER_OR_CODE_OBJECT_READER(t);
  const auto compiler = make_compiler(t.vendor);
  const auto arch = ArchInfo::parse(t.arch);
  int compiled = 0;
  for (const auto& d : all_dtypes()) {
    const auto configs = spread(arch, d.dtype);
    // atomic, two_stage, one_pass: 2 thread counts x 2 unrolls; self_reset: 1024 threads x 2 unrolls
    ASSERT_EQ(configs.size(), 14u);
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
      }
      ++compiled;
    }
  }
  EXPECT_EQ(compiled, 42);
  RecordProperty("compiled", compiled);
}

// The scale epilogue compiles for every strategy and dtype with both compilers, without spills,
// with its entry points named after the fused kernel label.
TEST_P(JitCompile, ScaleEpilogueCompilesForEveryStrategy) {
  const Target t = GetParam();
  SKIP_WITHOUT_COMPILER_OR_CODE_OBJECT_READER(t);
  const auto compiler = make_compiler(t.vendor);
  const auto arch = ArchInfo::parse(t.arch);
  int compiled = 0;
  for (const auto& d : all_dtypes())
    for (Strategy s : kStrategies) {
      const KernelConfig c{s, 512, 16 / d.bytes, 4, BlockCap::per_cu(8), Epilogue::scale};
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
      EXPECT_EQ(usage.count(finish_kernel_name(c, d.dtype)), s == Strategy::two_stage ? 1u : 0u) << name;
      ++compiled;
    }
  EXPECT_EQ(compiled, 12);
}

TEST_P(JitCompile, CompileErrorCarriesTheFullLog) {
  const Target t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
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

TEST_P(JitCompile, VersionNamesTheCompiler) {
  const Target t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
  const auto v = make_compiler(t.vendor)->version();
  EXPECT_EQ(v.rfind(t.vendor == Vendor::nvidia ? "nvrtc " : "hiprtc ", 0), 0u) << v;
}

TEST_P(JitCompile, RefusesTheOtherVendorsArch) {
  const Target t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
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

INSTANTIATE_TEST_SUITE_P(Targets, JitCompile,
                         ::testing::Values(Target{"sm_90", Vendor::nvidia}, Target{"gfx90a", Vendor::amd}),
                         [](const auto& info) { return std::string(info.param.vendor == Vendor::nvidia ? "nvrtc_sm_90" : "hiprtc_gfx90a"); });

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

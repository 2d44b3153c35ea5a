// The bench's kernels (templates/bench_kernels.h: streaming read, empty launch and the
// TransformerEngine contenders) compile with the real JIT compilers on the CPU machine: NVRTC for
// sm_90 (the half-precision max in PTX, TE's FP8 cast with the conversion instruction) and sm_75
// (its fp32 fallback, no FP8 cast), hipRTC for gfx90a (no FP8 cast), with every entry point the
// bench looks up present and no register spills.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "amax/code_object.hpp"
#include "amax/compiler.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/render.hpp"
#include "amax/te_contenders.hpp"

using namespace amax;

namespace {

struct Target {
  const char* arch;
  Vendor vendor;
};

void PrintTo(const Target& t, std::ostream* os) { *os << t.arch; }

class BenchKernels : public ::testing::TestWithParam<Target> {};

}  // namespace

// Each template in the reference kernels' source starts at its own line 1 (compiler messages name
// the file), the prelude before the kernels.
TEST(ReferenceKernelsSource, NamesItsTemplates) {
  for (Vendor v : {Vendor::nvidia, Vendor::amd}) {
    const std::string s = render_reference_kernels(v);
    const auto prelude = s.find(v == Vendor::nvidia ? "#line 1 \"prelude_cuda.h\"\n" : "#line 1 \"prelude_hip.h\"\n");
    const auto body = s.find("#line 1 \"bench_kernels.h\"\n");
    ASSERT_NE(prelude, std::string::npos) << to_string(v);
    ASSERT_NE(body, std::string::npos) << to_string(v);
    EXPECT_LT(prelude, body);
    EXPECT_NE(s.find("amax_stream_read", body), std::string::npos);
  }
}

TEST_P(BenchKernels, EveryEntryPointCompilesWithoutSpills) {
  const Target t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
  if (t.vendor == Vendor::amd && !can_read_amdgpu_code_objects())
    GTEST_SKIP() << "built without LLVM: cannot read AMD code objects";
  const auto compiler = make_compiler(t.vendor);
  CompiledProgram p;
  try {
    p = compiler->compile(render_reference_kernels(t.vendor), "amax_reference_kernels", ArchInfo::parse(t.arch));
  } catch (const CompileError& e) {
    FAIL() << t.arch << ": " << e.what() << "\n" << e.log();
  }
  const auto usage = t.vendor == Vendor::nvidia ? p.usage : amdgpu_resource_usage(p.binary);
  std::vector<std::string> names = bench::te_kernel_names();
  names.push_back("amax_stream_read");
  names.push_back("amax_empty");
  ASSERT_EQ(names.size(), 17u);  // 3 dtypes x 2 alignments x 2 forms + zero + final reduce + scale + 2 references
  // TE's FP8 cast: 3 dtypes x 2 formats x 3 forms, only where the FP8 conversion instruction is (sm_89+).
  const std::vector<std::string> casts = bench::te_cast_kernel_names();
  ASSERT_EQ(casts.size(), 18u);
  const bool has_cast = t.vendor == Vendor::nvidia && compute_capability(ArchInfo::parse(t.arch)) >= 89;
  for (const auto& name : casts) {
    EXPECT_EQ(usage.count(name), has_cast ? 1u : 0u) << name << " in the " << t.arch << " resource report";
    if (has_cast) names.push_back(name);
  }
  for (const auto& name : names) {
    ASSERT_TRUE(usage.count(name)) << name << " missing from the " << t.arch << " resource report";
    if (name != "amax_empty") {  // AMD gives an empty kernel no VGPR
      EXPECT_GT(usage.at(name).registers, 0) << name;
    }
    EXPECT_EQ(usage.at(name).spill_stores, 0) << name << " spills";
    EXPECT_EQ(usage.at(name).spill_loads, 0) << name << " spills";
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, BenchKernels,
                         ::testing::Values(Target{"sm_90", Vendor::nvidia}, Target{"sm_75", Vendor::nvidia},
                                           Target{"gfx90a", Vendor::amd}),
                         [](const auto& info) { return std::string(info.param.arch); });

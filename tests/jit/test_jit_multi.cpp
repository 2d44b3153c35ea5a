// Real JIT compilation of the multi-tensor family: NVRTC for sm_90 at both descriptor capacities
// (192 and 1600: 32 KB of kernel parameters) and hipRTC for gfx90a (192), every dtype, both
// combines, both epilogues, the smallest and largest block with the fewest and most loads in
// flight; registers read back, no spills.
#include <gtest/gtest.h>

#include "amax/code_object.hpp"
#include "amax/compiler.hpp"
#include "amax/multi_config.hpp"

using namespace amax;

namespace {
void compile_spread(const char* arch_name, Vendor vendor) {
  if (!have_compiler(vendor)) GTEST_SKIP() << "this build has no " << to_string(vendor) << " backend";
  if (vendor == Vendor::amd && !can_read_amdgpu_code_objects()) GTEST_SKIP() << "built without LLVM";
  const auto compiler = make_compiler(vendor);
  const ArchInfo arch = ArchInfo::parse(arch_name);
  const std::uint32_t most = arch.vendor == Vendor::nvidia ? 1024 : 512;  // the space's largest block
  int compiled = 0;
  for (const auto& d : all_dtypes())
    for (std::uint32_t k : multi_capacities(arch))
      for (auto c : enumerate_multi_space(arch, d.dtype, SpaceKind::pruned))
        for (const EpilogueInfo& ep : kEpilogues) {
        // The grid cap is not compiled in: one cap stands for all.
        if (!((c.threads == 256 && c.unroll == 2) || (c.threads == most && c.unroll == 8)) || c.chunk_kib != 64 ||
            c.max_blocks != BlockCap::per_cu(4))
          continue;
        c.epilogue = ep.value;
        CompiledProgram p;
        try {
          p = compiler->compile(render_multi_source(c, d.dtype, arch, k), c.label() + ".src", arch);
        } catch (const CompileError& e) {
          FAIL() << c.label() << " " << d.name << " k" << k << ": " << e.what();
        }
        const auto usage = vendor == Vendor::nvidia ? p.usage : amdgpu_resource_usage(p.binary);
        const std::string name = multi_kernel_name(c, d.dtype, k);
        ASSERT_TRUE(usage.count(name)) << name << " missing from the resource report";
        EXPECT_GT(usage.at(name).registers, 0) << name;
        EXPECT_EQ(usage.at(name).spill_stores, 0) << name << " spills";
        EXPECT_EQ(usage.at(name).spill_loads, 0) << name << " spills";
        ++compiled;
      }
  // 3 dtypes x capacities x 2 (threads, unroll) pairs x 2 combines x 2 epilogues
  EXPECT_EQ(compiled, 3 * static_cast<int>(multi_capacities(arch).size()) * 2 * 2 * 2);
}
}  // namespace

TEST(JitMulti, Sm90BothCapacitiesCompile) { compile_spread("sm_90", Vendor::nvidia); }
TEST(JitMulti, Gfx90aCompiles) { compile_spread("gfx90a", Vendor::amd); }

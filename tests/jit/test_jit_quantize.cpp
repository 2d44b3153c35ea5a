// The quantize kernels (templates/amax_quantize_kernels.h) compile for real targets without a GPU:
// NVRTC for sm_90, hipRTC for gfx942 (ROCm 5.7 prefix: test_jit_rocm57; ROCm 6.4: scripts/test-rocm6.sh)
// and gfx950 (ROCm 6.4). A spread of every kind (smallest and largest blocks, fewest and most loads
// in flight and kept vectors) for every dtype in the target's first FP8 format and for bf16 in its
// second, each kernel present in the compiler's report with registers and without spills.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

#include "amax/code_object.hpp"
#include "amax/compiler.hpp"
#include "target_name.hpp"
#include "amax/quantize_config.hpp"

using namespace amax;

namespace {

struct QuantTarget {
  const char* arch;
  Vendor vendor;
  Fp8Format formats[2];  // the formats the target's hardware and frameworks use
};
void PrintTo(const QuantTarget& t, std::ostream* os) { *os << t.arch; }

// bf16: every kind x threads {256, 1024} x unroll {1, 4} x keep {1, 16} (keep kind; 0 otherwise),
// 16-byte vectors but for one 1-element-vector kernel (256 threads, unroll 1) per kind; fp32 and
// fp16: the smallest (256 threads, unroll 1) and largest (1024, unroll 4) of each. Those that
// validate() accepts (1024 threads cannot keep 16 vectors in their registers).
std::vector<QuantizeConfig> spread(const ArchInfo& arch, DType dtype) {
  std::vector<QuantizeConfig> out;
  const std::uint32_t full_vec = 16 / info(dtype).bytes;
  for (const auto& k : kQuantizeKinds)
    for (std::uint32_t threads : {256u, 1024u})
      for (std::uint32_t unroll : {1u, 4u})
        for (std::uint32_t keep : k.value == QuantizeKind::keep ? std::vector<std::uint32_t>{1, 16}
                                                                 : std::vector<std::uint32_t>{0}) {
          const bool smallest = threads == 256 && unroll == 1, largest = threads == 1024 && unroll == 4;
          if (dtype != DType::bf16 && !smallest && !largest) continue;
          const QuantizeConfig c{k.value, threads, smallest ? 1u : full_vec, unroll, keep, {}};
          if (!c.validate(arch, dtype)) out.push_back(c);
        }
  return out;
}

class JitQuantize : public ::testing::TestWithParam<QuantTarget> {};

}  // namespace

TEST_P(JitQuantize, SpreadOfEveryKindCompilesWithoutSpills) {
  const QuantTarget t = GetParam();
  if (!have_compiler(t.vendor)) GTEST_SKIP() << "this build has no " << to_string(t.vendor) << " backend";
  const auto compiler = make_compiler(t.vendor);
  const ArchInfo arch = ArchInfo::parse(t.arch);
  if (auto why = compiler->unsupported(arch))
    GTEST_SKIP() << *why << "; gfx942 runs in test_jit_rocm57 (ROCm 5.7 prefix: scripts/fetch-rocm.sh), gfx950 in "
                 << "scripts/test-rocm6.sh";
  if (t.vendor == Vendor::amd && !can_read_amdgpu_code_objects()) GTEST_SKIP() << "built without LLVM";
  std::cout << "[ toolchain ] " << arch.name << ": " << compiler->toolchain() << std::endl;

  struct Job {
    QuantizeConfig config;
    DType dtype;
    Fp8Format format;
    std::string error;
    ResourceUsage usage;
  };
  std::vector<Job> jobs;
  for (const auto& d : all_dtypes())
    for (const QuantizeConfig& c : spread(arch, d.dtype)) {
      jobs.push_back({c, d.dtype, t.formats[0], {}, {}});
      if (d.dtype == DType::bf16) jobs.push_back({c, d.dtype, t.formats[1], {}, {}});
    }
  // Each kind has at least its smallest and largest kernel for every dtype, in both formats for bf16.
  for (const auto& k : kQuantizeKinds)
    ASSERT_GE(std::count_if(jobs.begin(), jobs.end(), [&](const Job& j) { return j.config.kind == k.value; }), 8)
        << k.name;

  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      Job& j = jobs[i];
      const std::string name = quantize_kernel_name(j.config, j.dtype, j.format);
      try {
        const CompiledProgram p = compiler->compile(render_quantize_source(j.config, j.dtype, j.format, arch),
                                                    name + ".src", arch);
        const auto usage = t.vendor == Vendor::nvidia ? p.usage : amdgpu_resource_usage(p.binary);
        const auto u = usage.find(name);
        if (u == usage.end()) throw std::runtime_error(name + " missing from the compiler's resource report");
        j.usage = u->second;
      } catch (const CompileError& e) {
        j.error = std::string(e.what()) + "\n" + e.log().substr(0, 4000);
      } catch (const std::exception& e) {
        j.error = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i) pool.emplace_back(work);
  for (auto& th : pool) th.join();

  int max_registers = 0;
  for (const Job& j : jobs) {
    const std::string what = j.config.label() + " " + std::string(to_string(j.dtype)) + " -> " +
                             std::string(info(j.format).name);
    ASSERT_TRUE(j.error.empty()) << what << ": " << j.error;
    EXPECT_GT(j.usage.registers, 0) << what;
    EXPECT_FALSE(j.usage.spills()) << what << " spills (" << j.usage.spill_stores << " bytes / registers)";
    if (t.vendor == Vendor::amd) {
      EXPECT_EQ(j.usage.wave_size, 64) << what;
      EXPECT_EQ(j.usage.max_block, static_cast<int>(j.config.threads)) << what << ": launch bound";
      EXPECT_EQ(j.usage.stack_bytes, 0) << what << " uses scratch";
    }
    max_registers = std::max(max_registers, j.usage.registers);
  }
  std::cout << arch.name << ": " << jobs.size() << " quantize kernels compiled, at most " << max_registers
            << " registers per thread, no spills" << std::endl;
}

INSTANTIATE_TEST_SUITE_P(Targets, JitQuantize,
                         ::testing::Values(QuantTarget{"sm_90", Vendor::nvidia, {Fp8Format::e4m3, Fp8Format::e5m2}},
                                           QuantTarget{"gfx942:sramecc+:xnack-", Vendor::amd,
                                                       {Fp8Format::e4m3fnuz, Fp8Format::e5m2fnuz}},
                                           QuantTarget{"gfx950", Vendor::amd, {Fp8Format::e4m3, Fp8Format::e5m2}}),
                         [](const auto& info) { return test::jit_target_name(info.param.arch, info.param.vendor); });

// The memory-model audit (tests/runtime/check_memory_model.py) on kernels compiled here with hipRTC for
// gfx942 and gfx950: the AMD prelude as shipped passes, and a prelude weakened where a release or an
// acquire is needed (one of its agent-scope atomics made relaxed) fails, naming the missing sequence.
// Runs where this process's hipRTC knows the target (ROCm 5.7 through test_jit_rocm57: gfx942; ROCm
// 6.4 in the sid root: both) and an llvm-objdump that knows it is found (the checker's rules).
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "amax/compiler.hpp"
#include "amax/render.hpp"

using namespace amax;

namespace {

const char* const kTargets[] = {"gfx942:sramecc+:xnack-", "gfx950:sramecc+:xnack-"};

struct Checked {
  int rc = -1;
  std::string output;
};

// Runs the checker on one code object (extra: more arguments); its exit status and output.
Checked run_checker(const std::filesystem::path& object, const std::string& arch, const std::string& label,
                    const std::string& extra = "") {
  const std::string cmd = "python3 '" AMAX_SOURCE_DIR "/tests/runtime/check_memory_model.py' --object '" +
                          object.string() + "' --arch '" + arch + "' --label '" + label + "' " + extra + " 2>&1";
  Checked c;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return c;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) c.output.append(buf.data(), n);
  const int st = pclose(p);
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

// `src` with the one occurrence of `from` inside the prelude's function `fn` replaced by `to`.
std::string weaken(const std::string& src, const std::string& fn, const std::string& from, const std::string& to) {
  const auto at = src.find("AMAX_DEVICE " + fn);
  if (at == std::string::npos) throw std::runtime_error(fn + " not found in the rendered source");
  const auto end = src.find("\n}", at);
  const auto pos = src.find(from, at);
  if (pos == std::string::npos || pos > end) throw std::runtime_error(from + " not found in " + fn);
  return src.substr(0, pos) + to + src.substr(pos + from.size());
}

struct Case {
  const char* label;      // the kernel (fp32)
  const char* fn;         // the prelude function weakened ("" for the prelude as shipped)
  const char* from;
  const char* expect[2];  // the phrases the checker's failures must contain ("" : none)
};

const Case kCases[] = {
    {"one_pass.t512.v4.u2.b8cu", "", "", {"", ""}},
    {"first_reset.t512.v4.u2.b8cu", "", "", {"", ""}},
    {"one_pass.t512.v4.u2.b8cu", "unsigned amax_arrive", "__ATOMIC_ACQ_REL",
     {"without buffer_wbl2 sc1 after it", "not after a completed acquire on every path"}},
    {"self_reset.t512.v4.u2.b8cu", "unsigned amax_arrive", "__ATOMIC_ACQ_REL",
     {"without buffer_wbl2 sc1 after it", "not after a completed acquire on every path"}},
    {"first_reset.t512.v4.u2.b8cu", "void amax_store_release", "__ATOMIC_RELEASE",
     {"without buffer_wbl2 sc1 after it", ""}},
    {"first_reset.t512.v4.u2.b8cu", "unsigned amax_load_acquire", "__ATOMIC_ACQUIRE",
     {"not after a completed acquire on every path", ""}},
};

}  // namespace

TEST(MemoryModelAudit, PreludePassesAndEachWeakenedAtomicFails) {
  if (!have_compiler(Vendor::amd)) GTEST_SKIP() << "this build has no AMD backend";
  const auto compiler = make_compiler(Vendor::amd);
  const auto dir = std::filesystem::temp_directory_path() / ("amax-memory-audit-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  int checked = 0;
  std::string skipped;
  for (const char* target : kTargets) {
    const auto arch = ArchInfo::parse(target);
    if (auto why = compiler->unsupported(arch)) {
      skipped += std::string(target) + ": " + *why + "; ";
      continue;
    }
    for (const Case& c : kCases) {
      const auto config = KernelConfig::parse(c.label);
      std::string src = render_source(config, DType::fp32, Vendor::amd);
      const bool weakened = *c.fn != 0;
      if (weakened) src = weaken(src, c.fn, c.from, "__ATOMIC_RELAXED");
      const auto object = dir / (std::string(c.label) + (weakened ? ".weak" : "") + ".co");
      {
        const CompiledProgram p = compiler->compile(src, std::string(c.label) + ".hip", arch);
        std::ofstream(object, std::ios::binary).write(p.binary.data(), static_cast<std::streamsize>(p.binary.size()));
      }
      const Checked r = run_checker(object, arch.name, c.label, weakened ? "--show" : "");
      const std::string what = std::string(target) + " " + c.label + (weakened ? std::string(" with ") + c.fn +
                               " relaxed" : " as shipped") + ":\n" + r.output;
      if (r.rc == 77) {
        skipped += std::string(target) + ": " + r.output;
        break;
      }
      if (weakened) {
        EXPECT_EQ(r.rc, 1) << what;
        for (const char* e : c.expect)
          EXPECT_NE(r.output.find(e), std::string::npos) << "expected '" << e << "' in " << what;
      } else {
        EXPECT_EQ(r.rc, 0) << what;
      }
      if (weakened) std::cout << "[ control ] " << target << " " << c.label << ", " << c.fn << " relaxed:\n" << r.output;
      ++checked;
    }
  }
  std::filesystem::remove_all(dir);
  if (checked == 0) GTEST_SKIP() << skipped;
  std::cout << "[ control ] " << checked << " code objects audited; " << compiler->toolchain()
            << (skipped.empty() ? "" : "; not here: " + skipped) << std::endl;
}

// ROCm TransformerEngine's two-stage amax pattern (te_two_stage_amax.hip, which names the file and
// commit it imitates) compiled here for gfx942: the checker finds no cross-block step inside either
// kernel (no counted arrival) and lists the memory operations each compiled to, for docs/amd.md:
// the block maximum is a plain global_store_dword and the finish reads it with plain
// global_load_dword, no cache-policy bits and no buffer_wbl2 / buffer_inv, as two_stage's stage one.
TEST(MemoryModelAudit, TransformerEngineTwoStagePatternHasNoInKernelSynchronisation) {
  if (!have_compiler(Vendor::amd)) GTEST_SKIP() << "this build has no AMD backend";
  const auto compiler = make_compiler(Vendor::amd);
  const auto arch = ArchInfo::parse("gfx942:sramecc+:xnack-");
  if (auto why = compiler->unsupported(arch)) GTEST_SKIP() << *why;
  std::ifstream f(AMAX_SOURCE_DIR "/tests/jit/te_two_stage_amax.hip");
  ASSERT_TRUE(f) << "cannot read te_two_stage_amax.hip";
  const std::string src((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto object =
      std::filesystem::temp_directory_path() / ("amax-te-two-stage-" + std::to_string(getpid()) + ".co");
  {
    const CompiledProgram p = compiler->compile(src, "te_two_stage_amax.hip", arch);
    std::ofstream(object, std::ios::binary).write(p.binary.data(), static_cast<std::streamsize>(p.binary.size()));
  }
  const Checked r = run_checker(object, arch.name, "two_stage", "--show");
  std::filesystem::remove(object);
  if (r.rc == 77) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.rc, 0) << r.output;
  std::cout << r.output;
  for (const char* k : {"te_amax_stage_one: no cross-block step", "te_amax_final_reduce: no cross-block step"})
    EXPECT_NE(r.output.find(k), std::string::npos) << k << " in\n" << r.output;
  EXPECT_EQ(r.output.find("buffer_wbl2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("buffer_inv"), std::string::npos) << r.output;
}

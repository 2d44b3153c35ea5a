// Refused bundle entries on the GPU (label `gpu`), with NVRTC reachable: a copy of the build's
// release bundle with one entry damaged (truncated, one byte flipped, file missing, other
// kernel templates recorded, code object writable by other users) gives exactly one warning
// naming the problem, and the kernel is JIT-compiled instead and computes bit-exact; through the
// public API, amax_explain then says "code object: JIT".
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "../tuning_db/test_util.hpp"
#include "amax/amax_tune.hpp"
#include "amax/bundle.hpp"
#include "amax/dispatch.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

enum class Damage { truncated, flipped, missing, other_templates, writable_by_others };
const char* to_string(Damage d) {
  switch (d) {
    case Damage::truncated: return "truncated";
    case Damage::flipped: return "one byte flipped";
    case Damage::missing: return "file missing";
    case Damage::other_templates: return "other template hash";
    case Damage::writable_by_others: return "writable by others";
  }
  return "?";
}
// What the one warning must say for each kind of damage.
const char* expected_reason(Damage d) {
  switch (d) {
    case Damage::truncated: return "(truncated or replaced)";
    case Damage::flipped: return "(modified)";
    case Damage::missing: return "is missing";
    case Damage::other_templates: return "was compiled from other kernel templates";
    case Damage::writable_by_others: return "can be written by every user";
  }
  return "?";
}

// A copy of the release bundle in a fresh directory with the entry of (config, dtype) damaged.
fs::path damaged_copy(const KernelConfig& config, DType dtype, const ArchInfo& arch, Damage how) {
  const fs::path dir = fs::temp_directory_path() /
                       ("amax-bundle-damaged-" + std::to_string(::getpid()) + "-" + std::to_string(int(how)));
  fs::remove_all(dir);
  fs::copy(AMAX_TEST_BUNDLE, dir, fs::copy_options::recursive);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  std::string warning;
  const auto b = Bundle::open(dir, &warning);
  EXPECT_TRUE(b) << warning;
  const BundleEntry* e = b ? b->find(config, dtype, arch) : nullptr;
  EXPECT_NE(e, nullptr) << config.label() << " is not in the release bundle";
  if (!e) return dir;
  const fs::path file = dir / e->file;
  const std::string bytes = slurp(file);
  switch (how) {
    case Damage::truncated: spit(file, bytes.substr(0, bytes.size() - 1)); break;
    case Damage::flipped: {
      std::string f = bytes;
      f[f.size() / 2] ^= 0x10;
      spit(file, f);
      break;
    }
    case Damage::missing: fs::remove(file); break;
    case Damage::other_templates: {
      auto j = nlohmann::json::parse(slurp(dir / "index.json"));
      for (auto& x : j["entries"])
        if (x["kernel"] == e->kernel && x["arch"] == e->arch) x["template_hash"] = "0000000000000000";
      spit(dir / "index.json", j.dump());
      break;
    }
    case Damage::writable_by_others: fs::permissions(file, fs::perms::others_write, fs::perm_options::add); break;
  }
  return dir;
}

constexpr Damage kDamages[] = {Damage::truncated, Damage::flipped, Damage::missing, Damage::other_templates,
                               Damage::writable_by_others};
constexpr const char* kRefused = "it is not used and is JIT-compiled instead";

}  // namespace

TEST(GpuBundleJit, RefusedEntryGivesOneWarningAndJitTakesOver) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(env->compiler->available()) << env->compiler->unavailable_reason();
  Backend& b = *env->backend;
  const std::uint64_t n = 1u << 20;
  const KernelConfig c = builtin_default(env->arch, DType::bf16, n);
  const auto host = make_input(InputKind::random, DType::bf16, n, 11);
  const std::uint32_t expect = reference_amax_bits(host.data(), DType::bf16, n, NanMode::propagate);
  const LaunchShape shape = launch_shape(c, n, static_cast<std::uint32_t>(b.device().cu_count));
  DeviceBuffer in(b, host.size()), out(b, 4), ws(b, shape.workspace_bytes + 4), slot(b, 4 * kSlotWords);
  b.copy_to_device(in.get(), host.data(), host.size());
  b.memset32_async(slot.get(), 0, kSlotWords, nullptr);
  for (const Damage how : kDamages) {
    SCOPED_TRACE(to_string(how));
    const fs::path dir = damaged_copy(c, DType::bf16, env->arch, how);
    std::string warning;
    std::shared_ptr<const Bundle> bundle = Bundle::open(dir, &warning);
    ASSERT_TRUE(bundle) << warning;
    const fs::path cache = dir.string() + ".cache";
    fs::remove_all(cache);
    const std::uint64_t compiles = jit_compile_count();
    db::test::LogCapture log;
    KernelCache kernels(b, env->compiler, BinaryCache(cache), bundle);
    EXPECT_EQ(kernels.get_bundled(c, DType::bf16), nullptr);
    const LoadedKernel& k = kernels.get(c, DType::bf16);
    EXPECT_EQ(&kernels.get(c, DType::bf16), &k);
    EXPECT_EQ(k.origin, KernelOrigin::jit);
    EXPECT_EQ(jit_compile_count(), compiles + 1);
    EXPECT_EQ(log.count(kRefused), 1) << log.text();
    EXPECT_NE(log.text().find(expected_reason(how)), std::string::npos) << log.text();
    launch_amax(b, k, shape, in.get(), n, out.get<float>(), ws.get(), slot.get<std::uint32_t>(), NanMode::propagate, nullptr);
    b.synchronize(nullptr);
    EXPECT_EQ(read_bits(b, out.get()), expect);
    fs::remove_all(cache);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir);
  }
}

// The public API over a bundle with one entry modified: the computation is right, and explain says
// the code object was JIT-compiled.
TEST(GpuBundleJit, PublicApiOverAModifiedEntryComputesRightWithJit) {
  AMAX_REQUIRE_GPU();
  ASSERT_TRUE(env->compiler->available()) << env->compiler->unavailable_reason();
  Backend& b = *env->backend;
  const std::uint64_t n = 1u << 20;
  const KernelConfig c = builtin_default(env->arch, DType::fp32, n);
  const fs::path dir = damaged_copy(c, DType::fp32, env->arch, Damage::flipped);
  ::setenv("AMAX_TUNE_BUNDLE", dir.c_str(), 1);
  amax_tune::Options o;
  o.user_db_path = "";
  o.system_db_path = "";  // the built-in default serves
  amax_tune::Context ctx(o);
  ::unsetenv("AMAX_TUNE_BUNDLE");
  const auto host = make_input(InputKind::random, DType::fp32, n, 5);
  DeviceBuffer in(b, host.size()), out(b, 4), ws(b, ctx.workspace_size(AMAX_DTYPE_FP32, n));
  b.copy_to_device(in.get(), host.data(), host.size());
  ctx.compute(in.get(), AMAX_DTYPE_FP32, n, out.get<float>(), ws.get(), ws.bytes(), nullptr);
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::fp32, n, NanMode::propagate));
  const amax_explanation_t e = ctx.explain(AMAX_DTYPE_FP32, n);
  EXPECT_EQ(std::string(e.label), c.label());
  EXPECT_EQ(std::string(e.detail).rfind("code object: JIT (", 0), 0u) << e.detail;
  fs::remove_all(dir);
}

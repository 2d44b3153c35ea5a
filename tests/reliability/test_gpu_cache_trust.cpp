// Issue 17 on a GPU (label gpu; skipped without a GPU, or when not run as root, which is needed to
// run the attacker as another user): the attack of the issue as a test. Another user (a forked
// child dropped to uid/gid 65534) makes a shared cache directory like /tmp/shared/kernels and
// plants a valid entry there: the victim's cache key, a kernel with the same name and signature
// that writes 42.0f, framed with a valid checksum by BinaryCache itself. The victim (this process)
// creates a context with kernel_cache_dir pointing there and computes amax of a tensor whose amax
// is 0.75: the result must be bit-exact 0.75, with the one warning, and the planted entry is left
// as it was. The positive control: the very same entry in a directory the victim owns IS loaded
// (amax = 42), so the test would see the attack succeed.
#include <fcntl.h>
#include <stdlib.h>

#include <cstring>
#include <random>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/binary_cache.hpp"
#include "amax/dispatch.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference.hpp"
#include "amax/render.hpp"
#include "amax/trust.hpp"
#include "gpu_env.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

using amax::test::DeviceBuffer;

constexpr std::uint32_t kBits075 = 0x3f400000u;  // 0.75f
constexpr std::uint32_t kBits42 = 0x42280000u;   // 42.0f

class GpuCacheTrustTest : public TempDirTest {};

/// amax of `host` (fp32) through a fresh context whose kernel cache is `cache_dir`; the bits.
std::uint32_t amax_bits(amax::test::GpuEnv& env, const fs::path& cache_dir, const std::vector<float>& host,
                        std::string* label) {
  amax_tune::Options o;
  o.user_db_path = "";
  o.system_db_path = "";
  o.kernel_cache_dir = cache_dir.string();
  amax_tune::Context ctx(o);
  Backend& b = *env.backend;
  DeviceBuffer in(b, host.size() * 4), out(b, 4), ws(b, 1 << 20);
  b.copy_to_device(in.get(), host.data(), host.size() * 4);
  b.memset32_async(out.get(), 0x7fc00000u, 1, nullptr);
  const std::size_t need = ctx.workspace_size(AMAX_DTYPE_FP32, host.size());
  EXPECT_LE(need, ws.bytes());
  ctx.compute(in.get(), AMAX_DTYPE_FP32, host.size(), out.get<float>(), ws.get(), need, nullptr);
  b.synchronize(nullptr);
  std::uint32_t bits = 0;
  b.copy_to_host(&bits, out.get(), 4);
  *label = ctx.explain(AMAX_DTYPE_FP32, host.size()).label;
  return bits;
}

TEST_F(GpuCacheTrustTest, KernelPlantedInASharedCacheByAnotherUserNeverRuns) {
  AMAX_REQUIRE_GPU();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the attacker as uid 65534 (the H200 and CI run as root)";
  for (const char* v : {"AMAX_TUNE_FORCE_LABEL", "AMAX_TUNE_FORCE_STRATEGY", "NVTE_USE_ATOMIC_AMAX"}) ::unsetenv(v);

  // What the victim's context runs for fp32 n = 4096 with no databases: the built-in default.
  constexpr std::uint64_t n = 4096;
  KernelConfig cfg = builtin_default(env->arch, DType::fp32, n);
  cfg.max_blocks = BlockCap::uncapped();  // not compiled in (build_kernel does the same)
  const std::string name = kernel_name(cfg, DType::fp32);
  const BinaryKey key = binary_key(*env->compiler, env->arch, render_source(cfg, DType::fp32, env->arch.vendor));

  // The attacker's kernel: same name and signature as the generated one, writes 42.0f.
  const std::string evil = fmt::format(
      "extern \"C\" __global__ void {}(const void* in, unsigned long long n, float* out, unsigned* workspace,\n"
      "                               unsigned* counter, unsigned flags) {{\n"
      "  if (blockIdx.x == 0 && threadIdx.x == 0) *out = 42.0f;\n"
      "}}\n",
      name);
  const CompiledProgram p = env->compiler->compile(
      evil, name + (env->arch.vendor == Vendor::nvidia ? ".cu" : ".hip"), env->arch);
  ASSERT_FALSE(p.binary.empty());
  // Framed exactly as BinaryCache writes entries (magic, key, log, binary, checksum): by
  // BinaryCache itself, into a scratch directory, then taken as bytes.
  const fs::path scratch = file("scratch");
  ASSERT_TRUE(BinaryCache(scratch).store(key, CachedBinary{p.binary, p.log}));
  const std::string planted = read_bytes(BinaryCache(scratch).path_of(key));
  ASSERT_TRUE(BinaryCache(scratch).load(key).has_value());

  // Another user makes the shared cache in a /tmp-like directory and plants the entry.
  const fs::path tmp = file("tmp");
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 01777), 0);
  const fs::path shared_parent = tmp / "shared", shared = shared_parent / "kernels";
  const fs::path entry = BinaryCache(shared).path_of(key);
  const std::string parent_s = shared_parent.string(), shared_s = shared.string(), entry_s = entry.string();
  const int rc = run_in_child([&]() -> int {  // system calls only: this process has GPU threads
    if (!drop_privileges(65534, 65534)) return 10;
    if (::mkdir(parent_s.c_str(), 0777) != 0 || ::chmod(parent_s.c_str(), 0777) != 0) return 11;
    if (::mkdir(shared_s.c_str(), 0777) != 0 || ::chmod(shared_s.c_str(), 01777) != 0) return 12;
    const int fd = ::open(entry_s.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 13;
    const bool ok = ::write(fd, planted.data(), planted.size()) == static_cast<ssize_t>(planted.size());
    ::close(fd);
    return ok ? 0 : 14;
  });
  ASSERT_EQ(rc, 0) << "the attacker could not plant the entry";
  struct stat st {};
  ASSERT_EQ(::stat(entry.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, 65534u);
  ASSERT_EQ(read_bytes(entry), planted);

  // A tensor whose amax is 0.75.
  std::mt19937 g(17);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> host(n);
  for (float& x : host) x = u(g);
  host[1234] = -0.75f;
  ASSERT_EQ(reference_amax_bits(host.data(), DType::fp32, n, NanMode::propagate), kBits075);

  // The victim, pointed at the shared cache: bit-exact 0.75, one warning, the entry untouched.
  {
    LogCapture log;
    std::string label;
    EXPECT_EQ(amax_bits(*env, shared, host, &label), kBits075) << "the planted kernel ran";
    EXPECT_EQ(label, cfg.label()) << "the test plants the wrong kernel";
    EXPECT_EQ(log.count("warning: kernel cache " + shared.string() + " is not trusted: directory " +
                        shared.string() + " (owner uid 65534"),
              1)
        << log.text();
    EXPECT_EQ(read_bytes(entry), planted) << "the planted entry was changed";
    EXPECT_EQ(listing(shared), std::vector<std::string>{entry.filename().string()}) << "the victim wrote there";
  }

  // Positive control: the same bytes in a directory the victim owns are loaded and run (42), so
  // a victim that trusted the shared cache would have been caught above.
  const fs::path mine = file("mine/kernels");
  std::error_code ec;
  ASSERT_TRUE(trust::create_private_directories(mine, ec)) << ec.message();
  const fs::path mine_entry = BinaryCache(mine).path_of(key);
  write_bytes(mine_entry, planted);
  ASSERT_EQ(::chmod(mine_entry.c_str(), 0600), 0);
  {
    LogCapture log;
    std::string label;
    EXPECT_EQ(amax_bits(*env, mine, host, &label), kBits42)
        << "the planted entry is not loaded even from a trusted directory: the test above proves nothing";
    EXPECT_EQ(log.count("warning: "), 0) << log.text();
  }
  // And a cache the victim fills itself gives 0.75 again once the planted entry is gone.
  ASSERT_EQ(::unlink(mine_entry.c_str()), 0);
  {
    std::string label;
    EXPECT_EQ(amax_bits(*env, mine, host, &label), kBits075);
    EXPECT_TRUE(fs::exists(mine_entry)) << "the victim's own cache was not written";
  }
  summary("GPU: another user (uid 65534) planted a valid cache entry (the victim's key, kernel %s writing 42.0, "
          "checksummed by BinaryCache) in a shared 1777 cache below a 0777 directory: the victim refused it with one "
          "warning, computed amax = 0.75 bit-exact and left the entry unchanged; the same entry in the victim's own "
          "directory gave 42 (positive control)",
          name.c_str());
}

}  // namespace
}  // namespace amax::reliability::test

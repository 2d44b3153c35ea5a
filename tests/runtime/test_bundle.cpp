// Release bundles of compiled kernels on the CPU: written with real NVRTC / hipRTC code objects,
// read back with every hash verified, and damaged (truncated, one byte flipped), stale (template
// hash, arch) or other-user-writable bundles refused with a reason naming the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <span>
#include <stdexcept>
#include <utility>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "amax/backend.hpp"
#include "amax/bundle.hpp"
#include "amax/compiler.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/multi_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "unused_backend.hpp"

using namespace amax;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("amax-bundle-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  fs::permissions(d, fs::perms::owner_all);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

struct Written {
  fs::path dir;
  KernelConfig config;
  std::vector<char> binary;
};

// A bundle with the two built-in defaults of bf16 for sm_90, compiled by NVRTC.
Written write_sm90(const std::string& tag) {
  Written w;
  w.dir = fresh_dir(tag) / "kernels.bundle";
  const auto arch = ArchInfo::parse("sm_90");
  const auto compiler = make_compiler(Vendor::nvidia);
  BundleWriter out(w.dir);
  const BinaryCache none{fs::path{}};
  for (std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{1} << 30}) {
    const KernelConfig c = builtin_default(arch, DType::bf16, n);
    const KernelBinary b = build_kernel(*compiler, none, arch, c, DType::bf16);
    out.add(c, DType::bf16, arch, compiler->version(), b.binary);
    if (n == 1000) {
      w.config = c;
      w.binary = b.binary;
    }
  }
  out.finish(std::string(generator_version()));
  return w;
}

}  // namespace

TEST(Bundle, Sha256OfKnownText) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Bundle, RoundTripsWithHashesVerified) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const Written w = write_sm90("roundtrip");
  std::string warning;
  const auto b = Bundle::open(w.dir, &warning);
  ASSERT_TRUE(b) << warning;
  EXPECT_EQ(warning, "");
  ASSERT_EQ(b->entries().size(), 2u);
  const auto arch = ArchInfo::parse("sm_90");
  const BundleEntry* e = b->find(w.config, DType::bf16, arch);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kernel, kernel_name(w.config, DType::bf16));
  EXPECT_EQ(e->label, w.config.kernel_label());
  EXPECT_EQ(e->dtype, "bf16");
  EXPECT_EQ(e->arch, "sm_90");
  EXPECT_EQ(e->template_hash, template_hash());
  EXPECT_EQ(e->compiler, make_compiler(Vendor::nvidia)->version());
  EXPECT_EQ(e->size, w.binary.size());
  EXPECT_EQ(e->sha256, sha256_hex(std::string_view(w.binary.data(), w.binary.size())));
  EXPECT_EQ(e->file, e->sha256 + ".bin");
  std::string why;
  const auto bytes = b->read(*e, arch, &why);
  ASSERT_TRUE(bytes) << why;
  EXPECT_EQ(*bytes, w.binary);
  EXPECT_EQ(b->compiler_for(arch), e->compiler);
  EXPECT_EQ(b->compiler_for(ArchInfo::parse("sm_80")), "");
  EXPECT_EQ(b->find(w.config, DType::fp32, arch), nullptr);
  EXPECT_EQ(b->find(w.config, DType::bf16, ArchInfo::parse("sm_80")), nullptr);
}

TEST(Bundle, TruncatedOrFlippedCodeObjectIsRefused) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const Written w = write_sm90("damaged");
  const auto arch = ArchInfo::parse("sm_90");
  std::string warning, why;
  auto b = Bundle::open(w.dir, &warning);
  ASSERT_TRUE(b) << warning;
  const BundleEntry e = *b->find(w.config, DType::bf16, arch);
  const std::string good = slurp(w.dir / e.file);
  spit(w.dir / e.file, good.substr(0, good.size() / 2));
  EXPECT_FALSE(b->read(e, arch, &why));
  EXPECT_NE(why.find("has " + std::to_string(good.size() / 2) + " bytes, the index says " + std::to_string(good.size()) +
                     " (truncated or replaced)"),
            std::string::npos)
      << why;
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 1;
  spit(w.dir / e.file, flipped);
  EXPECT_FALSE(b->read(e, arch, &why));
  EXPECT_NE(why.find("has SHA-256 " + sha256_hex(flipped) + ", the index says " + e.sha256 + " (modified)"),
            std::string::npos)
      << why;
  fs::remove(w.dir / e.file);
  EXPECT_FALSE(b->read(e, arch, &why));
  EXPECT_NE(why.find("its file " + e.file + " is missing"), std::string::npos) << why;
  spit(w.dir / e.file, good);
  EXPECT_TRUE(b->read(e, arch, &why)) << why;
}

TEST(Bundle, StaleTemplateHashOrOtherArchIsRefused) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const Written w = write_sm90("stale");
  std::string warning, why;
  auto j = nlohmann::json::parse(slurp(w.dir / "index.json"));
  j["entries"][0]["template_hash"] = "0123456789abcdef";
  j["entries"][1]["arch"] = "sm_80";
  spit(w.dir / "index.json", j.dump());
  auto b = Bundle::open(w.dir, &warning);
  ASSERT_TRUE(b) << warning;
  const BundleEntry& stale = b->entries()[0];
  EXPECT_FALSE(b->read(stale, ArchInfo::parse("sm_90"), &why));
  EXPECT_NE(why.find("was compiled from other kernel templates (template hash 0123456789abcdef, this build's " +
                     template_hash() + ")"),
            std::string::npos)
      << why;
  // An entry asked for by another arch than it records is refused, never loaded on the wrong GPU.
  EXPECT_FALSE(b->read(b->entries()[1], ArchInfo::parse("sm_90"), &why));
  EXPECT_NE(why.find("was compiled for sm_80, not for this device's sm_90"), std::string::npos) << why;
}

TEST(Bundle, DamagedIndexIsRefusedWithAWarning) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const Written w = write_sm90("index");
  const std::string text = slurp(w.dir / "index.json");
  spit(w.dir / "index.json", text.substr(0, text.size() / 3));
  std::string warning;
  EXPECT_FALSE(Bundle::open(w.dir, &warning));
  EXPECT_NE(warning.find("kernel bundle " + w.dir.string() + " is not used (its kernels will be JIT-compiled): "
                         "index.json is damaged"),
            std::string::npos)
      << warning;
  std::string none;
  EXPECT_FALSE(Bundle::open(w.dir.parent_path() / "absent", &none));
  EXPECT_EQ(none, "");  // no bundle is not a problem
}

TEST(Bundle, WritableByOthersIsRefused) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const Written w = write_sm90("trust");
  const auto arch = ArchInfo::parse("sm_90");
  // The directory writable by others: the whole bundle is refused.
  fs::permissions(w.dir, fs::perms::others_write, fs::perm_options::add);
  std::string warning;
  EXPECT_FALSE(Bundle::open(w.dir, &warning));
  EXPECT_NE(warning.find("kernel bundle " + w.dir.string() + " is not used"), std::string::npos) << warning;
  fs::permissions(w.dir, fs::perms::others_write, fs::perm_options::remove);
  // One code object writable by others: that entry is refused, the others still load.
  auto b = Bundle::open(w.dir, &warning);
  ASSERT_TRUE(b) << warning;
  const BundleEntry& e = *b->find(w.config, DType::bf16, arch);
  fs::permissions(w.dir / e.file, fs::perms::others_write, fs::perm_options::add);
  std::string why;
  EXPECT_FALSE(b->read(e, arch, &why));
  EXPECT_NE(why.find(e.file), std::string::npos) << why;
  const BundleEntry& other = b->entries()[0].file == e.file ? b->entries()[1] : b->entries()[0];
  EXPECT_TRUE(b->read(other, arch, &why)) << why;
}

namespace {

// Stands in for a backend where no GPU is (HipBackend for an AMD `arch`, CudaBackend for an
// NVIDIA one): reports `arch` as the device's arch or target ID (what HipBackend reads from
// hipDeviceProp_t::gcnArchName) and records the code objects and entry
// points the kernel cache asks for; with `refuse`, loading fails as hipModuleLoadData does for a
// code object the runtime cannot load. The kernel cache calls nothing else.
class ModuleRecordingBackend final : public test::UnusedBackend {
 public:
  ModuleRecordingBackend(std::string arch, bool refuse)
      : UnusedBackend("the kernel cache does not launch or allocate"),
        vendor_(ArchInfo::parse(arch).vendor),
        refuse_(refuse) {
    info_.arch = std::move(arch);
    info_.name = vendor_ == Vendor::amd ? "AMD Instinct MI300X (no device: test backend)"
                                        : "NVIDIA H200 (no device: test backend)";
    info_.wave_size = vendor_ == Vendor::amd ? 64 : 32;
  }
  std::vector<std::vector<char>> loaded;
  std::vector<std::string> functions;

  Vendor vendor() const noexcept override { return vendor_; }
  std::unique_ptr<Module> load_module(std::span<const char> binary) override {
    if (refuse_) throw BackendError("hipModuleLoadData", 209, "hipModuleLoadData failed: no kernel image is available");
    loaded.emplace_back(binary.begin(), binary.end());
    return std::make_unique<Recorded>(this);
  }

 private:
  struct Recorded final : Module {
    explicit Recorded(ModuleRecordingBackend* b) : b(b) {}
    FunctionHandle function(const std::string& name) const override {
      b->functions.push_back(name);
      return reinterpret_cast<FunctionHandle>(b->functions.size());
    }
    ModuleRecordingBackend* b;
  };
  Vendor vendor_;
  bool refuse_;
};

}  // namespace

// Issue 26: the multi-tensor family in a bundle. An entry is written with its family's kernel
// name, label and template hash; find_multi finds it for its dtype, epilogue and descriptor
// capacity whatever the launch parameters (chunk, grid cap, combine); it reads back verified; the
// kernel cache loads it from the bundle (origin bundle, the code object as written, no compile);
// an index that gives it the single family's template hash has it refused, naming both hashes.
TEST(Bundle, MultiTensorEntryRoundTripsAndIsLoadedByTheKernelCache) {
  if (!have_compiler(Vendor::nvidia)) GTEST_SKIP() << "this build has no nvidia backend";
  const auto arch = ArchInfo::parse("sm_90");
  const std::shared_ptr<const JitCompiler> compiler = make_compiler(Vendor::nvidia);
  const fs::path dir = fresh_dir("multi") / "kernels.bundle";
  const MultiConfig def = builtin_multi_default(arch, DType::bf16, GroupShape{8, 1u << 24, 1u << 21});
  const MultiKernelBinary built = build_kernel(*compiler, BinaryCache{fs::path{}}, arch, def, DType::bf16, 192);
  {
    BundleWriter w(dir);
    w.add(def, DType::bf16, arch, compiler->version(), built.binary, 192);
    w.finish(std::string(generator_version()));
  }
  std::string warning;
  std::shared_ptr<const Bundle> b = Bundle::open(dir, &warning);
  ASSERT_TRUE(b) << warning;
  ASSERT_EQ(b->entries().size(), 1u);
  const BundleEntry& e = b->entries()[0];
  EXPECT_EQ(e.kernel, "amax_multi_t512_v8_u4_bf16_k192");
  EXPECT_EQ(e.label, "multi.t512.v8.u4");
  EXPECT_EQ(e.dtype, "bf16");
  EXPECT_EQ(e.arch, "sm_90");
  EXPECT_EQ(e.template_hash, multi_template_hash());
  EXPECT_EQ(bundle_template_hash(e), multi_template_hash());
  EXPECT_EQ(e.compiler, compiler->version());
  EXPECT_EQ(e.size, built.binary.size());
  EXPECT_EQ(b->find(def, DType::bf16, arch, 192), &e);
  const MultiConfig launch_params{def.threads, def.nvec, def.unroll, 256, BlockCap::uncapped(), Combine::warp};
  EXPECT_EQ(b->find(launch_params, DType::bf16, arch, 192), &e);
  EXPECT_EQ(b->find(def, DType::bf16, arch, 512), nullptr);
  EXPECT_EQ(b->find(def, DType::fp16, arch, 192), nullptr);
  const MultiConfig fused{def.threads, def.nvec, def.unroll, def.chunk_kib, def.max_blocks, def.combine, Epilogue::scale};
  EXPECT_EQ(b->find(fused, DType::bf16, arch, 192), nullptr);
  EXPECT_EQ(b->find(def, DType::bf16, ArchInfo::parse("sm_80"), 192), nullptr);
  std::string why;
  ASSERT_EQ(b->read(e, arch, &why), std::optional<std::vector<char>>(built.binary)) << why;
  {
    ModuleRecordingBackend be("sm_90", false);
    KernelCache kc(be, compiler, BinaryCache{fs::path{}}, b);
    const LoadedMultiKernel* k = kc.get_bundled(def, DType::bf16, 192);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->origin, KernelOrigin::bundle);
    EXPECT_EQ(k->capacity, 192u);
    EXPECT_EQ(&kc.get(def, DType::bf16, 192), k);  // loaded once
    ASSERT_EQ(be.loaded.size(), 1u);
    EXPECT_EQ(be.loaded[0], built.binary);
    EXPECT_EQ(be.functions, std::vector<std::string>{"amax_multi_t512_v8_u4_bf16_k192"});
    EXPECT_EQ(kc.get_bundled(def, DType::bf16, 512), nullptr);  // not bundled: the caller compiles
  }
  // The single family's template hash on a multi-tensor entry: refused, naming both.
  std::string index = slurp(dir / "index.json");
  const auto at = index.find(multi_template_hash());
  ASSERT_NE(at, std::string::npos);
  index.replace(at, multi_template_hash().size(), template_hash());
  spit(dir / "index.json", index);
  b = Bundle::open(dir, &warning);
  ASSERT_TRUE(b) << warning;
  EXPECT_FALSE(b->read(b->entries()[0], arch, &why));
  EXPECT_EQ(why, "bundled kernel amax_multi_t512_v8_u4_bf16_k192 (sm_90) in " + dir.string() +
                     " was compiled from other kernel templates (template hash " + template_hash() +
                     ", this build's " + multi_template_hash() + ")");
  ModuleRecordingBackend be("sm_90", false);
  KernelCache kc(be, compiler, BinaryCache{fs::path{}}, b);
  EXPECT_EQ(kc.get_bundled(def, DType::bf16, 192), nullptr);
  EXPECT_TRUE(be.loaded.empty());
}

#ifdef AMAX_TEST_BUNDLE
// The release bundle the build made from data/system-db.jsonl (amax-tune bundle, run by CMake):
// every arch this machine's compilers can target is in it, with every winner the system database
// ships for it and the built-in defaults; the arches no compiler here can target are reported as
// skipped with a reason.
TEST(ReleaseBundle, HoldsEveryShippedWinnerAndTheDefaultsForEachBuildableArch) {
  std::string warning;
  const auto b = Bundle::open(AMAX_TEST_BUNDLE, &warning);
  ASSERT_TRUE(b) << AMAX_TEST_BUNDLE << ": " << warning;
  const std::string report = slurp(std::string(AMAX_TEST_BUNDLE) + ".txt");
  // Every arch of AMAX_BUNDLE_ARCHES is reported (built or skipped); those this build's own
  // compilers can target are built; so is every arch the report lists as compiled or copied
  // (gfx942 with ROCm 5.7's hipRTC, gfx950 from the ROCm 6.4 root: scripts/bundle-amd.sh).
  const std::string listed = AMAX_TEST_BUNDLE_ARCHES;
  std::vector<std::string> expected;
  for (std::size_t at = 0; at <= listed.size();) {
    const std::size_t comma = std::min(listed.find(',', at), listed.size());
    const std::string a = listed.substr(at, comma - at);
    at = comma + 1;
    EXPECT_NE(report.find(a + ": "), std::string::npos) << a << " is not reported:\n" << report;
    const Vendor v = ArchInfo::parse(a).vendor;
    if (have_compiler(v) && (v == Vendor::nvidia || a == "gfx90a")) expected.push_back(a);
  }
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);)
    if (const auto colon = line.find(": "); colon != std::string::npos && line.find(" kernels ", colon) != std::string::npos &&
                                            std::isdigit(static_cast<unsigned char>(line[colon + 2])) &&
                                            std::find(expected.begin(), expected.end(), line.substr(0, colon)) == expected.end())
      expected.push_back(line.substr(0, colon));
  const auto tdb = db::TuningDb::open(AMAX_TEST_SYSTEM_DB, db::OpenMode::ReadOnly);
  for (const auto& a : expected) {
    const auto arch = ArchInfo::parse(a);
    EXPECT_NE(report.find(a + ": "), std::string::npos) << report;
    EXPECT_EQ(report.find(a + ": skipped"), std::string::npos) << report;
    // The built-in default of each dtype at both of its shapes, with every strategy the arch runs
    // (the default itself, self_reset and the others AMAX_TUNE_FORCE_STRATEGY selects, the atomic
    // fallback), and as amax_and_scale runs it (fused_variant).
    for (const auto& d : all_dtypes())
      for (std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{1} << 30}) {
        const KernelConfig fused = fused_variant(builtin_default(arch, d.dtype, n), arch, d.dtype);
        EXPECT_NE(b->find(fused, d.dtype, arch), nullptr) << a << " " << d.name << " n=" << n << " " << fused.label();
        for (const Strategy s : all_strategies()) {
          if (strategy_unsupported_reason(s, arch)) continue;  // never run there: not bundled
          KernelConfig c = builtin_default(arch, d.dtype, n);
          c.strategy = s;
          for (const auto& e : kEpilogues) {
            c.epilogue = e.value;
            if (c.validate(arch, d.dtype)) continue;  // first_reset has no scale epilogue (fused_variant maps it)
            EXPECT_NE(b->find(c, d.dtype, arch), nullptr) << a << " " << d.name << " n=" << n << " " << c.label();
          }
        }
      }
    // Every winner the system database ships for the arch that the runtime would use (fresh for
    // the bundle's compiler, this build's templates and tool version) is in it; stale ones are
    // left out and reported.
    const db::Provenance current{.compiler = b->compiler_for(arch),
                                 .template_hash = template_hash(),
                                 .tool_version = std::string(generator_version())};
    std::size_t fresh = 0, stale = 0;
    for (const auto& r : tdb.winners<SingleFamily>(db::WinnerFilter{a, std::nullopt})) {
      if (!db::stale_fields(r.provenance, current).empty()) {
        ++stale;
        continue;
      }
      // as amax_compute runs it, and as amax_and_scale does (fused_variant: an atomic winner as
      // self_reset of its threads and nvec with the epilogue)
      const KernelConfig c = KernelConfig::parse(r.winner.label);
      for (const KernelConfig& k : {c, fused_variant(c, arch, r.key.dtype)})
        EXPECT_NE(b->find(k, r.key.dtype, arch), nullptr)
            << a << " " << to_string(r.key.dtype) << " n=" << r.key.n << " " << k.label();
      ++fresh;
    }
    EXPECT_EQ(report.find(a + ": " + std::to_string(stale) + " stale database winners not bundled") != std::string::npos,
              stale > 0)
        << report;
    // The multi-tensor family (issue 26): the built-in default of each dtype and every fresh group
    // winner, each with both epilogues and at every descriptor capacity of the arch.
    db::Provenance multi_current = current;
    multi_current.template_hash = multi_template_hash();
    auto expect_multi = [&](MultiConfig c, DType d, const std::string& what) {
      if (c.validate(arch, d)) return;
      for (const auto& ep : kEpilogues)
        for (const std::uint32_t k : multi_capacities(arch)) {
          c.epilogue = ep.value;
          EXPECT_NE(b->find(c, d, arch, k), nullptr) << a << " " << what << " " << c.label() << " k" << k;
        }
    };
    for (const auto& d : all_dtypes())
      expect_multi(builtin_multi_default(arch, d.dtype, GroupShape{}), d.dtype, "default " + std::string(d.name));
    for (const auto& r : tdb.winners<MultiFamily>(db::WinnerFilter{a, std::nullopt}))
      if (db::stale_fields(r.provenance, multi_current).empty())
        expect_multi(MultiConfig::parse(r.winner.label), r.key.dtype, "group winner " + db::to_string(r.key));
    std::printf("%s: %zu fresh shipped winners bundled, %zu stale ones left out\n", a.c_str(), fresh, stale);
  }
  // Every entry reads back verified.
  for (const auto& e : b->entries()) {
    std::string why;
    EXPECT_TRUE(b->read(e, ArchInfo::parse(e.arch), &why)) << why;
  }
  std::uint64_t bytes = 0;
  for (const auto& e : b->entries()) bytes += e.size;
  std::printf("release bundle: %zu code objects, %llu bytes\n%s", b->entries().size(),
              static_cast<unsigned long long>(bytes), report.c_str());
}
#endif

#ifdef AMAX_TEST_BUNDLE

// The runtime's choice between the bundle and JIT for an MI300X (gfx942), made by the kernel
// cache from the device's target ID as the HIP backend reports it, with the build's real release
// bundle (its gfx942 entries compiled by a hipRTC that knows gfx942: ROCm 5.7's in the Debian 12
// build, the build's own on ROCm 6.x, as an MI300X owner builds) and this process's real hipRTC:
// - the MI300X default `gfx942:sramecc+:xnack-` gets the entry compiled for exactly that ID;
// - `gfx942:sramecc+:xnack+` (HSA_XNACK=1) and `gfx942:sramecc-:xnack-` get the plain `gfx942`
//   entry (xnack and sramecc "any": it loads on both);
// - a kernel the bundle lacks, and a bundled one the driver refuses, are JIT-compiled (here with a
//   hipRTC that knows gfx942: origin JIT; with ROCm 5.2's: its refusal naming gfx942).
TEST(BundleLookup, Gfx942DeviceGetsTheEntryOfItsTargetIdElseThePlainOneElseJit) {
  std::string warning;
  const std::shared_ptr<const Bundle> b = Bundle::open(AMAX_TEST_BUNDLE, &warning);
  ASSERT_TRUE(b) << warning;
  const auto mi300x = ArchInfo::parse("gfx942:sramecc+:xnack-");
  const KernelConfig def = builtin_default(mi300x, DType::bf16, std::uint64_t{1} << 20);
  ASSERT_EQ(def.strategy, Strategy::two_stage);
  const BundleEntry* exact = b->find(def, DType::bf16, mi300x);
  if (!exact || exact->arch != mi300x.name)
    GTEST_SKIP() << "the build's bundle has no gfx942:sramecc+:xnack- entries: they are compiled with the ROCm 5.7 "
                    "hipRTC (bash scripts/fetch-rocm.sh, then reconfigure); "
                 << AMAX_TEST_BUNDLE;
  const auto compiler = std::shared_ptr<const JitCompiler>(make_compiler(Vendor::amd));
  struct Case {
    const char* device;
    const char* entry_arch;
  } cases[] = {{"gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-"},
               {"gfx942:sramecc+:xnack+", "gfx942"},
               {"gfx942:sramecc-:xnack-", "gfx942"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.device);
    ModuleRecordingBackend be(c.device, false);
    KernelCache kc(be, compiler, BinaryCache{fs::path{}}, b);
    const LoadedKernel& k = kc.get(def, DType::bf16);
    EXPECT_EQ(k.origin, KernelOrigin::bundle);
    const BundleEntry* e = b->find(def, DType::bf16, ArchInfo::parse(c.device));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->arch, c.entry_arch);
    unsigned major = 0, minor = 0;
    ASSERT_EQ(std::sscanf(e->compiler.c_str(), "hiprtc %u.%u", &major, &minor), 2) << e->compiler;
    EXPECT_GE(major * 100 + minor, 507u) << e->compiler << ": gfx942 needs ROCm 5.7's hipRTC or newer";
    std::string why;
    const auto bytes = b->read(*e, ArchInfo::parse(c.device), &why);
    ASSERT_TRUE(bytes) << why;
    ASSERT_EQ(be.loaded.size(), 1u);
    EXPECT_EQ(be.loaded[0], *bytes);
    EXPECT_EQ(be.functions, (std::vector<std::string>{kernel_name(def, DType::bf16),
                                                      finish_kernel_name(def, DType::bf16)}));
    std::printf("[ lookup ] device %s: %s from the bundle entry for %s (%s)\n", c.device, def.label().c_str(),
                e->arch.c_str(), e->compiler.c_str());
  }
  // A gfx950 device is never served a gfx942 entry.
  const BundleEntry* other = b->find(def, DType::bf16, ArchInfo::parse("gfx950:sramecc+:xnack-"));
  EXPECT_TRUE(!other || ArchInfo::parse(other->arch).processor == "gfx950") << other->arch;
  // JIT: a kernel of the space the bundle lacks, and the bundled default when the driver refuses it.
  KernelConfig lacking = def;
  lacking.threads = 128;
  lacking.unroll = 1;
  ASSERT_EQ(b->find(lacking, DType::bf16, mi300x), nullptr) << lacking.label();
  for (const auto& [config, refuse] : {std::pair{lacking, false}, std::pair{def, true}}) {
    SCOPED_TRACE(config.label() + (refuse ? " (driver refuses the bundled code object)" : " (not bundled)"));
    ModuleRecordingBackend be(mi300x.name, refuse);
    KernelCache kc(be, compiler, BinaryCache{fs::path{}}, b);
    EXPECT_EQ(kc.get_bundled(config, DType::bf16), nullptr);
    if (compiler->unsupported(mi300x)) {
      // ROCm 5.2's hipRTC (the build's own): the JIT is tried and refuses gfx942 by name.
      try {
        (void)kc.get(config, DType::bf16);
        ADD_FAILURE() << "compiled for gfx942 with " << compiler->version();
      } catch (const std::invalid_argument& x) {
        EXPECT_NE(std::string(x.what()).find("cannot compile for gfx942"), std::string::npos) << x.what();
      }
    } else if (!refuse) {
      const LoadedKernel& k = kc.get(config, DType::bf16);
      EXPECT_EQ(k.origin, KernelOrigin::jit);
      EXPECT_GT(k.compile_ms, 0);
      std::printf("[ lookup ] %s not bundled: JIT-compiled for %s by %s in %.0f ms\n", config.label().c_str(),
                  mi300x.name.c_str(), compiler->version().c_str(), k.compile_ms);
      ASSERT_EQ(be.loaded.size(), 1u);
      EXPECT_EQ(std::string(be.loaded[0].data(), 4), "\x7f" "ELF");
    }
  }
}
#endif

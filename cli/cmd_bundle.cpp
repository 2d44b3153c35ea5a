// amax-tune bundle: compile a database's winners and the built-in defaults for a list of arches
// into a release bundle of code objects (amax/bundle.hpp), on a machine without those GPUs.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "amax/bundle.hpp"
#include "amax/compiler.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct BundleOptions {
  std::string db;
  std::string arch = "sm_80,sm_90,sm_100,gfx90a,gfx942,gfx950";
  std::string out;
  bool strict = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

// What a kernel bundle's rows are judged by: the compiler that compiles it, this build's
// templates and tool version (the kStale fields; the runtime skips rows that differ).
db::Provenance bundle_provenance(const JitCompiler& compiler) {
  return db::Provenance{.compiler = compiler.version(),
                        .template_hash = template_hash(),
                        .tool_version = std::string(generator_version())};
}

// The kernels to ship for `arch`: the database's valid winners for it that are fresh for
// `current` (a stale row is never dispatched to, so its kernel is not shipped: counted in
// *stale with the fields that differ in *stale_why), then the built-in defaults
// of every dtype (the small-n and the large-n shape of builtin_default) with every strategy: the
// default itself, the self_reset and other strategies AMAX_TUNE_FORCE_STRATEGY puts on the
// default's shape, and the atomic variant a failed compile falls back to (amax_context's
// fallback_for). A winner is shipped as amax_compute runs it and as amax_and_scale runs it
// (fused_variant: with the scale epilogue, an atomic winner as self_reset); a default with both
// epilogues (a forced strategy keeps its own). One per compiled kernel (max_blocks is a launch
// parameter, not compiled in).
std::vector<std::pair<KernelConfig, DType>> kernels_for(const ArchInfo& arch, const db::TuningDb* tdb,
                                                        const db::Provenance& current, std::size_t* winners,
                                                        std::size_t* stale, std::set<std::string>* stale_why) {
  std::vector<std::pair<KernelConfig, DType>> out;
  std::set<std::string> seen;
  auto add_one = [&](KernelConfig c, DType d) {
    c.max_blocks = BlockCap::uncapped();
    if (!c.validate(arch, d) && seen.insert(kernel_name(c, d)).second) out.emplace_back(c, d);
  };
  if (tdb)
    for (const auto& r : tdb->winners(db::WinnerFilter{arch.name, std::nullopt})) {
      if (const auto f = db::stale_fields(r.provenance, current); !f.empty()) {
        ++*stale;
        for (const auto x : f) stale_why->insert(std::string(x));
        continue;
      }
      try {
        const KernelConfig c = KernelConfig::parse(r.winner.label);
        add_one(c, r.key.dtype);
        add_one(fused_variant(c, arch, r.key.dtype), r.key.dtype);
      } catch (const std::invalid_argument&) {
      }
    }
  *winners = out.size();
  for (const auto& d : all_dtypes())
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1} << 30})
      for (const Strategy s : all_strategies()) {
        KernelConfig c = builtin_default(arch, d.dtype, n);
        c.strategy = s;
        for (const auto& e : kEpilogues) {
          c.epilogue = e.value;
          add_one(c, d.dtype);
        }
      }
  return out;
}

// Whether `compiler` can compile `c` for `arch`, tried in a child process: hipRTC 5.2 crashes
// (SIGSEGV) instead of failing for targets newer than its LLVM (gfx942). "" when it can, else why.
std::string probe(const JitCompiler& compiler, const ArchInfo& arch, const KernelConfig& c, DType d) {
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      (void)build_kernel(compiler, BinaryCache{std::filesystem::path{}}, arch, c, d);
      ::_exit(0);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
      std::fprintf(stderr, "%s\n", why.c_str());
      ::_exit(1);
    }
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return "cannot start the probe compile";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFSIGNALED(status))
    return compiler.version() + " crashed compiling for it (" + ::strsignal(WTERMSIG(status)) + ")";
  return compiler.version() + " cannot compile for it (its error is printed above)";
}

int run_bundle(const BundleOptions& o) {
  if (o.out.empty()) throw UsageError("bundle needs -o DIR (the bundle directory to write)");
  std::vector<ArchInfo> arches;
  for (const auto& a : split(o.arch)) {
    try {
      arches.push_back(ArchInfo::parse(a));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (arches.empty()) throw UsageError("--arch lists no arch");
  std::unique_ptr<db::TuningDb> tdb;
  if (!o.db.empty()) tdb = std::make_unique<db::TuningDb>(db::TuningDb::open(o.db, db::OpenMode::ReadOnly));
  BundleWriter writer(o.out);
  const BinaryCache no_cache{std::filesystem::path{}};
  std::map<Vendor, std::unique_ptr<JitCompiler>> compilers;
  std::size_t built_arches = 0, skipped = 0;
  for (const auto& arch : arches) {
    if (!have_compiler(arch.vendor)) {
      std::cout << fmt::format("{}: skipped: this build has no {} backend\n", arch.name, to_string(arch.vendor));
      ++skipped;
      continue;
    }
    auto& compiler = compilers[arch.vendor];
    if (!compiler) compiler = make_compiler(arch.vendor);
    if (!compiler->available()) {
      std::cout << fmt::format("{}: skipped: {}\n", arch.name, compiler->unavailable_reason());
      ++skipped;
      continue;
    }
    std::size_t winners = 0, stale = 0;
    std::set<std::string> stale_why;
    const auto kernels = kernels_for(arch, tdb.get(), bundle_provenance(*compiler), &winners, &stale, &stale_why);
    if (stale) {
      std::string fields;
      for (const auto& f : stale_why) fields += (fields.empty() ? "" : ", ") + f;
      std::cout << fmt::format("{}: {} stale database winners not bundled ({} differs from this build's: {}, "
                               "template hash {}, tool {}); the runtime does not use them: re-tune\n",
                               arch.name, stale, fields, compiler->version(), template_hash(), generator_version());
    }
    if (const std::string why = probe(*compiler, arch, kernels.front().first, kernels.front().second); !why.empty()) {
      std::cout << fmt::format("{}: skipped: {}\n", arch.name, why);
      ++skipped;
      continue;
    }
    std::uint64_t bytes = 0;
    std::size_t done = 0;
    for (const auto& [c, d] : kernels) {
      const KernelBinary b = build_kernel(*compiler, no_cache, arch, c, d);
      writer.add(c, d, arch, compiler->version(), b.binary);
      bytes += b.binary.size();
      ++done;
    }
    ++built_arches;
    std::cout << fmt::format("{}: {} kernels ({} for database winners, {} for built-in defaults; amax-only and scale epilogue), {} bytes, {}\n", arch.name,
                             done, winners, done - winners, bytes, compiler->version());
  }
  writer.finish(std::string(generator_version()));
  std::uint64_t total = 0;
  for (const auto& e : writer.entries()) total += e.size;
  std::cout << fmt::format("wrote {} code objects ({} bytes) for {} of {} arches to {}\n", writer.entries().size(),
                           total, built_arches, arches.size(), o.out);
  if (built_arches == 0) {
    std::cerr << "amax-tune: error: no arch could be built\n";
    return kExitFailed;
  }
  return o.strict && skipped ? kExitFailed : kExitOk;
}

}  // namespace

void add_bundle(CLI::App& app) {
  auto o = std::make_shared<BundleOptions>();
  auto* sub = app.add_subcommand(
      "bundle", "Compile a database's winners and the built-in defaults for a list of arches into a kernel bundle");
  sub->add_option("--db", o->db, "Tuning database whose winners to compile (default: none, the defaults only)");
  sub->add_option("--arch", o->arch, "Comma-separated arches / AMD target IDs")->capture_default_str();
  sub->add_option("-o,--out", o->out, "Bundle directory to write (index.json + one file per code object)");
  sub->add_flag("--strict", o->strict, "Fail when an arch is skipped (no compiler can target it)");
  sub->final_callback([o] { throw CLI::RuntimeError(run_bundle(*o)); });
}

}  // namespace amax::cli

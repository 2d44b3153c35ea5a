// amax-tune bundle: compile a database's winners and the built-in defaults of both kernel families
// (single tensors, lists of tensors) for a list of arches
// into a release bundle of code objects (amax/bundle.hpp), on a machine without those GPUs; or copy
// arches' entries from a bundle another compiler made (--from), keeping the others (--update).
// The bundle is written to a temporary directory and put in place only when the run succeeds.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "amax/bundle.hpp"
#include "amax/compile_pool.hpp"
#include "amax/compiler.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/family.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/multi_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct BundleOptions {
  std::string db;
  std::string arch = "sm_80,sm_90,sm_100,gfx90a,gfx942,gfx950";
  std::string out;
  std::string from;
  bool strict = false;
  bool update = false;
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

// Calls add(row) for each of `rows` (winner rows of either family) fresh for `current`; a stale
// row is counted in *stale with the fields that differ in *stale_why. A row whose label does not
// parse is skipped.
template <class Rows, class Add>
void each_fresh(const Rows& rows, const db::Provenance& current, std::size_t* stale, std::set<std::string>* stale_why,
                Add&& add) {
  for (const auto& r : rows) {
    if (const auto f = db::stale_fields(r.provenance, current); !f.empty()) {
      ++*stale;
      for (const auto x : f) stale_why->insert(std::string(x));
      continue;
    }
    try {
      add(r);
    } catch (const std::invalid_argument&) {
    }
  }
}

// The configs of the rows of `rows` (winner rows of family F) fresh for `current`, with their dtypes.
template <class F>
std::vector<std::pair<typename F::Config, DType>> fresh_winners(const db::TuningDb* tdb, const ArchInfo& arch,
                                                                const db::Provenance& current, std::size_t* stale,
                                                                std::set<std::string>* stale_why) {
  std::vector<std::pair<typename F::Config, DType>> out;
  if (tdb)
    each_fresh(tdb->winners<F>(db::WinnerFilter{arch.name, std::nullopt}), current, stale, stale_why,
               [&](const auto& r) { out.emplace_back(F::Config::parse(r.winner.label), r.key.dtype); });
  return out;
}

// Compiles kernel `k` for `arch` (no kernel cache). Errors: CompileError.
std::vector<char> build(const JitCompiler& compiler, const ArchInfo& arch, const BundleKernel& k) {
  const BinaryCache no_cache{std::filesystem::path{}};
  if (k.multi) return build_kernel(compiler, no_cache, arch, *k.multi, k.dtype, k.capacity).binary;
  return build_kernel(compiler, no_cache, arch, k.single, k.dtype).binary;
}

// Removes the staging directories that bundle runs into the same -o left when a signal killed them
// before finish(): `writer`'s own staging name with the id of another process that is gone. One of a
// live process (a run writing that bundle now) is left alone, so is anything else beside -o. Says
// what it removed.
void remove_stale_staging(const BundleWriter& writer) {
  const std::filesystem::path& own = writer.staging();
  const std::string name = own.filename().string(), pid = std::to_string(::getpid());
  if (name.size() <= pid.size() || name.compare(name.size() - pid.size(), pid.size(), pid) != 0) return;
  const std::string prefix = name.substr(0, name.size() - pid.size());  // ".<name>.tmp-"
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(own.parent_path(), ec)) {
    const std::string n = e.path().filename().string(), id = n.substr(std::min(n.size(), prefix.size()));
    if (n == name || n.compare(0, prefix.size(), prefix) != 0 || id.empty() || id.size() > 9 ||
        id.find_first_not_of("0123456789") != std::string::npos || e.is_symlink(ec) || !e.is_directory(ec))
      continue;
    const pid_t other = static_cast<pid_t>(std::stol(id));
    if (other <= 0 || ::kill(other, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask about
    std::error_code rm;
    std::filesystem::remove_all(e.path(), rm);
    if (!rm)
      std::cout << fmt::format("removed {}, left by bundle process {}, which is gone\n", e.path().string(), other);
  }
}

// Child exit statuses of compile_arch.
constexpr int kChildOk = 0, kChildFailed = 1, kChildCannotTarget = 3;

// Compiles `kernels` for `arch` into the bundle directory `sub` (a complete bundle of its own),
// in a child process: a compiler that crashes (hipRTC's comgr aborts on targets it does not know)
// takes only the child down. The first kernel is compiled alone: when it fails, the compiler
// cannot target the arch (kChildCannotTarget, its error printed); the rest in parallel on every
// hardware thread (run_compile_pool: the first failure stops the compiles and is printed). Prints
// the arch's summary line. Returns "" on success, "skip: <why>" when the compiler cannot target
// the arch, else why the child failed (an error).
std::string compile_arch(const JitCompiler& compiler, const ArchInfo& arch, const std::vector<BundleKernel>& kernels,
                         std::size_t winners, std::size_t multi_winners, const std::filesystem::path& sub) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<std::vector<char>> built(kernels.size());
    try {
      built[0] = build(compiler, arch, kernels[0]);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
      std::fprintf(stderr, "%s\n", why.c_str());
      std::fflush(stderr);
      ::_exit(kChildCannotTarget);
    }
    try {
      tune::run_compile_pool(
          kernels.size() - 1, 0, [&](std::size_t i) { built[i + 1] = build(compiler, arch, kernels[i + 1]); },
          std::chrono::milliseconds(10), [](std::size_t) {});
      BundleWriter writer(sub);
      std::uint64_t bytes = 0, multi_bytes = 0;
      std::size_t multi = 0;
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        const BundleKernel& k = kernels[i];
        if (k.multi)
          writer.add(*k.multi, k.dtype, arch, compiler.version(), built[i], k.capacity);
        else
          writer.add(k.single, k.dtype, arch, compiler.version(), built[i]);
        (k.multi ? multi_bytes : bytes) += built[i].size();
        multi += k.multi ? 1 : 0;
      }
      writer.finish(std::string(generator_version()));
      const std::size_t single = kernels.size() - multi;
      std::cout << fmt::format("{}: {} kernels ({} for database winners, {} for built-in defaults; amax-only and "
                               "scale epilogue), {} bytes, {}\n",
                               arch.name, single, winners, single - winners, bytes, compiler.version());
      std::cout << fmt::format("{}: {} multi-tensor kernels ({} for database group winners, {} for built-in "
                               "multi-tensor defaults; amax-only and scale epilogue, {} descriptors per launch), {} "
                               "bytes\n",
                               arch.name, multi, multi_winners, multi - multi_winners,
                               fmt::join(multi_capacities(arch), ", "), multi_bytes);
      std::cout.flush();
      ::_exit(kChildOk);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "amax-tune: error: %s: %s\n", arch.name.c_str(), e.what());
      std::fflush(stderr);
      ::_exit(kChildFailed);
    } catch (...) {
      ::_exit(kChildFailed);
    }
  }
  int status = 0;
  if (pid < 0) return std::string("cannot start the compile process: ") + std::strerror(errno);
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return std::string("waiting for the compile process failed: ") + std::strerror(errno);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildOk) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildCannotTarget)
    return "skip: " + compiler.version() + " cannot compile for it (its error is printed above)";
  if (WIFSIGNALED(status))
    return compiler.version() + " crashed compiling for " + arch.name + " (" + ::strsignal(WTERMSIG(status)) + ")";
  return "compiling for " + arch.name + " failed (its error is printed above)";
}

int run_bundle(const BundleOptions& o) {
  if (o.out.empty()) throw UsageError("bundle needs -o DIR (the bundle directory to write)");
  // Every name is checked before any work: a processor this tool does not know is a usage error
  // (a typo, or one a compiler would crash on), never a compile.
  std::vector<ArchInfo> arches;
  for (const auto& a : split(o.arch)) {
    try {
      arches.push_back(ArchInfo::parse_known(a));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string(e.what()) + " in --arch '" + o.arch + "'");
    }
  }
  if (arches.empty()) throw UsageError("--arch lists no arch");
  const auto opened = [](const std::string& dir, const char* what) {
    std::string warning;
    auto b = Bundle::open(dir, &warning);
    if (!b)
      throw std::runtime_error(fmt::format("{} {}: {}", what, dir,
                                           warning.empty() ? "no kernel bundle there (no index.json)" : warning));
    return b;
  };
  // Writes a temporary directory, put in place by finish(); destroyed without it: removed. A -o
  // that is not a bundle (nor absent or empty) is refused here, before any compile. Temporary
  // directories of killed runs into the same -o go first, also when this run fails later.
  std::optional<BundleWriter> w;
  try {
    w.emplace(o.out);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string(e.what()) + " (-o)");
  }
  BundleWriter& writer = *w;
  remove_stale_staging(writer);
  std::unique_ptr<Bundle> from, existing;
  if (!o.from.empty()) from = opened(o.from, "--from");
  if (o.update && std::filesystem::exists(std::filesystem::path(o.out) / "index.json"))
    existing = opened(o.out, "--update: the bundle");
  std::unique_ptr<db::TuningDb> tdb;
  if (!o.db.empty() && !from)
    tdb = std::make_unique<db::TuningDb>(db::TuningDb::open(o.db, db::OpenMode::ReadOnly));
  // Why each arch cannot be compiled here, known before any compile ("" when it may be): no
  // backend, no compiler library, a compiler too old for the processor. --strict fails on one now.
  std::map<Vendor, std::unique_ptr<JitCompiler>> compilers;
  std::vector<std::string> cannot(arches.size());
  for (std::size_t ai = 0; ai < arches.size() && !from; ++ai) {
    const ArchInfo& arch = arches[ai];
    if (!have_compiler(arch.vendor)) {
      cannot[ai] = fmt::format("this build has no {} backend", to_string(arch.vendor));
      continue;
    }
    auto& compiler = compilers[arch.vendor];
    if (!compiler) compiler = make_compiler(arch.vendor);
    if (!compiler->available())
      cannot[ai] = compiler->unavailable_reason();
    else if (const auto why = compiler->unsupported(arch))
      cannot[ai] = *why;
    if (o.strict && !cannot[ai].empty())
      throw std::runtime_error(fmt::format("--strict: {} cannot be compiled here: {}; nothing was written to {}",
                                           arch.name, cannot[ai], o.out));
  }
  std::set<std::string> built;
  std::size_t skipped = 0;
  for (std::size_t ai = 0; ai < arches.size(); ++ai) {
    const ArchInfo& arch = arches[ai];
    if (from) {  // entries compiled elsewhere (another ROCm), verified and copied
      std::size_t n = 0;
      std::uint64_t bytes = 0;
      std::set<std::string> used;
      for (const auto& e : from->entries())
        if (e.arch == arch.name) {
          writer.add_copy(*from, e);
          ++n, bytes += e.size, used.insert(e.compiler);
        }
      if (n == 0) throw std::runtime_error(fmt::format("--from {} holds no entries for {}", o.from, arch.name));
      std::cout << fmt::format("{}: {} kernels copied from {}, {} bytes, {}\n", arch.name, n, o.from, bytes,
                               fmt::join(used, ", "));
      built.insert(arch.name);
      continue;
    }
    if (const std::string& why = cannot[ai]; !why.empty()) {
      std::cout << fmt::format("{}: skipped: {}\n", arch.name, why);
      ++skipped;
      continue;
    }
    const auto& compiler = compilers.at(arch.vendor);
    std::size_t winners = 0, stale = 0, multi_winners = 0, multi_stale = 0;
    std::set<std::string> stale_why, multi_stale_why;
    db::Provenance multi_current = bundle_provenance(*compiler);
    multi_current.template_hash = multi_template_hash();
    const auto kernels = bundle_kernels(
        arch, fresh_winners<SingleFamily>(tdb.get(), arch, bundle_provenance(*compiler), &stale, &stale_why),
        fresh_winners<MultiFamily>(tdb.get(), arch, multi_current, &multi_stale, &multi_stale_why), &winners,
        &multi_winners);
    const auto report_stale = [&](std::size_t n, const std::set<std::string>& why, const char* what,
                                  const std::string& hash) {
      if (!n) return;
      std::cout << fmt::format("{}: {} stale database {} not bundled ({} differs from this build's: {}, "
                               "template hash {}, tool {}); the runtime does not use them: re-tune\n",
                               arch.name, n, what, fmt::join(why, ", "), compiler->version(), hash,
                               generator_version());
    };
    report_stale(stale, stale_why, "winners", template_hash());
    report_stale(multi_stale, multi_stale_why, "group winners", multi_template_hash());
    const auto sub = writer.staging() / ("arch-" + std::to_string(ai));
    if (const std::string why = compile_arch(*compiler, arch, kernels, winners, multi_winners, sub);
        why.rfind("skip: ", 0) == 0) {
      std::cout << fmt::format("{}: skipped: {}\n", arch.name, why.substr(6));
      ++skipped;
      continue;
    } else if (!why.empty()) {
      std::cerr << fmt::format("amax-tune: error: {}; nothing was written to {}\n", why, o.out);
      return kExitFailed;
    }
    writer.absorb(sub);
    built.insert(arch.name);
  }
  if (built.empty()) {
    std::cerr << fmt::format("amax-tune: error: no arch could be built; nothing was written to {}\n", o.out);
    return kExitFailed;
  }
  if (o.strict && skipped) {
    std::cerr << fmt::format("amax-tune: error: --strict: {} arch(es) skipped; nothing was written to {}\n", skipped,
                             o.out);
    return kExitFailed;
  }
  if (existing) {  // --update: the existing bundle's entries of the arches not built now are kept
    std::size_t kept = 0, dropped = 0;
    for (const auto& e : existing->entries()) {
      if (built.count(e.arch)) continue;
      try {
        writer.add_copy(*existing, e);
        ++kept;
      } catch (const std::runtime_error& x) {
        if (dropped++ == 0) std::cout << fmt::format("--update: not kept: {}\n", x.what());
      }
    }
    std::cout << fmt::format("--update: kept {} entries of the existing bundle for other arches{}\n", kept,
                             dropped ? fmt::format(", dropped {} it cannot serve", dropped) : "");
  }
  writer.finish(std::string(generator_version()));
  std::uint64_t total = 0;
  for (const auto& e : writer.entries()) total += e.size;
  std::cout << fmt::format("wrote {} code objects ({} bytes) for {} of {} arches to {}\n", writer.entries().size(),
                           total, built.size(), arches.size(), o.out);
  return kExitOk;
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
  sub->add_flag("--update", o->update,
                "Keep the entries the bundle at -o already holds for the arches not built now (replace the others)");
  sub->add_option("--from", o->from,
                  "Copy the --arch entries from this bundle (made by another compiler, e.g. in the ROCm 6.4 root) "
                  "instead of compiling them");
  sub->final_callback([o] { throw CLI::RuntimeError(run_bundle(*o)); });
}

}  // namespace amax::cli

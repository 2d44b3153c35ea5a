// amax-tune check: re-measure a database's winners against their closest alternatives on this
// device and report whether each entry holds; --retune re-tunes the keys that do not.
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "amax/check.hpp"
#include "amax/tuner.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct CheckArgs {
  std::string db, against, dtypes, sizes;
  bool retune = false, quiet = false;
  int device = 0;
};

void print_report(const tune::CheckReport& r, const std::filesystem::path& db, const std::filesystem::path& against,
                  double hold, std::ostream& os) {
  os << fmt::format("\n{} ({}, {} SMs/CUs, {}): {} entries of {}\n", r.device.name, r.device.arch, r.device.cu_count,
                    r.device.driver_version, r.entries.size(), db.string());
  os << fmt::format("{:<5} {:>11} {:<30} {:>9} {:>9} {:>7} {:<30} {:>9} {:>7} {:>5} {:>5}\n", "dtype", "n",
                    "stored winner", "stored us", "now us", "host us", "best now", "best us", "regret", "tied", "holds");
  for (const auto& e : r.entries) {
    if (!e.skipped.empty()) {
      os << fmt::format("skipped {} n={}: {}\n", to_string(e.dtype), e.n, e.skipped);
      continue;
    }
    if (e.regret <= 0) {
      os << fmt::format("{:<5} {:>11} {:<30} {:>9.2f} the stored winner could not be timed: {}\n", to_string(e.dtype),
                        e.n, e.winner, e.stored_us, e.variants.at(0).problem);
      continue;
    }
    os << fmt::format("{:<5} {:>11} {:<30} {:>9.2f} {:>9.2f} {:>7.2f} {:<30} {:>9.2f} {:>6.3f}x {:>5} {:>5}\n",
                      to_string(e.dtype), e.n, e.winner, e.stored_us, e.winner_us, e.variants.at(0).host_us, e.best,
                      e.best_us, e.regret, e.tied ? "yes" : "no", e.holds ? "yes" : "NO");
    for (const auto& v : e.variants)
      if (!v.problem.empty()) os << fmt::format("      {} not timed: {}\n", v.label, v.problem);
  }
  os << fmt::format("now us / best us: GPU time (batches behind a gate kernel); host us: the stored winner's enqueue "
                    "cost per call.\n"
                    "regret: the stored winner's time now / the best time now among it, its recorded tie set{} and "
                    "the fastest other trials; holds: regret <= {:.2f}x; tied: within the tuner's tie rule.\n",
                    against.empty() ? "" : ", the winner in " + against.string(), hold);
  if (r.measured > 0)
    os << fmt::format("summary: {} of {} keys hold; geometric-mean regret {:.3f}x, max {:.3f}x ({}); {} skipped\n",
                      r.held, r.measured, r.geomean_regret, r.max_regret, r.max_at.empty() ? "-" : r.max_at, r.skipped);
  else
    os << fmt::format("summary: no key measured; {} skipped\n", r.skipped);
}

int run_check(const CheckArgs& a) {
  tune::CheckOptions o;
  // Every argument is checked before the database or the device is touched.
  if (!a.dtypes.empty()) o.dtypes = parse_dtypes(a.dtypes);
  if (!a.sizes.empty()) o.sizes = parse_sizes(a.sizes);
  if (a.device < 0) throw UsageError(fmt::format("--device must be a device ordinal >= 0, got {}", a.device));
  o.db_path = db_path_or_default(a.db);
  o.against = a.against;
  o.device = a.device;
  o.progress = !a.quiet;
  // A CheckError reaches main, which prints it as every command's error (exit 1).
  const tune::CheckReport r = tune::run_check(o);
  print_report(r, o.db_path, o.against, o.hold_regret, std::cout);
  std::map<DType, std::vector<std::uint64_t>> failing;
  for (const auto& e : r.entries)
    if (e.skipped.empty() && !e.holds) failing[e.dtype].push_back(e.n);
  if (failing.empty()) return kExitOk;
  if (!a.retune) {
    std::cout << "some entries do not hold: `amax-tune check --retune` re-tunes them\n";
    return kExitFailed;
  }
  // Re-tune exactly the keys that did not hold (the check's device and database are released).
  for (const auto& [d, sizes] : failing) {
    tune::TuneOptions t;
    t.arch = r.device.arch;
    t.dtypes = {d};
    t.sizes = sizes;
    t.db_path = o.db_path;
    t.device = a.device;
    t.retune = true;
    t.progress = !a.quiet;
    const tune::TuneReport tr = tune::run_tuning(t);  // a TuneError reaches main (exit 1)
    for (const auto& k : tr.keys)
      if (k.winner >= 0)
        std::cout << fmt::format("re-tuned {} n={}: {} {:.2f} us\n", to_string(k.dtype), k.n,
                                 k.variants[k.winner].label(), k.variants[k.winner].stats.median_us);
      else
        std::cout << fmt::format("re-tuned {} n={}: no variant passed verification\n", to_string(k.dtype), k.n);
  }
  return kExitOk;
}

}  // namespace

void add_check(CLI::App& app) {
  auto a = std::make_shared<CheckArgs>();
  auto* sub = app.add_subcommand("check", "Re-measure a database's winners against their closest alternatives on "
                                          "this device: per key the regret and whether the entry holds");
  sub->add_option("--db", a->db, "Database (default: $AMAX_TUNE_DB, else the per-user one); never changed without --retune");
  sub->add_option("--against", a->against,
                  "Also time the winners of this database (e.g. a second tune), read-only: measures reproducibility");
  sub->add_flag("--retune", a->retune, "Re-tune the keys that do not hold (regret above 1.05x)");
  sub->add_option("--dtypes", a->dtypes, "Only these dtypes (comma-separated; default: all)");
  sub->add_option("--sizes", a->sizes, "Only these element counts, as for tune (default: all)");
  sub->add_option("--device", a->device, "Device ordinal")->capture_default_str();
  sub->add_flag("-q,--quiet", a->quiet, "No progress output");
  sub->final_callback([a] { throw CLI::RuntimeError(run_check(*a)); });
}

}  // namespace amax::cli

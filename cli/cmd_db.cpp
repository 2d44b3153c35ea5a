// amax-tune show / export / import / merge: the tuning database from the command line.
#include <algorithm>
#include <fstream>
#include <optional>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "amax/arch.hpp"
#include "amax/db/merge.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"
#include "amax/paths.hpp"
#include "commands.hpp"
#include "dump_import.hpp"

namespace amax::cli {

namespace {
struct DbArgs {
  std::string db, format = "table", arch, dtype, out, a, b;
  bool arch_given = false, verbose = false;
  bool trials = false, allow_devices = false, overwrite = false, integrity = false, groups = false;
};

// The built-in default that serves `arch` where no entry does, per dtype, with where it comes from.
std::string default_line(const ArchInfo& arch, const std::optional<DType>& only) {
  std::vector<std::pair<std::string, std::string>> groups;  // labels -> dtypes sharing them
  for (const auto& d : all_dtypes()) {
    if (only && d.dtype != *only) continue;
    const std::string small = builtin_default(arch, d.dtype, 1).label(), large = builtin_default(arch, d.dtype, 1ull << 30).label();
    const std::string labels = small == large ? small : small + " up to 2^21 elements, " + large + " above";
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == labels; });
    if (g == groups.end()) groups.emplace_back(labels, std::string(d.name));
    else g->second += ", " + std::string(d.name);
  }
  std::string out;
  for (const auto& [labels, dtypes] : groups) out += (out.empty() ? "" : ", ") + labels + " (" + dtypes + ")";
  return fmt::format("built-in default for {} where no entry serves: {}: {}", arch.name, out, builtin_default_source(arch));
}

int run_show(const DbArgs& a) {
  auto path = db_path_or_default(a.db);
  // --arch gfx942 lists every gfx942 target ID (gfx942:sramecc+:xnack-, ...); features narrow it.
  std::optional<ArchInfo> want;
  if (a.arch_given) want = parse_user_arch(a.arch);
  db::WinnerFilter f;
  std::optional<DType> only;
  if (!a.dtype.empty()) {
    auto d = dtype_from_name(a.dtype);
    if (!d) throw UsageError("unknown dtype '" + a.dtype + "' (expected fp32, fp16 or bf16)");
    f.dtype = *d;
    only = d;
  }
  // Without --db and without a user database (nothing tuned on this machine yet) the system
  // database is what the library uses, so it is shown; without that either, the built-in default.
  std::error_code ec;
  if (a.db.empty() && !std::filesystem::exists(path, ec)) {
    const std::filesystem::path sys = default_system_db_path();
    if (!std::filesystem::exists(sys, ec)) {
      std::cout << fmt::format("0 winners: no user database ({}) and no system database ({})\n", path.string(),
                               sys.string());
      std::cout << (want ? default_line(*want, only)
                         : std::string("amax-tune show --arch ARCH names the built-in default that serves ARCH"))
                << "\n";
      return kExitOk;
    }
    std::cerr << fmt::format("note: no user database at {}: showing the system database\n", path.string());
    path = sys;
  }
  auto db = db::TuningDb::open(path, db::OpenMode::ReadOnly);
  // The rows of --arch (all without it); a row whose arch does not parse serves no device.
  auto shown = [&](auto rows) {
    if (want)
      std::erase_if(rows, [&](const auto& r) {
        try {
          return !want->accepts(ArchInfo::parse(r.key.arch));
        } catch (const std::invalid_argument&) {
          return true;
        }
      });
    return rows;
  };
  const auto rows = shown(db.winners<SingleFamily>(f));
  const auto groups = shown(db.winners<MultiFamily>(f));  // multi-tensor winners, filtered alike
  if (a.integrity) {  // the full check (open ran only PRAGMA quick_check); its rows, then the counts
    const auto problems = db.integrity_check();
    for (const auto& line : problems) std::cout << line << "\n";
    const std::size_t group_winners = db.winners<MultiFamily>().size();
    const std::size_t group_trials = db.all_trials<MultiFamily>().size();
    std::cout << fmt::format("schema version {}, {} winners, {} trials{}\n", db.schema_version(),
                             db.winners<SingleFamily>().size(), db.all_trials<SingleFamily>().size(),
                             group_winners + group_trials == 0
                                 ? std::string()
                                 : fmt::format(", {} group winners, {} group trials", group_winners, group_trials));
    if (problems != std::vector<std::string>{"ok"}) return kExitFailed;
  }
  std::cout << fmt::format("{} winners in {}\n", rows.size(), path.string());
  std::cout << fmt::format("{:<10} {:<5} {:>11} {:<32} {:>9} {:>8}  {}\n", "arch", "dtype", "n", "winner", "us", "GB/s",
                           "device, measured");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<10} {:<5} {:>11} {:<32} {:>9.2f} {:>8.0f}  {}, {}\n", r.key.arch,
                             to_string(r.key.dtype), r.key.n, r.winner.label, r.winner.median_us, r.winner.gbps,
                             db::describe_device(r.provenance), r.provenance.timestamp);
  if (!groups.empty()) {  // multi-tensor winners: a second table, only when there are any
    std::cout << fmt::format("{} multi-tensor group winners\n", groups.size());
    std::cout << fmt::format("{:<10} {:<5} {:>8} {:>14} {:>13} {:<40} {:>9} {:>8}  {}\n", "arch", "dtype", "tensors",
                             "total bytes", "largest bytes", "winner", "us", "GB/s", "device, measured");
    for (const auto& r : groups)
      std::cout << fmt::format("{:<10} {:<5} {:>8} {:>14} {:>13} {:<40} {:>9.2f} {:>8.0f}  {}, {}\n", r.key.arch,
                               to_string(r.key.dtype), r.key.tensors, r.key.total_bytes, r.key.largest_bytes,
                               r.winner.label, r.winner.median_us, r.winner.gbps, db::describe_device(r.provenance),
                               r.provenance.timestamp);
  }
  if (want) std::cout << default_line(*want, only) << "\n";
  return kExitOk;
}

int run_export(const DbArgs& a) {
  if (a.format != "json" && a.format != "csv" && a.format != "text")
    throw UsageError("unknown --format '" + a.format + "' (expected json, csv or text)");
  if (a.groups && a.format != "csv") throw UsageError("--groups selects the CSV table; json and text hold every table");
  const auto path = db_path_or_default(a.db);
  if (!a.out.empty() && a.out != "-") refuse_same_file(a.out, path, "the database being exported");
  auto db = db::TuningDb::open(path, db::OpenMode::ReadOnly);
  auto write = [&](std::ostream& os) {
    if (a.format == "json") db.export_json(os, a.trials ? db::ExportTable::All : db::ExportTable::Winners);
    else if (a.format == "csv")
      db.export_csv(os, a.groups ? (a.trials ? db::ExportTable::GroupTrials : db::ExportTable::GroupWinners)
                                 : (a.trials ? db::ExportTable::Trials : db::ExportTable::Winners));
    else db.dump_text(os);
  };
  if (a.out.empty() || a.out == "-") write(std::cout);
  else write_file_atomically(a.out, write);
  // One table per CSV file: say so when the other family's rows are left out.
  if (a.format == "csv" && !a.groups)
    if (const std::size_t n = db.winners<MultiFamily>().size())
      std::cerr << fmt::format("note: {} multi-tensor group winners are not in this CSV; export them with --groups\n", n);
  return kExitOk;
}

int run_merge(const DbArgs& a) {
  if (a.out.empty()) throw UsageError("merge needs -o OUT.db");
  db::MergePolicy p;
  p.allow_different_devices = a.allow_devices;
  p.overwrite_output = a.overwrite;
  const auto r = db::merge(a.a, a.b, a.out, p);
  std::cout << fmt::format("merged {} and {} into {}: {} winners, {} trials{}\n", a.a, a.b, a.out,
                           r.single.winners_written, r.single.trials_written,
                           r.group.winners_written + r.group.trials_written == 0
                               ? std::string()
                               : fmt::format(", {} group winners, {} group trials", r.group.winners_written,
                                             r.group.trials_written));
  // The summary: where the winners came from, how many keys both inputs held; the per-key
  // decisions with --verbose.
  const std::size_t contested = r.single.contested.size() + r.group.contested.size();
  std::size_t other_device = 0;
  for (const auto& c : r.single.contested) other_device += c.different_devices;
  for (const auto& c : r.group.contested) other_device += c.different_devices;
  std::cout << fmt::format("  winners kept: {} from {}, {} from {}{}; {} keys had more than one winner (the fastest kept){}\n",
                           r.single.winners_from_a, a.a, r.single.winners_from_b, a.b,
                           r.group.winners_written == 0
                               ? std::string()
                               : fmt::format(" (group winners: {} from {}, {} from {})", r.group.winners_from_a, a.a,
                                             r.group.winners_from_b, a.b),
                           contested, contested && !a.verbose ? " (listed with --verbose)" : "");
  if (other_device)
    std::cerr << fmt::format("warning: --allow-different-devices: {} of them kept a winner measured on another device "
                             "than the winner it replaced{}\n",
                             other_device, a.verbose ? "" : " (listed with --verbose)");
  if (!a.verbose) return kExitOk;
  auto report = [&](const auto& c) {
    std::cout << fmt::format("  {}: kept {} ({:.2f} us, from {}) over {} ({:.2f} us){}\n", db::to_string(c.key),
                             c.kept.winner.label, c.kept.winner.median_us, c.kept_from == 'a' ? a.a : a.b,
                             c.dropped.winner.label, c.dropped.winner.median_us,
                             c.different_devices ? ", measured on different devices" : "");
  };
  for (const auto& c : r.single.contested) report(c);
  for (const auto& c : r.group.contested) report(c);
  return kExitOk;
}
}  // namespace

void add_db_commands(CLI::App& app) {
  auto s = std::make_shared<DbArgs>();
  auto* show = app.add_subcommand("show", "List the winners of a tuning database as a table");
  show->add_option("--db", s->db,
                   "Database (default: the per-user one; where that does not exist yet, the system database)");
  show->add_option_function<std::string>(
      "--arch", [s](const std::string& v) { s->arch = v, s->arch_given = true; },
      "Only this arch, and the built-in default that serves it where no entry does");
  show->add_option("--dtype", s->dtype, "Only this dtype");
  show->add_flag("--integrity", s->integrity,
                 "First run SQLite's full integrity check and print its result and the row counts; exit 1 unless ok");
  show->final_callback([s] { throw CLI::RuntimeError(run_show(*s)); });

  auto e = std::make_shared<DbArgs>();
  auto* exp = app.add_subcommand("export", "Export winners (and trials) as JSON, CSV or reviewable text (one JSON row per line)");
  exp->add_option("--db", e->db, "Database (default: the per-user one)");
  exp->add_option("--format", e->format, "json, csv or text (one JSON row per line)")->required();
  exp->add_flag("--trials", e->trials, "Include every trial (json) / export the trial table (csv)");
  exp->add_flag("--groups", e->groups, "csv: export the multi-tensor group tables (group winners; with --trials group trials)");
  exp->add_option("-o,--out", e->out, "Output file (default: stdout)");
  exp->final_callback([e] { throw CLI::RuntimeError(run_export(*e)); });

  auto im = std::make_shared<DbArgs>();
  auto* imp = app.add_subcommand("import", "Build a database from a text dump (export --format text)");
  imp->add_option("text", im->a, "Text dump, one JSON row per line")->required();
  imp->add_option("-o,--out", im->out, "Database to create (replaced if present)")->required();
  imp->final_callback([im] {
    refuse_same_file(im->out, im->a, "the text dump being imported");
    import_dump(im->a, im->out, std::cout);
    throw CLI::RuntimeError(kExitOk);
  });

  auto m = std::make_shared<DbArgs>();
  auto* mer = app.add_subcommand("merge", "Merge two databases: per key the faster winner with its provenance");
  mer->add_option("a", m->a, "First database")->required();
  mer->add_option("b", m->b, "Second database")->required();
  mer->add_option("-o,--out", m->out, "Output database")->required();
  mer->add_flag("--allow-different-devices", m->allow_devices,
                "Keep the faster winner even when the two were measured on different devices");
  mer->add_flag("--overwrite", m->overwrite, "Replace an existing output file");
  mer->add_flag("-v,--verbose", m->verbose, "Also list every key both inputs held: which winner was kept, over which");
  mer->final_callback([m] { throw CLI::RuntimeError(run_merge(*m)); });
}

}  // namespace amax::cli

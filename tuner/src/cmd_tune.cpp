// amax-tune [tune]: the tuning run, its summary table and JSON; amax-tune show/export/merge.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "amax/db/merge.hpp"
#include "amax/kernel_config.hpp"
#include "amax/paths.hpp"
#include "amax/render.hpp"
#include "amax/tuner.hpp"
#include "commands.hpp"

namespace amax::cli {

std::filesystem::path default_db_path() { return default_user_db_path(); }

std::vector<DType> parse_dtypes(const std::string& s) {
  std::vector<DType> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(start, end - start);
    auto d = parse_dtype(item);
    if (!d) throw UsageError("unknown dtype '" + item + "' in --dtypes '" + s + "' (expected fp32, fp16, bf16)");
    out.push_back(*d);
    start = end + 1;
  }
  return out;
}

void refuse_same_file(const std::filesystem::path& out, const std::filesystem::path& in, const char* what) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(out, in, ec))
    throw UsageError("the output " + out.string() + " is " + what + " (" + in.string() +
                     "): choose another output file");
}

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  const auto tmp = std::filesystem::path(path.string() + ".tmp-" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw std::runtime_error("cannot write " + path.string() + ": cannot create " + tmp.string() + " (" +
                               std::strerror(errno) + ")");
    try {
      write(f);
      f.flush();
      if (!f) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
    } catch (...) {
      f.close();
      std::filesystem::remove(tmp);
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
  }
}

namespace {

struct TuneArgs {
  std::string arch;
  std::string dtypes = "fp32,fp16,bf16";
  std::string sizes;
  std::string db;
  unsigned jobs = 0;
  double budget = 0;
  bool retune = false, stale = false, rebuild = false, full = false, warm = false, quiet = false;
  bool sizes_given = false;
  int device = 0;
  std::string json;
};


std::string pct(double num, double den) { return den > 0 && num > 0 ? fmt::format("{:.0f}%", 100 * num / den) : "-"; }
std::string ratio(const tune::VariantResult* other, const tune::VariantResult& w) {
  return other ? fmt::format("{:.2f}x", other->stats.median_us / w.stats.median_us) : "-";
}

// The key's result of TransformerEngine baseline i (0: atomic, 1: two_stage), nullptr if absent.
const tune::VariantResult* te(const tune::KeyResult& k, std::size_t i) {
  return k.find(tune::transformer_engine_baselines(k.dtype).at(i).label());
}

void print_table(const tune::TuneReport& r, std::ostream& os) {
  os << fmt::format("\n{} ({}, {} SMs/CUs, L2 {} MiB), {}, {}\n", r.device.name, r.device.arch, r.device.cu_count,
                    r.device.l2_bytes >> 20, r.device.driver_version, r.compiler);
  os << fmt::format("{:<5} {:>11} {:<28} {:>9} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "dtype", "n", "winner",
                    "us", "GB/s", "%ceil", "vs TE-at", "vs TE-2s", "vs atom", "vs 2stg", "vs 1pass");
  for (const auto& k : r.keys) {
    if (k.resumed) {
      if (k.stored)
        os << fmt::format("{:<5} {:>11} {:<28} {:>9.2f} {:>7.0f}  (resumed: tuned earlier, {})\n", to_string(k.dtype),
                          k.n, k.stored->winner.label, k.stored->winner.median_us, k.stored->winner.gbps,
                          k.stored->provenance.timestamp);
      continue;
    }
    if (k.winner < 0) {
      os << fmt::format("{:<5} {:>11} no variant passed verification\n", to_string(k.dtype), k.n);
      continue;
    }
    const auto& w = k.variants[k.winner];
    os << fmt::format("{:<5} {:>11} {:<28} {:>9.2f} {:>7.0f} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}\n", to_string(k.dtype),
                      k.n, w.config.label(), w.stats.median_us, tune::gbps(k.bytes(), w.stats.median_us),
                      pct(k.ceiling.median_us, w.stats.median_us), ratio(te(k, 0), w), ratio(te(k, 1), w),
                      ratio(k.best(Strategy::atomic), w), ratio(k.best(Strategy::two_stage), w),
                      ratio(k.best(Strategy::one_pass), w));
  }
  os << fmt::format("%ceil: streaming-read kernel time / winner time on the same bytes; vs X: X's time / winner's.\n"
                    "TE-at / TE-2s: TransformerEngine's fixed atomic / two_stage configs; atom/2stg/1pass: best of "
                    "each strategy.\nwall time {:.1f} s (kernels {:.1f} s: {} compiled, {} cached)\n",
                    r.wall_s, r.compile_s, r.kernels_compiled, r.kernels_cached);
}

nlohmann::json to_json(const tune::TuneReport& r) {
  nlohmann::json j;
  j["device"] = {{"name", r.device.name}, {"arch", r.device.arch}, {"cu_count", r.device.cu_count},
                 {"l2_bytes", r.device.l2_bytes}, {"driver", r.device.driver_version}};
  j["compiler"] = r.compiler;
  j["timing_protocol"] = r.protocol;
  j["wall_s"] = r.wall_s;
  j["compile_s"] = r.compile_s;
  j["kernels_compiled"] = r.kernels_compiled;
  j["kernels_cached"] = r.kernels_cached;
  j["not_done"] = r.not_done;
  j["db_in_memory"] = r.db_in_memory;
  j["keys"] = nlohmann::json::array();
  for (const auto& k : r.keys) {
    nlohmann::json e{{"dtype", to_string(k.dtype)}, {"n", k.n}, {"resumed", k.resumed}};
    if (k.resumed && k.stored) {
      e["winner"] = {{"label", k.stored->winner.label}, {"median_us", k.stored->winner.median_us},
                     {"gbps", k.stored->winner.gbps}};
    } else if (k.winner >= 0) {
      const auto& w = k.variants[k.winner];
      e["winner"] = {{"label", w.config.label()}, {"median_us", w.stats.median_us},
                     {"spread_us", w.stats.spread_us}, {"gbps", tune::gbps(k.bytes(), w.stats.median_us)}};
      e["ceiling_us"] = k.ceiling.median_us;
      auto add = [&](const char* name, const tune::VariantResult* v) {
        if (v) e["baselines"][name] = {{"label", v->config.label()}, {"median_us", v->stats.median_us}};
      };
      for (const auto& b : tune::transformer_engine_baselines(k.dtype))
        add(("te_" + std::string(to_string(b.strategy))).c_str(), k.find(b.label()));
      add("best_atomic", k.best(Strategy::atomic));
      add("best_two_stage", k.best(Strategy::two_stage));
      add("best_one_pass", k.best(Strategy::one_pass));
      int failed = 0;
      for (const auto& v : k.variants) failed += v.status != db::TrialStatus::ok;
      e["variants"] = k.variants.size();
      e["failed_variants"] = failed;
    }
    j["keys"].push_back(std::move(e));
  }
  return j;
}

int run_tune(const TuneArgs& a) {
  tune::TuneOptions o;
  // Every argument is checked before the device is asked for anything.
  o.dtypes = parse_dtypes(a.dtypes);
  try {
    if (a.sizes_given && a.sizes.empty()) throw std::invalid_argument("--sizes is empty");
    if (!a.sizes.empty()) o.sizes = tune::parse_sizes(a.sizes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!(a.budget >= 0) || !std::isfinite(a.budget))
    throw UsageError(fmt::format("--time-budget must be >= 0 seconds, got {}", a.budget));
  if (a.device < 0) throw UsageError(fmt::format("--device must be a device ordinal >= 0, got {}", a.device));
  if (a.arch.empty()) {
    Vendor v;
    if (!first_available_vendor(v, a.device))
      throw UsageError("--arch not given and no GPU found to take it from (" + no_device_reason(Vendor::nvidia) + ")");
    o.arch = make_backend(v, a.device)->device().arch;
  } else {
    try {
      o.arch = ArchInfo::parse(a.arch).name;
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  o.db_path = a.db.empty() ? default_db_path() : std::filesystem::path(a.db);
  o.jobs = a.jobs;
  o.time_budget_s = a.budget;
  o.retune = a.retune;
  o.stale_only = a.stale;
  o.rebuild_db = a.rebuild;
  o.device = a.device;
  o.space = a.full ? SpaceKind::full : SpaceKind::pruned;
  o.protocol.warm_cache = a.warm;
  o.progress = !a.quiet;
  if (!a.quiet) std::cerr << fmt::format("amax-tune {}: tuning {} into {}\n", generator_version(), o.arch, o.db_path.string());
  tune::TuneReport r;
  try {
    r = tune::run_tuning(o);
  } catch (const tune::TuneError& e) {
    std::cerr << "amax-tune: error: " << e.what() << "\n";
    return kExitFailed;
  }
  const bool json_stdout = a.json == "-";
  print_table(r, json_stdout ? std::cerr : std::cout);
  if (!a.json.empty()) {
    const std::string text = to_json(r).dump(2) + "\n";
    if (json_stdout) {
      std::cout << text;
    } else {
      std::ofstream f(a.json);
      if (!(f << text)) throw std::runtime_error("cannot write " + a.json);
    }
  }
  return kExitOk;
}

void add_tune_options(CLI::App& app, TuneArgs& a) {
  app.add_option("--arch", a.arch, "Target arch; must match the device (default: the device's)");
  app.add_option("--dtypes", a.dtypes, "Comma-separated dtypes")->capture_default_str();
  app.add_option_function<std::string>(
         "--sizes", [&a](const std::string& v) { a.sizes = v, a.sizes_given = true; },
                 "Element counts: 1048576, 2^20, 1M, ranges 2^10..2^30 (default: 2^10..2^30 and 5 non-powers)");
  app.add_option("--db", a.db, "Tuning database (default: $AMAX_TUNE_DB, else ~/.local/share/amax-tune/tuning.db)");
  app.add_option("-j,--jobs", a.jobs, "Parallel JIT compilations (default: hardware threads)");
  app.add_option("--time-budget", a.budget, "Stop starting new keys after SECONDS (finished keys are kept)");
  app.add_flag("--retune", a.retune, "Re-measure keys that already have a winner for this device and build");
  app.add_flag("--stale-only", a.stale, "Tune exactly the keys whose winner is stale (other templates/compiler/tool)");
  app.add_flag("--rebuild", a.rebuild, "If the database is damaged, move it aside and start a new one");
  app.add_option("--device", a.device, "Device ordinal")->capture_default_str();
  app.add_flag("--full", a.full, "Search the full space instead of the pruned default");
  app.add_flag("--warm", a.warm, "Time with a warm L2 (same input every call) instead of cold rotating inputs");
  app.add_option("--json", a.json, "Write a machine-readable summary to FILE (- for stdout)");
  app.add_flag("-q,--quiet", a.quiet, "No progress output");
}

}  // namespace

void add_tune(CLI::App& app) {
  // The same options serve `amax-tune --arch ...` (tune is the default command) and `amax-tune tune`.
  auto top = std::make_shared<TuneArgs>();
  add_tune_options(app, *top);
  auto sub_args = std::make_shared<TuneArgs>();
  auto* sub = app.add_subcommand("tune", "Tune (the default command): verify, time and record every variant");
  add_tune_options(*sub, *sub_args);
  sub->final_callback([sub_args] { throw CLI::RuntimeError(run_tune(*sub_args)); });
  app.final_callback([&app, top] {
    if (app.get_subcommands().empty()) throw CLI::RuntimeError(run_tune(*top));
  });
}

namespace {
struct DbArgs {
  std::string db, format = "table", arch, dtype, out, a, b;
  bool trials = false, allow_devices = false, overwrite = false;
};

int run_show(const DbArgs& a) {
  const auto path = a.db.empty() ? default_db_path() : std::filesystem::path(a.db);
  auto db = db::TuningDb::open(path, db::OpenMode::ReadOnly);
  db::WinnerFilter f;
  if (!a.arch.empty()) f.arch = a.arch;
  if (!a.dtype.empty()) {
    auto d = db::parse_dtype(a.dtype);
    if (!d) throw UsageError("unknown dtype '" + a.dtype + "' (expected fp32, fp16 or bf16)");
    f.dtype = *d;
  }
  const auto rows = db.winners(f);
  std::cout << fmt::format("{} winners in {}\n", rows.size(), path.string());
  std::cout << fmt::format("{:<10} {:<5} {:>11} {:<32} {:>9} {:>8}  {}\n", "arch", "dtype", "n", "winner", "us", "GB/s",
                           "device, measured");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<10} {:<5} {:>11} {:<32} {:>9.2f} {:>8.0f}  {}, {}\n", r.key.arch,
                             db::to_string(r.key.dtype), r.key.n, r.winner.label, r.winner.median_us, r.winner.gbps,
                             db::describe_device(r.provenance), r.provenance.timestamp);
  return kExitOk;
}

int run_export(const DbArgs& a) {
  if (a.format != "json" && a.format != "csv" && a.format != "text")
    throw UsageError("unknown --format '" + a.format + "' (expected json, csv or text)");
  const auto path = a.db.empty() ? default_db_path() : std::filesystem::path(a.db);
  if (!a.out.empty() && a.out != "-") refuse_same_file(a.out, path, "the database being exported");
  auto db = db::TuningDb::open(path, db::OpenMode::ReadOnly);
  auto write = [&](std::ostream& os) {
    if (a.format == "json") db.export_json(os, a.trials ? db::ExportTable::All : db::ExportTable::Winners);
    else if (a.format == "csv") db.export_csv(os, a.trials ? db::ExportTable::Trials : db::ExportTable::Winners);
    else db.dump_text(os);
  };
  if (a.out.empty() || a.out == "-") write(std::cout);
  else write_file_atomically(a.out, write);
  return kExitOk;
}

int run_merge(const DbArgs& a) {
  if (a.out.empty()) throw UsageError("merge needs -o OUT.db");
  db::MergePolicy p;
  p.allow_different_devices = a.allow_devices;
  p.overwrite_output = a.overwrite;
  const auto r = db::merge(a.a, a.b, a.out, p);
  std::cout << fmt::format("merged {} and {} into {}: {} winners, {} trials\n", a.a, a.b, a.out, r.winners_written,
                           r.trials_written);
  for (const auto& c : r.contested)
    std::cout << fmt::format("  {}: kept {} ({:.2f} us, from {}) over {} ({:.2f} us){}\n", db::to_string(c.key),
                             c.kept.winner.label, c.kept.winner.median_us, c.kept_from == 'a' ? a.a : a.b,
                             c.dropped.winner.label, c.dropped.winner.median_us,
                             c.different_devices ? ", measured on different devices" : "");
  return kExitOk;
}
}  // namespace

// Every row of a text dump names a real variant: its arch parses and its label is valid for that
// arch and dtype (the database layer treats both as opaque text). UsageError naming the line.
void validate_dump_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty() || no == 1) continue;  // line 1: the format header, checked by load_text
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      continue;  // malformed JSON: load_text reports it with the line number
    }
    if (!row.is_object() || !row.contains("label") || !row.contains("arch") || !row.contains("dtype")) continue;
    const auto where = fmt::format("{} line {}", path, no);
    try {
      const ArchInfo arch = ArchInfo::parse(row["arch"].get<std::string>());
      const auto dtype = parse_dtype(row["dtype"].get<std::string>());
      if (!dtype) continue;  // load_text names a bad dtype
      const KernelConfig c = KernelConfig::parse(row["label"].get<std::string>());
      if (auto why = c.validate(arch, *dtype)) throw UsageError(fmt::format("{}: variant not valid: {}", where, *why));
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {}", where, e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(fmt::format("{}: {}", where, e.what()));
    }
  }
}

void add_db_commands(CLI::App& app) {
  auto s = std::make_shared<DbArgs>();
  auto* show = app.add_subcommand("show", "List the winners of a tuning database as a table");
  show->add_option("--db", s->db, "Database (default: the per-user one)");
  show->add_option("--arch", s->arch, "Only this arch");
  show->add_option("--dtype", s->dtype, "Only this dtype");
  show->final_callback([s] { throw CLI::RuntimeError(run_show(*s)); });

  auto e = std::make_shared<DbArgs>();
  auto* exp = app.add_subcommand("export", "Export winners (and trials) as JSON, CSV or reviewable text (one JSON row per line)");
  exp->add_option("--db", e->db, "Database (default: the per-user one)");
  exp->add_option("--format", e->format, "json, csv or text (one JSON row per line)")->required();
  exp->add_flag("--trials", e->trials, "Include every trial (json) / export the trial table (csv)");
  exp->add_option("-o,--out", e->out, "Output file (default: stdout)");
  exp->final_callback([e] { throw CLI::RuntimeError(run_export(*e)); });

  auto im = std::make_shared<DbArgs>();
  auto* imp = app.add_subcommand("import", "Build a database from a text dump (export --format text)");
  imp->add_option("text", im->a, "Text dump, one JSON row per line")->required()->check(CLI::ExistingFile);
  imp->add_option("-o,--out", im->out, "Database to create (replaced if present)")->required();
  imp->final_callback([im] {
    refuse_same_file(im->out, im->a, "the text dump being imported");
    validate_dump_rows(im->a);
    std::ifstream in(im->a);
    db::TuningDb::load_text(in, im->out);
    auto db = db::TuningDb::open(im->out, db::OpenMode::ReadOnly);
    std::cout << fmt::format("imported {} winners into {}\n", db.winners().size(), im->out);
    throw CLI::RuntimeError(kExitOk);
  });

  auto m = std::make_shared<DbArgs>();
  auto* mer = app.add_subcommand("merge", "Merge two databases: per key the faster winner with its provenance");
  mer->add_option("a", m->a, "First database")->required()->check(CLI::ExistingFile);
  mer->add_option("b", m->b, "Second database")->required()->check(CLI::ExistingFile);
  mer->add_option("-o,--out", m->out, "Output database")->required();
  mer->add_flag("--allow-different-devices", m->allow_devices,
                "Keep the faster winner even when the two were measured on different devices");
  mer->add_flag("--overwrite", m->overwrite, "Replace an existing output file");
  mer->final_callback([m] { throw CLI::RuntimeError(run_merge(*m)); });
}

}  // namespace amax::cli

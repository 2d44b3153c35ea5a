// amax-tune [tune]: the tuning run, its summary table and JSON.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "amax/db/merge.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/kernel_config.hpp"
#include "amax/render.hpp"
#include "amax/tuner.hpp"
#include "commands.hpp"
#include "node.hpp"

namespace amax::cli {

namespace {

// The summary's strategy columns, spelled out: "atom = atomic, 2stg = two_stage, ...".
std::string strategy_columns() {
  std::string out;
  for (const StrategyInfo& s : kStrategies)
    out += (out.empty() ? "" : ", ") + std::string(s.column) + " = " + std::string(s.name);
  return out;
}

struct TuneArgs {
  std::string arch;
  bool arch_given = false;  // --arch '' is an error, not "no --arch"
  std::string dtypes = "fp32,fp16,bf16";
  std::string sizes;
  std::string db;
  unsigned jobs = 0;
  double budget = 0;
  bool retune = false, stale = false, rebuild = false, full = false, warm = false, quiet = false;
  bool db_in_memory = false;
  bool sizes_given = false;
  std::string groups;  // "none" = no multi-tensor groups; not given: the default grid
  bool groups_given = false;
  std::string device = "0";  // an ordinal, a list N,M,... or all (a node tune: cli/cmd_node.cpp)
  std::string json;
  std::string strategies;  // empty: every strategy
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
  os << fmt::format("{:<5} {:>11} {:<32} {:>9} {:>7} {:>6} {:>2} {:>7} {:>8} {:>8}", "dtype", "n", "winner", "GPU us",
                    "GB/s", "%ceil", "L", "host us", "vs TE-at", "vs TE-2s");
  for (const StrategyInfo& s : kStrategies) os << fmt::format(" {:>8}", "vs " + std::string(s.column));
  os << fmt::format(" {:>5}\n", "ties");
  for (const auto& k : r.keys) {
    if (k.resumed) {
      if (k.stored)
        os << fmt::format("{:<5} {:>11} {:<32} {:>9.2f} {:>7.0f}  (resumed: tuned earlier, {})\n", to_string(k.dtype),
                          k.n, k.stored->winner.label, k.stored->winner.median_us, k.stored->winner.gbps,
                          k.stored->provenance.timestamp);
      continue;
    }
    if (k.winner < 0) {
      os << fmt::format("{:<5} {:>11} no variant passed verification\n", to_string(k.dtype), k.n);
      continue;
    }
    const auto& w = k.variants[k.winner];
    const char* conf = k.confirmation == tune::Confirmation::pooled ? "p" : k.confirmation == tune::Confirmation::agreed ? "c" : "";
    os << fmt::format("{:<5} {:>11} {:<32} {:>9.2f} {:>7.0f} {:>6} {:>2} {:>7.2f} {:>8} {:>8}", to_string(k.dtype), k.n,
                      w.label(), w.stats.median_us, tune::gbps(k.bytes(), w.stats.median_us),
                      pct(k.ceiling.median_us, w.stats.median_us), w.launches, w.host_us, ratio(te(k, 0), w),
                      ratio(te(k, 1), w));
    for (const StrategyInfo& s : kStrategies) os << fmt::format(" {:>8}", ratio(k.best(s.value), w));
    os << fmt::format(" {:>5}\n", fmt::format("{}{}", k.tie_set.size(), conf));
  }
  if (!r.groups.empty()) {
    os << fmt::format("\n{:<18} {:<40} {:>9} {:>7} {:>6} {:>8} {:>8} {:>8} {:>5}\n", "group", "winner (multi-tensor)",
                      "us", "GB/s", "%ceil", "vs dflt", "vs thrd", "vs warp", "ties");
    for (const auto& g : r.groups) {
      if (g.resumed) {
        os << fmt::format("{:<18} (resumed: tuned earlier for this device and build)\n", g.spec.name());
        continue;
      }
      if (g.winner < 0) {
        os << fmt::format("{:<18} no variant passed verification\n", g.spec.name());
        continue;
      }
      const auto& w = g.variants[g.winner];
      auto best = [&](Combine c) {
        const tune::VariantResult* b = nullptr;
        for (const auto& v : g.variants)
          if (v.status == db::TrialStatus::ok && v.stats.samples > 0 && v.multi->combine == c &&
              (!b || v.stats.median_us < b->stats.median_us))
            b = &v;
        return b;
      };
      const char* conf = g.confirmation == tune::Confirmation::pooled ? "p" : g.confirmation == tune::Confirmation::agreed ? "c" : "";
      const auto& base = g.variants[g.baseline];
      os << fmt::format("{:<18} {:<40} {:>9.2f} {:>7.0f} {:>6} {:>8} {:>8} {:>8} {:>5}\n", g.spec.name(), w.label(),
                        w.stats.median_us, tune::gbps(g.bytes(), w.stats.median_us),
                        pct(g.ceiling.median_us, w.stats.median_us),
                        base.status == db::TrialStatus::ok && base.stats.samples ? ratio(&base, w) : "-",
                        ratio(best(Combine::thread), w), ratio(best(Combine::warp), w),
                        fmt::format("{}{}", g.tie_set.size(), conf));
    }
    os << "group: TENSORSxN:DTYPE; vs dflt: the built-in multi-tensor default's time / winner's; thrd/warp: best of "
          "each combine ('-': no variant of it timed; where no tensor is cut between blocks the combine never runs\n"
          "and one variant stands for both, as for variants whose launches are identical on the group).\n";
  }
  os << fmt::format("GPU us: GPU time per call (batches held behind a gate kernel until fully enqueued); L: launches "
                    "per call; host us: the host's enqueue cost per call.\n"
                    "%ceil: streaming-read kernel time / winner time on the same bytes; vs X: X's time / winner's\n"
                    "(below 1.00x: X is statistically tied with the winner, which has fewer launches, less host cost or "
                    "less spread).\n"
                    "TE-at / TE-2s: TransformerEngine's fixed atomic / two_stage configs; vs <strategy>: the best of "
                    "each strategy ('-' where it was not tuned: {}).\nties: size of the winner's tie set; c: confirmed "
                    "by a second measurement, p: it disagreed and the pooled samples chose.\nwall time {:.1f} s "
                    "(kernels {:.1f} s: {} compiled, {} cached; multi-tensor {} compiled, {} cached)\n",
                    strategy_columns(), r.wall_s, r.compile_s, r.kernels_compiled, r.kernels_cached,
                    r.multi_kernels_compiled, r.multi_kernels_cached);
  os << tune::summary_line(r.times, r.wall_s, r.compile_s) << "\n";
}

// What the JSON holds of a tuned key or group alike: its winner, ceiling, tie set and variant counts.
void add_result(nlohmann::json& e, const tune::KeyResult& k) {
  const auto& w = k.variants[k.winner];
  e["winner"] = {{"label", w.label()}, {"median_us", w.stats.median_us}, {"spread_us", w.stats.spread_us},
                 {"samples", w.stats.samples}, {"gbps", tune::gbps(k.bytes(), w.stats.median_us)},
                 {"launches", w.launches}, {"host_us", w.host_us}};
  e["ceiling_us"] = k.ceiling.median_us;
  e["tie_set"] = nlohmann::json::array();
  for (std::size_t i : k.tie_set) e["tie_set"].push_back(k.variants[i].label());
  int failed = 0;
  for (const auto& v : k.variants) failed += v.status != db::TrialStatus::ok;
  e["variants"] = k.variants.size();
  e["failed_variants"] = failed;
}

nlohmann::json to_json(const tune::TuneReport& r) {
  nlohmann::json j;
  j["device"] = {{"name", r.device.name}, {"arch", r.device.arch}, {"cu_count", r.device.cu_count},
                 {"l2_bytes", r.device.l2_bytes}, {"driver", r.device.driver_version}};
  j["compiler"] = r.compiler;
  j["timing_protocol"] = r.protocol;
  j["wall_s"] = r.wall_s;
  j["compile_s"] = r.compile_s;
  j["times"] = tune::to_json(r.times, r.wall_s, r.compile_s);
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
      add_result(e, k);
      auto add = [&](const char* name, const tune::VariantResult* v) {
        if (v) e["baselines"][name] = {{"label", v->label()}, {"median_us", v->stats.median_us}};
      };
      for (const auto& b : tune::transformer_engine_baselines(k.dtype))
        add(("te_" + std::string(to_string(b.strategy))).c_str(), k.find(b.label()));
      for (const StrategyInfo& s : kStrategies) add(("best_" + std::string(s.name)).c_str(), k.best(s.value));
      e["confirmation"] = k.confirmation == tune::Confirmation::pooled   ? "pooled"
                          : k.confirmation == tune::Confirmation::agreed ? "agreed"
                                                                         : "none";
      e["confirmation_note"] = k.confirmation_note;
    }
    j["keys"].push_back(std::move(e));
  }
  j["multi_kernels_compiled"] = r.multi_kernels_compiled;
  j["multi_kernels_cached"] = r.multi_kernels_cached;
  j["groups"] = nlohmann::json::array();
  for (const auto& g : r.groups) {
    nlohmann::json e{{"group", g.spec.name()}, {"tensors", g.spec.tensors}, {"n", g.spec.n},
                     {"dtype", to_string(g.spec.dtype)}, {"bytes", g.spec.bytes()}, {"resumed", g.resumed}};
    if (!g.resumed && g.winner >= 0) {
      add_result(e, g);
      const auto& base = g.variants[g.baseline];
      if (base.status == db::TrialStatus::ok && base.stats.samples)
        e["builtin_default"] = {{"label", base.label()}, {"median_us", base.stats.median_us}};
    }
    j["groups"].push_back(std::move(e));
  }
  return j;
}

int run_tune(const TuneArgs& a) {
  tune::TuneOptions o;
  // Every argument is checked before the device is asked for anything.
  o.dtypes = parse_dtypes(a.dtypes);
  if (!a.strategies.empty()) o.strategies = parse_strategies(a.strategies);
  if (a.sizes_given && a.sizes.empty()) throw UsageError("--sizes is empty");
  if (a.sizes == "none") o.tune_sizes = false;
  else if (!a.sizes.empty()) o.sizes = parse_sizes(a.sizes);
  if (a.groups == "none") o.groups = std::vector<tune::GroupSpec>{};
  else if (a.groups_given) o.groups = parse_multi_groups(a.groups);
  if (!o.tune_sizes && o.groups && o.groups->empty())
    throw UsageError("nothing to tune: --sizes none and --groups none");
  if (!(a.budget >= 0) || !std::isfinite(a.budget))
    throw UsageError(fmt::format("--time-budget must be >= 0 seconds, got {}", a.budget));
  // A user's --arch must name an arch this tool knows; the device's own is taken as it reports it.
  std::optional<ArchInfo> arch;
  if (a.arch_given) arch = parse_user_arch(a.arch);
  if (a.rebuild && a.db_in_memory)
    throw UsageError("--rebuild moves a damaged database aside and --db-in-memory never writes it: give one of them");
  int present = 0;
  if (a.device == "all" || a.device.find(',') != std::string::npos) {
    for (Vendor v : {Vendor::nvidia, Vendor::amd}) present = std::max(present, device_count(v));
  }
  const std::vector<int> devices = parse_device_list(a.device, present);
  if (devices.size() > 1) {
    if (!a.json.empty()) throw UsageError("--json is per GPU in a node tune (see <db>.node/); leave it out");
    if (a.db_in_memory) throw UsageError("--db-in-memory is for one device: a node tune merges its results into --db");
    NodeTuneRequest req;
    req.devices = devices;
    req.db = db_path_or_default(a.db);
    if (const std::string why = db::TuningDb::write_problem(req.db); !why.empty())
      throw std::runtime_error(fmt::format("cannot tune into the tuning database {}: {}; nothing was tuned. Make it "
                                           "writable or name another database with --db FILE (or $AMAX_TUNE_DB)",
                                           req.db.string(), why));
    req.jobs = a.jobs;
    if (arch) req.forwarded.insert(req.forwarded.end(), {"--arch", a.arch});
    req.forwarded.insert(req.forwarded.end(), {"--dtypes", a.dtypes});
    if (!a.sizes.empty()) req.forwarded.insert(req.forwarded.end(), {"--sizes", a.sizes});
    if (a.groups_given) req.forwarded.insert(req.forwarded.end(), {"--groups", a.groups});
    if (!a.strategies.empty()) req.forwarded.insert(req.forwarded.end(), {"--strategies", a.strategies});
    if (a.budget > 0) req.forwarded.insert(req.forwarded.end(), {"--time-budget", fmt::format("{}", a.budget)});
    for (auto [on, flag] : {std::pair{a.retune, "--retune"}, {a.stale, "--stale-only"}, {a.full, "--full"},
                            {a.warm, "--warm"}})
      if (on) req.forwarded.push_back(flag);
    return run_node_tune(req);
  }
  const int device = devices.at(0);
  if (!arch) {
    Vendor v;
    if (!first_available_vendor(v, device))  // no device is a failed run (exit 1), not a usage error
      throw std::runtime_error("--arch not given and no GPU found to take it from (" +
                               no_device_reason(Vendor::nvidia) + ")");
    o.arch = make_backend(v, device)->device().arch;
  } else {
    o.arch = arch->name;
  }
  o.db_path = db_path_or_default(a.db);
  o.jobs = a.jobs;
  o.time_budget_s = a.budget;
  o.retune = a.retune;
  o.stale_only = a.stale;
  o.rebuild_db = a.rebuild;
  o.db_in_memory = a.db_in_memory;
  o.device = device;
  o.space = a.full ? SpaceKind::full : SpaceKind::pruned;
  o.protocol.warm_cache = a.warm;
  o.progress = !a.quiet;
  // The summary's file is checked before the work: a run must not end unable to write it.
  if (!a.json.empty() && a.json != "-")
    if (const std::string why = output_file_problem(a.json); !why.empty())
      throw std::runtime_error(fmt::format("--json {}: {}; nothing was tuned", a.json, why));
  if (!a.quiet) std::cerr << fmt::format("amax-tune {}: tuning {} into {}\n", generator_version(), o.arch, o.db_path.string());
  // A TuneError reaches main, which prints it as every command's error (exit 1).
  const tune::TuneReport r = tune::run_tuning(o);
  const bool json_stdout = a.json == "-";
  print_table(r, json_stdout ? std::cerr : std::cout);
  if (!a.json.empty()) {
    const std::string text = to_json(r).dump(2) + "\n";
    if (json_stdout) {
      std::cout << text;
    } else {
      write_file_atomically(a.json, [&](std::ostream& os) { os << text; });
    }
  }
  return kExitOk;
}

void add_tune_options(CLI::App& app, TuneArgs& a) {
  app.add_option_function<std::string>(
      "--arch", [&a](const std::string& v) { a.arch = v, a.arch_given = true; },
      "Target arch (sm_90, gfx942, ...: one amax-tune knows); must match the device (default: the device's)");
  app.add_option("--dtypes", a.dtypes, "Comma-separated dtypes")->capture_default_str();
  app.add_option_function<std::string>(
         "--sizes", [&a](const std::string& v) { a.sizes = v, a.sizes_given = true; },
                 "Element counts: 1048576, 2^20, 1M, ranges 2^10..2^30 (default: 2^10..2^30 and 5 non-powers), or none "
                 "(multi-tensor groups only)");
  app.add_option_function<std::string>(
         "--groups", [&a](const std::string& v) { a.groups = v, a.groups_given = true; },
                 "Multi-tensor groups TENSORSxN:DTYPE, comma-separated, or none (default: 64/512/4096 x 4k/16k/64k, "
                 "8/128 x 1M, 8/32 x 16M of each --dtypes)");
  app.add_option("--db", a.db, "Tuning database (default: $AMAX_TUNE_DB, else ~/.local/share/amax-tune/tuning.db)");
  app.add_option("-j,--jobs", a.jobs, "Parallel JIT compilations (default: hardware threads)");
  app.add_option("--time-budget", a.budget, "Stop starting new keys after SECONDS (finished keys are kept)");
  app.add_flag("--retune", a.retune, "Re-measure keys that already have a winner for this device and build");
  app.add_flag("--stale-only", a.stale, "Tune exactly the keys whose winner is stale (other templates/compiler/tool)");
  app.add_flag("--rebuild", a.rebuild, "If the database is damaged, move it aside and start a new one");
  app.add_flag("--db-in-memory", a.db_in_memory,
               "Never write the database: read it (if present) to resume from and keep this run's results in memory "
               "only (--json keeps the summary); without it a database that cannot be written is refused");
  app.add_option("--device", a.device,
                 "Device ordinal, or a list N,M,... or all: a node tune, one worker per GPU, results merged "
                 "into --db with a per-key agreement report (per-GPU databases in <db>.node/)")
      ->capture_default_str();
  app.add_flag("--full", a.full, "Search the full space instead of the pruned default");
  app.add_option("--strategies", a.strategies,
                 "Tune only these single-tensor strategies, comma-separated (" + strategy_names() +
                     "; default: all), e.g. --full --strategies first_reset,self_reset,atomic");
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

}  // namespace amax::cli

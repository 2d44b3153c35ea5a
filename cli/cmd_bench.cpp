// amax-tune bench and bench-multi, written once over the kernel family (BenchCommand<F>): bench
// times the tuned dispatch against TransformerEngine's launch sequences (written from its source:
// measure/include/amax/te_contenders.hpp), CUB, the streaming-read ceiling and the empty-launch
// floor, side by side, and writes CSV, a Markdown report and (python3 + matplotlib) PNG/SVG plots;
// bench-multi times many tensors per call against one call per tensor, TE's three-launch step per
// tensor and the streaming read of the group's bytes (bench/include/amax/bench_multi.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "amax/bench.hpp"
#include "amax/bench_multi.hpp"
#include "amax/bench_quantize.hpp"
#include "amax/family.hpp"
#include "amax/te_contenders.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

// The options both benches take (set_bench_common checks them and copies them into the options).
struct CommonArgs {
  std::string db, system_db, out = "amax-tune-bench";
  int device = 0, rounds = 15;
  bool quiet = false;
};

// The targets as a Markdown table headed "target (`source`)".
std::string targets_table(const std::vector<bench::TargetCheck>& targets, const char* source) {
  std::string md = fmt::format("| target ({}) | measured | |\n| --- | --- | --- |\n", source);
  for (const auto& t : targets)
    md += fmt::format("| {} | {} | {} |\n", t.target, t.measured, !t.measured_ok ? "not measured" : t.met ? "met" : "**missed**");
  return md;
}

// The bench.md report: the run, the contenders, the targets and one table per (regime, dtype).
std::string report_markdown(const bench::BenchReport& r, const std::string& command) {
  std::string md = fmt::format("Measured on {} ({}, {} SMs/CUs, L2 {} MiB, {}) with `{}` in {:.0f} s.\n"
                               "Timing: {}.\n\n",
                               r.device.name, r.device.arch, r.device.cu_count, r.device.l2_bytes >> 20,
                               r.device.driver_version, command, r.wall_s, r.protocol);
  md += "Contenders: **amax-tune** (the tuned dispatch through the public API); TransformerEngine's amax, its kernels "
        "written in this project from TE's source (templates/bench_kernels.h names the files and commits): "
        "**TE atomic (zero kernel)** (TE main: a one-thread kernel zeroes the output, then 512-thread blocks with "
        "32-byte loads and one atomicMax each), **TE atomic (memset)** (older TE, ROCm TE with "
        "NVTE_USE_ATOMIC_AMAX=1: cudaMemsetAsync instead of the zero kernel), **ROCm TE two-stage** (memset, the "
        "same first stage writing block maxima to a workspace, a one-block final reduce); **CUB** "
        "(DeviceReduce::TransformReduce); **stream read** (only loads the bytes: the ceiling); **empty launch** (the "
        "floor); and, for FP8 current scaling, **TE amax+scale (3 launches)** (TE's zero kernel, amax "
        "kernel and compute_scale_from_amax kernel for e4m3) against **amax-tune amax+scale** (amax_and_scale: "
        "amax, scale and scale_inv in the reduction's launch; the fused variant amax_explain_scale names, an atomic choice run as self_reset), neither an amax-only "
        "contender. torch is measured from "
        "Python (python/bench/bench_torch.py), not here. Every result was checked bit-exact against the CPU "
        "reference before timing.\n\n";
  md += targets_table(r.targets, "DESIGN.md section 7");
  std::map<std::tuple<bool, DType, std::uint64_t, std::string>, const bench::Row*> at;
  std::vector<std::tuple<bool, DType, std::uint64_t>> keys;
  for (const auto& row : r.rows) {
    at[{row.warm, row.dtype, row.n, row.contender}] = &row;
    if (keys.empty() || keys.back() != std::tuple{row.warm, row.dtype, row.n}) keys.push_back({row.warm, row.dtype, row.n});
  }
  bool warm_prev = false;
  DType d_prev{};
  bool first = true;
  for (auto [warm, d, n] : keys) {
    if (first || warm != warm_prev || d != d_prev) {
      md += fmt::format("\n**{} {}** (GPU time in us unless marked host-incl. (back to back from the host); GB/s of "
                        "amax-tune; speedup = contender time / amax-tune time)\n\n"
                        "| n | amax-tune us | GB/s | % of stream read | vs TE (zero kernel) | vs TE (memset) | "
                        "vs ROCm TE two-stage | vs CUB | empty launch us | TE amax+scale us | fused amax+scale us | fused vs TE amax+scale | "
                        "host-incl. us | host-incl. vs TE (zero kernel) | host us/call | variant |\n"
                        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
                        to_string(d), warm ? "warm L2" : "cold");
      first = false, warm_prev = warm, d_prev = d;
    }
    auto us = [&](std::string_view c) {
      auto it = at.find({warm, d, n, std::string(c)});
      return it == at.end() ? 0.0 : it->second->stats.median_us;
    };
    const auto* me = at.at({warm, d, n, bench::kAmaxTune});
    const double t = me->stats.median_us;
    auto x = [&](std::string_view c) { return us(c) > 0 ? fmt::format("{:.2f}x", us(c) / t) : std::string("-"); };
    const double fused = us(bench::kAmaxTuneScale);
    const std::string fused_x = fused > 0 && us(bench::kTeScaleStep) > 0
                                    ? fmt::format("{:.2f}x", us(bench::kTeScaleStep) / fused) : std::string("-");
    const auto te_zero = at.find({warm, d, n, std::string(bench::contender_name(bench::TeSequence::zero_kernel))});
    const double hi = me->host_inclusive.median_us;
    const std::string hi_x = te_zero != at.end() && hi > 0
                                 ? fmt::format("{:.2f}x", te_zero->second->host_inclusive.median_us / hi) : std::string("-");
    md += fmt::format("| {} | {:.2f} | {:.0f} | {:.0f}% | {} | {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {} | {:.2f} | {} | {:.2f} | `{}` |\n",
                      n, t, me->gbps(),
                      100 * us(bench::kStreamRead) / t, x(bench::contender_name(bench::TeSequence::zero_kernel)),
                      x(bench::contender_name(bench::TeSequence::memset)),
                      x(bench::contender_name(bench::TeSequence::rocm_two_stage)), x(bench::kCub),
                      us(bench::kEmptyLaunch), us(bench::kTeScaleStep), fused, fused_x, hi, hi_x, me->host_us, me->detail);
  }
  return md;
}

// A bench command's name, its help and the help of -o and -q.
struct CommandText {
  const char* name;
  const char* about;
  const char* out_help;
  const char* quiet_help;
};

// A family's bench command: its name and help (kText), its own options (added at `stage` 0: before
// --db, 1: before --rounds, 2: before -q, where --help has always listed them) and its run (the
// arguments checked, UsageError naming a bad one; the bench; its output).
template <class F>
struct BenchCommand;

template <>
struct BenchCommand<SingleFamily> {
  static constexpr CommandText kText{"bench",
                                    "Benchmark tuned dispatch against TransformerEngine, CUB and the hardware limits",
                                    "Where bench.csv, bench.md and the plots go", "No progress output"};
  struct Args : CommonArgs {
    std::string dtypes = "fp32,fp16,bf16", sizes, regime = "both", formats = "e4m3";
    bool no_plot = false, quantize = false;
  };

  static void add_options(CLI::App* sub, Args& a, int stage) {
    if (stage == 0) {
      sub->add_option("--dtypes", a.dtypes, "Comma-separated dtypes")->capture_default_str();
      sub->add_option("--sizes", a.sizes, "Element counts as for tune (default 2^10..2^30)");
      sub->add_flag("--quantize", a.quantize,
                    "Benchmark the FP8 quantize instead (against TransformerEngine's current scaling and the floor; "
                    "bench_quantize.csv, bench_quantize.md)");
      sub->add_option("--formats", a.formats, "With --quantize: comma-separated FP8 formats (e4m3, e5m2)")
          ->capture_default_str();
    } else if (stage == 1) {
      sub->add_option("--regime", a.regime, "cold (rotating inputs), warm (same input) or both")->capture_default_str();
    } else {
      sub->add_flag("--no-plot", a.no_plot, "Do not render the plots (amax-tune-plot renders them from bench.csv later)");
    }
  }

  // --quantize: bench_quantize.csv and .md in the output folder, the report on stdout.
  static void run_quantize(const Args& a, const std::string& command) {
    bench::QuantizeBenchOptions o;
    o.dtypes = parse_dtypes(a.dtypes);
    if (!a.sizes.empty()) o.sizes = parse_sizes(a.sizes);
    o.formats.clear();
    for (std::size_t at = 0; at <= a.formats.size();) {
      const std::size_t end = std::min(a.formats.find(',', at), a.formats.size());
      const std::string name = a.formats.substr(at, end - at);
      const auto f = std::find_if(kFp8Formats.begin(), kFp8Formats.end(), [&](const auto& i) { return i.name == name; });
      if (f == kFp8Formats.end() || !bench::te_cast_supports(f->format))
        throw UsageError("--formats: '" + name + "' is not an FP8 format the quantize bench has (e4m3, e5m2)");
      o.formats.push_back(f->format);
      at = end + 1;
    }
    set_bench_common(o, a);
    o.cold = a.regime != "warm";
    o.warm = a.regime != "cold";
    const auto r = bench::run_bench_quantize(o);
    const std::string md = bench::quantize_report_markdown(r, command);
    std::ofstream(o.out_dir / "bench_quantize.md") << md;
    std::cout << md << fmt::format("\nwrote {0}/bench_quantize.csv, {0}/bench_quantize.md\n", o.out_dir.string());
  }

  static void run(const Args& a, const std::string& command) {
    bench::BenchOptions o;
    o.dtypes = parse_dtypes(a.dtypes);
    if (!a.sizes.empty()) o.sizes = parse_sizes(a.sizes);
    if (a.regime != "both" && a.regime != "cold" && a.regime != "warm")
      throw UsageError("--regime must be cold, warm or both, got '" + a.regime + "'");
    if (a.quantize) return run_quantize(a, command);
    set_bench_common(o, a);
    o.cold = a.regime != "warm";
    o.warm = a.regime != "cold";
    const auto r = bench::run_bench(o);
    const std::string md = report_markdown(r, command);
    std::ofstream(o.out_dir / "bench.md") << md;
    std::cout << md << fmt::format("\nwrote {0}/bench.csv, {0}/bench.md", o.out_dir.string());
    std::string why = "--no-plot";
    const auto plots =
        a.no_plot ? std::vector<std::filesystem::path>{} : bench::render_plots(o.out_dir / "bench.csv", o.out_dir, why);
    for (const auto& p : plots) std::cout << ", " << p.string();
    std::cout << "\n";
    if (plots.empty()) std::cout << "plots not rendered: " << why << "\n";
  }
};

template <>
struct BenchCommand<MultiFamily> {
  static constexpr CommandText kText{"bench-multi",
                                    "Benchmark many tensors per call against one call per tensor and TE",
                                    "Where bench_multi.csv goes", "No progress lines"};
  struct Args : CommonArgs {
    std::string groups;
    bool groups_given = false;
  };

  static void add_options(CLI::App* sub, Args& a, int stage) {
    if (stage != 0) return;
    sub->add_option_function<std::string>(
        "--groups", [&a](const std::string& v) { a.groups = v, a.groups_given = true; },
        "Groups TENSORSxN:DTYPE, comma-separated (default: 500x4096:fp32, "
        "4096x16384:bf16, 64x4096:fp32, 512x65536:bf16, 64x1M:bf16, 128x1M:bf16, 8x16M:bf16)");
  }

  static void run(const Args& a, const std::string&) {
    bench::MultiBenchOptions o;
    if (a.groups_given) o.groups = parse_multi_groups(a.groups);
    set_bench_common(o, a);
    const auto r = bench::run_bench_multi(o);
    std::cout << fmt::format("Measured on {} ({}, {} SMs/CUs); {}\n\n", r.device.name, r.device.arch, r.device.cu_count,
                             r.protocol);
    std::cout << "GPU time in us unless marked; host us: the enqueue cost per call; host-incl.: back to back from "
                 "the host; a ratio marked (host-incl.) compares host-inclusive times where a contender enqueues too "
                 "many launches per call to be held behind the gate\n\n"
                 "| group | MB | multi us | host us | host-incl. us | GB/s | % of stream read | graph us | fused amax+scale us "
                 "| vs per tensor | vs TE step per tensor | fused vs TE step | variant |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
    for (const auto& g : o.groups) {
      const auto* m = r.find(g, bench::kMulti);
      if (!m) continue;
      auto us = [&](const char* c) { return r.find(g, c)->stats.median_us; };
      const double t = m->stats.median_us;
      // them / mine in GPU time, or host-inclusive (marked) where `them` was not timed behind the gate.
      auto vs = [&](const char* them, const char* mine) {
        const auto* a = r.find(g, them);
        const auto* b = r.find(g, mine);
        if (a->stats.samples > 0) return fmt::format("{:.1f}x", a->stats.median_us / b->stats.median_us);
        return fmt::format("{:.1f}x (host-incl.)", a->host_inclusive.median_us / b->host_inclusive.median_us);
      };
      std::cout << fmt::format("| {} | {:.1f} | {:.2f} | {:.2f} | {:.2f} | {:.0f} | {:.0f}% | {:.2f} | {:.2f} | {} | {} | "
                               "{} | `{}` |\n",
                               g.name(), g.bytes() / 1e6, t, m->host_us, m->host_inclusive.median_us, g.bytes() / t / 1e3,
                               100 * us(bench::kStreamRead) / t, us(bench::kMultiGraph), us(bench::kMultiScale),
                               vs(bench::kPerTensor, bench::kMulti), vs(bench::kTeStepPerTensor, bench::kMulti),
                               vs(bench::kTeStepPerTensor, bench::kMultiScale), m->detail);
    }
    std::cout << "\n" << targets_table(r.targets, "DESIGN.md section 7");
    std::cerr << "wrote " << (o.out_dir / "bench_multi.csv").string() << "\n";
  }
};

// The command as given ("amax-tune bench --sizes 1M --rounds 5"; bench.md names it).
std::string command_line(const CLI::App& sub) {
  std::string command = "amax-tune " + sub.get_name();
  for (const auto& opt : sub.get_options())
    if (opt->count() && opt->get_name() != "--help")
      command += " " + opt->get_name() + (opt->get_expected_min() ? " " + opt->as<std::string>() : "");
  return command;
}

// Registers the family's bench command: its own options and the common ones; on run the options
// are checked (UsageError, exit 2), the bench runs and its output is written (exit 0).
template <class F>
void add_bench_command(CLI::App& app) {
  using C = BenchCommand<F>;
  auto a = std::make_shared<typename C::Args>();
  auto* sub = app.add_subcommand(C::kText.name, C::kText.about);
  C::add_options(sub, *a, 0);
  sub->add_option("--db", a->db, "User tuning database the dispatch reads (default: the library's)");
  sub->add_option("--system-db", a->system_db, "System database the dispatch reads (default: the installed one)");
  C::add_options(sub, *a, 1);
  sub->add_option("--rounds", a->rounds, "Interleaved timed batches per contender")->capture_default_str();
  sub->add_option("--device", a->device, "Device ordinal")->capture_default_str();
  sub->add_option("-o,--out-dir", a->out, C::kText.out_help)->capture_default_str();
  C::add_options(sub, *a, 2);
  sub->add_flag("-q,--quiet", a->quiet, C::kText.quiet_help);
  sub->final_callback([a, sub] {
    C::run(*a, command_line(*sub));
    throw CLI::RuntimeError(kExitOk);
  });
}

}  // namespace

void add_bench(CLI::App& app) { add_bench_command<SingleFamily>(app); }
void add_bench_multi(CLI::App& app) { add_bench_command<MultiFamily>(app); }

}  // namespace amax::cli

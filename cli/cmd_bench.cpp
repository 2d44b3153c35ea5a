// amax-tune bench: tuned dispatch against TransformerEngine's launch sequences (written from its
// source: measure/include/amax/te_contenders.hpp), CUB, the streaming-read ceiling and the empty-launch floor, side
// by side; writes CSV, a Markdown report and (python3 + matplotlib) PNG/SVG plots.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "amax/bench.hpp"
#include "amax/te_contenders.hpp"
#include "amax/render.hpp"
#include "amax/tuner.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct BenchArgs {
  std::string dtypes = "fp32,fp16,bf16", sizes, db, system_db, out = "amax-tune-bench", regime = "both";
  int device = 0, rounds = 15;
  bool quiet = false, no_plot = false;
};

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
  md += "| target (DESIGN.md section 7) | measured | |\n| --- | --- | --- |\n";
  for (const auto& t : r.targets)
    md += fmt::format("| {} | {} | {} |\n", t.target, t.measured, !t.measured_ok ? "not measured" : t.met ? "met" : "**missed**");
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

int run_bench(const BenchArgs& a, const std::string& command) {
  bench::BenchOptions o;
  o.dtypes = parse_dtypes(a.dtypes);
  try {
    if (!a.sizes.empty()) o.sizes = parse_sizes(a.sizes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (a.regime != "both" && a.regime != "cold" && a.regime != "warm")
    throw UsageError("--regime must be cold, warm or both, got '" + a.regime + "'");
  set_bench_common(o, a);
  o.cold = a.regime != "warm";
  o.warm = a.regime != "cold";
  const auto r = bench::run_bench(o);
  const std::string md = report_markdown(r, command);
  std::ofstream(o.out_dir / "bench.md") << md;
  std::cout << md << fmt::format("\nwrote {0}/bench.csv, {0}/bench.md", o.out_dir.string());
  std::string why = "--no-plot";
  const auto plots = a.no_plot ? std::vector<std::filesystem::path>{} : bench::render_plots(o.out_dir / "bench.csv", o.out_dir, why);
  for (const auto& p : plots) std::cout << ", " << p.string();
  std::cout << "\n";
  if (plots.empty()) std::cout << "plots not rendered: " << why << "\n";
  return kExitOk;
}

}  // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand("bench", "Benchmark tuned dispatch against TransformerEngine, CUB and the hardware limits");
  sub->add_option("--dtypes", a->dtypes, "Comma-separated dtypes")->capture_default_str();
  sub->add_option("--sizes", a->sizes, "Element counts as for tune (default 2^10..2^30)");
  sub->add_option("--db", a->db, "User tuning database the dispatch reads (default: the library's)");
  sub->add_option("--system-db", a->system_db, "System database the dispatch reads (default: the installed one)");
  sub->add_option("--regime", a->regime, "cold (rotating inputs), warm (same input) or both")->capture_default_str();
  sub->add_option("--rounds", a->rounds, "Interleaved timed batches per contender")->capture_default_str();
  sub->add_option("--device", a->device, "Device ordinal")->capture_default_str();
  sub->add_option("-o,--out-dir", a->out, "Where bench.csv, bench.md and the plots go")->capture_default_str();
  sub->add_flag("--no-plot", a->no_plot, "Do not render the plots (amax-tune-plot renders them from bench.csv later)");
  sub->add_flag("-q,--quiet", a->quiet, "No progress output");
  sub->final_callback([a, sub] {
    std::string cmd = "amax-tune bench";
    for (const auto& opt : sub->get_options())
      if (opt->count() && opt->get_name() != "--help") cmd += " " + opt->get_name() + (opt->get_expected_min() ? " " + opt->as<std::string>() : "");
    throw CLI::RuntimeError(run_bench(*a, cmd));
  });
}

}  // namespace amax::cli

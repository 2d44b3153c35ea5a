// amax-tune bench-multi: many tensors per call against one call per tensor, TE's three-launch step
// per tensor and the streaming read of the group's bytes (bench/include/amax/bench_multi.hpp).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "amax/bench_multi.hpp"
#include "amax/multi_config.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct Args {
  std::string groups, db, system_db, out = "amax-tune-bench";
  bool groups_given = false;
  int device = 0, rounds = 15;
  bool quiet = false;
};

int run(const Args& a) {
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
  std::cout << "\n| target (issue 12) | measured | |\n| --- | --- | --- |\n";
  for (const auto& t : r.targets)
    std::cout << fmt::format("| {} | {} | {} |\n", t.target, t.measured,
                             !t.measured_ok ? "not measured" : t.met ? "met" : "**missed**");
  std::cerr << "wrote " << (o.out_dir / "bench_multi.csv").string() << "\n";
  return kExitOk;
}

}  // namespace

std::vector<tune::GroupSpec> parse_multi_groups(const std::string& text) {
  if (text.empty()) throw UsageError("--groups is empty (expected TENSORSxN:DTYPE,..., e.g. 500x4096:fp32)");
  std::vector<tune::GroupSpec> out;
  for (const std::string& item : split_list(text)) {
    auto bad = [&](const std::string& why) {
      return UsageError("invalid group '" + item + "' in --groups '" + text + "': " + why +
                        " (expected TENSORSxN:DTYPE, e.g. 500x4096:fp32)");
    };
    const std::size_t x = item.find('x'), colon = item.find(':');
    if (x == std::string::npos || colon == std::string::npos || colon < x) throw bad("not TENSORSxN:DTYPE");
    tune::GroupSpec g;
    const auto d = parse_dtype(item.substr(colon + 1));
    if (!d) throw bad("unknown dtype '" + item.substr(colon + 1) + "'");
    g.dtype = *d;
    // One count each (as --sizes counts: 4096, 16k, 2^20), named as what they are in the group.
    auto count = [&](const std::string& s, const char* what) {
      try {
        return parse_count(s);
      } catch (const std::invalid_argument& e) {
        throw bad(std::string(what) + " '" + s + "': " + e.what());
      }
    };
    g.tensors = count(item.substr(0, x), "tensor count");
    g.n = count(item.substr(x + 1, colon - x - 1), "element count");
    if (g.tensors == 0 || g.n == 0) throw bad("counts must be at least 1");
    // The limits of one call (amax_tune.h): 2^24 - 1 tensors, 2^40 - 1 elements each.
    if (g.tensors > kMultiMaxTensors)
      throw bad(fmt::format("{} tensors exceed the limit of {} (2^24 - 1) per call", g.tensors, kMultiMaxTensors));
    if (g.n > kMultiMaxElements)
      throw bad(fmt::format("{} elements per tensor exceed the limit of 2^40 - 1", g.n));
    __extension__ using u128 = unsigned __int128;
    if (u128{g.tensors} * g.n * info(g.dtype).bytes > u128{1} << 62)
      throw bad(fmt::format("{} x {} elements of {} is more than 2^62 bytes", g.tensors, g.n, to_string(g.dtype)));
    out.push_back(g);
  }
  return out;
}

void add_bench_multi(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("bench-multi", "Benchmark many tensors per call against one call per tensor and TE");
  sub->add_option_function<std::string>(
      "--groups", [a](const std::string& v) { a->groups = v, a->groups_given = true; },
      "Groups TENSORSxN:DTYPE, comma-separated (default: 500x4096:fp32, "
                                         "4096x16384:bf16, 64x4096:fp32, 512x65536:bf16, 64x1M:bf16, 128x1M:bf16, 8x16M:bf16)");
  sub->add_option("--db", a->db, "User tuning database the dispatch reads (default: the library's)");
  sub->add_option("--system-db", a->system_db, "System database the dispatch reads (default: the installed one)");
  sub->add_option("--rounds", a->rounds, "Interleaved timed batches per contender")->capture_default_str();
  sub->add_option("--device", a->device, "Device ordinal")->capture_default_str();
  sub->add_option("-o,--out-dir", a->out, "Where bench_multi.csv goes")->capture_default_str();
  sub->add_flag("-q,--quiet", a->quiet, "No progress lines");
  sub->final_callback([a] { throw CLI::RuntimeError(run(*a)); });
}

}  // namespace amax::cli

#include "amax/bench.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dtype_c.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/reference.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "amax/workload.hpp"
#include "cub_amax.hpp"
#include "amax/te_contenders.hpp"
#include "bench_driver.hpp"

extern char** environ;

namespace amax::bench {

double Row::gbps() const {
  return tune::gbps(n * info(dtype).bytes, stats.median_us);
}

namespace detail {

/// `amax-tune bench`: one tensor of (dtype, n) per call, in the cold and the warm regime.
template <>
struct BenchFamily<SingleFamily> {
  using Options = BenchOptions;
  using Row = bench::Row;
  using Report = BenchReport;

  // Cold then warm, each dtype, sizes ascending; each (dtype, n) checked in its first regime.
  // Errors: std::runtime_error (fit_error).
  static std::vector<Workload> workloads(const Options& o, const DeviceInfo& dev) {
    std::vector<std::uint64_t> sizes = o.sizes.empty() ? tune::power_of_two_sizes() : o.sizes;
    std::sort(sizes.begin(), sizes.end());
    for (DType d : o.dtypes)
      for (auto n : sizes)
        if (const auto why = tune::fit_error(dev, d, n); !why.empty()) throw std::runtime_error(why);
    std::vector<Workload> out;
    for (bool warm : {false, true})
      if (warm ? o.warm : o.cold)
        for (DType d : o.dtypes)
          for (std::uint64_t n : sizes) out.push_back({d, 1, n, warm, out.size() < o.dtypes.size() * sizes.size()});
    return out;
  }

  static std::string wrong(const Workload& w, const Contender& c, std::string_view what, std::size_t,
                           std::uint32_t got, std::uint32_t want) {
    if (what == "amax")
      return fmt::format("{} ({}) gives amax bits {:#010x} for {} n={} where the CPU reference gives {:#010x}: its "
                         "result is wrong, so it is not timed",
                         c.name, c.detail, got, to_string(w.dtype), w.n, want);
    return fmt::format("{} gives {} bits {:#010x} for {} n={} where {} gives {:#010x}: not timed", c.name, what, got,
                       to_string(w.dtype), w.n,
                       what == "scale" ? "compute_scale_from_amax on the CPU" : "the CPU rule", want);
  }

  static Row row(const Workload& w) {
    Row r;
    r.dtype = w.dtype, r.warm = w.warm, r.n = w.n;
    return r;
  }

  static void progress(const Report& rep, const Workload& w, std::size_t step, std::size_t steps, std::size_t cs) {
    const Row& t = rep.rows[rep.rows.size() - cs];  // amax-tune
    std::fprintf(stderr, "[%3zu/%zu] %s %s n=%-11llu amax-tune %9.2f us GPU %7.0f GB/s, %9.2f us host-inclusive (%s)\n",
                 step, steps, w.warm ? "warm" : "cold", std::string(to_string(w.dtype)).c_str(),
                 static_cast<unsigned long long>(w.n), t.stats.median_us, t.gbps(), t.host_inclusive.median_us,
                 t.detail.c_str());
  }

  static std::vector<TargetCheck> targets(const std::vector<Row>& rows) { return check_targets(rows); }
  static void write(const Report& rep, const std::filesystem::path& dir) {
    write_csv(rep.rows, rep.device, dir / "bench.csv");
  }

  // The device buffers of a run (sized for its largest workload) and each workload's contenders:
  // amax-tune, TE's sequences, TE's amax -> scale step, amax-tune's amax_and_scale, CUB (NVIDIA
  // builds with nvcc), the streaming read and the empty launch, in that order.
  class Contenders {
   public:
    Contenders(BenchDevice& dev, StreamHandle stream, const tune::InputRegion& inputs, const std::vector<Workload>& work)
        : dev_(dev), b_(*dev.backend), stream_(stream), inputs_(inputs),
          with_cub_(have_cub() && dev.vendor == Vendor::nvidia) {
      std::uint64_t max_ws = 16;
      for (const Workload& w : work) {
        max_ws = std::max<std::uint64_t>(max_ws, dev.ctx.workspace_size(to_c(w.dtype), w.n));
        if (with_cub_) max_cub_ = std::max<std::uint64_t>(max_cub_, cub_temp_bytes(static_cast<int>(w.dtype), w.n));
      }
      ws_ = DeviceBuffer(b_, max_ws);
      cub_temp_ = DeviceBuffer(b_, max_cub_);
    }

    std::string protocol_note() const {
      return "; host-inclusive: the same rounds without the gate" +
             fmt::format(" (a region of {:.1f} GiB); every result checked bit-exact against the CPU reference first",
                         static_cast<double>(inputs_.bytes()) / (1ull << 30));
    }

    std::vector<Contender> of(const Workload& w) {
      const DType d = w.dtype;
      const std::uint64_t n = w.n, bytes = w.bytes();
      amax_tune::Context& ctx = dev_.ctx;
      const TeKernels& te = dev_.te;
      const ReferenceKernels& ref = dev_.ref;
      float* out = out_.get<float>();
      void* ws = ws_.get();
      const std::size_t ws_bytes = ctx.workspace_size(to_c(d), n);
      std::vector<Contender> cs;
      cs.push_back({kAmaxTune, ctx.explain(to_c(d), n).label,
                    [this, d, n, ws, ws_bytes, out](const void* in) {
                      dev_.ctx.compute(in, to_c(d), n, out, ws, ws_bytes, stream_);
                    },
                    out});
      const TeLaunch l = te_launch(d, 0, 1);
      const std::string te_detail =
          fmt::format("512 threads, nvec {} (2 x 16 B loads), grid min(ceil(vectors/512), 65535)", l.nvec);
      for (std::size_t k = 0; k < all_te_sequences().size(); ++k) {
        const TeSequence s = all_te_sequences()[k];
        cs.push_back({std::string(contender_name(s)), te_detail,
                      [this, &te, s, d, n, dst = out + 1 + k](const void* in) {
                        te.launch(b_, s, d, in, n, dst, te_ws_.get<float>(), stream_);
                      },
                      out + 1 + k});
      }
      cs.push_back({kTeScaleStep, "zero kernel, amax_kernel, compute_scale_from_amax_kernel (e4m3)",
                    [this, &te, d, n, out](const void* in) {
                      te.launch(b_, TeSequence::zero_kernel, d, in, n, out + 4, te_ws_.get<float>(), stream_);
                      te.launch_scale(b_, out + 4, out + 5, 448.f, false, 0.f, stream_);
                    },
                    out + 4, out + 5});
      cs.push_back({kAmaxTuneScale, ctx.explain_scale(to_c(d), n).label,
                    [this, d, n, ws, ws_bytes, out](const void* in) {
                      dev_.ctx.amax_and_scale(in, to_c(d), n, amax_tune::ScaleOptions{}, out + 10, out + 11, out + 12,
                                              ws, ws_bytes, stream_);
                    },
                    out + 10, out + 11, out + 12});
      if (with_cub_)
        cs.push_back({kCub, "DeviceReduce::TransformReduce",
                      [this, d, n, out](const void* in) {
                        cub_amax(static_cast<int>(d), in, n, out + 8, cub_temp_.get(), max_cub_, stream_);
                      },
                      out + 8});
      cs.push_back({kStreamRead, "",
                    [this, &ref, bytes](const void* in) { ref.launch_stream_read(b_, in, bytes, sink_.get(), stream_); }});
      cs.push_back({kEmptyLaunch, "", [this, &ref](const void*) { b_.launch(ref.empty, 1, 32, stream_, nullptr); }});
      return cs;
    }

    void before_timing(const Workload&, std::vector<Contender>&) {}
    void after_timing() {}

   private:
    BenchDevice& dev_;
    Backend& b_;
    StreamHandle stream_;
    const tune::InputRegion& inputs_;
    bool with_cub_;
    std::uint64_t max_cub_ = 16;
    DeviceBuffer ws_, cub_temp_, te_ws_{b_, kTeWorkspaceBytes}, out_{b_, 64}, sink_{b_, 4};
  };
};

}  // namespace detail

BenchReport run_bench(const BenchOptions& o) { return detail::run_family<SingleFamily>(o); }

void write_csv(const std::vector<Row>& rows, const DeviceInfo& dev, const std::filesystem::path& path) {
  std::map<std::tuple<bool, DType, std::uint64_t>, double> ceiling;
  for (const auto& r : rows)
    if (r.contender == kStreamRead) ceiling[{r.warm, r.dtype, r.n}] = r.stats.median_us;
  detail::write_csv_file(
      path,
      "device,arch,regime,dtype,n,bytes,contender,variant,median_us,spread_us,samples,gbps,pct_of_stream_read,"
      "host_inclusive_us,host_us\n",
      rows, [&](const Row& r) {
        const auto it = ceiling.find({r.warm, r.dtype, r.n});
        const std::string pct = it != ceiling.end() && r.stats.median_us > 0
                                    ? fmt::format("{:.1f}", 100.0 * it->second / r.stats.median_us)
                                    : std::string();
        return fmt::format("\"{}\",{},{},{},{},{},\"{}\",\"{}\",{:.4f},{:.4f},{},{:.2f},{},{:.4f},{:.4f}\n", dev.name,
                           dev.arch, r.warm ? "warm" : "cold", to_string(r.dtype), r.n, r.n * info(r.dtype).bytes,
                           r.contender, r.detail, r.stats.median_us, r.stats.spread_us, r.stats.samples, r.gbps(), pct,
                           r.host_inclusive.median_us, r.host_us);
      });
}

std::vector<TargetCheck> check_targets(const std::vector<Row>& rows) {
  std::map<std::tuple<DType, std::uint64_t, std::string>, double> at;
  std::set<std::pair<DType, std::uint64_t>> keys;
  std::set<DType> dtypes;
  for (const auto& r : rows)
    if (!r.warm) {
      at[{r.dtype, r.n, r.contender}] = r.stats.median_us;
      keys.insert({r.dtype, r.n});
      dtypes.insert(r.dtype);
    }
  auto t = [&](DType d, std::uint64_t n, const std::string& c) -> double {
    auto it = at.find({d, n, c});
    return it == at.end() ? 0 : it->second;
  };
  auto where = [](DType d, std::uint64_t n) { return fmt::format("{} n={}", to_string(d), n); };
  constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;
  const std::string te_main(contender_name(TeSequence::zero_kernel));
  std::vector<TargetCheck> out;

  // The worst over keys whose input bytes satisfy `in_range` of: amax-tune / other (Cmp::ratio),
  // other / amax-tune (Cmp::speedup) or amax-tune - other in us (Cmp::excess).
  enum class Cmp { ratio, speedup, excess };
  struct Worst {
    double value = NAN;
    std::string at;
  };
  auto worst = [&](auto in_range, const std::string& other, Cmp cmp, const std::string& mine = kAmaxTune) {
    Worst w;
    for (auto [d, n] : keys) {
      const double me = t(d, n, mine), them = t(d, n, other);
      if (!in_range(n * info(d).bytes) || me <= 0 || them <= 0) continue;
      const double v = cmp == Cmp::speedup ? them / me : cmp == Cmp::ratio ? me / them : me - them;
      if (std::isnan(w.value) || (cmp == Cmp::speedup ? v < w.value : v > w.value)) w = {v, where(d, n)};
    }
    return w;
  };
  std::vector<std::string> te_names;
  for (TeSequence s : all_te_sequences()) te_names.emplace_back(contender_name(s));

  if (const Worst w = worst([](std::uint64_t b) { return b >= 256 * MiB; }, kStreamRead, Cmp::speedup); !std::isnan(w.value))
    out.push_back({">= 256 MiB: >= 99% of the streaming read, every dtype",
                   fmt::format("worst {:.1f}% ({})", 100 * w.value, w.at), w.value >= 0.99});
  {  // 256 KiB - 16 MiB: geometric mean over TE's fastest sequence at each size, per dtype; the worst dtype decides.
    std::string measured;
    double worst_mean = INFINITY;
    for (DType d : dtypes) {
      double log_sum = 0;
      int count = 0;
      for (auto [kd, n] : keys) {
        const std::uint64_t bytes = n * info(d).bytes;
        if (kd != d || bytes < 256 * KiB || bytes > 16 * MiB || t(d, n, kAmaxTune) <= 0) continue;
        double fastest = INFINITY;
        for (const auto& c : te_names)
          if (t(d, n, c) > 0) fastest = std::min(fastest, t(d, n, c));
        if (!std::isfinite(fastest)) continue;
        log_sum += std::log(fastest / t(d, n, kAmaxTune));
        ++count;
      }
      if (!count) continue;
      const double mean = std::exp(log_sum / count);
      worst_mean = std::min(worst_mean, mean);
      measured += fmt::format("{}{} {:.3f}x ({} sizes)", measured.empty() ? "" : ", ", to_string(d), mean, count);
    }
    if (std::isfinite(worst_mean))
      out.push_back({"256 KiB - 16 MiB: >= 1.15x TE's fastest sequence (geometric mean), every dtype", measured,
                     worst_mean >= 1.15});
  }
  if (const Worst w = worst([](std::uint64_t b) { return b >= 4 * MiB && b < 256 * MiB; }, kStreamRead, Cmp::ratio);
      !std::isnan(w.value))
    out.push_back({"4-256 MiB: within 1.10x of the streaming read", fmt::format("worst {:.2f}x ({})", w.value, w.at),
                   w.value <= 1.10});
  if (const Worst w = worst([](std::uint64_t b) { return b >= 256 * KiB && b < 4 * MiB; }, kStreamRead, Cmp::ratio);
      !std::isnan(w.value))
    out.push_back({"256 KiB - 4 MiB: within 1.25x of the streaming read", fmt::format("worst {:.2f}x ({})", w.value, w.at),
                   w.value <= 1.25});
  if (const Worst w = worst([](std::uint64_t b) { return b < 256 * KiB; }, kStreamRead, Cmp::excess); !std::isnan(w.value))
    out.push_back({"below 256 KiB: at most the streaming read + 1.0 us",
                   fmt::format("worst +{:.2f} us ({})", w.value, w.at), w.value <= 1.0});
  {  // no size at which a contender is faster
    std::vector<std::string> others = te_names;
    others.emplace_back(kCub);
    Worst all;
    std::string who;
    for (const auto& c : others)
      if (const Worst w = worst([](std::uint64_t) { return true; }, c, Cmp::speedup);
          !std::isnan(w.value) && (std::isnan(all.value) || w.value < all.value))
        all = w, who = c;
    if (!std::isnan(all.value))
      out.push_back({"every size: no TE contender or CUB faster (>= 1.0x)",
                     fmt::format("worst {:.2f}x over {} ({})", all.value, who, all.at), all.value >= 1.0});
  }
  // The fused amax + scale against amax alone (the scale epilogue's cost in GPU time).
  if (const Worst w = worst([](std::uint64_t) { return true; }, kAmaxTune, Cmp::excess, kAmaxTuneScale);
      !std::isnan(w.value))
    out.push_back({"every size: fused amax + scale within 0.2 us of amax alone",
                   fmt::format("worst +{:.2f} us ({})", w.value, w.at), w.value <= 0.2});
  out.push_back({"torch", "not measured by this C++ bench: python/bench/bench_torch.py measures it from Python", false, false});
  return out;
}

namespace {
// Runs argv (argv[0] looked up on PATH) and returns its exit status, or -1 when it could not be
// started or did not exit. quiet: its stdout and stderr go to /dev/null.
int run_program(std::vector<std::string> args, bool quiet) {
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}
}  // namespace

std::vector<std::filesystem::path> render_plots(const std::filesystem::path& csv, const std::filesystem::path& out_dir,
                                                std::string& why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path script = fs::read_symlink("/proc/self/exe", ec).parent_path() / "amax-tune-plot";
  if (ec || !fs::exists(script)) script = AMAX_SOURCE_PLOT_SCRIPT;
  const std::string by_hand = fmt::format("{} {} -o {}", script.string(), csv.string(), out_dir.string());
  if (!fs::exists(script)) {
    why = "plot script not found (" + script.string() + ")";
    return {};
  }
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    if (run_program({python, "-c", "import matplotlib"}, true) != 0) continue;
    const int rc = run_program({python, script.string(), csv.string(), "-o", out_dir.string(), "--quiet"}, false);
    if (rc != 0) {
      why = fmt::format("{} failed (exit {}); run it by hand: {}", script.filename().string(), rc, by_hand);
      return {};
    }
    std::vector<fs::path> files;
    for (const char* f : {"speedup.png", "speedup.svg", "stream_read.png", "stream_read.svg"})
      if (fs::exists(out_dir / f)) files.push_back(out_dir / f);
    return files;
  }
  why = "no python3 with matplotlib (Debian: apt-get install python3-matplotlib); then run: " + by_hand;
  return {};
}

}  // namespace amax::bench

#include "amax/bench.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
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
#include "amax/scale_rule.hpp"
#include "amax/te_contenders.hpp"
#include "bench_device.hpp"

extern char** environ;

namespace amax::bench {

double Row::gbps() const {
  return tune::gbps(n * info(dtype).bytes, stats.median_us);
}

namespace {

using Clock = std::chrono::steady_clock;

struct Contender {
  std::string name;
  std::string detail;
  std::function<void(const void* in)> call;
  float* out = nullptr;    ///< where its result lands (checked against the reference); null: none
  float* scale = nullptr;  ///< where its e4m3 scale lands (checked against te_scale_from_amax); null: none
  float* scale_inv = nullptr;  ///< where its scale_inv lands (checked against reference_scale_bits); null: none
};


// The CPU reference of n elements at `host`, in parallel chunks. Every chunk's result is +0.0, a
// positive finite value, +Inf or the canonical NaN, so the largest bit pattern is the whole's.
std::uint32_t reference_bits(const std::uint8_t* host, DType d, std::uint64_t n) {
  const unsigned T = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::uint32_t> part(T, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < T; ++t)
    pool.emplace_back([&, t] {
      const std::uint64_t lo = n * t / T, hi = n * (t + 1) / T;
      part[t] = reference_amax_bits(host + lo * info(d).bytes, d, hi - lo, NanMode::propagate);
    });
  for (auto& th : pool) th.join();
  return *std::max_element(part.begin(), part.end());
}

// Runs each contender with a result once on `in` (its output pre-filled with a NaN pattern no
// amax produces) and compares the bits with the CPU reference's. Throws naming the first mismatch.
void verify(Backend& b, StreamHandle stream, const std::vector<Contender>& cs, const void* in, DType d,
            std::uint64_t n, std::uint32_t expected) {
  for (const auto& c : cs) {
    if (!c.out) continue;
    b.memset32_async(c.out, 0x7fc0dead, 1, stream);
    c.call(in);
    b.synchronize(stream);
    std::uint32_t got = 0;
    b.copy_to_host(&got, c.out, 4);
    if (got != expected)
      throw std::runtime_error(fmt::format(
          "{} ({}) gives amax bits {:#010x} for {} n={} where the CPU reference gives {:#010x}: its result is wrong, "
          "so it is not timed",
          c.name, c.detail, got, to_string(d), n, expected));
    if (!c.scale) continue;
    float amax = 0, want = 0;
    std::memcpy(&amax, &expected, 4);
    want = te_scale_from_amax(amax, 448.f, false, 0.f);
    std::uint32_t got_scale = 0, want_scale = 0;
    b.copy_to_host(&got_scale, c.scale, 4);
    std::memcpy(&want_scale, &want, 4);
    if (got_scale != want_scale)
      throw std::runtime_error(fmt::format("{} gives scale bits {:#010x} for {} n={} where compute_scale_from_amax "
                                           "on the CPU gives {:#010x}: not timed",
                                           c.name, got_scale, to_string(d), n, want_scale));
    if (!c.scale_inv) continue;
    const std::uint32_t want_inv = reference_scale_bits(expected, ScaleRule{}).scale_inv;
    std::uint32_t got_inv = 0;
    b.copy_to_host(&got_inv, c.scale_inv, 4);
    if (got_inv != want_inv)
      throw std::runtime_error(fmt::format("{} gives scale_inv bits {:#010x} for {} n={} where the CPU rule gives "
                                           "{:#010x}: not timed", c.name, got_inv, to_string(d), n, want_inv));
  }
}

std::string te_detail(DType d) {
  const TeLaunch l = te_launch(d, 0, 1);
  return fmt::format("512 threads, nvec {} (2 x 16 B loads), grid min(ceil(vectors/512), 65535)", l.nvec);
}

}  // namespace

BenchReport run_bench(const BenchOptions& o) {
  const auto t0 = Clock::now();
  BenchReport rep;
  BenchDevice opened(o.device, o.user_db, o.system_db);
  const Vendor vendor = opened.vendor;
  Backend& b = *opened.backend;
  rep.device = b.device();
  const ReferenceKernels& ref = opened.ref;
  const TeKernels& te = opened.te;
  amax_tune::Context& ctx = opened.ctx;

  std::vector<std::uint64_t> sizes = o.sizes.empty() ? tune::power_of_two_sizes() : o.sizes;
  std::sort(sizes.begin(), sizes.end());
  std::uint64_t max_bytes = 0, max_ws = 16, max_cub = 16;
  const DeviceInfo& dev = rep.device;
  const bool with_cub = have_cub() && vendor == Vendor::nvidia;
  for (DType d : o.dtypes)
    for (auto n : sizes)
      if (const auto why = tune::fit_error(dev, d, n); !why.empty()) throw std::runtime_error(why);
  for (DType d : o.dtypes)
    for (auto n : sizes) {
      max_bytes = std::max(max_bytes, n * info(d).bytes);
      max_ws = std::max<std::uint64_t>(max_ws, ctx.workspace_size(to_c(d), n));
      if (with_cub) max_cub = std::max<std::uint64_t>(max_cub, cub_temp_bytes(static_cast<int>(d), n));
    }
  tune::InputRegion inputs(b, max_bytes + 64);
  const DeviceBuffer ws_buf(b, max_ws), cub_temp_buf(b, max_cub), te_ws_buf(b, kTeWorkspaceBytes), out_buf(b, 64),
      sink_buf(b, 4);
  void* ws = ws_buf.get();
  void* cub_temp = cub_temp_buf.get();
  float* te_ws = te_ws_buf.get<float>();
  float* out = out_buf.get<float>();
  void* sink = sink_buf.get();
  StreamHandle stream = b.create_stream();
  tune::Gate gate(b, ref.gate);
  tune::TimingProtocol proto;
  rep.protocol = proto.describe_interleaved(o.rounds) + "; host-inclusive: the same rounds without the gate" +
                 fmt::format(" (a region of {:.1f} GiB); every result checked bit-exact against the CPU reference first",
                             static_cast<double>(inputs.bytes()) / (1ull << 30));

  std::vector<bool> regimes;
  if (o.cold) regimes.push_back(false);
  if (o.warm) regimes.push_back(true);
  std::set<std::pair<DType, std::uint64_t>> verified;
  std::vector<std::uint8_t> host;  // the first input slice of the dtype being verified
  DType host_dtype{};
  std::size_t step = 0, steps = regimes.size() * o.dtypes.size() * sizes.size();
  for (bool warm : regimes)
    for (DType d : o.dtypes)
      for (std::uint64_t n : sizes) {
        ++step;
        const std::uint64_t bytes = n * info(d).bytes;
        std::vector<Contender> cs;
        const std::size_t ws_bytes = ctx.workspace_size(to_c(d), n);
        cs.push_back({kAmaxTune, ctx.explain(to_c(d), n).label,
                      [&, d, n, ws_bytes](const void* in) { ctx.compute(in, to_c(d), n, out, ws, ws_bytes, stream); },
                      out});
        for (std::size_t k = 0; k < all_te_sequences().size(); ++k) {
          const TeSequence s = all_te_sequences()[k];
          cs.push_back({std::string(contender_name(s)), te_detail(d),
                        [&, s, d, n, k](const void* in) { te.launch(b, s, d, in, n, out + 1 + k, te_ws, stream); },
                        out + 1 + k});
        }
        cs.push_back({kTeScaleStep, "zero kernel, amax_kernel, compute_scale_from_amax_kernel (e4m3)",
                      [&, d, n](const void* in) {
                        te.launch(b, TeSequence::zero_kernel, d, in, n, out + 4, te_ws, stream);
                        te.launch_scale(b, out + 4, out + 5, 448.f, false, 0.f, stream);
                      },
                      out + 4, out + 5});
        cs.push_back({kAmaxTuneScale, ctx.explain_scale(to_c(d), n).label,
                      [&, d, n, ws_bytes](const void* in) {
                        ctx.amax_and_scale(in, to_c(d), n, amax_tune::ScaleOptions{}, out + 10, out + 11, out + 12, ws,
                                           ws_bytes, stream);
                      },
                      out + 10, out + 11, out + 12});
        if (with_cub)
          cs.push_back({kCub, "DeviceReduce::TransformReduce",
                        [&, d, n](const void* in) { cub_amax(static_cast<int>(d), in, n, out + 8, cub_temp, max_cub, stream); },
                        out + 8});
        cs.push_back({kStreamRead, "", [&, bytes](const void* in) { ref.launch_stream_read(b, in, bytes, sink, stream); }});
        cs.push_back({kEmptyLaunch, "", [&](const void*) { b.launch(ref.empty, 1, 32, stream, nullptr); }});

        if (verified.insert({d, n}).second) {
          if (host.empty() || host_dtype != d) {  // sizes ascend: the largest of this dtype once
            host.assign(sizes.back() * info(d).bytes, 0);
            b.copy_to_host(host.data(), inputs.base(), host.size());
            host_dtype = d;
          }
          verify(b, stream, cs, inputs.base(), d, n, reference_bits(host.data(), d, n));
        }
        std::vector<tune::Timed> timed;
        for (const auto& c : cs) timed.push_back({c.call});
        const auto m = tune::measure_both(b, stream, inputs, gate, proto, warm, timed, bytes, o.rounds);
        for (std::size_t i = 0; i < cs.size(); ++i)
          rep.rows.push_back(Row{d, warm, n, cs[i].name, m[i].gpu, cs[i].detail, m[i].host_inclusive, m[i].host_us});
        if (o.progress) {
          const Row& t = rep.rows[rep.rows.size() - cs.size()];
          std::fprintf(stderr, "[%3zu/%zu] %s %s n=%-11llu amax-tune %9.2f us GPU %7.0f GB/s, %9.2f us host-inclusive (%s)\n",
                       step, steps, warm ? "warm" : "cold", std::string(to_string(d)).c_str(),
                       static_cast<unsigned long long>(n), t.stats.median_us, t.gbps(), t.host_inclusive.median_us,
                       t.detail.c_str());
        }
      }
  b.destroy_stream(stream);
  rep.targets = check_targets(rep.rows);
  rep.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::filesystem::create_directories(o.out_dir);
  write_csv(rep.rows, rep.device, o.out_dir / "bench.csv");
  return rep;
}

void write_csv(const std::vector<Row>& rows, const DeviceInfo& dev, const std::filesystem::path& path) {
  std::ofstream csv(path);
  if (!csv) throw std::runtime_error("cannot write " + path.string());
  csv << "device,arch,regime,dtype,n,bytes,contender,variant,median_us,spread_us,samples,gbps,pct_of_stream_read,"
         "host_inclusive_us,host_us\n";
  std::map<std::tuple<bool, DType, std::uint64_t>, double> ceiling;
  for (const auto& r : rows)
    if (r.contender == kStreamRead) ceiling[{r.warm, r.dtype, r.n}] = r.stats.median_us;
  for (const auto& r : rows) {
    const auto it = ceiling.find({r.warm, r.dtype, r.n});
    const std::string pct = it != ceiling.end() && r.stats.median_us > 0
                                ? fmt::format("{:.1f}", 100.0 * it->second / r.stats.median_us)
                                : std::string();
    csv << fmt::format("\"{}\",{},{},{},{},{},\"{}\",\"{}\",{:.4f},{:.4f},{},{:.2f},{},{:.4f},{:.4f}\n", dev.name,
                       dev.arch, r.warm ? "warm" : "cold", to_string(r.dtype), r.n, r.n * info(r.dtype).bytes,
                       r.contender, r.detail, r.stats.median_us, r.stats.spread_us, r.stats.samples, r.gbps(), pct,
                       r.host_inclusive.median_us, r.host_us);
  }
  if (!csv.flush()) throw std::runtime_error("cannot write " + path.string());
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

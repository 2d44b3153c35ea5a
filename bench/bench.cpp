#include "amax/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "amax/amax_tune.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/reference_kernels.hpp"
#include "amax/runner.hpp"
#include "amax/search.hpp"
#include "amax/tuner.hpp"
#include "amax/search_space.hpp"
#include "cub_amax.hpp"

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
};

amax_dtype_t api(DType d) { return static_cast<amax_dtype_t>(static_cast<int>(d)); }

}  // namespace

BenchReport run_bench(const BenchOptions& o) {
  const auto t0 = Clock::now();
  BenchReport rep;
  Vendor vendor{};
  if (!first_available_vendor(vendor, o.device)) throw std::runtime_error("no GPU device " + std::to_string(o.device) + " to benchmark: " + no_device_reason(Vendor::nvidia));
  auto backend = make_backend(vendor, o.device);
  Backend& b = *backend;
  rep.device = b.device();
  std::shared_ptr<const JitCompiler> compiler = make_compiler(vendor);
  KernelCache kernels(b, compiler, BinaryCache(BinaryCache::default_dir()));
  ReferenceKernels ref = ReferenceKernels::load(b, *compiler, kernels.binaries());
  const ArchInfo arch = ArchInfo::parse(rep.device.arch);
  const auto cu = static_cast<std::uint32_t>(rep.device.cu_count);

  amax_tune::Options opt;
  opt.device = o.device;
  if (!o.user_db.empty()) opt.user_db_path = o.user_db;
  if (!o.system_db.empty()) opt.system_db_path = o.system_db;
  amax_tune::Context ctx(opt);

  const std::vector<std::uint64_t> sizes = o.sizes.empty() ? tune::power_of_two_sizes() : o.sizes;
  std::uint64_t max_bytes = 0, max_ws = 16, max_cub = 16;
  const DeviceInfo& dev = rep.device;
  for (DType d : o.dtypes)
    for (auto n : sizes)
      if (const auto why = tune::fit_error(dev, d, n); !why.empty()) throw std::runtime_error(why);
  for (DType d : o.dtypes)
    for (auto n : sizes) {
      max_bytes = std::max(max_bytes, n * info(d).bytes);
      max_ws = std::max<std::uint64_t>(max_ws, ctx.workspace_size(api(d), n));
      for (const auto& te : tune::transformer_engine_baselines(d))
        max_ws = std::max(max_ws, launch_shape(te, n, cu).workspace_bytes);
      if (have_cub() && vendor == Vendor::nvidia) max_cub = std::max<std::uint64_t>(max_cub, cub_temp_bytes(static_cast<int>(d), n));
    }
  tune::InputRegion inputs(b, max_bytes + 64);
  void* ws = b.allocate(max_ws);
  void* cub_temp = b.allocate(max_cub);
  float* out = static_cast<float*>(b.allocate(64));
  std::uint32_t* counter = static_cast<std::uint32_t*>(b.allocate(4));
  void* sink = b.allocate(4);
  StreamHandle stream = b.create_stream();
  b.memset32_async(counter, 0, 1, stream);
  tune::TimingProtocol proto;
  rep.protocol = proto.describe_interleaved(o.rounds);

  std::vector<bool> regimes;
  if (o.cold) regimes.push_back(false);
  if (o.warm) regimes.push_back(true);
  std::size_t step = 0, steps = regimes.size() * o.dtypes.size() * sizes.size();
  for (bool warm : regimes)
    for (DType d : o.dtypes)
      for (std::uint64_t n : sizes) {
        ++step;
        const std::uint64_t bytes = n * info(d).bytes;
        std::vector<Contender> cs;
        const std::size_t ws_bytes = ctx.workspace_size(api(d), n);
        cs.push_back({"amax-tune", ctx.explain(api(d), n).label, [&, d, n, ws_bytes](const void* in) {
                        ctx.compute(in, api(d), n, out, ws, ws_bytes, stream);
                      }});
        for (const auto& te : tune::transformer_engine_baselines(d)) {
          const LoadedKernel& k = kernels.get(te, d);
          const LaunchShape shape = launch_shape(te, n, cu);
          cs.push_back({te.strategy == Strategy::atomic ? "TE atomic" : "TE two_stage", te.label(),
                        [&, shape, n](const void* in) {
                          launch_amax(b, k, shape, in, n, out + 1, ws, counter, NanMode::propagate, stream);
                        }});
        }
        if (have_cub() && vendor == Vendor::nvidia)
          cs.push_back({"CUB", "DeviceReduce::TransformReduce", [&, d, n](const void* in) {
                          cub_amax(static_cast<int>(d), in, n, out + 2, cub_temp, max_cub, stream);
                        }});
        cs.push_back({"stream read", "",
                      [&, bytes](const void* in) { ref.launch_stream_read(b, in, bytes, sink, stream); }});
        cs.push_back({"empty launch", "", [&](const void*) { b.launch(ref.empty, 1, 32, stream, nullptr); }});
        std::vector<tune::Timed> timed;
        for (const auto& c : cs) timed.push_back({c.call});
        tune::TimingProtocol p = proto;
        p.warm_cache = warm;
        const auto samples = tune::Runner(b, stream, inputs, p).interleaved(timed, bytes, o.rounds);
        for (std::size_t i = 0; i < cs.size(); ++i)
          rep.rows.push_back(Row{d, warm, n, cs[i].name, tune::Stats::of(samples[i]), cs[i].detail});
        if (o.progress) {
          const Row& t = rep.rows[rep.rows.size() - cs.size()];
          std::fprintf(stderr, "[%3zu/%zu] %s %s n=%-11llu amax-tune %9.2f us %7.0f GB/s (%s)\n", step, steps,
                       warm ? "warm" : "cold", std::string(to_string(d)).c_str(), static_cast<unsigned long long>(n),
                       t.stats.median_us, t.gbps(), t.detail.c_str());
        }
      }
  b.destroy_stream(stream);
  for (void* p : {ws, cub_temp, static_cast<void*>(out), static_cast<void*>(counter), sink}) b.release(p);
  rep.targets = check_targets(rep.rows);
  rep.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // ---- files ----
  std::filesystem::create_directories(o.out_dir);
  {
    std::ofstream csv(o.out_dir / "bench.csv");
    csv << "device,arch,regime,dtype,n,bytes,contender,variant,median_us,spread_us,samples,gbps,pct_of_stream_read\n";
    std::map<std::tuple<bool, DType, std::uint64_t>, double> ceiling;
    for (const auto& r : rep.rows)
      if (r.contender == "stream read") ceiling[{r.warm, r.dtype, r.n}] = r.stats.median_us;
    for (const auto& r : rep.rows)
      csv << fmt::format("\"{}\",{},{},{},{},{},{},\"{}\",{:.4f},{:.4f},{},{:.2f},{:.1f}\n", rep.device.name,
                         rep.device.arch, r.warm ? "warm" : "cold", to_string(r.dtype), r.n, r.n * info(r.dtype).bytes,
                         r.contender, r.detail, r.stats.median_us, r.stats.spread_us, r.stats.samples, r.gbps(),
                         100.0 * ceiling[{r.warm, r.dtype, r.n}] / r.stats.median_us);
  }
  write_svg(rep.rows, rep.device, o.out_dir / "bench.svg");
  return rep;
}

std::vector<TargetCheck> check_targets(const std::vector<Row>& rows) {
  std::map<std::tuple<DType, std::uint64_t, std::string>, const Row*> at;
  std::set<std::pair<DType, std::uint64_t>> keys;
  for (const auto& r : rows)
    if (!r.warm) {
      at[{r.dtype, r.n, r.contender}] = &r;
      keys.insert({r.dtype, r.n});
    }
  auto t = [&](DType d, std::uint64_t n, const char* c) -> double {
    auto it = at.find({d, n, c});
    return it == at.end() ? 0 : it->second->stats.median_us;
  };
  std::vector<TargetCheck> out;
  // >= 256 MB: >= 97% of the streaming read, every dtype (the worst size counts).
  {
    double worst = INFINITY;
    std::string where;
    for (auto [d, n] : keys)
      if (n * info(d).bytes >= (256ull << 20) && t(d, n, "amax-tune") > 0) {
        const double pct = 100 * t(d, n, "stream read") / t(d, n, "amax-tune");
        if (pct < worst) worst = pct, where = fmt::format("{} n={}", to_string(d), n);
      }
    if (std::isfinite(worst))
      out.push_back({">= 256 MB: >= 97% of a streaming read's bandwidth, every dtype",
                     fmt::format("worst {:.1f}% ({})", worst, where), worst >= 97.0});
  }
  // 4 MB - 256 MB: geometric-mean speedup >= 1.2x over TE's atomic config and >= 1.1x over CUB.
  for (const char* other : {"TE atomic", "CUB"}) {
    double log_sum = 0;
    int count = 0;
    for (auto [d, n] : keys) {
      const std::uint64_t bytes = n * info(d).bytes;
      if (bytes >= (4ull << 20) && bytes <= (256ull << 20) && t(d, n, other) > 0 && t(d, n, "amax-tune") > 0) {
        log_sum += std::log(t(d, n, other) / t(d, n, "amax-tune"));
        ++count;
      }
    }
    const double need = std::string(other) == "CUB" ? 1.1 : 1.2;
    if (count)
      out.push_back({fmt::format("4 MB - 256 MB: >= {:.1f}x {} (geometric mean)", need, other),
                     fmt::format("{:.3f}x over {} sizes", std::exp(log_sum / count), count),
                     std::exp(log_sum / count) >= need});
    else if (std::string(other) == "CUB")
      out.push_back({"4 MB - 256 MB: >= 1.1x CUB (geometric mean)", "CUB not in this build", false, false});
  }
  // <= 1 MB: <= 1.15x an empty launch, >= 2x CUB (worst size).
  {
    double worst_empty = 0, worst_cub = INFINITY;
    std::string we, wc;
    for (auto [d, n] : keys)
      if (n * info(d).bytes <= (1ull << 20) && t(d, n, "amax-tune") > 0) {
        const double r = t(d, n, "amax-tune") / t(d, n, "empty launch");
        if (r > worst_empty) worst_empty = r, we = fmt::format("{} n={}", to_string(d), n);
        if (t(d, n, "CUB") > 0) {
          const double c = t(d, n, "CUB") / t(d, n, "amax-tune");
          if (c < worst_cub) worst_cub = c, wc = fmt::format("{} n={}", to_string(d), n);
        }
      }
    if (worst_empty > 0)
      out.push_back({"<= 1 MB: <= 1.15x the time of an empty kernel launch",
                     fmt::format("worst {:.2f}x ({})", worst_empty, we), worst_empty <= 1.15});
    if (std::isfinite(worst_cub))
      out.push_back({"<= 1 MB: >= 2x CUB", fmt::format("worst {:.2f}x ({})", worst_cub, wc), worst_cub >= 2.0});
    out.push_back({"<= 1 MB: >= 3x torch", "torch is not measured by this C++ bench", false, false});
  }
  return out;
}

void write_svg(const std::vector<Row>& rows, const DeviceInfo& dev, const std::filesystem::path& path) {
  std::vector<std::pair<bool, DType>> panels;
  for (const auto& r : rows)
    if (std::find(panels.begin(), panels.end(), std::pair{r.warm, r.dtype}) == panels.end()) panels.push_back({r.warm, r.dtype});
  std::vector<std::string> contenders;
  for (const auto& r : rows)
    if (r.contender != "empty launch" && std::find(contenders.begin(), contenders.end(), r.contender) == contenders.end())
      contenders.push_back(r.contender);
  const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#111111", "#ff7f0e"};
  const int pw = 420, ph = 300, ml = 60, mt = 50, gap = 40;
  const int cols = 3, rows_n = static_cast<int>((panels.size() + cols - 1) / cols);
  const int W = ml + cols * (pw + gap) + 150, H = mt + rows_n * (ph + gap + 30) + 20;
  std::ofstream f(path);
  f << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
                   "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                   W, H);
  f << fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\">amax: GB/s (log) against input bytes (log), {} ({}, {} "
                   "SMs/CUs)</text>\n",
                   ml, dev.name, dev.arch, dev.cu_count);
  const double ymin = std::log10(0.1), ymax = std::log10(10000.0);
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const auto [warm, d] = panels[p];
    const int x0 = ml + static_cast<int>(p % cols) * (pw + gap), y0 = mt + static_cast<int>(p / cols) * (ph + gap + 30);
    std::vector<const Row*> pr;
    for (const auto& r : rows)
      if (r.warm == warm && r.dtype == d) pr.push_back(&r);
    double xmin = INFINITY, xmax = -INFINITY;
    for (auto* r : pr) {
      const double x = std::log2(static_cast<double>(r->n * info(r->dtype).bytes));
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
    }
    if (xmax <= xmin) xmax = xmin + 1;
    auto X = [&](double bytes) { return x0 + (std::log2(bytes) - xmin) / (xmax - xmin) * pw; };
    auto Y = [&](double gbps) {
      return y0 + ph - (std::log10(std::max(gbps, 0.1)) - ymin) / (ymax - ymin) * ph;
    };
    f << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", x0, y0, pw, ph);
    f << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{} ({})</text>\n", x0, y0 - 6, to_string(d),
                     warm ? "warm L2" : "cold");
    for (double g : {1.0, 10.0, 100.0, 1000.0, 10000.0})
      f << fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1f}\" "
                       "text-anchor=\"end\">{:g}</text>\n",
                       x0, x0 + pw, Y(g), Y(g), x0 - 4, Y(g) + 4, g);
    for (int e = static_cast<int>(std::ceil(xmin)); e <= static_cast<int>(xmax); e += 4) {
      const double bytes = std::exp2(e);
      const std::string lbl = e >= 30 ? fmt::format("{:g} GiB", bytes / (1ull << 30))
                              : e >= 20 ? fmt::format("{:g} MiB", bytes / (1 << 20))
                                        : fmt::format("{:g} KiB", bytes / 1024);
      f << fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{:.1f}\" y=\"{}\" "
                       "text-anchor=\"middle\">{}</text>\n",
                       X(bytes), X(bytes), y0, y0 + ph, X(bytes), y0 + ph + 14, lbl);
    }
    for (std::size_t c = 0; c < contenders.size(); ++c) {
      std::string pts;
      for (auto* r : pr)
        if (r->contender == contenders[c])
          pts += fmt::format("{:.1f},{:.1f} ", X(static_cast<double>(r->n * info(r->dtype).bytes)), Y(r->gbps()));
      f << fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" points=\"{}\"/>\n", colors[c % 6],
                       contenders[c] == "amax-tune" ? 2.5 : 1.5, pts);
    }
  }
  const int lx = ml + cols * (pw + gap) - 10;
  for (std::size_t c = 0; c < contenders.size(); ++c)
    f << fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text x=\"{}\" "
                     "y=\"{}\">{}</text>\n",
                     lx, lx + 20, mt + 20 + 18 * c, mt + 20 + 18 * c, colors[c % 6], lx + 26, mt + 24 + 18 * c,
                     contenders[c]);
  f << "</svg>\n";
}

}  // namespace amax::bench
